"""What a recipe costs: the weights' size at their bits, and the compute in
bit-operations — read off the rewritten graph, so it counts the widths the graph
really simulates (a layer the quantize pass skipped stays at 32 bits).

* size: Σ over conv/depthwise/dense weights of count × width (float: 32 bits);
* bit-operations (BOPs): Σ over those layers of MACs × weight width × input width,
  where MACs = weights × output positions (a conv's output height × width; a dense
  layer's one) and the input width is the fake-quant feeding the op, through
  grid-keeping ops such as a max-pool or a reshape (else 32).

Sizes are bits of payload: TFLite's own storage (int4 packed two per byte, 3 and 2
bits widened to 4 or 8) is in :class:`qviz.analysis.deployability.DeployCheck`.

>>> import qviz
>>> from qviz.runtime import tensor_shapes
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> shapes = tensor_shapes(g)
>>> float_cost = budget(g, g, shapes)
>>> float_cost.weight_bits == float_cost.float_weight_bits, float_cost.bops == float_cost.float_bops
(True, True)
>>> eight = budget(g, qviz.apply(g, qviz.Recipe.default(g), report=False).graph, shapes)
>>> round(eight.weight_bits / eight.float_weight_bits, 3), round(eight.bops / eight.float_bops, 4)
(0.25, 0.0625)
>>> eight.summary()
'weights 37.3 KB at their bits (25% of float) · 21.6 M bit-ops (6.25% of float)'
>>> budget(g, g).summary()   # no shapes: no bit-operations
'weights 149 KB at their bits (100% of float) · bit-ops once the output shapes are known'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ir import Graph
from ..ir.ops import FAKE_QUANT_OPS, LAYER_OPS
from ..passes.constants import NotConstantError, constant_value
from ..passes.quant_points import grid_source, rounded_from

__all__ = ["Budget", "budget", "layer_macs", "weighted_ops", "parse_count", "count_text"]

FLOAT_BITS = 32


@dataclass(frozen=True)
class Budget:
    """A rewritten graph's weight size and compute, and the float model's."""

    weight_bits: int
    float_weight_bits: int
    bops: int | None          # None: output shapes not known (TensorFlow has not inferred them yet)
    float_bops: int | None

    def summary(self) -> str:
        """One line: ``weights 1.1 MB at their bits (25% of float) · 2.3 G bit-ops (6.3% of float)``."""
        size = (f"weights {_bytes(self.weight_bits / 8)} at their bits "
                f"({_share(self.weight_bits, self.float_weight_bits)})")
        if self.bops is None:
            return size + " · bit-ops once the output shapes are known"
        return size + f" · {count_text(self.bops)} bit-ops ({_share(self.bops, self.float_bops)})"


def _share(part, whole) -> str:
    return f"{100 * part / whole:.3g}% of float" if whole else "no float weights"


def _bytes(n: float) -> str:
    for unit, scale in (("MB", 2**20), ("KB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def count_text(n: float | None) -> str:
    """A count in a few digits and an SI unit: ``21.6 M``; None: ``unknown``.

    >>> count_text(21_600_000), count_text(999.5), count_text(None)
    ('21.6 M', '1000', 'unknown')
    """
    if n is None:
        return "unknown"
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f}"


def _width(graph: Graph, tensor: str) -> int:
    """The bits of the fake-quant ``tensor`` comes from, through ops that keep its grid
    (a max-pool, a reshape: TFLite runs them on the integers); 32 if none."""
    node = grid_source(graph, tensor)
    return int(node.attrs.get("num_bits", 8)) if node.op in FAKE_QUANT_OPS else FLOAT_BITS


def weighted_ops(graph: Graph):
    """(op, number of weights) for each conv/depthwise/dense op whose weights are constants
    (or a fake-quant of constants: a model quantized already)."""
    for node in graph.nodes:
        if node.op not in LAYER_OPS or len(node.inputs) < 2:
            continue
        try:
            weights, _ = rounded_from(graph, node.inputs[1])
            yield node, int(np.size(constant_value(graph, weights, tensorflow=False)))
        except NotConstantError:   # weights computed from inputs: not a model parameter
            continue


def _positions(node, shapes: dict) -> int | None:
    """Output positions each weight is used at (a conv's height × width; 1 for a dense
    layer); None if the output's shape is not known."""
    shape = shapes.get(node.output(0))
    if shape is None or any(d is None for d in shape[1:]):
        return None
    return math.prod(shape[1:-1]) if node.op != "MatMul" else 1


def layer_macs(graph: Graph, shapes: dict) -> dict[str, int]:
    """Each layer's multiply-accumulates per example (weights × output positions), for the
    layers with weights; a layer whose output shape is not known is left out.

    >>> import qviz
    >>> from qviz.runtime import tensor_shapes
    >>> from qviz.samples import sample_path
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> layer_macs(g, tensor_shapes(g))
    {'conv1': 9216, 'conv2': 294912, 'fc1': 32768, 'logits': 640}
    """
    macs: dict[str, int] = {}
    for node, count in weighted_ops(graph):
        positions = _positions(node, shapes)
        if positions is not None:
            macs[node.layer] = macs.get(node.layer, 0) + count * positions
    return macs


def parse_count(text: str) -> float:
    """A count written with an SI suffix, as budgets are quoted: ``"21.6M"`` → 21.6e6.

    >>> parse_count("21.6M"), parse_count("3G"), parse_count("1500")
    (21600000.0, 3000000000.0, 1500.0)
    >>> parse_count("lots")
    Traceback (most recent call last):
    ...
    ValueError: 'lots' is not a count such as 1500, 250k, 21.6M or 3G
    """
    scale = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    body, unit = (text[:-1], scale[text[-1]]) if text and text[-1] in scale else (text, 1.0)
    try:
        value = float(body) * unit
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        shown = text if len(text) <= 30 else text[:27] + "…"
        raise ValueError(f"{shown!r} is not a count such as 1500, 250k, 21.6M or 3G")
    return value


def budget(original: Graph, rewritten: Graph, shapes: dict | None = None) -> Budget:
    """The cost of ``rewritten`` (a recipe's result on ``original``) and of ``original``.

    ``shapes``: the original's tensor shapes (:func:`qviz.runtime.tensor_shapes`);
    without them bit-operations are not counted (``bops`` None). Layers are paired
    by name and their layer ops in graph order.
    """
    ops_of = {}
    for node in rewritten.nodes:
        if node.op in LAYER_OPS:
            ops_of.setdefault(node.layer, []).append(node)
    weight_bits = float_weight_bits = 0
    bops = float_bops = 0 if shapes is not None else None
    seen: dict[str, int] = {}
    for node, count in weighted_ops(original):
        i = seen[node.layer] = seen.get(node.layer, -1) + 1
        twins = ops_of.get(node.layer, [])
        twin = twins[i] if i < len(twins) else None
        w_bits = _width(rewritten, twin.inputs[1]) if twin is not None else FLOAT_BITS
        a_bits = _width(rewritten, twin.inputs[0]) if twin is not None else FLOAT_BITS
        weight_bits += count * w_bits
        float_weight_bits += count * FLOAT_BITS
        if bops is not None:
            positions = _positions(node, shapes)
            if positions is None:
                bops = float_bops = None
                continue
            bops += count * positions * w_bits * a_bits
            float_bops += count * positions * FLOAT_BITS * FLOAT_BITS
    return Budget(weight_bits, float_weight_bits, bops, float_bops)
