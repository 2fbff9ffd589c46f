"""The graph's legend: every visual channel of :func:`qviz.render.graph_figure`, in
words, drawn from the same colour tables the figure uses (so it cannot drift).

>>> from dash import html
>>> legend = graph_legend()
>>> isinstance(legend, html.Details), legend.id
(True, 'graph-legend')
"""

from __future__ import annotations

from dash import html

from ..render.figure import BIT_COLORS, COLORS, FLOAT_BADGE_COLOR, HALO_COLORS, KIND_NAMES, STATUS_COLORS
from . import ids

__all__ = ["graph_legend"]


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
                  _swatch(_ring("#000", 4), "selected")]),
        html.Div(["halo: ", _swatch({**_dot(HALO_COLORS[0]), "opacity": 0.45},
                                    "a match of the pattern (one colour per match)"),
                  " · faded, just behind another node: ",
                  _swatch({**_dot(COLORS["batchnorm"]), "opacity": 0.35},
                          "removed by the rewrite (a folded batch norm sits behind its conv)")]),
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
