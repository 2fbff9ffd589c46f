"""Nodes painted by a metric (:class:`qviz.analysis.node_data.NodeData`): the fill
colours for :func:`qviz.render.graph_figure`, and the legend's words.

>>> from qviz.layout import DiGraph
>>> from qviz.analysis.node_data import NodeData
>>> vg = DiGraph([("layer:a", "layer:b")])
>>> vg.nodes["layer:a"]["layer"], vg.nodes["layer:b"]["layer"] = "a", "b"
>>> hover = {}
>>> metric_fill(NodeData("err", {"a": 1.0, "b": 3.0}), vg, hover), hover["layer:b"]
({'layer:a': '#2c7bb6', 'layer:b': '#d7191c'}, '<br>err: 3')
>>> vg.add_node("block:1", kind="block", layer=None, layers=["a", "b"])
>>> data = NodeData("err", {"a": 1.0, "b": 3.0, "c": 2.0})
>>> metric_fill(data, vg, hover)["block:1"] == data.color_of("c"), hover["block:1"]   # a, b's mean: c's value
(True, '<br>err: 1 … 3 over 2 layers')
"""

from __future__ import annotations

import math
from collections import Counter

from ..analysis.node_data import NodeData
from ..layout import DiGraph
from ..layout.view import BLOCK_KIND

__all__ = ["metric_fill"]


def metric_fill(data: NodeData, vg: DiGraph, hover: dict) -> dict[str, str]:
    """View key → fill colour from ``data`` (a layer's node, or each op of the layer);
    the value is added to ``hover``. A closed block is painted with its layers'
    most common colour for categories (fold status), else its layers' mean, and
    its hover gives their range."""
    out = {}
    for key, d in vg.nodes(data=True):
        if d.get("kind") == BLOCK_KIND:     # a closed block
            color = _block_fill(data, d["layers"], key, hover)
            if color is not None:
                out[key] = color
            continue
        layer = d.get("layer")
        color = data.color_of(layer) if layer is not None and not d.get("ghost_of") else None
        if color is not None:
            out[key] = color
            if layer in data.values:
                hover[key] = hover.get(key, "") + f"<br>{data.name}: {data.values[layer]:.4g}"
    return out


def _block_fill(data: NodeData, layers, key, hover: dict) -> str | None:
    """A closed block's fill (its layers' most common category, else their mean) and
    the range of their values in ``hover``."""
    colors = [c for c in (data.color_of(layer) for layer in layers) if c is not None]
    values = [data.values[layer] for layer in layers if layer in data.values and math.isfinite(data.values[layer])]
    if not colors:
        return None
    if data.labels or data.colors or not values:   # categories: the block's most common one, counted
        counts = Counter(colors)
        if data.labels and data.thresholds:
            names = {c: name for (_, c), name in zip(data.thresholds, data.labels)}
            hover[key] = hover.get(key, "") + f"<br>{data.name}: " + ", ".join(
                f"{n} {names.get(c, 'other')}" for c, n in counts.most_common())
        return counts.most_common(1)[0][0]
    hover[key] = hover.get(key, "") + (f"<br>{data.name}: {min(values):.4g} … {max(values):.4g} "
                                       f"over {len(values)} layers")
    return data.color_of_value(sum(values) / len(values))
