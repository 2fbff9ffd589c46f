"""Fake-quantization insertion: ``FakeQuantWithMinMaxVars(PerChannel)`` at any bit width (2–16).

Where quantization goes, as in TF's ``contrib/quantize`` (the pattern that finds
each place is in brackets):

* weights — the weights input of each Conv2D / DepthwiseConv2dNative / MatMul
  (after folding, that is the folded constant) → ``<layer>/weights_quant``;
* activations — the layer's activation output (``Relu``, ``Relu6``, ``Identity``),
  or the bias add / batch norm output when there is none
  [``layer_activation``] → ``<activation layer>/act_quant``;
* bypass ``Add`` — the other input (``bypass_quant``), and the output, or the
  activation after it [``bypass_add``] → ``add_quant``;
* post-activation bypass ``Add`` — the other input and the output
  [``post_activation_bypass``].

Biases stay float (at inference they are 32-bit integers, much finer than the
weights). A tensor is never quantized twice: one produced or read by a
``FakeQuant*`` op counts as done, so running the pass on its output adds nothing.

Weight ranges come from the weights themselves; activation ranges from
calibration (:func:`~qviz.passes.calibration.activation_ranges`). Both are
stored in the graph as the FakeQuant's ``min``/``max`` constants.

>>> import qviz
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> r = quantize(g, QuantizeConfig({"conv1": LayerBits(4, 8)}))
>>> sorted({n.layer for n in r.graph.nodes if n.op.startswith("FakeQuant")})
['conv1', 'relu1']
>>> quantize(r.graph, QuantizeConfig({"conv1": LayerBits(4, 8)})).modified
False
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..ir import Graph, GraphError, Node
from ..matcher import find_matches
from ..patterns.builtin import BUILTIN, LAYER_TYPES
from .calibration import activation_ranges, default_inputs
from .constants import constant_value
from .rewrite import Changes, GraphEditor, PassResult, Skipped, const_node

__all__ = ["LayerBits", "QuantizeConfig", "QuantPoint", "quantize", "quant_points",
           "quantizable_layers", "weight_range", "MIN_BITS", "MAX_BITS"]

#: TensorFlow's FakeQuant ops accept 2 to 16 bits.
MIN_BITS, MAX_BITS = 2, 16
FAKE_QUANT_OPS = frozenset({"FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel",
                            "FakeQuantWithMinMaxArgs"})
_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})


def _check_bits(value, what: str):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{what} must be an integer number of bits or None, not {value!r}")
    if not MIN_BITS <= value <= MAX_BITS:
        raise ValueError(f"{what} must be between {MIN_BITS} and {MAX_BITS}, got {value}")


@dataclass(frozen=True)
class LayerBits:
    """Bit widths for one layer; ``None`` leaves that part float."""

    weight_bits: int | None = 8
    activation_bits: int | None = 8

    def __post_init__(self):
        _check_bits(self.weight_bits, "weight_bits")
        _check_bits(self.activation_bits, "activation_bits")


@dataclass(frozen=True)
class QuantizeConfig:
    """What to quantize: ``layers`` maps conv/dense layer names to their bits.

    Options apply to every layer: ``narrow_range`` (weights use levels
    ``[1, 2^b − 1]``), ``symmetric`` ranges (``[−m, m]``), ``per_channel``
    weights, and ``ema_decay`` for activation calibration (``None``: min/max).
    """

    layers: Mapping[str, LayerBits] = field(default_factory=dict)
    narrow_range: bool = True
    symmetric: bool = False
    per_channel: bool = False
    ema_decay: float | None = None


@dataclass(frozen=True)
class QuantPoint:
    """One tensor to fake-quantize, found by :func:`quant_points`."""

    tensor: str
    consumers: tuple[str, ...]   # the nodes that will read the quantized tensor
    kind: str                    # "weights" | "activation" | "bypass_input" | "bypass_output"
    layer: str                   # the conv/dense layer whose bits apply
    owner: str                   # the layer the new nodes belong to (the tensor's producer's)
    name: str                    # weights_quant | act_quant | bypass_quant | add_quant
    bits: int
    layer_op: Node | None = None  # for weights: the op that reads them


def quantizable_layers(graph: Graph) -> tuple[str, ...]:
    """Layers holding a Conv2D, DepthwiseConv2dNative or MatMul op, in graph order."""
    found = dict.fromkeys(n.layer for n in graph.nodes if n.op in LAYER_TYPES)
    return tuple(layer for layer in graph.layers if layer in found)


def _already_quantized(graph: Graph, tensor: str) -> bool:
    """Produced by a FakeQuant (possibly through the reshapes of per-channel
    depthwise weights), or read by one."""
    if any(c.op in FAKE_QUANT_OPS for c in graph.consumers(tensor)):
        return True
    node = graph.producer(tensor)
    while node.op in ("Reshape", "Transpose", "Identity") and node.inputs:
        node = graph.producer(node.inputs[0])
    return node.op in FAKE_QUANT_OPS


def _is_float(graph: Graph, tensor: str) -> bool:
    node = graph.producer(tensor)
    dtype = node.attrs.get("T", node.attrs.get("dtype"))
    return dtype is None or str(dtype) in _FLOATS


def quant_points(graph: Graph, config: QuantizeConfig) -> tuple[list[QuantPoint], list[Skipped]]:
    """Where :func:`quantize` would insert FakeQuant ops, and what it must skip (with why)."""
    unknown = [name for name in config.layers if name not in graph.layers]
    if unknown:
        raise GraphError(f"quantize: no layer named {unknown[0]!r} in the graph")
    points: dict[str, QuantPoint] = {}
    skipped: list[Skipped] = []

    def add(tensor, consumers, kind, layer, name, bits, layer_op=None):
        if bits is None or tensor in points or _already_quantized(graph, tensor) \
                or not _is_float(graph, tensor):
            return
        owner = graph.producer(tensor).layer
        points[tensor] = QuantPoint(tensor, tuple(consumers), kind, layer, owner, name, bits, layer_op)

    ops = {}
    for node in graph.nodes:
        if node.op in LAYER_TYPES and node.layer in config.layers:
            ops.setdefault(node.layer, []).append(node)
    for layer in config.layers:
        if layer not in ops:
            skipped.append(Skipped(layer, "", f"layer {layer} has no {'/'.join(LAYER_TYPES)} op to quantize"))
    for layer, layer_ops in ops.items():
        bits = config.layers[layer]
        for op in layer_ops:
            if bits.weight_bits is not None and not graph.is_constant(op.inputs[1]):
                skipped.append(Skipped(layer, op.name, f"the weights of {op.name} are not constant"))
                continue
            add(op.inputs[1], [op.name], "weights", layer, "weights_quant", bits.weight_bits, op)

    def act_bits(m):
        bits = config.layers.get(m.get_op("layer").layer)
        return None if bits is None else bits.activation_bits

    for m in find_matches(BUILTIN["layer_activation"], graph):
        root = m.root
        if root.op == "Identity" and root.output(0) in graph.outputs and not graph.consumers(root):
            root = graph.producer(root.inputs[0])  # quantize what the output Identity reads
        add(root.output(0), [c.name for c in graph.consumers(root.output(0))], "activation",
            m.get_op("layer").layer, "act_quant", act_bits(m))
    for pattern, out_key in (("bypass_add", "activation"), ("post_activation_bypass", "post_bypass")):
        for m in find_matches(BUILTIN[pattern], graph):
            bits, layer = act_bits(m), m.get_op("layer").layer
            add_op = m.get_op("bypass") or m.get_op("post_bypass")
            add(m.get_tensor("bypass_input"), [add_op.name], "bypass_input", layer, "bypass_quant", bits)
            out = (m.get_op(out_key) if pattern == "bypass_add" else None) or add_op
            add(out.output(0), [c.name for c in graph.consumers(out.output(0))], "bypass_output",
                layer, "add_quant", bits)
    return list(points.values()), skipped


def weight_range(values: np.ndarray, symmetric: bool, axis: int | None = None):
    """(min, max) covering ``values`` and zero, per tensor or per slice along ``axis``."""
    v = np.asarray(values, np.float64)
    reduce = None if axis is None else tuple(i for i in range(v.ndim) if i != axis % v.ndim)
    lo = np.minimum(v.min(axis=reduce), 0.0)
    hi = np.maximum(v.max(axis=reduce), 0.0)
    if symmetric:
        hi = np.maximum(np.abs(lo), np.abs(hi))
        lo = -hi
    hi = np.where(hi - lo < 1e-8, lo + 1e-8, hi)  # an all-zero tensor still needs a range
    return lo.astype(np.float32), hi.astype(np.float32)


def quantize(graph: Graph, config: QuantizeConfig, *, calibration: Sequence[np.ndarray] | None = None,
             ranges: Mapping[str, tuple[float, float]] | None = None) -> PassResult:
    """Insert fake quantization for the layers in ``config``.

    Args:
        graph: the graph (usually after :func:`fold_batch_norms`); not modified.
        config: which layers, at which bits, with which options.
        calibration: inputs (one array per graph input) to measure activation
            ranges on; default :func:`~qviz.passes.calibration.default_inputs`.
        ranges: activation ranges measured already (``{tensor: (min, max)}``);
            tensors missing from it are calibrated.

    Raises:
        GraphError: a layer in ``config`` is not in the graph.
    """
    if not config.layers:
        return PassResult(graph, Changes(), ())
    points, skipped = quant_points(graph, config)
    ranges = dict(ranges or {})
    need = [p.tensor for p in points if p.kind != "weights" and p.tensor not in ranges]
    if need:
        inputs = calibration if calibration is not None else default_inputs(graph)
        ranges.update(activation_ranges(graph, need, inputs, ema_decay=config.ema_decay))
    editor = GraphEditor(graph)
    for p in points:
        _insert(graph, editor, p, config, ranges)
    return editor.finish(skipped)


def _insert(graph: Graph, editor: GraphEditor, p: QuantPoint, config: QuantizeConfig, ranges) -> None:
    base = f"{graph.layer_scope(p.owner)}/{p.name}"
    scope, i = base, 0
    while f"{scope}/min" in editor:  # several quantized tensors in one layer
        i += 1
        scope = f"{base}_{i}"
    anchor = graph.producer(p.tensor).name

    def const(suffix, value):
        return editor.add(const_node(f"{scope}/{suffix}", value, p.owner), after=anchor)

    if p.kind == "weights":
        out = _quantize_weights(graph, editor, p, config, scope, const)
    else:
        lo, hi = ranges[p.tensor]
        lo, hi = weight_range(np.array([lo, hi]), config.symmetric)
        mn, mx = const("min", np.float32(lo)), const("max", np.float32(hi))
        out = editor.add(Node(f"{scope}/FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVars",
                              [p.tensor, mn.output(0), mx.output(0)],
                              attrs={"num_bits": p.bits, "narrow_range": False}, layer=p.owner),
                         after=mx.name).output(0)
    changed = editor.reroute(out, p.tensor, can_modify=p.consumers)
    if not editor.replace_output(p.tensor, out) and changed == 0:
        raise GraphError(f"quantizing {p.tensor}: none of {list(p.consumers)} reads it")


def _quantize_weights(graph, editor, p: QuantPoint, config, scope, const) -> str:
    w = constant_value(graph, p.tensor)
    op = p.layer_op
    attrs = {"num_bits": p.bits, "narrow_range": config.narrow_range}
    if not config.per_channel:
        lo, hi = weight_range(w, config.symmetric)
        mn, mx = const("min", lo), const("max", hi)
        return editor.add(Node(f"{scope}/FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVars",
                               [p.tensor, mn.output(0), mx.output(0)], attrs=attrs, layer=p.owner),
                          after=mx.name).output(0)
    # The per-channel op works along the last axis; lay the output channels there.
    tensor, shape = p.tensor, w.shape
    before = after = None
    if op.op == "DepthwiseConv2dNative":      # [h, w, in, mult] → [h, w, 1, in·mult]
        before, after = (shape[0], shape[1], 1, shape[2] * shape[3]), shape
    elif op.op == "MatMul" and op.attrs.get("transpose_b"):
        before = "transpose"
    if before == "transpose":
        perm = const("perm", np.array([1, 0], np.int32))
        tensor = editor.add(Node(f"{scope}/to_channels_last", "Transpose", [tensor, perm.output(0)],
                                 attrs={"T": w.dtype, "Tperm": np.dtype("int32")}, layer=p.owner),
                            after=perm.name).output(0)
        view = w.T
    elif before is not None:
        s = const("channels_last_shape", np.array(before, np.int32))
        tensor = editor.add(Node(f"{scope}/to_channels_last", "Reshape", [tensor, s.output(0)],
                                 attrs={"T": w.dtype, "Tshape": np.dtype("int32")}, layer=p.owner),
                            after=s.name).output(0)
        view = w.reshape(before)
    else:
        view = w
    lo, hi = weight_range(view, config.symmetric, axis=-1)
    mn, mx = const("min", lo), const("max", hi)
    out = editor.add(Node(f"{scope}/FakeQuantWithMinMaxVarsPerChannel", "FakeQuantWithMinMaxVarsPerChannel",
                          [tensor, mn.output(0), mx.output(0)], attrs=attrs, layer=p.owner),
                     after=mx.name).output(0)
    if before == "transpose":
        back = editor.add(Node(f"{scope}/from_channels_last", "Transpose", [out, perm.output(0)],
                               attrs={"T": w.dtype, "Tperm": np.dtype("int32")}, layer=p.owner),
                          after=out.split(":")[0])
        return back.output(0)
    if after is not None:
        s2 = const("shape", np.array(after, np.int32))
        back = editor.add(Node(f"{scope}/from_channels_last", "Reshape", [out, s2.output(0)],
                               attrs={"T": w.dtype, "Tshape": np.dtype("int32")}, layer=p.owner),
                          after=out.split(":")[0])
        return back.output(0)
    return out
