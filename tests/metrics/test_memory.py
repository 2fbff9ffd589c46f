"""A worker's memory: a calibration, a verification and the quantizers' samples never
hold every activation of every example at once (MobileNetV2's worker went to 3.5 GB
doing so), and running a chunk at a time gives the numbers running all at once gives."""

import threading

import numpy as np
import pytest

import qviz
from qviz import runtime
from qviz.analysis import quant_grid
from qviz.metrics import report as report_module
from qviz.passes import LayerBits, Recipe
from qviz.passes.calibration import activation_ranges
from qviz.passes.refold import calibration_tensors
from qviz.pipeline import report_for
from qviz.samples import data_for


@pytest.fixture(scope="module")
def lenet(samples):
    g = qviz.load(samples["lenet_digits"])
    recipe = Recipe.default(g).with_bits("conv2", LayerBits(3, 4))
    data = data_for(g)
    return g, recipe, data, qviz.apply(g, recipe, calibration=data.calibration, report=False)


def _fetched_bytes(monkeypatch):
    """Record the bytes each ``runtime.run`` call hands back (not its calls of itself; a
    verification runs the rewritten graph's first examples in a thread of its own)."""
    sizes, run, local = [], runtime.run, threading.local()

    def recording(*args, **kwargs):
        local.depth = getattr(local, "depth", 0) + 1
        try:
            values = run(*args, **kwargs)
        finally:
            local.depth -= 1
        if not local.depth:
            sizes.append(sum(v.nbytes for v in values))
        return values

    monkeypatch.setattr(runtime, "run", recording)
    return sizes


def test_a_verification_in_chunks_gives_the_figures_of_one_run(lenet, monkeypatch):
    g, recipe, data, result = lenet
    whole = report_for(g, recipe, result, data.verification, data.labels, local=True)
    monkeypatch.setattr(report_module, "LAYER_CHUNK_BYTES", 1)   # one example a run
    sizes = _fetched_bytes(monkeypatch)
    chunked = report_for(g, recipe, result, data.verification, data.labels, local=True)
    assert len(sizes) > 2 * len(data.verification[0])   # both graphs, an example at a time, and the local runs
    assert max(sizes) < min(sizes) * 3                  # never more than one example's values
    assert chunked.examples == whole.examples and chunked.accuracy == whole.accuracy
    assert chunked.sqnr_db == pytest.approx(whole.sqnr_db) and chunked.max_abs == pytest.approx(whole.max_abs)
    for mode in ("layers", "local_layers"):
        got, want = getattr(chunked, mode), getattr(whole, mode)
        assert [e.layer for e in got] == [e.layer for e in want] and got
        for a, b in zip(got, want):
            assert a.sqnr_db == pytest.approx(b.sqnr_db, abs=1e-3)   # (round-off: TF's kernels by batch)
            assert a.rel_err == pytest.approx(b.rel_err, rel=1e-4)


def test_a_calibration_takes_only_each_tensors_extremes_out_of_tensorflow(lenet, monkeypatch):
    g, _, data, _ = lenet
    folded = qviz.apply(g, Recipe(quantize_default=None), report=False).graph
    tensors = calibration_tensors(folded)
    x = list(data.calibration)
    values = runtime.run(folded, *x, fetches=tensors)
    sizes = _fetched_bytes(monkeypatch)
    ranges = activation_ranges(folded, tensors, x)
    assert sizes == []   # no activation came out whole
    # (as computed whole, to the last bits TensorFlow's kernels keep from one batch size to another)
    assert ranges == {t: pytest.approx((float(v.min()), float(v.max())), rel=1e-5, abs=1e-6)
                      for t, v in zip(tensors, values)}


def test_the_quantizers_samples_come_from_every_example_a_chunk_at_a_time(lenet, monkeypatch):
    g, _, data, result = lenet
    x = [a[:40] for a in data.calibration]
    tensors = quant_grid.activation_tensors(result.graph)
    everything = dict(zip(tensors, runtime.run(result.graph, *x, fetches=tensors)))
    monkeypatch.setattr(report_module, "LAYER_CHUNK_BYTES", 1)
    sizes = _fetched_bytes(monkeypatch)
    samples = quant_grid.activation_samples(result.graph, x, keep=400)
    assert len(sizes) == 40
    assert set(samples) == set(tensors)
    for t, v in samples.items():
        assert len(v) == 400 and _near(v, everything[t]).all()
    # drawn from every example, not only the first: values only the last examples have are in it
    t = max(tensors, key=lambda t: len(np.unique(everything[t])))
    late_only = everything[t][20:].ravel()
    late_only = late_only[~_near(late_only, everything[t][:20])]
    assert _near(samples[t], late_only).any()


def _near(values, among, rel=1e-5, tiny=1e-6):
    """Which of ``values`` are one of ``among``, to the last bits TensorFlow's kernels keep
    from one batch size to another (a run a few examples at a time is not bit for bit a
    run of all of them on every CPU)."""
    among = np.unique(np.asarray(among, np.float64).ravel())
    values = np.asarray(values, np.float64).ravel()
    if among.size == 0:
        return np.zeros(values.shape, bool)
    at = np.clip(np.searchsorted(among, values), 1, max(among.size - 1, 1))
    nearest = np.minimum(np.abs(values - among[at - 1]), np.abs(values - among[np.minimum(at, among.size - 1)]))
    return nearest <= tiny + rel * np.abs(values)


def test_a_sweeps_measurement_runs_big_inputs_a_few_examples_at_a_time(lenet, monkeypatch):
    g, _, data, result = lenet
    x = list(data.verification)
    whole = report_module.verify(g, result.graph, x, per_layer=False)
    monkeypatch.setattr(report_module, "INPUT_CHUNK_BYTES", 3 * x[0][:1].nbytes)   # three examples a run
    sizes = _fetched_bytes(monkeypatch)
    chunked = report_module.verify(g, result.graph, x, per_layer=False)
    assert len(sizes) == 2 * -(-len(x[0]) // 3)   # both graphs
    assert chunked.sqnr_db == pytest.approx(whole.sqnr_db) and chunked.max_abs == pytest.approx(whole.max_abs)
