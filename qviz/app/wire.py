"""What a callback sends, in the form Dash serializes fastest.

Dash turns a callback's outputs into JSON with orjson, and falls back to plotly's
``clean_to_json_compatible`` (a walk in Python over every value) for the *whole*
response if orjson meets one object it cannot write: a Dash component, a plotly
figure. The graph's redraw sends a figure of thousands of values beside a few
components (the match list, the change line), so one component made the figure
take the slow path (~40 ms of each NASNetMobile op-view click, ~60 ms of JSON in
all). :func:`plain` writes components as the dicts Dash would make of them.

>>> from dash import dcc, html
>>> plain({"count": html.Span(["3 of ", html.B("5")], className="hint"), "n": 2})
{'count': {'props': {'children': ['3 of ', {'props': {'children': '5'}, 'type': 'B', 'namespace': 'dash_html_components'}], 'className': 'hint'}, 'type': 'Span', 'namespace': 'dash_html_components'}, 'n': 2}
>>> import orjson
>>> orjson.dumps(plain([dcc.Markdown("**x**")])) == orjson.dumps([dcc.Markdown("**x**").to_plotly_json()])
True
"""

from __future__ import annotations

from dash.development.base_component import Component

__all__ = ["plain"]


def plain(value):
    """``value`` with every Dash component in it (in lists, tuples and dicts, at any depth)
    replaced by the dict Dash sends for it. Not for a figure's data: its lists are
    walked too (pass a figure as :func:`qviz.render.sent_once` makes it, beside)."""
    if isinstance(value, Component):
        sent = value.to_plotly_json()
        return {**sent, "props": {k: plain(v) for k, v in sent["props"].items()}}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value
