"""Issue 19.1: what the recipe does to each layer is on the graph itself — a badge
per layer with its bits and fold, coloured by width — and a legend says what every
mark means."""

from qviz.render.marks import GHOST_OPACITY, bits_color

from .helpers import choose, click, edit_cell, needs_browser, set_cell, shot, start_app, wait_for

pytestmark = needs_browser

_BADGES = ("const g = document.querySelector('#graph .js-plotly-plot');"
           "const t = g && g.data ? g.data.find(d => d.name === 'bits') : null;"
           "if (!t) return {};"
           "const texts = t.meta && t.meta.texts ? t.meta.texts : t.text;"   # (all, drawn or thinned out)
           "const out = {}; t.customdata.forEach((k, i) => { if (texts[i]) out[k] = [texts[i], t.textfont.color[i], t.visible]; });"
           "return out;")


def test_each_layers_bits_and_fold_are_on_the_graph_coloured_by_width(dash_duo):
    start_app(dash_duo)
    legend = dash_duo.find_element("#graph-legend").text
    for words in ("batch norm", "modified by the rewrite", "a match of the pattern", "w4a8", "TFLite refuses"):
        assert words in legend
    assert dash_duo.driver.execute_script(_BADGES) == {}, "the starting recipe changes nothing: no badges"
    for layer, col, value in (("conv1", "fold", True), ("conv1", "weight_bits", "8"),
                              ("conv2", "weight_bits", "4"), ("conv2", "activation_bits", "8")):
        # one edit at a time, as a person would: each applied (the line under the graph
        # redrawn) before the next (the grid shows a cell at once, before the recipe has it)
        edit_cell(dash_duo, layer, col, value)
    wait_for(lambda: dash_duo.driver.execute_script(_BADGES).get("layer:conv2", [""])[0] == "w4a8",
             what=lambda: f"conv2's badge; badges now {dash_duo.driver.execute_script(_BADGES)}")
    badges = dash_duo.driver.execute_script(_BADGES)
    assert badges["layer:conv1"] == ["w8+bn", bits_color(8), True]
    assert badges["layer:conv2"] == ["w4a8", bits_color(4), True]
    assert bits_color(8) != bits_color(4)
    assert "layer:relu1" not in badges and "layer:bn1" not in badges   # not quantized; folded away
    # what the recipe costs, always beside the diff: conv1 and conv2's kernels at 8 and 4 bits, the rest float
    import re

    summary = dash_duo.find_element("#diff-summary").text
    assert re.search(r"weights [\d.]+ KB at their bits \([\d.]+% of float\) · [\d.]+ [kMG] bit-ops \([\d.]+% of float\)",
                     summary), summary
    shot(dash_duo, "graph_badges.png")
    # zoomed out until the names cannot be read, the badges go with them
    dash_duo.driver.execute_script(
        "Plotly.relayout(document.querySelector('#graph .js-plotly-plot'),"
        " {'xaxis.range': [-500, 500], 'yaxis.range': [-300, 300]});")
    wait_for(lambda: dash_duo.driver.execute_script(_BADGES)["layer:conv2"][2] is False, what="badges hidden")


_FILLS = ("const g = document.querySelector('#graph .js-plotly-plot');"
          "const t = g.data.find(d => d.name === 'nodes'); const out = {};"
          "t.customdata.forEach((k, i) => { out[k] = t.marker.color[i]; }); return out;")


def _choose_colour(dash_duo, label):
    choose(dash_duo, "#color-by", label)


