"""The graph view as plain SVG: what the browser paints before any script has run.

The app's graph is a plotly figure, and plotly.js is megabytes of script to
fetch and evaluate before it draws anything. The page's first view is this
SVG instead, in the HTML itself, the same nodes in the same places and
colours (:mod:`qviz.render.figure`'s), until the plotly graph replaces it.

Every name drawn is the file's: it is escaped, never markup.

>>> from qviz.layout import DiGraph
>>> g = DiGraph([("layer:a", "layer:b")])
>>> for n in g: g.nodes[n].update(kind="conv", label=n[6:] + "<&>")
>>> svg = graph_svg(g, {"layer:a": (0.0, 0.0), "layer:b": (1.0, 0.0)})
>>> svg.startswith("<svg"), svg.count("<circle"), "b&lt;&amp;&gt;" in svg
(True, 2, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from ..layout.view import BLOCK_KIND
from .marks import COLORS, GHOST_OPACITY, STATUS_COLORS, Badge, label_sides, short_label

__all__ = ["graph_svg"]

#: Sizes in pixels at the scale of a 10-rank window in a ~900 px wide plot (as plotly draws them).
_PX = 90.0


#: Where a badge goes (dx, dy in px, anchor) for each place a label goes: the opposite side.
_BADGE_OFFSETS = {"bottom center": (0, -12, ""), "top center": (0, 20, ""),
                  "middle right": (-11, 3.5, ' text-anchor="end"'), "top right": (-8, 16, ' text-anchor="end"')}


def _fmt(v: float) -> str:
    return f"{v:.3f}".rstrip("0").rstrip(".")


def graph_svg(g, pos: Mapping, routes: Mapping | None = None, *, window=None, css_class: str = "",
              direction: str = "LR", badges: Mapping[str, Badge] | None = None, show_status: bool = False,
              standalone: bool = False, title: str = "") -> str:
    """An SVG of view graph ``g`` laid out at ``pos`` (layout units, y up).

    Args:
        routes: edge bends (:func:`qviz.layout.layered_routes`).
        window: ``(x range, y range)`` to show (as plotly's axis ranges; what lies
            outside is not drawn at all, so a big graph's first view stays small);
            default: the whole graph.
        css_class: the ``class`` of the ``<svg>`` element.
        direction: the layout's (where labels go, as in the plotly graph).
        badges: node key → its bits-and-fold badge, drawn opposite the label.
        show_status: outline nodes by diff status (added/modified/removed) and
            draw the ones the rewrite removed faded, as the plotly graph does.
        standalone: a file of its own (``<?xml``, a size in pixels, a white
            background, ``title`` as its first line) rather than part of a page.

    The drawing scales with its box (``viewBox`` in layout units), centred, like
    plotly's graph with its axes locked to one scale.
    """
    routes = routes or {}
    if window is None:
        xs = [p[0] for p in pos.values()] or [0.0]
        ys = [p[1] for p in pos.values()] or [0.0]
        window = ([min(xs) - 0.6, max(xs) + 0.6], [min(ys) - 0.6, max(ys) + 0.6])
    (x0, x1), (y0, y1) = window
    margin = 1.0

    def inside(p) -> bool:
        return x0 - margin <= p[0] <= x1 + margin and y0 - margin <= p[1] <= y1 + margin

    def xy(p) -> str:
        return f"{_fmt(p[0])},{_fmt(-p[1])}"    # SVG's y grows downwards

    unit = 1.0 / _PX
    if standalone and title:     # room for the title above the graph
        y1 += 30 * unit
    legend = standalone and (show_status or badges)
    if legend:                   # and for the legend below it
        y0 -= 26 * unit
    if standalone:               # wide enough for the title and the legend (≈0.55 em a character)
        text_px = max(len(title or "") * 14 * 0.55, _LEGEND_CHARS * 11 * 0.55 if legend else 0) + 20
        x1 = max(x1, x0 + text_px * unit)
    size = f' width="{round((x1 - x0) * _PX)}" height="{round((y1 - y0) * _PX)}"' if standalone else ""
    parts = ['<?xml version="1.0" encoding="UTF-8"?>\n'] if standalone else []
    parts.append(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="{_fmt(x0)} {_fmt(-y1)} {_fmt(x1 - x0)} '
                 f'{_fmt(y1 - y0)}"{size} preserveAspectRatio="xMidYMid meet" class="{escape(css_class)}" '
                 f'role="img" aria-label="the model\'s graph">')
    if standalone:
        parts.append(f'<rect x="{_fmt(x0)}" y="{_fmt(-y1)}" width="{_fmt(x1 - x0)}" height="{_fmt(y1 - y0)}" '
                     'fill="#fff"/>')
        if title:
            parts.append(f'<text x="{_fmt(x0 + 10 * unit)}" y="{_fmt(-y1 + 20 * unit)}" font-family="sans-serif" '
                         f'font-size="{_fmt(14 * unit)}" fill="#222">{escape(title)}</text>')
    parts.append(f'<g fill="none" stroke="#9aa" stroke-width="{_fmt(unit)}">')
    for u, v in g.edges:
        points = [pos[u], *routes.get((u, v), ()), pos[v]]
        if any(inside(p) for p in points):
            parts.append(f'<polyline points="{" ".join(xy(p) for p in points)}"/>')
    parts.append("</g>")
    shown = [k for k in g.nodes if k in pos and inside(pos[k])]
    parts.append(f'<g stroke="#fff" stroke-width="{_fmt(unit)}">')
    # ghosts (removed by the rewrite) first, so the node that replaced one is drawn over one behind it
    for k in sorted(shown, key=lambda k: g.nodes[k].get("ghost_of") is None):
        d = g.nodes[k]
        block = d.get("kind") == BLOCK_KIND
        r = (12 if block else 8 if str(k).startswith("layer:") else 5.5) * unit
        x, y = pos[k]
        status = d.get("status") if show_status else None
        extra = (f' stroke="{STATUS_COLORS[status]}" stroke-width="{_fmt(2.5 * unit)}"' if status else "") + (
            f' opacity="{GHOST_OPACITY}"' if status == "removed" else "")
        change = f" ({status})" if status else ""
        fill = COLORS.get(d.get("kind"), COLORS["other"])
        title = f'<title>{escape(str(d.get("label", k)))}{change}</title>'
        if block:   # a closed block: a square, as on the page
            parts.append(f'<rect x="{_fmt(x - r)}" y="{_fmt(-y - r)}" width="{_fmt(2 * r)}" height="{_fmt(2 * r)}" '
                         f'rx="{_fmt(2 * unit)}" fill="{fill}"{extra}>{title}</rect>')
        else:
            parts.append(f'<circle cx="{_fmt(x)}" cy="{_fmt(-y)}" r="{_fmt(r)}" fill="{fill}"{extra}>{title}</circle>')
    parts.append("</g>")
    parts.append(f'<g font-family="sans-serif" font-size="{_fmt(10 * unit)}" fill="#444" text-anchor="middle">')
    # placed as the page's graph places them, over the whole graph: nothing moves when it replaces this
    sides = label_sides(g, {k: pos[k] for k in g.nodes if k in pos}, direction)
    for k in shown:
        x, y = pos[k]
        where = sides[k]
        dx, dy, anchor = {"bottom center": (0, 20, ""), "top center": (0, -12, ""),
                          "middle right": (11, 3.5, ' text-anchor="start"'),
                          "top right": (8, -8, ' text-anchor="start"')}[where]
        parts.append(f'<text x="{_fmt(x + dx * unit)}" y="{_fmt(-y + dy * unit)}"{anchor}>'
                     f'{escape(short_label(str(g.nodes[k].get("label", k))))}</text>')
        badge = (badges or {}).get(k)
        if badge is not None:      # on the other side of the node from its name
            bx, by, anchor = _BADGE_OFFSETS[where]
            parts.append(f'<text x="{_fmt(x + bx * unit)}" y="{_fmt(-y + by * unit)}"{anchor} '
                         f'fill="{badge.color}" class="badge">{escape(badge.text)}</text>')
    parts.append("</g>")
    if legend:
        parts.append(_legend(x0 + 10 * unit, -y0 - 9 * unit, unit))
    parts.append("</svg>")
    return "".join(parts)


def _legend_items():
    return [(STATUS_COLORS["modified"], "orange outline: changed by the rewrite"),
            (STATUS_COLORS["added"], "green: added"),
            (STATUS_COLORS["removed"], "faded red: removed (drawn where it was)"),
            (Badge.of(4, 8).color, "w4a8: weight / activation bits"), ("#444", "+bn: batch norm folded in")]


_LEGEND_CHARS = sum(len(t) for _, t in _legend_items()) + 3 * (len(_legend_items()) - 1)


def _legend(x: float, y: float, unit: float) -> str:
    """One line saying what the outlines and badges mean (colours from the figure's constants)."""
    items = _legend_items()
    spans = " · ".join(f'<tspan fill="{c}">{escape(t)}</tspan>' for c, t in items)
    return (f'<text x="{_fmt(x)}" y="{_fmt(y)}" font-family="sans-serif" font-size="{_fmt(11 * unit)}" '
            f'fill="#444" class="legend">{spans}</text>')
