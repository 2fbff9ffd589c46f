"""The first view (issue 16): the graph is on screen before TensorFlow has opened
the model and before plotly.js has loaded; plotly then draws it in the same places;
a long graph opens legibly on its start with a minimap of the whole."""

import json
import re
import threading
import urllib.request

import pytest

import qviz
from qviz.app import create_app
from qviz.render.marks import DRAWN_IN_VIEW_ABOVE
from qviz.samples import sample_path

from ...models import zoo_model
from .helpers import (choose, click, figure_nodes, is_open, needs_browser, set_cell, shot, text_of, wait_for, wait_idle,
                      wait_open, wait_whole)

pytestmark = needs_browser


@pytest.fixture(scope="module")
def mobilenet_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("zoo") / "MobileNetV2.keras"
    zoo_model("MobileNetV2").save(path)
    return path


def _plotly_nodes(dash_duo):
    wait_whole(dash_duo)
    return dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "const t = g && g.data ? g.data.find(d => d.name === 'nodes') : null;"
        "return t ? [t.customdata, t.x, t.y, g.layout.xaxis.range] : null;")


def test_the_page_holds_the_layer_view_before_tensorflow_has_opened_the_model(dash_duo, mobilenet_file,
                                                                             monkeypatch):
    from qviz.app import worker

    # hold the open back until the page has been checked: nothing of it may be needed to draw
    gate = threading.Event()
    opened = worker.JOBS["open"]
    monkeypatch.setitem(worker.JOBS, "open", lambda *a, **k: gate.wait(120) and opened(*a, **k))
    app = create_app(str(mobilenet_file), worker=False)
    try:
        dash_duo.start_server(app)
        html = urllib.request.urlopen(dash_duo.server_url).read().decode()
        # the graph is in the HTML itself: an SVG of the start of the graph, names escaped
        first = re.search(r'<div id="first-view".*?</svg>', html, re.S).group(0)
        assert 5 <= first.count("<circle") <= 40 and ">Conv1<" in first and ">bn_Conv1<" in first
        # and the page says what it shows and what it is waiting for
        status = dash_duo.find_element("#model-status").text
        assert "156 layers drawn from the file" in status and "TensorFlow is opening it" in status
        wait_for(lambda: figure_nodes(dash_duo) == 156, what="plotly drawing the file's layer view")
        assert not dash_duo.driver.find_elements("css selector", "#first-view")   # replaced, not stacked
        shot(dash_duo, "first_view_from_file.png")
        drawn = _plotly_nodes(dash_duo)
    finally:
        gate.set()
    wait_open(dash_duo, mobilenet_file, timeout=120)
    wait_for(lambda: "changes nothing" in dash_duo.find_element("#diff-summary").text, timeout=60, what="redrawn")
    frozen = _plotly_nodes(dash_duo)
    # the frozen graph's layer view lands where the file's was: nothing jumps
    before = dict(zip(drawn[0], zip(drawn[1], drawn[2])))
    after = dict(zip(frozen[0], zip(frozen[1], frozen[2])))
    assert before == after
    # legible: the view opens on the graph's first ranks, not all 150
    assert drawn[3][1] - drawn[3][0] < 12


