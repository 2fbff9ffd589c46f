"""Pure functions from a laid-out view to a plotly figure (no Dash)."""

from .figure import COLORS, graph_figure, histogram_figure, layer_error_figure, sensitivity_figure

__all__ = ["graph_figure", "histogram_figure", "layer_error_figure", "sensitivity_figure", "COLORS"]