def test_nodes_coloured_by_a_weight_metric_and_by_model_explorer_node_data(dash_duo, tmp_path):
    """Issue 19.1: a metric colours the nodes, with its scale; Model Explorer's node-data
    JSON paints the graph; a file qviz cannot read is one line, and nothing changes."""
    import json

    import qviz
    from qviz.analysis.weight_stats import weight_metrics
    from qviz.render.marks import COLORS, NO_VALUE_COLOR
    from qviz.samples import sample_path

    start_app(dash_duo)
    graph = qviz.load(sample_path("lenet_digits"))
    kurtosis = weight_metrics(graph)["weight kurtosis"]
    _choose_colour(dash_duo, "weight kurtosis")
    wait_for(lambda: dash_duo.driver.execute_script(_FILLS)["layer:relu1"] == NO_VALUE_COLOR, what="kurtosis fill")
    fills = dash_duo.driver.execute_script(_FILLS)
    for layer in ("conv1", "conv2", "fc1", "logits"):
        assert fills[f"layer:{layer}"] == kurtosis.color_of(layer)
    assert len({fills[f"layer:{layer}"] for layer in ("conv1", "conv2", "fc1", "logits")}) > 1
    assert "colour: weight kurtosis" in dash_duo.find_element("#metric-legend").text
    shot(dash_duo, "graph_colour_by_kurtosis.png")

    conv2 = next(n.name for n in graph.nodes if n.op == "Conv2D" and n.layer == "conv2")
    data = tmp_path / "errors.json"   # as AI Edge Quantizer writes it: op names, thresholds
    data.write_text(json.dumps({"results": {conv2: {"value": 7.5}, "fc1": {"value": 0.5}, "gone/op": {"value": 1}},
                                "thresholds": [{"value": 1, "bgColor": "#00aa00"}, {"value": 10, "bgColor": "#cc0000"}]}))
    dash_duo.find_element("#node-data-upload input[type=file]").send_keys(str(data))
    wait_for(lambda: dash_duo.driver.execute_script(_FILLS)["layer:conv2"] == "#cc0000", what="node data painted")
    fills = dash_duo.driver.execute_script(_FILLS)
    assert fills["layer:fc1"] == "#00aa00" and fills["layer:conv1"] == NO_VALUE_COLOR
    legend = dash_duo.find_element("#metric-legend").text
    assert "colour: file: errors.json" in legend and "1 keys not in this model" in legend

    bad = tmp_path / "bad.json"
    bad.write_text('{"results": {"conv1": {"value": "high"}}}')
    dash_duo.find_element("#node-data-upload input[type=file]").send_keys(str(bad))
    wait_for(lambda: "bad.json: node 'conv1' has value 'high', not a number" in dash_duo.find_element("#alert").text,
             what="the bad file's one line")
    assert dash_duo.driver.execute_script(_FILLS)["layer:conv2"] == "#cc0000", "the painting stays"

    _choose_colour(dash_duo, "op kind")
    wait_for(lambda: dash_duo.driver.execute_script(_FILLS)["layer:relu1"] == COLORS["activation"], what="op kinds")
    assert dash_duo.find_element("#metric-legend").text == ""


def test_nodes_coloured_by_the_recipes_per_layer_sqnr_once_verified(dash_duo):
    """Issue 19.1: find the red blocks by eye — the verification report's per-layer
    SQNR of the recipe drawn, low (much error) red."""
    from qviz.app.colour_by import RECIPE_SQNR, SQNR_GRADIENT, recipe_sqnr
    from qviz.app.services import START_RECIPE

    app = start_app(dash_duo)
    _choose_colour(dash_duo, RECIPE_SQNR)
    click(dash_duo, "#bulk-first-last-8-rest-4")
    store = app.qviz_sessions
    session = store.get(next(iter(store._sessions)))
    preset = START_RECIPE.with_preset("first-last-8-rest-4", session.graph)   # what the button makes

    def painted_by_the_presets_report():
        sqnr = recipe_sqnr(session, preset)
        fills = dash_duo.driver.execute_script(_FILLS)
        return sqnr is not None and all(fills[f"layer:{layer}"] == sqnr.color_of(layer)
                                        for layer in sqnr.values if f"layer:{layer}" in fills)

    wait_for(painted_by_the_presets_report, timeout=120, what=lambda: "the preset's SQNR colours; legend "
             f"{dash_duo.find_element('#metric-legend').text!r}")
    sqnr = recipe_sqnr(session, preset)
    fills = dash_duo.driver.execute_script(_FILLS)
    worst = min(sqnr.values, key=sqnr.values.get)
    assert fills[f"layer:{worst}"] == SQNR_GRADIENT[0][1], "the layer with the most error is red"
    assert "colour: per-layer SQNR (dB)" in dash_duo.find_element("#metric-legend").text
    shot(dash_duo, "graph_colour_by_sqnr.png")


