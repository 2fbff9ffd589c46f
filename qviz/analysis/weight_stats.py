"""Per-layer statistics of the weights, from the graph's constants alone: no data,
no TensorFlow, instant — what tells a user which layers few bits will hurt before
any sweep has run.

* ``weight |max|``: the largest weight magnitude, the range a per-tensor scale
  has to cover (the larger, the coarser each step at a given width).
* ``weight kurtosis``: excess kurtosis (0 for a Gaussian). Heavy tails — a few
  large weights among many small ones — mean a per-tensor grid spends its levels
  on the outliers, and the bulk of the weights rounds to a few values.

>>> import qviz
>>> from qviz.samples import sample_path
>>> stats = weight_metrics(qviz.load(sample_path("lenet_digits")))
>>> sorted(stats), sorted(stats["weight kurtosis"].values)
(['weight kurtosis', 'weight |max|'], ['conv1', 'conv2', 'fc1', 'logits'])
"""

from __future__ import annotations

import numpy as np

from ..choices import WEIGHT_METRICS
from ..ir import Graph
from ..ir.ops import LAYER_OPS
from ..passes.constants import NotConstantError, constant_value
from .node_data import NodeData

__all__ = ["weight_metrics", "WEIGHT_METRICS"]

def _kurtosis(w: np.ndarray) -> float | None:
    centred = w - w.mean()
    m2 = float(np.mean(centred ** 2))
    return None if m2 == 0 else float(np.mean(centred ** 4)) / m2 ** 2 - 3.0


def weight_metrics(graph: Graph) -> dict[str, NodeData]:
    """Metric name → :class:`NodeData` keyed by layer, for every layer whose
    conv/depthwise/dense weights are constant (memoized on ``graph``)."""
    return graph.memo("analysis.weight_metrics", lambda: _weight_metrics(graph))


def _weight_metrics(graph: Graph) -> dict[str, NodeData]:
    weights: dict[str, list[np.ndarray]] = {}
    for node in graph.nodes:
        if node.op in LAYER_OPS and len(node.inputs) > 1:
            try:
                w = constant_value(graph, node.inputs[1], tensorflow=False)
            except NotConstantError:
                continue
            weights.setdefault(node.layer, []).append(np.asarray(w, np.float64).ravel())
    abs_max, kurtosis = {}, {}
    for layer, parts in weights.items():
        w = np.concatenate(parts)
        if w.size == 0 or not np.all(np.isfinite(w)):
            continue
        abs_max[layer] = float(np.max(np.abs(w)))
        k = _kurtosis(w)
        if k is not None:
            kurtosis[layer] = k
    return {name: NodeData(name, values) for name, values in zip(WEIGHT_METRICS, (abs_max, kurtosis))}
