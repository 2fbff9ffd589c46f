"""Values of constant tensors: weights, batch-norm statistics, biases.

Frozen Keras graphs read constants through small subgraphs (``Identity`` reads,
``Reshape``/``Squeeze`` of a bias, ``AddV2(variance, epsilon)``). The common ops
are evaluated here in numpy; anything else falls back to TensorFlow.

>>> import numpy as np
>>> from qviz.ir import Graph, Node
>>> from qviz.passes.rewrite import const_node
>>> g = Graph([const_node("v", np.array([1.0, 4.0], np.float32), "bn"),
...            const_node("eps", np.array(0.0, np.float32), "bn"),
...            Node("add", "AddV2", ["v", "eps"]), Node("r", "Rsqrt", ["add"])], outputs=["r"])
>>> constant_value(g, "r:0")
array([1. , 0.5], dtype=float32)
"""

from __future__ import annotations

import numpy as np

from ..errors import QvizError
from ..ir import Graph, canonical_tensor_name, parse_tensor_name

__all__ = ["constant_value", "NotConstantError"]


class NotConstantError(QvizError, ValueError):
    """The tensor depends on a graph input or on an op with state."""


def _reshape(x, shape):
    return np.reshape(x, [int(d) for d in np.asarray(shape).reshape(-1)])


def _squeeze(x, node):
    dims = node.attrs.get("squeeze_dims") or node.attrs.get("axis") or None
    return np.squeeze(x, axis=tuple(dims)) if dims else np.squeeze(x)


_UNARY = {
    "Identity": lambda x: x, "Snapshot": lambda x: x, "StopGradient": lambda x: x,
    "Rsqrt": lambda x: 1.0 / np.sqrt(x), "Sqrt": np.sqrt, "Neg": np.negative,
    "Reciprocal": lambda x: 1.0 / x, "Square": np.square,
}
_BINARY = {
    "Add": np.add, "AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply,
    "RealDiv": np.divide, "Maximum": np.maximum, "Minimum": np.minimum,
    "Reshape": _reshape,
    "ExpandDims": lambda x, a: np.expand_dims(x, int(np.asarray(a).reshape(-1)[0])),
    "Transpose": lambda x, p: np.transpose(x, [int(i) for i in np.asarray(p).reshape(-1)]),
}


def constant_value(graph: Graph, tensor: str, *, tensorflow: bool = True) -> np.ndarray:
    """The value of a constant tensor, as a numpy array (a copy the caller may keep).

    Weights and their reads, reshapes and arithmetic are evaluated in numpy; any
    other op in the constant subgraph is run in TensorFlow, unless ``tensorflow``
    is False (a web request must not): then NotConstantError says so.

    Raises:
        NotConstantError: the tensor is computed from graph inputs, or needs
            TensorFlow when ``tensorflow`` is False.
    """
    if not graph.is_constant(tensor):
        node = graph.producer(tensor)
        raise NotConstantError(f"tensor {tensor!r} ({node.op}) is not constant: "
                               "it is computed from the graph's inputs")
    memo = graph.memo("constants.values", dict)  # grows as tensors are asked for
    key = canonical_tensor_name(tensor)
    if key not in memo:
        memo[key] = _evaluate(graph, key, memo, tensorflow)
    return np.array(memo[key])


def _evaluate(graph: Graph, tensor: str, memo: dict, tensorflow: bool = True) -> np.ndarray:
    node_name, index = parse_tensor_name(tensor)
    node = graph.node(node_name)
    if node.op == "Const":
        if "value" not in node.attrs:  # a malformed GraphDef: say so instead of a KeyError
            raise NotConstantError(f"{node.name} is a Const without a value")
        return np.asarray(node.value)
    args = []
    if index == 0 and (node.op in _UNARY or node.op in _BINARY or node.op in ("Squeeze", "Cast")):
        for t in node.inputs:
            t = canonical_tensor_name(t)
            if t not in memo:
                memo[t] = _evaluate(graph, t, memo, tensorflow)
            args.append(memo[t])
        if node.op in _UNARY and len(args) == 1:
            return np.asarray(_UNARY[node.op](args[0]))
        if node.op in _BINARY and len(args) == 2:
            return np.asarray(_BINARY[node.op](args[0], args[1]))
        if node.op == "Squeeze" and len(args) == 1:
            return _squeeze(args[0], node)
        if node.op == "Cast" and len(args) == 1:
            return args[0].astype(node.attrs["DstT"].numpy)
    if not tensorflow:
        raise NotConstantError(f"{tensor} ({node.op}) is evaluated by TensorFlow, which this caller does not run")
    return _evaluate_in_tf(graph, tensor)


def _evaluate_in_tf(graph: Graph, tensor: str) -> np.ndarray:
    from .. import runtime

    return runtime.evaluate(graph, [tensor])[0]