def test_save_svg_downloads_the_graph_as_drawn(dash_duo):
    """Issue 20.2 in the app: the whole graph, with the recipe's changes and bits, as an SVG file."""
    import xml.etree.ElementTree as ET
    from pathlib import Path

    start_app(dash_duo)
    before = dash_duo.find_element("#diff-summary").text
    click(dash_duo, "#bulk-fold-all")
    wait_for(lambda: dash_duo.find_element("#diff-summary").text != before, what="fold all applied")
    config = dash_duo.driver.execute_script(
        "return document.querySelector('#graph .js-plotly-plot')._context.toImageButtonOptions;")
    assert config == {"filename": "qviz_graph", "scale": 2}    # the camera saves the view as PNG
    click(dash_duo, "#save-svg-button")
    path = Path(dash_duo.download_path) / "lenet_digits_layer_rewritten.svg"
    wait_for(lambda: path.exists() and path.stat().st_size > 0, what="the SVG on disk")
    svg = path.read_text()
    root = ET.fromstring(svg.split("?>", 1)[1])
    ns = "{http://www.w3.org/2000/svg}"
    titles = [c.find(f"{ns}title").text for c in root.iter(f"{ns}circle")]
    assert "bn1 (removed)" in titles and "conv1 (modified)" in titles
    assert {t.text for t in root.iter(f"{ns}text") if t.get("class") == "badge"} == {"+bn"}
    # the selection only: conv2 and its neighbours two steps either way, laid out on their own
    click(dash_duo, "#save-around-svg-button")
    wait_for(lambda: dash_duo.find_element("#save-svg-status").text.startswith("select a node first"),
             what="a message with nothing selected")
    dash_duo.find_element("#search").send_keys("conv2\n")
    wait_for(lambda: "layer conv2" in dash_duo.find_element("#node-panel").text, what="conv2 selected")
    click(dash_duo, "#save-around-svg-button")
    part = Path(dash_duo.download_path) / "lenet_digits_layer_rewritten_around_conv2.svg"
    wait_for(lambda: part.exists() and part.stat().st_size > 0, what="the selection's SVG on disk")
    root = ET.fromstring(part.read_text().split("?>", 1)[1])
    labels = sorted(c.find(f"{ns}title").text for c in root.iter(f"{ns}circle"))
    assert sorted(t.split(" (")[0] for t in labels) == ["bn1", "bn2", "conv1", "conv2", "pool", "relu1", "relu2"]
    assert "bn2 (removed)" in labels and "conv2 (modified)" in labels   # the changes are drawn here too


