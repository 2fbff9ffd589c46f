"""A frozen GraphDef's structure read without TensorFlow: node names, op types, inputs.

Opening a ``.pb`` properly needs TensorFlow's protobuf classes, which means
importing TensorFlow (seconds). Drawing its layer view needs far less: which
node reads which, and each node's op. This reads exactly that with the
``protobuf`` package alone, through a four-field description of ``NodeDef``
(name, op, inputs, and of its attributes only their strings, for the layer a
file qviz wrote names; weights and the rest are skipped by the parser), and
builds a structure-only :class:`~qviz.ir.Graph`: its layer view is the one the
real open will draw, in the same places (checked in the tests).

>>> sketch_graph_def_bytes(_example(), "m.pb").layers
('x', 'conv', 'relu')
"""

from __future__ import annotations

import functools
from pathlib import Path

from ..ir import Graph, GraphError, Node
from ..ir.graphdef import LAYER_ATTR
from ..ir.layers import layers_from_names
from .errors import LoadError, first_line
from .safety import DEFAULT_LIMITS, Limits, read_bounded

__all__ = ["sketch_graph_def", "sketch_graph_def_bytes"]


@functools.cache
def _graph_def_class():
    """A message class reading GraphDef's ``node`` field, and in each NodeDef its name,
    op and inputs (field numbers as in tensorflow/core/framework/{graph,node_def}.proto)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="qviz_graph_def_sketch.proto", package="qviz_sketch",
                                               syntax="proto3")
    node = proto.message_type.add(name="NodeDef")
    node.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    node.field.add(name="op", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    node.field.add(name="input", number=3, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    # attr (a map: on the wire, repeated {key, value} entries), of each value its string
    # alone: the layer a file qviz wrote names (LAYER_ATTR)
    value = proto.message_type.add(name="AttrValue")
    value.field.add(name="s", number=2, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    entry = proto.message_type.add(name="AttrEntry")
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, type_name=".qviz_sketch.AttrValue",
                    label=F.LABEL_OPTIONAL)
    node.field.add(name="attr", number=5, type=F.TYPE_MESSAGE, type_name=".qviz_sketch.AttrEntry",
                   label=F.LABEL_REPEATED)
    graph = proto.message_type.add(name="GraphDef")
    graph.field.add(name="node", number=1, type=F.TYPE_MESSAGE, type_name=".qviz_sketch.NodeDef",
                    label=F.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("qviz_sketch.GraphDef"))


def _example() -> bytes:
    gd = _graph_def_class()()
    for name, op, inputs in (("x", "Placeholder", []), ("conv/w", "Const", []), ("conv/Conv2D", "Conv2D", ["x", "conv/w"]),
                             ("relu/Relu", "Relu", ["conv/Conv2D"])):
        nd = gd.node.add(name=name, op=op)
        nd.input.extend(inputs)
    return gd.SerializeToString()


def sketch_graph_def_bytes(data: bytes, source: str) -> Graph:
    """The structure-only graph of a serialized GraphDef (see the module doc).

    Raises:
        LoadError: not a GraphDef, or one whose nodes do not fit together.
    """
    from google.protobuf.message import DecodeError

    gd = _graph_def_class()()
    try:
        gd.ParseFromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise LoadError(source, f"not a GraphDef ({first_line(exc)})") from None
    if not gd.node:
        raise LoadError(source, "the GraphDef has no nodes")
    layer_of = layers_from_names(nd.name for nd in gd.node)
    nodes = []
    for nd in gd.node:
        data_inputs = [t for t in nd.input if not t.startswith("^")]
        control = [t[1:] for t in nd.input if t.startswith("^")]
        layer = next((a.value.s.decode("utf-8", "replace") for a in nd.attr if a.key == LAYER_ATTR), "") \
            or layer_of.get(nd.name, nd.name)   # (as nodes_from_graph_def reads it)
        nodes.append(Node(nd.name, nd.op, data_inputs, control_inputs=control, layer=layer))
    try:
        return Graph(nodes, source=source)
    except (GraphError, ValueError) as exc:
        raise LoadError(source, first_line(exc)) from None


def sketch_graph_def(path, limits: Limits = DEFAULT_LIMITS) -> Graph:
    """:func:`sketch_graph_def_bytes` of a ``.pb`` file (read size-bounded: a FIFO or an
    endless file is refused as the real open refuses it)."""
    path = Path(path)
    return sketch_graph_def_bytes(read_bounded(path, str(path), limits), str(path))
