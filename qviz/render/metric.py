"""Nodes painted by a metric (:class:`qviz.analysis.node_data.NodeData`): the fill
colours for :func:`qviz.render.graph_figure`, and the legend's words.

>>> import networkx as nx
>>> from qviz.analysis.node_data import NodeData
>>> vg = nx.DiGraph([("layer:a", "layer:b")])
>>> vg.nodes["layer:a"]["layer"], vg.nodes["layer:b"]["layer"] = "a", "b"
>>> hover = {}
>>> metric_fill(NodeData("err", {"a": 1.0, "b": 3.0}), vg, hover), hover["layer:b"]
({'layer:a': '#2c7bb6', 'layer:b': '#d7191c'}, '<br>err: 3')
"""

from __future__ import annotations

import networkx as nx

from ..analysis.node_data import NodeData

__all__ = ["metric_fill"]


def metric_fill(data: NodeData, vg: nx.DiGraph, hover: dict) -> dict[str, str]:
    """View key → fill colour from ``data`` (a layer's node, or each op of the layer);
    the value is added to ``hover``."""
    out = {}
    for key, d in vg.nodes(data=True):
        layer = d.get("layer")
        color = data.color_of(layer) if layer is not None and not d.get("ghost_of") else None
        if color is not None:
            out[key] = color
            if layer in data.values:
                hover[key] = hover.get(key, "") + f"<br>{data.name}: {data.values[layer]:.4g}"
    return out
