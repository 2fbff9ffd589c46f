"""The IR: construction, lookup, immutability, round trip."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qviz
from qviz.ir import Graph, GraphError, Node, Shape
from qviz import runtime


def f32(value):
    return {"value": np.asarray(value, np.float32), "dtype": np.dtype("float32")}


def tiny_graph():
    return Graph(
        [
            Node("x", "Placeholder", attrs={"dtype": np.dtype("float32"), "shape": Shape((None, 2))}),
            Node("s/split", "Split", ["dim", "x"], attrs={"num_split": 2}),
            Node("dim", "Const", attrs={"value": np.array(1, np.int32), "dtype": np.dtype("int32")}),
            Node("s/a", "AddV2", ["s/split:1", "s/split:0"]),
            Node("s/b", "Mul", ["s/split:1", "s/split:1"]),
            Node("dead", "Neg", ["x"]),
        ],
        inputs=["x"], outputs=["s/a", "s/b:0"],
    )


def test_inputs_are_canonical_tensor_names():
    g = tiny_graph()
    assert g.inputs == ("x:0",)
    assert g.outputs == ("s/a:0", "s/b:0")
    assert g.node("s/a").inputs == ("s/split:1", "s/split:0")


def test_consumers_of_tensor_and_of_node():
    g = tiny_graph()
    assert [n.name for n in g.consumers("s/split:1")] == ["s/a", "s/b"]
    assert [n.name for n in g.consumers("s/split:0")] == ["s/a"]
    assert [n.name for n in g.consumers("s/split")] == ["s/a", "s/b"]
    assert [n.name for n in g.consumers(g.node("x"))] == ["s/split", "dead"]
    assert g.consumers("s/b:0") == ()
    with pytest.raises(KeyError, match="nope"):
        g.consumers("nope:0")


def test_nodes_and_graphs_are_immutable():
    g = tiny_graph()
    n = g.node("s/a")
    with pytest.raises(AttributeError, match="immutable"):
        n.op = "Sub"
    with pytest.raises(TypeError):
        n.attrs["T"] = 1
    with pytest.raises(ValueError):
        g.node("dim").value[()] = 5  # constant values are read-only arrays
    changed = n.replace(op="Sub")
    assert (n.op, changed.op) == ("AddV2", "Sub")
    g2 = g.with_nodes(changed if m.name == "s/a" else m for m in g.nodes)
    assert g.node("s/a").op == "AddV2" and g2.node("s/a").op == "Sub"


def test_dangling_and_duplicate_names_are_rejected():
    with pytest.raises(GraphError, match="'y' has input 'zz:0', but no node 'zz' exists"):
        Graph([Node("y", "Neg", ["zz"])])
    with pytest.raises(GraphError, match="duplicate node name 'a'"):
        Graph([Node("a", "NoOp"), Node("a", "NoOp")])
    with pytest.raises(GraphError, match="control input"):
        Graph([Node("a", "NoOp", control_inputs=["b"])])
    with pytest.raises(GraphError, match="output 'q:0'"):
        Graph([Node("a", "NoOp")], outputs=["q"])


def test_networkx_view_keeps_multi_output_edges():
    g = tiny_graph()
    view = g.nx
    assert view.edges["s/split", "s/b"]["tensors"] == ["s/split:1"]
    assert sorted(view.edges["s/split", "s/a"]["tensors"]) == ["s/split:0", "s/split:1"]
    assert view.nodes["s/split"]["op"] == "Split"
    with pytest.raises(Exception):
        view.add_node("z")  # frozen


def test_toposort_and_cleanup():
    g = tiny_graph()
    order = [n.name for n in g.toposort().nodes]
    assert order.index("dim") < order.index("s/split") < order.index("s/a")
    assert "dead" not in g.cleanup()
    assert "dead" in g  # the original is untouched
    cyclic = Graph([Node("a", "Neg", ["b"]), Node("b", "Neg", ["a"])], inputs=[], outputs=["a"])
    with pytest.raises(GraphError, match="cycle"):
        cyclic.toposort()


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.permutations(range(n)),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.booleans()), max_size=3 * n))))
def test_toposort_is_networkx_lexicographical_order(case):
    """The sort (without networkx since it cost a fold toggle ~40 ms) gives networkx's
    order: producers first (data or control), ties by the current position."""
    import networkx as nx

    shuffled, edges = case
    # a DAG over 0..n-1 (edges go from the lower number), listed in a shuffled order
    inputs = {i: [] for i in shuffled}
    controls = {i: [] for i in shuffled}
    for a, b, control in edges:
        if a != b:
            (controls if control else inputs)[max(a, b)].append(f"n{min(a, b)}")
    g = Graph([Node(f"n{i}", "Neg", inputs[i], control_inputs=controls[i]) for i in shuffled],
              inputs=[], outputs=[f"n{shuffled[0]}"])
    position = {f"n{i}": k for k, i in enumerate(shuffled)}
    want = list(nx.lexicographical_topological_sort(g.nx, key=position.__getitem__))
    ordered = g.toposort()
    assert [n.name for n in ordered.nodes] == want
    assert ordered.toposort() is ordered   # sorted already: returned as it is


def test_layers_default_to_name_scope():
    g = tiny_graph()
    assert g.layers == ("x", "s", "dim", "dead")
    assert [n.name for n in g.layer_nodes("s")] == ["s/split", "s/a", "s/b"]


def test_attrs_decode_to_plain_values():
    g = tiny_graph()
    x = g.node("x")
    assert x.attrs["dtype"] == "float32" and x.attrs["shape"] == Shape((None, 2))
    assert g.node("s/split").attrs["num_split"] == 2
    assert g.node("dim").value.dtype == np.int32


def test_round_trip_is_exact(keras_model):
    g = qviz.load(keras_model)
    gd = g.to_graph_def()
    again = Graph.from_graph_def(gd)
    assert again.to_graph_def() == gd
    assert [n.name for n in again.nodes] == [n.name for n in g.nodes]
    x = np.random.default_rng(1).random((3, 8, 8, 1), np.float32)
    np.testing.assert_array_equal(runtime.run(again, x)[0], runtime.run(g, x)[0])


def test_caller_mutating_its_graphdef_does_not_reach_the_graph(keras_model):
    gd = qviz.load(keras_model).to_graph_def()
    g = Graph.from_graph_def(gd)
    conv = next(nd for nd in gd.node if nd.op == "Conv2D")
    conv.attr["padding"].s = b"SAME"
    conv.op = "Neg"
    mine = g.node(conv.name)
    assert mine.op == "Conv2D" and mine.attrs["padding"] == "VALID"


def test_run_with_feeds_dict_and_errors(keras_model):
    g = qviz.load(keras_model)
    x = np.ones((1, 8, 8, 1), np.float32)
    np.testing.assert_allclose(runtime.run(g, feeds={"image": x})[0], runtime.run(g, x)[0])
    with pytest.raises(qviz.RunError, match="1 input"):
        runtime.run(g, x, x)
    with pytest.raises(qviz.RunError, match="missing"):
        runtime.run(g, feeds={"other": x})


def test_a_graph_cannot_be_changed_after_it_is_built():
    g = Graph([Node("x", "Placeholder")], source="model.pb")
    with pytest.raises(AttributeError):
        g.source = "elsewhere.pb"
    with pytest.raises(AttributeError):
        g.nodes = ()
    assert g.source == "model.pb" and g.with_nodes(g.nodes).source == "model.pb"
