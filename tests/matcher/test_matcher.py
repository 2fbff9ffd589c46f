"""The matcher: ported upstream graph_matcher_test cases, the fixed quirks, explain."""

import numpy as np
import pytest

import qviz
from qviz.ir import Graph, Node
from qviz.matcher import (GraphMatcher, OneofPattern, OpTypePattern, explain, explain_failure,
                          find_matches)


def tf_graph(build):
    """Build a graph with TF ops in a v1 graph and load its GraphDef through qviz."""
    import tensorflow as tf

    g = tf.Graph()
    with g.as_default():
        build(tf)
    return qviz.load(g.as_graph_def())


def test_conv_layer_with_fused_batch_norm():
    """Upstream's test_basic: its assertions sat in a loop over matches that never matched."""
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [8, 5, 5, 3], name="input")
        w = tf.constant(np.ones((3, 3, 3, 16), np.float32), name="weights")
        conv = tf.nn.conv2d(x, w, 1, "VALID", name="conv")
        scale, offset = tf.ones([16], name="gamma"), tf.zeros([16], name="beta")
        mean, var = tf.zeros([16], name="mean"), tf.ones([16], name="variance")
        bn, _, _ = tf.compat.v1.nn.fused_batch_norm(conv, scale, offset, mean, var,
                                                    is_training=False, name="bn")
        tf.nn.relu(bn, name="relu")

    g = tf_graph(build)
    gamma, beta, mean, var = (OpTypePattern("*") for _ in range(4))
    conv = OpTypePattern("Conv2D", inputs=["*", "*"])
    bn = OpTypePattern("FusedBatchNorm|FusedBatchNormV3", inputs=[conv, gamma, beta, mean, var])
    relu = OpTypePattern("Relu", inputs=[bn])
    matches = list(GraphMatcher(relu).match_graph(g))
    assert len(matches) == 1  # upstream's loop body never ran; here it must
    m = matches[0]
    assert m.get_op(relu).name == "relu"
    assert m.get_op(bn).name == "bn" and m.get_tensor(bn) == "bn:0"
    assert m.get_op(conv).name == "conv" and m.get_tensor(conv) == "conv:0"
    assert [m.get_op(p).name for p in (gamma, beta, mean, var)] == ["gamma", "beta", "mean", "variance"]
    assert m.get_tensor(relu) is None  # the root was consumed by nobody in the pattern


def test_multiple_outputs():
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [4], name="input")
        a, b = tf.split(x, 2, name="split")
        tf.add(b, a, name="add")

    g = tf_graph(build)
    split = OpTypePattern("Split|SplitV", name="split")
    add = OpTypePattern("Add|AddV2", inputs=[split, split])
    m = GraphMatcher(add, g).match_op("add")
    assert m.get_op("split").name == "split"
    assert m.get_tensor("split") == "split:1"  # consumed through output 1 first
    assert m.get_tensor(add) is None


def test_oneof_type_pattern():
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [1], name="x")
        c = tf.constant([1.0], name="c")
        tf.add(x, c, name="add")
        tf.subtract(x, c, name="sub")

    g = tf_graph(build)
    pattern = OpTypePattern("AddV2|Sub", inputs=["Placeholder", "Const"])
    assert [m.root.name for m in GraphMatcher(pattern).match_graph(g)] == ["add", "sub"]


def test_oneof_pattern():
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [1], name="x")
        c = tf.constant([1.0], name="c")
        tf.add(x, c, name="add")
        tf.subtract(x, c, name="sub")
        tf.multiply(x, c, name="mul")

    g = tf_graph(build)
    pattern = OneofPattern([OpTypePattern("AddV2", name="a", inputs=["*", "*"]),
                            OpTypePattern("Sub", name="s", inputs=["*", "*"])])
    matches = list(GraphMatcher(pattern).match_graph(g))
    assert [m.root.name for m in matches] == ["add", "sub"]
    assert matches[0].get_op("a").name == "add" and matches[0].get_op("s") is None
    assert matches[1].get_op("s").name == "sub"


