"""Issue 19.2 in the app: the per-layer error chart switches between accumulated
(what reaches each layer) and local (each layer's own error), says which it shows,
and the graph can be coloured by either."""

from .helpers import click, edit_cell, needs_browser, shot, start_app, text_of, wait_for

pytestmark = needs_browser

_CHART = ("const g = document.querySelector('#layer-errors .js-plotly-plot');"
          "if (!g || !g.data || !g.data.length) return null;"
          "const out = {}; g.data[0].y.forEach((y, i) => { out[y.replace('◆ ', '')] = g.data[0].text[i]; });"
          "return {title: g.layout.title.text, bars: out};")


def _db(text):
    return float("inf") if text.startswith("∞") else float(text.split()[0])


def _chart(dash_duo):
    return dash_duo.driver.execute_script(_CHART) or {"title": "", "bars": {}}


def test_local_error_shows_which_layer_makes_it(dash_duo):
    start_app(dash_duo)
    click(dash_duo, "#bulk-all-8")
    click(dash_duo, "#layer-errors-all input")          # every layer's bar
    wait_for(lambda: "conv2" in _chart(dash_duo)["bars"], timeout=60, what="the chart of the 8-bit recipe")
    edit_cell(dash_duo, "conv1", "weight_bits", "2")
    wait_for(lambda: _db(_chart(dash_duo)["bars"].get("conv1", "∞")) < 25, timeout=60,
             what=lambda: f"the chart of conv1 at 2 bits: {_chart(dash_duo)}")
    accumulated = {k: _db(v) for k, v in _chart(dash_duo)["bars"].items()}
    assert "accumulated" in _chart(dash_duo)["title"]
    click(dash_duo, "#layer-errors-mode input[value='local']")
    wait_for(lambda: "local" in _chart(dash_duo)["title"], timeout=120,
             what=lambda: f"the local chart; status {text_of(dash_duo, '#layer-errors-status')!r}")
    local = {k: _db(v) for k, v in _chart(dash_duo)["bars"].items()}
    assert local["conv1"] == accumulated["conv1"] or abs(local["conv1"] - accumulated["conv1"]) < 0.2
    # conv2 and fc1 only inherit conv1's error: on their own they are far better
    assert local["conv2"] > accumulated["conv2"] + 6 and local["fc1"] > accumulated["fc1"] + 6, (local, accumulated)
    assert "only its own quantizers' error shows" in text_of(dash_duo, ".error-modes-help")
    dash_duo.driver.execute_script("document.getElementById('layer-errors').scrollIntoView({block: 'center'});")
    shot(dash_duo, "error_modes.png")
    click(dash_duo, "#layer-errors-mode input[value='accumulated']")
    wait_for(lambda: "accumulated" in _chart(dash_duo)["title"], what="back to accumulated")
