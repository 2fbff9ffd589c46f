"""A frozen .pb's layer view drawn without TensorFlow is the one its real open draws."""

import os
import subprocess
import sys

import numpy as np
import pytest

import qviz
from qviz.importers import LoadError
from qviz.importers.graphdef_sketch import sketch_graph_def
from qviz.layout import layered_routes, view_graph
from qviz.samples import data_for, sample_path

from ..models import zoo_model


def _pb(tmp_path, model_or_path, name):
    path = tmp_path / f"{name}.pb"
    path.write_bytes(qviz.load(model_or_path).to_graph_def().SerializeToString())
    return path


@pytest.mark.parametrize("source", ["lenet_digits", "MobileNetV2"])
def test_the_structure_read_without_tensorflow_draws_as_the_opened_graph(tmp_path, source):
    path = _pb(tmp_path, sample_path(source) if source == "lenet_digits" else zoo_model(source), source)
    sketch, opened = view_graph(sketch_graph_def(path), "layer"), view_graph(qviz.load(path), "layer")
    assert set(sketch.nodes) == set(opened.nodes) and set(sketch.edges) == set(opened.edges)
    assert {k: sketch.nodes[k]["kind"] for k in sketch} == {k: opened.nodes[k]["kind"] for k in opened}
    assert layered_routes(sketch) == layered_routes(opened)


def test_a_graph_qviz_wrote_opens_with_the_layers_it_was_written_with(tmp_path):
    """A .pb ``qviz apply`` wrote opened again as ``lenet_digits_1/conv1_1``…: a recipe
    for the model it came from did not apply to it, and its reports named other layers."""
    from qviz.exporters import save_graph_def

    g = qviz.load(sample_path("lenet_digits"))
    rewritten = qviz.apply(g, qviz.Recipe.default(g), report=False).graph
    path = save_graph_def(rewritten, tmp_path / "q.pb")
    opened = qviz.load(path)
    assert opened.layers == rewritten.layers and "conv1" in opened.layers
    assert {n.name: n.layer for n in opened.nodes} == {n.name: n.layer for n in rewritten.nodes}
    assert sketch_graph_def(path).layers == opened.layers      # the first view too
    assert layered_routes(view_graph(sketch_graph_def(path), "layer")) == layered_routes(view_graph(opened, "layer"))
    # TensorFlow runs the file (it leaves the attribute alone), and qviz's own runs never carry it
    assert "_qviz_layer" not in str(opened.to_graph_def())
    x = data_for(g).verification[0][:4]
    np.testing.assert_array_equal(qviz.run(opened, x)[0], qviz.run(rewritten, x)[0])
    # and a SavedModel qviz wrote (all of it was one layer, "PartitionedCall")
    from qviz.exporters import save_saved_model

    saved = qviz.load(save_saved_model(rewritten, tmp_path / "sm"))
    assert set(rewritten.layers) <= set(saved.layers), saved.layers
    assert {n.layer for n in saved.nodes if n.op in ("Conv2D", "MatMul")} == {"conv1", "conv2", "fc1", "logits"}


def test_it_needs_no_tensorflow(tmp_path):
    path = _pb(tmp_path, sample_path("lenet_digits"), "lenet")
    code = ("import sys; from qviz.importers.graphdef_sketch import sketch_graph_def; "
            f"g = sketch_graph_def({str(path)!r}); print(len(g.layers), 'tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.split() == [str(len(qviz.load(path).layers)), "False"], out.stderr[-2000:]


def test_bad_files_are_one_line_naming_the_file(tmp_path):
    good = _pb(tmp_path, sample_path("lenet_digits"), "good").read_bytes()
    cases = {"cut.pb": good[: len(good) // 3], "junk.pb": b"\xff" * 100, "empty.pb": b""}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(LoadError) as info:
            sketch_graph_def(tmp_path / name)
        assert name in str(info.value) and "\n" not in str(info.value)
    fifo = tmp_path / "fifo.pb"
    os.mkfifo(fifo)
    with pytest.raises(LoadError, match="FIFO"):    # refused, not read forever
        sketch_graph_def(fifo)


def test_the_app_draws_nothing_from_a_fifo_and_does_not_block_on_it(tmp_path):
    from qviz.app.first_view import sketch_of

    for name in ("model.keras", "model.pb", "model.h5"):
        fifo = tmp_path / name
        os.mkfifo(fifo)
        assert sketch_of(fifo) is None      # returns at once; opening it is refused with the reason