def _box(dash_duo, selector):
    return [round(v) for v in dash_duo.driver.execute_script(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return [r.x, r.y, r.width, r.height];", selector)]


@pytest.mark.parametrize("width", [1280, 1600])
def test_the_first_view_is_where_the_graph_will_be_before_the_page_is_built(dash_duo, mobilenet_file, width):
    """The HTML's own first view sat at the top of the page, full width, until the page was
    built around it: then it jumped 170 px down and shrank to the graph's column."""
    app = create_app(str(mobilenet_file), worker=False)
    dash_duo.start_server(app)
    wait_for(lambda: figure_nodes(dash_duo) > 0, timeout=60, what="the graph drawn")
    driver = dash_duo.driver
    driver.set_window_size(width, 800)
    driver.get(dash_duo.server_url)     # the page built: where the graph is
    wait_for(lambda: figure_nodes(dash_duo) > 0, timeout=60, what="the graph drawn again")
    built = _box(dash_duo, ".graph-wrap")
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*dash_renderer*", "*dash-renderer*"]})
    try:   # the page's HTML alone, as it is before its scripts have built anything
        driver.get(dash_duo.server_url)
        wait_for(lambda: dash_duo.find_element("#first-view").is_displayed(), what="the HTML's first view")
        before = _box(dash_duo, "#first-view")
        assert not dash_duo.find_element("._dash-loading").is_displayed()   # no stray "Loading..."
    finally:
        driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
    assert all(abs(a - b) <= 2 for a, b in zip(before, built)), (before, built)


def _names_in_view(dash_duo, graph_id="graph"):
    """(the names of the nodes in view, the names drawn) of a graph in the page."""
    return dash_duo.driver.execute_script(
        f"const g = document.querySelector('#{graph_id} .js-plotly-plot');"
        "const i = g.data.findIndex(d => d.name === 'nodes'), t = g.data[i];"
        "const labels = (g.layout.meta || {}).labels || t.text;"
        "const xr = g._fullLayout.xaxis.range, yr = g._fullLayout.yaxis.range, want = [];"
        "t.x.forEach((x, k) => { if (x >= Math.min(...xr) && x <= Math.max(...xr) && t.y[k] >= Math.min(...yr)"
        "    && t.y[k] <= Math.max(...yr)) want.push(labels[k]); });"
        "const layer = g.querySelector('.scatterlayer .trace' + g._fullData[i].uid);"
        "return [want, [...layer.querySelectorAll('.textpoint text')].map(e => e.textContent)];")


def _drawn_names(dash_duo):
    """(names drawn inside the plot, pairs of them whose boxes overlap) in the main graph."""
    return dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "const i = g.data.findIndex(d => d.name === 'nodes');"
        "const layer = g.querySelector('.scatterlayer .trace' + g._fullData[i].uid);"
        "const plot = g.querySelector('.nsewdrag').getBoundingClientRect();"
        "const rs = [...layer.querySelectorAll('.textpoint text')].filter(e => e.textContent)"
        "  .map(e => e.getBoundingClientRect())"
        "  .filter(r => r.right > plot.left && r.left < plot.right && r.bottom > plot.top && r.top < plot.bottom);"
        "let n = 0; for (let a = 0; a < rs.length; a++) for (let b = a + 1; b < rs.length; b++)"
        "  if (Math.min(rs[a].right, rs[b].right) > Math.max(rs[a].left, rs[b].left)"
        "      && Math.min(rs[a].bottom, rs[b].bottom) > Math.max(rs[a].top, rs[b].top)) n++;"
        "return [rs.length, n];")


def _drawn_texts(dash_duo):
    """(texts of the graph's points drawn inside the plot: names, bit badges, TFLite marks;
    pairs of them whose boxes overlap; badges or marks drawn for a node whose name is not)."""
    return dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "const plot = g.querySelector('.nsewdrag').getBoundingClientRect();"
        "const rs = [...g.querySelectorAll('.scatterlayer .textpoint text')].filter(e => e.textContent)"
        "  .map(e => e.getBoundingClientRect())"
        "  .filter(r => r.right > plot.left && r.left < plot.right && r.bottom > plot.top && r.top < plot.bottom);"
        "let n = 0; for (let a = 0; a < rs.length; a++) for (let b = a + 1; b < rs.length; b++)"
        "  if (Math.min(rs[a].right, rs[b].right) > Math.max(rs[a].left, rs[b].left)"
        "      && Math.min(rs[a].bottom, rs[b].bottom) > Math.max(rs[a].top, rs[b].top)) n++;"
        "const nodes = g.data.find(d => d.name === 'nodes'), named = {};"
        "nodes.customdata.forEach((k, i) => { if (nodes.text[i]) named[k] = true; });"
        "let orphans = 0, marks = 0;"
        "for (const t of g.data.filter(d => d.name === 'bits' || d.name === 'device flags'))"
        "  t.customdata.forEach((k, i) => { if (t.text[i]) { marks++; if (!named[k]) orphans++; } });"
        "return [rs.length, n, marks, orphans];")


