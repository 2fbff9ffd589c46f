"""Activation ranges across fold selections: a fold toggle need not calibrate again.

Folding is exact in float: with another set of batch norms folded, every tensor
holds the value it held before — except inside the folds that changed. So the
ranges a new fold selection needs are the old selection's, read tensor by tensor:

* a tensor of a layer whose fold did not change: the same tensor, by name;
* a newly folded conv's output (what it hands on): its batch norm's output before;
* an unfolded batch norm's output: its conv's output before (the conv did its work);
* anything else inside a changed fold (a conv's output before its batch norm now
  applies again): not known — the caller calibrates (:func:`ranges_across_folds`
  returns None).

>>> import qviz
>>> from qviz.passes import fold_batch_norms
>>> from qviz.passes.calibration import activation_ranges, noise_inputs
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("resnet_block"))
>>> def measured(folds):
...     folded = fold_batch_norms(g, layers=list(folds)).graph
...     return activation_ranges(folded, calibration_tensors(folded), noise_inputs(g, count=8))
>>> before = measured(["conv1"])
>>> derived = ranges_across_folds(g, before, ["conv1"], ["conv1", "conv2"])
>>> fresh = measured(["conv1", "conv2"])
>>> sorted(derived) == sorted(fresh) and all(abs(derived[t][k] - fresh[t][k]) < 1e-4 for t in fresh for k in (0, 1))
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..ir import Graph
from ..ir.ops import LAYER_OPS
from .fold_batch_norms import fold_batch_norms, folded_into
from .quant_points import bypass_adds, quant_points, quantizable_units
from .quantize import LayerBits, QuantizeConfig

__all__ = ["calibration_tensors", "ranges_across_folds"]


def calibration_tensors(folded: Graph) -> list[str]:
    """The tensors a recipe's activation quantizers may need a range of, on a graph folded
    as it asks: every activation quant point with every unit quantized, and every unit's
    input (a layer quantized alone rounds its input at a range of its own)."""
    config = QuantizeConfig({name: LayerBits(8, 8) for name in quantizable_units(folded)})
    points, _ = quant_points(folded, config)
    adds = set(bypass_adds(folded))
    tensors = [p.tensor for p in points if p.kind not in ("weights", "requantize", "fixed")]
    units = set(config.layers)
    tensors += [t for n in folded.nodes if n.layer in units and (n.op in LAYER_OPS or n in adds)
                for t in (n.inputs[:1] if n.op in LAYER_OPS else n.inputs)]
    return list(dict.fromkeys(tensors))


def ranges_across_folds(graph: Graph, ranges: Mapping[str, tuple[float, float]], folds: Sequence[str],
                        new_folds: Sequence[str]) -> dict[str, tuple[float, float]] | None:
    """The ranges :func:`calibration_tensors` of ``graph`` folded as ``new_folds`` needs,
    read off ``ranges`` (measured on ``graph`` folded as ``folds``); None if one of them
    has no counterpart there (calibrate instead)."""
    bn_of = folded_into(graph)
    changed = set(folds) ^ set(new_folds)
    changed_bns = {bn_of[c] for c in changed if c in bn_of}
    old = fold_batch_norms(graph, layers=list(folds)).graph
    new = fold_batch_norms(graph, layers=list(new_folds)).graph
    old_out, new_out = old.layer_outputs(), new.layer_outputs()
    conv_of = {bn: conv for conv, bn in bn_of.items()}
    now = set(new_folds)
    out: dict[str, tuple[float, float]] = {}
    for t in calibration_tensors(new):
        layer = new.producer(t).layer if t.rpartition(":")[0] in new else None
        if layer in changed and layer in now and t == new_out.get(layer):   # newly folded: the BN's value
            source = old_out.get(bn_of[layer])
        elif layer in changed_bns and t == new_out.get(layer):      # unfolded: the BN hands on the folded value
            source = old_out.get(conv_of[layer])
        elif layer in changed or layer in changed_bns:               # inside a changed fold: not measured
            return None
        else:
            source = t
        if source is None or source not in ranges:
            return None
        out[t] = ranges[source]
    return out
