"""The quantization grid over a histogram: every level drawn, cheaply, at any width."""

import numpy as np
import pytest

from qviz.render.figure import MAX_DRAWN_LEVELS, histogram_figure


@pytest.mark.parametrize("bits", [2, 4, 6])
def test_each_level_is_one_line_of_a_single_trace(bits):
    levels = np.linspace(-1, 1, 2**bits)
    fig = histogram_figure(np.random.default_rng(0).normal(size=500), "w", levels)
    assert not fig.layout.shapes                      # no shape per level (seconds of plotly at 8 bits)
    grid = [t for t in fig.data if t.name == "levels"]
    assert len(grid) == 1
    xs = np.asarray(grid[0].x, float)
    np.testing.assert_allclose(np.unique(xs), levels)  # every level, at its value
    assert len(xs) == 3 * len(levels)


@pytest.mark.parametrize("bits", [8, 16])
def test_a_grid_too_dense_to_see_is_drawn_as_its_range_and_step(bits):
    """8 bits' 255 lines were a solid block over the histogram in the side panel."""
    levels = np.linspace(-2, 2, 2**bits)
    fig = histogram_figure(np.zeros(10), "w", levels)
    assert 2**bits > MAX_DRAWN_LEVELS
    grid = [t for t in fig.data if t.name == "levels"]
    assert len(grid) == 1 and min(grid[0].x) == -2 and max(grid[0].x) == 2
    assert f"{2**bits} levels" in fig.layout.annotations[0].text


def test_without_levels_only_the_histogram():
    fig = histogram_figure(np.arange(10.0), "w")
    assert [t.type for t in fig.data] == ["histogram"]


def test_a_sweep_stopped_part_way_leaves_its_unmeasured_cells_blank():
    """A stopped sweep's heatmap: NaN cells (not measured) are gaps with no number and no
    hover, and the figure's JSON holds no NaN (the page's JSON.parse refuses it)."""
    from qviz.render.figure import sensitivity_figure

    nan = float("nan")
    fig = sensitivity_figure(["conv1", "conv2"], [8, 4], [[40.0, nan], [nan, nan]], [[float("inf"), nan], [nan, nan]],
                             need_db=30.0)
    weights, activations = fig.data
    assert [list(r) for r in weights.z] == [[40.0, None], [None, None]] and list(activations.z[0]) == [100.0, None]
    assert [list(r) for r in weights.text] == [["<b>40</b>", ""], ["", ""]] and weights.hoverongaps is False
    assert "NaN" not in fig.to_json()
