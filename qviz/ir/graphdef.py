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

__all__ = ["nodes_from_graph_def", "graph_def_from_nodes", "short_tensor_name", "LAYER_ATTR"]

#: The node attribute a GraphDef qviz writes names each node's layer in, so that the
#: file opens again with the layers it was written with (a bare GraphDef's layers are
#: guessed from name scopes: ``model_1/conv1_1`` where Keras said ``conv1``). TensorFlow
#: leaves attributes whose name starts with ``_`` alone.
LAYER_ATTR = "_qviz_layer"


def nodes_from_graph_def(graph_def, layer_of: Mapping[str, str]) -> list[Node]:
    """The nodes of ``graph_def``, in its order; ``layer_of`` maps node → layer
    (a node not in it is its own layer), unless the node names its own
    (:data:`LAYER_ATTR`, which then leaves its attributes). ``^name`` inputs become
    control inputs.

    >>> gd = graph_def_from_nodes([Node("m/c/Conv2D", "Neg", layer="conv1")], layers=True)
    >>> [(n.layer, dict(n.raw_attrs)) for n in nodes_from_graph_def(gd, {"m/c/Conv2D": "m/c"})]
    [('conv1', {})]
    """
    nodes = []
    for nd in graph_def.node:
        data, control = [], []
        for t in nd.input:
            if t.startswith("^"):
                control.append(t[1:])
            else:
                data.append(t)
        attrs, layer = nd.attr, layer_of.get(nd.name, nd.name)
        if LAYER_ATTR in attrs:
            layer = attrs[LAYER_ATTR].s.decode("utf-8", "replace") or layer
            attrs = {k: v for k, v in attrs.items() if k != LAYER_ATTR}
        nodes.append(Node(nd.name, nd.op, data, control_inputs=control, layer=layer, device=nd.device,
                          raw_attrs=attrs))
    return nodes


def graph_def_from_nodes(nodes: Iterable[Node], versions: bytes = b"", library: bytes = b"", *,
                         layers: bool = False):
    """A fresh ``GraphDef`` holding ``nodes`` in order, with the serialized
    ``VersionDef``/``FunctionDefLibrary`` given; ``layers``: each node's layer in
    :data:`LAYER_ATTR` (for a file). Output 0 is written as the bare node name, as
    TensorFlow itself does."""
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
        if layers:
            nd.attr[LAYER_ATTR].s = node.layer.encode()
    return gd


def short_tensor_name(tensor: str) -> str:
    """The name TensorFlow writes for a tensor: output 0 is the bare node name.

    >>> short_tensor_name("conv:0"), short_tensor_name("split:1")
    ('conv', 'split:1')
    """
    node, index = parse_tensor_name(tensor)
    return node if index == 0 else f"{node}:{index}"
