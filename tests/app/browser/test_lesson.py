"""Issue 20.6: a newcomer can start the fold lesson with one button, open it from the
conv or from its batch norm, see one channel worked through with the model's own
numbers, and look up every word."""

import qviz
from qviz.analysis.fold_explainer import worked_channel
from qviz.app.glossary import GLOSSARY
from qviz.passes import fold_candidates
from qviz.samples import sample_path

from .helpers import click, needs_browser, shot, start_app, wait_for

pytestmark = needs_browser


def _worked(layer):
    g = qviz.load(sample_path("lenet_digits"))
    cand = next(c for c in fold_candidates(g) if c.layer == layer)
    return worked_channel(cand.values, cand.match.layer_op.op, 0)


def test_learn_starts_at_the_first_fold_and_the_batch_norm_opens_its_fold(dash_duo):
    start_app(dash_duo)
    dash_duo.find_element("#learn-button").click()
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
    wait_for(lambda: dash_duo.driver.execute_script(terms) == ["max |Δ|", "SQNR"], timeout=60,
             what=lambda: f"the verification's terms; {dash_duo.driver.execute_script(terms)}")