def test_ordered_and_unordered_inputs():
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [1], name="x")
        c = tf.constant([1.0], name="c")
        tf.subtract(x, c, name="x_minus_c")
        tf.subtract(c, x, name="c_minus_x")

    g = tf_graph(build)
    ordered = OpTypePattern("Sub", inputs=["Const", "Placeholder"])
    unordered = OpTypePattern("Sub", inputs=["Const", "Placeholder"], ordered_inputs=False)
    assert [m.root.name for m in GraphMatcher(ordered).match_graph(g)] == ["c_minus_x"]
    assert [m.root.name for m in GraphMatcher(unordered).match_graph(g)] == ["x_minus_c", "c_minus_x"]


def _g(*nodes, outputs=None):
    return Graph([Node(n[0], n[1], n[2] if len(n) > 2 else (), attrs=n[3] if len(n) > 3 else None)
                  for n in nodes], inputs=[], outputs=outputs or [nodes[-1][0] + ":0"])


def test_failed_permutation_does_not_leak_bindings():
    g = _g(("a", "Const"), ("b", "Placeholder"), ("c", "Const"), ("add", "AddV2", ["a", "b"]))
    first = OpTypePattern("Const", name="first")
    pattern = OpTypePattern("AddV2", inputs=[first, OpTypePattern("Const", name="second")],
                            ordered_inputs=False)
    assert GraphMatcher(pattern, g).match_op("add") is None
    # a branch that fails after binding 'first' must not leave it bound in the winner
    alt = OneofPattern([OpTypePattern("AddV2", inputs=[first, "Const"]),
                        OpTypePattern("AddV2", inputs=["*", "*"], name="plain")])
    m = GraphMatcher(alt, g).match_op("add")
    assert m.get_op("plain").name == "add" and m.get_op("first") is None


def test_pattern_used_twice_binds_the_same_node():
    g = _g(("x", "Placeholder"), ("y", "Placeholder"), ("same", "Mul", ["x", "x"]),
           ("diff", "Mul", ["x", "y"]))
    leaf = OpTypePattern("Placeholder", name="leaf")
    square = OpTypePattern("Mul", inputs=[leaf, leaf])
    assert [m.root.name for m in GraphMatcher(square).match_graph(g)] == ["same"]
    assert "is not the same op as 'x'" in explain(square, g, "diff")


def test_input_limit_only_for_unordered_inputs():
    many = ["*"] * 12
    OpTypePattern("ConcatV2", inputs=many)  # ordered: no limit
    with pytest.raises(ValueError, match="at most 8 unordered inputs"):
        OpTypePattern("ConcatV2", inputs=many, ordered_inputs=False)


def test_control_inputs_do_not_count_as_inputs():
    g = Graph([Node("x", "Placeholder"), Node("n", "NoOp"),
               Node("r", "Relu", ["x"], control_inputs=["n"])], inputs=["x"], outputs=["r"])
    assert GraphMatcher(OpTypePattern("Relu", inputs=["Placeholder"]), g).match_op("r")


def test_attribute_tests():
    g = _g(("x", "Placeholder"), ("w", "Const"),
           ("nhwc", "Conv2D", ["x", "w"], {"data_format": "NHWC"}),
           ("nchw", "Conv2D", ["x", "w"], {"data_format": "NCHW"}))
    p = OpTypePattern("Conv2D", attrs={"data_format": "NHWC"})
    assert [m.root.name for m in GraphMatcher(p).match_graph(g)] == ["nhwc"]
    pred = OpTypePattern("Conv2D", attrs={"data_format": lambda v: v.startswith("NC")})
    assert [m.root.name for m in GraphMatcher(pred).match_graph(g)] == ["nchw"]
    assert "has data_format='NCHW', expected data_format='NHWC'" in explain(p, g, "nchw")


