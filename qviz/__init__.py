"""qviz: see, match and rewrite TensorFlow/Keras graphs — batch-norm folding and
fake quantization at any bit width, live in the browser.

>>> import qviz
>>> sorted(n for n in ("Graph", "Node", "load", "LoadError") if hasattr(qviz, n))
['Graph', 'LoadError', 'Node', 'load']
"""

from .errors import QvizError
from .importers import LoadError, load
from .ir import Graph, GraphError, Node
from .passes import LayerBits, Recipe, RecipeError
from .pipeline import Result, apply
from .runtime import RunError, run

__all__ = ["QvizError", "Graph", "Node", "GraphError", "load", "LoadError", "RunError",
           "run", "apply", "Result", "Recipe", "RecipeError", "LayerBits", "show"]
__version__ = "0.1.0"


def __getattr__(name):
    # qviz.show is the app (Dash): imported when asked for, not with the library
    if name == "show":
        from .notebook import show

        return show
    raise AttributeError(f"module 'qviz' has no attribute {name!r}")
