"""Blocks (issue 16.3): runs of layers drawn as one node. What a reader relies on:
every block is a run of consecutive layers that closes into a graph with no cycle,
blocks follow the model's own structure and names, a Keras file's layer graph and
its frozen graph give the same blocks (the view does not jump when TensorFlow has
frozen it), and a big graph's first view is drawn with its blocks closed."""

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qviz
from qviz.app.first_view import graph_first_view
from qviz.importers.keras_config import read_sketch
from qviz.ir import Graph, Node
from qviz.layout import sketch_view, view_graph
from qviz.layout.blocks import BLOCKS_FROM_LAYERS, MAX_LAYERS, find_blocks, layer_graph
from qviz.layout.view import close_blocks, key_showing
from qviz.samples import sample_path


def _residual_net(units: int) -> Graph:
    """conv → bn → relu units, every other one with a bypass Add: the shape of a ResNet stage."""
    nodes, x, skip = [Node("input", "Placeholder")], "input", None
    for i in range(units):
        nodes += [Node(f"c{i}/conv", "Conv2D", [x, f"c{i}/w"], layer=f"conv{i}"),
                  Node(f"c{i}/w", "Const", layer=f"conv{i}"),
                  Node(f"b{i}/mul", "Mul", [f"c{i}/conv", f"b{i}/s"], layer=f"bn{i}"),
                  Node(f"b{i}/s", "Const", layer=f"bn{i}")]
        out = f"b{i}/mul"
        if i % 2:
            nodes.append(Node(f"a{i}/add", "AddV2", [out, skip], layer=f"add{i}"))
            out = f"a{i}/add"
        nodes.append(Node(f"r{i}/relu", "Relu", [out], layer=f"relu{i}"))
        skip, x = x, f"r{i}/relu"
    return Graph(nodes, inputs=["input"], outputs=[x])


@settings(max_examples=60, deadline=None)
def _acyclic(vg) -> bool:
    """Whether a view graph (qviz's own DiGraph) is a DAG, as networkx judges it."""
    return nx.is_directed_acyclic_graph(nx.DiGraph(list(vg.edges)))


@given(st.integers(12, 120), st.floats(0.0, 0.08), st.integers(0, 10**6))
def test_blocks_are_runs_that_close_into_a_dag(n, p, seed):
    g = nx.gnp_random_graph(n, p, seed=seed, directed=True)
    dag = nx.DiGraph((f"l{u}", f"l{v}") for u, v in g.edges if u < v)
    dag.add_nodes_from(f"l{i}" for i in range(n))
    blocks = find_blocks(dag)
    seen = [layer for b in blocks for layer in b.layers]
    assert len(seen) == len(set(seen)) and all(2 <= len(b.layers) <= MAX_LAYERS for b in blocks)
    assert len({b.id for b in blocks}) == len(blocks)
    vg = nx.DiGraph()
    for layer in dag:
        vg.add_node(f"layer:{layer}", layer=layer, ops=1, constants=0, status=None, members=[layer])
    vg.add_edges_from((f"layer:{u}", f"layer:{v}") for u, v in dag.edges)
    closed = close_blocks(vg, blocks)
    assert _acyclic(closed)
    assert closed.number_of_nodes() == n - len(seen) + len(blocks)


def test_blocks_follow_the_bypasses_of_a_residual_net():
    graph = _residual_net(40)
    blocks = find_blocks(layer_graph(view_graph(graph)))
    # a bypass Add joins two units: no block boundary falls inside one (between its input and its Add)
    for b in blocks[:-1]:
        last = b.layers[-1]
        assert last.startswith("relu") and int(last[4:]) % 2 == 1, b.layers
    assert sum(len(b.layers) for b in blocks) == len(graph.layers)


def test_a_keras_file_and_its_frozen_graph_give_the_same_blocks():
    path = sample_path("mobilenet_block")
    from_file = find_blocks(layer_graph(sketch_view(read_sketch(path))))
    frozen = find_blocks(layer_graph(view_graph(qviz.load(path))))
    assert from_file and from_file == frozen


def test_the_view_draws_closed_blocks_with_their_members_changes_and_matches():
    graph = qviz.load(sample_path("lenet_digits"))
    blocks = find_blocks(layer_graph(view_graph(graph)))
    result = qviz.apply(graph, qviz.Recipe(fold_default=True, quantize_default=None), report=False)
    from qviz.layout import diff_status

    status, removed = diff_status(result)
    vg = view_graph(result.graph, "layer", removed=removed, status=status, blocks=blocks[:1])
    key = f"block:{blocks[0].id}"
    d = vg.nodes[key]
    assert d["layers"] == list(blocks[0].layers) and d["status"] == "modified" and d["layer"] is None
    assert not any(vg.nodes[k].get("layer") in blocks[0].layers for k in vg if k != key)
    conv = next(n.name for n in result.graph.nodes if n.layer == "conv1" and n.op == "Conv2D")
    assert key_showing(vg, result.graph, conv) == key     # a match in the block haloes the block
    assert _acyclic(vg)


@pytest.mark.parametrize("units", [BLOCKS_FROM_LAYERS // 3 + 20])
def test_a_big_graph_opens_with_its_blocks_closed_and_a_small_one_without(units):
    big = graph_first_view(_residual_net(units))
    nodes = next(t for t in big.figure["data"] if t.get("name") == "nodes")
    assert big.layers > BLOCKS_FROM_LAYERS            # the status counts layers, not nodes drawn
    assert all(k.startswith("block:") or k.startswith("layer:") for k in nodes["customdata"])
    assert sum(k.startswith("block:") for k in nodes["customdata"]) > len(nodes["customdata"]) / 2
    assert len(nodes["customdata"]) < big.layers / 3
    assert "<rect" in big.svg
    small = graph_first_view(_residual_net(10))
    keys = next(t for t in small.figure["data"] if t.get("name") == "nodes")["customdata"]
    assert all(k.startswith("layer:") for k in keys)


def test_blocks_depend_on_the_graph_not_on_the_order_its_layers_were_listed():
    # inception-like units: two branches between a split and a join (a Keras file lists
    # the branches in one order, TensorFlow's frozen graph may in another)
    edges = []
    for i in range(12):
        for branch in ("a", "b"):
            edges += [(f"split{i}", f"{branch}{i}_1"), (f"{branch}{i}_1", f"{branch}{i}_2"),
                      (f"{branch}{i}_2", f"join{i}")]
        edges.append((f"join{i}", f"split{i + 1}"))
    listed = nx.DiGraph(edges)
    backwards = nx.DiGraph()
    backwards.add_nodes_from(reversed(list(listed.nodes)))
    backwards.add_edges_from(reversed(edges))
    assert find_blocks(listed) and find_blocks(listed) == find_blocks(backwards)
