"""The layered layout: ranks follow edges, long edges bend through their
virtual nodes, and crossings are counted along what is drawn."""

import math
import networkx as nx
import numpy as np
import pytest

import qviz
from qviz.layout import count_crossings, layered_layout, layered_routes, routes_in_place, view_graph


def _random_dag(n=160, p=0.03, seed=0):
    rng = np.random.default_rng(seed)
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < p:
                g.add_edge(i, j)
    return g


@pytest.mark.parametrize("direction", ["LR", "TB"])
def test_ranks_follow_edges_and_long_edges_bend_once_per_rank(direction):
    g = _random_dag()
    pos, routes = layered_routes(g, direction)
    axis = 0 if direction == "LR" else 1
    sign = 1 if direction == "LR" else -1
    for u, v in g.edges:
        span = sign * (pos[v][axis] - pos[u][axis])
        assert span >= 1
        bends = routes.get((u, v), [])
        assert len(bends) == round(span) - 1
        along = [sign * p[axis] for p in [pos[u], *bends, pos[v]]]
        assert along == sorted(along) and len(set(along)) == len(along)
    assert layered_layout(g, direction) == pos


def test_counting_follows_the_drawn_route():
    # a→d spans two ranks; b→e one. Straight, a→d passes above e's end: one crossing.
    g = nx.DiGraph([("a", "d"), ("b", "e")])
    pos = {"a": (0.0, 0.0), "b": (0.0, 1.0), "d": (2.0, 1.0), "e": (1.0, 0.0)}
    assert count_crossings(g, pos) == 1
    # Bent below e (as its virtual node would place it), it crosses nothing.
    assert count_crossings(g, pos, routes={("a", "d"): [(1.0, -1.0)]}) == 0
    # Top to bottom, ranks run along y (downwards).
    tb = {k: (y, -x) for k, (x, y) in pos.items()}
    assert count_crossings(g, tb, "TB") == 1
    assert count_crossings(g, tb, "TB", routes={("a", "d"): [(-1.0, -1.0)]}) == 0


def test_routing_removes_crossings_of_overlapping_bypasses():
    """Three overlapping skip connections (residual blocks sharing ends) and a
    side branch: drawn straight, two long edges cross; routed through their
    virtual nodes, none do. (The samples' views have no crossings either way,
    so they could not show routing doing anything.)"""
    chain = [(f"n{i}", f"n{i + 1}") for i in range(6)]
    g = nx.DiGraph(chain + [("n1", "n6"), ("n2", "n4"), ("n1", "n3"), ("n0", "side")])
    pos, routes = layered_routes(g)
    assert count_crossings(g, pos) == 2
    assert count_crossings(g, pos, routes=routes) == 0
    assert {("n1", "n6"), ("n2", "n4"), ("n1", "n3")} <= set(routes)


def test_figure_draws_edges_through_bends():
    from qviz.render import graph_figure

    g = nx.DiGraph([("a", "b"), ("b", "c"), ("a", "c")])
    for n in g:
        g.nodes[n].update(kind="conv", label=n, layer=n, op="Conv2D", ops=1)
    pos, routes = layered_routes(g)
    edges = next(t for t in graph_figure(g, pos, routes=routes).data if t.name == "edges")
    # three edges, the long one with one bend: 2 + 2 + 3 points and three None separators
    assert len(edges.x) == 2 + 2 + 3 + 3


@pytest.mark.parametrize("mode", ["layer", "op"])
def test_removed_nodes_are_ghosts_behind_their_replacement_without_edges(samples, mode):
    """A folded batch norm is drawn behind its conv, never as a dead-end branch (issue 18.6)."""
    g = qviz.load(samples["resnet_block"])
    result = qviz.apply(g, qviz.Recipe(), report=False)
    removed = [g.node(n) for n in result.changes.removed if not g.is_constant(n)]
    assert removed
    vg = view_graph(result.graph, mode, removed=removed, status={})
    ghosts = {k: d["ghost_of"] for k, d in vg.nodes(data=True) if d.get("ghost_of")}
    assert ghosts and all(d["status"] == "removed" for k, d in vg.nodes(data=True) if k in ghosts)
    assert not any(vg.degree(k) for k in ghosts)
    assert all(vg.nodes[a].get("ghost_of") is None for a in ghosts.values())   # behind a node still drawn
    # the edges drawn are the rewritten graph's own: the ghosts add no branch
    assert set(vg.edges) == set(view_graph(result.graph, mode).edges)
    pos, _ = layered_routes(vg)
    for k, a in ghosts.items():
        assert 0 < pos[k][0] - pos[a][0] < 0.6 and 0 < pos[k][1] - pos[a][1] < 0.6