def test_bit_badges_and_tflite_marks_are_thinned_with_the_names(dash_duo, mobilenet_file):
    """A node's bit badge and ⚠ are weighed with its name and drawn with it or not at all:
    zoomed out, no text of the graph runs into another (the badges were never left out, and
    ran into the next layer's name)."""
    g = qviz.load(mobilenet_file)
    dash_duo.start_server(create_app(g, model_name="mobilenet", worker=False, recipe=qviz.Recipe.default(g)))
    wait_open(dash_duo, "mobilenet")
    wait_for(lambda: _drawn_texts(dash_duo)[2] > 2, what=lambda: f"badges drawn: {_drawn_texts(dash_duo)}")
    start, width_px = dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "return [g._fullLayout.xaxis.range, g._fullLayout.xaxis._length];")
    for px in (80, 50):
        dash_duo.driver.execute_script(
            "Plotly.relayout(document.querySelector('#graph .js-plotly-plot'), {'xaxis.range': arguments[0]});",
            [start[0], start[0] + width_px / px])
        wait_for(lambda: (lambda t: t[0] > 10 and t[1] == 0 and t[2] > 0 and t[3] == 0)(_drawn_texts(dash_duo)),
                 what=lambda: f"at {px} px a rank (texts, overlapping pairs, marks, marks without their name) "
                              f"{_drawn_texts(dash_duo)}")


def test_a_long_graph_has_a_minimap_that_moves_the_view_and_labels_come_with_zoom(dash_duo, mobilenet_file):
    dash_duo.start_server(create_app(qviz.load(mobilenet_file), model_name="mobilenet", worker=False))
    wait_open(dash_duo, "mobilenet")
    wait_for(lambda: dash_duo.find_element("#graph-minimap").is_displayed(), what="the minimap")
    shot(dash_duo, "minimap.png")
    x_range = lambda: dash_duo.driver.execute_script(  # noqa: E731
        "return document.querySelector('#graph .js-plotly-plot').layout.xaxis.range;")
    start = x_range()
    mode = lambda: dash_duo.driver.execute_script(  # noqa: E731
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "return g.data.find(d => d.name === 'nodes').mode;")
    assert mode() == "markers+text"          # ten ranks in view: names shown
    # the server sends names near the start only; panned on, the names there are drawn
    # (plotly kept the text groups it had emptied, with no element to fill: after a few
    # pans a view had no names)
    assert len(dash_duo.driver.execute_script(
        "return document.querySelector('#graph .js-plotly-plot').layout.meta.labels;")) > 100
    width = start[1] - start[0]
    for views in (2, 3, 6, 3):
        dash_duo.driver.execute_script(
            "Plotly.relayout(document.querySelector('#graph .js-plotly-plot'), {'xaxis.range': arguments[0]});",
            [start[0] + views * width, start[1] + views * width])
        wait_for(lambda: _names_in_view(dash_duo)[0] and set(_names_in_view(dash_duo)[0]) <= set(_names_in_view(dash_duo)[1]),
                 what=lambda: f"the names {views} views on drawn: wanted, drawn {_names_in_view(dash_duo)}")
    # zoomed out to ~50 px a rank, names would run into each other: those that would touch
    # one drawn are left out, and come back on zooming in again
    def zoom(ranks):
        dash_duo.driver.execute_script(
            "Plotly.relayout(document.querySelector('#graph .js-plotly-plot'), {'xaxis.range': arguments[0]});",
            [start[0], start[0] + ranks])

    width_px = dash_duo.driver.execute_script(
        "return document.querySelector('#graph .js-plotly-plot')._fullLayout.xaxis._length;")
    zoom(width_px / 50)
    wait_for(lambda: mode() == "markers+text" and _drawn_names(dash_duo)[0] > 10 and _drawn_names(dash_duo)[1] == 0
             and len(_names_in_view(dash_duo)[0]) > _drawn_names(dash_duo)[0],
             what=lambda: f"names thinned, none overlapping: (drawn, overlapping) {_drawn_names(dash_duo)}, "
                          f"{len(_names_in_view(dash_duo)[0])} nodes in view")
    zoom(width)
    wait_for(lambda: _names_in_view(dash_duo)[0] and set(_names_in_view(dash_duo)[0]) <= set(_names_in_view(dash_duo)[1]),
             what=lambda: f"every name back: wanted, drawn {_names_in_view(dash_duo)}")
    # a click near the right end of the minimap looks at the end of the graph (clicked again
    # while the minimap is still being drawn: shown first, it takes clicks once it is drawn)
    def click_near_the_end():
        dash_duo.driver.execute_script(
            "const box = document.getElementById('graph-minimap'), r = box.getBoundingClientRect();"
            "box.dispatchEvent(new MouseEvent('click', {bubbles: true, clientX: r.right - 12,"
            " clientY: r.top + r.height / 2}));")
        return x_range()[0] > start[0] + 100

    wait_for(click_near_the_end, what="the view moved to the end")
    # folded away, the minimap is only its button (it covers the nodes under it), and this
    # browser remembers; unfolded, it is back as it was
    size = lambda: dash_duo.driver.execute_script(  # noqa: E731
        "const r = document.getElementById('graph-minimap').getBoundingClientRect(); return [r.width, r.height];")
    full = size()
    click(dash_duo, "#graph-minimap .minimap-fold")
    wait_for(lambda: size()[0] * size()[1] < full[0] * full[1] / 10, what=lambda: f"the minimap folded: {size()}, {full}")
    assert dash_duo.driver.execute_script("return localStorage.getItem('qviz.minimap.folded');") == "1"
    click(dash_duo, "#graph-minimap .minimap-fold")
    wait_for(lambda: size() == full, what=lambda: f"the minimap unfolded: {size()}, {full}")
    assert dash_duo.driver.execute_script("return localStorage.getItem('qviz.minimap.folded');") == ""
    wait_for(lambda: _names_in_view(dash_duo)[0] and set(_names_in_view(dash_duo)[0]) <= set(_names_in_view(dash_duo)[1]),
             what=lambda: f"the names at the end drawn: wanted, drawn {_names_in_view(dash_duo)}")
    # zoomed out to the whole graph: too many names to read, so none are drawn
    dash_duo.driver.execute_script(
        "Plotly.relayout(document.querySelector('#graph .js-plotly-plot'),"
        " {'xaxis.autorange': true, 'yaxis.autorange': true});")
    wait_for(lambda: mode() == "markers", what="labels hidden when zoomed out")
    wait_for(lambda: not dash_duo.find_element("#graph-minimap").is_displayed(), what="no minimap for the whole")


