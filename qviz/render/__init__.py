"""Pure functions from a laid-out view to a plotly figure (no Dash)."""

from .explainer import channel_ranges_figure, fold_channels_figure, fold_orders_figure, layer_neighbourhood_figure
from .figure import (COLORS, graph_figure, histogram_figure, layer_error_figure, pareto_figure,
                     sensitivity_figure)

__all__ = ["graph_figure", "histogram_figure", "layer_error_figure", "sensitivity_figure", "pareto_figure", "COLORS",
           "fold_channels_figure", "channel_ranges_figure", "fold_orders_figure",
           "layer_neighbourhood_figure"]