@pytest.mark.parametrize("mode", ["layer", "op"])
def test_a_rewritten_view_laid_out_in_place_keeps_the_float_graphs_places(samples, mode):
    """Issue 16.4: laid out with the float graph, each ghost keeps its own place (not
    behind its anchor) and each node the float graph has stays where it has it, in the
    layer view and the op view; the edges drawn are the rewritten graph's, those that replaced a path
    through ghosts bent through the ghosts' places."""
    g = qviz.load(samples["resnet_block"])
    result = qviz.apply(g, qviz.Recipe(quantize_default=qviz.LayerBits(8, 8)), report=False)
    removed = [g.node(n) for n in result.changes.removed if not g.is_constant(n)]
    vg = view_graph(result.graph, mode, removed=removed, status={})
    before = view_graph(g, mode)
    pos, routes = routes_in_place(vg, before)
    added = [k for k in vg if k not in before]
    assert mode == "layer" or added   # (fake-quants, which moved 26 of its 28 ops by a rank or a row)
    alone, _ = layered_routes(before)
    ghosts = {k for k, d in vg.nodes(data=True) if d.get("ghost_of")}
    assert ghosts and set(pos) == set(vg)
    if mode == "layer":
        assert pos == alone
    # (and in the op view, where the rewrite adds ops: fake-quants, the folds' bias adds)
    assert {k: pos[k] for k in before if k in vg} == {k: alone[k] for k in before if k in vg}
    places = [pos[k] for k in vg]
    assert len(set(places)) == len(places), "no two nodes on one place"
    assert not any(vg.degree(k) for k in ghosts)
    through = [e for e in vg.edges if e not in before.edges and e[0] in before and e[1] in before
               and any(k in ghosts for k in before.successors(e[0]))]
    assert through and all(routes[e] and set(routes[e]) & {pos[k] for k in ghosts} for e in through)


@pytest.mark.parametrize("name", ["lenet_digits", "resnet_block", "mobilenet_block"])
def test_ops_a_rewrite_adds_keep_clear_of_every_node_in_the_op_view(samples, name):
    """An added op (a fake-quant, a fold's bias add) is drawn off the edge it was put on, and
    never on or beside another node, a faded one included (a run across two ranks of
    mobilenet_block put one 0.07 from a removed batch norm op)."""
    from qviz.layout.in_place import MIN_GAP

    g = qviz.load(samples[name])
    result = qviz.apply(g, qviz.Recipe(quantize_default=qviz.LayerBits(8, 8)), report=False)
    removed = [g.node(n) for n in result.changes.removed if not g.is_constant(n)]
    vg = view_graph(result.graph, "op", removed=removed, status={})
    before = view_graph(g, "op")
    pos, _ = routes_in_place(vg, before)
    added = [k for k in vg if k not in before and not vg.nodes[k].get("ghost_of")]
    assert added
    for k in added:
        near = [m for m in pos if m != k and math.dist(pos[m], pos[k]) < MIN_GAP - 1e-9]
        assert not near, (k, pos[k], [(m, pos[m]) for m in near])


def test_a_ghost_cut_off_from_its_neighbours_is_drawn_behind_the_node_that_took_its_work():
    """A sub-view (qviz.layout.around) may hold a ghost but neither node it sat between: it
    goes behind its anchor, not alone at the graph's start."""
    lone = nx.DiGraph([("x", "conv")])
    lone.add_node("bn", ghost_of="conv")
    pos, _ = routes_in_place(lone, nx.DiGraph([("x", "conv")]))   # (bn's edges were cut off)
    assert pos["bn"] != (0.0, 0.0)
    assert 0 < pos["bn"][0] - pos["conv"][0] < 0.6 and 0 < pos["bn"][1] - pos["conv"][1] < 0.6


def test_op_view_labels_tell_one_layers_op_from_the_next_ones(samples):
    """Keras names every batch norm's ops ``mul_1``/``add_1`` and every conv ``convolution``:
    the op view labels each op with its layer, and its hover names the op in full."""
    from qviz.render import graph_figure

    g = qviz.load(samples["resnet_block"])
    vg = view_graph(g, "op")
    ops = [d for _, d in vg.nodes(data=True) if d["ops"] == 1 and d["layer"] != d["members"][0]]
    assert len({d["members"][0].rsplit("/", 1)[-1] for d in ops}) < len(ops)   # the last names repeat
    labels = [d["label"] for d in ops]
    assert len(set(labels)) == len(labels)
    assert all(d["label"].startswith(d["layer"] + "/") for d in ops)
    pos, routes = layered_routes(vg)
    nodes = next(t for t in graph_figure(vg, pos, routes=routes).data if t.name == "nodes")
    whole = dict(zip(nodes.customdata, nodes.hovertext))
    assert all(whole[k].startswith(d["members"][0] + " (") for k, d in vg.nodes(data=True) if k.startswith("op:"))


