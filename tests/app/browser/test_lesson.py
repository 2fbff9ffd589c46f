"""Issue 20.6: a newcomer can start the fold lesson with one button, open it from the
conv or from its batch norm, see one channel worked through with the model's own
numbers, and look up every word."""

import qviz
from qviz.analysis.fold_explainer import worked_channel
from qviz.app.glossary import GLOSSARY
from qviz.passes import fold_candidates
from qviz.samples import sample_path

from .helpers import click, edit_cell, needs_browser, shot, start_app, wait_for

pytestmark = needs_browser


def _worked(layer):
    g = qviz.load(sample_path("lenet_digits"))
    cand = next(c for c in fold_candidates(g) if c.layer == layer)
    return worked_channel(cand.values, cand.match.layer_op.op, 0)


def test_learn_starts_at_the_first_fold_and_the_batch_norm_opens_its_fold(dash_duo):
    start_app(dash_duo)
    click(dash_duo, "#learn-button")
    wait_for(lambda: "layer conv1" in dash_duo.find_element("#node-panel").text, what="conv1 selected")
    wait_for(lambda: dash_duo.find_elements("#fold-worked"), timeout=60, what="the worked channel")
    assert dash_duo.find_element("#fold-explainer-panel").is_displayed()
    lines = [d.text for d in dash_duo.find_elements("#fold-worked .worked-line")]
    assert lines == _worked("conv1")
    text = dash_duo.find_element("#fold-explainer").text
    assert "conv1 (Conv2D, weights [3, 3, 1, 16]) absorbs bn1 (unfused batch norm)" in text
    assert "(all 16 channels" in text
    # every word the panel uses is in the glossary, and the terms carry it as a tooltip
    dash_duo.driver.execute_script("document.querySelector('.glossary-box').open = true;")
    glossary = dash_duo.find_element(".glossary").text
    assert all(word in glossary for word in GLOSSARY)
    titles = dash_duo.driver.execute_script(
        "return [...document.querySelectorAll('#fold-explainer abbr.term')].map(a => a.title);")
    assert GLOSSARY["unfused"] in titles and GLOSSARY["batch norm"] in titles
    dash_duo.driver.execute_script("document.getElementById('fold-explainer-panel').scrollIntoView();")
    shot(dash_duo, "fold_lesson.png")
    # the student clicks the batch norm: its panel says whose it is, and explains that fold
    dash_duo.find_element("#search").clear()
    dash_duo.find_element("#search").send_keys("bn2\n")
    wait_for(lambda: "bn2 is the batch norm after conv2" in dash_duo.find_element("#node-panel").text,
             what=lambda: f"bn2's panel; it reads {dash_duo.find_element('#node-panel').text!r}")
    click(dash_duo, ".fold-explain-button")
    wait_for(lambda: [d.text for d in dash_duo.find_elements("#fold-worked .worked-line")] == _worked("conv2"),
             timeout=60, what="conv2's channel 0 worked through")
    assert "conv2 (Conv2D, weights [3, 3, 16, 32]) absorbs bn2" in dash_duo.find_element("#fold-explainer").text
    # the verification's words carry their meaning too (once its report is in: it runs in the worker)
    terms = "return [...document.querySelectorAll('#verify-panel abbr.term')].map(a => a.textContent);"
    wait_for(lambda: dash_duo.driver.execute_script(terms) == ["max |Δ|", "relative", "SQNR"], timeout=60,
             what=lambda: f"the verification's terms; {dash_duo.driver.execute_script(terms)}")


def _grid_errors(dash_duo):
    return [d.text for d in dash_duo.find_elements("#node-panel .grid-error")]


def test_a_grid_splits_its_error_and_redraws_at_another_width(dash_duo):
    import re

    start_app(dash_duo)
    edit_cell(dash_duo, "conv1", "weight_bits", "4")
    dash_duo.find_element("#search").send_keys("conv1\n")
    wait_for(lambda: any(t.startswith("rounding and clipping: error at 4 bits") for t in _grid_errors(dash_duo)),
             timeout=60, what=lambda: f"the weights' error split; {_grid_errors(dash_duo)}")
    at4 = _grid_errors(dash_duo)[0]
    # weights are quantized on their own symmetric range: nothing is clipped
    assert re.search(r"clipping 0 \(0% of it; 0\.00% of values outside the range\)", at4), at4
    # the slider as a keyboard user moves it: two steps left, 4 → 2
    from selenium.webdriver.common.keys import Keys

    handle = dash_duo.find_element("#node-panel .grid-bits [role=slider]")
    dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", handle)
    handle.send_keys(Keys.ARROW_LEFT, Keys.ARROW_LEFT)
    wait_for(lambda: _grid_errors(dash_duo)[0].startswith("rounding and clipping: error at 2 bits"),
             what=lambda: f"the grid at 2 bits; {_grid_errors(dash_duo)}")
    levels = dash_duo.driver.execute_script(
        "const g = document.querySelector('#node-panel .quant-grid .js-plotly-plot');"
        "return [g.layout.title.text, g.data.find(d => d.name === 'levels').x.length / 3];")
    assert levels[0].startswith("weights at 2 bits (narrow range") and levels[1] == 3
    rounding = [float(re.search(r"rounding (\S+),", t).group(1)) for t in (at4, _grid_errors(dash_duo)[0])]
    assert rounding[1] > 4 * rounding[0]          # a step 5x as wide: far more rounding error
    dash_duo.driver.execute_script("document.querySelector('#node-panel .grid-error').scrollIntoView();")
    shot(dash_duo, "grid_error_split.png")
