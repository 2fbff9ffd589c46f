"""The graph view, pattern highlights, the selected node's panel, and verification."""

from __future__ import annotations

import logging
import time

import math

import numpy as np
from dash import ALL, Input, Output, State, ctx, dcc, html, no_update

from ...choices import bits_label
from ...layout import layered_routes, view_graph
from ...analysis.match_fates import summary as summarize_matches
from ...matcher import explain, explain_layer
from ...passes import fold_candidates, quantizable_layers
from ...patterns import BUILTIN, PatternSyntaxError, parse
from ...render import graph_figure, histogram_figure, layer_error_figure
from ...render.figure import WORST_LAYERS
from .. import ids
from ..layout import BITS, NO_FIGURE
from .recipe import current


#: Matches listed by name (all are highlighted); thousands of buttons would slow the page.
MAX_LISTED = 200


log = logging.getLogger(__name__)


def _shown(s, data, show):
    """(graph to draw, result or None): the rewritten graph unless 'original' is asked."""
    result = s.result(current(data))
    return (s.graph, result) if show == "original" else (result.graph, result)


def _view(s, graph, result, mode, expanded, direction, diff: bool):
    """(view graph, positions, edge routes), cached per (graph, view)."""
    key = (id(graph), mode, tuple(sorted(expanded)), direction, diff)
    cached = s.layouts.get(key)
    if cached is None:
        status, removed = {}, []
        if diff and result is not None:
            status = {n: "added" for n in result.changes.added}
            status.update({n: "modified" for n in result.changes.modified})
            removed = [s.graph.node(n) for n in result.changes.removed if not s.graph.is_constant(n)]
        vg = view_graph(graph, mode, expanded, removed=removed, status=status)
        cached = (vg, *layered_routes(vg, direction))
        if len(s.layouts) > 16:
            s.layouts.clear()
        s.layouts[key] = cached
    return cached


def _pattern(builtin, text):
    if text and text.strip():
        return parse(text)
    return BUILTIN.get(builtin or "conv_bn")


def _fates(s, data, builtin, text):
    """The pattern's float-graph matches followed through the recipe (cached on the session).

    Raises:
        PatternSyntaxError: the typed pattern does not parse.
    """
    source = text.strip() if text and text.strip() else f"builtin:{builtin or 'conv_bn'}"
    return s.match_fates(source, _pattern(builtin, text), current(data))


def _why(fates, graph, pattern, layer, node=None) -> str:
    """The Patterns box's explanation for the selection: its match and fate if it is in
    one (so it agrees with the halos), else why it does not match."""
    for f in fates:
        if (node in f.body or node in f.survivors) if node else layer in f.layers:
            return f"{'op ' + node if node else 'layer ' + layer} is in match {f.number} " \
                   f"({' + '.join(f.layers)}): {f.fate}, {f.reason}."
    return explain(pattern, graph, node) if node else explain_layer(pattern, graph, layer)


def _key_of(vg, graph, name):
    """The view key that shows node ``name`` (its op, or its layer)."""
    if f"op:{name}" in vg:
        return f"op:{name}"
    if name in graph and f"layer:{graph.node(name).layer}" in vg:
        return f"layer:{graph.node(name).layer}"
    return None


def _center(fig, pos, key):
    x, y = pos[key]
    span = 8
    fig.update_layout(xaxis=dict(range=[x - span, x + span]), yaxis=dict(range=[y - span / 2, y + span / 2]))


