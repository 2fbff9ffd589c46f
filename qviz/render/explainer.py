"""Figures of the fold explainer: the folded layer among its neighbours, and
what the fold did to each output channel (on the user's own numbers).

>>> import numpy as np
>>> from types import SimpleNamespace
>>> v = SimpleNamespace(multiplier=np.ones(3), bias=np.zeros(3), folded_bias=np.ones(3))
>>> e = SimpleNamespace(values=v, channel_norms=(np.ones(3), 2 * np.ones(3)))
>>> [t.name for t in fold_channels_figure(e).data]
['before', 'after', 'b', "b'"]
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..layout import layered_routes, view_graph
from .figure import graph_figure

__all__ = ["fold_channels_figure", "layer_neighbourhood_figure"]


def fold_channels_figure(explanation) -> go.Figure:
    """Per output channel: the weights' L2 norm before and after the fold, and
    the bias before (``b``) and after (``b'``). ``explanation`` is a
    :class:`qviz.analysis.fold_explainer.FoldExplanation`."""
    v = explanation.values
    before, after = explanation.channel_norms
    ch = list(range(len(v.multiplier)))
    fig = make_subplots(rows=1, cols=2, subplot_titles=("weight norm per channel", "bias per channel"))
    fig.add_trace(go.Bar(x=ch, y=before, name="before", marker_color="#9aa"), 1, 1)
    fig.add_trace(go.Bar(x=ch, y=after, name="after", marker_color="#1f77b4"), 1, 1)
    fig.add_trace(go.Bar(x=ch, y=v.bias, name="b", marker_color="#9aa", showlegend=False), 1, 2)
    fig.add_trace(go.Bar(x=ch, y=v.folded_bias, name="b'", marker_color="#ff7f0e", showlegend=False), 1, 2)
    fig.update_layout(height=250, margin=dict(l=30, r=10, t=30, b=36), barmode="group")
    fig.update_xaxes(title=dict(text="output channel", standoff=2))
    return fig


def layer_neighbourhood_figure(graph, layer: str, title: str) -> go.Figure:
    """``layer``'s ops and the layers next to it, top to bottom; constants hidden.
    A tall, free-aspect drawing for a narrow panel: one row per rank keeps labels apart."""
    vg = view_graph(graph, "layer", expanded=[layer])
    keep = {k for k, d in vg.nodes(data=True) if d.get("layer") == layer}
    near = set(keep)
    for k in keep:
        near.update(vg.predecessors(k))
        near.update(vg.successors(k))
    sub = vg.subgraph(near).copy()
    pos, routes = layered_routes(sub, "TB")
    fig = graph_figure(sub, pos, routes=routes, title=f"{title} ({len(keep)} ops)")
    ranks = len({round(y, 3) for _, y in pos.values()})
    fig.update_layout(height=80 + 42 * ranks, yaxis=dict(scaleanchor=None), xaxis=dict(range=None))
    fig.update_traces(textfont_size=9, selector=dict(name="nodes"))
    return fig
