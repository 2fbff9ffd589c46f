"""TensorFlow Lite export that checks itself against qviz's simulation.

:func:`convert` turns a fake-quantized graph into a ``.tflite`` flatbuffer
with TensorFlow's own converter, the way graphs with FakeQuant ops are
converted (``optimizations=[DEFAULT]``: the FakeQuant ranges become the
integer tensors' scales, no other calibration). :func:`compare_with_device`
runs it in ``tf.lite.Interpreter`` (TFLite's built-in kernels, no XNNPACK
delegate) next to qviz's graph and says, in the output's own LSBs, how far
apart they are; with ``per_layer=True`` also per integer tensor.
:func:`export_tflite` does both for a recipe and writes the file.

TensorFlow is imported only inside these functions.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._text import floor_percent
from ..analysis.deployability import DeployCheck, deployability, group_by_reason
from ..metrics import VERIFY_EXAMPLES, sqnr_db
from ..metrics.report import constant_output
from ..ir import Graph
from ..ir.ops import FAKE_QUANT, FAKE_QUANT_OPS, FAKE_QUANT_PER_CHANNEL, TFLITE_FUSED_CHAIN
from ..passes.calibration import as_input_list, noise_inputs
from ..passes.quant_points import SAME_GRID_OPS
from ..passes.recipe import Recipe
from ..pipeline import Result, apply
from ..runtime import RunError, run_from
from . import ExportError, save_saved_model
from .. import runtime

__all__ = ["convert", "compare_with_device", "export_tflite", "DeviceReport", "TensorAgreement",
           "TFLiteExport", "TFLiteError"]


#: "Within one LSB", allowing for float32 noise in qviz's dequantized values (≈1e-6 LSB).
_ONE_LSB = 1.0 + 1e-3


class TFLiteError(ExportError):
    """The converter refused the graph, or the interpreter refused the model."""


@dataclass(frozen=True)
class TensorAgreement:
    """qviz against the device on one integer tensor of the ``.tflite`` model.

    ``max_lsb`` and ``within_1_lsb`` compare the op locally: qviz's op given the
    device's own input values, so a difference upstream does not count (in a
    deep untrained net a one-LSB difference grows layer by layer, as it would
    between any two correct integer implementations). ``chained_within_1_lsb``
    compares both runs from the model input. An op qviz could not give the device's inputs
    (one it cannot place in its graph) is compared from the model input in both, and
    ``given_device_inputs`` is False: it says so wherever it is shown.
    """

    layer: str
    tensor: str                  # the qviz tensor compared
    max_lsb: float               # max |qviz − device| in the tensor's LSBs, given the device's inputs
    within_1_lsb: float          # fraction of values within one LSB, given the device's inputs
    chained_within_1_lsb: float  # the same, both run from the model input
    given_device_inputs: bool = True

    @property
    def how(self) -> str:
        """"" when compared given the device's inputs, else what it was compared from."""
        return "" if self.given_device_inputs else " (from the model input: its inputs could not be fed)"


