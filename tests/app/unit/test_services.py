"""The app's service layer, without a browser or Dash: what each control does to
the recipe history, what the graph view shows, and how bad uploads are refused."""

import base64

import networkx as nx
import numpy as np
import pytest

import qviz
from qviz.app import navigation, services
from qviz.app.session import Session
from qviz.app.services import ViewChoice, current
from qviz.layout import ViewKey
from qviz.passes import LayerBits, Recipe, RecipeError
from qviz.patterns import BUILTIN
from qviz.render.marks import short_label


@pytest.fixture(scope="module")
def session(samples):
    return Session(qviz.load(samples["lenet_digits"]), "lenet_digits")


def _data_url(text: bytes) -> str:
    return "data:application/json;base64," + base64.b64encode(text).decode()


def test_history_undoes_and_redoes_and_keeps_fifty_steps():
    page = services.new_history(Recipe())
    for bits in range(2, 9):
        page = services.push(page, Recipe(quantize_default=LayerBits(bits, bits)))
    assert current(page).quantize_default == LayerBits(8, 8)
    back = services.undo(services.undo(page))
    assert current(back).quantize_default == LayerBits(6, 6)
    assert current(services.redo(back)).quantize_default == LayerBits(7, 7)
    assert services.undo(services.new_history(Recipe())) == services.new_history(Recipe())  # nothing to undo
    # a new edit after an undo drops the steps that were undone
    branched = services.push(back, Recipe(fold_default=False))
    assert current(services.redo(branched)) == Recipe(fold_default=False)
    for _ in range(60):
        page = services.push(page, Recipe())
    assert len(page["history"]) == services.HISTORY_LIMIT and page["pos"] == services.HISTORY_LIMIT - 1


def test_a_redrawn_control_showing_the_recipe_is_not_an_edit(session):
    page = services.new_history(Recipe.default(session.graph))
    assert services.edit_layer(page, "conv1", "weight_bits", "8") is page        # shows 8 already
    assert services.edit_layer(page, "conv1", "fold", True) is page
    edited = services.edit_layer(page, "conv1", "activation_bits", "float")
    assert current(edited).bits("conv1") == LayerBits(8, None) and edited["pos"] == 1
    both_float = services.edit_layer(edited, "conv1", "weight_bits", "float")
    assert current(both_float).bits("conv1") is None     # float weights and activations: not quantized


def test_presets_act_on_the_layers_of_this_graph(session):
    r = Recipe.default(session.graph).with_preset("first-last-8-rest-4", session.graph)
    assert [r.bits(layer).weight_bits for layer in ("conv1", "conv2", "fc1", "logits")] == [8, 4, 4, 8]
    assert r.folds("conv1")                               # folds kept
    assert Recipe().with_preset("float", session.graph) == Recipe(fold_default=False, quantize_default=None)


@pytest.mark.parametrize("contents, cause", [
    ("no comma at all", "not a UTF-8 text file"),
    ("data:x;base64,@@@@", "not a UTF-8 text file"),
    (_data_url(b"\xff\xfe\x00"), "not a UTF-8 text file"),
    (_data_url(b"{"), "not valid JSON"),
    (_data_url(b'{"quantize": {"layers": {"conv9": {"weights": 8}}}}'), "conv9"),
])
def test_a_bad_recipe_upload_is_one_line_naming_the_cause(session, contents, cause):
    with pytest.raises(RecipeError, match=cause) as info:
        services.recipe_from_upload(contents, session.graph)
    assert "\n" not in str(info.value)


def test_an_uploaded_recipe_of_rules_alone_has_its_rules_run(session):
    """A hand-written ``{"rules": ["*: w4a8"]}`` quantized nothing, without a word."""
    recipe = services.recipe_from_upload(_data_url(b'{"rules": ["name~^conv: w4a8"]}'), session.graph)
    assert recipe.bits("conv2") == LayerBits(4, 8) and recipe.rules == ("name~^conv: w4a8",)


