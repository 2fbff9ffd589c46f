"""The page's first view, through Flask's test client: in the HTML before the model
is open, names from the file escaped, and the served file opened in the background."""

import json
import os
import threading
import time
import zipfile

import pytest

import qviz
from qviz.app import create_app, worker
from qviz.app.first_view import sketch_of
from qviz.layout import view_graph
from qviz.samples import sample_path

HOSTILE = '<img src=x onerror="alert(1)">{%app_entry%}'


def _keras_file(tmp_path, layer_name):
    """A .keras archive whose config reads (the layer view draws) but whose weights do not."""
    config = {"class_name": "Functional", "config": {"name": "m", "layers": [
        {"class_name": "InputLayer", "name": "x", "config": {"batch_shape": [None, 4]}, "inbound_nodes": []},
        {"class_name": "Dense", "name": layer_name, "config": {"units": 2},
         "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
                                      "config": {"shape": [None, 4], "keras_history": ["x", 0, 0]}}]}]}]}}
    path = tmp_path / "m.keras"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("config.json", json.dumps(config))
        zf.writestr("model.weights.h5", b"not hdf5")
    return path


@pytest.fixture
def gated_open(monkeypatch):
    """Opens wait until the test lets them go: what the page needs must not wait for them."""
    gate = threading.Event()
    opened = worker.JOBS["open"]
    monkeypatch.setitem(worker.JOBS, "open", lambda *a, **k: gate.wait(60) and opened(*a, **k))
    yield gate
    gate.set()


def test_the_first_page_draws_the_file_before_it_is_open(tmp_path, gated_open):
    app = create_app(str(_keras_file(tmp_path, "dense")), worker=False)
    html = app.server.test_client().get("/").data.decode()
    assert html.count("<circle") == 2 and ">dense<" in html
    layout = app.server.test_client().get("/_dash-layout").data.decode()
    assert "2 layers drawn from the file; TensorFlow is opening it" in layout   # while the open is held


def test_names_from_the_file_are_text_never_markup(tmp_path, gated_open):
    app = create_app(str(_keras_file(tmp_path, HOSTILE)), worker=False)
    html = app.server.test_client().get("/").data.decode()
    assert "<img" not in html and "&lt;img src=x" in html
    assert html.count('id="react-entry-point"') == 1     # the name's {%app_entry%} stayed text


def test_a_frozen_pb_is_drawn_from_its_nodes(tmp_path):
    path = tmp_path / "lenet.pb"
    graph = qviz.load(sample_path("lenet_digits"))
    path.write_bytes(graph.to_graph_def().SerializeToString())
    first = sketch_of(path)
    opened = view_graph(qviz.load(path), "layer")       # as the real open of the .pb draws it
    assert first is not None and first.layers == opened.number_of_nodes()
    assert 0 < first.svg.count("<circle") <= first.layers     # the start of the graph, if it is long


def test_a_model_never_seen_is_drawn_with_the_standard_library_alone(tmp_path):
    """The first view of a new file (nothing cached) is on screen in a third of the time Netron
    takes only if drawing it imports none of these (networkx and numpy: ~0.3 s)."""
    import subprocess
    import sys

    pb = tmp_path / "lenet.pb"
    pb.write_bytes(qviz.load(sample_path("lenet_digits")).to_graph_def().SerializeToString())
    heavy = ("numpy", "networkx", "dash", "plotly", "flask", "tensorflow")
    script = ("import sys; from qviz.app.first_view import sketch_of; "
              f"views = [sketch_of(p) for p in ({str(pb)!r}, {str(sample_path('mobilenet_block'))!r})]; "
              f"print([v.layers for v in views], [m for m in {heavy!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env={**os.environ, "QVIZ_CACHE_DIR": str(tmp_path / "empty-cache")}).stdout
    layers, imported = out.strip().split("] [")
    assert imported == "]", f"drawing a first view imported {imported.rstrip(']')}"
    assert all(int(n) > 3 for n in layers.strip("[").split(", "))


def test_what_is_not_a_model_gets_no_first_view(tmp_path):
    junk = tmp_path / "junk.pb"
    junk.write_bytes(b"\x00\xff" * 50)
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    assert sketch_of(junk) is None and sketch_of(text) is None and sketch_of(tmp_path / "missing.keras") is None


def test_pages_of_one_model_share_its_calibrations():
    from qviz.app.jobs import ThreadRunner
    from qviz.app.session import Session, SessionStore
    from qviz.passes import LayerBits, Recipe

    gate = threading.Event()
    # one thread, held by a first job: the calibration waits in line (and could be cancelled)
    runner = ThreadRunner(1, functions={"hold": lambda progress=None: gate.wait(30),
                                        "calibrate": lambda *args, progress=None: {"ranges": True}})
    graph = qviz.load(sample_path("lenet_digits"))
    store = SessionStore(4)
    try:
        runner.submit("hold")
        first, second = (Session(graph, "lenet", runner=runner, ranges=store.ranges_for(graph)) for _ in range(2))
        recipe = Recipe.default(graph, LayerBits(8, 8))
        queued = first.ranges_future(recipe)
        assert second.ranges_future(recipe) is queued                 # calibrated once for both pages
        other = qviz.load(sample_path("resnet_block"))
        assert store.ranges_for(other) is not store.ranges_for(graph)
        first.close()                                                 # one page going …
        gate.set()
        assert queued.result(timeout=30) == {"ranges": True}          # … leaves the other's calibration
    finally:
        gate.set()
        runner.close()


def test_a_draw_never_waits_for_the_hover_shapes():
    from qviz.app.services import hover_shapes
    from qviz.runtime import shapes_known

    graph = qviz.load(sample_path("resnet_block"))
    graph = graph.__class__(graph.nodes, graph.inputs, graph.outputs)   # a fresh graph: no shapes memoized
    assert not shapes_known(graph)
    assert hover_shapes(graph, graph) == {}               # now: no shapes, no TensorFlow on this thread
    end = time.monotonic() + 60
    while not shapes_known(graph):                        # worked out in the background …
        assert time.monotonic() < end, "the shapes were never worked out"
        time.sleep(0.05)
    assert hover_shapes(graph, graph)                     # … and shown from the next draw on