@dataclass(frozen=True)
class DeviceReport:
    """The ``.tflite`` model run on verification data, next to qviz's simulation."""

    examples: int
    size_bytes: int
    ops: dict                 # TFLite op name → count
    output_lsb: float | None  # the scale of the (first) output, None when it stays float
    max_lsb: float | None     # max |qviz − device| over the outputs, in output LSBs
    within_1_lsb: float | None
    max_abs: float            # max |qviz − device|
    agreement: float | None   # fraction of examples whose argmax agrees (classifier outputs)
    sqnr_qviz_db: float       # qviz's simulation against float
    sqnr_device_db: float     # the device against float
    layers: tuple[TensorAgreement, ...] = ()
    float_ops: tuple[str, ...] = ()   # "OP tensor" of the ops (besides QUANTIZE/DEQUANTIZE) that run in float
    integer_ops: tuple[str, ...] = ()  # "OP tensor" of the ops that run in integer
    warning: str | None = None   # the float outputs cannot measure error (metrics.report.constant_output)

    def faithful_line(self) -> str | None:
        """One line when every integer op is within 1 LSB of qviz, given the device's inputs
        and run from the model input alike (a list of the "least faithful" at 100 % confused);
        None when some is not (then :meth:`least_faithful` lists them)."""
        if not self.layers or any(t.within_1_lsb < 1 or t.chained_within_1_lsb < 1 for t in self.layers):
            return None
        return (f"each of the {len(self.layers)} integer ops, given the device's own inputs or run from the "
                "model input, is within 1 LSB of qviz on every value")

    def least_faithful(self, count: int = 5) -> list[TensorAgreement]:
        """The ``count`` integer ops least often within 1 LSB of qviz given the device's inputs;
        among equals (often all at 100 %), those that drift most run from the model input."""
        return sorted(self.layers, key=lambda t: (t.within_1_lsb, t.chained_within_1_lsb))[:count]

    def summary(self) -> str:
        """One line: how close the simulation is to the device."""
        def db(v):
            return "∞" if math.isinf(v) else f"{v:.2f}"
        lsb = ("" if self.max_lsb is None else
               f"max {self.max_lsb:.2g} LSB apart, {floor_percent(self.within_1_lsb, 1)} % of outputs within 1 LSB, ")
        agree = "" if self.agreement is None else f"predictions agree on {100 * self.agreement:.1f} %, "
        return (f"TFLite vs qviz on {self.examples} examples: {lsb}{agree}"
                f"SQNR vs float: qviz {db(self.sqnr_qviz_db)} dB, TFLite {db(self.sqnr_device_db)} dB")


@dataclass(frozen=True)
class TFLiteExport:
    path: Path
    check: DeployCheck
    device: DeviceReport
    result: Result = field(repr=False)


def _tf():
    import tensorflow as tf

    return tf


def convert(graph: Graph, *, int8_io: bool = False) -> bytes:
    """The ``.tflite`` flatbuffer of a fake-quantized ``graph``.

    Args:
        int8_io: the model's inputs and outputs are int8 (quantized with the
            input quantizer's and the output quantizer's ranges) instead of
            float with QUANTIZE/DEQUANTIZE inside. Needs both quantized.

    Raises:
        TFLiteError: the converter refused the graph (the message is its first line).
    """
    quantizers = [n for n in graph.nodes if n.op in FAKE_QUANT_OPS]
    _check_ranges(graph, quantizers)
    tf = _tf()
    with tempfile.TemporaryDirectory(prefix="qviz-tflite-") as tmp:
        saved = save_saved_model(graph, Path(tmp) / "model")
        converter = tf.lite.TFLiteConverter.from_saved_model(os.fspath(saved))
        if quantizers:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        # (else none: asked to optimize a float graph, the converter stores its big weights in
        # int8 on its own, dynamic-range quantization, where qviz says they stay float)
        if int8_io:
            converter.inference_input_type = tf.int8
            converter.inference_output_type = tf.int8
        try:
            return converter.convert()
        except Exception as exc:   # ConverterError and friends: a many-line MLIR dump
            raise TFLiteError(f"TFLite's converter refused the graph: {_converter_message(str(exc))}") from None


#: A quantizer's range beyond this is refused: a layer's bias scale (its input's scale times
#: its weights') must fit float32, else the converter aborts the process ("scale out of
#: expressed type range", then a segfault). Two ranges of 1e15 keep it below 1e26.
_MAX_RANGE = 1e15


def _check_ranges(graph: Graph, quantizers) -> None:
    """Refuse, before the converter sees it, a quantizer whose range is not finite or too wide
    (a model whose values overflow float32, e.g. weights of 1e15)."""
    from ..passes.constants import constant_value

    for node in quantizers:
        if node.op == FAKE_QUANT or node.op == FAKE_QUANT_PER_CHANNEL:
            bounds = [constant_value(graph, t) for t in node.inputs[1:3]]
        else:   # FakeQuantWithMinMaxArgs: the range is in its attributes
            bounds = [np.asarray(node.attrs.get("min", 0.0)), np.asarray(node.attrs.get("max", 0.0))]
        values = np.concatenate([np.ravel(b).astype(np.float64) for b in bounds])
        if not np.all(np.isfinite(values)) or np.abs(values).max(initial=0.0) > _MAX_RANGE:
            raise TFLiteError(f"{node.layer}: its quantization range [{values.min():.3g}, {values.max():.3g}] is "
                              "not one TFLite can hold (the model's values overflow float32); check its weights")