def test_colour_by_fold_status_error_share_activation_range_and_suggested_bits(dash_duo):
    """Issue 19.1: the rest of the menu — fold status (data-free, follows each edit), each
    layer's share of the error, activation ranges, and the sweep's suggested bits (which
    says it needs a sweep first)."""
    from qviz.analysis.layer_metrics import FOLD_STATES
    from qviz.app.colour_by import ACTIVATION_RANGE, ERROR_SHARE, FOLD_STATUS, SUGGESTED_BITS, metric_of
    from qviz.render.marks import NO_VALUE_COLOR

    app = start_app(dash_duo)
    session = app.qviz_sessions.get(next(iter(app.qviz_sessions._sessions)))
    _choose_colour(dash_duo, FOLD_STATUS)
    orange, green = "#ff9f1c", "#2ca02c"
    wait_for(lambda: dash_duo.driver.execute_script(_FILLS)["layer:conv2"] == orange, what="foldable, not folded")
    fills = dash_duo.driver.execute_script(_FILLS)
    assert fills["layer:bn2"] == orange and fills["layer:relu1"] == NO_VALUE_COLOR   # no batch norm: grey
    legend = dash_duo.find_element("#metric-legend").text
    assert all(state in legend for state in FOLD_STATES) and "no batch norm" in legend
    edit_cell(dash_duo, "conv2", "fold", True)
    wait_for(lambda: dash_duo.driver.execute_script(_FILLS)["layer:conv2"] == green, what="folded: green")
    assert dash_duo.driver.execute_script(_FILLS)["layer:conv1"] == orange
    shot(dash_duo, "colour_by_fold_status.png")
    click(dash_duo, "#bulk-fold-all")
    wait_for(lambda: dash_duo.driver.execute_script(_FILLS)["layer:conv1"] == green, what="all folded: green")

    click(dash_duo, "#bulk-first-last-8-rest-4")
    _choose_colour(dash_duo, ERROR_SHARE)
    wait_for(lambda: "colour: own error, % of the layers' sum" in dash_duo.find_element("#metric-legend").text,
             timeout=120,
             what=lambda: f"the error shares; legend {dash_duo.find_element('#metric-legend').text!r}")
    from qviz.passes import Recipe

    share = None

    def painted():
        nonlocal share
        share = metric_of(session, ERROR_SHARE, Recipe.from_json(session.latest))   # the recipe drawn last
        fills = dash_duo.driver.execute_script(_FILLS)
        return share is not None and all(fills[f"layer:{k}"] == share.color_of(k) for k in share.values)

    wait_for(painted, timeout=60, what="the shares painted")
    assert abs(sum(share.values.values()) - 100) < 1e-6
    most = max(share.values, key=share.values.get)
    assert dash_duo.driver.execute_script(_FILLS)[f"layer:{most}"] == "#d7191c"     # the most error: red

    _choose_colour(dash_duo, ACTIVATION_RANGE)
    wait_for(lambda: "colour: activation range" in dash_duo.find_element("#metric-legend").text, timeout=60,
             what=lambda: f"the ranges; legend {dash_duo.find_element('#metric-legend').text!r}")
    _choose_colour(dash_duo, SUGGESTED_BITS)
    wait_for(lambda: "run the sensitivity sweep first" in dash_duo.find_element("#metric-legend").text,
             what=lambda: f"the sweep asked for; legend {dash_duo.find_element('#metric-legend').text!r}")


#: Before an edit: record the page's preview of it (badges in the data, where each is on screen),
#: and the figure's data, which the server's redraw replaces (:data:`_REDRAWN`).
_ON_PREVIEW = ("const g = document.querySelector('#graph .js-plotly-plot'); window.__previewed = []; window.__at = {};"
               "window.__data = g.data;"
               "g.on('qviz_preview', () => { const t = g.data.find(d => d.name === 'bits');"
               "  const out = {}; t.customdata.forEach((k, i) => { out[k] = [t.text[i], t.textfont.color[i]]; });"
               "  window.__previewed.push(out); window.__at = window.__badgeBoxes(); });")
_REDRAWN = "return document.querySelector('#graph .js-plotly-plot').data !== window.__data;"
#: ``pts``: point index → its g.textpoint in ``svg`` (plotly's are bound to their point; the preview's say so)
_POINTS = ("if (svg) for (const p of svg.querySelectorAll('.textpoint')) {"
           "  const i = p.__data__ && typeof p.__data__.i === 'number' ? p.__data__.i : p.dataset.qvizPoint;"
           "  if (i !== undefined) pts[i] = p; }")
#: Where each badge's text is on screen (the centre of its box, px), for the preview and the redraw.
_BOXES = ("window.__badgeBoxes = () => { const g = document.querySelector('#graph .js-plotly-plot');"
          "  const at = g.data.findIndex(d => d.name === 'bits'), out = {};"
          "  const svg = g.querySelector('.scatterlayer .trace' + g._fullData[at].uid), pts = {};"
          + _POINTS +
          "  g.data[at].customdata.forEach((k, i) => { const t = pts[i] && pts[i].querySelector('text');"
          "    if (t && t.textContent) { const r = t.getBoundingClientRect(); out[k] = [r.x + r.width / 2, r.y + r.height / 2]; } });"
          "  return out; }; return window.__badgeBoxes();")


