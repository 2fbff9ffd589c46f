"""A fold toggle reads its activation ranges off the last calibration instead of
calibrating again (qviz.passes.refold) — checked against a fresh calibration."""

import itertools
import random

import pytest

import qviz
from qviz.passes import fold_batch_norms, fold_candidates
from qviz.passes.calibration import activation_ranges, noise_inputs
from qviz.passes.refold import calibration_tensors, float_ranges, ranges_across_folds, ranges_for_folds
from tests.models import separable_bn_model


def _measured(g, folds, inputs):
    folded = fold_batch_norms(g, layers=list(folds)).graph
    return activation_ranges(folded, calibration_tensors(folded), inputs)


@pytest.mark.parametrize("name", ["lenet_digits", "resnet_block", "mobilenet_block", "fused_bn_tf_keras"])
def test_ranges_across_folds_are_what_calibrating_again_measures(samples, name):
    g = qviz.load(samples[name])
    inputs = noise_inputs(g, count=8)
    foldable = [c.layer for c in fold_candidates(g) if c.foldable]
    rng = random.Random(0)
    selections = [(), tuple(foldable)] + [tuple(x for x in foldable if rng.random() < 0.5) for _ in range(3)]
    fresh = {s: _measured(g, s, inputs) for s in selections}
    derived_any = 0
    for before, after in itertools.permutations(selections, 2):
        derived = ranges_across_folds(g, fresh[before], before, after)
        if derived is None:
            continue
        derived_any += 1
        assert sorted(derived) == sorted(fresh[after])
        for t, (lo, hi) in fresh[after].items():
            scale = max(abs(lo), abs(hi), 1e-6)
            assert abs(derived[t][0] - lo) <= 1e-4 * scale and abs(derived[t][1] - hi) <= 1e-4 * scale, (t, before, after)
    # a single toggle from any selection is read off, not calibrated again
    for s in selections:
        for layer in foldable:
            toggled = tuple(x for x in s if x != layer) if layer in s else (*s, layer)
            assert ranges_across_folds(g, fresh[s], s, toggled) is not None or layer not in s, (s, layer)
    assert derived_any > 0


@pytest.mark.parametrize("name", ["lenet_digits", "resnet_block", "mobilenet_block", "fused_bn_tf_keras", "separable"])
def test_one_calibration_of_the_float_graph_serves_every_fold_selection(samples, name):
    """What qviz calibrates a recipe with (the page, ``qviz apply``, a sweep): the float graph's
    ranges carried to the recipe's folds — the ranges calibrating the folded graph measures."""
    g = qviz.load(separable_bn_model() if name == "separable" else samples[name])
    inputs = noise_inputs(g, count=8)
    measured = float_ranges(g, inputs)
    foldable = [c.layer for c in fold_candidates(g) if c.foldable]
    assert foldable
    rng = random.Random(1)
    for folds in [(), tuple(foldable)] + [tuple(x for x in foldable if rng.random() < 0.5) for _ in range(3)]:
        carried = ranges_for_folds(g, measured, folds)
        fresh = _measured(g, folds, inputs)
        assert sorted(carried) == sorted(fresh), folds
        for t, (lo, hi) in fresh.items():
            scale = max(abs(lo), abs(hi), 1e-6)
            assert abs(carried[t][0] - lo) <= 1e-4 * scale and abs(carried[t][1] - hi) <= 1e-4 * scale, (t, folds)