def _converter_message(text: str) -> str:
    r"""The converter's first error, one line: the op it names and what is wrong, without
    MLIR's location chain or a ``file:line:col: error:`` prefix.

    >>> _converter_message('<unknown>:0: error: loc(callsite(fused["MaxPool:", "m/pool_1/MaxPool2d@__inference_9"]'
    ...                    ' at fused["PartitionedCall:", "PartitionedCall"])): error: \'tfl.max_pool_2d\' op '
    ...                    'operand #0 must be QI8, but got i4\nnote: see current operation')
    "m/pool_1/MaxPool2d: 'tfl.max_pool_2d' op operand #0 must be QI8, but got i4"
    >>> _converter_message('/tmp/x/model.py:12:0: error: loc("conv"): \'tfl.conv_2d\' op is not supported')
    "conv: 'tfl.conv_2d' op is not supported"
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()] or ["(no message)"]
    line = next((ln for ln in lines if "error:" in ln), lines[0])
    line = _ERROR_PREFIX.sub("", line)
    name = None
    if line.startswith("loc("):
        depth, end = 0, len(line)
        for i, ch in enumerate(line):
            depth += (ch == "(") - (ch == ")")
            if ch == ")" and depth == 0:
                end = i + 1
                break
        found = re.search(r'fused\["[^"]*", "([^"@]+)', line[:end]) or re.match(r'loc\("([^"@]+)', line)
        name = found.group(1) if found else None
        line = _ERROR_PREFIX.sub("", line[end:].lstrip(": "))
    return f"{name}: {line}" if name else line


#: What precedes a converter error's text: ``<unknown>:0: error:``, ``/path/x.py:12:0: error:``, ``error:``.
_ERROR_PREFIX = re.compile(r"^(?:\S*?:\d+(?::\d+)?:\s*)?error:\s*")


def _interpreter(model: bytes, preserve: bool):
    tf = _tf()
    with warnings.catch_warnings():   # "tf.lite.Interpreter is deprecated": it is what TF 2.21 ships
        warnings.simplefilter("ignore")
        it = tf.lite.Interpreter(model_content=model, experimental_preserve_all_tensors=preserve,
                                 experimental_op_resolver_type=tf.lite.experimental.OpResolverType
                                 .BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    try:
        it.allocate_tensors()
    except (RuntimeError, ValueError) as exc:
        raise TFLiteError(f"TFLite's interpreter refused the model: {str(exc).splitlines()[0]}") from None
    return it


def _scale(detail) -> tuple[float, int] | None:
    scales = detail["quantization_parameters"]["scales"]
    if len(scales) != 1 or not detail["dtype"] in (np.int8, np.int16, np.uint8):
        return None
    return float(scales[0]), int(detail["quantization_parameters"]["zero_points"][0])


def _run_device(it, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run the interpreter on ``inputs`` (in ``graph.inputs`` order); float outputs in graph order."""
    runner = it.get_signature_runner("serving_default")
    details_in = runner.get_input_details()
    feeds = {}
    for tensor, x in zip(graph.inputs, inputs):
        name = tensor.split(":")[0].replace("/", "_")
        d = details_in[name]
        q = _scale(d)
        x = np.asarray(x, np.float32)
        if q is not None:   # int8 input: quantize as the device's caller must
            info = np.iinfo(d["dtype"])
            x = np.clip(np.round(x / q[0]) + q[1], info.min, info.max).astype(d["dtype"])
        feeds[name] = x
    out = runner(**feeds)
    details_out = runner.get_output_details()
    results = []
    for i in range(len(graph.outputs)):
        key = f"output_{i}"
        v = out[key]
        q = _scale(details_out[key])
        results.append((v.astype(np.float32) - q[1]) * q[0] if q is not None else v.astype(np.float32))
    return results