def register(app, store) -> None:
    @app.callback(
        Output(ids.GRAPH, "figure"), Output(ids.NODE_COUNT, "children"),
        Output(ids.MATCH_COUNT, "children"), Output(ids.MATCH_LIST, "children"),
        Output(ids.PATTERN_ERROR, "children"), Output(ids.DIFF_SUMMARY, "children"),
        Output(ids.DRAWN, "data"),
        Input(ids.RECIPE, "data"), Input(ids.VIEW, "data"), Input(ids.VIEW_MODE, "value"),
        Input(ids.SHOW, "value"), Input(ids.DIRECTION, "value"),
        Input(ids.PATTERN_BUILTIN, "value"), Input(ids.PATTERN_TEXT, "value"), Input(ids.SELECTED, "data"),
        State(ids.SESSION, "data"),
    )
    def draw(data, view, mode, show, direction, builtin, text, selected, session):
        s = store.require(session)
        if s is None or not data:
            return no_update, "", "", "", "", "", no_update
        started = time.monotonic()
        try:
            return _draw(s, data, view, mode, show, direction, builtin, text, selected)
        finally:
            log.info("session %s: drew %s in %.2f s", session["sid"][:8], s.name, time.monotonic() - started)

    def _draw(s, data, view, mode, show, direction, builtin, text, selected):
        graph, result = _shown(s, data, show)
        vg, pos, routes = _view(s, graph, result, mode, view.get("expanded", []), direction,
                                show != "original")
        error, highlights, items, count = "", {}, [], ""
        try:
            fates = _fates(s, data, builtin, text)
        except PatternSyntaxError as exc:
            error, fates = str(exc), []
        original = show == "original"
        for f in fates:
            if original and f.fate == "new":
                continue
            # the float graph's ops in the original view; what is left of them in the rewritten one
            keys = [k for k in dict.fromkeys(_key_of(vg, graph, n) for n in (f.body if original else f.survivors))
                    if k]
            for k in keys:
                highlights.setdefault(k, f.number - 1)    # the float graph's number: a stable colour
            if len(items) < MAX_LISTED:
                root = _key_of(vg, graph, f.root) or (keys[0] if keys else "")
                items.append(html.Button([f"{f.number}. {' + '.join(f.layers)} ",
                                          html.Span(f.fate, className=f"fate fate-{f.fate}")],
                                         title=f.reason, className="match-item",
                                         id={"type": "match-item", "key": root}))
        if len(fates) > MAX_LISTED:
            items.append(html.Div(f"… and {len(fates) - MAX_LISTED} more (all highlighted)"))
        if not error:
            count = summarize_matches(fates)
        sel = selected.get("key") if selected else None
        hover = _hover(s, graph, vg, current(data))
        flags = _device_flags(s, vg, current(data), hover) if show != "original" else {}
        fig = graph_figure(vg, pos, routes=routes, highlights=highlights, selected=sel,
                           show_status=show != "original", hover=hover, flags=flags)
        if sel in pos and selected.get("center"):
            _center(fig, pos, sel)
        c = result.changes
        diff = (f"rewrite: {len(c.added)} ops added, {len(c.removed)} removed, {len(c.modified)} modified"
                if c else "no rewrite: the recipe changes nothing")
        drawn = current(data).to_json(indent=None)
        s.latest = drawn
        return fig, f"{vg.number_of_nodes()} nodes", count, items, error, diff, drawn

    @app.callback(
        Output(ids.SELECTED, "data"), Output(ids.SEARCH_STATUS, "children"),
        Input(ids.GRAPH, "clickData"), Input(ids.SEARCH, "value"), Input(ids.LAYER_ERRORS, "clickData"),
        Input({"type": "match-item", "key": ALL}, "n_clicks"),
        State(ids.SESSION, "data"), State(ids.RECIPE, "data"), State(ids.VIEW_MODE, "value"),
        State(ids.SHOW, "value"), State(ids.VIEW, "data"), State(ids.DIRECTION, "value"),
        prevent_initial_call=True,
    )
    def select(click, search, bar, _clicks, session, data, mode, show, view, direction):
        trig = ctx.triggered_id
        if trig == ids.GRAPH and click:
            key = click["points"][0].get("customdata")
            return ({"key": key, "center": False}, "") if key else (no_update, "")
        if trig == ids.LAYER_ERRORS and bar:   # a bar of the per-layer SQNR chart: that layer, centred
            key = bar["points"][0].get("customdata")
            return ({"key": key, "center": True}, "") if key else (no_update, "")
        if isinstance(trig, dict) and ctx.triggered[0]["value"]:
            return {"key": trig["key"], "center": True}, ""
        if trig == ids.SEARCH and search:
            s = store.require(session)
            if s is None:
                return no_update, ""
            graph, result = _shown(s, data, show)
            vg, _, _ = _view(s, graph, result, mode, view.get("expanded", []), direction, show != "original")
            needle = search.strip()
            for key in (f"layer:{needle}", f"op:{needle}"):
                if key in vg:
                    return {"key": key, "center": True}, ""
            hits = [k for k in vg if needle.lower() in k.split(":", 1)[1].lower()]
            if hits:
                return {"key": hits[0], "center": True}, f"{len(hits)} found"
            return no_update, f"no node or layer matches {needle!r}"
        return no_update, ""

    @app.callback(Output(ids.GRID, "selectedRows"), Input(ids.SELECTED, "data"), State(ids.SESSION, "data"),
                  State(ids.SHOW, "value"), State(ids.RECIPE, "data"), prevent_initial_call=True)
    def select_row(selected, session, show, data):
        s = store.require(session)
        if s is None or not selected:
            return no_update
        kind, _, name = selected["key"].partition(":")
        graph, _ = _shown(s, data, show)
        layer = name if kind == "layer" else (graph.node(name).layer if name in graph else None)
        return {"ids": [layer]} if layer else no_update

    @app.callback(
        Output(ids.VIEW, "data"),
        Input(ids.EXPAND, "n_clicks"), Input(ids.COLLAPSE_ALL, "n_clicks"),
        State(ids.SELECTED, "data"), State(ids.VIEW, "data"), prevent_initial_call=True,
    )
    def expand(_e, _c, selected, view):
        if ctx.triggered_id == ids.COLLAPSE_ALL:
            return {**view, "expanded": []}
        key = (selected or {}).get("key") or ""
        if not key.startswith("layer:"):
            return no_update
        return {**view, "expanded": sorted(set(view.get("expanded", [])) | {key[6:]})}

    @app.callback(
        Output(ids.NODE_PANEL, "children"), Output(ids.EXPLAIN, "children"), Output(ids.NODE_PANEL_POLL, "disabled"),
        Input(ids.SELECTED, "data"), Input(ids.RECIPE, "data"), Input(ids.NODE_PANEL_POLL, "n_intervals"),
        State(ids.PATTERN_BUILTIN, "value"), State(ids.PATTERN_TEXT, "value"),
        State(ids.SESSION, "data"), State(ids.SHOW, "value"),
    )
    def node_panel(selected, data, _tick, builtin, text, session, show):
        s = store.require(session)
        if s is None or not selected or not data:
            return html.Div("click a node to see it here"), "", True
        # A tick re-renders: the page keeps the newest render and its poll flag, and
        # stops polling when that render has everything (state kept here could lag
        # behind it when two renders finish out of order).
        started = time.monotonic()
        body, why, waiting = _node_panel(s, selected, data, builtin, text, show)
        log.debug("session %s: node panel of %s in %.2f s", session["sid"][:8], selected["key"],
                 time.monotonic() - started)
        return body, why, not waiting

    def _node_panel(s, selected, data, builtin, text, show):
        """(panel content, explanation, still waiting for the worker)."""
        recipe = current(data)
        if not s.result_ready(recipe):
            # the recipe's calibration is running in the worker: its controls now, the rest when ready
            kind, _, name = selected["key"].partition(":")
            layer = name if kind == "layer" else (s.graph.node(name).layer if name in s.graph else None)
            if layer is None:
                return html.Div(f"{name}: applying the recipe…"), "", True
            return html.Div([html.B(f"layer {layer}"), _controls(s.graph, recipe, layer),
                             html.Div("applying the recipe (calibrating in the worker)…",
                                      className="verify-running")]), "", True
        graph, result = _shown(s, data, show)
        kind, _, name = selected["key"].partition(":")
        recipe = current(data)
        try:
            pattern, fates = _pattern(builtin, text), _fates(s, data, builtin, text)
        except PatternSyntaxError:
            pattern, fates = None, []
        if kind == "layer":
            layer = name
            if layer not in graph.layers:
                return html.Div(f"layer {layer} (removed by the rewrite)"), "", False
            nodes = [n for n in graph.layer_nodes(layer)]
            ops = [n for n in nodes if not graph.is_constant(n)]    # counted as the graph's hover counts them
            body = [html.B(f"layer {layer}"), _controls(s.graph, recipe, layer),
                    html.Div(f"{len(ops)} ops: " + ", ".join(sorted({n.op for n in ops}))
                             + f"; {len(nodes) - len(ops)} constants (weights and their reads, not drawn)")]
            why = _why(fates, graph, pattern, layer) if pattern is not None else ""
        else:
            if name not in graph:
                return html.Div(f"{name} (removed by the rewrite)"), "", False
            node = graph.node(name)
            layer = node.layer
            # the layer's controls first: attributes and histograms can be long
            body = [html.B(node.name), html.Div(f"op {node.op}, layer {layer}"), _controls(s.graph, recipe, layer)]
            body += [html.Div(f"{k} = {_short(v)}") for k, v in node.attrs.items() if k != "value"]
            for t in node.inputs:
                if graph.is_constant(t):
                    from ...passes.constants import constant_value
                    try:
                        v = constant_value(graph, t)
                    except Exception:  # a constant TF cannot evaluate: just skip its histogram
                        continue
                    if v.size > 1 and np.issubdtype(v.dtype, np.floating):
                        body.append(dcc.Graph(figure=histogram_figure(v, f"{t} {list(v.shape)}"),
                                              config={"displayModeBar": False}))
            why = _why(fates, graph, pattern, layer, node=name) if pattern is not None else ""
        grids, waiting = _grids(s, graph, layer, recipe)
        return html.Div(body + grids), why, waiting

    @app.callback(
        Output(ids.VERIFY_PANEL, "children"), Output(ids.LAYER_ERRORS, "figure"),
        Output(ids.VERIFY_POLL, "disabled"),
        Input(ids.DRAWN, "data"), Input(ids.VERIFY_POLL, "n_intervals"), Input(ids.LAYER_ERRORS_ALL, "value"),
        State(ids.SESSION, "data"),
    )
    def verification(drawn, _tick, show_all, session):
        # Follows DRAWN (not the recipe), so the redraw comes first; the report
        # runs both graphs in TensorFlow in the worker, and this callback only
        # polls it, so no request is held open while it runs.
        s = store.require(session)
        if s is None or not drawn or not s.latest:
            return "", NO_FIGURE, True
        from ...passes import Recipe

        future = s.report_future(Recipe.from_json(s.latest))
        if not future.done():
            return html.Div("verifying: running the original and rewritten graphs…",
                            className="verify-running"), no_update, False
        try:
            rep = future.result()
        except Exception as exc:  # the report failed (e.g. an op TF cannot run): say so
            return html.Div(f"verification failed: {exc}", className="error"), NO_FIGURE, True
        recipe = Recipe.from_json(s.latest)
        quantized = set(recipe.quantize_config(s.graph).layers)
        if quantized:
            s.samples_future(recipe)   # the grids' activation samples next, so a selected layer draws at once
        return _report_view(rep), layer_error_figure([e.layer for e in rep.layers], [e.sqnr_db for e in rep.layers],
                                                     quantized=quantized, limit=None if show_all else WORST_LAYERS), True


