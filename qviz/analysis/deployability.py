"""What TensorFlow Lite will run for a recipe, said before anything is converted.

For each quantized layer and part (weights, activations) at the bits asked,
one :class:`Fate`. The table is what TF 2.21's converter and interpreter do
with a fake-quantized graph, measured (``tests/exporters/test_tflite.py``
checks every width against the real converter):

============  =====================================================================
weights 2–3   stored as int4, on a grid TFLite derives itself: not qviz's (regridded)
weights 4     int4 at qviz's scale (honoured)
weights 5–7   re-rounded onto the int8 grid: an extra rounding qviz does not show (regridded)
weights 8     int8 (honoured)
weights 9–16  refused by the converter
acts 2–4      refused by the converter
acts 5–7      run at 8 bits: the device is more precise than qviz shows (widened)
acts 8        int8 (honoured)
acts 9–16     refused: TFLite has wider activations only as a whole-model int16x8 mode,
              which the converter gets wrong from a fake-quant graph (measured)
============  =====================================================================

>>> import qviz
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> check = deployability(g, qviz.Recipe.default(g, qviz.LayerBits(6, 8)))
>>> print(check.fates[0].message)
conv1 weights at 6 bits: TFLite re-rounds them onto its int8 grid, an extra rounding qviz does not simulate
>>> deployability(g, qviz.Recipe.default(g)).warnings
()
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..ir import Graph
from ..ir.ops import ADD_OPS, BATCH_NORM_OPS, FAKE_QUANT, FAKE_QUANT_OPS, LAYER_OPS, TFLITE_FUSED_CHAIN
from ..passes.quant_points import (FIXED_RANGE_OPS, REGRID_OPS, SAME_GRID_OPS, grid_source, quant_points,
                                   quantized_in_graph, rounded_from)
from ..passes.recipe import Recipe

__all__ = ["Fate", "DeployCheck", "deployability", "weight_fate", "activation_fate", "STATUSES", "group_by_reason"]

#: honoured: runs as simulated; widened / regridded: runs, but not as simulated;
#: refused: will not convert or load; dynamic: weight-only quantization, not simulated;
#: implicit: left float by the recipe, but TFLite quantizes it (between integer neighbours);
#: float: quantized by the recipe, but TFLite runs the op in float (an unfolded batch norm).
STATUSES = ("honoured", "widened", "regridded", "dynamic", "implicit", "float", "refused")
_CONCATS = frozenset({"ConcatV2", "Concat"})
_SHAPE_ONLY = frozenset({"Shape", "Size", "Rank"})   # read a tensor's shape, not its values


@dataclass(frozen=True)
class Fate:
    """What TFLite does with one part of one layer at the bits the recipe asks."""

    layer: str
    part: str        # "weights" | "activations"
    bits: int
    status: str      # one of STATUSES
    runs_as: str     # "int8", "int4", "float", "—" (refused)
    message: str


def weight_fate(layer: str, bits: int) -> Fate:
    if bits == 8:
        return Fate(layer, "weights", bits, "honoured", "int8", f"{layer} weights: int8")
    if bits == 4:
        return Fate(layer, "weights", bits, "honoured", "int4", f"{layer} weights: int4 at qviz's scale")
    if bits < 4:
        return Fate(layer, "weights", bits, "regridded", "int4",
                    f"{layer} weights at {bits} bits: TFLite stores them as int4 on a grid of its own, "
                    "not the one qviz simulates")
    if bits < 8:
        return Fate(layer, "weights", bits, "regridded", "int8",
                    f"{layer} weights at {bits} bits: TFLite re-rounds them onto its int8 grid, "
                    "an extra rounding qviz does not simulate")
    return Fate(layer, "weights", bits, "refused", "—",
                f"{layer} weights at {bits} bits: TFLite's converter refuses weights wider than 8 bits")


def activation_fate(layer: str, bits: int) -> Fate:
    if bits == 8:
        return Fate(layer, "activations", bits, "honoured", "int8", f"{layer} activations: int8")
    if bits < 5:
        return Fate(layer, "activations", bits, "refused", "—",
                    f"{layer} activations at {bits} bits: TFLite's converter refuses activations "
                    "narrower than 5 bits")
    if bits < 8:
        return Fate(layer, "activations", bits, "widened", "int8",
                    f"{layer} activations at {bits} bits: TFLite runs them at 8 bits, so the device "
                    "is more precise than qviz shows")
    return Fate(layer, "activations", bits, "refused", "—",
                f"{layer} activations at {bits} bits: TFLite runs wider activations only as a whole-model "
                "int16x8 mode, which TF's converter gets wrong from a fake-quant graph")


@dataclass(frozen=True)
class DeployCheck:
    """The fates of a recipe's layers, and what the quantized model will look like."""

    fates: tuple[Fate, ...]
    boundaries: int          # float↔integer conversions (QUANTIZE/DEQUANTIZE ops) the recipe creates
    weight_bytes: int        # the weights as TFLite stores them (int4 packed two per byte)
    float_weight_bytes: int  # the same weights in float32
    quantized_io: bool       # every graph input and output is quantized (int8 I/O is possible)
    notes: tuple[str, ...]   # other places the device does what qviz does not simulate

    @property
    def refused(self) -> tuple[Fate, ...]:
        return tuple(f for f in self.fates if f.status == "refused")

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every way the device will differ from the simulation, one line each."""
        return tuple(f.message for f in self.fates if f.status != "honoured") + self.notes

    def grouped_warnings(self, names: int = 4) -> tuple[str, ...]:
        """:attr:`warnings` with the layers that differ for the same reason on one line, in the
        model's order, the first ``names`` of them named (52 unfolded batch norms were 52 lines).

        >>> import qviz
        >>> from qviz.samples import sample_path
        >>> g = qviz.load(sample_path("lenet_digits"))
        >>> for line in deployability(g, qviz.Recipe.default(g, qviz.LayerBits(6, 8))).grouped_warnings(names=2):
        ...     print(line)
        conv1, conv2 and 2 more: weights at 6 bits: TFLite re-rounds them onto its int8 grid, an extra rounding qviz does not simulate
        """
        return group_by_reason([(f.layer, f.message) for f in self.fates if f.status != "honoured"], names) \
            + self.notes

    def summary(self) -> str:
        honoured = sum(f.status == "honoured" for f in self.fates)
        return (f"TFLite: {honoured} of {len(self.fates)} quantized parts run as simulated, "
                f"{len(self.warnings)} warning(s); {self.boundaries} float↔int conversion(s); weights "
                f"{self.weight_bytes / 1024:.1f} KB (float {self.float_weight_bytes / 1024:.1f} KB)")


def group_by_reason(messages, names: int = 4) -> tuple[str, ...]:
    """``(layer, "layer …reason")`` pairs as one line per reason, its layers in order, the
    first ``names`` named and the rest counted; the reasons in order of first appearance.

    >>> group_by_reason([("a", "a is slow"), ("b", "b is slow"), ("c", "c is odd")])
    ('a, b: is slow', 'c is odd')
    >>> group_by_reason([("a", "a: runs in float"), ("b", "b: runs in float"), ("c", "c: runs in float")], names=1)
    ('a and 2 more: runs in float',)
    >>> group_by_reason([("a", "a: runs in float"), ("z", "something else")])   # (it read "a a: runs…")
    ('a: runs in float', 'z something else')
    """
    by_reason: dict[str, list[str]] = {}
    for layer, message in messages:
        # the reason after the layer's name, its separator kept (": …" or " …")
        named = message.startswith((f"{layer}: ", f"{layer} "))
        by_reason.setdefault(message[len(layer):] if named else " " + message, []).append(layer)
    lines = []
    for reason, layers in by_reason.items():
        if len(layers) == 1:
            lines.append(f"{layers[0]}{reason}")
            continue
        shown = ", ".join(layers[:names]) + (f" and {len(layers) - names} more" if len(layers) > names else "")
        lines.append(f"{shown}: {reason.lstrip(': ')}")
    return tuple(lines)


def deployability(graph: Graph, recipe: Recipe, result=None, *, int8_io: bool = False) -> DeployCheck:
    """What TFLite will run for ``recipe`` on ``graph`` (``result``: ``qviz.apply``'s, if made already;
    ``int8_io``: the model will take and give int8, so its inputs and outputs need no conversion).

    No TensorFlow is needed unless ``result`` is not given (then the recipe is applied).
    """
    if result is None:
        from ..pipeline import apply

        result = apply(graph, recipe, report=False)
    folded = result.folded.graph
    config = recipe.quantize_config(folded)
    # what the model fake-quantizes already (a graph qviz wrote, a QAT model) runs as quantized as the recipe's
    config = replace(config, layers={**quantized_in_graph(folded), **config.layers})
    points, _ = quant_points(folded, config)
    fates: list[Fate] = []
    implicit = _implicitly_quantized(result.graph, config)
    integer_ops = _integer_layer_ops(result.graph, config, {n.name for n in implicit})
    for layer in folded.layers:
        bits = config.layers.get(layer)
        if bits is None:
            continue
        ops = [n for n in folded.layer_nodes(layer) if n.op in LAYER_OPS]
        has_weights = bool(ops)
        if has_weights and bits.activation_bits is not None and any(n.name not in integer_ops for n in ops):
            # the layer runs in float, but its output is still quantized at those bits (a
            # QUANTIZE op): a width the converter refuses is refused here too
            act = activation_fate(layer, bits.activation_bits)
            fates.append(act if act.status == "refused" else Fate(
                layer, "activations", bits.activation_bits, "float", "float",
                _why_float(result.graph, next(n for n in ops if n.name not in integer_ops))))
            continue
        if has_weights and bits.weight_bits is not None:
            fates.append(weight_fate(layer, bits.weight_bits))
        if bits.activation_bits is not None:
            fates.append(activation_fate(layer, bits.activation_bits))
        elif has_weights and bits.weight_bits is not None:
            fates.append(Fate(layer, "activations", 0, "dynamic", "float",
                              f"{layer}: weights quantized but activations float: TFLite does not run "
                              "that as qviz simulates (it becomes a float or dynamic-range kernel)"))
    for p in points:   # roundings qviz adds for the device (pools), at the bits of what they follow
        if p.kind == "requantize" and p.bits != 8:
            fates.append(activation_fate(p.layer, p.bits))
    for layer in dict.fromkeys(n.layer for n in implicit):
        fates.append(Fate(layer, "weights", 8, "implicit", "int8",
                          f"{layer} is left float, but between integer neighbours TFLite runs it in int8, "
                          "with weights it quantizes itself: qviz does not simulate that"))
    io = _quantized_io(result.graph)
    boundaries = _boundaries(result.graph, integer_ops)
    if int8_io and io:
        boundaries -= len(result.graph.inputs) + len(result.graph.outputs)
    # a layer left in float by the device (an unfolded batch norm after it) keeps float32 weights
    in_float = {n.name for n in folded.nodes if n.op in LAYER_OPS and n.name not in integer_ops
                and n.layer in config.layers and config.layers[n.layer].activation_bits is not None}
    return DeployCheck(tuple(fates), boundaries, *_weight_bytes(folded, points, in_float), io,
                       tuple(_notes(result.graph)))


def _int_tensors(graph: Graph) -> set[str]:
    """Activation tensors the device holds as integers: FakeQuant outputs, carried through same-grid ops."""
    found = {n.output(0) for n in graph.nodes if n.op == FAKE_QUANT
             and not graph.is_constant(n.inputs[0])}
    for node in graph.toposort().nodes:
        if node.op in SAME_GRID_OPS and node.inputs and node.inputs[0] in found:
            found.add(node.output(0))
    return found


def _implicitly_quantized(graph: Graph, config) -> list:
    """Conv/dense ops the recipe leaves float whose input is an integer tensor and
    whose output (through its bias, activation and same-grid ops) reaches a
    quantizer: TF's converter gives them int8 weights of its own and runs them in integer."""
    found = []
    for node in graph.nodes:
        if node.op not in LAYER_OPS or node.layer in config.layers or not _is_integer_input(graph, node.inputs[0]):
            continue
        if _chain_to_quantizer(graph, node, TFLITE_FUSED_CHAIN | SAME_GRID_OPS):
            found.append(node)
    return found


