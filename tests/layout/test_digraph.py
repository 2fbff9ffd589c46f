"""Drawing's own DiGraph answers as networkx's does, for what drawing asks of it: the
layouts cached on disk, and the first view drawn before networkx is imported, depend on it."""

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qviz.layout import CycleError, DiGraph, layered_routes
from qviz.layout.digraph import reachable_within, topological_generations, topological_order


@st.composite
def dags(draw):
    """A random DAG's edges (each from a lower to a higher index), with names that sort
    otherwise than the indices, and some lone nodes."""
    n = draw(st.integers(1, 40))
    names = [f"{draw(st.sampled_from('abcxyz'))}{i}" for i in range(n)]
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    return names, [(names[u], names[v]) for u, v in edges if u < v]


def _both(names, edges):
    ours, theirs = DiGraph(), nx.DiGraph()
    for g in (ours, theirs):
        g.add_nodes_from(names)
        g.add_edges_from(edges)
    return ours, theirs


@settings(max_examples=60, deadline=None)
@given(dags())
def test_the_orders_and_the_layout_are_networkxs(dag):
    ours, theirs = _both(*dag)
    assert list(ours) == list(theirs) and list(ours.edges) == list(theirs.edges)
    assert topological_order(ours, key=str) == list(nx.lexicographical_topological_sort(theirs, key=str))
    assert list(topological_generations(ours)) == list(nx.topological_generations(theirs))
    assert [ours.in_degree(n) for n in ours] == [theirs.in_degree(n) for n in theirs]
    assert layered_routes(ours) == layered_routes(theirs)   # (either class can be given)
    start = next(iter(ours))
    assert reachable_within(ours, start, 2) == set(
        nx.single_source_shortest_path_length(theirs.to_undirected(), start, cutoff=2))


@settings(max_examples=30, deadline=None)
@given(dags(), st.data())
def test_a_subgraph_and_a_copy_hold_what_networkxs_do(dag, data):
    ours, theirs = _both(*dag)
    keep = data.draw(st.sets(st.sampled_from(list(ours))))
    assert set(ours.subgraph(keep).edges) == set(theirs.subgraph(keep).edges)
    copied = ours.copy()
    copied.add_node(next(iter(ours)), label="changed")
    assert "label" not in ours.nodes[next(iter(ours))]     # the copy's data is its own


def test_node_data_reads_as_networkxs():
    g = DiGraph()
    g.add_node("conv", kind="conv")
    g.add_edge("x", "conv", control=True)
    assert dict(g.nodes(data="kind")) == {"conv": "conv", "x": None}
    assert g.nodes.get("missing", {}) == {} and dict(g.nodes) == {"conv": {"kind": "conv"}, "x": {}}
    assert g.edges["x", "conv"] == {"control": True} and ("x", "conv") in g.edges and ("conv", "x") not in g.edges
    assert g.in_degree("conv") == 1 and g.out_degree("conv") == 0


def test_a_cycle_is_refused_with_a_graph_error():
    from qviz.ir import GraphError

    cyclic = DiGraph([("a", "b"), ("b", "c"), ("c", "a"), ("x", "a")])
    for order in (lambda g: topological_order(g), lambda g: list(topological_generations(g)), layered_routes):
        with pytest.raises(CycleError) as caught:
            order(cyclic)
        assert isinstance(caught.value, GraphError)
