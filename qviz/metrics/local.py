"""Per-layer error in two modes: *accumulated* — each layer's output in the rewritten
model against the float one, every earlier layer's error carried in — and *local* —
each layer fed the float model's values at its inputs, so what is left is its own
quantization error alone (as the TFLite quantization debugger's two modes).

A layer with low accumulated but high local SQNR inherits its error; one whose
local SQNR is low makes it. Each quantizer counts for one layer, the one qviz's
rewrite put it in: a layer's weights, and the fake-quant on its own output (or on
its input, where the rewrite gave it one). A layer reading another layer's rounded
output is fed the float value, so that rounding counts once, for the layer that
rounds.

How: one graph (:func:`isolated`) in which every layer reads placeholders where it
read another layer's tensor; the float model is run once to fill them, and that
graph once to fetch every layer's output. A tensor's float value is the original's
tensor of the same name where the rewrite left everything up to it alone, and the
original layer's output where it is a rewritten layer's output (a conv that
absorbed its batch norm: the batch norm's); a layer reading anything else cannot
be cut off and is left out.

>>> import qviz
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("resnet_block"))
>>> recipe = qviz.Recipe.default(g).with_bits("conv1", qviz.LayerBits(2, 8))
>>> report = qviz.pipeline.report_for(g, recipe, qviz.apply(g, recipe, report=False), local=True)
>>> local = {e.layer: e.sqnr_db for e in report.local_layers}
>>> accumulated = {e.layer: e.sqnr_db for e in report.layers}
>>> local["conv1"] < 15 < local["conv2"]               # conv1's 2-bit weights: its own error
True
>>> accumulated["conv2"] < 15                           # conv2 only inherits it
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .. import runtime
from ..ir import Graph, Node
from ..ir.ops import FAKE_QUANT_OPS
from ..passes import folded_into
from ..passes.calibration import noise_inputs
from .report import PER_LAYER_EXAMPLES, VERIFY_EXAMPLES, LayerError, LayerSums, layer_chunk, layer_outputs

__all__ = ["Isolated", "isolated", "local_layer_errors"]

#: Name scope of the placeholders and quantizer copies :func:`isolated` adds.
LOCAL_SCOPE = "qviz_local"


@dataclass(frozen=True)
class Isolated:
    """The rewritten graph with each layer cut off from the others: ``graph``'s extra
    inputs ``feeds`` (placeholder tensor → the original's tensor whose float value it
    takes), and the layers it could not cut off, with why."""

    graph: Graph
    feeds: Mapping[str, str]
    not_isolated: Mapping[str, str]


def _untouched(original: Graph, rewritten: Graph) -> set[str]:
    """The rewritten graph's nodes the rewrite left alone, and everything up to them:
    they compute what the original's node of that name does."""
    same: set[str] = set()
    for node in rewritten.toposort().nodes:
        if node.name in original and original.node(node.name) == node and all(
                rewritten.producer(t).name in same for t in node.inputs):
            same.add(node.name)
    return same


def _float_source(rewritten: Graph, tensor: str, untouched: set[str], stands_for: Mapping[str, str],
                  old: Mapping[str, str], new_raw: Mapping[str, str]) -> str | None:
    """The original's tensor holding the float value of ``tensor`` (of the rewritten graph)."""
    if tensor in rewritten.inputs or rewritten.producer(tensor).name in untouched:
        return tensor
    layer = rewritten.producer(tensor).layer
    if new_raw.get(layer) == tensor:    # what the layer hands on: the original layer's output
        return old.get(stands_for.get(layer, layer))
    return None


def _before_quant(rewritten: Graph, tensor: str, untouched: set[str]) -> str:
    """``tensor``, or the input of the fake-quant the rewrite added that produces it (one the
    original model holds already is part of the reference: a model compared with itself
    read 35 dB, its own roundings counted as error)."""
    node = rewritten.producer(tensor)
    added = node.op in FAKE_QUANT_OPS and not rewritten.is_constant(node) and node.name not in untouched
    return node.inputs[0] if added else tensor