def test_an_uploaded_recipe_round_trips(session):
    recipe = Recipe.default(session.graph).with_bits("conv2", LayerBits(4, 6))
    assert services.recipe_from_upload(_data_url(recipe.to_json().encode()), session.graph) == recipe


def test_the_layer_table_lists_foldable_and_quantizable_layers(session):
    recipe = Recipe.default(session.graph).with_fold("conv2", False)
    rows = {r["layer"]: r for r in services.layer_rows(session.graph, recipe, session.check(recipe))}
    assert list(rows) == ["conv1", "conv2", "fc1", "logits"]
    assert rows["conv2"]["fold"] is False and rows["conv1"]["batch_norm"] == "bn1"
    assert rows["logits"]["foldable"] == "—" and rows["logits"]["weight_bits"] == "8"
    assert rows["conv2"]["tflite"] == "⚠ float"      # an unfolded batch norm keeps conv2 float on the device


def test_the_view_is_laid_out_once_per_recipe_and_choice(session):
    recipe = Recipe.default(session.graph)
    first = services.draw_view(session, recipe, ViewChoice())
    assert services.draw_view(session, recipe, ViewChoice()) is first
    ops = services.draw_view(session, recipe, ViewChoice(mode="op"))
    assert ops is not first and ops.graph.number_of_nodes() > first.graph.number_of_nodes()
    # the rewritten view marks what changed; a folded batch norm is a ghost behind its conv
    assert first.graph.nodes[ViewKey.layer("bn1")]["ghost_of"] == ViewKey.layer("conv1")
    original = services.draw_view(session, recipe, ViewChoice(show="original"))
    assert "ghost_of" not in original.graph.nodes[ViewKey.layer("bn1")]


def test_a_fold_toggle_moves_no_node_of_the_layer_view(session):
    """Issue 16.4: the rewritten layer view is laid out where the float graph has each
    layer, so folding a batch norm or not (its rank kept or lost, alone) moves nothing."""
    recipe = Recipe.default(session.graph)
    folded = services.draw_view(session, recipe, ViewChoice())
    kept = services.draw_view(session, recipe.with_fold("conv1", False), ViewChoice())
    original = services.draw_view(session, recipe, ViewChoice(show="original"))
    bn, conv, relu = ViewKey.layer("bn1"), ViewKey.layer("conv1"), ViewKey.layer("relu1")
    assert folded.graph.nodes[bn].get("ghost_of") and not kept.graph.nodes[bn].get("ghost_of")
    assert folded.pos == kept.pos == original.pos
    # the folded conv's new edge is drawn through the batch norm's place
    assert folded.routes[(conv, relu)] == [folded.pos[bn]] and (conv, relu) not in kept.graph.edges


def test_a_fold_outlines_the_layers_it_changes_not_the_last_one(session):
    """Freezing leaves a NoOp (in the last layer) with a control edge to every op; a fold
    removing some of them outlined the last layer as modified."""
    recipe = Recipe(fold_default=False, quantize_default=None).with_fold("conv1", True)
    vg = services.draw_view(session, recipe, ViewChoice()).graph
    status = {k: d["status"] for k, d in vg.nodes(data=True) if d.get("status")}
    assert status["layer:conv1"] == "modified" and status["layer:bn1"] == "removed"
    assert "layer:logits" not in status and "layer:conv2" not in status


def test_match_marks_follow_the_rewrite(session):
    recipe = Recipe.default(session.graph)
    fates = session.match_fates("builtin:conv_bn", BUILTIN["conv_bn"], recipe)
    rewritten = services.draw_view(session, recipe, ViewChoice())
    graph, _ = services.shown(session, recipe, ViewChoice())
    halos, clear, items = services.match_marks(fates, rewritten, graph, False, limit=2)
    assert len(items) == 2 and [i.fate for i in items] == ["folded", "folded"]
    assert set(halos) >= {ViewKey.layer("conv1"), ViewKey.layer("conv2")}
    # the folded batch norms, drawn faded, keep their match's colour in a clear halo (for the page's unfold)
    assert clear == {ViewKey.layer(bn): halos[ViewKey.layer(layer)]
                     for layer, bn in (("conv1", "bn1"), ("conv2", "bn2"), ("fc1", "bn3"))}
    assert all(ViewKey(i.key).is_layer for i in items)