def _chain_to_quantizer(graph: Graph, node, through, alone: bool = False) -> bool:
    """Whether ``node``'s output reaches a FakeQuant through single-reader ops in ``through``
    (``alone``: a tensor the FakeQuants are the only readers of)."""
    t = node.output(0)
    while True:
        readers = [c for c in graph.consumers(t) if c.op not in _SHAPE_ONLY]
        quantizers = [c for c in readers if c.op == FAKE_QUANT]
        if quantizers and (not alone or len(quantizers) == len(readers)):
            return True
        if len(readers) != 1 or readers[0].op not in through:
            return False
        t = readers[0].output(0)


def _integer_layer_ops(graph: Graph, config, implicit: set[str]) -> set[str]:
    """Conv/dense ops TFLite runs in integer: selected (or quantized by the converter),
    with an integer input, and an output that reaches its quantizer through what
    TFLite fuses into the op (bias, ReLU). An unfolded batch norm in between
    leaves the op in float."""
    return {n.name for n in graph.nodes if n.op in LAYER_OPS
            and (n.layer in config.layers or n.name in implicit)
            and _is_integer_input(graph, n.inputs[0])
            and (n.name in implicit or _chain_to_quantizer(graph, n, TFLITE_FUSED_CHAIN))}


def _why_float(graph: Graph, op) -> str:
    t, seen = op.output(0), []
    for _ in range(8):
        readers = graph.consumers(t)
        if len(readers) != 1:
            break
        seen.append(readers[0].op)
        t = readers[0].output(0)
    if any(o == "Mul" or o in BATCH_NORM_OPS or o in ADD_OPS for o in seen):
        return (f"{op.layer}: its batch norm is not folded, so TFLite runs the layer in float (float32 weights, "
                "QUANTIZE/DEQUANTIZE around it): fold the batch norm to run it in int8")
    return (f"{op.layer}: an op TFLite cannot fuse sits between the layer and its quantizer, so TFLite runs "
            "the layer in float")


