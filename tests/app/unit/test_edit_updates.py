"""What an edit of the recipe updates in the page besides the graph: nothing where nothing
changes (each update is work for Dash's renderer, in every toggle's redraw), and everything
that would otherwise be left from another recipe, model or selection."""

from __future__ import annotations

import pytest

import qviz
from qviz.app import create_app, ids, services
from qviz.samples import sample_path

from .test_server_safety import _body, _post, _with_session

RECIPE = f"{ids.RECIPE}.data"


@pytest.fixture(scope="module")
def lenet():
    return qviz.load(sample_path("lenet_digits"))


@pytest.fixture
def app():
    return create_app(worker=False, sessions=2)


def _answer(app, output, values, changed):
    """The edit's answer from the callback writing ``output`` ({} for "no update": a 204)."""
    return _post(app, _body(app, output, values, changed, trigger=RECIPE)).get("response", {})


def _edit(app, lenet) -> dict:
    """The values an edit's request carries: the session's id and a recipe history."""
    sid = _with_session(app, lenet)
    return {f"{ids.SESSION}.data": {"sid": sid}, RECIPE: services.new_history(qviz.Recipe.default(lenet))}


def test_an_edit_leaves_tflite_alone_when_it_shows_nothing_and_clears_what_it_shows(app, lenet):
    values = _edit(app, lenet)
    assert _answer(app, f"{ids.TFLITE_FIGURES}.children", values, [RECIPE]) == {}
    # figures of another recipe (or of the model opened before: its session had the job) go
    shown = {**values, f"{ids.TFLITE_FIGURES}.children": ["a table"], f"{ids.TFLITE_STATUS}.children": "downloaded"}
    answer = _answer(app, f"{ids.TFLITE_FIGURES}.children", shown, [RECIPE])
    assert answer[ids.TFLITE_FIGURES]["children"] == [] and answer[ids.TFLITE_STATUS]["children"] == ""


def test_an_edit_with_nothing_selected_leaves_the_hint_but_empties_a_panel_left_from_a_selection(app, lenet):
    from qviz.app.callbacks.panels import HINT

    values = {**_edit(app, lenet), f"{ids.NODE_PANEL_SHOWS}.data": HINT}
    assert _answer(app, f"{ids.NODE_PANEL}.children", values, [RECIPE]) == {}
    # The panel still shows conv2 though nothing is selected: the request that cleared the
    # selection was dropped by the page for this edit's (a model opened: its selection is
    # cleared as the answer arrives, its recipe applied a moment later), or a link's recipe
    # and cleared selection came in one answer. What fired does not matter: the panel empties.
    left = {**values, f"{ids.NODE_PANEL_SHOWS}.data": "layer:conv2"}
    for changed in ([RECIPE], [RECIPE, f"{ids.SELECTED}.data"]):
        answer = _answer(app, f"{ids.NODE_PANEL}.children", left, changed)
        assert "click a node" in str(answer[ids.NODE_PANEL]["children"]), changed
        assert answer[ids.NODE_PANEL_SHOWS]["data"] == HINT


def test_a_hidden_pane_b_is_left_alone_by_an_edit_and_hidden_when_turned_off_with_one(app, lenet):
    values = _edit(app, lenet)
    values[f"{ids.SIDE_BY_SIDE}.value"] = []
    assert _answer(app, f"{ids.GRAPH_B}.figure", values, [RECIPE]) == {}
    answer = _answer(app, f"{ids.GRAPH_B}.figure", values, [RECIPE, f"{ids.SIDE_BY_SIDE}.value"])
    assert answer[ids.PANE_B]["hidden"] is True


@pytest.mark.parametrize("output, changed", [(f"{ids.GRAPH}.figure", RECIPE),
                                             (f"{ids.GRAPH_B}.figure", f"{ids.SIDE_BY_SIDE}.value")])
def test_a_redraw_is_written_by_orjson_without_plotlys_clean_up_walk(app, lenet, monkeypatch, output, changed):
    """A component or a go.Figure anywhere in a response sends all of it, figure and all,
    through plotly's clean-up in Python (qviz.app.wire): a redraw must have neither."""
    import plotly.io._json as plotly_json

    walked = []
    clean = plotly_json.clean_to_json_compatible
    monkeypatch.setattr(plotly_json, "clean_to_json_compatible", lambda obj, **kw: walked.append(1) or clean(obj, **kw))
    values = {**_edit(app, lenet), f"{ids.SIDE_BY_SIDE}.value": ["on"], f"{ids.VIEW_MODE}.value": "op"}
    answer = _post(app, _body(app, output, values, [changed], trigger=changed))["response"]
    figure = answer[output.split(".")[0]]["figure"]
    assert figure["data"] and not walked
    if output.startswith(ids.GRAPH + "."):   # the components beside it, as Dash sends them
        assert answer[ids.MATCH_LIST]["children"]["type"] == "Markdown"