def test_search_finds_exact_names_first_then_substrings(session):
    vg = services.draw_view(session, Recipe(), ViewChoice()).graph
    assert navigation.search(vg, "conv1") == (["layer:conv1"], "")
    hits, status = navigation.search(vg, "CONV")
    assert hits == ["layer:conv1", "layer:conv2"] and status == "2 found"
    assert navigation.search(vg, "nothing-here") == ([], "no node or layer matches 'nothing-here'")
    assert navigation.search(vg, "   ") == ([], "")                      # blanks search for nothing
    assert services.layer_of_key(session.graph, "not a key") is None               # what a page sends is not trusted
    # in the op view, an op is found by the label drawn for it (its layer, then its own name)
    ops = services.draw_view(session, Recipe(), ViewChoice(mode="op")).graph
    conv = next(k for k, d in ops.nodes(data=True) if d["layer"] == "conv2" and d["op"] == "Conv2D")
    label = ops.nodes[conv]["label"]
    assert label.startswith("conv2/") and label.lower() not in conv.lower()   # not a part of the op's name
    assert navigation.search(ops, label)[0] == [conv]
    # a long name is drawn shortened: what the graph shows finds it
    long = nx.DiGraph()
    long.add_node("layer:separable_conv_1_pad_reduction_right1_stem_1", label="separable_conv_1_pad_reduction_right1_stem_1")
    drawn = short_label("separable_conv_1_pad_reduction_right1_stem_1")
    assert drawn == "sep…pad_red_right1_stem_1"
    assert navigation.search(long, drawn)[0] == navigation.search(long, "sep…pad_red")[0] == list(long)


def test_expanding_needs_a_selected_layer():
    assert navigation.with_expanded({"expanded": ["a"]}, "layer:b") == {"expanded": ["a", "b"]}
    assert navigation.with_expanded({"expanded": []}, "op:a/conv") is None
    assert navigation.with_expanded({}, None) is None


def test_a_model_with_an_input_of_unknown_size_draws_and_folds():
    """No noise can be made for an input of unknown height and width: nothing that
    does not calibrate may ask for it (drawing, folding); quantizing says why."""
    import numpy as np
    import tensorflow as tf

    from qviz.passes.calibration import CalibrationError
    from qviz.samples import data_for

    rng = np.random.default_rng(0)
    with tf.Graph().as_default() as tfg:   # a frozen graph whose input is any size (a .pb can be)
        x = tf.compat.v1.placeholder(tf.float32, (None, None, None, 3), name="image")
        with tf.name_scope("conv"):
            y = tf.nn.conv2d(x, tf.constant(rng.normal(size=(3, 3, 3, 4)).astype("float32")), 1, "VALID")
        with tf.name_scope("bn"):
            c = [tf.constant(v.astype("float32")) for v in (rng.uniform(0.5, 1.5, 4), rng.normal(size=4),
                                                              rng.normal(size=4), rng.uniform(0.5, 2, 4))]
            y = tf.compat.v1.nn.fused_batch_norm(y, c[0], c[1], mean=c[2], variance=c[3], is_training=False)[0]
        tf.nn.relu(y, name="relu")
    g = qviz.load(tfg.as_graph_def())
    assert data_for(g).calibration is None and data_for(g).origin == "fixed-seed noise"
    s = Session(g, "any-size")
    folded = Recipe(fold_default=True, quantize_default=None)
    view = services.draw_view(s, folded, ViewChoice())
    assert view.graph.nodes[ViewKey.layer("bn")]["ghost_of"] == ViewKey.layer("conv")
    with pytest.raises(CalibrationError, match="unknown dimensions"):
        s.result(Recipe(quantize_default=LayerBits(8, 8)))


def _fake_quant_ranges(graph):
    """Each activation quantizer's range (its min and max constants)."""
    from qviz.passes.constants import constant_value

    return {n.name: tuple(np.asarray(constant_value(graph, t, tensorflow=False)).tolist() for t in n.inputs[1:3])
            for n in graph.nodes if n.op.startswith("FakeQuant") and not graph.is_constant(n.inputs[0])}


