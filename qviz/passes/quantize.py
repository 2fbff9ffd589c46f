"""Fake-quantization insertion: ``FakeQuantWithMinMaxVars(PerChannel)`` at any bit width (2–16).

Where the ops go is :mod:`qviz.passes.quant_points` (the device's rule: a
selected layer runs in integer, so its inputs, weights and output are
quantized; pools and softmax round where TFLite rounds). Biases stay float (at
inference they are 32-bit integers, much finer than the weights). A tensor is
never quantized twice: running the pass on its output adds nothing.

Ranges:

* weights: from the weights themselves, symmetric by default (zero point 0,
  as TFLite's int8 kernels require), narrow-range;
* activations: from calibration (:func:`~qviz.passes.calibration.activation_ranges`),
  asymmetric by default; 16-bit activations are always symmetric and
  narrow-range (TFLite's int16 activations have zero point 0);
* a pool's output: its input's range (TFLite keeps the scale);
* softmax / sigmoid / tanh outputs at 8 bits: TFLite's fixed ranges.

All are stored in the graph as the FakeQuant's ``min``/``max`` constants.

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

from collections.abc import Mapping

import numpy as np

from ..ir import Graph, GraphError, Node
from ..ir.ops import DEPTHWISE, FAKE_QUANT, FAKE_QUANT_PER_CHANNEL, MATMUL, channels_last_shape
from .calibration import activation_ranges, as_input_list, noise_inputs
from .constants import constant_value
from .quant_config import MAX_BITS, MIN_BITS, LayerBits, QuantizeConfig
from .quant_points import (SAME_GRID_OPS, QuantPoint, fake_quant_range, quant_points, quantizable_layers,
                           quantizable_units, quantized_in_graph, quantized_note)
from .result import Changes, PassResult, Skipped
from .rewrite import GraphEditor, const_node

__all__ = ["LayerBits", "QuantizeConfig", "QuantPoint", "quantize", "quant_points",
           "quantizable_layers", "quantizable_units", "quantized_in_graph", "quantized_note", "weight_range", "MIN_BITS", "MAX_BITS"]


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


def quantize(graph: Graph, config: QuantizeConfig, *, calibration=None,
             ranges: Mapping[str, tuple[float, float]] | None = None) -> PassResult:
    """Insert fake quantization for the layers in ``config``.

    Args:
        graph: the graph (usually after :func:`fold_batch_norms`); not modified.
        config: which layers, at which bits, with which options.
        calibration: inputs to measure activation ranges on: one array per graph
            input, or a bare array for a one-input graph, or a function making
            them (called only if ``ranges`` lacks a tensor); default
            :func:`~qviz.passes.calibration.noise_inputs`.
        ranges: activation ranges measured already (``{tensor: (min, max)}``);
            tensors missing from it are calibrated.

    Raises:
        GraphError: a layer in ``config`` is not in the graph.
    """
    if not config.layers:
        return PassResult(graph, Changes(), ())
    points, skipped = quant_points(graph, config)
    skipped = list(skipped)
    ranges = dict(ranges or {})
    need = [p.tensor for p in points if p.kind not in ("weights", "requantize", "fixed") and p.tensor not in ranges]
    if need:
        if callable(calibration):
            calibration = calibration()
        inputs = as_input_list(graph, calibration) if calibration is not None else noise_inputs(graph)
        ranges.update(activation_ranges(graph, need, inputs, ema_decay=config.ema_decay))
    editor = GraphEditor(graph)
    used: dict[str, tuple[float, float]] = {}   # tensor → the range its FakeQuant got
    scales: dict[str, np.ndarray] = {}          # tensor → the scale (LSB) of its grid
    for p in points:
        if p.kind == "weights" and config.per_channel and p.layer_op.op == MATMUL:
            skipped.append(Skipped(p.layer, p.layer_op.name,
                                   "per-channel weights: kept per-tensor, as TFLite's converter refuses "
                                   "per-channel fully-connected weights"))
        _insert(graph, editor, p, config, ranges, used, scales)
    for p in points:   # an integer kernel (integer input and output): its bias is an int32 too
        if p.kind == "weights" and config.int32_bias and config.layers[p.layer].activation_bits is not None:
            _round_bias(graph, editor, p, scales)
    return editor.finish(skipped)


def _scale(lo, hi, bits: int, narrow: bool):
    return (np.asarray(hi, np.float64) - np.asarray(lo, np.float64)) / (2 ** bits - 1 - int(narrow))


def _grid_scale(graph: Graph, tensor: str, scales) -> float | None:
    """The LSB of the integer grid ``tensor`` is on (through same-grid ops), if any."""
    while True:
        if tensor in scales:
            return float(scales[tensor])
        node = graph.producer(tensor)
        if node.op == FAKE_QUANT:
            lo, hi = fake_quant_range(graph, tensor)
            return float(_scale(lo, hi, int(node.attrs.get("num_bits", 8)), bool(node.attrs.get("narrow_range"))))
        if node.op not in SAME_GRID_OPS or not node.inputs:
            return None
        tensor = node.inputs[0]


def _round_bias(graph: Graph, editor: GraphEditor, p: QuantPoint, scales) -> None:
    """Put a quantized layer's bias on TFLite's int32 grid (scale = input LSB × weight LSB).

    TFLite adds the bias as an integer; left in float it is off by up to half
    that step, about 1 % of an output LSB: enough to flip one output rounding in
    a few hundred against the device.
    """
    op = p.layer_op
    readers = graph.consumers(op.output(0))
    if len(readers) != 1 or readers[0].op != "BiasAdd" or not graph.is_constant(readers[0].inputs[1]):
        return
    s_in = _grid_scale(graph, op.inputs[0], scales)
    s_w = scales.get(p.tensor)
    if s_in is None or s_w is None:
        return
    bias_add = readers[0]
    b = np.asarray(constant_value(graph, bias_add.inputs[1]))
    step = np.broadcast_to(s_in * np.asarray(s_w, np.float64), b.shape)
    rounded = (np.round(b / step) * step).astype(b.dtype)
    scope = graph.layer_scope(bias_add.layer)
    const = editor.add(const_node(editor.unique_name(f"{scope}/bias_int32_grid"), rounded, bias_add.layer),
                       after=bias_add.name)
    editor.update(bias_add.name, inputs=(editor.node(bias_add.name).inputs[0], const.output(0)))


def activation_range(lo: float, hi: float, bits: int, config: QuantizeConfig) -> tuple[float, float]:
    """The FakeQuant range of an activation calibrated to ``[lo, hi]``."""
    symmetric = config.activation_symmetric or bits == 16
    a, b = weight_range(np.array([lo, hi]), symmetric)
    return float(a), float(b)


def _insert(graph: Graph, editor: GraphEditor, p: QuantPoint, config: QuantizeConfig, ranges, used,
            scales) -> None:
    base = f"{graph.layer_scope(p.owner)}/{p.name}"
    scope, i = base, 0
    while f"{scope}/min" in editor:  # several quantized tensors in one layer
        i += 1
        scope = f"{base}_{i}"
    anchor = graph.producer(p.tensor).name

    def const(suffix, value):
        return editor.add(const_node(f"{scope}/{suffix}", value, p.owner), after=anchor)

    if p.kind == "weights":
        out = _quantize_weights(graph, editor, p, config, scope, const, scales)
    else:
        if p.kind == "requantize":
            lo, hi = used[p.range_of] if p.range_of in used else fake_quant_range(graph, p.range_of)
        elif p.kind == "fixed":
            lo, hi = p.fixed_range
        else:
            lo, hi = activation_range(*ranges[p.tensor], p.bits, config)
        used[p.tensor] = (lo, hi)
        # 16-bit activations: narrow range puts zero at level 0 of int16, as TFLite requires
        narrow = p.bits == 16 and p.kind != "fixed"
        scales[p.tensor] = _scale(lo, hi, p.bits, narrow)
        mn, mx = const("min", np.float32(lo)), const("max", np.float32(hi))
        out = editor.add(Node(f"{scope}/{FAKE_QUANT}", FAKE_QUANT,
                              [p.tensor, mn.output(0), mx.output(0)],
                              attrs={"num_bits": p.bits, "narrow_range": narrow}, layer=p.owner),
                         after=mx.name).output(0)
    changed = editor.reroute(out, p.tensor, can_modify=p.consumers)
    if not editor.replace_output(p.tensor, out) and changed == 0:
        raise GraphError(f"quantizing {p.tensor}: none of {list(p.consumers)} reads it")


def _quantize_weights(graph, editor, p: QuantPoint, config, scope, const, scales) -> str:
    w = constant_value(graph, p.tensor)
    op = p.layer_op
    attrs = {"num_bits": p.bits, "narrow_range": config.narrow_range}
    if not config.per_channel or op.op == MATMUL:
        lo, hi = weight_range(w, config.weight_symmetric)
        scales[p.tensor] = _scale(lo, hi, p.bits, config.narrow_range)
        mn, mx = const("min", lo), const("max", hi)
        return editor.add(Node(f"{scope}/{FAKE_QUANT}", FAKE_QUANT,
                               [p.tensor, mn.output(0), mx.output(0)], attrs=attrs, layer=p.owner),
                          after=mx.name).output(0)
    # Per-channel: conv and depthwise only (TFLite refuses it for fully-connected).
    # The per-channel op works along the last axis; lay the output channels there.
    tensor, shape = p.tensor, w.shape
    before = after = None
    if op.op == DEPTHWISE:      # [h, w, in, mult] → [h, w, 1, in·mult]
        before, after = channels_last_shape(op.op, shape), shape
    if before is not None:
        s = const("channels_last_shape", np.array(before, np.int32))
        tensor = editor.add(Node(f"{scope}/to_channels_last", "Reshape", [tensor, s.output(0)],
                                 attrs={"T": w.dtype, "Tshape": np.dtype("int32")}, layer=p.owner),
                            after=s.name).output(0)
        view = w.reshape(before)
    else:
        view = w
    lo, hi = weight_range(view, config.weight_symmetric, axis=-1)
    scales[p.tensor] = _scale(lo, hi, p.bits, config.narrow_range)   # per output channel, as the bias
    mn, mx = const("min", lo), const("max", hi)
    out = editor.add(Node(f"{scope}/{FAKE_QUANT_PER_CHANNEL}", FAKE_QUANT_PER_CHANNEL,
                          [tensor, mn.output(0), mx.output(0)], attrs=attrs, layer=p.owner),
                     after=mx.name).output(0)
    if after is not None:
        s2 = const("shape", np.array(after, np.int32))
        back = editor.add(Node(f"{scope}/from_channels_last", "Reshape", [out, s2.output(0)],
                               attrs={"T": w.dtype, "Tshape": np.dtype("int32")}, layer=p.owner),
                          after=out.split(":")[0])
        return back.output(0)
    return out
