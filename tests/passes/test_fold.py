"""Batch-norm folding: exact numerics, what folds, what does not and why."""

import numpy as np
import pytest

import qviz
from qviz.ir import GraphError
from qviz.passes import fold_batch_norms, fold_candidates, fold_values
from qviz.passes.rewrite import GraphEditor
from qviz.ir.ops import BATCH_NORM_OPS
from qviz.passes.fold_batch_norms import batch_norm_nodes
from qviz.samples import randomize_batch_norms
from tests.models import rel_err, zoo_model_random_bn
from qviz import runtime


def _x(graph, n=4, seed=0):
    shape = [n if d is None else d for d in graph.producer(graph.inputs[0]).attrs["shape"]]
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _fold_and_compare(graph, layers=None):
    before = graph.to_graph_def().SerializeToString()
    result = fold_batch_norms(graph, layers)
    assert graph.to_graph_def().SerializeToString() == before, "the original graph was modified"
    x = _x(graph)
    return result, rel_err(runtime.run(result.graph, x)[0], runtime.run(graph, x)[0])


def _remaining_foldable(graph):
    return [c for c in fold_candidates(graph) if c.match is not None]


@pytest.mark.parametrize("sample,folds", [("lenet_digits", 3), ("mobilenet_block", 3),
                                          ("resnet_block", 4), ("fused_bn_tf_keras", 3)])
def test_samples_fold_exactly(samples, sample, folds):
    g = qviz.load(samples[sample])
    result, err = _fold_and_compare(g)
    assert err < 1e-5
    assert len(batch_norm_nodes(g)) - len(batch_norm_nodes(result.graph)) == folds
    assert not _remaining_foldable(result.graph)
    assert result.skipped == ()


def test_folded_nodes_are_named_under_the_layer_scope(samples):
    g = qviz.load(samples["lenet_digits"])
    result = fold_batch_norms(g, ["conv1"])
    added = result.changes.by_layer()["conv1"].added
    assert added and all(name.startswith(g.layer_scope("conv1") + "/BatchNorm_Fold/") for name in added)
    assert all(result.graph.node(n).layer == "conv1" for n in added)
    assert set(result.changes.by_layer()["bn1"].removed) == {n.name for n in g.layer_nodes("bn1")}


def test_layers_selects_which_to_fold(samples):
    g = qviz.load(samples["lenet_digits"])
    result, err = _fold_and_compare(g, ["conv2"])
    assert err < 1e-5
    layers = {n.layer for n in result.graph.nodes}
    assert "bn2" not in layers and {"bn1", "bn3"} <= layers
    with pytest.raises(GraphError, match="no layer named 'conv9'"):
        fold_batch_norms(g, ["conv9"])
    assert [s.layer for s in fold_batch_norms(g, ["relu1"]).skipped] == ["relu1"]


def test_depthwise_multiplier_is_laid_out_in_multiplier(samples):
    g = qviz.load(samples["mobilenet_block"])
    cand = next(c for c in fold_candidates(g) if c.layer == "dw")
    v = fold_values(g, cand.match)
    h, w, cin, mult = v.weights.shape
    assert mult == 2
    want = v.weights * v.multiplier.reshape(cin, mult)
    np.testing.assert_allclose(v.folded_weights, want.astype(np.float32), rtol=1e-6)
    # the formula of the issue, from γ, β, μ, σ², ε
    s = v.gamma / np.sqrt(v.variance + v.epsilon)
    np.testing.assert_allclose(v.multiplier, s, rtol=1e-5)
    np.testing.assert_allclose(v.folded_bias, v.beta + (v.bias - v.mean) * s, rtol=1e-4, atol=1e-6)


def _keras_model(build):
    import keras

    inp = keras.Input((10, 10, 3), name="image")
    out = build(keras.layers, inp)
    model = keras.Model(inp, out)
    randomize_batch_norms(model)
    return model


def test_bn_without_gamma_and_beta_and_atrous_depthwise():
    m = _keras_model(lambda L, x: L.BatchNormalization(scale=False, center=False, name="bn")(
        L.DepthwiseConv2D(3, dilation_rate=2, padding="same", name="dw")(x)))
    g = qviz.load(m)
    assert g.op_counts().get("BatchToSpaceND") == 1
    result, err = _fold_and_compare(g)
    assert err < 1e-5 and not batch_norm_nodes(result.graph)


def test_tf_keras_atrous_fused():
    import tf_keras

    inp = tf_keras.Input((12, 12, 3))
    x = tf_keras.layers.DepthwiseConv2D(3, dilation_rate=2, padding="same", use_bias=False, name="dw")(inp)
    x = tf_keras.layers.BatchNormalization(name="bn")(x)
    model = tf_keras.Model(inp, x)
    randomize_batch_norms(model)
    g = qviz.load(model)
    assert g.op_counts().get("FusedBatchNormV3") == 1 and g.op_counts().get("BatchToSpaceND") == 1
    result, err = _fold_and_compare(g)
    assert err < 1e-5
    assert not any(n.op in BATCH_NORM_OPS for n in result.graph.nodes)
    assert "BiasAdd" in result.graph.op_counts()  # no bias before: the fold adds one