def test_a_fold_toggle_calibrates_nothing_and_is_the_model_the_cli_makes(monkeypatch):
    """Every fold selection reads the float graph's one calibration: a fold toggle sends no
    job before it is drawn, and what is drawn, verified and downloaded is what ``qviz apply``
    makes, to the bit (a user once saw the page say 7.8 dB where the CLI, the TFLite check
    and the report said 7.4: the page had read ranges off another calibration)."""
    import qviz
    from qviz.app.session import Session
    from qviz.samples import data_for, sample_path

    g = qviz.load(sample_path("resnet_block"))
    s = Session(g, "resnet_block")
    base = qviz.Recipe.default(g)
    s.ranges_future(base).result(timeout=120)     # the job, as after opening
    submitted, submit = [], s.runner.submit
    monkeypatch.setattr(s.runner, "submit", lambda kind, *args: (submitted.append(kind), submit(kind, *args))[1])
    for toggled in (base.with_fold("conv2", False), base.with_fold("conv1", False).with_fold("conv2", False)):
        assert s.result_ready(toggled)
        drawn = s.result(toggled)
        cli = qviz.apply(g, toggled, calibration=data_for(g).calibration, report=False)
        assert _fake_quant_ranges(drawn.graph) == _fake_quant_ranges(cli.graph)
        assert len(_fake_quant_ranges(drawn.graph)) > 3
    assert submitted == []


def test_colour_by_weight_max_shows_the_range_the_weight_quantizer_takes(session):
    """A folded conv is quantized with its batch norm's scale in: the colour shows that
    range, the one the rewritten graph's weight quantizer clips to, not the raw kernel's."""
    from qviz.analysis.quant_grid import grids_of_layer
    from qviz.app.colour_by import metric_of
    from qviz.passes.recipe import FLOAT_RECIPE

    recipe = Recipe.default(session.graph)
    painted = metric_of(session, "weight |max|", recipe)
    raw = metric_of(session, "weight |max|", FLOAT_RECIPE)
    assert "folded" in painted.name and "folded" not in raw.name
    rewritten = session.result(recipe).graph
    for layer in ("conv1", "conv2", "fc1"):
        weights, = [g for g in grids_of_layer(rewritten, layer) if g.kind == "weights" and
                    rewritten.node(g.node).layer == layer]
        assert painted.values[layer] == pytest.approx(float(np.max(np.abs(weights.values))), rel=1e-6)
        assert float(np.max(weights.hi)) == pytest.approx(painted.values[layer], rel=1e-3)
    assert painted.values["conv1"] > 5 * raw.values["conv1"]   # (lenet's conv1: 0.22 raw, 1.95 folded)


def test_a_width_off_the_menu_is_shown_in_the_layers_menu(session):
    """A rule set conv1's activations to 9 bits (2–16 are valid): the panel's menu, offering
    8, 6, 4…, showed blank."""
    from dash import dcc

    from qviz.app.callbacks.panels import _controls

    recipe = Recipe.default(session.graph).with_bits("conv1", LayerBits(3, 9))
    menus = [c for c in _walk(_controls(session.graph, recipe, "conv1")) if isinstance(c, dcc.Dropdown)]
    assert [(m.value, m.value in m.options) for m in menus] == [("3", True), ("9", True)]


def _walk(component):
    yield component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children] if children is not None else []:
        if hasattr(child, "to_plotly_json"):
            yield from _walk(child)