def _badge_on_screen(dash_duo, key):
    """The badge text the plot's SVG shows for ``key`` ("" for none)."""
    return dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot'); const at = g.data.findIndex(d => d.name === 'bits');"
        "const i = g.data[at].customdata.indexOf(arguments[0]);"
        "const svg = g.querySelector('.scatterlayer .trace' + g._fullData[at].uid), pts = {};" + _POINTS +
        "const t = pts[i] && pts[i].querySelector('text'); return t ? t.textContent : '';", key)


def test_a_table_edit_changes_the_badge_at_once_as_the_redraw_then_draws_it(dash_duo):
    """Issue 16.4: the page draws the edited layer's badge itself, before the server's
    redraw; what it draws is what the redraw draws (same rule, same colours)."""
    start_app(dash_duo)
    # the first edit on the float model: conv1 has no badge yet, only its (empty) slot
    dash_duo.driver.execute_script(_BOXES)
    dash_duo.driver.execute_script(_ON_PREVIEW)
    edit_cell(dash_duo, "conv1", "fold", True)
    wait_for(lambda: dash_duo.driver.execute_script("return window.__previewed.length;") > 0, what="previewed")
    assert dash_duo.driver.execute_script("return window.__previewed[0];")["layer:conv1"] == ["+bn", bits_color(None)]
    wait_for(lambda: _badge_on_screen(dash_duo, "layer:conv1") == "+bn", what="conv1's new badge on screen")
    wait_for(lambda: dash_duo.driver.execute_script(_REDRAWN), what="the redraw")
    assert dash_duo.driver.execute_script(_BADGES)["layer:conv1"][0] == "+bn"
    # written into an empty slot by the page where plotly's redraw then draws it (within 2 px;
    # an edit that moves no node: a fold takes its batch norm out of the drawing)
    dash_duo.driver.execute_script(_ON_PREVIEW)
    edit_cell(dash_duo, "fc1", "activation_bits", "8")
    wait_for(lambda: dash_duo.driver.execute_script("return window.__previewed.length;") > 0, what="fc1 previewed")
    preview = dash_duo.driver.execute_script("return window.__at;")["layer:fc1"]
    wait_for(lambda: dash_duo.driver.execute_script(_REDRAWN), what="fc1 redrawn")
    assert dash_duo.driver.execute_script(_BADGES)["layer:fc1"][0] == "a8"
    drawn = dash_duo.driver.execute_script("return window.__badgeBoxes();")["layer:fc1"]
    assert abs(preview[0] - drawn[0]) <= 2 and abs(preview[1] - drawn[1]) <= 2, (preview, drawn)
    assert dash_duo.driver.execute_script(   # and once: the page's own text gone with the redraw
        "return [...document.querySelectorAll('#graph .textpoint text')].filter(t => t.textContent === 'a8').length;") == 1
    click(dash_duo, "#bulk-fold-all")
    click(dash_duo, "#bulk-all-8")
    wait_for(lambda: dash_duo.driver.execute_script(_BADGES).get("layer:conv2", [""])[0] == "w8a8+bn",
             what="the 8-bit recipe drawn")
    for col, value, want in (("weight_bits", "4", "w4a8+bn"), ("fold", False, "w4a8"),
                             ("activation_bits", "float", "w4"), ("weight_bits", "float", "")):
        dash_duo.driver.execute_script(_ON_PREVIEW)
        edit_cell(dash_duo, "conv2", col, value)
        # the page's own preview: the badge before the redraw (in the SVG: on screen)
        wait_for(lambda: dash_duo.driver.execute_script("return window.__previewed.length;") > 0,
                 what=f"conv2.{col} = {value!r} previewed in the page")
        at_once = dash_duo.driver.execute_script("return window.__previewed[0];")["layer:conv2"]
        assert at_once[0] == want, (col, value, at_once)
        assert _badge_on_screen(dash_duo, "layer:conv2") == want
        # then the server's redraw: the same badge, the same colour (or none: nothing to say)
        wait_for(lambda: dash_duo.driver.execute_script(_REDRAWN), what=f"conv2.{col} = {value!r} redrawn")
        assert dash_duo.driver.execute_script(_BADGES).get("layer:conv2", [""])[0] == want
        if want:
            assert dash_duo.driver.execute_script(_BADGES)["layer:conv2"][:2] == at_once


