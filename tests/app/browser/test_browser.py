"""The app in a real browser: load, expand, patterns, fold/quantize, bad upload, two sessions."""

import re
import threading
import time
from pathlib import Path

import pytest
from selenium.webdriver.common.keys import Keys

from qviz.app.jobs import JobFuture
from qviz.app.session import _copy

from .helpers import (badge_texts, choose, click, edit_cell, figure_nodes, halos, needs_browser, set_cell, shot,
                      start_app, text_of, uncheck_sweep_widths, wait_for, wait_idle, wait_open, wait_whole)

pytestmark = needs_browser

def test_loads_sample_and_expands_a_layer(dash_duo):
    start_app(dash_duo)
    # lenet layers drawn: image, conv1, bn1, relu1, conv2, bn2, relu2, pool, flatten, fc1, bn3, relu3, logits
    assert figure_nodes(dash_duo) == 13
    shot(dash_duo, "layer_view.png")
    dash_duo.find_element("#search").send_keys("bn1\n")
    wait_for(lambda: "bn1" in dash_duo.find_element("#node-panel").text, what="bn1 selected")
    click(dash_duo, "#expand-button")
    # bn1's unfused chain computes on x with two ops (x·scale, + shift); its constant
    # part (rsqrt(σ²+ε)·γ, β − μ·scale) is hidden like every constant: 13 - 1 + 2
    wait_for(lambda: figure_nodes(dash_duo) == 13 - 1 + 2, what="bn1 expanded")
    click(dash_duo, "#collapse-all-button")
    wait_for(lambda: figure_nodes(dash_duo) == 13, what="collapsed")
    # hover carries the output shape and the layer's fold/bit state
    hover = dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "const t = g.data.find(d => d.name === 'nodes'); return t.hovertext[t.customdata.indexOf('layer:conv2')];")
    assert "shape (None, 8, 8, 32)" in hover and "BN fold: off" in hover and "bits: float" in hover
    # selecting a node selects its row in the layer table
    search = dash_duo.find_element("#search")
    search.clear()
    search.send_keys("conv2\n")
    wait_for(lambda: dash_duo.driver.execute_script(
        "return dash_ag_grid.getApi('layer-grid').getSelectedRows().map(r => r.layer);") == ["conv2"],
        what="conv2 row selected")


def test_builtin_pattern_highlights_matches_and_bad_text_errors(dash_duo):
    start_app(dash_duo)
    wait_for(lambda: "3 matches in the float graph: 3 kept" in dash_duo.find_element("#match-count").text,
             what="conv_bn matches")
    assert halos(dash_duo) == 6  # 3 matches x (conv layer + bn layer)
    # op view: every computing op; the conv's side panel shows its weights' histogram
    click(dash_duo, "#view-mode input[value=op]")
    wait_for(lambda: figure_nodes(dash_duo) > 20, what="op view")
    dash_duo.find_element("#search").send_keys("conv1_1/convolution\n")
    wait_for(lambda: "op Conv2D, layer conv1" in dash_duo.find_element("#node-panel").text, what="conv selected")
    wait_for(lambda: len(dash_duo.find_elements("#node-panel .js-plotly-plot")) >= 1, what="weights histogram")
    shot(dash_duo, "op_view.png")
    drawn = figure_nodes(dash_duo)
    dash_duo.find_element("#pattern-text").send_keys("Relu(Conv2D(*, *)")
    wait_for(lambda: "column" in dash_duo.find_element("#pattern-error").text, what="syntax error")
    assert figure_nodes(dash_duo) == drawn  # the graph is still there
    # an op type the model has none of (a typo) is said, not only "no match"
    box = dash_duo.find_element("#pattern-text")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("Conv2d as c")
    wait_for(lambda: dash_duo.find_element("#match-count").text
             == "no match in the float graph: no op of type Conv2d in this model", what="no Conv2d said")
    # and what the Patterns box says of the selected conv is this pattern's (it kept the last one's)
    wait_for(lambda: dash_duo.find_element("#explain").text.endswith("does not match: it is a Conv2D, expected Conv2d"),
             what=lambda: f"the explanation for the new pattern: {dash_duo.find_element('#explain').text!r}")


def _halo_colours(dash_duo):
    """{node key: halo colour} of the drawn graph (halos shown, not those drawn clear)."""
    return dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "const t = g && g.data ? g.data.find(d => d.name === 'matches') : null; const out = {};"
        "if (t) t.customdata.forEach((k, i) => {"
        "  if (!Array.isArray(t.marker.opacity) || t.marker.opacity[i] > 0) out[k] = t.marker.color[i]; });"
        "return out;")


