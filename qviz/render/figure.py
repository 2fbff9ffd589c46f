"""Plotly figures: the graph (SVG or WebGL), constant histograms, per-layer error bars; what
the graph draws with (colours, badges, frames, labels) is :mod:`qviz.render.marks`.

>>> from qviz.layout import DiGraph
>>> from qviz.layout import layered_layout
>>> g = DiGraph([("layer:a", "layer:b")])
>>> for n in g: g.nodes[n].update(kind="conv", op="Conv2D", label=n[6:], layer=n[6:], ops=1, status=None)
>>> fig = graph_figure(g, layered_layout(g))
>>> [t.type for t in fig.data][:2], list(fig.data[1].customdata)
(['scatter', 'scatter'], ['layer:a', 'layer:b'])
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Collection, Mapping

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from ..layout.view import BLOCK_KIND, ViewKey
from .marks import (CHAR_PX, CLEAR_PX, DRAWN_IN_VIEW_ABOVE, LABEL_GAP_PX, LINE_PX, COLORS, FRAME_FILL, GHOST_OPACITY, HALO_COLORS, HALO_OPACITY, HALO_SIZE, LABEL_PX, LABELS_IN_VIEW, MAX_ARROWS,
                    MAX_LABELS, MAX_SVG_NODES, NO_VALUE_COLOR, PLAIN_OUTLINE, SELECTED_OUTLINE, STATUS_COLORS,
                    STATUS_OUTLINE_WIDTH, Badge, Frame,
                    first_view_range, shows_whole, label_position, label_sides, opposite_side, short_label)

__all__ = ["graph_figure", "names_near_view", "sent_once", "histogram_figure", "layer_error_figure", "sensitivity_figure", "pareto_figure",
           "wrap_title", "WORST_LAYERS", "MAX_DRAWN_LEVELS"]

#: The graph figure is built without plotly's per-value validation: on a redraw it cost more
#: than everything else the server does (~90 of ~200 ms on MobileNetV2; ~0.8 s at 50k nodes).
#: What it would check, a test checks once (tests/render/test_figure.py, validated rebuild).
_UNCHECKED = {"_validate": False}


#: Of plotly's default template ("plotly"), what the graph figure shows: the text's colour,
#: the hover box, the paper, a title's place, a frame's defaults (its axes are hidden and
#: every trace has its colours). Plotly deep-copied the whole template (~7 KB) into each
#: new figure, ~23 % of a fold toggle's redraw on the server, and the page got it each time.
GRAPH_TEMPLATE = {"layout": {key: value for key, value in pio.templates["plotly"].layout.to_plotly_json().items()
                             if key in ("font", "hoverlabel", "paper_bgcolor", "title", "shapedefaults",
                                        "annotationdefaults", "colorway")}}


def _webgl(n_nodes: int) -> bool:
    """Whether a graph of ``n_nodes`` is drawn with WebGL (:data:`MAX_SVG_NODES`)."""
    return n_nodes > MAX_SVG_NODES


def _scatter(n_nodes: int):
    cls = go.Scattergl if _webgl(n_nodes) else go.Scatter
    return lambda **props: cls(**props, **_UNCHECKED)


# (arrow heads and bit badges are always SVG: only nodes and halos pass ``webgl``)
def _in_view_only(n_points: int, webgl: bool = False, small_marks: bool = False) -> dict:
    """Marker properties that keep plotly from drawing an SVG trace's points out of view
    (:data:`DRAWN_IN_VIEW_ABOVE`); none for a short trace or a WebGL one. ``small_marks``
    (arrow heads, match halos: nothing to read; the page's preview of a fold restyles a
    halo in the SVG only if drawn): only in view however short the trace. Of the ~60 ms plotly took to redraw MobileNetV2's
    layer view at each edit (156 nodes, 10 of them in view) they were ~20; a drag brings
    those it uncovers when the mouse is released.

    >>> _in_view_only(1000), _in_view_only(10), _in_view_only(5000, webgl=True), _in_view_only(10, small_marks=True)
    ({'maxdisplayed': 1000}, {}, {}, {'maxdisplayed': 10})
    """
    shown_in_view = n_points > DRAWN_IN_VIEW_ABOVE or (small_marks and n_points > 0)
    return {"maxdisplayed": n_points} if shown_in_view and not webgl else {}


#: Marker size of a closed block, a whole layer and one op.
BLOCK_SIZE, LAYER_SIZE, OP_SIZE = 24, 16, 11


def _node_sizes(keys) -> list[int]:
    """Marker sizes: a block drawn larger than a whole layer, a layer larger than one op."""
    return [BLOCK_SIZE if _kind(k) == BLOCK_KIND else LAYER_SIZE if _kind(k) == "layer" else OP_SIZE for k in keys]


def _kind(key) -> str:
    """``"block"``, ``"layer"`` or ``"op"`` (anything else draws as one op)."""
    parsed = ViewKey.parse(key)
    return parsed.kind if parsed is not None else "op"


def _is_layer(key) -> bool:
    """Whether a node drawn is a whole layer."""
    return _kind(key) == "layer"


def _edges(g, pos, routes=None):
    """One line trace for all edges (None-separated; a long edge through its bends)
    and a marker at each arrow head."""
    xs, ys, hx, hy, angles = [], [], [], [], []
    routes = routes or {}
    for u, v in g.edges:
        points = [pos[u], *routes.get((u, v), ()), pos[v]]
        xs += [p[0] for p in points] + [None]
        ys += [p[1] for p in points] + [None]
        (x0, y0), (x1, y1) = points[-2], points[-1]
        # arrow head 80 % along the last segment, pointing along it
        hx.append(x0 + 0.8 * (x1 - x0))
        hy.append(y0 + 0.8 * (y1 - y0))
        angles.append(90 - math.degrees(math.atan2(y1 - y0, x1 - x0)))
    lines = _scatter(g.number_of_nodes())(x=xs, y=ys, mode="lines", line=dict(width=1, color="#9aa"),
                                          hoverinfo="skip", name="edges", showlegend=False)
    heads = go.Scatter(**_UNCHECKED, x=hx, y=hy, mode="markers", hoverinfo="skip", showlegend=False,
                       name="arrows",
                       marker=dict(symbol="triangle-up", size=7, angle=angles, color="#9aa",
                                   **_in_view_only(len(hx), small_marks=True)))
    return lines, heads


def _labels_readable(pos: Mapping, window, direction: str = "LR") -> bool:
    """Whether the first drawing shows the names (the page decides after each zoom, as
    assets/graph_view.js does): few enough nodes in view, and a graph short enough
    for its ranks to be far enough apart. Drawing thousands of names the page would
    then hide costs seconds."""
    if len(pos) > MAX_LABELS:
        return False
    if window is not None:
        (x0, x1), (y0, y1) = window
        shown = sum(1 for x, y in pos.values() if x0 <= x <= x1 and y0 <= y <= y1)
        return shown <= LABELS_IN_VIEW
    along = [p[0] if direction == "LR" else p[1] for p in pos.values()] or [0.0]
    return len(pos) <= LABELS_IN_VIEW and shows_whole(max(along) - min(along), direction)


def graph_figure(g, pos: Mapping, *, highlights: Mapping[str, int] | None = None,
                 clear_halos: Mapping[str, int] | None = None,
                 selected: str | Collection[str] | None = None, show_status: bool = True, title: str = "",
                 hover: Mapping[str, str] | None = None, routes: Mapping | None = None,
                 flags: Mapping[str, str] | None = None, first_view: bool = False,
                 direction: str = "LR", badges: Mapping[str, Badge] | None = None,
                 fill: Mapping[str, str] | None = None, frames: Collection[Frame] = ()) -> go.Figure:
    """The graph view.

    Args:
        g: a view graph (:func:`qviz.layout.view_graph`).
        pos: its layout.
        highlights: node key → match number (each match gets its own halo colour).
        clear_halos: node key → match number, a halo drawn clear (opacity 0): the
            page shows it when an edit it previews brings the node back.
        selected: node key(s) drawn with a thick outline.
        show_status: colour the outline by diff status (added/modified/removed).
        hover: node key → extra hover lines (shapes, fold/bit state).
        routes: ``{(u, v): [(x, y), ...]}`` bends of long edges
            (:func:`qviz.layout.layered_routes`); other edges are straight.
        flags: node key → a mark drawn beside the node (``⚠``/``✗``: TFLite will not
            run that layer as simulated; the hover says why).
        first_view: open on the start of a long graph, legibly (:func:`first_view_range`),
            rather than fitting the whole graph into the plot. ``direction``: the layout's.
        badges: node key → its :class:`Badge` (bits and fold), drawn on the side of the
            node its name is not on, and shown and hidden with the names.
        fill: node key → fill colour (a metric's), replacing the op-kind colours;
            nodes without one are :data:`NO_VALUE_COLOR`.
        frames: opened blocks, each a dashed outline with its name (:class:`Frame`).

    The node trace's ``customdata`` is the node key, which click callbacks read.
    """
    # ghosts (removed by the rewrite) first, so the node that replaced one is drawn over one behind it
    keys = sorted(g.nodes, key=lambda k: g.nodes[k].get("ghost_of") is None)
    data = [g.nodes[k] for k in keys]
    lines, heads = _edges(g, pos, routes)
    if g.number_of_edges() > MAX_ARROWS:
        heads = None
    hover = hover or {}
    texts = []
    for k, d in zip(keys, data):
        extra = hover.get(k, "")
        state = f"<br>change: {d['status']}" if d.get("status") else ""
        if d.get("ghost_of"):
            behind = g.nodes[d["ghost_of"]].get("label") if d["ghost_of"] in g else d["ghost_of"].split(":", 1)[1]
            state += f" ({behind} now does its work)"
        constants = f" + {d['constants']} constants" if d.get("constants") else ""
        if _kind(k) == BLOCK_KIND:
            layers = d.get("layers") or [""]
            what = (f"block {d['label']}: {len(layers)} layers, {layers[0]} … {layers[-1]}"
                    + (f" ({d['ops']} ops)" if d.get("ops") else "") + "<br>select it and press expand to open it")
        elif d.get("sketch"):   # drawn from the Keras file, before TensorFlow has frozen it
            what = f"layer {d['label']} ({d['op']})"
        elif _is_layer(k):
            what = f"layer {d['label']} ({d['ops']} ops{constants}, main op {d['op']})"
        else:
            name = d["members"][0] if d.get("members") else d.get("label", k)   # the op's whole name
            what = f"{name} ({d['op']})<br>layer {d['layer']}"
        texts.append(wrapped_hover(f"{what}{state}{extra}"))
    outline = []
    widths = []
    chosen = {selected} if isinstance(selected, str) else set(selected or ())
    for k, d in zip(keys, data):
        if k in chosen:
            outline.append(SELECTED_OUTLINE[0])
            widths.append(SELECTED_OUTLINE[1])
        elif show_status and d.get("status"):
            outline.append(STATUS_COLORS[d["status"]])
            widths.append(STATUS_OUTLINE_WIDTH)
        else:
            outline.append(PLAIN_OUTLINE[0])
            widths.append(PLAIN_OUTLINE[1])
    window = first_view_range(pos, direction) if first_view else None
    # (only with names: placing them for thousands of nodes whose names are never drawn costs time)
    sides = label_sides(g, {k: pos[k] for k in keys}, direction) if len(keys) <= MAX_LABELS else {}
    scatter, webgl = _scatter(len(keys)), _webgl(len(keys))
    symbols = {"symbol": ["square" if _kind(k) == BLOCK_KIND else "circle" for k in keys]} \
        if any(_kind(k) == BLOCK_KIND for k in keys) else {}
    nodes = scatter(
        x=[pos[k][0] for k in keys], y=[pos[k][1] for k in keys], customdata=keys,
        mode="markers+text" if _labels_readable(pos, window, direction) else "markers",
        text=[short_label(str(d["label"])) for d in data] if len(keys) <= MAX_LABELS else None,
        textposition=[sides[k] for k in keys] if sides else None, textfont=dict(size=10),
        hovertext=texts, hoverinfo="text", name="nodes", showlegend=False,
        marker=dict(size=_node_sizes(keys), **symbols,
                    color=[COLORS[d["kind"]] for d in data] if fill is None
                    else [fill.get(k, NO_VALUE_COLOR) for k in keys],
                    opacity=[GHOST_OPACITY if d.get("status") == "removed" else 1.0 for d in data],
                    line=dict(color=outline, width=widths), **_in_view_only(len(keys), webgl)))
    traces = [t for t in (lines, nodes, heads) if t is not None]
    halos = {**(clear_halos or {}), **(highlights or {})}
    if halos:
        hk = [k for k in keys if k in halos]
        traces.insert(1, scatter(
            x=[pos[k][0] for k in hk], y=[pos[k][1] for k in hk], mode="markers", hoverinfo="skip",
            name="matches", showlegend=False, customdata=hk,
            marker=dict(size=HALO_SIZE, opacity=[HALO_OPACITY if k in (highlights or ()) else 0 for k in hk],
                        color=[HALO_COLORS[halos[k] % len(HALO_COLORS)] for k in hk],
                        **_in_view_only(len(hk), webgl, small_marks=True))))
    if flags:
        fk = [k for k in keys if k in flags]
        traces.append(go.Scatter(
            **_UNCHECKED, x=[pos[k][0] for k in fk], y=[pos[k][1] for k in fk], mode="text",
            text=[flags[k] for k in fk], meta={"texts": [flags[k] for k in fk]},   # (all: the page thins text)
            textposition="top right", textfont=dict(size=14, color="#c05000"), hoverinfo="skip",
            name="device flags", showlegend=False, customdata=fk))
    if badges:
        bk = [k for k in keys if k in badges]
        traces.append(go.Scatter(
            # an invisible marker of the node's size (of its halo's, if it has one: the badge was
            # half under a selected match's ring): text is placed off a marker's edge, not its centre
            **_UNCHECKED, x=[pos[k][0] for k in bk], y=[pos[k][1] for k in bk], mode="markers+text",
            marker=dict(size=[max(size, HALO_SIZE) if k in (highlights or ()) else size
                              for k, size in zip(bk, _node_sizes(bk))], opacity=0, **_in_view_only(len(bk))),
            text=[badges[k].text for k in bk], meta={"texts": [badges[k].text for k in bk]},
            customdata=bk, name="bits", showlegend=False,
            textposition=[opposite_side(sides.get(k) or label_position(pos[k], g.nodes[k], direction)) for k in bk],
            textfont=dict(size=10, color=[badges[k].color for k in bk]), hoverinfo="skip",
            visible=nodes.mode == "markers+text"))
    xaxis, yaxis = dict(visible=False), dict(visible=False, scaleanchor="x")
    if window:
        xaxis["range"], yaxis["range"] = window
    # (one layout given to the figure unchecked: update_layout checks each value, ~10 ms a redraw)
    layout = dict(
        margin=dict(l=10, r=10, t=30 if title else 10, b=10), plot_bgcolor="#fff",
        xaxis=xaxis, yaxis=yaxis, dragmode="pan", uirevision="graph", hovermode="closest", template=GRAPH_TEMPLATE,
        # (the page thins names with the same measure of a name as label_sides: assets/graph_view.js)
        # ("diff": the page may preview an edit on it: qviz.app.callbacks.recipe)
        # ("direction": where the graph starts, which a plot too narrow for a whole graph's names opens on)
        # ("selected": named first, whatever crowds it: a node searched for kept no name at 1280 px)
        meta={"labels_in_view": LABELS_IN_VIEW, "label_px": LABEL_PX, "diff": show_status, "direction": direction,
              "selected": sorted(chosen & set(keys)),
              "label_box": {"char": CHAR_PX, "line": LINE_PX, "gap": LABEL_GAP_PX, "clear": list(CLEAR_PX)}})
    if title:
        layout["title"] = dict(text=title)
    drawn = [(f.label, path, f.name_at(pos, direction)) for f in frames
             if (path := f.outline(pos, direction)) is not None]
    if drawn:   # a few shapes (one per opened block): cheap, unlike a shape per node
        layout.update(
            shapes=[dict(type="path", path=path, layer="below", line=dict(color=COLORS[BLOCK_KIND], width=1.5,
                         dash="dash"), fillcolor=FRAME_FILL) for _, path, _ in drawn],
            # (on a white ground: at the zoom that shows a big block whole, names run over it)
            annotations=[dict(x=x, y=y, xanchor="left", yanchor="bottom", showarrow=False, text=f"block {label}",
                              font=dict(size=11, color=COLORS[BLOCK_KIND]), bgcolor="rgba(255, 255, 255, 0.85)")
                         for label, _, (x, y) in drawn])
    return go.Figure(traces, layout=layout, **_UNCHECKED)


#: Characters a hover line holds before it wraps (plotly draws one line however long: a
#: TFLite reason spanned the whole graph and hid every node under it).
HOVER_WIDTH = 80


def wrapped_hover(text: str, width: int = HOVER_WIDTH) -> str:
    """``text`` (lines joined by ``<br>``) with each line longer than ``width`` broken at spaces.

    >>> wrapped_hover("conv2<br>on TFLite: " + "its batch norm is not folded " * 3, width=40)
    'conv2<br>on TFLite: its batch norm is not folded<br>its batch norm is not folded its batch<br>norm is not folded'
    """
    return "<br>".join("<br>".join(textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False))
                       if len(line) > width else line for line in text.split("<br>"))


def sent_once(fig: go.Figure) -> dict:
    """``fig`` as the plain dict Dash sends, for a figure made to be sent once and
    dropped: without the deep copy of every trace plotly's ``to_dict`` makes first (half
    of what sending MobileNetV2's redrawn layer view cost the server).

    >>> fig = go.Figure(go.Scatter(x=[0, 1], y=[1, 0], name="nodes"))
    >>> sent = sent_once(fig)
    >>> sent["data"][0]["x"], sent["data"][0]["type"], sent == fig.to_dict()
    ([0, 1], 'scatter', True)
    """
    return {"data": fig._data, "layout": fig._layout}   # (what to_dict deep-copies)


#: How far past the view names are drawn, in views on each side: a short pan finds them there
#: (on a graph of over DRAWN_IN_VIEW_ABOVE nodes, once the pan ends: only nodes in view are drawn).
NAMES_MARGIN = 0.5


def names_near_view(fig: go.Figure) -> go.Figure:
    """``fig`` (a :func:`graph_figure` whose axes have ranges), changed in place to draw
    node names only near the window it opens on, for a page that draws the rest as the
    view moves (``assets/graph_view.js``). Plotly lays out every name, in view or not: on
    NASNetMobile's op view (1,127 nodes) that was ~40 % of the drawing. All the names go
    in ``layout.meta["labels"]`` (aligned with the node trace), the region drawn in
    ``layout.meta["labelled"]`` (``[x0, x1, y0, y1]``), the margin past the view the page
    keeps in ``layout.meta["names_margin"]``. A figure shown whole (no ranges) is left
    alone; a figure trimmed already is trimmed again from all its names.

    >>> from qviz.layout import DiGraph
    >>> g = DiGraph([(f"layer:n{i}", f"layer:n{i + 1}") for i in range(30)])
    >>> for n in g: g.nodes[n].update(kind="conv", op="Conv2D", label=n[6:], layer=n[6:], ops=1, status=None)
    >>> fig = names_near_view(graph_figure(g, {k: (float(i), 0.0) for i, k in enumerate(g)}, first_view=True))
    >>> fig.layout.xaxis.range, fig.layout.meta["labelled"][:2]
    ((-0.6, 9.4), [-5.6, 14.4])
    >>> nodes = fig.data[1]
    >>> [nodes.text[i] for i in (0, 14, 15, 30)], fig.layout.meta["labels"][30]
    (['n0', 'n14', '', ''], 'n30')
    """
    nodes = next((t for t in fig.data if t.name == "nodes"), None)
    xr, yr = fig.layout.xaxis.range, fig.layout.yaxis.range
    if nodes is None or nodes.text is None or xr is None or yr is None:
        return fig
    (x0, x1), (y0, y1) = sorted(xr), sorted(yr)
    w, h = NAMES_MARGIN * (x1 - x0), NAMES_MARGIN * (y1 - y0)
    region = [x0 - w, x1 + w, y0 - h, y1 + h]
    labels = list((fig.layout.meta or {}).get("labels") or nodes.text)
    nodes.text = [s if region[0] <= x <= region[1] and region[2] <= y <= region[3] else ""
                  for s, x, y in zip(labels, nodes.x, nodes.y)]
    fig.layout.meta = {**(fig.layout.meta or {}), "labels": labels, "labelled": region, "names_margin": NAMES_MARGIN}
    return fig


#: Above this many levels the lines are too dense to tell apart in the side panel's
#: ~330-px plot (8 bits' 255 were a solid block over the histogram): the grid is
#: drawn as its range, with the number of levels and the step written on it.
MAX_DRAWN_LEVELS = 64


def wrap_title(text: str, width: int = 38) -> str:
    """``text`` broken into lines of at most ``width`` characters (plotly's ``<br>``),
    at spaces, or after a ``/`` in a long tensor name: a plotly title never wraps
    by itself, and the side panel is under 300 px wide on a laptop.

    >>> wrap_title("weights at 4 bits (narrow range, per-channel, channel 0): [-1.2, 1.3]")
    'weights at 4 bits (narrow range,<br>per-channel, channel 0): [-1.2, 1.3]'
    >>> wrap_title("model/block_1/conv/ReadVariableOp:0 [3, 3]", width=24)
    'model/block_1/conv/<br>ReadVariableOp:0 [3, 3]'
    """
    words = [p for w in text.split(" ") for p in _split_long(w, width)]
    lines = [""]
    for w in words:
        glue = "" if not lines[-1] or lines[-1].endswith("/") else " "
        if lines[-1] and len(lines[-1]) + len(glue) + len(w) > width:
            lines.append(w)
        else:
            lines[-1] += glue + w
    return "<br>".join(lines)


def _split_long(word: str, width: int) -> list[str]:
    """A word longer than ``width`` cut after its slashes (or hard, if it has none)."""
    if len(word) <= width:
        return [word]
    parts, current = [], ""
    for piece in word.replace("/", "/\0").split("\0"):
        if current and len(current) + len(piece) > width:
            parts.append(current)
            current = ""
        current += piece
    parts.append(current)
    return [p[i:i + width] for p in parts for i in range(0, len(p), width)]


def histogram_figure(values: np.ndarray, title: str, levels: np.ndarray | None = None) -> go.Figure:
    """A histogram of a constant's values, optionally with the quantization levels over it.

    The levels are one trace (a polyline broken by gaps, on an overlaid 0–1
    axis), not a shape per level: 256 shapes cost plotly seconds to build.
    """
    v = np.asarray(values, np.float64).ravel()
    fig = go.Figure(go.Histogram(x=v, nbinsx=60, marker_color="#1f77b4", name="values"))
    lv = np.asarray(levels if levels is not None else (), np.float64).ravel()
    if lv.size and lv.size <= MAX_DRAWN_LEVELS:
        xs = np.repeat(lv, 3).tolist()            # lists: plain JSON the page (and its tests) can read
        ys = [0.0, 1.0, None] * lv.size
        fig.add_trace(go.Scatter(x=xs, y=ys, yaxis="y2", mode="lines", line=dict(width=1, color="#d0021b"),
                                 opacity=0.6, hoverinfo="skip", name="levels", connectgaps=False))
    elif lv.size:
        lo, hi = float(lv.min()), float(lv.max())
        step = (hi - lo) / max(lv.size - 1, 1)
        fig.add_trace(go.Scatter(x=[lo, lo, hi, hi, lo], y=[0, 1, 1, 0, 0], yaxis="y2", mode="lines",
                                 fill="toself", fillcolor="rgba(208,2,27,0.08)",
                                 line=dict(width=1, color="#d0021b"), hoverinfo="skip", name="levels"))
        # (in the plot's corner: centred on the grid it ran out of a narrow plot)
        fig.add_annotation(x=0.01, xref="paper", xanchor="left", y=0.98, yanchor="top", yref="paper", showarrow=False,
                           font=dict(size=10, color="#d0021b"), bgcolor="rgba(255,255,255,0.75)",
                           text=f"{lv.size} levels, step {step:.3g}")
    title = wrap_title(title)
    lines = title.count("<br>") + 1
    keyed = len(fig.data) > 1
    fig.update_layout(title=dict(text=title, font=dict(size=12)),
                      margin=dict(l=40, r=10, t=14 + 16 * lines, b=58 if keyed else 40),
                      height=200 + 16 * lines + (18 if keyed else 0), showlegend=keyed,
                      # under the axis title: inside the plot it hid the tallest bars, and above it
                      # a wrapped title ran under it
                      legend=dict(orientation="h", x=1, xanchor="right", y=0, yanchor="bottom", yref="container",
                                  font_size=10),
                      xaxis=dict(title=dict(text="value", standoff=2)), yaxis=dict(title=dict(text="count", standoff=2)),
                      yaxis2=dict(overlaying="y", range=[0, 1], visible=False, fixedrange=True))
    return fig


#: Bars shown before "show all": the worst layers, every one labelled.
WORST_LAYERS = 20


#: The per-layer SQNR chart's bar colours, and what its key says of each.
_QUANTIZED_BAR, _UNQUANTIZED_BAR, _EXACT_BAR = (("#4363d8", "◆ blue: quantized"), ("#9aa7c7", "grey: not quantized"),
                                                ("#2e8b57", "green: exact"))


def layer_error_figure(layers, sqnr, *, quantized=(), limit: int | None = WORST_LAYERS,
                       mode: str = "accumulated", examples: int | None = None) -> go.Figure:
    """Per-layer SQNR (dB) as labelled horizontal bars, worst first; ``mode`` names
    the error measured ("accumulated" or "local", :mod:`qviz.metrics.local`), ``examples``
    how many examples it is measured on (:attr:`qviz.metrics.Report.layer_examples`).

    An exact layer (infinite SQNR) is drawn past every finite bar, in its own
    colour, labelled ∞; layers in ``quantized`` are marked ◆. ``limit`` keeps the
    worst ones (``None``: all). Each bar's ``customdata`` is its layer's view key
    (``layer:<name>``), for a click to select it.

    >>> fig = layer_error_figure(["a", "b", "c"], [40.0, float("inf"), 12.5], quantized={"c"})
    >>> list(fig.data[0].y), list(fig.data[0].text)
    (['◆ c', 'a', 'b'], ['12.5 dB', '40.0 dB', '∞ (exact)'])
    >>> fig.data[0].x[2] > fig.data[0].x[1]
    True
    >>> list(layer_error_figure(["a", "b"], [0.0, 30.0]).data[0].textposition)   # a bar too short for its label
    ['outside', 'inside']
    >>> layer_error_figure(["a"], [9.0], examples=8).layout.title.text.split("<br>")[0]
    'per-layer SQNR, accumulated, on the first 8 examples'
    """
    rows = sorted(zip(sqnr, layers), key=lambda r: r[0])
    total = len(rows)
    rows = rows[:limit] if limit else rows
    finite = [v for v, _ in rows if not math.isinf(v)]
    top = max(finite, default=0.0)
    exact_at = max(top * 1.15, top + 10.0, 10.0)
    quantized = set(quantized)
    x = [exact_at if math.isinf(v) else v for v, _ in rows]
    names = [f"◆ {name}" if name in quantized else name for _, name in rows]
    colors = [_EXACT_BAR[0] if math.isinf(v) else (_QUANTIZED_BAR if name in quantized else _UNQUANTIZED_BAR)[0]
              for v, name in rows]
    text = ["∞ (exact)" if math.isinf(v) else f"{v:.1f} dB" for v, _ in rows]
    # a label goes beside a bar too short to hold it ("auto" hid it: 14 of a report's worst
    # 20 layers, at 0.0 dB, looked like missing rows)
    span = max((abs(v) for v in x), default=0.0) or 1.0
    where = ["inside" if abs(v) >= 0.25 * span else "outside" for v in x]
    fig = go.Figure(go.Bar(x=x, y=names, orientation="h", marker_color=colors, text=text, cliponaxis=False,
                           textposition=where, customdata=[ViewKey.layer(name) for _, name in rows],
                           hovertemplate="%{y}: %{text}<extra></extra>"))
    shown = "" if len(rows) == total else f", the worst {len(rows)} of {total}"
    # the key names only the colours drawn (it said "blue: quantized" over grey bars alone)
    key = [said for colour, said in (_QUANTIZED_BAR, _UNQUANTIZED_BAR, _EXACT_BAR) if colour in colors]
    # the key on a line of its own: in one line it ran out of a 1280-px window's chart
    on = f", on the first {examples} examples" if examples else ""
    fig.update_layout(title=f"per-layer SQNR, {mode}{on}<br><sub>{' · '.join(key)}{shown}</sub>",
                      height=72 + 22 * max(len(rows), 1), margin=dict(l=10, r=10, t=52, b=20),
                      yaxis=dict(autorange="reversed", automargin=True, title=dict(text="layer", standoff=4)),
                      # room beside the bars for the labels put there, a negative one's on its left
                      xaxis=dict(range=[min(0.0, min(x, default=0.0)) - (0.25 * span if min(x, default=0.0) < 0 else 0.0),
                                        max(0.0, max(x, default=0.0)) + 0.2 * span],
                                 title=dict(text="SQNR (dB, higher is better)", standoff=4)))
    return fig


def sensitivity_figure(layers, bits, weight_sqnr, activation_sqnr, need_db: float | None = None,
                       weight_accuracy=None, activation_accuracy=None) -> go.Figure:
    """Two heatmaps (layers × bits): output SQNR with one layer's weights, then its
    activations, quantized. Cells at or above ``need_db`` (what each quantizer
    must reach for the target) have their value in bold; with accuracies (a
    sample with labels) the hover shows them too. A NaN cell (a sweep stopped before
    it was measured) is left blank."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("weights quantized", "activations quantized"),
                        shared_yaxes=True, horizontal_spacing=0.04)
    x = [f"{b} bits" for b in bits]
    for col, z, acc in ((1, weight_sqnr, weight_accuracy), (2, activation_sqnr, activation_accuracy)):
        z = [[None if math.isnan(v) else v for v in row]   # lists: readable in the page; None: a gap
             for row in np.where(np.isinf(np.asarray(z, np.float64)), 100.0, z).tolist()]
        text = [["" if v is None else (f"<b>{v:.0f}</b>" if need_db is not None and v >= need_db else f"{v:.0f}")
                 for v in row] for row in z]
        hover = "%{y} at %{x}: %{z:.1f} dB"
        extra = {}
        if acc is not None:
            extra["customdata"] = (100 * np.asarray(acc, np.float64)).tolist()
            hover += ", accuracy %{customdata:.2f} %"
        fig.add_trace(go.Heatmap(z=z, x=x, y=list(layers), text=text, texttemplate="%{text}", hoverongaps=False,
                                 textfont=dict(size=11),   # (Plotly's own fit shrank them to ~6 px in the panel)
                                 colorscale="RdYlGn", zmin=0, zmax=60, showscale=col == 2,
                                 colorbar=dict(title="output SQNR (dB)"), hovertemplate=hover + "<extra></extra>",
                                 **extra), 1, col)
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(title_text="layer", row=1, col=1)
    fig.update_xaxes(title_text="weight bits", row=1, col=1)
    fig.update_xaxes(title_text="activation bits", row=1, col=2)
    fig.update_layout(height=max(240, 60 + 28 * len(layers)), margin=dict(l=10, r=10, t=30, b=40),
                      title=None)
    return fig


def pareto_figure(front) -> go.Figure:
    """What each recipe of the mixed-precision search costs against its output SQNR
    (:class:`qviz.analysis.mixed_precision.MixedPrecision`): weight size, or
    bit-operations if that is what the search traded; the chain the greedy search
    took, the points on the front ringed, the estimate beside the measurement. Each
    point's ``customdata`` is its index, for a click to load it.

    >>> import numpy as np
    >>> from qviz.analysis.sensitivity import Sensitivity
    >>> from qviz.analysis.mixed_precision import search
    >>> s = Sensitivity(("a", "b"), (8, 4), np.array([[50.0, 26], [50, 40]]), np.array([[60.0, 30], [60, 30]]))
    >>> fig = pareto_figure(search(s, {"a": 1000, "b": 1000}))
    >>> [t.name for t in fig.data], fig.layout.xaxis.title.text
    (['recipes (the search, widest first)', 'on the front', 'estimated from the sweep'], 'weights (KB)')
    >>> pareto_figure(search(s, {"a": 1000, "b": 1000}, macs={"a": 10**6, "b": 10})).layout.xaxis.title.text
    'bit-operations per example (millions)'
    """
    pts = front.points
    by_ops = front.cost == "bops"
    cost = [(p.bops or 0) / 1e6 if by_ops else p.weight_bytes / 1024 for p in pts]
    measured = [p.measured_sqnr_db if p.measured_sqnr_db is not None else p.estimated_sqnr_db for p in pts]
    labels = ["<br>".join(f"{k}: w{b.weight_bits}" for k, b in p.recipe.quantize_layers.items()
                          if b.weight_bits is not None) for p in pts]
    other = [f"{p.weight_bytes / 1024:.1f} KB of weights" if by_ops
             else (f"{p.bops / 1e6:.3g} M bit-ops" if p.bops is not None else "") for p in pts]
    acc = [f"<br>accuracy {100 * p.accuracy:.2f} %" if p.accuracy is not None else "" for p in pts]
    unit = "M bit-ops" if by_ops else "KB"
    fig = go.Figure(go.Scatter(
        x=cost, y=measured, mode="lines+markers", name="recipes (the search, widest first)",
        customdata=list(range(len(pts))), line=dict(color="#9aa7c7"), marker=dict(size=8, color="#4363d8"),
        text=[f"<br>{o}<br>{lab}{a}" for o, lab, a in zip(other, labels, acc)],
        hovertemplate=f"%{{x:.3g}} {unit}, %{{y:.1f}} dB%{{text}}<br><i>click to load this recipe</i><extra></extra>"))
    on_front = {id(p) for p in front.front()}
    idx = [i for i, p in enumerate(pts) if id(p) in on_front]
    fig.add_trace(go.Scatter(x=[cost[i] for i in idx], y=[measured[i] for i in idx], mode="markers",
                             name="on the front", customdata=idx, hoverinfo="skip",
                             marker=dict(size=15, color="rgba(0,0,0,0)", line=dict(color="#d62728", width=2))))
    fig.add_trace(go.Scatter(x=cost, y=[p.estimated_sqnr_db for p in pts], mode="lines",
                             name="estimated from the sweep", line=dict(color="#999", dash="dot"), hoverinfo="skip"))
    what = "compute (bit-operations)" if by_ops else "weight size"
    fig.update_layout(height=320, margin=dict(l=50, r=10, t=30, b=40), clickmode="event",
                      title=dict(text=f"mixed precision: {what} against output SQNR (measured); "
                                      "click a point to load its recipe", font_size=12),
                      xaxis=dict(title=dict(text="bit-operations per example (millions)" if by_ops
                                            else "weights (KB)"), autorange="reversed"),
                      yaxis=dict(title=dict(text="output SQNR (dB)")),
                      legend=dict(orientation="h", y=-0.25))
    return fig