def _grids(s, graph, layer, recipe):
    """(quantization grids of the selected layer: weights and its activation, levels
    drawn over; whether activation samples are still being computed in the worker)."""
    from ...analysis.quant_grid import quant_grids
    from ...metrics import layer_outputs

    if graph is s.graph or layer not in graph.layers:
        return [], False
    # the layer's own FakeQuants, and the activation FakeQuant a few ops downstream
    near, frontier = {layer}, [layer_outputs(graph).get(layer)]
    for _ in range(3):
        nxt = []
        for t in filter(None, frontier):
            for c in graph.consumers(t):
                near.add(c.layer)
                nxt.append(c.output(0))
        frontier = nxt
    # its weights, and activations produced within reach of its output
    grids = [g for g in quant_grids(graph, near)
             if (graph.node(g.node).layer == layer if g.kind == "weights"
                 else graph.producer(g.tensor).layer in near)]
    out = []
    grids = grids[:3]
    activations = [g.tensor for g in grids if g.kind != "weights"]
    samples = s.samples_future(recipe) if activations else None
    if samples is not None and not samples.done():
        grids = [g for g in grids if g.kind == "weights"]
        out.append(html.Div("sampling the activations in the worker…", className="verify-running",
                            id="grid-waiting"))
    elif samples is not None and samples.exception() is not None:
        grids = [g for g in grids if g.kind == "weights"]
        out.append(html.Div(f"activation samples failed: {samples.exception()}", className="error"))
    for g in grids:
        if g.kind == "weights":
            values = g.values
        else:
            values = samples.result().get(g.tensor)
            if values is None:   # should not happen: the job samples every activation quantizer
                out.append(html.Div(f"no activation samples of {g.tensor}", className="error"))
                continue
        lo, hi = float(np.ravel(g.lo)[0]), float(np.ravel(g.hi)[0])
        title = (f"{g.kind} at {g.bits} bits ({'narrow' if g.narrow_range else 'full'} range, "
                 f"{'per-channel, channel 0' if g.per_channel else 'per-tensor'}): [{lo:.3g}, {hi:.3g}]")
        fig = histogram_figure(values if not g.per_channel else np.asarray(values)[..., 0], title, g.levels(0))
        out.append(dcc.Graph(figure=fig, config={"displayModeBar": False}, className="quant-grid"))
    return out, samples is not None and not samples.done()


