"""Where fake quantization goes: the tensors TensorFlow Lite runs in integer.

The rule is the device's. A *unit* the recipe selects runs in integer, so
what it reads and what it writes are quantized:

* a conv/dense layer (``Conv2D``, ``DepthwiseConv2dNative``, ``MatMul``):
  its weights (``weights_quant``); each activation input not already on a
  grid (``input_quant``: the graph input before the first conv, or the output
  of a layer left float); its output after the activation TFLite fuses into it
  (``Relu``, ``Relu6``), or after the bias / batch norm when there is none
  (``act_quant``);
* a bypass ``Add`` of two activations: its inputs not already on a grid
  (``bypass_quant``) and its output, after a fused ``Relu``/``Relu6``
  (``add_quant``). It is a unit of its own: selecting a conv does not
  quantize the ``Add`` after it. (TF contrib's ``bypass_add`` rule did, so
  quantizing one layer leaked into layers nobody selected.)

And where the device rounds whatever the recipe says about that op:

* ``Mean`` and ``AvgPool`` of a quantized tensor: TFLite keeps the input's
  scale and rounds the result onto it (``pool_quant``, with the input's range);
* ``Softmax`` and ``Sigmoid`` of an 8-bit tensor have an int8 output of fixed
  scale 1/256, ``Tanh`` 1/128 (``softmax_quant``, ``sigmoid_quant``,
  ``tanh_quant``);
* the ops in :data:`SAME_GRID_OPS` (``MaxPool``, ``Reshape``, ``Pad``…) keep
  their input's grid: nothing to round, and what reads them reads a
  quantized tensor.

Nothing goes between a conv or ``Add`` and the ``Relu``/``Relu6`` after it:
TFLite fuses the two and rounds once.

>>> import qviz
>>> from qviz.samples import sample_path
>>> from qviz.passes import LayerBits, fold_batch_norms
>>> g = fold_batch_norms(qviz.load(sample_path("resnet_block"))).graph
>>> points, _ = quant_points(g, QuantizeConfig({"conv2": LayerBits(8, 8)}))
>>> [(p.name, p.layer) for p in points]    # conv2 alone: not the Add after it
[('weights_quant', 'conv2'), ('act_quant', 'conv2'), ('input_quant', 'conv2')]
>>> quantizable_units(g)
('stem_conv', 'conv1', 'conv2', 'add1', 'conv3', 'add2', 'logits')
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir import Graph, GraphError, Node
from ..ir.ops import ADD_OPS, FAKE_QUANT_OPS, FUSED_ACTIVATIONS, LAYER_OPS
from ..matcher import find_matches
from ..patterns.builtin import BUILTIN
from .constants import constant_value
from .quant_config import LayerBits, QuantizeConfig
from .result import Skipped

__all__ = ["QuantPoint", "quant_points", "quantizable_layers", "quantizable_units", "quantized_in_graph",
           "quantized_note", "rounded_from", "bypass_adds",
           "SAME_GRID_OPS", "REGRID_OPS", "FIXED_RANGE_OPS", "grid_source"]

#: Ops whose int8 output keeps the input's scale and zero point and adds no rounding.
SAME_GRID_OPS = frozenset({"MaxPool", "Reshape", "Squeeze", "ExpandDims", "Identity", "Transpose", "Pad",
                           "StridedSlice", "Slice"})


def grid_source(graph: Graph, tensor: str):
    """The op whose output ``tensor`` is, on the device, the same integers as: its
    producer, followed back through :data:`SAME_GRID_OPS` (a fake-quant if ``tensor``
    is on a quantized grid)."""
    node = graph.producer(tensor)
    while node.op in SAME_GRID_OPS and node.inputs:
        node = graph.producer(node.inputs[0])
    return node


#: Ops whose int8 output keeps the input's scale but is rounded onto it.
REGRID_OPS = frozenset({"Mean", "AvgPool"})
#: Ops whose 8-bit output TFLite stores at a fixed range (scale 1/256 or 1/128).
FIXED_RANGE_OPS = {"Softmax": (0.0, 255 / 256), "Sigmoid": (0.0, 255 / 256), "Tanh": (-1.0, 127 / 128)}
_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})


@dataclass(frozen=True)
class QuantPoint:
    """One tensor to fake-quantize, found by :func:`quant_points`."""

    tensor: str
    consumers: tuple[str, ...]   # the nodes that will read the quantized tensor
    kind: str                    # weights | input | activation | bypass_input | bypass_output | requantize | fixed
    layer: str                   # the unit whose choice put it here (whose bits apply)
    owner: str                   # the layer the new nodes belong to
    name: str                    # weights_quant | input_quant | act_quant | bypass_quant | add_quant | pool_quant …
    bits: int
    layer_op: Node | None = None  # for weights: the op that reads them
    range_of: str | None = None   # requantize: the tensor whose range (grid) it reuses
    fixed_range: tuple[float, float] | None = None   # fixed: the range TFLite uses


def _depends_on_inputs(graph: Graph) -> set[str]:
    """Names of the nodes whose value depends on a graph input."""
    todo = [graph.producer(t) for t in graph.inputs]
    seen = {n.name for n in todo}
    while todo:
        for c in graph.consumers(todo.pop()):
            if c.name not in seen:
                seen.add(c.name)
                todo.append(c)
    return seen


def bypass_adds(graph: Graph) -> tuple[Node, ...]:
    """``Add``/``AddV2`` ops adding two activations (a residual connection), not a
    bias or a batch norm's shift (one side of those is made of constants)."""
    live = _depends_on_inputs(graph)
    return tuple(n for n in graph.nodes if n.op in ADD_OPS and len(n.inputs) == 2
                 and all(graph.producer(t).name in live for t in n.inputs))


