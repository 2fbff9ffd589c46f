"""Activation ranges across fold selections: one calibration serves them all.

Folding is exact in float: with another set of batch norms folded, every tensor
holds the value it held before — except inside the folds that changed. So the
ranges a new fold selection needs are the old selection's, read tensor by tensor:

* a tensor of a layer whose fold did not change: the same tensor, by name;
* a newly folded conv's output (what it hands on): its batch norm's output before;
* an unfolded batch norm's output: its conv's output before (the conv did its work);
* a tensor inside a changed fold computed as before (a separable conv's depthwise
  output: the fold scales the pointwise conv after it): the same tensor;
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

qviz calibrates the float graph, batch norms and all (:func:`float_ranges`), and
reads every fold selection's ranges off it (:func:`ranges_for_folds`): ``qviz
apply``, a sweep and the app's fold toggles then share one calibration.

>>> measured = float_ranges(g, noise_inputs(g, count=8))
>>> carried = ranges_for_folds(g, measured, ["conv1", "conv2"])
>>> sorted(carried) == sorted(fresh) and all(abs(carried[t][k] - fresh[t][k]) < 1e-4 for t in fresh for k in (0, 1))
True
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from ..ir import Graph
from ..ir.ops import LAYER_OPS
from .fold_batch_norms import fold_batch_norms, folded_into
from .quant_points import bypass_adds, quant_points, quantizable_units
from .quantize import LayerBits, QuantizeConfig

__all__ = ["calibration_tensors", "ranges_across_folds", "float_calibration_tensors", "float_ranges",
           "ranges_for_folds", "calibrate_folds"]

log = logging.getLogger(__name__)


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
        elif (layer in changed or layer in changed_bns) and not _kept(old, new, t):
            return None                                              # inside a changed fold: not measured
        else:
            source = t
        if source is None or source not in ranges:
            return None
        out[t] = ranges[source]
    return out


def _kept(old: Graph, new: Graph, tensor: str) -> bool:
    """Whether ``new`` computes ``tensor`` with the very nodes ``old`` did, back to its
    layer's inputs (a rewrite keeps the nodes it does not touch)."""
    layer = new.producer(tensor).layer
    todo, seen = [tensor.rpartition(":")[0]], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        node = new.node(name)
        if name not in old or old.node(name) is not node:
            return False
        todo += [i.rpartition(":")[0] for i in node.inputs if new.producer(i).layer == layer]
    return True


def float_calibration_tensors(graph: Graph) -> list[str]:
    """The tensors of ``graph`` as loaded (no batch norm folded) whose ranges give every
    fold selection's :func:`calibration_tensors` by :func:`ranges_for_folds`: those of the
    graph unfolded, and the batch norms' outputs, which a folded conv hands on."""
    tensors = calibration_tensors(graph)
    outputs = graph.layer_outputs()
    tensors += [outputs[bn] for bn in folded_into(graph).values() if bn in outputs]
    return list(dict.fromkeys(tensors))


def float_ranges(graph: Graph, inputs, *, ema_decay: float | None = None) -> dict[str, tuple[float, float]]:
    """Measure :func:`float_calibration_tensors` on ``graph`` as loaded: one calibration
    that serves every fold selection (:func:`ranges_for_folds`). This is how qviz
    calibrates a recipe: the page, ``qviz apply`` and a sweep read the same numbers."""
    from .calibration import activation_ranges

    return activation_ranges(graph, float_calibration_tensors(graph), inputs, ema_decay=ema_decay)


def ranges_for_folds(graph: Graph, ranges: Mapping[str, tuple[float, float]],
                     folds: Sequence[str]) -> dict[str, tuple[float, float]] | None:
    """The ranges :func:`calibration_tensors` of ``graph`` folded as ``folds`` needs, read
    off :func:`float_ranges` of ``graph``; None when the layers cannot tell a conv's output
    from its batch norm's (a SavedModel exported whole puts every op in one layer): the
    caller calibrates the folded graph then."""
    return ranges_across_folds(graph, ranges, (), folds)


def calibrate_folds(graph: Graph, folds: Sequence[str], inputs, *,
                    ema_decay: float | None = None) -> dict[str, tuple[float, float]]:
    """The activation ranges of ``graph`` folded as ``folds``, measured on ``inputs`` as qviz
    calibrates a recipe (``qviz.apply``, a sweep): :func:`float_ranges` carried by
    :func:`ranges_for_folds`; where they do not carry, the folded graph calibrated itself."""
    from .calibration import activation_ranges

    carried = ranges_for_folds(graph, float_ranges(graph, inputs, ema_decay=ema_decay), folds)
    if carried is not None:
        return carried
    log.info("%s: the float graph's ranges do not carry to its folds (its layers do not tell a conv from its "
             "batch norm): the folded graph is calibrated", graph.source or "the graph")
    folded = fold_batch_norms(graph, layers=list(folds)).graph
    return activation_ranges(folded, calibration_tensors(folded), inputs, ema_decay=ema_decay)