def _output_scale(graph: Graph, tensor: str) -> float | None:
    """The LSB of a graph output produced by a FakeQuant (through Identity ops)."""
    node = graph.producer(tensor)
    while node.op == "Identity" and node.inputs:
        node = graph.producer(node.inputs[0])
    if node.op not in FAKE_QUANT_OPS or node.op == FAKE_QUANT_PER_CHANNEL:
        return None
    lo, hi = (float(graph.producer(t).attrs["value"]) if graph.producer(t).op == "Const" else None
              for t in node.inputs[1:3])
    if lo is None or hi is None:
        return None
    levels = 2 ** int(node.attrs.get("num_bits", 8)) - 1 - int(bool(node.attrs.get("narrow_range")))
    return (hi - lo) / levels


def _quantized_value(graph: Graph, node) -> str | None:
    """The qviz tensor holding what the device stores for ``node``'s fused op: the
    FakeQuant after it, through the bias and activation TFLite fuses into it; or its
    own output when it only moves values already on a grid (MaxPool, Reshape…), or is
    the FakeQuant itself (the model input's, which the device's QUANTIZE makes)."""
    if node.op == FAKE_QUANT:
        return node.output(0)
    start = node
    while True:
        readers = graph.consumers(node.output(0))
        fq = next((c for c in readers if c.op == FAKE_QUANT), None)
        if fq is not None:
            return fq.output(0)
        if len(readers) != 1 or readers[0].op not in TFLITE_FUSED_CHAIN:
            break
        node = readers[0]
    return start.output(0) if start.op in SAME_GRID_OPS else None


def _qviz_node(graph: Graph, it, index: int):
    """The qviz node TFLite's tensor ``index`` comes from (by the TF op names in its name)."""
    parts = it._get_tensor_details(index, 0)["name"].split(";")
    # the converter makes names unique with a digit ("…/MatMul1" for a second tensor of "…/MatMul")
    return next((graph.node(p) for p in parts + [p.rstrip("0123456789") for p in parts] if p in graph), None)


def _qviz_tensor(graph: Graph, it, index: int) -> str | None:
    """The qviz tensor holding what TFLite stores in tensor ``index``."""
    node = _qviz_node(graph, it, index)
    return None if node is None else _quantized_value(graph, node)


def _dequantized(it, index: int) -> np.ndarray:
    d = it._get_tensor_details(index, 0)
    q = _scale(d)
    v = it.get_tensor(index)
    return v.astype(np.float32) if q is None else ((v.astype(np.float64) - q[1]) * q[0]).astype(np.float32)


def _per_tensor(it, graph: Graph, inputs: list[np.ndarray]) -> list[TensorAgreement]:
    """Each integer tensor the device computed, against the same tensor in qviz's graph:
    end to end (both from the model input), and locally (qviz's op given the
    device's own inputs, so what happened upstream does not count).

    TFLite names a fused op's output after the TF ops it fused (``a;b;c``, the
    last op first); the quantized value qviz computes is the FakeQuant after it.
    """
    found, ops = [], it._get_ops_details()
    # a tensor no op makes and the model is not fed is a constant (weights, a bias the
    # converter named "tfl.pseudo_qconst", reduction axes): the same in both, never fed
    made = {i for op in ops for i in op["outputs"]} | {d["index"] for d in it.get_input_details()}
    for op in ops:
        if op["op_name"] in ("QUANTIZE", "DEQUANTIZE"):
            continue
        for idx in op["outputs"]:
            q = _scale(it._get_tensor_details(idx, 0))
            tensor = _qviz_tensor(graph, it, idx) if q is not None else None
            if tensor is None:
                continue
            feeds = {}
            for i in op["inputs"]:
                if i < 0 or i not in made:
                    continue
                node = _qviz_node(graph, it, i)
                if node is not None and graph.is_constant(node.output(0)):
                    continue   # weights, bias, reduction axes: the same in both
                t = None if node is None else _quantized_value(graph, node)
                if t is None:
                    feeds = None   # an input qviz cannot place: compare end to end only
                    break
                if t != tensor:
                    feeds[t] = _dequantized(it, i)
            found.append((graph.producer(tensor).layer, tensor, idx, q, feeds))
    if not found:
        return []
    chained = runtime.run(graph, *inputs, fetches=[t for _, t, _, _, _ in found])
    locals_ = _local_runs(graph, [(tensor, feeds) for _, tensor, _, _, feeds in found if feeds])
    rows = []
    for (layer, tensor, idx, (scale, zp), feeds), want in zip(found, chained):
        got = (it.get_tensor(idx).astype(np.float64) - zp) * scale
        if got.shape != want.shape:
            continue
        local, fed = want, feeds is not None
        if feeds:
            local = locals_.pop(0)
            if local is None:   # an input qviz cannot be fed there: end to end only
                local, fed = want, False
        lsb = np.abs(got - local) / scale
        chain = np.abs(got - want) / scale
        rows.append(TensorAgreement(layer, tensor, float(lsb.max()), float(np.mean(lsb <= _ONE_LSB)),
                                    float(np.mean(chain <= _ONE_LSB)), fed))
    return rows


