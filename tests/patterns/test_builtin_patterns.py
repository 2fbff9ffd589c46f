"""Built-in patterns find exactly the expected matches in samples and real nets."""

import pytest

import qviz
from qviz.cli import main
from qviz.matcher import explain_layer, find_matches
from qviz.patterns import BUILTIN, builtin_doc
from tests.models import zoo_model

# sample → built-in → count of maximal matches
EXPECTED = {
    "lenet_digits": {"conv_bn_fused": 0, "conv_bn_unfused": 3, "conv_bn": 3, "layer_activation": 4,
                     "bypass_add": 0, "post_activation_bypass": 0},
    # the residual Add(stem ReLU6, project BN) is both a bypass of `project` and a
    # post-activation bypass of `stem`, exactly as upstream's patterns see it
    "mobilenet_block": {"conv_bn_fused": 0, "conv_bn_unfused": 3, "conv_bn": 3, "layer_activation": 4,
                        "bypass_add": 1, "post_activation_bypass": 1},
    # add1 = Add(bn2, stem ReLU) is also a post-activation bypass of the stem
    "resnet_block": {"conv_bn_fused": 0, "conv_bn_unfused": 4, "conv_bn": 4, "layer_activation": 5,
                     "bypass_add": 1, "post_activation_bypass": 2},
    "fused_bn_tf_keras": {"conv_bn_fused": 3, "conv_bn_unfused": 0, "conv_bn": 3, "layer_activation": 4,
                          "bypass_add": 0, "post_activation_bypass": 0},
}


@pytest.mark.parametrize("sample", list(EXPECTED))
def test_builtins_on_samples(samples, sample):
    g = qviz.load(samples[sample])
    got = {name: len(find_matches(p, g)) for name, p in BUILTIN.items()}
    assert got == EXPECTED[sample]


def test_bound_nodes_are_the_right_layers(samples):
    g = qviz.load(samples["lenet_digits"])
    pairs = [(m.get_op("layer").layer, m.get_op("bn").layer if m.get_op("bn") else None,
              m.root.layer) for m in find_matches(BUILTIN["layer_activation"], g)]
    assert pairs == [("conv1", "bn1", "relu1"), ("conv2", "bn2", "relu2"),
                     ("fc1", "bn3", "relu3"), ("logits", None, "logits")]
    (m,) = [m for m in find_matches(BUILTIN["conv_bn_unfused"], g) if m.root.layer == "bn1"]
    assert m.get_op("scale").op == "Mul" and m.get_op("rsqrt").op == "Rsqrt"
    assert m.get_op("bias_add").op == "BiasAdd" and g.is_constant(m.get_tensor("bias"))
    resnet = qviz.load(samples["resnet_block"])
    (post,) = [m for m in find_matches(BUILTIN["post_activation_bypass"], resnet) if m.root.layer == "add2"]
    assert post.get_op("activation").layer == "relu3"
    (byp,) = find_matches(BUILTIN["bypass_add"], resnet)
    assert (byp.get_op("bypass").layer, byp.get_op("activation").layer, byp.get_op("layer").layer) == (
        "add1", "relu2", "conv2")


def test_fused_pattern_through_identity_and_batch_to_space():
    """Atrous conv (SpaceToBatch → Conv2D → BatchToSpace) and an Identity before a fused BN."""
    import numpy as np
    import tensorflow as tf

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [1, 8, 8, 2], name="x")
        w = tf.constant(np.ones((3, 3, 2, 4), np.float32), name="w")
        conv = tf.nn.atrous_conv2d(x, w, rate=2, padding="SAME", name="atrous")
        ones, zeros = tf.ones([4]), tf.zeros([4])
        tf.compat.v1.nn.fused_batch_norm(conv, ones, zeros, zeros, ones, is_training=False, name="bn1")
        conv2 = tf.nn.conv2d(x, w, 1, "SAME", name="plain")
        tf.compat.v1.nn.fused_batch_norm(tf.identity(conv2, name="id"), ones, zeros, zeros, ones,
                                         is_training=False, name="bn2")
    graph = qviz.load(g.as_graph_def())
    matches = {m.root.name: m for m in find_matches(BUILTIN["conv_bn_fused"], graph)}
    assert sorted(matches) == ["bn1", "bn2"]
    assert matches["bn1"].get_op("batch_to_space").op == "BatchToSpaceND"
    assert matches["bn2"].get_op("identity").name == "id"


