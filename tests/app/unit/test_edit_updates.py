"""What an edit of the recipe updates in the page besides the graph: nothing where nothing
changes (each update is work for Dash's renderer, in every toggle's redraw), and everything
that would otherwise be left from another recipe, model or selection."""

from __future__ import annotations

import pytest

import qviz
from qviz.app import create_app, ids, services
from qviz.samples import sample_path

from .test_server_safety import _post, _with_session

RECIPE = f"{ids.RECIPE}.data"


@pytest.fixture(scope="module")
def lenet():
    return qviz.load(sample_path("lenet_digits"))


@pytest.fixture
def app():
    return create_app(worker=False, sessions=2)


def _answer(app, output_id, values, changed):
    """The server's answer to the callback writing ``output_id`` ({} for "no update": 204)."""
    key = next(k for k in app.callback_map if f"{output_id}." in k and not k.startswith(f"{output_id}.data"))
    cb = app.callback_map[key]
    outs = key.strip(".").split("...") if key.startswith("..") else [key]
    outputs = [{"id": o.rsplit(".", 1)[0], "property": o.rsplit(".", 1)[1].split("@")[0]} for o in outs]
    pick = lambda specs: [{**x, "value": values.get(f'{x["id"]}.{x["property"]}')} for x in specs]  # noqa: E731
    body = {"output": key, "outputs": outputs if len(outputs) > 1 else outputs[0],
            "inputs": pick(cb["inputs"]), "state": pick(cb.get("state", [])), "changedPropIds": changed}
    return _post(app, body).get("response", {})


def _edit(app, lenet):
    sid = _with_session(app, lenet)
    return sid, {f"{ids.SESSION}.data": {"sid": sid}, RECIPE: services.new_history(qviz.Recipe.default(lenet))}


def test_an_edit_leaves_tflite_alone_when_it_shows_nothing_and_clears_what_it_shows(app, lenet):
    _, values = _edit(app, lenet)
    assert _answer(app, ids.TFLITE_FIGURES, values, [RECIPE]) == {}
    # figures of another recipe (or of the model opened before: its session had the job) go
    shown = {**values, f"{ids.TFLITE_FIGURES}.children": ["a table"], f"{ids.TFLITE_STATUS}.children": "downloaded"}
    answer = _answer(app, ids.TFLITE_FIGURES, shown, [RECIPE])
    assert answer[ids.TFLITE_FIGURES]["children"] == [] and answer[ids.TFLITE_STATUS]["children"] == ""


def test_an_edit_with_nothing_selected_leaves_the_node_panel_but_a_cleared_selection_empties_it(app, lenet):
    _, values = _edit(app, lenet)
    assert _answer(app, ids.NODE_PANEL, values, [RECIPE]) == {}
    # a link's recipe and cleared selection, in one answer (the recipe's input listed first)
    answer = _answer(app, ids.NODE_PANEL, values, [RECIPE, f"{ids.SELECTED}.data"])
    assert "click a node" in str(answer[ids.NODE_PANEL]["children"])


def test_a_hidden_pane_b_is_left_alone_by_an_edit_and_hidden_when_turned_off_with_one(app, lenet):
    _, values = _edit(app, lenet)
    values[f"{ids.SIDE_BY_SIDE}.value"] = []
    assert _answer(app, ids.GRAPH_B, values, [RECIPE]) == {}
    answer = _answer(app, ids.GRAPH_B, values, [RECIPE, f"{ids.SIDE_BY_SIDE}.value"])
    assert answer[ids.PANE_B]["hidden"] is True
