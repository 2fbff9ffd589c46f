"""Training-mode folding: each mode equals batch norm with batch statistics before
the freeze and the inference fold after it, for Conv2D, depthwise and Dense, fused
and unfused."""

import numpy as np
import pytest

import qviz
from qviz.metrics import layer_outputs
from qviz.ir import GraphError
from qviz.passes import fold_batch_norms, fold_candidates
from qviz.passes.fold_training import MODES, STEP, batch_norm_with_batch_stats, fold_batch_norms_training
from tests.models import rel_err
from qviz import runtime


def _x(graph, n=16, seed=0):
    shape = [n if d is None else d for d in graph.producer(graph.inputs[0]).attrs["shape"]]
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _layer_out(graph, x, layer):
    return runtime.run(graph, x, fetches=[layer_outputs(graph)[layer]])[0]


@pytest.mark.parametrize("sample", ["lenet_digits", "mobilenet_block", "fused_bn_tf_keras"])
@pytest.mark.parametrize("mode", MODES)
def test_batch_stats_before_freeze_moving_stats_after(samples, sample, mode):
    g = qviz.load(samples[sample])
    before = g.to_graph_def().SerializeToString()
    x = _x(g)
    checked = set()
    for cand in fold_candidates(g):
        if not cand.foldable:
            continue
        ref_batch = batch_norm_with_batch_stats(runtime.run(g, x, fetches=[cand.match.bn_input])[0], cand.values)
        inference = fold_batch_norms(g, [cand.layer]).graph
        ref_moving = _layer_out(inference, x, cand.layer)
        for step, want in ((3, ref_batch), (10, ref_moving)):
            r = fold_batch_norms_training(g, [cand.layer], mode=mode, freeze_batch_norm_delay=10, step=step)
            got = _layer_out(r.graph, x, cand.layer)
            assert rel_err(got, want) < 1e-5, (cand.layer, mode, step)
            assert cand.bn_layer not in {n.layer for n in r.graph.nodes}
        checked.add(g.node(cand.match.layer_op.name).op)
    assert g.to_graph_def().SerializeToString() == before, "the original graph was modified"
    assert checked, "no layer was checked"


def test_all_three_kinds_are_covered(samples):
    ops = set()
    for sample in ("lenet_digits", "mobilenet_block"):
        g = qviz.load(samples[sample])
        ops |= {c.match.layer_op.op for c in fold_candidates(g) if c.foldable}
    assert {"Conv2D", "DepthwiseConv2dNative", "MatMul"} <= ops


def test_matches_keras_batch_norm_in_training_mode(samples):
    """The reference itself: Keras' BatchNormalization(training=True) on lenet's conv1."""
    import keras

    model = keras.models.load_model(samples["lenet_digits"])
    g = qviz.load(samples["lenet_digits"])
    x = _x(g, n=32, seed=3)
    keras_bn1 = keras.Model(model.inputs, model.get_layer("bn1").output)(x, training=True).numpy()
    r = fold_batch_norms_training(g, ["conv1"], mode="tf_contrib")
    assert rel_err(_layer_out(r.graph, x, "conv1"), keras_bn1) < 1e-5


def test_contrib_structure_and_switch(samples):
    g = qviz.load(samples["lenet_digits"])
    r = fold_batch_norms_training(g, ["conv2"], mode="tf_contrib", freeze_batch_norm_delay=5)
    ops = {n.name.rsplit("/", 1)[-1]: n for n in r.graph.nodes if n.layer == "conv2"}
    assert ops["correction_recip"].op == "SelectV2" and ops["correction_offset"].op == "SelectV2"
    assert ops["correction_scale"].op == "Identity" and ops["mul_fold"].inputs[0] == ops["correction_mult"].output(0)
    assert r.graph.node(STEP).op == "PlaceholderWithDefault"
    # Without a delay nothing switches: no step, no select.
    r2 = fold_batch_norms_training(g, ["conv2"], mode="tf_contrib")
    assert STEP not in r2.graph and not any(n.op == "SelectV2" for n in r2.graph.nodes)


def test_training_graph_exports(samples, tmp_path):
    from qviz.exporters import save_graph_def

    g = qviz.load(samples["mobilenet_block"])
    r = fold_batch_norms_training(g, mode="ema_stats_folding", freeze_batch_norm_delay=2)
    path = save_graph_def(r.graph, tmp_path / "train.pb")
    again = qviz.load(path)
    x = _x(g)
    assert rel_err(runtime.run(again, x)[0], runtime.run(r.graph, x)[0]) < 1e-6


def test_bad_arguments_name_the_cause(samples):
    g = qviz.load(samples["lenet_digits"])
    with pytest.raises(ValueError, match="mode: 'qkeras' is not one of"):
        fold_batch_norms_training(g, mode="qkeras")
    with pytest.raises(ValueError, match="freeze_batch_norm_delay: must be ≥ 0"):
        fold_batch_norms_training(g, freeze_batch_norm_delay=-1)
    with pytest.raises(GraphError, match="no layer named 'convX'"):
        fold_batch_norms_training(g, ["convX"])
