"""Per-layer metrics as node data: the weight statistics against scipy's, and Model
Explorer's node-data JSON written by `qviz node-data` and read back, and refused
with one line when it is not node data."""

import json

import numpy as np
import pytest
from scipy import stats

import qviz
from qviz.analysis.node_data import DEFAULT_GRADIENT, MAX_NODE_DATA_BYTES, NodeData, NodeDataError, on_layers
from qviz.analysis.weight_stats import weight_metrics
from qviz.cli import main
from qviz.passes.constants import constant_value


def test_weight_statistics_are_scipys_on_the_layers_own_weights(samples):
    graph = qviz.load(samples["lenet_digits"])
    metrics = weight_metrics(graph)
    for node in graph.nodes:
        if node.op == "Conv2D" and node.layer == "conv2":
            w = constant_value(graph, node.inputs[1]).ravel().astype(np.float64)
    assert metrics["weight |max|"].values["conv2"] == pytest.approx(np.abs(w).max())
    assert metrics["weight kurtosis"].values["conv2"] == pytest.approx(stats.kurtosis(w, fisher=True), rel=1e-9)
    assert "relu1" not in metrics["weight |max|"].values   # no weights, no value


def test_qviz_node_data_round_trips_through_model_explorers_format(samples, tmp_path, capsys):
    out = tmp_path / "kurtosis.json"
    assert main(["node-data", str(samples["lenet_digits"]), "--metric", "weight kurtosis", "-o", str(out)]) == 0
    assert "weight kurtosis of 4 layers" in capsys.readouterr().out
    written = json.loads(out.read_text())
    assert {"results", "gradient"} <= written.keys() and all("value" in r for r in written["results"].values())
    graph = qviz.load(samples["lenet_digits"])
    back, unmatched = on_layers(NodeData.from_model_explorer(out.read_bytes(), out.name), graph)
    want = weight_metrics(graph)["weight kurtosis"].values
    assert unmatched == 0 and back.values.keys() == want.keys()
    assert all(back.values[k] == pytest.approx(want[k]) for k in want)


def test_thresholds_and_gradient_colour_as_model_explorer_does():
    bands = NodeData("e", {"a": 1.0, "b": 5.0, "c": 50.0}, thresholds=((1.0, "green"), (10.0, "red")))
    assert [bands.color_of(k) for k in "abc"] == ["green", "red", None]   # above the last: unpainted
    ramp = NodeData("e", {"lo": 0.0, "mid": 5.0, "hi": 10.0}, gradient=((0.0, "#000000"), (1.0, "#ffffff")))
    assert [ramp.color_of(k) for k in ("lo", "mid", "hi")] == ["#000000", "#808080", "#ffffff"]
    fixed = NodeData.from_model_explorer('{"results": {"a": {"value": 1, "bgColor": "#123456"}}}', "f.json")
    assert fixed.color_of("a") == "#123456"


def test_one_graph_of_model_node_data_is_read_and_a_hostile_key_is_only_unmatched(samples):
    graph = qviz.load(samples["lenet_digits"])
    model = json.dumps({"main": {"results": {"conv1": {"value": 2}, "a:b:c": {"value": 1}}}})
    data, unmatched = on_layers(NodeData.from_model_explorer(model, "m.json"), graph)
    assert dict(data.values) == {"conv1": 2.0} and unmatched == 1


@pytest.mark.parametrize("text, says", [
    ("{not json", "m.json: not JSON"),
    ('{"nodes": []}', 'm.json: no "results" object'),
    ('{"g1": {"results": {}}, "g2": {"results": {}}}', "m.json: node data for 2 graphs ('g1', 'g2')"),
    ('{"results": {"x": {"value": true}}}', "m.json: node 'x' has value True, not a number"),
    ('{"results": {}, "gradient": [{"stop": "0"}]}', "m.json: a gradient entry's stop '0', not a number"),
    ('{"results": {}, "gradient": [{"stop": NaN, "bgColor": "red"}]}', "stop nan, not a finite number"),
    ('{"results": {"x": {"value": 1' + "0" * 400 + '}}}', "node 'x' has value an integer too large"),
    ('{"results": {"x": 3}}', "m.json: node 'x' is 3, not an object with a \"value\""),
    # a colour is drawn into the page's CSS: nothing but a colour is taken
    ('{"results": {}, "gradient": [{"stop": 0, "bgColor": "red),url(//a.bc/x),linear-gradient(red"}]}',
     "has colour 'red),url(//a.bc/x)"),
    ('{"results": {"x": {"value": 1, "bgColor": "url(//x),red"}}}', "node 'x' has colour 'url(//x),red'"),
    ("[" * 100_000 + "]" * 100_000, "m.json: not JSON"),
])
def test_what_is_not_node_data_is_one_line_naming_the_file(text, says):
    with pytest.raises(NodeDataError) as err:
        NodeData.from_model_explorer(text, "m.json")
    assert says in str(err.value) and "\n" not in str(err.value)


def test_an_oversized_node_data_file_is_refused_before_parsing():
    with pytest.raises(NodeDataError, match="over the 32 MB"):
        NodeData.from_model_explorer(b" " * (MAX_NODE_DATA_BYTES + 1), "big.json")


def test_colours_stay_colours_at_the_edges_of_a_gradient_and_of_the_numbers():
    # a gradient that starts at 0.5: values below it take its first colour (no extrapolation)
    half = NodeData("e", {"lo": 0.0, "hi": 1.0}, gradient=((0.5, "#ff0000"), (1.0, "#0000ff")))
    assert half.color_of("lo") == "#ff0000" and half.color_of("hi") == "#0000ff"
    huge = NodeData("e", {"lo": -1e308, "hi": 1e308, "mid": 0.0})
    assert (huge.color_of("lo"), huge.color_of("hi")) == (DEFAULT_GRADIENT[0][1], DEFAULT_GRADIENT[-1][1])
    assert huge.color_of("mid") == DEFAULT_GRADIENT[1][1]
    ok = NodeData.from_model_explorer('{"results": {"a": {"value": 1, "bgColor": "rgba(1, 2, 3, 0.5)"}}, '
                                      '"thresholds": [{"value": 2, "bgColor": "#abc"}]}', "f.json")
    assert ok.color_of("a") == "rgba(1, 2, 3, 0.5)" and ok.thresholds == ((2.0, "#abc"),)
