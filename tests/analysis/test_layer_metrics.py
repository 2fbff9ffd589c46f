"""Issue 19.1: the colour-by metrics beyond weights and SQNR — what they paint per layer."""

import numpy as np

import qviz
from qviz.analysis.layer_metrics import activation_range, fold_status, suggested_bits
from qviz.analysis.sensitivity import Sensitivity
from qviz.passes import Recipe, fold_candidates
from qviz.metrics import layer_outputs
from qviz.passes.calibration import activation_ranges, noise_inputs
from qviz.render.marks import BIT_COLORS, bits_color


def test_suggested_bits_are_the_sweeps_suggestion_in_the_badges_colours():
    sens = Sensitivity(("conv1", "conv2", "add"), (8, 4, 2),
                       np.array([[60.0, 45, 20], [60, 30, 10], [np.inf, np.inf, np.inf]]),
                       np.array([[60.0, 50, 40], [60, 50, 40], [60, 50, 40]]))
    data = suggested_bits(sens, 30.0, BIT_COLORS)
    wanted = {k: b.weight_bits for k, b in sens.suggest(30.0).quantize_layers.items()}
    assert data.values == {k: float(v) for k, v in wanted.items()}
    assert data.values["conv1"] < data.values["conv2"]          # the sensitive layer keeps more bits
    assert all(data.color_of(k) == bits_color(int(v)) for k, v in data.values.items())
    assert set(data.labels) == {f"{int(v)} bits" for v in data.values.values()}


def test_activation_range_is_each_layers_calibrated_span(samples):
    g = qviz.load(samples["resnet_block"])
    tensors = [layer_outputs(g)["relu1"], layer_outputs(g)["add2"]]
    ranges = activation_ranges(g, tensors, noise_inputs(g, count=8, seed=0))
    data = activation_range(g, ranges)
    for tensor, (lo, hi) in ranges.items():
        assert data.values[g.producer(tensor).layer] == hi - lo > 0
    assert set(data.values) == {"relu1", "add2"}


def test_fold_status_follows_the_recipe_and_says_when_a_fold_is_impossible(samples):
    g = qviz.load(samples["mobilenet_block"])
    candidates = fold_candidates(g)
    status = fold_status(g, Recipe.default(g))
    assert {c.layer: status.values[c.layer] for c in candidates} == {
        c.layer: 3.0 if c.foldable else 1.0 for c in candidates}
    assert fold_status(g, Recipe(fold_default=False)).values.keys() == status.values.keys()
