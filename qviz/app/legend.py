"""The graph's legend: every visual channel of :func:`qviz.render.graph_figure`, in
words, drawn from the same colour tables the figure uses (so it cannot drift).

>>> from dash import html
>>> legend = graph_legend()
>>> isinstance(legend, html.Details), legend.id
(True, 'graph-legend')
"""

from __future__ import annotations

from dash import html

from ..analysis.node_data import NodeData
from ..render.marks import (BIT_COLORS, COLORS, FLOAT_BADGE_COLOR, GHOST_OPACITY, HALO_COLORS, HALO_OPACITY,
                             KIND_NAMES, NO_VALUE_COLOR, SELECTED_OUTLINE, STATUS_COLORS)
from . import ids
from .colour_by import MENU

__all__ = ["graph_legend", "color_options", "metric_legend", "OP_KIND"]

#: The "colour by" menu's value for the default fill (op kind).
OP_KIND = ""


def color_options(uploaded=()) -> list[dict]:
    """The "colour by" menu: op kind, the data-free weight metrics, then node-data files
    the user painted (by the name each is listed under)."""
    return ([{"label": "op kind", "value": OP_KIND}]
            + [{"label": m, "value": m} for m in MENU]
            + [{"label": name, "value": name} for name in uploaded])


def _number(v: float) -> str:
    return f"{v:.3g}"


def metric_legend(data: NodeData | None, painted: int = 0, waiting: str = "", name: str = "") -> list:
    """What the fill means while coloured by ``data``: its gradient between the smallest
    and largest value (or its thresholds), how many nodes carry a value, and the
    colour of those that do not. Without ``data``, ``waiting`` says why metric
    ``name`` paints nothing yet (its report is running, or failed)."""
    if data is None:   # nothing to paint (yet): say why, when there is a why
        return [html.B(f"colour: {name}"), f" — {waiting}"] if waiting else []
    if data.thresholds:
        words = data.labels or [f"≤ {_number(b)}" for b, _ in data.thresholds]
        scale = [html.Span([html.Span(className="swatch", style=_dot(c)), word], className="legend-item")
                 for (_, c), word in zip(data.thresholds, words)]
    elif data.span is not None:
        lo, hi = data.span
        stops = ", ".join(f"{c} {s * 100:.0f}%" for s, c in data.gradient)
        bar = html.Span(className="gradient-bar", style={"background": f"linear-gradient(to right, {stops})"})
        scale = [_number(lo), " ", bar, " ", _number(hi)]
    else:
        scale = ["no values"]
    notes = f" · {painted} nodes painted" + (f"; {data.unmatched} keys not in this model" if data.unmatched else "")
    return [html.B(f"colour: {data.name} "), *scale, notes, " · ",
            html.Span(className="swatch", style=_dot(NO_VALUE_COLOR)), data.no_value]


def _swatch(style: dict, text: str, title: str = "") -> html.Span:
    return html.Span([html.Span(className="swatch", style=style), text], className="legend-item", title=title)


def _dot(color: str) -> dict:
    return {"background": color}


def _ring(color: str, width: int = 3) -> dict:
    return {"background": "#fff", "border": f"{width}px solid {color}"}


def graph_legend() -> html.Details:
    """Fill, outline, halo, ghost, badge and flag, each explained (open by default; a
    click on its summary folds it away)."""
    rows = [
        html.Div(["fill: ", *[_swatch(_dot(COLORS[k]), KIND_NAMES[k]) for k in COLORS]]),
        html.Div(["outline: ", *[_swatch(_ring(c), f"{status} by the rewrite") for status, c in STATUS_COLORS.items()],
                  _swatch(_ring(*SELECTED_OUTLINE), "selected")]),
        html.Div(["halo: ", _swatch({**_dot(HALO_COLORS[0]), "opacity": HALO_OPACITY},
                                    "a match of the pattern (one colour per match)"),
                  " · faded, the edges drawn through it: ",
                  _swatch({**_dot(COLORS["batchnorm"]), "opacity": GHOST_OPACITY},
                          "removed by the rewrite, drawn where it was (a folded batch norm: its conv now does its work)")]),
        html.Div(["badge: ",
                  html.Span("w4a8", className="legend-badge", style={"color": dict(BIT_COLORS)[4]}),
                  " weights at 4 bits, activations at 8; ",
                  html.Span("+bn", className="legend-badge", style={"color": FLOAT_BADGE_COLOR}),
                  " its batch norm folded in. Colour: the narrowest width — ",
                  *[html.Span(f"{bits} ", className="legend-badge", style={"color": color})
                    for bits, color in BIT_COLORS],
                  "bits. No badge: left float and unfolded."]),
        html.Div(["mark: ", html.Span("⚠", className="legend-flag"), " TFLite runs the layer differently, ",
                  html.Span("✗", className="legend-flag"), " TFLite refuses it (hover says why)."]),
    ]
    return html.Details([html.Summary("legend"), *rows], id=ids.GRAPH_LEGEND, open=True, className="legend")
