"""qviz's graph IR: :class:`Graph`, :class:`Node`, attribute values, layers.

Attribute values need numpy; a graph's structure does not, so the names below
that bring numpy are imported when first used (a model's first view is drawn
from its structure before numpy is imported: :mod:`qviz.app.first_view`).
"""

from .errors import GraphError
from .graph import Graph
from .node import Node, canonical_tensor_name, parse_tensor_name, tensor_name

__all__ = [
    "Graph", "Node", "GraphError", "DType", "Shape", "FuncRef",
    "parse_tensor_name", "tensor_name", "canonical_tensor_name", "decode_attr", "encode_attr",
    "numpy_to_tensor", "tensor_to_numpy",
]

_WITH_NUMPY = {"DType": "dtypes", "Shape": "attrs", "FuncRef": "attrs", "decode_attr": "attrs",
               "encode_attr": "attrs", "numpy_to_tensor": "attrs", "tensor_to_numpy": "attrs"}


def __getattr__(name: str):
    if name in _WITH_NUMPY:
        import importlib

        value = getattr(importlib.import_module(f".{_WITH_NUMPY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