def _local_runs(graph: Graph, wanted: list[tuple[str, dict]]) -> list[np.ndarray | None]:
    """qviz's value of each ``(tensor, feeds)``, computed from ``feeds`` (the device's own
    inputs of that op), in order; None where qviz cannot be fed there.

    One pruned run serves every group of them that feed no tensor another computes
    (and share no fed tensor): pruning costs ~0.4 s whatever the part kept, so one run
    per op made MobileNetV2's check take 24 s; its 65 ops need 3 runs, and it takes 9 s.
    """
    groups: list[tuple[dict, set, list[int]]] = []   # (feeds, tensors computed, members)
    for i, (tensor, feeds) in enumerate(wanted):
        computed = _computed_from(graph, tensor, feeds)
        if computed is None:
            continue
        for group_feeds, group_computed, members in groups:
            if (group_computed.isdisjoint(feeds) and computed.isdisjoint(group_feeds)
                    and all(group_feeds[t] is v for t, v in feeds.items() if t in group_feeds)):
                group_feeds.update(feeds)
                group_computed.update(computed)
                members.append(i)
                break
        else:
            groups.append((dict(feeds), set(computed), [i]))
    out: list[np.ndarray | None] = [None] * len(wanted)
    for group_feeds, _, members in groups:
        fetches = list(dict.fromkeys(wanted[i][0] for i in members))
        try:
            values = dict(zip(fetches, run_from(graph, group_feeds, fetches)))
        except RunError:   # (a control input the walk does not follow: then each alone; None if it fails)
            values = None
        for i in members:
            out[i] = values[wanted[i][0]] if values is not None else _run_alone(graph, *wanted[i])
    return out


def _run_alone(graph: Graph, tensor: str, feeds: dict) -> np.ndarray | None:
    try:
        return run_from(graph, feeds, [tensor])[0]
    except RunError:
        return None


def _computed_from(graph: Graph, tensor: str, feeds: dict) -> set[str] | None:
    """The tensors a run computes to get ``tensor`` from ``feeds`` (with ``tensor``; constants
    aside), or None if it needs a graph input not fed."""
    computed, todo = set(), [tensor]
    while todo:
        t = todo.pop()
        if t in computed or t in feeds or graph.is_constant(t):
            continue
        node = graph.producer(t)
        if t in graph.inputs or not node.inputs:
            return None
        computed.add(t)
        todo.extend(node.inputs)
    return computed


