"""The layer graph read from a Keras file's config (no TensorFlow) is the layer view
the frozen graph will have: same layers, same connections, same places, same colours."""

import json
import zipfile

import pytest

import qviz
from qviz.importers import LoadError
from qviz.importers.keras_config import read_sketch
from qviz.layout import layered_routes, view_graph
from qviz.layout.view import sketch_view
from qviz.samples import SAMPLES, sample_path

from ..models import zoo_model


def _same_drawing(sketch, graph):
    drawn, frozen = sketch_view(sketch), view_graph(graph, "layer")
    assert set(drawn.nodes) == set(frozen.nodes)
    assert set(drawn.edges) == set(frozen.edges)
    assert {k: drawn.nodes[k]["kind"] for k in drawn} == {k: frozen.nodes[k]["kind"] for k in frozen}
    assert layered_routes(drawn) == layered_routes(frozen)   # nothing moves when the frozen graph arrives


@pytest.mark.parametrize("name", list(SAMPLES))
def test_every_sample_is_drawn_from_its_file_as_it_will_be_once_frozen(name):
    path = sample_path(name)
    _same_drawing(read_sketch(path), qviz.load(path))


def test_a_keras_applications_net_too(tmp_path):
    path = tmp_path / "mobilenet_v2.keras"
    zoo_model("MobileNetV2").save(path)
    sketch = read_sketch(path)
    _same_drawing(sketch, qviz.load(path))
    conv1 = next(layer for layer in sketch.layers if layer.name == "Conv1")
    # 3×3×3×32, no bias; the shape the file records for its input
    assert conv1.params == 864 and conv1.input_shapes[0][-1] == 3
    bn = next(layer for layer in sketch.layers if layer.name == "bn_Conv1")
    assert bn.params == 4 * 32


def _keras_file(tmp_path, config, name="m.keras"):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("config.json", config if isinstance(config, str) else json.dumps(config))
    return path


@pytest.mark.parametrize("config, cause", [
    ("{not json", "not valid JSON"),
    ({"class_name": "MyModel", "config": {}}, "no layer list"),
    ({"class_name": "Functional", "config": {"layers": [1, 2]}}, "no layer list"),
])
def test_a_config_without_a_layer_graph_is_one_line_naming_the_file(tmp_path, config, cause):
    path = _keras_file(tmp_path, config)
    with pytest.raises(LoadError, match=cause) as info:
        read_sketch(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_damaged_and_foreign_files_are_refused(tmp_path):
    good = sample_path("lenet_digits").read_bytes()
    truncated = tmp_path / "cut.keras"
    truncated.write_bytes(good[: len(good) // 2])
    with pytest.raises(LoadError, match="not a valid zip"):
        read_sketch(truncated)
    no_config = tmp_path / "other.keras"
    with zipfile.ZipFile(no_config, "w") as zf:
        zf.writestr("weights.bin", b"x")
    with pytest.raises(LoadError, match="no config.json"):
        read_sketch(no_config)


def test_deep_nesting_in_inbound_nodes_neither_recurses_nor_hangs(tmp_path):
    def config(depth):
        nodes = "[" * depth + '["x", 0, 0, {}]' + "]" * depth
        return ('{"class_name": "Functional", "config": {"layers": [{"class_name": "InputLayer", "name": "x"}, '
                '{"class_name": "Dense", "name": "d", "config": {"units": 2}, "inbound_nodes": ' + nodes + "}]}}")
    # deep, yet JSON: walked without recursion
    assert read_sketch(_keras_file(tmp_path, config(900))).layers[1].inputs == ("x",)
    # deeper than Python's JSON reader goes: a one-line error, not a RecursionError
    with pytest.raises(LoadError, match="not valid JSON"):
        read_sketch(_keras_file(tmp_path, config(50_000), "deeper.keras"))


def test_a_sequential_model_is_a_chain(tmp_path):
    config = {"class_name": "Sequential", "config": {"name": "s", "layers": [
        {"class_name": "InputLayer", "config": {"name": "in", "batch_shape": [None, 4]}},
        {"class_name": "Dense", "config": {"name": "d1", "units": 3}},
        {"class_name": "ReLU", "config": {"name": "r"}}]}}
    sketch = read_sketch(_keras_file(tmp_path, config))
    assert [(layer.name, layer.inputs) for layer in sketch.layers] == [("in", ()), ("d1", ("in",)), ("r", ("d1",))]
    assert sorted(sketch_view(sketch).edges) == [("layer:d1", "layer:r"), ("layer:in", "layer:d1")]
