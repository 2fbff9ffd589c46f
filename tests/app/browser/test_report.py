"""Issue 20.1: the report is one HTML file that opens from disk with no server and no
network, and its graph and panels draw — made by the library (as ``qviz report``
makes it) and by the app's button."""

from pathlib import Path

import qviz
from qviz.layout import diff_status, view_graph
from qviz.passes import LayerBits
from qviz.render.report import make_report
from qviz.samples import data_for, sample_path

from .helpers import click, edit_cell, needs_browser, start_app, wait_for

pytestmark = needs_browser

_PAGE = """
const plots = [...document.querySelectorAll('.js-plotly-plot')];
const graph = document.getElementById('graph');
const nodes = graph && graph.data ? graph.data.find(d => d.name === 'nodes') : null;
const bits = graph && graph.data ? graph.data.find(d => d.name === 'bits') : null;
const fetched = performance.getEntriesByType('resource').map(r => r.name);
return {plotly: typeof Plotly, plots: plots.length, drawn: plots.filter(p => p.querySelector('svg.main-svg')).length,
        nodes: nodes ? nodes.x.length : -1, badges: bits ? bits.text : [], fetched: fetched,
        headings: [...document.querySelectorAll('h2, h3')].map(h => h.textContent)};
"""


def _open(dash_duo, path: Path) -> dict:
    dash_duo.driver.get(path.resolve().as_uri())
    wait_for(lambda: dash_duo.driver.execute_script(_PAGE)["drawn"] >= 4, what="the report's figures drawn")
    return dash_duo.driver.execute_script(_PAGE)


def test_report_opens_from_disk_and_draws_with_no_network(dash_duo, tmp_path):
    g = qviz.load(sample_path("lenet_digits"))
    recipe = qviz.Recipe(fold_default=True, quantize_default=LayerBits(8, 8)).with_bits("conv2", LayerBits(4, 8))
    path = tmp_path / "report.html"
    path.write_text(make_report(g, recipe, name="lenet_digits.keras", explain=["conv2"]), encoding="utf-8")
    page = _open(dash_duo, path)
    assert page["plotly"] == "object"
    assert page["fetched"] == []            # nothing loaded from anywhere: plotly.js is in the file
    # the graph: the rewritten layer view, the removed batch norms drawn faded where they were
    result = qviz.apply(g, recipe)
    status, removed = diff_status(result)
    assert page["nodes"] == len(view_graph(result.graph, "layer", removed=removed, status=status))
    assert sorted(page["badges"]) == sorted(["w8a8+bn", "w4a8+bn", "w8a8+bn", "w8a8"])
    assert page["headings"][:5] == ["Recipe", "Graph (layer view, rewritten)",
                                    "Where the error is: layers coloured by their SQNR",
                                    "Verification: the rewrite against the float model", "On the device (TFLite)"]
    assert "conv2 absorbs bn2" in page["headings"]
    # the graph again, each layer filled by its SQNR: the worst layer red
    fills = dash_duo.driver.execute_script(
        "const g = document.getElementById('graph-sqnr'); const n = g.data.find(d => d.name === 'nodes');"
        "return Object.fromEntries(n.customdata.map((k, i) => [k, n.marker.color[i]]));")
    verified = qviz.apply(g, recipe, **data_for(g).apply_kwargs())      # as the report verifies: on the sample's data
    worst = min((e for e in verified.report.layers if e.sqnr_db != float("inf")), key=lambda e: e.sqnr_db).layer
    assert fills[f"layer:{worst}"] == "#d7191c"
    text = dash_duo.driver.find_element("tag name", "body").text
    assert "SQNR" in text and "Accuracy 99.78% →" in text
    assert "At 4 bits, per-tensor SQNR goes from" in text      # the fold at the recipe's bits for conv2
    assert "At 4-bit per-tensor weights, folding before quantizing loses" in text    # the three orders
    titles = dash_duo.driver.execute_script(
        "return [...document.querySelectorAll('.js-plotly-plot')].map(p => ((p.layout.xaxis || {}).title || {}).text || '')")
    assert "weight bits" in titles


def test_the_app_downloads_the_report_of_its_recipe(dash_duo):
    start_app(dash_duo)
    edit_cell(dash_duo, "conv1", "fold", True)
    click(dash_duo, "#report-button")
    wait_for(lambda: dash_duo.find_element("#report-status").text.startswith("downloaded"), timeout=120,
             what=lambda: f"the report; status {dash_duo.find_element('#report-status').text!r}")
    path = Path(dash_duo.download_path) / "lenet_digits_report.html"
    wait_for(lambda: path.exists() and path.stat().st_size > 1_000_000, what="the file on disk")
    page = _open(dash_duo, path)
    assert page["fetched"] == [] and page["badges"] == ["+bn"]
    assert "conv1 absorbs bn1" in page["headings"]        # the fold the recipe makes, explained
