"""qviz's graph IR: :class:`Graph`, :class:`Node`, attribute values, layers."""

from .attrs import FuncRef, Shape, decode_attr, encode_attr, numpy_to_tensor, tensor_to_numpy
from .dtypes import DType
from .errors import GraphError
from .graph import Graph
from .node import Node, canonical_tensor_name, parse_tensor_name, tensor_name

__all__ = [
    "Graph", "Node", "GraphError", "DType", "Shape", "FuncRef",
    "parse_tensor_name", "tensor_name", "canonical_tensor_name", "decode_attr", "encode_attr",
    "numpy_to_tensor", "tensor_to_numpy",
]
