"""A verification of a model on examples it was verified on before reuses the float graph's
own sums of each layer (its peak and energy), and gives what a fresh one gives; other
examples, or another model, are measured anew."""

import pickle

import numpy as np
import pytest

import qviz
from qviz.metrics import report as report_module
from qviz.metrics import verify
from qviz.passes import LayerBits, Recipe
from qviz.samples import data_for


@pytest.fixture(scope="module")
def lenet(samples):
    g = qviz.load(samples["lenet_digits"])
    data = data_for(g)
    recipes = [Recipe.default(g), Recipe.default(g).with_bits("conv2", LayerBits(3, 4))]
    return g, data, [qviz.apply(g, r, calibration=data.calibration, report=False).graph for r in recipes]


def _reference_passes(monkeypatch):
    """Count the layer comparisons that measured the float graph's own sums."""
    counted, add = [], report_module.LayerSums.add

    def counting(self, layer, got, want, *, reference=True):
        counted.append(reference)
        return add(self, layer, got, want, reference=reference)

    monkeypatch.setattr(report_module.LayerSums, "add", counting)
    return counted


def _same(a, b):
    assert [(e.layer, e.rel_err, e.sqnr_db) for e in a.layers] == [(e.layer, e.rel_err, e.sqnr_db) for e in b.layers]
    assert (a.max_abs, a.sqnr_db) == (b.max_abs, b.sqnr_db)


def test_a_second_recipe_reuses_the_float_sums_and_reads_as_a_fresh_verification(lenet, monkeypatch):
    g, data, (eight, mixed) = lenet
    g = pickle.loads(pickle.dumps(g))   # (nothing kept from other tests)
    x = data.verification[:1]
    counted = _reference_passes(monkeypatch)
    verify(g, eight, x)
    assert counted and all(counted)
    counted.clear()
    again = verify(g, mixed, x)
    assert counted and not any(counted)   # the float side's sums came from the first verification
    fresh = verify(pickle.loads(pickle.dumps(g)), mixed, x)
    _same(again, fresh)
    assert any(e.sqnr_db < 40 for e in again.layers)   # (conv2 at 3 bits: the figures are not all ∞)


def test_other_examples_are_measured_anew(lenet, monkeypatch):
    g, data, (_, mixed) = lenet
    g = pickle.loads(pickle.dumps(g))
    x = data.verification[:1]
    verify(g, mixed, x)
    other = [np.ascontiguousarray(x[0][::-1])]   # the same examples in another order: other sums
    counted = _reference_passes(monkeypatch)
    got = verify(g, mixed, other)
    assert counted and all(counted)
    _same(got, verify(pickle.loads(pickle.dumps(g)), mixed, other))