def _points_in_view(dash_duo, trace_name):
    """(the keys of a trace's points in view, the keys of those plotly drew, how many it has)."""
    return dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "const i = g.data.findIndex(d => d.name === arguments[0]), t = g.data[i];"
        "const xr = g._fullLayout.xaxis.range, yr = g._fullLayout.yaxis.range, want = [];"
        "t.x.forEach((x, k) => { if (x >= Math.min(...xr) && x <= Math.max(...xr) && t.y[k] >= Math.min(...yr)"
        "    && t.y[k] <= Math.max(...yr)) want.push(k); });"
        "const layer = g.querySelector('.scatterlayer .trace' + g._fullData[i].uid);"
        "const drawn = [...layer.querySelectorAll('path.point')].map(p => p.__data__.i);"
        "return [want.sort((a, b) => a - b), drawn.sort((a, b) => a - b), t.x.length];", trace_name)


def _texts_in_view(dash_duo):
    """(the names the node trace holds for its points in view, as the page thinned them;
    the names drawn), each sorted."""
    return dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "const i = g.data.findIndex(d => d.name === 'nodes'), t = g.data[i];"
        "const xr = g._fullLayout.xaxis.range, yr = g._fullLayout.yaxis.range, want = [];"
        "t.x.forEach((x, k) => { if (x >= Math.min(...xr) && x <= Math.max(...xr) && t.y[k] >= Math.min(...yr)"
        "    && t.y[k] <= Math.max(...yr) && t.text && t.text[k]) want.push(t.text[k]); });"
        "const layer = g.querySelector('.scatterlayer .trace' + g._fullData[i].uid);"
        "const drawn = [...layer.querySelectorAll('.textpoint text')].map(e => e.textContent).filter(s => s);"
        "return [want.sort(), drawn.sort()];")