def quantizable_layers(graph: Graph) -> tuple[str, ...]:
    """Layers holding a Conv2D, DepthwiseConv2dNative or MatMul op, in graph order,
    that the graph does not fake-quantize already (:func:`quantized_in_graph`);
    computed once per graph: every draw of the app asks."""
    def compute():
        found = dict.fromkeys(n.layer for n in graph.nodes if n.op in LAYER_OPS)
        done = quantized_in_graph(graph)
        return tuple(layer for layer in graph.layers if layer in found and layer not in done)

    return graph.memo("quant_points.layers", compute)


def quantizable_units(graph: Graph) -> tuple[str, ...]:
    """Layers a recipe can quantize: :func:`quantizable_layers` and the layers of
    :func:`bypass_adds` not quantized already, in graph order (computed once per graph)."""
    def compute():
        done = quantized_in_graph(graph)
        found = set(quantizable_layers(graph)) | {n.layer for n in bypass_adds(graph) if n.layer not in done}
        return tuple(layer for layer in graph.layers if layer in found)

    return graph.memo("quant_points.units", compute)


def quantized_in_graph(graph: Graph) -> dict[str, LayerBits]:
    """The conv/dense and bypass-Add layers the graph fake-quantizes already (a
    graph qviz wrote, or a quantization-aware-trained one), with the bits of
    its FakeQuant ops (``None``: that part is float), in graph order.

    A conv/dense layer counts if its weights are quantized (its output alone
    can be: the next layer's input), an ``Add`` if its output is. qviz
    quantizes a tensor once, so these are not quantizable units: a recipe
    naming one is refused, and the device check counts them as quantized.

    >>> import qviz
    >>> from qviz.passes import Recipe
    >>> from qviz.samples import sample_path
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> quantized_in_graph(g)
    {}
    >>> q = qviz.apply(g, Recipe(quantize_layers={"conv2": LayerBits(4, 8)}), report=False).graph
    >>> quantized_in_graph(q)
    {'conv2': LayerBits(weight_bits=4, activation_bits=8)}
    >>> "conv2" in quantizable_layers(q), "conv1" in quantizable_layers(q)
    (False, True)
    """
    def compute():
        if not any(n.op in FAKE_QUANT_OPS for n in graph.nodes):
            return {}
        candidates = {n.layer for n in graph.nodes if n.op in LAYER_OPS} | {n.layer for n in bypass_adds(graph)}
        plan = _plan(graph, QuantizeConfig({layer: LayerBits(8, 8) for layer in candidates}))
        found = {layer: LayerBits(parts.get("weights"), parts.get("activation", parts.get("bypass_output")))
                 for layer, parts in plan.in_graph.items() if _whole_unit(parts)}
        return {layer: found[layer] for layer in graph.layers if layer in found}

    return graph.memo("quant_points.in_graph", compute)