#: Each drawn node's looks on screen, from the plot's SVG: key → [opacity, outline, outline width],
#: and "halo KEY" → its match halo's opacity, if it has one drawn (``keys``: the node trace's keys
#: the SVG was drawn from, then no halos; by default the figure's). Also kept when the page
#: previews an edit (``__lookedAt``) and just before plotly redraws (``__beforeRedraw``).
_LOOKS = ("window.__looks = keys => { const g = document.querySelector('#graph .js-plotly-plot');"
          "  const at = g.data.findIndex(d => d.name === 'nodes'), out = {}, halos = keys ? -1 :"
          "    g.data.findIndex(d => d.name === 'matches');"
          "  keys = keys || g.data[at].customdata;"
          "  const svg = g.querySelector('.scatterlayer .trace' + g._fullData[at].uid);"
          "  for (const p of svg.querySelectorAll('path.point')) { const k = keys[p.__data__.i];"
          "    const s = getComputedStyle(p); out[k] = [Number(s.opacity), s.stroke, s.strokeWidth]; }"
          "  if (halos >= 0) for (const p of g.querySelectorAll('.scatterlayer .trace' + g._fullData[halos].uid"
          "      + ' path.point')) { const o = Number(getComputedStyle(p).opacity);"
          "    if (o > 0) out['halo ' + g.data[halos].customdata[p.__data__.i]] = o; }"
          "  return out; };"
          "const g = document.querySelector('#graph .js-plotly-plot');"
          "window.__lookedAt = null; window.__beforeRedraw = null; window.__data = g.data;"
          "const drawnFrom = g.data.find(d => d.name === 'nodes').customdata;"
          "g.on('qviz_preview', () => { if (!window.__lookedAt) window.__lookedAt = window.__looks(); });"
          "g.on('plotly_beforeplot', () => { if (!window.__beforeRedraw) window.__beforeRedraw = window.__looks(drawnFrom); });")


def test_a_fold_toggle_fades_its_batch_norm_at_once_as_the_redraw_then_draws_it(dash_duo):
    """Issue 16.4: a fold toggled in the table is on the graph before the server's redraw
    (every node stays where it is): its batch norm faded in its place without its match
    halo, its conv and the layer after the batch norm outlined as changed; the redraw then
    draws every node and halo the same. Unfolded, all come back as they were."""
    start_app(dash_duo)
    plain = dash_duo.driver.execute_script(_LOOKS + "return window.__looks();")
    assert "halo layer:bn1" in plain   # (the start view halos the Conv+BN matches)
    for fold in (True, False):
        dash_duo.driver.execute_script(_LOOKS)
        set_cell(dash_duo, "conv1", "fold", fold)
        wait_for(lambda: dash_duo.driver.execute_script("return window.__lookedAt;"), what=f"fold={fold} previewed")
        previewed = dash_duo.driver.execute_script("return window.__lookedAt;")
        wait_for(lambda: dash_duo.driver.execute_script(_REDRAWN), what=f"fold={fold} redrawn")
        redrawn = dash_duo.driver.execute_script("return window.__looks();")
        assert previewed == redrawn, {k: (previewed.get(k), redrawn.get(k)) for k in {*previewed, *redrawn}
                                      if previewed.get(k) != redrawn.get(k)}
        if fold:
            assert previewed["layer:bn1"][0] == GHOST_OPACITY and "halo layer:bn1" not in previewed
            for key in ("layer:conv1", "layer:relu1"):
                assert previewed[key] != plain[key]
        else:
            assert previewed == plain
    # the original graph is not what a fold changes: nothing fades there
    dash_duo.driver.execute_script("window.__data = document.querySelector('#graph .js-plotly-plot').data;")
    click(dash_duo, "#show-graph input[value='original']")
    wait_for(lambda: dash_duo.driver.execute_script(   # (a new drawing, and of the original graph: no diff)
        _REDRAWN.replace("return ", "return !(document.querySelector('#graph .js-plotly-plot').layout.meta || {}).diff"
                                    " && ")), what="the original graph drawn")
    dash_duo.driver.execute_script(_LOOKS)
    set_cell(dash_duo, "conv2", "fold", True)
    wait_for(lambda: dash_duo.driver.execute_script(_REDRAWN), what="the original graph redrawn after the fold")
    assert dash_duo.driver.execute_script("return window.__beforeRedraw;")["layer:bn2"] == plain["layer:bn2"]
    assert dash_duo.driver.execute_script("return window.__lookedAt;") is None   # (no preview: nothing faded)