def test_every_builtin_has_a_diagram():
    for name in BUILTIN:
        doc = builtin_doc(name)
        assert doc.strip() and "|" in doc, name


@pytest.mark.zoo
@pytest.mark.parametrize("net,conv_bn,layers,bypass", [
    ("MobileNetV2", 52, 53, 10), ("ResNet50", 53, 54, 16), ("DenseNet121", 59, 121, 0)])
def test_builtins_on_real_nets(net, conv_bn, layers, bypass):
    g = qviz.load(zoo_model(net))
    assert len(find_matches(BUILTIN["conv_bn"], g)) == conv_bn
    assert len(find_matches(BUILTIN["conv_bn_unfused"], g)) == conv_bn
    assert len(find_matches(BUILTIN["layer_activation"], g)) == layers  # every conv/dense layer
    assert len(find_matches(BUILTIN["bypass_add"], g)) == bypass
    if net == "DenseNet121":
        # BNs after a concatenation (pre-activation blocks, transitions) do not match, and say why
        matched = {m.root.layer for m in find_matches(BUILTIN["conv_bn"], g)}
        assert "conv2_block2_0_bn" not in matched and "conv2_block2_1_bn" in matched
        why = explain_layer(BUILTIN["conv_bn"], g, "conv2_block2_0_bn")
        assert "comes from 'densenet121_1/conv2_block1_concat_1/concat' (ConcatV2, layer conv2_block1_concat)" in why
        assert why.endswith("expected Conv2D|DepthwiseConv2dNative|MatMul")


def test_cli_match_lists_and_explains(samples, capsys):
    assert main(["match", str(samples["lenet_digits"]), "--builtin", "conv_bn"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 match(es)")
    assert "layer bn2:" in out and "conv2_1/convolution (Conv2D, layer conv2)" in out
    assert main(["match", str(samples["lenet_digits"]), "--pattern", "Relu(* as x) as act"]) == 0
    assert capsys.readouterr().out.startswith("3 match(es)")
    assert main(["match", str(samples["lenet_digits"]), "--builtin", "conv_bn", "--explain", "relu1"]) == 0
    assert "expected FusedBatchNorm|FusedBatchNormV2|FusedBatchNormV3|Add|AddV2" in capsys.readouterr().out


def test_cli_match_errors(samples, capsys):
    assert main(["match", str(samples["lenet_digits"]), "--pattern", "Relu(Conv2D(*, *"]) == 2
    assert "line 1, column 17" in capsys.readouterr().err
    assert main(["match", str(samples["lenet_digits"]), "--builtin", "nope"]) == 2
    assert "no built-in pattern 'nope'" in capsys.readouterr().err
    assert main(["match", str(samples["lenet_digits"]), "--builtin", "conv_bn", "--explain", "zzz"]) == 2
    assert "no node or layer" in capsys.readouterr().err


def test_explain_by_layer_finds_the_match_a_layer_takes_part_in(samples):
    """A conv whose batch norm folds is in the match rooted at the BN's output:
    explaining the conv's layer says so, instead of "does not match"."""
    from qviz.matcher import explain_layer

    g = qviz.load(samples["lenet_digits"])
    conv = explain_layer(BUILTIN["conv_bn"], g, "conv1")
    assert conv.startswith("layer conv1 takes part as layer (Conv2D) in the match rooted at ")
    assert conv.endswith("(AddV2, layer bn1)")
    assert explain_layer(BUILTIN["conv_bn"], g, "bn1").startswith("layer bn1 takes part as bn (AddV2)")
    assert explain_layer(BUILTIN["conv_bn"], g, "relu1").startswith("layer relu1 does not match; the closest is")