def compare_with_device(model: bytes, graph: Graph, float_graph: Graph, inputs, *,
                        per_layer: bool = False, per_layer_examples: int = 8) -> DeviceReport:
    """Run the ``.tflite`` ``model`` and qviz's ``graph`` on ``inputs``; compare both
    with ``float_graph`` and with each other.

    Args:
        inputs: one array per graph input, or a bare array for a one-input graph.
        per_layer: also compare every integer tensor (on the first
            ``per_layer_examples`` examples; it keeps every tensor in memory).
    """
    inputs = as_input_list(graph, inputs)
    it = _interpreter(model, preserve=False)
    device = _run_device(it, graph, inputs)
    sim = runtime.run(graph, *inputs)
    ref = runtime.run(float_graph, *inputs)
    scale = _output_scale(graph, graph.outputs[0])
    diffs = [np.abs(np.asarray(d, np.float64) - np.asarray(s, np.float64)) for d, s in zip(device, sim)]
    max_lsb = within = None
    if scale:
        lsb = np.concatenate([d.ravel() for d in diffs]) / scale
        max_lsb, within = float(lsb.max()), float(np.mean(lsb <= _ONE_LSB))
    agreement = None
    if sim[0].ndim == 2 and sim[0].shape[-1] > 1:
        agreement = float(np.mean(np.argmax(sim[0], -1) == np.argmax(device[0], -1)))
    counts: dict[str, int] = {}
    float_ops, integer_ops = [], []
    for op in it._get_ops_details():
        counts[op["op_name"]] = counts.get(op["op_name"], 0) + 1
        outs = [it._get_tensor_details(i, 0) for i in op["outputs"]]
        if op["op_name"] in ("QUANTIZE", "DEQUANTIZE"):
            continue
        where = float_ops if any(o["dtype"] == np.float32 for o in outs) else integer_ops
        where.append(f"{op['op_name']} {outs[0]['name'].split(';')[0]}")
    layers: tuple[TensorAgreement, ...] = ()
    if per_layer:
        small = [x[:per_layer_examples] for x in inputs]
        it2 = _interpreter(model, preserve=True)
        _run_device(it2, graph, small)
        layers = tuple(_per_tensor(it2, graph, small))
    return DeviceReport(
        examples=len(inputs[0]), size_bytes=len(model), ops=counts, output_lsb=scale,
        max_lsb=max_lsb, within_1_lsb=within, max_abs=float(max(d.max() for d in diffs)) if diffs else 0.0,
        agreement=agreement,
        sqnr_qviz_db=min(sqnr_db(s, r) for s, r in zip(sim, ref)),
        sqnr_device_db=min(sqnr_db(d, r) for d, r in zip(device, ref)),
        layers=layers, float_ops=tuple(float_ops), integer_ops=tuple(integer_ops), warning=constant_output(ref))


def export_tflite(graph: Graph, recipe: Recipe, path, *, int8_io: bool = False, calibration=None,
                  verification: Sequence[np.ndarray] | np.ndarray | None = None,
                  per_layer: bool = True) -> TFLiteExport:
    """Apply ``recipe`` to ``graph``, convert the result to ``.tflite`` at ``path``,
    and check the file against qviz's simulation on ``verification`` data.

    What TFLite will not run as asked is refused before converting, with the
    reasons of :func:`~qviz.analysis.deployability.deployability`.

    Raises:
        RecipeError: the recipe does not fit the graph.
        TFLiteError: the recipe asks for what TFLite cannot run, or the
            converter or interpreter refused the model.
        ExportError: ``path`` is not a writable ``.tflite`` path.
    """
    path = Path(path)
    if path.suffix.lower() != ".tflite":
        raise ExportError(f"{path}: a TensorFlow Lite model is written as .tflite")
    result = apply(graph, recipe, calibration=calibration, report=False)
    check = deployability(graph, recipe, result, int8_io=int8_io)
    if check.refused:   # (the layers in the model's order, by reason: it was 50 names in a paragraph)
        raise TFLiteError("TFLite cannot run this recipe: "
                          + "; ".join(group_by_reason([(f.layer, f.message) for f in check.refused])))
    if int8_io and not check.quantized_io:
        raise TFLiteError("--int8-io needs the graph's input and output quantized: quantize the first "
                          "and last layers' activations in the recipe")
    model = convert(result.graph, int8_io=int8_io)
    try:
        path.write_bytes(model)
    except OSError as exc:
        raise ExportError(f"{path}: cannot write: {exc.strerror or exc}") from None
    if verification is None:
        verification = noise_inputs(graph, count=VERIFY_EXAMPLES, seed=1)
    device = compare_with_device(model, result.graph, graph, verification, per_layer=per_layer)
    return TFLiteExport(path, check, device, result)
