"""What a recipe means for a Keras model: which layers absorb which batch norm,
the bits of each layer's weights, and which layer outputs are fake-quantized
from which starting range. No TensorFlow here; :mod:`qviz.qat.build` makes the
Keras model.

The plan is read off what :func:`qviz.apply` does to the frozen graph, so the
QAT model starts exactly where post-training quantization ends: same folds,
same FakeQuant places (the graph input's too), same calibrated ranges. Only
the biases differ: the QAT model trains them in float and TFLite's converter
puts them on its int32 grid afterwards (``qviz.apply`` with the recipe option
``int32_bias: false`` is the exact starting point).

>>> import qviz
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> plan = qat_plan(g, qviz.Recipe.default(g, qviz.LayerBits(4, 4)))
>>> [(l.layer, l.bn_layer, l.weight_bits) for l in plan.layers]
[('conv1', 'bn1', 4), ('conv2', 'bn2', 4), ('fc1', 'bn3', 4), ('logits', None, 4)]
>>> [(o.layer, o.bits) for o in plan.outputs]
[('image', 4), ('relu1', 4), ('relu2', 4), ('relu3', 4), ('logits', 4)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..errors import QvizError
from ..metrics import layer_outputs
from ..ir import Graph
from ..ir.ops import FAKE_QUANT_OPS, LAYER_OPS
from ..passes import Recipe, fold_candidates
from ..passes.constants import constant_value
from ..passes.quantize import quant_points
from ..pipeline import apply

__all__ = ["QATPlan", "LayerPlan", "OutputQuant", "QATPlanError", "qat_plan"]


class QATPlanError(QvizError, ValueError):
    """The recipe cannot be carried over to the Keras model; the message says where."""


@dataclass(frozen=True)
class LayerPlan:
    """A conv/dense layer of the QAT model."""

    layer: str                 # the Keras layer name (= the graph's layer name)
    op: str                    # Conv2D | DepthwiseConv2dNative | MatMul
    bn_layer: str | None       # the batch norm it absorbs (trainably), if folded
    weight_bits: int | None    # None keeps the weights float


@dataclass(frozen=True)
class OutputQuant:
    """A Keras layer whose output is fake-quantized (an activation, a bypass Add…)."""

    layer: str
    bits: int
    min: float                 # the calibrated range the moving average starts from
    max: float
    before_activation: str | None = None   # the layer's own activation (e.g. "softmax"), applied after
                                           # the quantizer: TF quantizes a dense/conv output before it
    after: "OutputQuant | None" = None     # a second quantizer after that activation (TFLite's softmax)
    fixed: bool = False                    # a range TFLite fixes (softmax, sigmoid): not trained


@dataclass(frozen=True)
class QATPlan:
    layers: tuple[LayerPlan, ...]
    outputs: tuple[OutputQuant, ...]
    narrow_range: bool
    weight_symmetric: bool
    activation_symmetric: bool
    per_channel: bool

    def layer(self, name: str) -> LayerPlan | None:
        return next((p for p in self.layers if p.layer == name), None)

    def output(self, name: str) -> OutputQuant | None:
        return next((p for p in self.outputs if p.layer == name), None)


def _through_identities(graph: Graph, tensor: str) -> set[str]:
    """``tensor`` and what it becomes through ``Identity`` ops of the same layer."""
    seen, todo = {tensor}, [tensor]
    layer = graph.producer(tensor).layer
    while todo:
        for c in graph.consumers(todo.pop()):
            if c.op == "Identity" and c.layer == layer and c.output(0) not in seen:
                seen.add(c.output(0))
                todo.append(c.output(0))
    return seen


#: A layer's fused activation op → its Keras name, for splitting ``Dense(activation=…)``.
_ACTIVATIONS = {"Softmax": "softmax", "Relu": "relu", "Relu6": "relu6", "Sigmoid": "sigmoid", "Tanh": "tanh",
                "Elu": "elu", "Selu": "selu", "Softplus": "softplus", "Softsign": "softsign"}


def _activation_after(graph: Graph, tensor: str, end: str | None) -> str | None:
    """The Keras activation a layer applies to ``tensor`` to give its output ``end``
    (its pre-activation is what TF quantizes), or ``None`` if it is not that."""
    if end is None:
        return None
    for c in graph.consumers(tensor):
        kind = _ACTIVATIONS.get(c.op)
        if kind and c.layer == graph.producer(tensor).layer and end in _through_identities(graph, c.output(0)):
            return kind
    return None


def qat_plan(graph: Graph, recipe: Recipe, *, calibration: Sequence[np.ndarray] | None = None) -> QATPlan:
    """The plan for a Keras model whose frozen graph is ``graph``.

    Raises:
        RecipeError: the recipe does not fit the graph.
        QATPlanError: a quantized tensor is not the output of a Keras layer
            (then no layer can be given a fake-quant output).
    """
    result = apply(graph, recipe, calibration=calibration, report=False)
    folded = result.folded.graph
    points, _ = quant_points(folded, recipe.quantize_config(folded))
    fake_quants = {n.inputs[0]: n for n in result.graph.nodes if n.op in FAKE_QUANT_OPS}
    folds = {}
    selected = set(recipe.fold_selection(graph))
    for cand in fold_candidates(graph):
        if cand.foldable and cand.layer in selected:
            folds[cand.layer] = cand.bn_layer

    weight_bits, ops, outputs = {}, {}, {}
    ends = layer_outputs(folded)
    for p in points:
        if p.kind == "weights":
            weight_bits[p.layer] = p.bits
            ops[p.layer] = p.layer_op.op
            continue
        owner = folded.producer(p.tensor).layer
        activation = None
        if ends.get(owner) not in _through_identities(folded, p.tensor):
            activation = _activation_after(folded, p.tensor, ends.get(owner))
            if activation is None:
                raise QATPlanError(f"{p.name} of {p.layer}: the quantized tensor {p.tensor} is not the output "
                                   f"of layer {owner}, so no Keras layer output can carry it; leave its "
                                   f"activations float in the recipe (quantize.layers.{p.layer}."
                                   "activation_bits: null)")
        fq = fake_quants.get(p.tensor)
        if fq is None:
            continue
        lo = float(constant_value(result.graph, fq.inputs[1]))
        hi = float(constant_value(result.graph, fq.inputs[2]))
        q = OutputQuant(owner, p.bits, lo, hi, before_activation=activation, fixed=p.kind == "fixed")
        first = outputs.get(owner)
        if first is not None and first.before_activation and activation is None:
            q = replace(first, after=q)     # Dense(softmax): quantizer → softmax → TFLite's fixed-range one
        outputs[owner] = q
    layer_ops = {n.layer: n.op for n in folded.nodes if n.op in LAYER_OPS}
    names = [name for name in graph.layers if name in weight_bits or name in folds]
    layers = tuple(LayerPlan(name, ops.get(name) or layer_ops[name], folds.get(name), weight_bits.get(name))
                   for name in names)
    order = {name: i for i, name in enumerate(graph.layers)}
    opts = recipe.quantize_config(folded)
    return QATPlan(layers, tuple(sorted(outputs.values(), key=lambda o: order.get(o.layer, 0))),
                   opts.narrow_range, opts.weight_symmetric, opts.activation_symmetric, opts.per_channel)
