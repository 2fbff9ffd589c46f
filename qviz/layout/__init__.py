"""Graph layouts for drawing (networkx only; no Dash, no TensorFlow)."""

from .layered import count_crossings, layered_layout, layered_routes
from .view import ViewKey, diff_status, key_showing, view_graph

__all__ = ["layered_layout", "layered_routes", "count_crossings", "view_graph", "ViewKey", "diff_status", "key_showing"]