def test_matches_survive_a_fold_with_their_fate_and_colour(dash_duo):
    """Issue 18.5: after a fold the matches vanished, and the others changed colour."""
    start_app(dash_duo)
    wait_for(lambda: "3 kept" in dash_duo.find_element("#match-count").text, what="conv_bn matches")
    before = _halo_colours(dash_duo)
    assert set(before) == {"layer:conv1", "layer:bn1", "layer:conv2", "layer:bn2", "layer:fc1", "layer:bn3"}
    set_cell(dash_duo, "conv1", "fold", True)
    wait_for(lambda: dash_duo.find_element("#match-count").text
             == "3 matches in the float graph: 1 folded, 2 kept", what="one match folded")
    after = _halo_colours(dash_duo)
    assert "layer:bn1" not in after and after["layer:conv1"] == before["layer:conv1"]   # carried by conv1
    assert all(after[k] == before[k] for k in ("layer:conv2", "layer:bn2", "layer:fc1", "layer:bn3"))
    items = [b.text for b in dash_duo.find_elements("#match-list .match-item")]
    assert items == ["1. conv1 + bn1 folded", "2. conv2 + bn2 kept", "3. fc1 + bn3 kept"]
    # a match clicked in the list selects its root (the page picks the click up: no Dash id per item)
    click(dash_duo, "#match-list .match-item:nth-child(3)")
    wait_for(lambda: "layer bn3" in dash_duo.find_element("#node-panel").text, what="bn3 (its root) selected from the list")
    # the Patterns box agrees with the halo conv1 wears
    dash_duo.find_element("#search").send_keys("conv1\n")
    wait_for(lambda: dash_duo.find_element("#explain").text
             == "layer conv1 is in match 1 (conv1 + bn1): folded, bn1 folded into conv1.", what="conv1 explained")
    click(dash_duo, "#bulk-fold-all")
    wait_for(lambda: dash_duo.find_element("#match-count").text == "3 matches in the float graph: 3 folded",
             what="every match folded")
    assert set(_halo_colours(dash_duo)) == {"layer:conv1", "layer:conv2", "layer:fc1"}


def _drawn(dash_duo):
    """({node key: (x, y)}, [(first point, last point) of each edge]) of the drawn graph."""
    wait_whole(dash_duo)
    return dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "const n = g && g.data ? g.data.find(d => d.name === 'nodes') : null;"
        "const e = g && g.data ? g.data.find(d => d.name === 'edges') : null; if (!n || !e) return null;"
        "const pos = {}; n.customdata.forEach((k, i) => pos[k] = [n.x[i], n.y[i]]);"
        "const edges = []; let start = null, last = null;"
        "e.x.forEach((x, i) => { if (x === null) { edges.push([start, last]); start = null; }"
        "  else { last = [x, e.y[i]]; if (start === null) start = last; } });"
        "return [pos, edges];")


def test_a_folded_batch_norm_is_drawn_in_its_place_not_as_a_branch(dash_duo):
    """Issue 18.6: the removed bn1 was drawn as a faded branch off conv1. Issue 16.4: it
    stays where it was (laid out alone, behind conv1, it moved every layer after it)."""
    start_app(dash_duo)
    set_cell(dash_duo, "conv1", "fold", True)
    wait_for(lambda: "removed" in dash_duo.find_element("#diff-summary").text, what="conv1 folded")
    wait_for(lambda: "layer:bn1" in (_drawn(dash_duo) or [{}])[0], what="the folded graph drawn")
    pos, edges = _drawn(dash_duo)
    ghost, conv, relu = pos["layer:bn1"], pos["layer:conv1"], pos["layer:relu1"]
    assert conv[0] < ghost[0] < relu[0], "bn1 keeps its place between conv1 and relu1"
    assert not any(ghost in (a, b) for a, b in edges), "no edge to or from the removed bn1"
    assert [b for a, b in edges if a == conv] == [pos["layer:relu1"]], "conv1 feeds relu1 only"
    hover = dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "const t = g.data.find(d => d.name === 'nodes'); return t.hovertext[t.customdata.indexOf('layer:bn1')];")
    assert "change: removed (conv1 now does its work)" in hover


@pytest.mark.worker_processes   # (the report runs in the worker process, as served)
def test_fold_and_four_bits_change_graph_and_verification(dash_duo):
    start_app(dash_duo)
    # the verification runs TensorFlow in the worker: on a loaded machine it can take long, never forever
    wait_for(lambda: "99.78% → 99.78%" in dash_duo.find_element("#verify-panel").text, timeout=120,
             what="verification")
    click(dash_duo, "#bulk-fold-all")
    wait_for(lambda: figure_nodes(dash_duo) == 13 and "removed" in dash_duo.find_element("#diff-summary").text,
          what="folded")
    for layer, col, value in (("conv1", "fold", False), ("conv2", "weight_bits", "4"),
                              ("conv2", "activation_bits", "4")):
        edit_cell(dash_duo, layer, col, value)   # one edit at a time, as a person would
    wait_for(lambda: "SQNR" in dash_duo.find_element("#verify-panel").text
          and "∞" not in dash_duo.find_element("#verify-panel").text, timeout=120, what="quantized verification")
    text = dash_duo.find_element("#diff-summary").text
    assert "added" in text
    shot(dash_duo, "rewritten.png")
    # the table shows conv1 unfolded and conv2 at 4 bits
    rows = dash_duo.driver.execute_script(
        "const api = dash_ag_grid.getApi('layer-grid'); const out = [];"
        "api.forEachNode(n => out.push(n.data)); return out;")
    by = {r["layer"]: r for r in rows}
    assert by["conv1"]["fold"] is False and by["conv2"]["weight_bits"] == "4"
    click(dash_duo, "#undo")
    wait_for(lambda: dash_ag_grid_value(dash_duo, "conv2", "activation_bits") == "float", what="undo")