def test_optional_node():
    g = _g(("x", "Placeholder"), ("w", "Const"), ("conv", "Conv2D", ["x", "w"]),
           ("id", "Identity", ["conv"]), ("r1", "Relu", ["id"]), ("r2", "Relu", ["conv"]),
           ("r3", "Relu", ["x"]))
    conv = OpTypePattern("Conv2D", name="conv")
    p = OpTypePattern("Relu", inputs=[OpTypePattern("Identity", name="id", inputs=[conv], optional=True)])
    matches = {m.root.name: m for m in GraphMatcher(p).match_graph(g)}
    assert sorted(matches) == ["r1", "r2"]
    assert matches["r1"].get_op("id").name == "id" and matches["r2"].get_op("id") is None
    assert matches["r2"].get_op("conv").name == "conv"
    with pytest.raises(ValueError, match="needs inputs"):
        OpTypePattern("Identity", optional=True)


def test_match_result_keys():
    g = _g(("x", "Placeholder"), ("r", "Relu", ["x"]))
    m = GraphMatcher(OpTypePattern("Relu", name="act", inputs=["*"]), g).match_op("r")
    assert m.get_op("act").name == "r" and m.get_op("nope") is None and m.get_tensor("nope") is None
    with pytest.raises(TypeError, match="Patterns or names"):
        m.get_op(3)


def test_match_op_needs_a_graph():
    with pytest.raises(ValueError, match="has no graph"):
        GraphMatcher(OpTypePattern("Relu")).match_op("r")


def test_explain_names_the_deepest_failure_and_what_was_there():
    g = _g(("x", "Placeholder"), ("y", "Placeholder"), ("cat", "ConcatV2", ["x", "y"]),
           ("bn", "FusedBatchNormV3", ["cat", "x", "x", "x", "x"]))
    layer = OpTypePattern("Conv2D|DepthwiseConv2dNative|MatMul", inputs=["*", "*"])
    bn = OpTypePattern("FusedBatchNormV3", inputs=[OpTypePattern("Identity", inputs=[layer], optional=True),
                                                   "*", "*", "*", "*"])
    f = explain_failure(bn, g, "bn")
    assert f.depth == 1 and f.node.name == "cat"
    assert explain(bn, g, "bn") == (
        "bn (FusedBatchNormV3, layer bn) does not match: its input 0 comes from 'cat' (ConcatV2, "
        "layer cat), expected Conv2D|DepthwiseConv2dNative|MatMul")
    assert explain(bn, g, "x").endswith("it is a Placeholder, expected FusedBatchNormV3")
    assert "has 2 data inputs, expected 5" in explain(
        OpTypePattern("ConcatV2", inputs=["*"] * 5), g, "cat")


def test_find_matches_keeps_only_maximal_ones():
    g = _g(("x", "Placeholder"), ("w", "Const"), ("conv", "Conv2D", ["x", "w"]),
           ("relu", "Relu", ["conv"]), ("conv2", "Conv2D", ["relu", "w"]))
    p = OpTypePattern("Relu", optional=True, inputs=[OpTypePattern("Conv2D", inputs=["*", "*"])])
    assert [m.root.name for m in GraphMatcher(p).match_graph(g)] == ["conv", "relu", "conv2"]
    # conv lies inside relu's match; relu feeds conv2 only as a leaf wildcard, so both stay
    assert [m.root.name for m in find_matches(p, g)] == ["relu", "conv2"]


def test_match_op_finds_the_graph_of_a_node_as_tf_does(samples):
    """TF's ``GraphMatcher(p).match_op(op)`` works from the op alone: so does qviz's,
    while the node is in one live graph; a shared node (a rewrite keeps unchanged
    nodes) asks for the graph instead of guessing."""
    from qviz.matcher import GraphMatcher
    from qviz.passes import fold_batch_norms
    from qviz.patterns import BUILTIN

    g = qviz.load(samples["lenet_digits"])
    relu = next(n for n in g.nodes if n.op == "Relu")
    assert GraphMatcher(BUILTIN["layer_activation"]).match_op(relu).get_op("layer").layer == "conv1"
    folded = fold_batch_norms(g).graph
    shared = next(n for n in g.nodes if n.op == "Placeholder")
    assert folded.node(shared.name) is shared
    with pytest.raises(ValueError, match="is in 2 live graph"):
        GraphMatcher(BUILTIN["layer_activation"]).match_op(shared)
    assert GraphMatcher(BUILTIN["layer_activation"], folded).match_op(shared) is None
