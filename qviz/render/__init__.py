"""Pure functions from a laid-out view to a plotly figure, or to SVG (no Dash).

The figures' names are imported when first used, not with the package: the page's
first view (:mod:`qviz.render.svg`, drawing with :mod:`qviz.render.marks`) is drawn
before ``qviz serve`` answers, and importing plotly for it was a tenth of a second.
"""

__all__ = ["graph_figure", "names_near_view", "sent_once", "histogram_figure", "layer_error_figure", "sensitivity_figure", "pareto_figure", "COLORS",
           "fold_channels_figure", "channel_ranges_figure", "fold_orders_figure",
           "layer_neighbourhood_figure"]

_LAZY = {"graph_figure": "figure", "names_near_view": "figure", "sent_once": "figure", "histogram_figure": "figure", "layer_error_figure": "figure",
         "sensitivity_figure": "figure", "pareto_figure": "figure", "COLORS": "marks",
         "fold_channels_figure": "explainer", "channel_ranges_figure": "explainer",
         "fold_orders_figure": "explainer", "layer_neighbourhood_figure": "explainer"}


def __getattr__(name):
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'qviz.render' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