def test_unfoldable_batch_norms_are_left_alone_with_reasons():
    def build(L, x):
        a = L.Conv2D(4, 3, padding="same", name="conv_a")(x)
        shared = L.BatchNormalization(name="bn_shared")(a)          # conv_a also feeds the add
        mixed = L.Add(name="add")([shared, a])
        b = L.Conv2D(4, 3, padding="same", name="conv_b")(x)
        cat = L.Concatenate(name="cat")([mixed, b])
        after_cat = L.BatchNormalization(name="bn_cat")(cat)         # after a concatenation
        pre = L.ReLU(name="pre_relu")(L.BatchNormalization(name="bn_pre")(after_cat))  # pre-activation
        return L.Conv2D(2, 1, name="conv_c")(pre)

    g = qviz.load(_keras_model(build))
    reasons = {c.bn_layer: c.reason for c in fold_candidates(g)}
    assert "also feeds" in reasons["bn_shared"] and "add" in reasons["bn_shared"]
    assert "ConcatV2" in reasons["bn_cat"]
    assert "not after a conv/dense layer" in reasons["bn_pre"]
    result, err = _fold_and_compare(g)
    assert err < 1e-6 and not result.modified
    assert {s.layer for s in result.skipped} == {"bn_shared", "bn_cat", "bn_pre"}


def test_reroute_counts_and_respects_can_modify(samples):
    g = qviz.load(samples["resnet_block"])
    add = next(n for n in g.nodes if n.op == "AddV2" and n.layer == "add1")
    ed = GraphEditor(g)
    assert ed.reroute(add.inputs[0], add.inputs[1], can_modify=["nobody"]) == 0
    assert ed.reroute(add.inputs[0], add.inputs[1], can_modify=[add.name]) == 1
    assert ed.finish().graph.node(add.name).inputs == (add.inputs[0], add.inputs[0])
    assert g.node(add.name).inputs[1] != add.inputs[0]


@pytest.mark.zoo
@pytest.mark.parametrize("name,folded,remaining", [
    ("MobileNetV2", 52, 0), ("ResNet50", 53, 0), ("EfficientNetB0", 49, 0), ("DenseNet121", 59, 62)])
def test_zoo_fold_equals_original(name, folded, remaining):
    g = qviz.load(zoo_model_random_bn(name))
    result, err = _fold_and_compare(g)
    assert err <= 1e-5, f"{name}: relative error {err}"
    assert sum(c.foldable for c in fold_candidates(g)) == folded
    assert len(batch_norm_nodes(result.graph)) == remaining
    assert not _remaining_foldable(result.graph)  # no BN that followed a conv/dense remains
    assert len(result.skipped) == remaining


@pytest.mark.zoo
def test_zoo_tf_keras_fused_fold():
    g = qviz.load(zoo_model_random_bn("MobileNetV2", tf_keras=True))
    assert g.op_counts()["FusedBatchNormV3"] == 52
    result, err = _fold_and_compare(g)
    assert err <= 1e-5
    assert "FusedBatchNormV3" not in result.graph.op_counts()
    assert sum(c.foldable for c in fold_candidates(g)) == 52 and not batch_norm_nodes(result.graph)


def test_the_last_fold_results_are_kept_per_graph_and_are_the_same_folds(samples):
    """A fold toggle asks for the same selections more than once: the last few results are
    kept with the graph, by the set of layers asked for (any order), and equal a fresh fold."""
    from qviz.passes.fold_batch_norms import RECENT_FOLDS, _fold

    graph = qviz.load(samples["lenet_digits"])
    first = fold_batch_norms(graph, ["conv1", "conv2"])
    assert fold_batch_norms(graph, ["conv2", "conv1"]) is first
    fresh = _fold(graph, {"conv1", "conv2"})
    assert [n.name for n in first.graph.nodes] == [n.name for n in fresh.graph.nodes]
    assert all(a == b for a, b in zip(first.graph.nodes, fresh.graph.nodes))
    assert first.changes == fresh.changes and first.skipped == fresh.skipped
    # others push it out, oldest first; a graph's results are its own
    for layers in (["conv1"], ["conv2"], None)[:RECENT_FOLDS]:
        assert fold_batch_norms(graph, layers) is not first
    assert fold_batch_norms(graph, ["conv1", "conv2"]) is not first
    other = qviz.load(samples["lenet_digits"])
    assert fold_batch_norms(other, None).graph is not fold_batch_norms(graph, None).graph
