"""qviz: see, match and rewrite TensorFlow/Keras graphs — batch-norm folding and
fake quantization at any bit width, live in the browser.

>>> import qviz
>>> sorted(n for n in ("Graph", "Node", "load", "LoadError") if hasattr(qviz, n))
['Graph', 'LoadError', 'Node', 'load']
"""

from .errors import QvizError

__all__ = ["QvizError", "Graph", "Node", "GraphError", "load", "LoadError", "RunError",
           "run", "apply", "Result", "Recipe", "RecipeError", "LayerBits", "show"]
__version__ = "0.1.0"

# Names are imported when first used, not with the package: `qviz serve` answers
# before numpy and networkx are imported (a third of a second), and the first
# view of a model it has drawn before costs no import at all (qviz.app.front).
_LAZY = {"load": "importers", "LoadError": "importers", "Graph": "ir", "GraphError": "ir", "Node": "ir",
         "LayerBits": "passes", "Recipe": "passes", "RecipeError": "passes", "Result": "pipeline",
         "apply": "pipeline", "RunError": "runtime", "run": "runtime", "show": "notebook"}

#: What `qviz.NAME` imports on first use (not `__main__`, which runs the command line).
_SUBPACKAGES = frozenset({"analysis", "app", "cache_dir", "choices", "cli", "errors", "exporters", "importers", "ir",
                          "keras_layers", "layout", "matcher", "metrics", "notebook", "passes", "patterns",
                          "pipeline", "qat", "render", "runtime", "samples", "summary"})


def __getattr__(name):
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:   # used as qviz.passes.… after `import qviz` alone
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'qviz' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