def test_a_big_view_draws_the_nodes_in_view_and_those_a_pan_brings_in(dash_duo, tmp_path):
    """Over DRAWN_IN_VIEW_ABOVE nodes plotly draws only the points in view (it styles each
    one it draws: NASNetMobile's op view spent ~1 s of a click on nodes out of view); a pan
    draws the nodes it brings into view, with their arrow heads and names."""
    import keras

    n = DRAWN_IN_VIEW_ABOVE + 20
    x = first = keras.Input((2,))
    for i in range(n):   # (functional: Keras rebuilds a Sequential at each layer it reloads, ~40 s here)
        x = keras.layers.ReLU(name=f"relu_{i}")(x)
    keras.Model(first, x).save(tmp_path / "chain.keras")
    dash_duo.start_server(create_app(qviz.load(tmp_path / "chain.keras"), model_name="chain", worker=False))
    wait_open(dash_duo, "chain")
    if text_of(dash_duo, "#blocks-button") == "ungroup blocks":   # (closed blocks would be few nodes)
        click(dash_duo, "#blocks-button")
    wait_for(lambda: figure_nodes(dash_duo) > n, what=lambda: f"every layer drawn: {figure_nodes(dash_duo)} nodes")
    x0 = dash_duo.driver.execute_script(
        "return Math.min(...document.querySelector('#graph .js-plotly-plot').data.find(d => d.name === 'nodes').x);")
    width_px = dash_duo.driver.execute_script(
        "return document.querySelector('#graph .js-plotly-plot')._fullLayout.xaxis._length;")
    seen = []
    # a view, one far on, one overlapping the first; then zoomed out to ~50 px a rank, and
    # panned by a few ranks
    for start, ranks in ((x0, 10), (x0 + 30, 10), (x0 + 8, 10), (x0 + 40, width_px / 50), (x0 + 43, width_px / 50)):
        dash_duo.driver.execute_script(
            "Plotly.relayout(document.querySelector('#graph .js-plotly-plot'), {'xaxis.range': arguments[0]});",
            [start - 0.5, start + ranks - 0.5])
        for name in ("nodes", "arrows"):
            wait_for(lambda: _points_in_view(dash_duo, name)[0] == _points_in_view(dash_duo, name)[1],
                     what=lambda: f"the {name} in view drawn, and only those: {_points_in_view(dash_duo, name)}")
        # and the names the page gave them (plotly binds a trace's texts to its points by
        # position: after a pan an emptied one would be on another point, with no text
        # element left, without graph_view.js's dropTextGroups)
        wait_for(lambda: _texts_in_view(dash_duo)[0] and _texts_in_view(dash_duo)[0] == _texts_in_view(dash_duo)[1],
                 what=lambda: f"the names in view drawn: wanted, drawn {_texts_in_view(dash_duo)}")
        in_view, _, total = _points_in_view(dash_duo, "nodes")
        assert 0 < len(in_view) < total / 4
        seen.append(set(in_view))
    assert not seen[0] & seen[1] and seen[0] & seen[2] and seen[0] != seen[2]


def test_names_are_drawn_in_a_new_view_and_pane_b_hides_them_when_zoomed_out(dash_duo, mobilenet_file, tmp_path,
                                                                             monkeypatch):
    """A user's try: after a switch of view some nodes in view had no name (plotly kept the
    last figure's emptied text groups); and pane B, zoomed out, drew every name in a smear."""
    monkeypatch.setenv("QVIZ_CACHE_DIR", str(tmp_path))   # not the page another test here cached
    dash_duo.start_server(create_app(qviz.load(mobilenet_file), model_name="mobilenet", worker=False))
    # (named by its file when another test here served the file first: the page's cache)
    wait_for(lambda: is_open(dash_duo, "mobilenet") or is_open(dash_duo, mobilenet_file.name), timeout=60,
             what="mobilenet open")

    def all_named(graph_id="graph"):
        want, drawn = _names_in_view(dash_duo, graph_id)
        return want and set(want) <= set(drawn)

    kinds = ("const g = document.querySelector('#graph .js-plotly-plot');"
             "return [...new Set(g.data.find(d => d.name === 'nodes').customdata.map(k => k.split(':')[0]))];")
    for mode in ("op", "layer", "op"):
        wait_idle(dash_duo)   # (a click while the page still answers the last one can be lost)
        dash_duo.driver.execute_script(f"document.querySelector(\"#view-mode input[value='{mode}']\").click();")
        wait_for(lambda: dash_duo.driver.execute_script(kinds) == [mode], timeout=60,
                 what=lambda: f"the {mode} view; drawn: {dash_duo.driver.execute_script(kinds)}")
        wait_for(all_named, what=lambda: f"every node in the {mode} view named: {_names_in_view(dash_duo)}")
    dash_duo.driver.execute_script("document.querySelector('#side-by-side input').click();")
    b = "document.querySelector('#graph-b .js-plotly-plot')"
    wait_for(lambda: dash_duo.driver.execute_script(f"const g = {b}; return !!(g && g.data && g.data.length);"),
             what="pane B drawn")
    wait_for(lambda: all_named("graph-b"), what=lambda: f"pane B named: {_names_in_view(dash_duo, 'graph-b')}")
    dash_duo.driver.execute_script(f"Plotly.relayout({b}, {{'xaxis.autorange': true, 'yaxis.autorange': true}});")
    wait_for(lambda: dash_duo.driver.execute_script(f"return {b}.data.find(d => d.name === 'nodes').mode;") == "markers",
             what="pane B's names hidden when zoomed out")


