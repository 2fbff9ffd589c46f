"""Fake-quant insertion: where the ops go, their bits and ranges, and calibration."""

import numpy as np
import pytest

import qviz
from qviz.ir import GraphError
from qviz.passes import LayerBits, QuantizeConfig, fold_batch_norms, quantizable_layers, quantizable_units, quantize
from qviz.passes.calibration import CalibrationError, activation_ranges
from qviz.ir.ops import FAKE_QUANT_OPS
from qviz.samples import data_for, sample_data
from tests.models import rel_err, zoo_model
from qviz import runtime


def _fq(graph):
    return [n for n in graph.nodes if n.op in FAKE_QUANT_OPS]


def _all(graph, w=8, a=8, **options):
    return QuantizeConfig({name: LayerBits(w, a) for name in quantizable_layers(graph)}, **options)


@pytest.fixture(scope="module")
def lenet(samples):
    return fold_batch_norms(qviz.load(samples["lenet_digits"])).graph


def test_four_bit_weights_take_at_most_16_values(lenet):
    r = quantize(lenet, _all(lenet, 4, 8))
    x = data_for(lenet).calibration[0][:4]
    weight_fqs = [n for n in _fq(r.graph) if "weights_quant" in n.name]
    assert len(weight_fqs) == 4
    values = runtime.run(r.graph, x, fetches=[n.output(0) for n in weight_fqs])
    for node, v in zip(weight_fqs, values):
        assert node.attrs["num_bits"] == 4
        assert 2 < len(np.unique(v)) <= 16, node.name


@pytest.mark.parametrize("per_channel", [False, True])
def test_narrow_range_and_per_channel_bounds(samples, per_channel):
    g = fold_batch_norms(qviz.load(samples["mobilenet_block"])).graph
    r = quantize(g, _all(g, 3, 8, per_channel=per_channel, narrow_range=True))
    x = data_for(g).calibration[0][:2]
    fqs = [n for n in _fq(r.graph) if "weights_quant" in n.name]
    values = runtime.run(r.graph, x, fetches=[n.output(0) for n in fqs])
    for node, v in zip(fqs, values):
        assert node.attrs["narrow_range"] is True
        lo = r.graph.producer(node.inputs[1]).value
        dense = any(n.op == "MatMul" for n in r.graph.layer_nodes(node.layer))
        if per_channel and not dense:   # one range per output channel, laid out on the last axis
            assert node.op == "FakeQuantWithMinMaxVarsPerChannel"
            assert lo.shape == (v.shape[-1],)
            groups = v.reshape(-1, v.shape[-1]).T
        else:
            assert lo.shape == ()
            groups = [v.ravel()]
        # narrow range at 3 bits: levels 1..7, so at most 7 values per range
        assert max(len(np.unique(g_)) for g_ in groups) <= 7


def test_symmetric_ranges(lenet):
    r = quantize(lenet, _all(lenet, weight_symmetric=True, activation_symmetric=True))
    for node in _fq(r.graph):
        lo, hi = (r.graph.producer(t).value for t in node.inputs[1:])
        np.testing.assert_allclose(lo, -hi)


def test_one_layer_at_four_bits_touches_only_that_layer(lenet):
    r = quantize(lenet, QuantizeConfig({"conv2": LayerBits(4, 4)}))
    fqs = _fq(r.graph)
    assert {n.layer for n in fqs} == {"conv2", "relu2"}     # its weights and its activation
    assert all(n.attrs["num_bits"] == 4 for n in fqs)
    assert set(r.changes.by_layer()) <= {"conv2", "relu2", "pool"}  # pool reads the quantized relu2


def test_never_quantizes_twice(samples):
    for name in ("resnet_block", "mobilenet_block"):
        g = fold_batch_norms(qviz.load(samples[name])).graph
        for per_channel in (False, True):
            once = quantize(g, _all(g, per_channel=per_channel))
            assert once.modified
            twice = quantize(once.graph, _all(g, per_channel=per_channel))
            assert not twice.modified, (name, per_channel, twice.changes)
            # ... and says so, layer by layer, instead of doing nothing silently
            said = {s.layer for s in twice.skipped if "fake-quantized in the graph already" in s.reason}
            assert said == set(quantizable_layers(g)), (name, per_channel, twice.skipped)
            assert quantizable_layers(once.graph) == ()
            tensors = [n.inputs[0] for n in _fq(once.graph)]
            assert len(tensors) == len(set(tensors))


def test_bypass_adds_are_quantized_as_tflite_runs_them(samples):
    g = fold_batch_norms(qviz.load(samples["resnet_block"])).graph
    r = quantize(g, QuantizeConfig({u: LayerBits(8, 8) for u in quantizable_units(g)}))
    q = r.graph
    for layer in ("add1", "add2"):
        add = next(n for n in q.layer_nodes(layer) if n.op in ("Add", "AddV2"))
        for t in add.inputs:
            assert q.producer(t).op in FAKE_QUANT_OPS, f"{layer} input {t}"
        readers = q.consumers(add)
        if [c.op for c in readers] == ["Relu"]:    # TFLite fuses the ReLU into the Add: one rounding, after it
            assert [c.op for c in q.consumers(readers[0])][0] in FAKE_QUANT_OPS
        else:
            assert [c.op for c in readers] == ["FakeQuantWithMinMaxVars"]
    assert q.producer(q.node("resnet_block_1/add1_1/Add").inputs[0]).op != "Relu"


