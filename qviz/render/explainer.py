"""Figures of the fold explainer: the folded layer among its neighbours, and
what the fold did to each output channel (on the user's own numbers).

>>> import numpy as np
>>> from types import SimpleNamespace
>>> v = SimpleNamespace(multiplier=np.ones(3), bias=np.zeros(3), folded_bias=np.ones(3))
>>> e = SimpleNamespace(values=v, channel_norms=(np.ones(3), 2 * np.ones(3)))
>>> [t.name for t in fold_channels_figure(e).data]
['s = γ/√(σ²+ε)', 'weight norm before', 'weight norm after', 'bias b (before)', 'bias b′ (after)']
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..layout import layered_routes, view_graph
from .figure import graph_figure

__all__ = ["fold_channels_figure", "channel_ranges_figure", "fold_orders_figure", "layer_neighbourhood_figure"]

#: Before / after the fold, and the per-tensor / per-channel error lines.
BEFORE_COLOR, AFTER_COLOR = "#9aa", "#1f77b4"
SCHEME_STYLES = {("after fold", "per-tensor"): dict(color="#d62728"),
                 ("after fold", "per-channel"): dict(color="#1f77b4"),
                 ("before fold", "per-tensor"): dict(color="#7f7f7f", dash="dot")}


def fold_channels_figure(explanation) -> go.Figure:
    """Per output channel: the multiplier s = γ/√(σ²+ε) the fold scales it by, the
    weights' L2 norm before and after the fold, and the bias before (``b``) and
    after (``b'``). ``explanation`` is a
    :class:`qviz.analysis.fold_explainer.FoldExplanation`."""
    v = explanation.values
    before, after = explanation.channel_norms
    s = [float(x) for x in np.ravel(v.multiplier)]
    ch = list(range(len(s)))
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.1,
                        subplot_titles=("multiplier s = γ/√(σ²+ε)", "weight norm per channel", "bias per channel"))
    fig.add_trace(go.Bar(x=ch, y=s, name="s = γ/√(σ²+ε)", marker_color="#7b4ea3"), 1, 1)
    fig.add_trace(go.Bar(x=ch, y=before, name="weight norm before", marker_color=BEFORE_COLOR), 1, 2)
    fig.add_trace(go.Bar(x=ch, y=after, name="weight norm after", marker_color=AFTER_COLOR), 1, 2)
    fig.add_trace(go.Bar(x=ch, y=v.bias, name="bias b (before)", marker_color=BEFORE_COLOR,
                         marker_pattern_shape="/"), 1, 3)
    fig.add_trace(go.Bar(x=ch, y=v.folded_bias, name="bias b′ (after)", marker_color="#ff7f0e"), 1, 3)
    fig.update_layout(height=290, margin=dict(l=40, r=10, t=30, b=36), barmode="group",
                      legend=dict(orientation="h", y=-0.3))
    fig.update_xaxes(title=dict(text="output channel", standoff=2))
    for col, title in ((1, "s"), (2, "L2 norm"), (3, "bias")):
        fig.update_yaxes(title=dict(text=title, standoff=2), row=1, col=col)
    return fig


def channel_ranges_figure(r) -> go.Figure:
    """Each output channel's weight range before and after the fold (bars from its
    min to its max; the dashed lines are the one per-tensor range after the fold),
    and each channel's SQNR at ``r.bits`` per scheme. ``r`` is a
    :class:`qviz.analysis.channel_ranges.ChannelRanges`.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.analysis.channel_ranges import channel_ranges
    >>> fig = channel_ranges_figure(channel_ranges(qviz.load(sample_path("lenet_digits")), "conv1", 4))
    >>> [t.name for t in fig.data]
    ['range before the fold', 'range after the fold', 'after, per-tensor', 'after, per-channel', 'before, per-tensor']
    """
    ch = list(range(r.channels))
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12, subplot_titles=(
        "weight range per output channel (dashes: the one per-tensor range after the fold)",
        f"quantization error per channel at {r.bits} bits (higher is better)"))
    for name, span, color in (("range before the fold", r.before, BEFORE_COLOR),
                              ("range after the fold", r.after, AFTER_COLOR)):
        # plain lists: a reader of the figure (a test, the HTML report) sees numbers, not base64
        fig.add_trace(go.Bar(x=ch, y=span.width.tolist(), base=span.lo.tolist(), name=name, marker_color=color,
                             customdata=np.stack([span.lo, span.hi], axis=-1).tolist(),
                             hovertemplate="channel %{x}: [%{customdata[0]:.3g}, %{customdata[1]:.3g}]<extra></extra>"),
                      1, 1)
    m = float(max(abs(r.after.lo.min()), abs(r.after.hi.max())))
    for y in (-m, m):
        fig.add_hline(y=y, line=dict(color=AFTER_COLOR, dash="dash", width=1), row=1, col=1)
    for (stage, scheme), line in SCHEME_STYLES.items():
        db = r.error(stage, scheme).channel_sqnr_db
        fig.add_trace(go.Scatter(x=ch, y=[float(v) if np.isfinite(v) else None for v in db],
                                 name=f"{stage.split()[0]}, {scheme}", mode="lines+markers", line=line,
                                 marker=dict(size=4), hovertemplate="channel %{x}: %{y:.1f} dB<extra></extra>"),
                      2, 1)
    fig.update_layout(height=420, margin=dict(l=50, r=10, t=30, b=40), barmode="group",
                      legend=dict(orientation="h", y=-0.14))
    fig.update_xaxes(title=dict(text="output channel", standoff=2), row=2, col=1)
    fig.update_yaxes(title_text="weight", row=1, col=1)
    fig.update_yaxes(title_text="SQNR (dB)", row=2, col=1)
    return fig


#: The three orders of folding and quantizing (:mod:`qviz.analysis.fold_orders`): a colour each;
#: per-tensor solid, per-channel dashed.
ORDER_COLORS = {"fold, then quantize": "#1f77b4", "quantize, then fold": "#ff7f0e", "training-mode fold": "#2ca02c"}
#: Markers from large to small, so orders that coincide still show one inside the other.
ORDER_MARKERS = {"fold, then quantize": dict(symbol="circle-open", size=14),
                 "quantize, then fold": dict(symbol="square-open", size=9),
                 "training-mode fold": dict(symbol="diamond", size=5)}


def fold_orders_figure(orders) -> go.Figure:
    """Output SQNR against weight bits for each order of folding and quantizing,
    per tensor (solid) and per channel (dashed). ``orders`` is a
    :class:`qviz.analysis.fold_orders.FoldOrders`.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.analysis.fold_orders import fold_orders
    >>> fig = fold_orders_figure(fold_orders(qviz.load(sample_path("lenet_digits")), "conv1", bits=(8, 4)))
    >>> [t.name for t in fig.data][:3]
    ['fold, then quantize · per-tensor', 'quantize, then fold · per-tensor', 'training-mode fold · per-tensor']
    >>> fig.layout.xaxis.title.text, fig.layout.yaxis.title.text
    ('weight bits', 'output SQNR (dB)')
    """
    fig = go.Figure()
    widths = list(orders.widths)
    for scheme, dash in (("per-tensor", None), ("per-channel", "dash")):
        for order, color in ORDER_COLORS.items():
            db = [orders.result(order, scheme, b).sqnr_db for b in widths]
            fig.add_trace(go.Scatter(
                x=widths, y=[float(v) if np.isfinite(v) else None for v in db], name=f"{order} · {scheme}",
                mode="lines+markers", line=dict(color=color, dash=dash, width=1.5),
                marker=dict(color=color, **ORDER_MARKERS[order]),
                hovertemplate=f"{order}, {scheme}<br>%{{x}}-bit weights: %{{y:.1f}} dB<extra></extra>"))
    fig.update_layout(height=340, margin=dict(l=50, r=10, t=30, b=40),
                      title=dict(text=f"{orders.layer} + {orders.bn_layer}: error of the batch norm's output, "
                                      f"weights quantized ({orders.examples} inputs); orders that coincide are "
                                      "drawn one inside the other", font_size=12),
                      legend=dict(orientation="h", y=-0.25),
                      xaxis=dict(title=dict(text="weight bits"), autorange="reversed", tickvals=widths),
                      yaxis=dict(title=dict(text="output SQNR (dB)")))
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
    for k in keep:   # the title names the layer: its ops go by their own names (a narrow panel)
        sub.nodes[k]["label"] = sub.nodes[k]["members"][0].rsplit("/", 1)[-1]
    pos, routes = layered_routes(sub, "TB")
    fig = graph_figure(sub, pos, routes=routes, title=f"{title} ({len(keep)} ops)")
    ranks = len({round(y, 3) for _, y in pos.values()})
    fig.update_layout(height=80 + 42 * ranks, yaxis=dict(scaleanchor=None), xaxis=dict(range=None))
    fig.update_traces(textfont_size=9, selector=dict(name="nodes"))
    return fig
