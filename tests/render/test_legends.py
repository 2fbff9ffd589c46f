"""Every chart qviz draws names its axes and explains its colours (issue 20.6): a
reader who never saw it before can tell what each mark is from the chart itself."""

from __future__ import annotations

import numpy as np
import pytest

import qviz
from qviz.analysis.channel_ranges import channel_ranges
from qviz.analysis.fold_explainer import explain_fold
from qviz.analysis.fold_orders import fold_orders
from qviz.render import (channel_ranges_figure, fold_channels_figure, fold_orders_figure, histogram_figure,
                         layer_error_figure, sensitivity_figure)
from qviz.samples import sample_path


@pytest.fixture(scope="module")
def lenet():
    return qviz.load(sample_path("lenet_digits"))


def _charts(g):
    values = np.random.default_rng(0).normal(size=500)
    return {
        "fold channels": fold_channels_figure(explain_fold(g, "conv1")),
        "channel ranges": channel_ranges_figure(channel_ranges(g, "conv1", 4)),
        "fold orders": fold_orders_figure(fold_orders(g, "conv1", bits=(8, 4))),
        "histogram with levels": histogram_figure(values, "conv1 weights", np.linspace(-2, 2, 15)),
        "layer error": layer_error_figure(["a", "b", "c"], [40.0, float("inf"), 12.5], quantized={"c"}),
        "sensitivity": sensitivity_figure(["conv1", "conv2"], [8, 4], [[40, 20], [38, 15]], [[45, 30], [44, 25]],
                                          need_db=30),
    }


def _axes(fig):
    """The cartesian axes that carry data (``xaxis``, ``yaxis2``…), as layout keys."""
    used = set()
    for t in fig.data:
        if t.type in ("bar", "scatter", "histogram", "heatmap"):
            for attr, base in (("xaxis", "x"), ("yaxis", "y")):
                ref = getattr(t, attr, None) or base
                used.add(f"{base}axis{ref[1:]}")
    # an axis shared with the subplot below it (no tick labels of its own) is named there
    return sorted(a for a in used if fig.layout[a].visible is not False
                  and not (fig.layout[a].matches and fig.layout[a].showticklabels is False))


def test_every_chart_names_its_axes_and_explains_its_colours(lenet):
    for name, fig in _charts(lenet).items():
        for axis in _axes(fig):
            assert fig.layout[axis].title.text, f"{name}: {axis} has no title"
        legend_on = fig.layout.showlegend is not False
        # heatmaps share one colour scale: one of them shows it, with a title
        scale_shown = any(t.type == "heatmap" and t.showscale is not False and t.colorbar.title.text
                          for t in fig.data)
        for t in fig.data:
            if t.type == "heatmap":
                assert scale_shown, f"{name}: no heatmap shows its colour scale with a title"
                continue
            # in the legend, or one series whose colours the title spells out
            explained = (legend_on and t.showlegend is not False and t.name) or \
                (len(fig.data) == 1 and fig.layout.title.text)
            assert explained, f"{name}: the trace {t.name!r} is in no legend"


def test_the_layer_error_chart_spells_out_its_bar_colours():
    fig = layer_error_figure(["a", "b", "c"], [40.0, float("inf"), 12.5], quantized={"c"})
    assert set(fig.data[0].marker.color) == {"#2e8b57", "#4363d8", "#9aa7c7"}
    assert "blue: quantized" in fig.layout.title.text and "green: exact" in fig.layout.title.text
    assert "grey: not quantized" in fig.layout.title.text
    # only the colours drawn: a fold alone quantizes nothing (the key said "blue" over grey bars)
    folded = layer_error_figure(["a", "b"], [40.0, 12.5]).layout.title.text
    assert "grey: not quantized" in folded and "blue" not in folded and "green" not in folded