def test_the_per_layer_chart_is_greyed_while_the_new_recipe_is_verified_and_only_then(dash_duo, monkeypatch):
    """Each recipe's report is held 2 s here, so the page shows the last recipe's bars while
    the new one is verified: greyed then, and not once the new recipe's chart is in. The
    class was the dcc.Graph's own, which it applies only when drawn anew (its
    shouldComponentUpdate looks at its id and style): never greyed while waiting, and a
    new user's walkthrough saw it greyed for good, its bars current."""
    from concurrent.futures import Future

    from qviz.app.session import Session

    real, held = Session.report_future, {}

    def held_2s(self, recipe, local=False):
        future = real(self, recipe, local)
        key = (recipe.to_json(indent=None), local)
        if key not in held:
            held[key] = Future()
            threading.Timer(2.0, lambda f=held[key]: f.set_result(future.result())).start()
        return held[key]

    monkeypatch.setattr(Session, "report_future", held_2s)
    state = ("const c = document.querySelector('#layer-errors-frame'), g = c.querySelector('.js-plotly-plot');"
             "return [c.className.includes('stale'), g && g.layout.meta ? g.layout.meta.recipe : null];")
    start_app(dash_duo)
    wait_for(lambda: dash_duo.driver.execute_script(state)[1] is not None, timeout=120, what="the first chart")
    seen = dash_duo.driver.execute_script(state)[1]
    for edit in (lambda: edit_cell(dash_duo, "conv2", "weight_bits", "4"), lambda: click(dash_duo, "#bulk-all-8")):
        dash_duo.driver.execute_script(   # (the class as it is every 10 ms)
            "window.__classes = []; clearInterval(window.__watch); window.__watch = setInterval(() =>"
            " window.__classes.push(document.querySelector('#layer-errors-frame').className), 10);")
        edit()

        def new_chart_not_greyed():
            greyed, recipe = dash_duo.driver.execute_script(state)
            return not greyed and recipe is not None and recipe != seen

        wait_for(new_chart_not_greyed, timeout=120,
                 what=lambda: f"the new recipe's chart, not greyed; {dash_duo.driver.execute_script(state)}")
        seen = dash_duo.driver.execute_script(state)[1]
        assert any("stale" in c for c in dash_duo.driver.execute_script("return window.__classes;"))


def dash_ag_grid_value(dash_duo, layer, col):
    return dash_duo.driver.execute_script(
        "return dash_ag_grid.getApi('layer-grid').getRowNode(arguments[0]).data[arguments[1]];", layer, col)


def test_bad_upload_shows_error_and_app_keeps_working(dash_duo, tmp_path):
    start_app(dash_duo)
    bad = tmp_path / "broken.pb"
    bad.write_bytes(b"this is not a protobuf")
    dash_duo.wait_for_element("#model-upload input[type=file]", timeout=30).send_keys(str(bad))
    wait_for(lambda: dash_duo.find_element("#alert").text.startswith("error: broken.pb"), what="the error in the red bar")
    # the status line goes on naming what is open (it kept the error through every later edit)
    wait_for(lambda: dash_duo.find_element("#model-status").text.startswith("lenet_digits: "),
             what=lambda: f"lenet_digits still open; status {dash_duo.find_element('#model-status').text!r}")
    # the red bar clicked away, the same file chosen again says it again (the browser saw no change)
    click(dash_duo, "#alert")
    wait_for(lambda: dash_duo.find_element("#alert").text == "", what="the red bar cleared")
    dash_duo.find_element("#model-upload input[type=file]").send_keys(str(bad))
    wait_for(lambda: dash_duo.find_element("#alert").text.startswith("error: broken.pb"), what="the error again")
    click(dash_duo, "#bulk-fold-all")
    wait_for(lambda: "removed" in dash_duo.find_element("#diff-summary").text, what="still working")
    # a model uploaded is named in the picker (it went on naming the last one picked)
    from qviz.samples import sample_path

    good = tmp_path / "mine.keras"
    good.write_bytes(sample_path("resnet_block").read_bytes())
    dash_duo.find_element("#model-upload input[type=file]").send_keys(str(good))
    wait_for(lambda: dash_duo.find_element("#model-status").text.startswith("mine.keras: "),
             timeout=60, what=lambda: f"the upload open; status {dash_duo.find_element('#model-status').text!r}")
    wait_for(lambda: text_of(dash_duo, "#model-picker").startswith("mine.keras (uploaded)"),
             what=lambda: f"the picker names the upload: {text_of(dash_duo, '#model-picker')!r}")
    # the failed upload's error went with the model it was shown over (it stayed on every model)
    assert dash_duo.find_element("#alert").text == ""