def _report_view(rep):
    sq = "∞" if math.isinf(rep.sqnr_db) else f"{rep.sqnr_db:.1f}"
    lines = [html.Div(f"output error on {rep.examples} examples: max |Δ| {rep.max_abs:.3g}, "
                      f"relative {rep.rel_err:.3g}, SQNR {sq} dB", className="verify-output")]
    if rep.accuracy is not None:
        lines.append(html.Div(f"test accuracy: {rep.accuracy_before:.2%} → {rep.accuracy:.2%}",
                              id="verify-accuracy"))
    if rep.warning:
        lines.insert(0, html.Div(f"⚠ {rep.warning}", className="warning", id="verify-warning"))
    return lines


def _device_flags(s, vg, recipe, hover: dict) -> dict[str, str]:
    """Node key → ⚠/✗ where TFLite will not run the layer as simulated; the reason goes in ``hover``."""
    if not recipe.quantize_config(s.graph).layers:
        return {}
    worst = {}
    for f in s.check(recipe).fates:
        if f.status != "honoured" and (f.layer not in worst or f.status == "refused"):
            worst[f.layer] = f
    flags = {}
    for key, d in vg.nodes(data=True):
        f = worst.get(d["layer"])
        if f is not None:
            flags[key] = "✗" if f.status == "refused" else "⚠"
            hover[key] = hover.get(key, "") + f"<br>on TFLite: {f.message}"
    return flags


