"""A recipe as a recipe of Google's AI Edge Quantizer (AEQ).

AEQ quantizes a float ``.tflite`` model by a JSON list of rules, each naming
ops by a regular expression on the op's *scope* (its output tensors' names
joined by ``;``) and an op type, later rules winning. qviz writes the float
model next to the recipe (:func:`float_tflite`, TFLite's converter on the
graph, which folds every batch norm it can) and one rule per conv/dense op
of it, matched by that op's exact scope; a first rule ``.*`` sets the
recipe's most common activation width for the ops between them.

AEQ's rules offer fewer widths than qviz. What changes is in the notes, by
layer: weights of 2–4 bits become 4 on CONV_2D and FULLY_CONNECTED (8 on
other ops), 5–16 become 8; activations of 2–8 bits become 8, 9–16 become 16
(and symmetric, as TFLite's int16 kernels need); a layer with float
activations gets weight-only quantization.

>>> aeq_widths("CONV_2D", 3, 6), aeq_widths("DEPTHWISE_CONV_2D", 4, 8), aeq_widths("FULLY_CONNECTED", 6, None)
((4, 8), (8, 8), (8, None))
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from pathlib import Path

from ..ir import Graph
from ..ir.ops import LAYER_OPS
from ..passes.recipe import Recipe
from .code_text import GeneratedCode

__all__ = ["aeq_recipe", "aeq_widths", "float_tflite", "WEIGHT_OPS"]

#: The TFLite ops that carry a layer's weights.
WEIGHT_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")
#: The ops AEQ's policy gives 4-bit weights next to integer activations.
_INT4_WEIGHT_OPS = ("CONV_2D", "FULLY_CONNECTED")
_ALGORITHM = "min_max_uniform_quantize"


def aeq_widths(op: str, weight_bits: int, activation_bits: int | None) -> tuple[int, int | None]:
    """The (weight, activation) widths AEQ writes for qviz's ``weight_bits``/``activation_bits`` on ``op``."""
    weights = 4 if weight_bits <= 4 and op in _INT4_WEIGHT_OPS else 8
    activations = None if activation_bits is None else (8 if activation_bits <= 8 else 16)
    return weights, activations


def _tensor_config(bits: int, symmetric: bool, granularity: str) -> dict:
    return {"num_bits": bits, "symmetric": symmetric, "granularity": granularity, "dtype": "INT"}


def _op_config(weight_bits: int, activation_bits: int | None, *, per_channel: bool,
               symmetric_activations: bool) -> dict:
    granularity = "CHANNELWISE" if per_channel else "TENSORWISE"
    config = {"weight_tensor_config": _tensor_config(weight_bits, True, granularity)}
    if activation_bits is None:      # weight-only: the op computes in float on dequantized weights
        config.update(compute_precision="FLOAT", explicit_dequantize=True)
    else:
        config["activation_tensor_config"] = _tensor_config(
            activation_bits, symmetric_activations or activation_bits == 16, "TENSORWISE")
        config.update(compute_precision="INTEGER", explicit_dequantize=False)
    return config


def float_tflite(graph: Graph) -> bytes:
    """The float ``.tflite`` model of ``graph`` (TFLite's converter, no quantization)."""
    import tensorflow as tf

    from . import save_saved_model
    from .tflite import TFLiteError

    with tempfile.TemporaryDirectory(prefix="qviz-aeq-") as tmp:
        saved = save_saved_model(graph, Path(tmp) / "model")
        try:
            return tf.lite.TFLiteConverter.from_saved_model(os.fspath(saved)).convert()
        except Exception as exc:   # the converter's errors are many-line MLIR dumps
            raise TFLiteError(f"TFLite's converter refused the float graph: {str(exc).splitlines()[0]}") from None


