"""Graph layouts for drawing: the standard library only (no networkx, no numpy, no Dash,
no TensorFlow), so a model's first view is drawn before any of them is imported."""

from .digraph import CycleError, DiGraph
from .layered import count_crossings, layered_layout, layered_routes
from .cache import LayoutCache, default_cache
from .in_place import routes_in_place
from .view import ViewKey, around, diff_status, key_showing, sketch_view, view_graph

__all__ = ["DiGraph", "CycleError", "layered_layout", "layered_routes", "count_crossings", "view_graph",
           "sketch_view", "ViewKey", "diff_status", "key_showing", "around", "LayoutCache", "default_cache",
           "routes_in_place"]
