"""Issue 20.6: the three orders of folding and quantizing one layer, each with its
output error — the first checked against what qviz.apply (and so TFLite) runs."""

import numpy as np
import pytest

import qviz
from qviz.analysis.fold_orders import fold_orders
from qviz.metrics import layer_outputs
from qviz.metrics.report import sqnr_db
from qviz.samples import data_for, sample_path
from qviz import runtime


@pytest.fixture(scope="module")
def lenet():
    g = qviz.load(sample_path("lenet_digits"))
    return g, data_for(g).calibration


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("layer", ["conv2", "fc1"])
def test_fold_then_quantize_is_what_qviz_apply_runs(lenet, layer, per_channel):
    g, data = lenet
    orders = fold_orders(g, layer, bits=(4,), inputs=data)
    # a dense layer's weights stay per-tensor (TFLite refuses per-channel ones), and the orders say so
    scheme = "per-channel" if per_channel and layer != "fc1" else "per-tensor"
    if layer == "fc1":
        assert orders.deploys("fold, then quantize", "per-channel").startswith("refused")
    # the recipe: only this layer folded, only its weights quantized (4 bits), activations float
    recipe = qviz.Recipe.from_dict({"fold": {"default": False, "layers": {layer: True}},
                                    "quantize": {"default": None,
                                                 "layers": {layer: {"weight_bits": 4, "activation_bits": None}}},
                                    "options": {"per_channel": per_channel}})
    result = qviz.apply(g, recipe, calibration=data, report=False)
    x = [a[:orders.examples] for a in data]
    want = runtime.run(g, *x, fetches=[layer_outputs(g)[orders.bn_layer]])[0]
    got = runtime.run(result.graph, *x, fetches=[layer_outputs(result.graph)[layer]])[0]
    assert orders.result("fold, then quantize", scheme, 4).sqnr_db == pytest.approx(sqnr_db(got, want), abs=0.05)


def test_per_channel_the_two_orders_give_one_kernel_per_tensor_they_differ(lenet):
    g, data = lenet
    o = fold_orders(g, "conv2", bits=(8, 4), inputs=data)
    assert o.float_check < 1e-4                      # unquantized, every order is the batch norm exactly
    for bits in (8, 4):
        a, b = (o.result(order, "per-channel", bits) for order in ("fold, then quantize", "quantize, then fold"))
        assert a.sqnr_db == pytest.approx(b.sqnr_db, abs=0.01)
        np.testing.assert_allclose(a.channel_sqnr_db, b.channel_sqnr_db, atol=0.01)
    # conv2's multipliers spread: one per-tensor grid over the folded kernel costs more than over the raw one
    f, q = (o.result(order, "per-tensor", 4).sqnr_db for order in ("fold, then quantize", "quantize, then fold"))
    assert q - f > 1.0
    assert "loses" in o.summary(4) and "only folding first runs in int8" in o.summary(4)
    assert o.deploys("quantize, then fold", "per-tensor").startswith("float")
    assert o.deploys("quantize, then fold", "per-channel").startswith("int8")
    # what it stores is what the device table says for those bits (the report said int8 at 4)
    assert o.deploys("fold, then quantize", "per-tensor", 4).startswith("int4")
    assert o.deploys("fold, then quantize", "per-tensor", 6).startswith("int8")


def test_fewer_bits_more_error_in_every_order(lenet):
    g, data = lenet
    o = fold_orders(g, "conv1", bits=(8, 4, 2), inputs=data)
    for order in ("fold, then quantize", "quantize, then fold", "training-mode fold"):
        for scheme in ("per-tensor", "per-channel"):
            db = [o.result(order, scheme, b).sqnr_db for b in (8, 4, 2)]
            assert db[0] > db[1] > db[2]


def test_a_layer_without_a_foldable_batch_norm_is_refused(lenet):
    g, _ = lenet
    with pytest.raises(ValueError, match="no batch norm after it"):
        fold_orders(g, "logits")