def test_two_sessions_do_not_share_state(dash_duo):
    app = start_app(dash_duo)
    first = dash_duo.driver.current_window_handle
    click(dash_duo, "#bulk-fold-all")
    wait_for(lambda: "removed" in dash_duo.find_element("#diff-summary").text, what="first session folded")
    dash_duo.driver.switch_to.new_window("window")
    dash_duo.driver.get(dash_duo.server_url)
    wait_open(dash_duo, "lenet_digits")   # the second page
    # the second session picks another model; the first keeps its own
    dash_duo.driver.execute_script("window.scrollTo(0, 0)")
    choose(dash_duo, "#model-picker", "resnet_block")
    wait_open(dash_duo, "resnet_block")
    wait_for(lambda: figure_nodes(dash_duo) > 0 and "changes nothing" in dash_duo.find_element("#diff-summary").text,
          what="second model drawn")
    assert "changes nothing" in dash_duo.find_element("#diff-summary").text
    assert len(app.qviz_sessions._sessions) == 2
    dash_duo.driver.switch_to.window(first)
    assert "lenet_digits" in dash_duo.find_element("#model-status").text
    assert "removed" in dash_duo.find_element("#diff-summary").text


def test_fold_explainer_shows_this_models_numbers(dash_duo):
    start_app(dash_duo)
    dash_duo.find_element("#search").send_keys("conv1\n")
    wait_for(lambda: "layer conv1" in dash_duo.find_element("#node-panel").text, what="conv1 selected")
    click(dash_duo, ".fold-explain-button")
    wait_for(lambda: "max |Δ|" in dash_duo.find_element("#fold-explainer").text, timeout=60, what="explainer")
    text = dash_duo.find_element("#fold-explainer").text
    assert "conv1 (Conv2D, weights [3, 3, 1, 16]) absorbs bn1 (unfused batch norm)" in text
    delta = float(text.split("layer → batch norm = ")[1].split()[0].rstrip("."))
    assert delta < 1e-4
    assert len(dash_duo.find_elements("#fold-explainer .fold-table tr")) == 17   # header + all 16 channels
    assert dash_duo.find_elements("#fold-explainer mjx-container, #fold-explainer .MathJax")  # formulas typeset
    # quantization grid: conv1 at 4-bit weights shows 15 levels (narrow range) over the histogram
    set_cell(dash_duo, "conv1", "weight_bits", "4")
    wait_for(lambda: len(dash_duo.find_elements("#node-panel .quant-grid")) == 1, what="weights grid")
    wait_idle(dash_duo)   # (the next edit is a request of its own, not merged into this one's)
    set_cell(dash_duo, "conv1", "activation_bits", "8")
    # activations are sampled in the worker and polled: as long as the other waits on a loaded machine
    wait_for(lambda: len(dash_duo.find_elements("#node-panel .quant-grid")) == 2, timeout=120, what="activation grid")
    levels = dash_duo.driver.execute_script(   # the levels are one trace: 3 points (x, x, gap) per level
        "return [...document.querySelectorAll('#node-panel .quant-grid .js-plotly-plot')]"
        ".map(g => [g.layout.title.text, ((g.data.find(d => d.name === 'levels') || {x: []}).x.length) / 3,"
        "           ((g.layout.annotations || [])[0] || {}).text || '']);")
    weights = [n for title, n, _ in levels if title.startswith("weights at 4 bits (narrow range")]
    assert weights == [15]
    # 8 bits' 256 lines would be a solid block in the panel: drawn as the grid's range, its step written
    assert any(title.startswith("activation at 8 bits") and said.startswith("256 levels, step")
               for title, _, said in levels), levels


def _click_label(dash_duo, container, text):
    """Click the radio/checklist option of ``container`` whose label is ``text``."""
    for label in dash_duo.find_elements(f"{container} label"):
        if (label.get_attribute("textContent") or "").strip() == text:
            dash_duo.driver.execute_script("arguments[0].scrollIntoView(); arguments[0].click();", label)
            return
    raise AssertionError(f"no option {text!r} in {container}")


def _fold_graph_labels(dash_duo):
    return dash_duo.driver.execute_script(
        "return [...document.querySelectorAll('#train-fold-view .fold-graph .js-plotly-plot')].map(g => {"
        "  const t = g.data.find(d => d.name === 'nodes'); return t && t.text ? t.text : []; });")


def test_training_fold_view_switches_modes_and_phases(dash_duo):
    start_app(dash_duo)
    dash_duo.find_element("#search").send_keys("conv2\n")
    wait_for(lambda: "layer conv2" in dash_duo.find_element("#node-panel").text, what="conv2 selected")
    click(dash_duo, ".fold-explain-button")
    wait_for(lambda: "batch norm with batch statistics" in dash_duo.find_element("#train-fold-check").text,
          timeout=60, what="training fold (tf_contrib, before the freeze)")
    check = dash_duo.find_element("#train-fold-check").text
    assert float(check.rsplit("= ", 1)[1].rstrip(".")) < 1e-3
    inference, training = _fold_graph_labels(dash_duo)
    assert "convolution" in inference and "correction_recip" not in inference
    assert "correction_recip" in training and "batch_mean" in training and "post_conv_mul" in training
    dash_duo.driver.execute_script("document.querySelectorAll('.fold-graph')[1].scrollIntoView();")
    shot(dash_duo, "training_fold.png")
    _click_label(dash_duo, "#train-fold-mode", "QKeras batch_stats_folding")
    _click_label(dash_duo, "#train-fold-phase", "after the freeze (moving statistics)")
    wait_for(lambda: "the inference fold" in dash_duo.find_element("#train-fold-check").text, timeout=60,
          what="batch_stats_folding after the freeze")
    wait_for(lambda: "correction_recip" not in _fold_graph_labels(dash_duo)[1], what="redrawn for the new mode")
    assert "folded_kernel" in _fold_graph_labels(dash_duo)[1]


