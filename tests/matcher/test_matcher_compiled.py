"""The compiled matcher agrees with the reference walk, binding for binding."""

import pytest
from hypothesis import HealthCheck, given, settings

from qviz.ir import Graph, Node
from qviz.matcher import GraphMatcher, OneofPattern, OpTypePattern, find_matches, reference_match
from qviz.patterns import BUILTIN, PatternSyntaxError, parse

from tests.strategies import graphs, shared_patterns


def _agree(pattern, graph):
    """Every root: the same match or the same miss, with the same bindings; and
    find_matches keeps exactly the matches whose root is in no other's body."""
    matches = list(GraphMatcher(pattern).match_graph(graph))
    compiled = {m.root.name: m.bindings() for m in matches}
    for node in graph.nodes:
        assert compiled.get(node.name) == reference_match(pattern, graph, node), node.name
    inside = {name for m in matches for name in m.body() - {m.root.name}}
    assert [m.root.name for m in find_matches(pattern, graph)] == \
        [m.root.name for m in matches if m.root.name not in inside]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shared_patterns(), graphs())
def test_compiled_matches_equal_the_reference_walk(pattern, graph):
    _agree(pattern, graph)


def test_builtins_agree_on_the_synthetic_blocks():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from synthetic import synthetic_graph

    graph = synthetic_graph(300)
    for pattern in BUILTIN.values():
        _agree(pattern, graph)


def test_a_failed_branch_leaves_nothing_for_the_next_root():
    # At "a", Relu(Relu(*)) binds the inner Relu to "b" before failing on its input
    # count; the match at "b" must not see that binding.
    g = Graph([Node("x", "Placeholder"), Node("y", "Placeholder"), Node("b", "Relu", ["x", "y"]),
               Node("a", "Relu", ["b"]), Node("c", "Relu", ["x"])], outputs=["a", "c"])
    inner = OpTypePattern("Relu", name="inner", inputs=["Placeholder"])
    outer = OpTypePattern("Relu", name="outer", inputs=[OneofPattern([inner, "Relu"])])
    matches = list(GraphMatcher(outer).match_graph(g))
    assert [(m.root.name, m.get_op("inner")) for m in matches] == [("a", None)]


def test_a_reference_to_itself_in_place_is_refused():
    a = OneofPattern(["Relu"], name="a")
    a.sub_patterns += (a,)
    with pytest.raises(ValueError, match="'a' reaches itself without consuming an input"):
        GraphMatcher(a)
    with pytest.raises(PatternSyntaxError, match=r"column 23: \$a is used inside 'a' without consuming"):
        parse("Identity?(oneof(Relu, $a)) as a")
    GraphMatcher(parse("Relu(oneof(Const, $a)) as a"))  # consumes an input: fine


def test_one_matcher_serves_many_graphs_unchanged():
    """The app compiles a pattern once and matches it on each edit's rewritten graph: a
    matcher given to find_matches finds what the pattern does and stays unbound."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from synthetic import synthetic_graph

    matcher = GraphMatcher(BUILTIN["conv_bn"])
    for graph in (synthetic_graph(120), synthetic_graph(300)):
        got = [m.root.name for m in find_matches(matcher, graph)]
        assert got and got == [m.root.name for m in find_matches(BUILTIN["conv_bn"], graph)]
        assert matcher.graph is None