def _boundaries(graph: Graph, integer_ops: set[str]) -> int:
    """QUANTIZE ops (a float tensor into a FakeQuant that starts an integer run)
    plus DEQUANTIZE ops (an integer tensor read by an op that runs in float)."""
    ints = _int_tensors(graph)
    quantize = {n.inputs[0] for n in graph.nodes if n.op == FAKE_QUANT and n.output(0) in ints
                and _starts_integer_run(graph, n, integer_ops)}
    integer_readers = set(LAYER_OPS) | SAME_GRID_OPS | REGRID_OPS | set(FIXED_RANGE_OPS) | ADD_OPS \
        | FAKE_QUANT_OPS | _CONCATS | _SHAPE_ONLY
    # a layer, or an Add, whose output is not quantized runs in float: its integer inputs are dequantized
    dequantize = {t for t in ints for c in graph.consumers(t) if c.op not in integer_readers
                  or (c.op in LAYER_OPS and c.name not in integer_ops)
                  or (c.op in ADD_OPS and not _add_in_integer(graph, c))}
    dequantize |= {t for t in graph.outputs if t in ints or _through_identity(graph, t) in ints}
    return len(quantize) + len(dequantize)


def _through_identity(graph: Graph, tensor: str) -> str:
    node = graph.producer(tensor)
    while node.op == "Identity" and node.inputs:
        tensor = node.inputs[0]
        node = graph.producer(tensor)
    return tensor