def _is_float(graph: Graph, tensor: str) -> bool:
    node = graph.producer(tensor)
    dtype = node.attrs.get("T", node.attrs.get("dtype"))
    return dtype is None or str(dtype) in _FLOATS


def _read_by_fake_quant(graph: Graph, tensor: str) -> bool:
    return any(c.op in FAKE_QUANT_OPS for c in graph.consumers(tensor))


def quantized_note(graph: Graph, names: int = 3, why: bool = True) -> str | None:
    """One line saying which layers ``graph`` fake-quantizes already, for the
    command line and the page (``why``: and what qviz does about it); None if it
    quantizes none.

    >>> import qviz
    >>> from qviz.passes import Recipe
    >>> from qviz.samples import sample_path
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> q = qviz.apply(g, Recipe.default(g), report=False).graph
    >>> print(quantized_note(q))
    fake-quantized already: 4 layers (conv1 w8a8, conv2 w8a8, fc1 w8a8 and 1 more): qviz does not quantize them again, and compares what it changes with the model as given, not with a float one
    """
    found = quantized_in_graph(graph)
    if not found:
        return None
    shown = ", ".join(f"{layer} {bits.short}" for layer, bits in list(found.items())[:names])
    more = f" and {len(found) - names} more" if len(found) > names else ""
    return (f"fake-quantized already: {len(found)} layer{'s' if len(found) > 1 else ''} ({shown}{more})"
            + (": qviz does not quantize them again, and compares what it changes with the model as given, "
               "not with a float one" if why else ""))


def _bits_in_graph(graph: Graph, tensor: str) -> int | None:
    """The bits of the FakeQuant reading ``tensor``, or producing it (possibly through
    the reshapes around per-channel depthwise weights): the graph quantizes it
    already (a pass ran on it before). None if there is none."""
    reader = next((c for c in graph.consumers(tensor) if c.op in FAKE_QUANT_OPS), None)
    return int(reader.attrs.get("num_bits", 8)) if reader is not None else rounded_from(graph, tensor)[1]


_RESHAPES = ("Reshape", "Transpose", "Identity")


def rounded_from(graph: Graph, tensor: str) -> tuple[str, int | None]:
    """What a FakeQuant producing ``tensor`` (through the reshapes around per-channel
    depthwise weights) rounds, and its bits; ``(tensor, None)`` if none does. For a
    layer's weights: the constant they are stored as, and at how many bits."""
    node = graph.producer(tensor)
    while node.op in _RESHAPES and node.inputs:
        node = graph.producer(node.inputs[0])
    if node.op not in FAKE_QUANT_OPS:
        return tensor, None
    source = node.inputs[0]
    while graph.producer(source).op in _RESHAPES and graph.producer(source).inputs:
        source = graph.producer(source).inputs[0]
    return source, int(node.attrs.get("num_bits", 8))