@pytest.mark.worker_processes   # (the sweep runs, and is stopped, in the worker process)
def test_sensitivity_sweep_heatmap_and_one_click_apply(dash_duo):
    start_app(dash_duo)
    status = lambda: dash_duo.find_element("#sweep-status").text   # noqa: E731
    # a sweep stopped part way ends stopped: what it measured stays on screen, the rest
    # blank, and the panel says what a run to finish costs
    wait_for(lambda: status().startswith("40 measurements"), what=lambda: f"the sweep's plan; {status()!r}")
    click(dash_duo, "#sweep-run")
    wait_for(lambda: re.match(r"[1-9]\d* of 40 measurements", status()), timeout=180,
             what=lambda: f"a first measurement; {status()!r}")
    click(dash_duo, "#sweep-stop")
    wait_for(lambda: not dash_duo.find_element("#sweep-stop").is_enabled() and status().startswith("stopped after"),
             timeout=60, what=lambda: f"the sweep stopped; {status()!r}")
    made = int(re.search(r"run again to finish: 40 measurements \((\d+) made already\): 4 layers", status())[1])
    assert dash_duo.find_element("#sweep-heatmap").is_displayed() and not dash_duo.find_elements("#sweep-suggested")
    z = dash_duo.driver.execute_script(
        "const g = document.querySelector('#sweep-heatmap .js-plotly-plot'); return g.data.map(d => d.z);")
    cells = [v for rows in z for row in rows for v in row]
    assert len(cells) == 40 and 0 < sum(v is not None for v in cells) == made < 40, z
    dash_duo.driver.execute_script("document.getElementById('sweep-heatmap').scrollIntoView();")
    shot(dash_duo, "sensitivity_stopped.png")
    uncheck_sweep_widths(dash_duo, 6, 3, 2)     # sweep 8 and 4 bits only: 4 layers × 2 × 2 = 16 measurements
    # what the sweep will cost is said before it runs, and follows the widths chosen (after
    # what the stopped run measured, if it measured any before the stop: "stopped after 1 of 40 …")
    wait_for(lambda: re.search(r"16 measurements( \(\d+ made already\))?: 4 layers × 2 widths", status()),
             what=lambda: f"the sweep's plan; {dash_duo.find_element('#sweep-status').text!r}")
    click(dash_duo, "#sweep-run")
    wait_for(lambda: dash_duo.find_element("#sweep-status").text.startswith("done: 16"), timeout=120,
          what="sweep finished")
    z = dash_duo.driver.execute_script(
        "const g = document.querySelector('#sweep-heatmap .js-plotly-plot'); return g.data.map(d => d.z);")
    assert len(z) == 2 and all(len(rows) == 4 and all(len(r) == 2 for r in rows) for rows in z)
    assert all(r[0] > r[1] for rows in z for r in rows)      # 8 bits beat 4 bits for every layer
    accuracy = dash_duo.driver.execute_script(
        "const g = document.querySelector('#sweep-heatmap .js-plotly-plot'); return g.data[0].customdata;")
    assert all(90 < a <= 100 for row in accuracy for a in row)   # lenet_digits' test accuracy, in %
    suggestion = dash_duo.find_element("#sweep-suggested").text
    shot(dash_duo, "sensitivity.png")
    # the suggestion lists "conv1 w/a, …"; applying it puts those bits in the table
    picked = dict(p.rsplit(" ", 1) for p in suggestion.split(": ", 1)[1].split(", "))
    click(dash_duo, "#sweep-apply")

    def table():
        rows = dash_duo.driver.execute_script(
            "const api = dash_ag_grid.getApi('layer-grid'); const out = [];"
            "api.forEachNode(n => out.push(n.data)); return out;")
        return {r["layer"]: f"{r['weight_bits']}/{r['activation_bits']}" for r in rows if r["layer"] in picked}

    wait_for(lambda: table() == picked, what="suggested bits in the table")
    assert all(r["fold"] for r in dash_duo.driver.execute_script(
        "const api = dash_ag_grid.getApi('layer-grid'); const out = [];"
        "api.forEachNode(n => out.push(n.data)); return out;") if r["foldable"] == "yes")
    # widths ticked after a sweep: its figures stay, and the line says what a new run would cost
    _click_label(dash_duo, "#sweep-bits", "2")
    # (16, and those at 2 bits the stopped run made)
    next_plan = (r"done: 16 measurements · run again: 24 measurements \((1[6-9]|2[0-4]) made already\): 4 layers "
                 r"× 3 widths, weights and activations apart \(fewer widths: a shorter sweep\)")
    wait_for(lambda: re.fullmatch(next_plan, status()), what=lambda: f"the next run's plan; {status()!r}")
    assert dash_duo.find_element("#sweep-heatmap").is_displayed()


