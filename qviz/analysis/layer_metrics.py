"""More numbers to colour the graph by, per layer, each as :class:`NodeData`: what the
recipe does to a layer's batch norm, the bits the sensitivity sweep suggests, the
range of a layer's activations, and each layer's share of the output error.

>>> import qviz
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> d = fold_status(g, qviz.Recipe(fold_default=False).with_fold("conv2", True))
>>> {k: d.labels[int(v) - 1] for k, v in sorted(d.values.items())}    # doctest: +NORMALIZE_WHITESPACE
{'bn1': 'foldable, not folded', 'bn2': 'folded', 'bn3': 'foldable, not folded',
 'conv1': 'foldable, not folded', 'conv2': 'folded', 'fc1': 'foldable, not folded'}
>>> from types import SimpleNamespace as E
>>> share = error_share([E(layer="conv1", sqnr_db=20.0), E(layer="fc1", sqnr_db=30.0), E(layer="bn1", sqnr_db=math.inf)])
>>> {k: round(v, 1) for k, v in share.values.items()}
{'conv1': 90.9, 'fc1': 9.1}
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..ir import Graph
from ..passes import Recipe, fold_candidates
from .node_data import NodeData

__all__ = ["FOLD_STATES", "fold_status", "suggested_bits", "activation_range", "error_share"]

#: Fold status, in the order of its values 1, 2, 3 (a layer with no batch norm has none).
FOLD_STATES = ("not foldable", "foldable, not folded", "folded")
_FOLD_COLORS = ("#d62728", "#ff9f1c", "#2ca02c")


def fold_status(graph: Graph, recipe: Recipe) -> NodeData:
    """Each conv/dense layer with a batch norm, and the batch norm: 1 not foldable (the
    hover of the table says why), 2 foldable but left unfolded, 3 folded by ``recipe``.
    Data-free and instant."""
    chosen = set(recipe.fold_selection(graph))
    values = {}
    for c in fold_candidates(graph):
        state = 3.0 if c.foldable and c.layer in chosen else 2.0 if c.foldable else 1.0
        values[c.layer] = values[c.bn_layer] = state
    return NodeData("fold status", values, thresholds=tuple(zip((1.0, 2.0, 3.0), _FOLD_COLORS)),
                    labels=FOLD_STATES, no_value="no batch norm")


def suggested_bits(sens, target_sqnr_db: float, bit_colors) -> NodeData:
    """The weight bits the sweep ``sens`` suggests per layer for ``target_sqnr_db``
    (:meth:`qviz.analysis.sensitivity.Sensitivity.suggest`), coloured as the graph's
    badges are (``bit_colors``: ``((at least bits, colour), …)``, widest first)."""
    recipe = sens.suggest(target_sqnr_db)
    values = {layer: float(b.weight_bits) for layer, b in recipe.quantize_layers.items()
              if b.weight_bits is not None}
    widths = sorted({int(v) for v in values.values()})
    colour = {w: next((c for least, c in bit_colors if w >= least), bit_colors[-1][1]) for w in widths}
    return NodeData(f"suggested weight bits (sweep, {target_sqnr_db:g} dB)", values,
                    thresholds=tuple((float(w), colour[w]) for w in widths),
                    labels=tuple(f"{w} bits" for w in widths), no_value="not swept (no weights)")


def activation_range(folded: Graph, ranges: Mapping[str, tuple[float, float]]) -> NodeData:
    """Each layer's activation range width (max − min, from calibration ``ranges``, keyed
    by tensors of the ``folded`` graph): the span an activation quantizer must cover
    with its levels, so a wide one costs resolution. A layer's widest tensor counts."""
    values: dict[str, float] = {}
    for tensor, (lo, hi) in ranges.items():
        if tensor.rpartition(":")[0] not in folded:
            continue
        layer = folded.producer(tensor).layer
        values[layer] = max(values.get(layer, 0.0), float(hi) - float(lo))
    return NodeData("activation range (max − min)", values, no_value="not calibrated (not quantized)")


def error_share(local_layers) -> NodeData:
    """Each layer's own (local) noise power, 10^(−SQNR/10) — relative to its own
    output — as % of the sum over layers: where error is made. A guide, not each
    layer's exact part of the output's error (that takes a run per layer, as the
    sensitivity sweep does). Layers left exact make none (no value)."""
    noise = {e.layer: 10 ** (-e.sqnr_db / 10) for e in local_layers if math.isfinite(e.sqnr_db)}
    total = sum(noise.values())
    values = {layer: 100 * n / total for layer, n in noise.items()} if total > 0 else {}
    return NodeData("own error, % of the layers' sum (local)", values, no_value="exact (no error of its own)")
