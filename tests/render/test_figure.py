"""The graph figure is built without plotly's validation (it was half of a redraw's server
time): these tests validate it once, so a property plotly would refuse still fails here."""

import json

import plotly.graph_objects as go
import plotly.io as pio
import pytest

import qviz
from qviz.layout import layered_routes, view_graph
from qviz.render import graph_figure
from qviz.render.marks import MAX_SVG_NODES, Badge, bits_color


def _validated(fig):
    return go.Figure(fig.to_dict())   # raises ValueError on any property plotly does not accept


def _same(a, b) -> bool:
    """Whether two figures send the same JSON (numbers to 12 digits: validation keeps
    floats in a numpy array, whose text can differ in the last place)."""
    def rounded(x):
        if isinstance(x, float):
            return round(x, 12)
        if isinstance(x, list):
            return [rounded(v) for v in x]
        if isinstance(x, dict):
            return {k: rounded(v) for k, v in x.items()}
        return x
    return rounded(json.loads(pio.to_json(a))) == rounded(json.loads(pio.to_json(b)))


@pytest.mark.parametrize("mode", ["layer", "op"])
def test_graph_figure_with_every_mark_is_what_plotly_validation_would_send(samples, mode):
    g = qviz.load(samples["resnet_block"])
    result = qviz.apply(g, qviz.Recipe(), report=False)
    removed = [g.node(n) for n in result.changes.removed if not g.is_constant(n)]
    vg = view_graph(result.graph, mode, removed=removed, status={})
    pos, routes = layered_routes(vg)
    keys = list(vg.nodes)
    fig = graph_figure(vg, pos, routes=routes, highlights={keys[0]: 0, keys[1]: 3}, selected=keys[2],
                       hover={k: "<br>shape (1, 8, 8, 4)" for k in keys}, flags={keys[3]: "⚠"},
                       badges={keys[1]: Badge.of(4, 8, folded=True)}, fill={keys[0]: "#2c7bb6", keys[1]: "red"},
                       first_view=True, title="t")
    assert {t.name for t in fig.data} == {"edges", "nodes", "matches", "arrows", "device flags", "bits"}
    assert _same(_validated(fig), fig)


def test_a_webgl_graph_figure_is_valid_too():
    import networkx as nx

    n = MAX_SVG_NODES + 1
    g = nx.path_graph(n, create_using=nx.DiGraph)
    g = nx.relabel_nodes(g, {i: f"op:n{i}" for i in range(n)})
    for k in g:
        g.nodes[k].update(kind="other", op="Identity", label=k[3:], layer=k[3:], ops=1, status=None)
    pos = {k: (float(i), 0.0) for i, k in enumerate(g)}
    fig = graph_figure(g, pos, first_view=True)
    assert fig.data[0].type == "scattergl"
    assert _same(_validated(fig), fig)


def test_badges_sit_opposite_the_names_coloured_by_the_narrowest_width_and_show_with_them():
    import networkx as nx

    g = nx.DiGraph([("layer:a", "layer:b"), ("layer:b", "layer:c")])
    for k in g:
        g.nodes[k].update(kind="conv", op="Conv2D", label=k[6:], layer=k[6:], ops=1, status=None)
    pos = {"layer:a": (0.0, 0.0), "layer:b": (1.0, 0.0), "layer:c": (2.0, 0.0)}
    badges = {"layer:a": Badge.of(8, 8), "layer:b": Badge.of(4, 8, folded=True)}
    fig = graph_figure(g, pos, badges=badges)
    nodes = next(t for t in fig.data if t.name == "nodes")
    bits = next(t for t in fig.data if t.name == "bits")
    assert list(bits.customdata) == ["layer:a", "layer:b"] and list(bits.text) == ["w8a8", "w4a8+bn"]
    assert list(bits.textfont.color) == [bits_color(8), bits_color(4)]
    label_side = dict(zip(nodes.customdata, nodes.textposition))
    assert list(bits.textposition) == ["top center" if label_side["layer:a"] == "bottom center" else "bottom center",
                                       "top center" if label_side["layer:b"] == "bottom center" else "bottom center"]
    assert bits.visible is True and nodes.mode == "markers+text"
    far = {k: (x * 400, y) for k, (x, y) in pos.items()}   # no names drawn: no badges either
    fig = graph_figure(g, far, badges=badges)   # the whole graph in view, too wide to read
    assert next(t for t in fig.data if t.name == "bits").visible is False


def test_a_long_hover_line_wraps_instead_of_covering_the_graph(samples):
    """Plotly draws a hover line however long: a TFLite reason on one line was a box
    ~1,000 px wide over every node. Each line now breaks at spaces past 80 characters."""
    g = qviz.load(samples["lenet_digits"])
    vg = view_graph(g, "layer")
    pos, routes = layered_routes(vg)
    reason = ("<br>on TFLite: conv2: its batch norm is not folded, so TFLite runs the layer in float (float32 "
              "weights, QUANTIZE/DEQUANTIZE around it): fold the batch norm to run it in int8")
    fig = graph_figure(vg, pos, routes=routes, hover={"layer:conv2": reason})
    nodes = next(t for t in fig.data if t.name == "nodes")
    text = dict(zip(nodes.customdata, nodes.hovertext))["layer:conv2"]
    assert max(len(line) for line in text.split("<br>")) <= 80
    assert " ".join(text.replace("<br>", " ").split()).endswith(" ".join(reason.replace("<br>", " ").split()))


@pytest.mark.parametrize("name", ["lenet_digits", "resnet_block", "mobilenet_block"])
def test_a_fold_moves_no_other_name_to_its_nodes_other_side(samples, name):
    """The eye follows an edit by the names staying put: a folded batch norm's ghost named
    beside it changed the crowding the names after it were placed by (one fold on
    MobileNetV2's Conv1 moved 23 names to their nodes' other side)."""
    from qviz.layout import routes_in_place
    from qviz.layout.view import diff_status
    from qviz.passes import fold_candidates
    from qviz.render.marks import label_sides

    g = qviz.load(samples[name])
    float_view = view_graph(g, "layer")
    float_sides = label_sides(float_view, routes_in_place(float_view, float_view)[0])
    for candidate in (c for c in fold_candidates(g) if c.foldable):
        result = qviz.apply(g, qviz.Recipe(fold_default=False, quantize_default=None,
                                           fold_layers={candidate.layer: True}), report=False)
        status, removed = diff_status(result)
        vg = view_graph(result.graph, "layer", removed=removed, status=status, original=g)
        sides = label_sides(vg, routes_in_place(vg, float_view)[0])
        assert sides == float_sides, (candidate.layer, {k: (float_sides.get(k), v) for k, v in sides.items()
                                                         if float_sides.get(k) != v})
