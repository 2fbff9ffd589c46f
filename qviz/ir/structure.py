"""Facts derived from a node list: layer order, constant nodes, inferred
outputs, the networkx view. Pure functions over nodes; :class:`~qviz.ir.Graph`
memoizes what it needs of them.

>>> from qviz.ir import Node
>>> nodes = [Node("w", "Const", layer="dense"), Node("x", "Placeholder", layer="in"),
...          Node("y", "MatMul", ["x", "w"], layer="dense")]
>>> layer_order(nodes), sorted(constant_nodes(nodes)), inferred_outputs(nodes)
(('in', 'dense'), ['w'], ['y:0'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .node import Node, parse_tensor_name

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["layer_order", "constant_nodes", "consumer_indices", "inferred_outputs", "dataflow_digraph", "is_sorted"]

# Ops whose value is not a function of their inputs: never constant, whatever feeds them.
_NOT_CONSTANT = frozenset({"Placeholder", "PlaceholderWithDefault", "VarHandleOp", "ReadVariableOp",
                           "RandomUniform", "RandomStandardNormal", "TruncatedNormal",
                           "RandomUniformInt", "Multinomial", "NoOp"})
# Ops that never count as a graph output when outputs are inferred.
_NOT_OUTPUTS = frozenset({"Const", "NoOp", "Placeholder", "VarHandleOp", "Assert",
                          "SaveV2", "RestoreV2", "AssignVariableOp"})


def layer_order(nodes: Sequence[Node]) -> tuple[str, ...]:
    """Layers ordered by their first computing node (constants are hoisted in
    frozen graphs, so they would put every layer first)."""
    first: dict[str, int] = {}
    fallback: dict[str, int] = {}
    constant: set[str] = set()
    for i, node in enumerate(nodes):
        if node.op == "Const" or (node.op == "Identity" and node.inputs
                                  and parse_tensor_name(node.inputs[0])[0] in constant):
            constant.add(node.name)
            fallback.setdefault(node.layer, i)
        else:
            first.setdefault(node.layer, i)
    for layer, i in fallback.items():
        first.setdefault(layer, i)
    return tuple(sorted(first, key=first.__getitem__))


def constant_nodes(sorted_nodes: Sequence[Node]) -> frozenset[str]:
    """Names of the nodes computed from ``Const`` nodes only; ``sorted_nodes``
    must be in topological order."""
    constant: set[str] = set()
    for node in sorted_nodes:
        if node.op == "Const" or (
                node.op not in _NOT_CONSTANT and node.inputs
                and all(parse_tensor_name(t)[0] in constant for t in node.inputs)):
            constant.add(node.name)
    return frozenset(constant)


def consumer_indices(nodes: Sequence[Node]) -> tuple[dict[str, tuple[Node, ...]],
                                                      dict[str, tuple[Node, ...]]]:
    """``({tensor: its readers}, {node name: readers of any of its outputs})``,
    each reader once and in graph order; control inputs do not count."""
    by_tensor: dict[str, list[Node]] = {}
    by_node: dict[str, list[Node]] = {}
    for node in nodes:
        for t in node.inputs:
            for index, key in ((by_tensor, t), (by_node, parse_tensor_name(t)[0])):
                readers = index.setdefault(key, [])
                if not readers or readers[-1] is not node:
                    readers.append(node)
    return ({t: tuple(v) for t, v in by_tensor.items()},
            {k: tuple(v) for k, v in by_node.items()})


def inferred_outputs(nodes: Sequence[Node]) -> list[str]:
    """Output 0 of every node nothing reads (data or control), bar the ops
    that are never outputs (constants, placeholders, savers)."""
    consumed = {parse_tensor_name(t)[0] for n in nodes for t in n.inputs}
    control_targets = {c for n in nodes for c in n.control_inputs}
    return [n.output(0) for n in nodes
            if n.op not in _NOT_OUTPUTS and n.name not in consumed
            and n.name not in control_targets]


def is_sorted(nodes: Sequence[Node]) -> bool:
    """Whether every node comes after the producers of its data inputs."""
    seen: set[str] = set()
    for node in nodes:
        if any(parse_tensor_name(t)[0] not in seen for t in node.inputs):
            return False
        seen.add(node.name)
    return True


def dataflow_digraph(nodes: Sequence[Node]) -> nx.DiGraph:
    """A frozen ``networkx.DiGraph``: nodes are names, edges producer → consumer.

    Node data: ``op``, ``layer``. Edge data: ``tensors`` (the tensor names
    carried) and ``control`` (True for a pure control dependency).
    """
    import networkx as nx   # (here: reading a graph's structure, and drawing it, does without networkx)

    g = nx.DiGraph()
    for n in nodes:
        g.add_node(n.name, op=n.op, layer=n.layer)
    for n in nodes:
        for t in n.inputs:
            src = parse_tensor_name(t)[0]
            data = g.get_edge_data(src, n.name)
            if data is None:
                g.add_edge(src, n.name, tensors=[t], control=False)
            elif t not in data["tensors"]:
                data["tensors"].append(t)
                data["control"] = False
        for c in n.control_inputs:
            if not g.has_edge(c, n.name):
                g.add_edge(c, n.name, tensors=[], control=True)
    return nx.freeze(g)