def _hover(s, graph, vg, recipe) -> dict[str, str]:
    """Extra hover lines: output shape, and the layer's fold/bit state."""
    from ...metrics import layer_outputs

    shapes = _shapes(s, graph)
    outputs = layer_outputs(graph)
    foldable = {c.layer for c in fold_candidates(s.graph) if c.foldable}
    quantizable = set(quantizable_layers(s.graph))
    out = {}
    for key, d in vg.nodes(data=True):
        kind, _, name = key.partition(":")
        tensor = outputs.get(name) if kind == "layer" else f"{name}:0"
        lines = []
        if tensor in shapes:
            lines.append(f"shape {tuple(shapes[tensor])}")
        layer = d["layer"]
        if layer in foldable:
            lines.append("BN fold: " + ("on" if recipe.folds(layer) else "off"))
        if layer in quantizable:
            b = recipe.bits(layer)
            lines.append("bits: float" if b is None else
                         f"bits: w {bits_label(b.weight_bits)} / a {bits_label(b.activation_bits)}")
        if lines:
            out[key] = "<br>" + "<br>".join(lines)
    return out


def _shapes(s, graph) -> dict:
    """Tensor shapes of a rewritten graph without asking TensorFlow again: the
    original's, and for new tensors (FakeQuant, BiasAdd: elementwise) their input's."""
    from ...runtime import tensor_shapes

    base = tensor_shapes(s.graph)
    if graph is s.graph:
        return base
    def propagated() -> dict:
        shapes = dict(base)
        for node in graph.nodes:
            t = node.output(0)
            if t not in shapes and node.inputs and node.inputs[0] in shapes:
                shapes[t] = shapes[node.inputs[0]]
        return shapes

    return graph.memo("app.shapes", propagated)


def _short(v) -> str:
    text = repr(v)
    return text if len(text) < 80 else text[:77] + "…"


def _controls(graph, recipe, layer):
    """The same fold/bit controls as the table, for the selected layer (pattern-matching ids)."""
    out = []
    foldable = {c.layer for c in fold_candidates(graph) if c.foldable}
    if layer in foldable:
        out.append(dcc.Checklist(id={"type": ids.LAYER_FOLD, "layer": layer},
                                 options=[{"label": " fold batch norm", "value": "fold"}],
                                 value=["fold"] if recipe.folds(layer) else []))
    if layer in quantizable_layers(graph):
        bits = recipe.bits(layer)
        menus = []
        for type_, label, value in ((ids.LAYER_WBITS, "weight bits", bits.weight_bits if bits else None),
                                    (ids.LAYER_ABITS, "activation bits", bits.activation_bits if bits else None)):
            menus.append(html.Label([label, dcc.Dropdown(id={"type": type_, "layer": layer}, options=BITS,
                                                         value=bits_label(value), clearable=False)]))
        out.append(html.Div(menus, className="bit-menus"))
    if layer in foldable:
        # the explainer opens full width under the graph (callbacks/explainer.py)
        out.append(html.Button("explain this fold", id=ids.FOLD_EXPLAIN_BUTTON))
    return html.Div(out, className="layer-controls")
