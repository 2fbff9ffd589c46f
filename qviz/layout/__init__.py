"""Graph layouts for drawing (networkx only; no Dash, no TensorFlow)."""

from .layered import count_crossings, layered_layout
from .view import view_graph

__all__ = ["layered_layout", "count_crossings", "view_graph"]