def test_qat_export_downloads_a_model_with_the_recipes_bits(dash_duo):
    import qviz
    from qviz.ir.ops import FAKE_QUANT_OPS

    start_app(dash_duo)
    click(dash_duo, "#bulk-fold-all")
    click(dash_duo, "#bulk-first-last-8-rest-4")
    wait_for(lambda: "4" in dash_duo.driver.execute_script(
        "return dash_ag_grid.getApi('layer-grid').getRowNode('conv2').data.weight_bits"), what="bulk bits")
    click(dash_duo, "#qat-export-button")
    wait_for(lambda: dash_duo.find_element("#qat-status").text.startswith("downloaded"), timeout=300,
          what="QAT model downloaded")
    path = Path(dash_duo.download_path) / "lenet_digits_qat.keras"
    wait_for(lambda: path.exists() and path.stat().st_size > 0, what="the file on disk")
    back = qviz.load(path)
    bits = {}
    for n in back.nodes:
        if n.op in FAKE_QUANT_OPS:
            bits.setdefault(n.layer, set()).add(n.attrs["num_bits"])
    assert bits["conv1"] == {8} and bits["conv2"] == {4} and bits["fc1"] == {4} and bits["logits"] == {8}
    assert bits["relu2_act_quant"] == {8}   # (the preset keeps 8-bit activations: TFLite runs them)


def test_tflite_check_shows_the_device_next_to_qviz(dash_duo):
    """The recipe converted and run in TFLite from the Verification panel, the file
    downloaded; a width TFLite will not honour is flagged in the layer table."""
    import numpy as np
    import tensorflow as tf

    start_app(dash_duo)

    def on_tflite(layer):
        return dash_duo.driver.execute_script(
            f"return dash_ag_grid.getApi('layer-grid').getRowNode('{layer}').data.tflite")

    click(dash_duo, "#bulk-all-8")       # a quantizing preset folds too: the device runs it in int8
    wait_for(lambda: on_tflite("conv2") == "int8 + int8 ✓", what=lambda: f"conv2 in int8; {on_tflite('conv2')}")
    edit_cell(dash_duo, "conv2", "fold", False)
    wait_for(lambda: on_tflite("conv2") == "⚠ float", what="conv2 with its batch norm unfolded runs in float")
    assert on_tflite("logits") == "int8 + int8 ✓"           # no batch norm: an int8 kernel
    click(dash_duo, "#bulk-fold-all")
    wait_for(lambda: on_tflite("conv2") == "int8 + int8 ✓", what="conv2 folded runs as simulated")
    click(dash_duo, "#tflite-export-button")
    wait_for(lambda: dash_duo.find_element("#tflite-status").text.startswith("downloaded"), timeout=120,
          what="the .tflite downloaded")
    figures = dash_duo.find_element("#tflite-figures").text
    assert "TFLite vs qviz on 450 examples" in figures and "100.0 % of outputs within 1 LSB" in figures
    path = Path(dash_duo.download_path) / "lenet_digits.tflite"
    wait_for(lambda: path.exists() and path.stat().st_size > 0, what="the file on disk")
    it = tf.lite.Interpreter(model_path=str(path))
    it.allocate_tensors()
    assert {d["dtype"] for d in it.get_tensor_details()} >= {np.int8}
    dash_duo.driver.execute_script("document.getElementById('tflite-figures').scrollIntoView()")
    shot(dash_duo, "tflite_check.png")
    set_cell(dash_duo, "conv2", "weight_bits", "6")
    wait_for(lambda: on_tflite("conv2").startswith("⚠ weights"), what="6-bit weights flagged")
    flagged = ("const g = document.querySelector('#graph .js-plotly-plot');"
               "const t = g && g.data ? g.data.find(d => d.name === 'device flags') : null;"
               "return t ? t.customdata : [];")
    wait_for(lambda: dash_duo.driver.execute_script(flagged) == ["layer:conv2"], what="conv2 flagged on the graph")
    wait_for(lambda: dash_duo.find_element("#tflite-figures").text == "", what="figures of the old recipe cleared")


def _panel_bits(dash_duo):
    """The weight and activation bits the node panel's menus show."""
    text = dash_duo.find_element("#node-panel").text
    after = text.split("weight bits", 1)[1].split()
    return after[0], after[after.index("bits") + 1] if "bits" in after else None