def test_selecting_a_conv_does_not_quantize_the_add_after_it(samples):
    g = fold_batch_norms(qviz.load(samples["resnet_block"])).graph
    r = quantize(g, QuantizeConfig({"conv2": LayerBits(8, 8)}))
    assert {n.layer for n in _fq(r.graph)} == {"conv2"}   # weights, input and output: no add1, no relu2


def test_unfolded_bn_still_quantizes_after_the_chain(samples):
    g = qviz.load(samples["lenet_digits"])                # not folded
    r = quantize(g, QuantizeConfig({"conv1": LayerBits(8, 8)}))
    act = next(n for n in _fq(r.graph) if "act_quant" in n.name)
    assert r.graph.producer(act.inputs[0]).op == "Relu"


def test_sixteen_bits_everywhere_is_near_lossless(lenet, samples):
    g = qviz.load(samples["lenet_digits"])
    x = sample_data("lenet_digits")["x_test"]
    r = quantize(lenet, _all(lenet, 16, 16), calibration=[x])
    assert rel_err(runtime.run(r.graph, x)[0], runtime.run(g, x)[0]) < 1e-3


def test_bad_config(lenet):
    with pytest.raises(ValueError, match="between 2 and 16"):
        LayerBits(17, 8)
    with pytest.raises(ValueError, match="activation_bits must be an integer"):
        LayerBits(8, 4.5)
    with pytest.raises(GraphError, match="no layer named 'nope'"):
        quantize(lenet, QuantizeConfig({"nope": LayerBits()}))
    r = quantize(lenet, QuantizeConfig({"relu1": LayerBits()}))
    assert not r.modified and "has no Conv2D" in str(r.skipped[0])


def test_calibration_min_max_and_ema(lenet):
    relu = lenet.layer_nodes("relu1")[-1].output(0)
    x = data_for(lenet).calibration[0]
    (lo, hi), = activation_ranges(lenet, [relu], [x]).values()
    whole = runtime.run(lenet, x, fetches=[relu])[0]
    assert (lo, hi) == (float(whole.min()), float(whole.max()))
    (_, hi_last), = activation_ranges(lenet, [relu], [x], batch_size=32, ema_decay=0.0).values()
    assert hi_last == float(whole[96:].max())
    (_, hi_ema), = activation_ranges(lenet, [relu], [x], batch_size=32, ema_decay=0.5).values()
    assert hi_ema != hi and hi_ema <= hi
    with pytest.raises(CalibrationError, match="ema_decay"):
        activation_ranges(lenet, [relu], [x], ema_decay=1.5)
    with pytest.raises(CalibrationError, match="1 input"):
        activation_ranges(lenet, [relu], [x, x])


@pytest.mark.zoo
def test_zoo_mobilenet_16_bits_moves_outputs_less_than_1e3():
    g = qviz.load(zoo_model("MobileNetV2"))
    x = np.random.default_rng(0).uniform(0, 1, (4, 64, 64, 3)).astype(np.float32)
    folded = fold_batch_norms(g).graph
    r = quantize(folded, _all(folded, 16, 16), calibration=[x])
    assert len(_fq(r.graph)) > 100
    assert rel_err(runtime.run(r.graph, x)[0], runtime.run(g, x)[0]) < 1e-3


def test_calibration_takes_a_bare_array_for_a_one_input_graph(lenet, samples):
    x = sample_data("lenet_digits")["x_calib"]
    bare = quantize(lenet, _all(lenet), calibration=x)
    listed = quantize(lenet, _all(lenet), calibration=[x])
    assert bare.graph.to_graph_def().SerializeToString() == listed.graph.to_graph_def().SerializeToString()
    result = qviz.apply(qviz.load(samples["lenet_digits"]), qviz.Recipe.default(lenet), calibration=x, report=False)
    assert any(n.op in FAKE_QUANT_OPS for n in result.graph.nodes)


def test_calibration_data_is_made_only_when_a_range_is_missing(samples):
    import qviz
    from qviz.passes.calibration import noise_inputs

    g = qviz.load(samples["lenet_digits"])
    recipe = qviz.Recipe.default(g)
    made = []

    def data():
        made.append(1)
        return noise_inputs(g, count=8, seed=0)

    first = qviz.apply(g, recipe, report=False, calibration=data)
    assert made == [1]       # nothing measured yet: the data is made, once
    from qviz.passes.quant_points import quant_points

    folded = first.folded.graph
    points, _ = quant_points(folded, recipe.quantize_config(folded))
    every = {p.tensor: (0.0, 1.0) for p in points}
    qviz.apply(g, recipe, report=False, ranges=every, calibration=data)
    assert made == [1]       # every range known: no data made