#: Each request the page sends from now on: [its outputs, the answer's status, performance.now()
#: when sent]; and when the page previewed an edit.
_REQUESTS = ("window.__requests = []; window.__previewedAt = null;"
             "const g = document.querySelector('#graph .js-plotly-plot');"
             "g.once('qviz_preview', () => { window.__previewedAt = performance.now(); });"
             "if (!window.__fetchWrapped) { window.__fetchWrapped = true; const f = window.fetch;"
             "  window.fetch = function (url, opts) {"
             "    if (!String(url).includes('update-component')) return f.apply(this, arguments);"
             "    const r = [JSON.parse(opts.body).output, null, performance.now()]; window.__requests.push(r);"
             "    return f.apply(this, arguments).then(a => { r[1] = a.status; return a; }); }; }")


def test_a_table_edit_is_previewed_before_its_request_which_brings_the_redraw(dash_duo):
    """Issue 16.4: the grid's own listener previews an edit before any request leaves, and
    the edit's request answers with the redraw; the graph's draw, which the new recipe
    starts, then answers nothing (one request before plotly draws, not the edit's and then
    the draw's)."""
    start_app(dash_duo)
    dash_duo.driver.execute_script(_REQUESTS + "window.__data = g.data;")
    set_cell(dash_duo, "conv1", "fold", True)
    wait_for(lambda: dash_duo.driver.execute_script(_REDRAWN), what="the redraw")
    wait_for(lambda: any(r[0].startswith("..graph.figure.") and r[1] is not None
                         for r in dash_duo.driver.execute_script("return window.__requests;")),
             what="the graph's own draw answered")
    requests = dash_duo.driver.execute_script("return window.__requests;")
    previewed = dash_duo.driver.execute_script("return window.__previewedAt;")
    edit = requests[0]
    assert "recipe-store.data" in edit[0] and "graph.figure" in edit[0] and edit[1] == 200, requests
    assert previewed is not None and previewed <= edit[2], (previewed, edit)
    draw = next(r for r in requests if r[0].startswith("..graph.figure."))
    assert draw[1] == 204, requests
    assert "+bn" in dash_duo.driver.execute_script(_BADGES)["layer:conv1"][0]


def test_a_table_edit_that_cannot_be_sent_says_so(dash_duo):
    """An edit the page could not log (its layout unreadable) looks made in the table but never
    reaches the recipe: the alert bar says so, not only the console."""
    start_app(dash_duo)
    dash_duo.driver.execute_script("window.dash_component_api.getLayout = () => { throw new Error('unreadable'); };")
    set_cell(dash_duo, "conv1", "fold", True)
    wait_for(lambda: "conv1 was not sent" in dash_duo.find_element("#alert").text,
             what=lambda: f"the alert; it says {dash_duo.find_element('#alert').text!r}")
    assert "unreadable" in dash_duo.find_element("#alert").text