class _HeldRunner:
    """A session's runner whose ``held`` kinds of job wait for :attr:`release` before they
    are sent: what the page shows while they run is then seen for sure, not by timing."""

    def __init__(self, inner, held):
        self.inner, self.held = inner, set(held)
        self.release = threading.Event()
        self.waiting = []   # the kinds held so far

    def submit(self, kind, *args):
        if kind not in self.held:
            return self.inner.submit(kind, *args)
        self.waiting.append(kind)
        answer = JobFuture()

        def later():
            self.release.wait()
            if not answer.set_running_or_notify_cancel():   # (the page moved on: a stale report)
                return
            self.inner.submit(kind, *args).add_done_callback(lambda done: _copy(done, answer))

        threading.Thread(target=later, daemon=True).start()
        return answer

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_panel_follows_a_bulk_change_at_once_and_says_when_it_is_working(dash_duo):
    """Issue 18.1: with a layer selected, a bulk change reached the panel ~1 minute late (it
    waited for the worker). Here the worker's samples and reports are held until the panel has
    followed: a panel that waits for them never does."""
    from qviz.passes import Recipe

    app = start_app(dash_duo)
    dash_duo.find_element("#search").send_keys("conv1\n")
    wait_for(lambda: "layer conv1" in dash_duo.find_element("#node-panel").text, what="conv1 selected")
    assert _panel_bits(dash_duo) == ("float", "float")
    session, = app.qviz_sessions._sessions.values()
    session.ranges_future(Recipe.default(session.graph)).result(timeout=120)   # the opening's calibration
    held = session.runner = _HeldRunner(session.runner, {"samples", "report"})
    try:
        click(dash_duo, "#bulk-all-8")
        wait_for(lambda: _panel_bits(dash_duo) == ("8", "8"), timeout=60, what="the panel shows 8 / 8")
        # activations are sampled in the worker: until they are, the panel says so
        assert "sampling the activations in the worker" in dash_duo.find_element("#node-panel").text
        assert "samples" in held.waiting, "the panel asked for the samples it shows"
    finally:
        held.release.set()
    wait_for(lambda: len(dash_duo.find_elements("#node-panel .quant-grid")) >= 2, timeout=120,
             what=lambda: f"both grids; the panel shows: {dash_duo.find_element('#node-panel').text[-300:]!r}")


def test_sqnr_chart_is_sorted_labelled_and_selects_a_layer(dash_duo):
    """Issue 18.3: ∞ was drawn at 100 dB (below 133 dB bars), bars unsorted and unlabelled."""
    start_app(dash_duo)
    click(dash_duo, "#bulk-fold-all")
    click(dash_duo, "#bulk-all-8")
    chart = ("const g = document.querySelector('#layer-errors .js-plotly-plot');"
             "return g && g.data && g.data.length ? [g.data[0].x, g.data[0].y, g.data[0].text] : null;")
    wait_for(lambda: (dash_duo.driver.execute_script(chart) or [[], ["x"]])[1][0].startswith("◆"), timeout=60,
          what="the chart of the quantized recipe")
    x, y, text = dash_duo.driver.execute_script(chart)
    finite = [v for v, t in zip(x, text) if not t.startswith("∞")]
    assert finite == sorted(finite), "worst first"
    assert all(t.startswith("∞") or t.endswith("dB") for t in text) and len(text) == len(y)   # every bar labelled
    exact = [v for v, t in zip(x, text) if t.startswith("∞")]
    assert exact and min(exact) > max(finite), "∞ past every finite bar"
    assert {"◆ conv1", "◆ conv2", "◆ fc1", "◆ logits"} <= set(y)
    from selenium.webdriver.common.action_chains import ActionChains

    bars = dash_duo.find_elements("#layer-errors .trace.bars .point path")
    # a real click at the bar (plotly's drag layer is on top and turns it into the bar's click)
    ActionChains(dash_duo.driver).move_to_element(bars[y.index("◆ fc1")]).click().perform()
    wait_for(lambda: "layer fc1" in dash_duo.find_element("#node-panel").text, what="fc1 selected by its bar")


def test_selecting_a_layer_changes_nothing_and_tells_one_op_count(dash_duo):
    """Issue 18.7: selecting a node re-ran the verification ("verifying…") as if the
    recipe had changed; the hover counted 2 ops where the panel said 9."""
    start_app(dash_duo)
    click(dash_duo, "#bulk-fold-all")
    click(dash_duo, "#bulk-all-8")
    # the 8-bit recipe drawn (the table follows the drawn recipe, as the verification does)
    # and verified: not the fold-all's numbers, shown while the 8-bit redraw was on its way
    wait_for(lambda: dash_duo.driver.execute_script(
        "return dash_ag_grid.getApi('layer-grid').getRowNode('conv1').data.weight_bits") == "8",
        what="all 8-bit drawn")
    wait_idle(dash_duo)
    wait_for(lambda: "SQNR" in dash_duo.find_element("#verify-panel").text, timeout=60, what="verified")
    dash_duo.driver.execute_script(
        "window.__verifyTexts = []; const el = document.getElementById('verify-panel');"
        "new MutationObserver(() => window.__verifyTexts.push(el.textContent))"
        ".observe(el, {childList: true, subtree: true, characterData: true});")
    dash_duo.find_element("#search").send_keys("conv1\n")
    wait_for(lambda: len(dash_duo.find_elements("#node-panel .quant-grid")) == 2, timeout=120, what="conv1's grids")
    assert not any("verifying" in t for t in dash_duo.driver.execute_script("return window.__verifyTexts"))
    panel = dash_duo.find_element("#node-panel").text
    hover = dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "const t = g.data.find(d => d.name === 'nodes'); return t.hovertext[t.customdata.indexOf('layer:conv1')];")
    ops, constants = panel.split(" ops: ")[0].split()[-1], panel.split(" constants")[0].split()[-1]
    assert f"({ops} ops + {constants} constants, main op Conv2D)" in hover, (hover, panel)
    # the selection pushed no edit: undo takes back "all 8-bit", the last thing the user did
    click(dash_duo, "#undo")
    wait_for(lambda: dash_duo.driver.execute_script(
        "return dash_ag_grid.getApi('layer-grid').getRowNode('conv1').data.weight_bits") == "float",
        what="all 8-bit undone")


