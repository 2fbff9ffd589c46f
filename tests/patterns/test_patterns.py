"""The pattern language: parse/to_text round trip (hypothesis), errors with line/column."""

import pytest
from hypothesis import given, settings

from qviz.ir import Graph, Node
from qviz.matcher import AttrTest, GraphMatcher, OneofPattern, OpTypePattern, iter_patterns
from qviz.patterns import BUILTIN, PatternSyntaxError, parse, to_text

from tests.strategies import patterns


def _shape(p, seen=None):
    """A structural signature: equal signatures mean equivalent patterns."""
    if isinstance(p, OneofPattern):
        return ("oneof", p.name, tuple(_shape(s) for s in p.sub_patterns))
    return (p.op_type, p.name, p.ordered_inputs or not p.inputs, p.optional,
            tuple((t.name, repr(t.value), t.negate) for t in p.attrs),
            tuple(_shape(s) for s in p.inputs))


@settings(max_examples=300)
@given(patterns)
def test_parse_to_text_round_trip(p):
    text = to_text(p)
    again = parse(text)
    assert _shape(again) == _shape(p)
    assert to_text(again) == text


def _sample_graph():
    return Graph([
        Node("x", "Placeholder"), Node("w", "Const"), Node("b", "Const"),
        Node("conv", "Conv2D", ["x", "w"], attrs={"padding": "SAME", "data_format": "NHWC"}),
        Node("bias", "BiasAdd", ["conv", "b"]), Node("id", "Identity", ["bias"]),
        Node("relu", "Relu", ["id"]), Node("add", "AddV2", ["relu", "x"]),
        Node("mul", "Mul", ["add", "add"]), Node("r6", "Relu6", ["mul"]),
    ], inputs=["x"], outputs=["r6"])


@settings(max_examples=200)
@given(patterns)
def test_parsed_text_matches_the_same_nodes(p):
    g = _sample_graph()

    def summary(pattern):
        return [(m.root.name, sorted(n.name for n in m.nodes()))
                for m in GraphMatcher(pattern).match_graph(g)]

    assert summary(parse(to_text(p))) == summary(p)


def test_builtins_round_trip_and_share_scale():
    for name, p in BUILTIN.items():
        again = parse(to_text(p))
        assert _shape(again) == _shape(p), name
    unfused = parse(to_text(BUILTIN["conv_bn_unfused"]))
    scales = [q for q in iter_patterns(unfused) if q.name == "scale"]
    assert len(scales) == 1  # $scale resolved to the very same object


def test_example_from_the_issue():
    p = parse("Relu|Relu6(AddV2(Mul(Conv2D|DepthwiseConv2dNative|MatMul(*, *) as layer, *), *))")
    assert p.op_type == "Relu|Relu6"
    layer = p.inputs[0].inputs[0].inputs[0]
    assert layer.name == "layer" and layer.op_type == "Conv2D|DepthwiseConv2dNative|MatMul"


def test_syntax_features():
    p = parse("""
        # a comment
        AddV2{ Relu?(Conv2D[padding="SAME", strides!=[1, 2, 2, 1]](*, *) as c) as r, $c }
    """)
    assert p.ordered_inputs is False
    r, c_ref = p.inputs
    assert r.optional and r.name == "r" and c_ref is r.inputs[0]
    assert r.inputs[0].attrs == (AttrTest("padding", "SAME"), AttrTest("strides", [1, 2, 2, 1], True))
    assert parse("oneof(Relu, Relu6) as act").name == "act"


@pytest.mark.parametrize("text,line,col,words", [
    ("", 1, 1, "the pattern is empty"),
    ("Relu(", 1, 6, "expected an op type"),
    ("Relu(Conv2D(*, *", 1, 17, "expected ',' or ')'"),
    ("Relu\n  (Conv2D ; *)", 2, 11, "unexpected character ';'"),
    ("Conv2D[padding=]", 1, 16, "expected a value"),
    ("Conv2D[padding SAME]", 1, 16, "expected '=' or '!='"),
    ("Relu(*) as", 1, 11, "expected a name after 'as'"),
    ("Relu($nope)", 1, 6, "$nope refers to no node named 'nope'"),
    ("Add(* as a, * as a, $a)", 1, 21, "ambiguous"),
    ("Identity?", 1, 10, "needs inputs"),
    ("Relu Relu6", 1, 6, "expected end of pattern"),
    ("*|Relu", 1, 7, "'*' cannot be combined"),
])
def test_syntax_errors_are_column_precise(text, line, col, words):
    with pytest.raises(PatternSyntaxError) as info:
        parse(text)
    err = info.value
    assert (err.line, err.column) == (line, col), str(err)
    assert words in str(err)
    assert str(err).startswith(f"line {line}, column {col}: ")


def test_predicates_have_no_text_form():
    with pytest.raises(ValueError, match="Python predicate"):
        to_text(OpTypePattern("Conv2D", attrs={"T": lambda t: True}))