class _Planner:
    """Collects the points in order; knows which tensors are on a grid already."""

    def __init__(self, graph: Graph, config: QuantizeConfig):
        self.graph, self.config = graph, config
        self.points: dict[str, QuantPoint] = {}
        self.grid: dict[str, str] = {}      # tensor → the quantized tensor whose grid it is on
        self.skipped: list[Skipped] = []
        self.in_graph: dict[str, dict[str, int]] = {}   # layer → {kind: bits} the graph quantizes already

    def source(self, tensor: str, reader: str | None = None) -> str | None:
        """The quantized tensor whose grid ``tensor`` is on (for ``reader``), or ``None``."""
        p = self.points.get(tensor)
        if p is not None and p.kind != "weights" and (p.kind not in ("input", "bypass_input")
                                                       or reader in p.consumers):
            return tensor
        if tensor in self.grid:
            return self.grid[tensor]
        node = self.graph.producer(tensor)
        if node.op in FAKE_QUANT_OPS or _read_by_fake_quant(self.graph, tensor):
            return tensor
        return None

    def bits_of(self, tensor: str) -> int:
        p = self.points.get(tensor)
        if p is not None:
            return p.bits
        node = self.graph.producer(tensor)
        fq = node if node.op in FAKE_QUANT_OPS else next(c for c in self.graph.consumers(tensor)
                                                          if c.op in FAKE_QUANT_OPS)
        return int(fq.attrs.get("num_bits", 8))

    def add(self, tensor, consumers, kind, layer, owner, name, bits, **extra) -> None:
        if bits is None or not _is_float(self.graph, tensor):
            return
        old = self.points.get(tensor)
        if old is not None:
            if old.kind == kind and kind in ("input", "bypass_input"):   # one more reader of the same rounding
                new = tuple(c for c in consumers if c not in old.consumers)
                self.points[tensor] = replace(old, consumers=old.consumers + new)
            return
        if kind not in ("input", "bypass_input"):
            found = _bits_in_graph(self.graph, tensor)
            if found is not None:
                if kind in ("weights", "activation", "bypass_output"):
                    self.in_graph.setdefault(layer, {})[kind] = found
                return
        self.points[tensor] = QuantPoint(tensor, tuple(consumers), kind, layer, owner, name, bits, **extra)

    def consumers(self, tensor: str) -> list[str]:
        return [c.name for c in self.graph.consumers(tensor)]


def quant_points(graph: Graph, config: QuantizeConfig) -> tuple[list[QuantPoint], list[Skipped]]:
    """Where :func:`~qviz.passes.quantize.quantize` would insert FakeQuant ops, and
    what it must skip (with why). See the module docstring for the rules."""
    unknown = [name for name in config.layers if name not in graph.layers]
    if unknown:
        raise GraphError(f"quantize: no layer named {unknown[0]!r} in the graph")
    plan = _plan(graph, config)
    for layer, parts in plan.in_graph.items():
        asked = config.layers[layer].activation_bits
        if _whole_unit(parts):
            reason = f"is fake-quantized in the graph already ({_parts(parts)})"
        elif parts["activation"] != asked:    # (the same bits: the same rounding, nothing lost)
            reason = (f"has its output fake-quantized in the graph already, at {parts['activation']} bits, "
                      f"not the {asked} asked")
        else:
            continue
        plan.skipped.append(Skipped(layer, "", f"layer {layer} {reason}: qviz quantizes a tensor once"))
    return list(plan.points.values()), plan.skipped


def _whole_unit(parts: dict[str, int]) -> bool:
    """Whether what the graph quantizes of a unit makes it quantized (its weights, or an
    Add's output), not only its output (which the next layer's input rounding can be)."""
    return "weights" in parts or "bypass_output" in parts


def _parts(parts: dict[str, int]) -> str:
    names = {"weights": "weights", "activation": "output", "bypass_output": "output"}
    return ", ".join(f"{names[kind]} at {bits} bits" for kind, bits in parts.items())


def _plan(graph: Graph, config: QuantizeConfig) -> _Planner:
    """The points for ``config``, and what the graph quantizes already (:attr:`_Planner.in_graph`)."""
    plan = _Planner(graph, config)
    layer_ops: dict[str, list[Node]] = {}
    add_ops: dict[str, list[Node]] = {}
    for node in graph.nodes:
        if node.op in LAYER_OPS and node.layer in config.layers:
            layer_ops.setdefault(node.layer, []).append(node)
    for node in bypass_adds(graph):
        if node.layer in config.layers:
            add_ops.setdefault(node.layer, []).append(node)
    for layer in config.layers:
        if layer not in layer_ops and layer not in add_ops:
            plan.skipped.append(Skipped(layer, "", f"layer {layer} has no {'/'.join(LAYER_OPS)} op "
                                                   "and no bypass Add to quantize"))
    _weights(plan, layer_ops)
    _layer_outputs(plan)
    for layer, adds in add_ops.items():
        bits = config.layers[layer].activation_bits
        for add in adds:
            out = add.output(0)
            readers = graph.consumers(out)
            if len(readers) == 1 and readers[0].op in FUSED_ACTIVATIONS:
                out = readers[0].output(0)
            plan.add(out, plan.consumers(out), "bypass_output", layer, graph.producer(out).layer,
                     "add_quant", bits)
    _inputs_and_follow_ups(plan, layer_ops, add_ops)
    return plan


