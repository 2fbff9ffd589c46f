"""The graph figure is built without plotly's validation (it was half of a redraw's server
time): these tests validate it once, so a property plotly would refuse still fails here."""

import json

import plotly.graph_objects as go
import plotly.io as pio
import pytest

import qviz
from qviz.layout import layered_routes, view_graph
from qviz.render import graph_figure
from qviz.render.figure import MAX_SVG_NODES


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
                       first_view=True, title="t")
    assert {t.name for t in fig.data} == {"edges", "nodes", "matches", "arrows", "device flags"}
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