def test_a_failed_calibration_fails_the_report_once_and_is_tried_again(samples):
    """The report waits for the recipe's calibration without holding a request thread; a
    calibration that fails (a worker killed) fails that report, and asking again tries both
    again instead of answering the cached failure for good."""
    import qviz
    from qviz.app import worker
    from qviz.app.jobs import ThreadRunner
    from qviz.app.session import Session

    calls = []

    def calibrate(*args, progress=None):
        calls.append("calibrate")
        if len(calls) == 1:
            raise RuntimeError("the worker process stopped during the calibrate job")
        return worker.calibrate(*args)

    runner = ThreadRunner(functions={"calibrate": calibrate, "report": worker.report})
    try:
        g = qviz.load(samples["lenet_digits"])
        s = Session(g, "lenet", runner=runner)
        recipe = Recipe.default(g)
        with pytest.raises(RuntimeError, match="worker process stopped"):
            s.report_future(recipe).result(timeout=60)
        report = s.report_future(recipe).result(timeout=120)
        assert calls == ["calibrate", "calibrate"] and report.layers
        assert s.report_future(recipe).result(timeout=1) is report     # kept once it is in
        float_report = s.report_future(Recipe(fold_default=False, quantize_default=None)).result(timeout=120)
        assert calls == ["calibrate", "calibrate"] and float_report.sqnr_db > 100   # nothing to calibrate
    finally:
        runner.close()


def test_a_model_quantized_already_says_so_on_its_status_line_and_offers_no_layer(session):
    from qviz.app.callbacks.model import _open_line

    assert "fake-quantized" not in _open_line(session.graph, "lenet_digits")
    q = qviz.apply(session.graph, Recipe.default(session.graph), report=False).graph
    line = _open_line(q, "q.pb")
    assert line == "q.pb: 59 ops, 10 layers; fake-quantized already: 4 layers (conv1 w8a8, conv2 w8a8 and 2 more)"
    assert [row["layer"] for row in services.layer_rows(q, Recipe.default(q))] == []


def test_the_two_sqnr_colourings_say_which_error_they_paint(samples):
    """Colouring by each layer's own error and by the accumulated one are different
    pictures: the legend named both "per-layer SQNR (dB)"."""
    from qviz.app import worker
    from qviz.app.colour_by import LOCAL_SQNR, RECIPE_SQNR, metric_of
    from qviz.app.jobs import ThreadRunner

    runner = ThreadRunner(functions={"calibrate": worker.calibrate, "report": worker.report})
    try:
        g = qviz.load(samples["lenet_digits"])
        s = Session(g, "lenet", runner=runner)
        recipe = Recipe.default(g, LayerBits(4, 4))
        s.report_future(recipe).result(timeout=120)
        s.report_future(recipe, local=True).result(timeout=120)
        accumulated, own = metric_of(s, RECIPE_SQNR, recipe), metric_of(s, LOCAL_SQNR, recipe)
        assert accumulated.name == "per-layer SQNR (dB)"
        assert own.name == "per-layer SQNR, local: each layer's own error (dB)"
        assert accumulated.values != own.values
    finally:
        runner.close()


def test_a_layers_grids_are_polled_for_until_they_are_drawn(samples, monkeypatch):
    """The node panel asks whether the activation samples are in, draws, then says whether to
    poll again: a job that ended between the two reads left "sampling…" on screen with the
    poll stopped, and the activation grid never came (a browser test waited 120 s for it)."""
    from concurrent.futures import Future

    from qviz.analysis.quant_grid import activation_samples
    from qviz.app.callbacks.panels import _grids
    from qviz.pipeline import apply
    from qviz.samples import data_for

    g = qviz.load(samples["lenet_digits"])
    recipe = Recipe.default(g)
    s = Session(g, "lenet")
    rewritten = apply(g, recipe, calibration=data_for(g).calibration, report=False).graph
    values = activation_samples(rewritten, [x[:16] for x in data_for(g).calibration])

    class EndsWhileDrawn(Future):
        """Running at the first look, done at every later one."""
        looks = 0

        def done(self):
            EndsWhileDrawn.looks += 1
            return EndsWhileDrawn.looks > 1

    job = EndsWhileDrawn()
    job.set_result(values)
    monkeypatch.setattr(s, "samples_future", lambda recipe: job)
    out, poll_again = _grids(s, rewritten, "conv1", recipe)
    drawn = [part for part in out if isinstance(getattr(part, "id", None), dict)]
    assert poll_again or len(drawn) == 2, "neither the activation grid drawn nor a poll for it"