def _starts_integer_run(graph: Graph, fq, integer_ops: set[str]) -> bool:
    """A FakeQuant on a tensor computed in float: the device converts there (QUANTIZE)."""
    node = graph.producer(fq.inputs[0])
    # what TFLite computes in integer and fuses: a conv/dense chain (BiasAdd, Relu…) or an Add of integers
    while (node.op in TFLITE_FUSED_CHAIN or node.op in SAME_GRID_OPS) and node.inputs:
        node = graph.producer(node.inputs[0])
    if node.op in LAYER_OPS:
        return node.name not in integer_ops
    if node.op in ADD_OPS:
        return not _add_in_integer(graph, node)
    if node.op in REGRID_OPS or node.op in FIXED_RANGE_OPS:
        return not all(_is_integer_input(graph, t) for t in node.inputs if not graph.is_constant(t))
    return True


def _add_in_integer(graph: Graph, add) -> bool:
    """Whether TFLite runs ``add`` in integer: integer inputs, and an output (through what it
    fuses, a ReLU) read by FakeQuants alone. Read by a float op too, the output stays float:
    the Add runs in float, its inputs dequantized, and each FakeQuant after it is a QUANTIZE."""
    return (all(_is_integer_input(graph, t) for t in add.inputs if not graph.is_constant(t))
            and _chain_to_quantizer(graph, add, TFLITE_FUSED_CHAIN | SAME_GRID_OPS, alone=True))