def test_the_op_view_fills_a_batch_norms_arithmetic_as_batch_norm_and_draws_no_lone_noop(samples):
    """An unfused batch norm is Mul/AddV2 ops: in the op view they are the batch norm's
    (the legend's "add (bypass)" is for a residual Add); the NoOp freezing leaves holding
    control edges computes nothing and would stand alone at the graph's start."""
    g = qviz.load(samples["resnet_block"])
    assert any(n.op == "NoOp" for n in g.nodes)
    vg = view_graph(g, "op")
    kinds = {d["members"][0]: d["kind"] for _, d in vg.nodes(data=True)}
    assert {kinds[n.name] for n in g.nodes if n.layer == "bn1" and n.name in kinds} == {"batchnorm"}
    assert {g.node(n).op for n in kinds if g.node(n).layer == "bn1"} >= {"Mul", "AddV2"}
    assert {kinds[n.name] for n in g.nodes if n.layer in ("add1", "add2") and n.op == "AddV2"} == {"add"}
    assert not [k for k in vg if vg.degree(k) == 0]
    assert "NoOp" not in {d["op"] for _, d in vg.nodes(data=True)}


@pytest.mark.parametrize("mode", ["layer", "op"])
def test_a_quantized_relu_stays_an_activation_and_a_folded_batch_norm_a_batch_norm(samples, mode):
    """The fill says what a node is: a ReLU with its fake-quant is an activation (its badge
    says quantized; filled as "fake-quant" it read as replaced), and a folded batch norm's
    ghost is a batch norm (its Rsqrt, a constant, is gone with it: it was filled as an Add)."""
    from qviz.layout.view import diff_status

    g = qviz.load(samples["lenet_digits"])
    result = qviz.apply(g, qviz.Recipe.default(g), report=False)
    status, removed = diff_status(result)
    vg = view_graph(result.graph, mode, removed=removed, status=status, original=g)
    kinds = {}
    for _, d in vg.nodes(data=True):
        if d["layer"] in ("relu1", "bn1") and d.get("op") != "FakeQuantWithMinMaxVars":
            kinds.setdefault(d["layer"], set()).add(d["kind"])
    assert kinds == {"relu1": {"activation"}, "bn1": {"batchnorm"}}
    assert vg.nodes["layer:bn1" if mode == "layer" else next(k for k in vg if "bn1" in k)]["status"] == "removed"


def test_the_change_line_counts_what_the_graph_draws(samples):
    """Quantizing without a fold removes only constant plumbing (a bias's reshape): the
    line under the graph said "14 removed" while nothing was drawn faded."""
    from qviz.layout.view import diff_status

    g = qviz.load(samples["lenet_digits"])
    from dataclasses import replace

    unfolded = replace(qviz.Recipe().with_preset("first-last-8-rest-4", g), fold_default=False)
    result = qviz.apply(g, unfolded, report=False)
    assert result.changes.removed                       # constants the quantizer replaced
    status, removed = diff_status(result)
    vg = view_graph(result.graph, "op", removed=removed, status=status, original=g)
    faded = [k for k, d in vg.nodes(data=True) if d["status"] == "removed"]
    added = [k for k, d in vg.nodes(data=True) if d["status"] == "added"]
    line = result.change_summary()
    assert line.startswith(f"{len(added)} op{'' if len(added) == 1 else 's'} added, {len(faded)} removed,") and not faded


def test_a_layer_that_only_quantizes_is_filled_as_a_fake_quant():
    """A QAT model's output quantizer, frozen, is a FakeQuant reading its range through
    Identity and AddV2 of constants: those constants name no kind (only an unfused batch
    norm's Rsqrt does), so the layer is a fake-quant, not an input or an Add."""
    from qviz.ir import Graph, Node

    g = Graph([Node("x", "Placeholder"), Node("q/min", "Const"), Node("q/max", "Const"),
               Node("q/read", "Identity", ["q/min"]), Node("q/hi", "AddV2", ["q/max", "q/min"]),
               Node("q/fq", "FakeQuantWithMinMaxVars", ["x", "q/read", "q/hi"])], inputs=["x"], outputs=["q/fq"])
    assert view_graph(g, "layer").nodes["layer:q"]["kind"] == "quant"
