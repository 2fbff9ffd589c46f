"""Graph layouts for drawing (networkx only; no Dash, no TensorFlow)."""

from .layered import count_crossings, layered_layout, layered_routes
from .cache import LayoutCache, default_cache
from .in_place import routes_in_place
from .view import ViewKey, around, diff_status, key_showing, sketch_view, view_graph

__all__ = ["layered_layout", "layered_routes", "count_crossings", "view_graph", "sketch_view", "ViewKey", "diff_status",
           "key_showing", "around", "LayoutCache", "default_cache", "routes_in_place"]
