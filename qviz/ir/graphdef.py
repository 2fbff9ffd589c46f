"""The IR's GraphDef codec: nodes from a ``GraphDef`` and back, losslessly.

Kept apart from :class:`~qviz.ir.Graph` (as onnx-graphsurgeon keeps its
importers and exporters apart from its IR): the graph holds nodes; this module
knows the protobuf wire form. Nothing here runs TensorFlow.

>>> from qviz.ir import Node
>>> gd = graph_def_from_nodes([Node("x", "Placeholder"), Node("y", "Neg", ["x:0"])])
>>> [(nd.name, list(nd.input)) for nd in gd.node]
[('x', []), ('y', ['x'])]
>>> [n.inputs for n in nodes_from_graph_def(gd, {})]
[(), ('x:0',)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .node import Node, parse_tensor_name
from .proto import pb

__all__ = ["nodes_from_graph_def", "graph_def_from_nodes", "short_tensor_name"]


def nodes_from_graph_def(graph_def, layer_of: Mapping[str, str]) -> list[Node]:
    """The nodes of ``graph_def``, in its order; ``layer_of`` maps node → layer
    (a node not in it is its own layer). ``^name`` inputs become control inputs."""
    nodes = []
    for nd in graph_def.node:
        data, control = [], []
        for t in nd.input:
            if t.startswith("^"):
                control.append(t[1:])
            else:
                data.append(t)
        nodes.append(Node(nd.name, nd.op, data, control_inputs=control,
                          layer=layer_of.get(nd.name, nd.name), device=nd.device,
                          raw_attrs=nd.attr))
    return nodes


def graph_def_from_nodes(nodes: Iterable[Node], versions: bytes = b"", library: bytes = b""):
    """A fresh ``GraphDef`` holding ``nodes`` in order, with the serialized
    ``VersionDef``/``FunctionDefLibrary`` given. Output 0 is written as the bare
    node name, as TensorFlow itself does."""
    gd = pb().GraphDef()
    if versions:
        gd.versions.ParseFromString(versions)
    if library:
        gd.library.ParseFromString(library)
    for node in nodes:
        nd = gd.node.add()
        nd.name = node.name
        nd.op = node.op
        if node.device:
            nd.device = node.device
        nd.input.extend(short_tensor_name(t) for t in node.inputs)
        nd.input.extend("^" + c for c in node.control_inputs)
        for k, v in node.raw_attrs.items():
            nd.attr[k].CopyFrom(v)
    return gd


def short_tensor_name(tensor: str) -> str:
    """The name TensorFlow writes for a tensor: output 0 is the bare node name.

    >>> short_tensor_name("conv:0"), short_tensor_name("split:1")
    ('conv', 'split:1')
    """
    node, index = parse_tensor_name(tensor)
    return node if index == 0 else f"{node}:{index}"