def isolated(original: Graph, rewritten: Graph, dtypes: Mapping[str, np.dtype],
             layer_map: Mapping[str, str] | None = None) -> Isolated:
    """``rewritten`` with each layer reading placeholders instead of other layers' tensors.

    Args:
        dtypes: the original tensors' dtypes (the placeholders take theirs).
        layer_map: rewritten layer → the original layer it now stands for (a conv
            that absorbed ``bn1``: ``{"conv1": "bn1"}``).
    """
    stands_for = dict(layer_map or {})
    old = layer_outputs(original)
    # each layer's output before its own fake-quant: what its float counterpart is
    untouched = _untouched(original, rewritten)
    new_raw = {layer: _before_quant(rewritten, t, untouched) for layer, t in layer_outputs(rewritten).items()}
    graph_inputs = set(rewritten.inputs)
    added: list[Node] = []
    feeds: dict[str, str] = {}
    cut: dict[tuple[str, str], str] = {}         # (tensor, reading layer) → what the layer now reads
    not_isolated: dict[str, str] = {}
    nodes = []
    for node in rewritten.nodes:
        inputs = list(node.inputs)
        for i, t in enumerate(inputs):
            producer = rewritten.producer(t)
            if producer.layer == node.layer or t in graph_inputs or rewritten.is_constant(t):
                continue
            if (t, node.layer) not in cut:
                # the value before the producer's own rounding: that rounding is the producer's error
                source = _float_source(rewritten, _before_quant(rewritten, t, untouched), untouched, stands_for, old,
                                       new_raw)
                if source is None or source not in dtypes:
                    not_isolated[node.layer] = f"no float counterpart of {t} in the original"
                    cut[(t, node.layer)] = t
                    continue
                ph = Node(f"{LOCAL_SCOPE}/{len(feeds)}/input", "Placeholder", attrs={"dtype": dtypes[source]},
                          layer=node.layer)
                added.append(ph)
                feeds[ph.output(0)] = source
                cut[(t, node.layer)] = ph.output(0)
            inputs[i] = cut[(t, node.layer)]
        nodes.append(node if inputs == list(node.inputs) else node.replace(inputs=tuple(inputs)))
    graph = rewritten.with_nodes([*added, *nodes], inputs=(*rewritten.inputs, *feeds))
    return Isolated(graph, feeds, not_isolated)


def _folded_into(original: Graph, rewritten: Graph) -> dict[str, str]:
    """Conv → the batch norm it absorbed: the foldable pairs whose batch norm is gone."""
    kept = set(rewritten.layers)
    return {conv: bn for conv, bn in folded_into(original).items() if conv in kept and bn not in kept}


def local_layer_errors(original: Graph, rewritten: Graph, inputs: Sequence[np.ndarray] | None = None, *,
                       layer_map: Mapping[str, str] | None = None) -> tuple[LayerError, ...]:
    """Each layer's own error: its output with the float model's values at its inputs,
    against the float model's (for the layers in both graphs, as
    :func:`qviz.metrics.verify` pairs them; on at most 8 examples of ``inputs``,
    default fixed-seed noise). ``layer_map`` as :func:`isolated`'s (default: the
    foldable pairs whose batch norm the rewrite removed). A layer that could not
    be cut off is left out."""
    if inputs is None:
        inputs = noise_inputs(original, count=VERIFY_EXAMPLES, seed=1)
    few = [np.asarray(x)[:PER_LAYER_EXAMPLES] for x in inputs]
    stands_for = dict(_folded_into(original, rewritten) if layer_map is None else layer_map)
    old, new = layer_outputs(original), layer_outputs(rewritten)
    common = [layer for layer in rewritten.layers if stands_for.get(layer, layer) in old and layer in new]
    # every original tensor a placeholder could need, and every layer output to compare with
    wanted = sorted(set(old.values()) | {t for t in rewritten.inputs} | {
        t for n in rewritten.nodes for t in n.inputs if t.rpartition(":")[0] in original})
    wanted = [t for t in wanted if not original.is_constant(t)]
    # a chunk of examples at a time (the float model's values of every layer are big)
    sums, cut, start, step = None, None, 0, 1
    while True:
        part = [x[start:start + step] for x in few]
        values = dict(zip(wanted, runtime.run(original, *part, fetches=wanted)))
        if cut is None:
            cut = isolated(original, rewritten, {t: v.dtype for t, v in values.items()}, stands_for)
            common = [layer for layer in common if layer not in cut.not_isolated]
            if not common:
                return ()
            sums = LayerSums(common)
        got = runtime.run(cut.graph, *part, *(values[src] for src in cut.feeds.values()),
                          fetches=[new[layer] for layer in common])
        for layer, g in zip(common, got):
            sums.add(layer, g, values[old[stands_for.get(layer, layer)]])
        if start == 0:
            step = layer_chunk([*values.values(), *got], len(part[0]))
        start += len(part[0])
        if start >= len(few[0]):
            return sums.errors(new)
        del values, got   # (before the next run's values come)