def test_a_table_edit_answers_with_its_redraw_and_the_draw_it_starts_sends_nothing(app, lenet):
    """A fold toggled in the table is redrawn in the edit's own answer: one request, not the
    edit's and then the draw's (~90 ms of MobileNetV2's toggle). The draw its new recipe
    starts then answers nothing; anything else changed with it (a selection) draws."""
    values = {**_edit(app, lenet), f"{ids.MODEL_VERSION}.data": {"t": 7},
              f"{ids.EDIT_LOG}.data": {"seq": 1, "edits": [
                  {"seq": 1, "model": 7, "layer": "conv2", "field": "fold", "value": False}]}}
    before = services.current(values[RECIPE])
    answer = _post(app, _body(app, RECIPE, values, [f"{ids.EDIT_LOG}.data"], trigger=f"{ids.EDIT_LOG}.data"))
    history = answer["response"][ids.RECIPE]["data"]
    edited = services.current(history)
    assert before.folds("conv2") and not edited.folds("conv2")
    drawn = answer["response"][ids.GRAPH]["figure"]
    assert qviz.Recipe.from_json(answer["response"][ids.DRAWN]["data"]) == edited
    nodes = next(t for t in drawn["data"] if t["name"] == "nodes")
    assert "layer:conv2" in nodes["customdata"]

    after = {**values, RECIPE: history, f"{ids.DRAWN}.data": answer["response"][ids.DRAWN]["data"]}
    assert _answer(app, f"{ids.GRAPH}.figure", after, [RECIPE]) == {}
    # the page never got that answer (dropped for a later request): its store names another recipe
    missed = {**after, f"{ids.DRAWN}.data": before.to_json(indent=None)}
    assert _answer(app, f"{ids.GRAPH}.figure", missed, [RECIPE])[ids.GRAPH]["figure"]["data"]
    redrawn = _answer(app, f"{ids.GRAPH}.figure", {**after, f"{ids.SELECTED}.data": {"key": "layer:conv2"}},
                      [RECIPE, f"{ids.SELECTED}.data"])
    assert redrawn[ids.GRAPH]["figure"]["data"]
    # another page's session (another model opened) has drawn nothing of it: its draw draws
    other = {**after, f"{ids.SESSION}.data": {"sid": _with_session(app, lenet)}}
    assert _answer(app, f"{ids.GRAPH}.figure", other, [RECIPE])[ids.GRAPH]["figure"]["data"]


def test_an_edit_whose_redraw_fails_still_lands_and_the_draw_redraws(app, lenet, monkeypatch, caplog):
    from qviz.app import redraw

    values = {**_edit(app, lenet), f"{ids.MODEL_VERSION}.data": {"t": 7},
              f"{ids.EDIT_LOG}.data": {"seq": 1, "edits": [
                  {"seq": 1, "model": 7, "layer": "conv2", "field": "fold", "value": False}]}}
    real = redraw._draw
    monkeypatch.setattr(redraw, "_draw", lambda *a, **k: 1 / 0)
    answer = _post(app, _body(app, RECIPE, values, [f"{ids.EDIT_LOG}.data"], trigger=f"{ids.EDIT_LOG}.data"))
    history = answer["response"][ids.RECIPE]["data"]
    assert not services.current(history).folds("conv2") and ids.GRAPH not in answer["response"]
    assert "the edit's redraw failed" in caplog.text and "ZeroDivisionError" in caplog.text
    monkeypatch.setattr(redraw, "_draw", real)
    assert _answer(app, f"{ids.GRAPH}.figure", {**values, RECIPE: history}, [RECIPE])[ids.GRAPH]["figure"]["data"]


@pytest.mark.parametrize("view, cleared", [
    ({"blocks": True, "opened": ["3"]}, True),           # the block found is opened
    ({"blocks": False, "opened": []}, True),             # the blocks ungrouped
    ({"blocks": True, "opened": ["2"]}, False),          # another block opened: still closed
])
def test_the_search_line_naming_a_closed_block_goes_once_it_is_opened(app, view, cleared):
    values = {f"{ids.VIEW}.data": view, f"{ids.SELECTED}.data": {"key": "block:3", "center": True},
              f"{ids.SEARCH_STATUS}.children": "in block block_3 (expand opens it)"}
    answer = _post(app, _body(app, f"{ids.SEARCH_STATUS}.children", values, [f"{ids.VIEW}.data"],
                              trigger=f"{ids.VIEW}.data"))
    assert (answer.get("response", {}).get(ids.SEARCH_STATUS, {}).get("children") == "") is cleared


def test_the_search_line_of_a_layer_stays_through_a_change_of_view(app):
    values = {f"{ids.VIEW}.data": {"blocks": False}, f"{ids.SELECTED}.data": {"key": "layer:conv2", "center": True},
              f"{ids.SEARCH_STATUS}.children": "3 found"}
    assert _post(app, _body(app, f"{ids.SEARCH_STATUS}.children", values, [f"{ids.VIEW}.data"],
                            trigger=f"{ids.VIEW}.data")) == {}


@pytest.mark.parametrize("forged", [{f"{ids.VIEW}.data": [1, 2]}, {f"{ids.SELECTED}.data": "layer:conv2"},
                                    {f"{ids.VIEW_WINDOW}.data": {"x": "a"}}, {f"{ids.VIEW_MODE}.value": 7}])
def test_an_edit_with_forged_page_values_lands_and_is_redrawn(app, lenet, forged):
    """The page's values the edit's redraw reads are any JSON a forged request sends: read as
    nothing where they are not what the page sends, never a failed edit."""
    values = {**_edit(app, lenet), f"{ids.MODEL_VERSION}.data": {"t": 7}, **forged,
              f"{ids.EDIT_LOG}.data": {"seq": 1, "edits": [
                  {"seq": 1, "model": 7, "layer": "conv2", "field": "fold", "value": False}]}}
    answer = _post(app, _body(app, RECIPE, values, [f"{ids.EDIT_LOG}.data"], trigger=f"{ids.EDIT_LOG}.data"))
    assert not services.current(answer["response"][ids.RECIPE]["data"]).folds("conv2")
    assert answer["response"][ids.GRAPH]["figure"]["data"]