def _is_integer_input(graph: Graph, tensor: str) -> bool:
    return grid_source(graph, tensor).op == FAKE_QUANT


def _const_size(graph: Graph, tensor: str) -> int | None:
    """Elements of a constant read through Identity/Cast ops, from the Const itself (no TensorFlow)."""
    node = graph.producer(tensor)
    while node.op in ("Identity", "Cast") and node.inputs:
        node = graph.producer(node.inputs[0])
    value = node.attrs.get("value") if node.op == "Const" else None
    return None if value is None else int(np.size(value))


def _weight_bytes(folded: Graph, points, in_float: set[str]) -> tuple[int, int]:
    """(bytes TFLite stores the conv/dense weights in, the same in float32); the ops in
    ``in_float`` run in float, with float32 weights, whatever their quantizers say."""
    quantized = {p.tensor: p.bits for p in points if p.kind == "weights"}
    stored = floats = 0
    for node in folded.nodes:
        if node.op not in LAYER_OPS:
            continue
        weights, bits = rounded_from(folded, node.inputs[1])   # (quantized in the graph already)
        bits = None if node.name in in_float else quantized.get(node.inputs[1], bits)
        size = _const_size(folded, weights)
        if size is None:
            continue
        floats += 4 * size
        stored += 4 * size if bits is None or bits > 8 else (size + 1) // 2 if bits <= 4 else size
    return stored, floats


def _quantized_io(graph: Graph) -> bool:
    ints = _int_tensors(graph)
    inputs_ok = all(any(c.op == FAKE_QUANT for c in graph.consumers(t)) for t in graph.inputs)
    return inputs_ok and all(_through_identity(graph, t) in ints for t in graph.outputs)


def _notes(graph: Graph) -> list[str]:
    ints = _int_tensors(graph)
    notes = []
    for node in graph.nodes:
        if node.op in _CONCATS and any(t in ints for t in node.inputs):
            notes.append(f"{node.layer}: TFLite gives a Concat's inputs one scale and requantizes them; "
                         "qviz does not simulate that rounding")
    return notes