def _weights(plan: _Planner, layer_ops: dict[str, list[Node]]) -> None:
    graph, config = plan.graph, plan.config
    for layer, ops in layer_ops.items():
        bits = config.layers[layer]
        for op in ops:
            if bits.weight_bits is None:
                continue
            if not graph.is_constant(op.inputs[1]):
                plan.skipped.append(Skipped(layer, op.name, f"the weights of {op.name} are not constant"))
                continue
            plan.add(op.inputs[1], [op.name], "weights", layer, graph.producer(op.inputs[1]).layer,
                     "weights_quant", bits.weight_bits, layer_op=op)


def _layer_outputs(plan: _Planner) -> None:
    """Each selected conv/dense layer's output, after its activation if it has one."""
    graph, config = plan.graph, plan.config
    for m in find_matches(BUILTIN["layer_activation"], graph):
        layer = m.get_op("layer").layer
        bits = config.layers.get(layer)
        if bits is None:
            continue
        root = m.root
        if root.op == "Identity" and root.output(0) in graph.outputs and not graph.consumers(root):
            root = graph.producer(root.inputs[0])  # quantize what the output Identity reads
        out = root.output(0)
        plan.add(out, plan.consumers(out), "activation", layer, root.layer, "act_quant", bits.activation_bits)


def _inputs_and_follow_ups(plan: _Planner, layer_ops, add_ops) -> None:
    """In graph order: the float inputs of selected units, and the roundings the
    device adds after ops that read a quantized tensor."""
    graph, config = plan.graph, plan.config
    unit_of = {op.name: (layer, "input", "input_quant", (op.inputs[0],))
               for layer, ops in layer_ops.items() for op in ops}
    unit_of.update({add.name: (layer, "bypass_input", "bypass_quant", add.inputs)
                    for layer, adds in add_ops.items() for add in adds})
    for node in graph.toposort().nodes:
        if node.name in unit_of:
            layer, kind, name, tensors = unit_of[node.name]
            bits = config.layers[layer].activation_bits
            for t in tensors:
                if plan.source(t, node.name) is None:
                    plan.add(t, [node.name], kind, layer, layer, name, bits)
            continue
        if not node.inputs or not _is_float(graph, node.output(0)):
            continue
        src = plan.source(node.inputs[0], node.name)
        if src is None:
            continue
        out = node.output(0)
        if node.op in SAME_GRID_OPS:
            plan.grid[out] = src
        elif node.op in REGRID_OPS:
            plan.add(out, plan.consumers(out), "requantize", node.layer, node.layer, "pool_quant",
                     plan.bits_of(src), range_of=src)
        elif node.op in FIXED_RANGE_OPS and plan.bits_of(src) == 8:
            plan.add(out, plan.consumers(out), "fixed", node.layer, node.layer, f"{node.op.lower()}_quant", 8,
                     fixed_range=FIXED_RANGE_OPS[node.op])


def fake_quant_range(graph: Graph, tensor: str) -> tuple[float, float]:
    """The (min, max) of the FakeQuant producing or reading ``tensor``."""
    node = graph.producer(tensor)
    fq = node if node.op in FAKE_QUANT_OPS else next(c for c in graph.consumers(tensor) if c.op in FAKE_QUANT_OPS)
    return float(constant_value(graph, fq.inputs[1])), float(constant_value(graph, fq.inputs[2]))