def test_a_file_that_does_not_open_does_not_stay_on_screen_as_if_it_had(dash_duo, tmp_path):
    # a Keras archive whose layer graph reads, but whose weights Keras cannot load
    import zipfile

    src = sample_path("lenet_digits")
    bad = tmp_path / "no_weights.keras"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(bad, "w") as zout:
        zout.writestr("config.json", zin.read("config.json"))
        zout.writestr("metadata.json", zin.read("metadata.json"))
        zout.writestr("model.weights.h5", b"not hdf5")
    dash_duo.start_server(create_app(str(bad), worker=False))
    wait_for(lambda: "error: " in dash_duo.find_element("#model-status").text, timeout=60, what="the error")
    assert str(bad) in dash_duo.find_element("#model-status").text
    wait_for(lambda: figure_nodes(dash_duo) <= 0, what="the file's layer view taken down")
    # and the app still works: a sample opens
    choose(dash_duo, "#model-picker", "resnet_block")
    wait_open(dash_duo, "resnet_block")
    assert json.dumps(dash_duo.find_element("#model-status").text)


def test_a_node_found_by_search_keeps_its_name_at_a_laptops_width(dash_duo, mobilenet_file, tmp_path, monkeypatch):
    """A user's try at 1280 px, folded and 8-bit: block_3_project, searched for, was centred
    and outlined, but its name (and badge) lost to its neighbours' when the page thinned them."""
    monkeypatch.setenv("QVIZ_CACHE_DIR", str(tmp_path))
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(create_app(qviz.load(mobilenet_file), model_name="mobilenet", worker=False))
    wait_for(lambda: is_open(dash_duo, "mobilenet") or is_open(dash_duo, mobilenet_file.name), timeout=60,
             what="mobilenet open")
    click(dash_duo, "#bulk-fold-all")
    click(dash_duo, "#bulk-all-8")
    wait_idle(dash_duo)
    drawn = ("const g = document.querySelector('#graph .js-plotly-plot'), t = g.data.find(d => d.name === 'nodes');"
             "const k = t.customdata.indexOf(arguments[0]); return [t.mode, k < 0 ? null : t.text[k]];")
    for layer in ("block_3_project", "block_5_project"):
        search = dash_duo.find_element("#search")
        search.clear()
        search.send_keys(layer + "\n")
        wait_for(lambda: dash_duo.driver.execute_script(drawn, f"layer:{layer}") == ["markers+text", layer],
                 what=lambda: f"{layer}'s name drawn; (mode, its text) {dash_duo.driver.execute_script(drawn, f'layer:{layer}')}")


#: At the first drawing of a new figure (plotly's afterplot, its data replaced) and once its
#: whole is drawn: whether it was drawn near its view only, the node keys drawn, the node
#: positions in its data, the names' mode; ``arguments[0]``: a pan ([x0, x1]) made at once,
#: if any; ``arguments[1]``: whether to draw at once the same data with no ranges (the whole
#: graph in view, as a short graph is sent).
_DRAWINGS = """
const g = document.querySelector('#graph .js-plotly-plot'), old = g.data;
window.__drawings = [];
const look = () => {
    const i = g.data.findIndex(d => d.name === 'nodes'), t = g.data[i];
    const layer = g.querySelector('.scatterlayer .trace' + g._fullData[i].uid);
    return {cut: !!g.__qvizCut, drawn: [...layer.querySelectorAll('path.point')].map(p => t.customdata[p.__data__.i]),
            pos: t.customdata.map((k, j) => [k, t.x[j], t.y[j]]), mode: t.mode,
            range: [g._fullLayout.xaxis.range.slice(), g._fullLayout.yaxis.range.slice()]};
};
const first = () => {
    if (g.data === old) { g.once('plotly_afterplot', first); return; }
    window.__drawings.push(look());
    if (arguments[0]) Plotly.relayout(g, {'xaxis.range': arguments[0]});
    if (arguments[1]) {
        const axis = a => { const out = Object.assign({}, a, {autorange: true}); delete out.range; return out; };
        Plotly.react(g, {data: g.data.slice(), layout: Object.assign({}, g.layout, {xaxis: axis(g.layout.xaxis), yaxis: axis(g.layout.yaxis),
                                                            uirevision: 'whole'})});   // (a new view: not the user's ranges)
    }
};
g.once('plotly_afterplot', first);
window.__whole = look;
"""


