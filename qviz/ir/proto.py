"""Access to TensorFlow's protobuf message classes, imported on first use.

The IR speaks GraphDef, so it needs the generated protobuf classes; they ship
inside the ``tensorflow`` wheel. Importing them is deferred to the first call so
that ``import qviz`` stays cheap and the IR module graph does not pull in TF at
import time. Nothing here runs TensorFlow.
"""

from __future__ import annotations

import functools
import threading
from types import SimpleNamespace

__all__ = ["pb", "tensorflow"]

_IMPORTING = threading.Lock()


def tensorflow():
    """The ``tensorflow`` module, imported by one thread at a time.

    TensorFlow's package import is not safe in two threads at once (each
    registers the same gradients and ops: "Registering two gradient with name
    …"), and a server opens models in threads while requests may need it too.
    """
    with _IMPORTING:
        import tensorflow as tf
    return tf


@functools.cache
def pb() -> SimpleNamespace:
    """The protobuf modules qviz uses, as one namespace.

    >>> pb().GraphDef().__class__.__name__
    'GraphDef'
    """
    tensorflow()   # the whole package first, under the lock
    from tensorflow.core.framework import (
        attr_value_pb2,
        graph_pb2,
        node_def_pb2,
        tensor_pb2,
        tensor_shape_pb2,
        types_pb2,
    )

    return SimpleNamespace(
        GraphDef=graph_pb2.GraphDef,
        NodeDef=node_def_pb2.NodeDef,
        AttrValue=attr_value_pb2.AttrValue,
        TensorProto=tensor_pb2.TensorProto,
        TensorShapeProto=tensor_shape_pb2.TensorShapeProto,
        types=types_pb2,
    )