def test_a_served_file_is_named_in_the_model_picker_and_can_be_picked_again(dash_duo):
    """Issue 18.7: with `qviz serve FILE` the model picker was blank."""
    import qviz
    from qviz.app import create_app
    from qviz.samples import sample_path

    path = sample_path("resnet_block")
    dash_duo.start_server(create_app(qviz.load(path), model_name=str(path)))
    wait_open(dash_duo, path)
    # (the dropdown's code arrives on its own: on a loaded machine, after the status line)
    wait_for(lambda: [e.text for e in dash_duo.find_elements("#model-picker")] == [f"{path.name} (served)"],
             what=lambda: f"the picker naming the served file; it shows "
                          f"{[e.text for e in dash_duo.find_elements('#model-picker')]}")
    dash_duo.find_element("#search").send_keys("conv1\n")
    wait_for(lambda: "layer conv1" in dash_duo.find_element("#node-panel").text, what="conv1 selected")
    choose(dash_duo, "#model-picker", "lenet_digits")
    wait_open(dash_duo, "lenet_digits")
    # what was searched in the last model goes with it (it stayed in the box)
    wait_for(lambda: dash_duo.find_element("#search").get_attribute("value") == "", what="the search box emptied")
    choose(dash_duo, "#model-picker", f"{path.name} (served)")
    wait_open(dash_duo, path)


def test_two_table_edits_faster_than_a_round_trip_are_both_kept(dash_duo, monkeypatch):
    """The second edit is made while the server still works on the first: Dash
    drops the first request's answer then, so the second must carry both."""
    import threading

    from qviz.app import services

    slow_once, slow_done, real = threading.Event(), threading.Event(), services.set_layer

    def first_edit_is_slow(*args):
        if slow_once.is_set():
            return real(*args)
        slow_once.set()
        time.sleep(2.0)
        try:
            return real(*args)
        finally:
            slow_done.set()

    start_app(dash_duo)
    monkeypatch.setattr(services, "set_layer", first_edit_is_slow)
    set_cell(dash_duo, "conv1", "weight_bits", "4")
    wait_for(slow_once.is_set, what="the first edit reaching the server")
    set_cell(dash_duo, "conv2", "weight_bits", "6")
    wait_for(lambda: badge_texts(dash_duo) == {"layer:conv1": "w4", "layer:conv2": "w6"},
             what=lambda: f"both edits on the graph; badges {badge_texts(dash_duo)}")
    wait_for(slow_done.is_set, what="the first request answered")
    time.sleep(0.5)   # that answer, were it kept, would be on the page by now
    assert badge_texts(dash_duo) == {"layer:conv1": "w4", "layer:conv2": "w6"}
    # each edit is its own undo step
    click(dash_duo, "#undo")
    wait_for(lambda: badge_texts(dash_duo) == {"layer:conv1": "w4"}, what="one edit undone")


def test_the_side_panel_controls_edit_the_recipe(dash_duo):
    start_app(dash_duo)
    dash_duo.find_element("#search").send_keys("conv1\n")
    wait_for(lambda: "layer conv1" in dash_duo.find_element("#node-panel").text, what="conv1 selected")
    dash_duo.driver.execute_script("document.querySelector('#node-panel [id*=\"layer-fold\"] input').click();")
    wait_for(lambda: badge_texts(dash_duo) == {"layer:conv1": "+bn"},
             what=lambda: f"conv1 folded; badges {badge_texts(dash_duo)}")
    assert dash_duo.find_element("#alert").text == ""
    click(dash_duo, "#undo")
    wait_for(lambda: badge_texts(dash_duo) == {}, what="the fold undone")


def test_a_model_quantized_already_shows_its_widths_and_says_why_nothing_is_offered(dash_duo, tmp_path):
    """A .pb qviz wrote, served: the page said "No Rows To Show", drew no badge, and
    "all 8-bit" did nothing without a word."""
    import qviz
    from qviz.app import create_app
    from qviz.exporters import save_graph_def
    from qviz.samples import sample_path

    g = qviz.load(sample_path("lenet_digits"))
    path = save_graph_def(qviz.apply(g, qviz.Recipe.default(g), report=False).graph, tmp_path / "q.pb")
    dash_duo.start_server(create_app(qviz.load(path), model_name=str(path)))
    wait_open(dash_duo, path)
    assert "fake-quantized already: 4 layers (conv1 w8a8, conv2 w8a8 and 2 more)" in \
        dash_duo.find_element("#model-status").text
    wait_for(lambda: badge_texts(dash_duo).get("layer:conv2") == "w8a8",
             what=lambda: f"conv2's own widths on the graph: {badge_texts(dash_duo)}")
    assert "no layer here to fold or quantize" in dash_duo.find_element("#layer-grid").text
    click(dash_duo, "#bulk-all-8")
    wait_for(lambda: dash_duo.find_element("#recipe-error").text == "nothing changed: no layer here to fold or "
             "quantize (its conv/dense layers are fake-quantized already)", what="all 8-bit says why it did nothing")