def _in_view(drawing, positions=None):
    """The node keys in a drawing's view (by the whole figure's ``positions``, else its own)."""
    (x0, x1), (y0, y1) = sorted(drawing["range"][0]), sorted(drawing["range"][1])
    return {k for k, x, y in (positions or drawing["pos"]) if x is not None and x0 <= x <= x1 and y0 <= y <= y1}


def test_a_redraw_is_drawn_near_its_view_first_and_whole_once_that_is_on_screen(dash_duo, mobilenet_file):
    """Issue 16.4: plotly styles each point of a trace it draws, and most of MobileNetV2's
    156 nodes are out of view: a redraw (a fold toggled) draws the nodes in and near the
    view first, then the rest once that is on screen, so that a pan finds them drawn. What
    the view shows is the same either way, no node moves, and a pan made at once draws
    the nodes it brings into view. A figure that comes before the rest is drawn is drawn
    whole, and updated."""
    dash_duo.start_server(create_app(qviz.load(mobilenet_file), model_name="mobilenet", worker=False))
    wait_open(dash_duo, "mobilenet")
    wait_idle(dash_duo)   # (the open's own redraws done: the next is the toggle's)
    wait_whole(dash_duo)
    whole = dash_duo.driver.execute_script(_DRAWINGS + "return window.__whole();")
    assert len(whole["drawn"]) == len(whole["pos"]) == 156
    set_cell(dash_duo, "Conv1", "fold", True)
    wait_for(lambda: dash_duo.driver.execute_script("return window.__drawings.length;"), what="the redraw")
    first = dash_duo.driver.execute_script("return window.__drawings[0];")
    in_view = _in_view(first, whole["pos"])
    assert first["cut"] and 5 <= len(in_view) <= len(first["drawn"]) < 156 / 3, (len(in_view), len(first["drawn"]))
    assert in_view <= set(first["drawn"])
    wait_whole(dash_duo)
    now = dash_duo.driver.execute_script("return window.__whole();")
    assert len(now["drawn"]) == 156 and sorted(now["pos"]) == sorted(whole["pos"])   # all drawn, none moved
    # a pan two views on, made as the redraw is first drawn: the nodes there are drawn
    x0, x1 = sorted(now["range"][0])
    dash_duo.driver.execute_script(_DRAWINGS, [x0 + 2 * (x1 - x0), x1 + 2 * (x1 - x0)])
    set_cell(dash_duo, "Conv1", "fold", False)
    wait_for(lambda: dash_duo.driver.execute_script("return window.__drawings.length;"), what="the second redraw")
    panned = lambda: dash_duo.driver.execute_script("return window.__whole();")  # noqa: E731
    wait_for(lambda: (lambda d: d["range"][0][0] > x1 and not d["cut"] and _in_view(d) <= set(d["drawn"])
                      and len(d["drawn"]) == 156)(panned()),
             what=lambda: f"the nodes the pan brought into view drawn: {sorted(_in_view(panned()) - set(panned()['drawn']))} "
                          f"not drawn, {len(panned()['drawn'])} drawn")
    # a figure with no ranges (the whole graph in view) drawn at once, reusing the cut data:
    # drawn whole, and updated (a long graph shown whole opens on its start, names readable)
    dash_duo.driver.execute_script(_DRAWINGS, None, True)
    set_cell(dash_duo, "Conv1", "fold", True)
    wait_for(lambda: dash_duo.driver.execute_script("return window.__drawings.length;"), what="the third redraw")
    wait_for(lambda: (lambda d: not d["cut"] and len(d["drawn"]) == 156 and sorted(d["pos"]) == sorted(whole["pos"])
                      and d["range"][0][1] - d["range"][0][0] < 156 / 3)(panned()),
             what=lambda: f"the whole graph drawn and updated: x range {panned()['range'][0]}, "
                          f"{len(panned()['drawn'])} drawn")