def _weight_ops(model: bytes) -> list[tuple[str, str, list[str]]]:
    """``(op type, scope, tensor names)`` of each conv/dense op of a ``.tflite`` model."""
    from .tflite import _interpreter

    it = _interpreter(model, preserve=False)
    ops = []
    for op in it._get_ops_details():
        if op["op_name"] not in WEIGHT_OPS:
            continue
        outputs = [it._get_tensor_details(i, 0)["name"] for i in op["outputs"] if i >= 0]
        weights = it._get_tensor_details(op["inputs"][1], 0)["name"]
        ops.append((op["op_name"], ";".join(outputs) + ";", ";".join(outputs).split(";") + weights.split(";")))
    return ops


def _layer_of(graph: Graph, names: list[str], layers: set[str]) -> str | None:
    """The recipe layer the TF op names in a TFLite op's tensor names belong to."""
    for name in names:
        # the converter makes names unique with a digit ("…/MatMul1" for a second tensor of "…/MatMul")
        for candidate in (name, name.rstrip("0123456789")):
            if candidate in graph and graph.node(candidate).layer in layers:
                return graph.node(candidate).layer
    return None


def aeq_recipe(graph: Graph, recipe: Recipe, model: bytes) -> GeneratedCode:
    """AEQ's recipe JSON for the float ``.tflite`` ``model`` of ``graph`` (:func:`float_tflite`)."""
    recipe.validate(graph)
    opts = recipe.quantize_config(graph)
    weight_layers = {n.layer for n in graph.nodes if n.op in LAYER_OPS}
    layers = {name: recipe.bits(name) for name in graph.layers if name in weight_layers}
    notes, rules = [], []
    activation_widths = Counter(b.activation_bits for b in layers.values() if b and b.activation_bits)
    if activation_widths:
        _, default_act = aeq_widths("ADD", 8, activation_widths.most_common(1)[0][0])
        rules.append({"regex": ".*", "operation": "*", "algorithm_key": _ALGORITHM,
                      "op_config": _op_config(8, default_act, per_channel=opts.per_channel,
                                              symmetric_activations=opts.activation_symmetric)})
        left_float = sorted(name for name, b in layers.items() if b is None or b.activation_bits is None)
        if left_float:
            notes.append(f"the first rule quantizes every op's activations at {default_act} bits (pooling, "
                         "reshape, add… included), where the recipe leaves the activations of "
                         f"{', '.join(map(repr, left_float[:5]))}{'…' if len(left_float) > 5 else ''} float; "
                         "AEQ has no rule for float activations between integer ops")
    wanted = {name for name, b in layers.items() if b is not None}
    seen = set()
    for op, scope, names in _weight_ops(model):
        layer = _layer_of(graph, names, weight_layers)
        rule = {"regex": "^" + re.escape(scope) + "$", "operation": op}
        bits = layers.get(layer)
        if layer is None or bits is None or bits.weight_bits is None:
            rules.append({**rule, "algorithm_key": "no_quantize"})
            if layer is None:
                notes.append(f"a {op} op of the TFLite model ({scope[:80]!r}) belongs to no layer of the graph; "
                             "it stays float")
            continue
        seen.add(layer)
        weights, activations = aeq_widths(op, bits.weight_bits, bits.activation_bits)
        if weights != bits.weight_bits:
            notes.append(f"{layer!r}: {bits.weight_bits}-bit weights are written as {weights}-bit "
                         f"(AEQ's widths for {op})")
        if activations != bits.activation_bits:
            notes.append(f"{layer!r}: {bits.activation_bits}-bit activations are written as {activations}-bit")
        rules.append({**rule, "algorithm_key": _ALGORITHM,
                      "op_config": _op_config(weights, activations, per_channel=opts.per_channel,
                                              symmetric_activations=opts.activation_symmetric)})
    for layer in sorted(wanted - seen):
        notes.append(f"{layer!r}: TFLite's converter made no conv/dense op of it; its bits are not in the recipe")
    if not opts.narrow_range:
        notes.append("weights: AEQ's symmetric weights use the narrow range (-127..127 at 8 bits) whatever the "
                     "recipe says")
    return GeneratedCode(json.dumps(rules, indent=2) + "\n", tuple(notes))
