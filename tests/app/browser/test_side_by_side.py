"""Issue 19.2 in the app: pane B beside the graph shows the float model (or a pinned
recipe); a selection in either pane selects its counterparts in the other through
the change record (a folded conv: the conv and its batch norm), and a pan in one
brings the same node into view in the other."""

import time

from .helpers import (choose, click, click_node, edit_cell, needs_browser, shot, start_app, text_of, wait_for,
                      uncheck_sweep_widths, wait_idle, wait_whole, wait_window_kept)

pytestmark = needs_browser


def _pane(graph_id):
    return f"document.querySelector('#{graph_id} .js-plotly-plot')"


def _outlined(dash_duo, graph_id):
    """The node keys drawn with the selection's outline."""
    return set(dash_duo.driver.execute_script(
        f"const g = {_pane(graph_id)}; if (!g || !g.data) return [];"
        "const t = g.data.find(d => d.name === 'nodes'); if (!t) return [];"
        "return t.customdata.filter((k, i) => t.marker.line.color[i] === '#000');"))


def _positions(dash_duo, graph_id):
    wait_whole(dash_duo, graph_id)
    return dash_duo.driver.execute_script(
        f"const g = {_pane(graph_id)}; const t = g.data.find(d => d.name === 'nodes'); const out = {{}};"
        "t.customdata.forEach((k, i) => { out[k] = [t.x[i], t.y[i]]; }); return out;")


def _badges(dash_duo, graph_id):
    return dash_duo.driver.execute_script(
        f"const g = {_pane(graph_id)}; const t = g && g.data ? g.data.find(d => d.name === 'bits') : null;"
        "const texts = t && t.meta && t.meta.texts ? t.meta.texts : (t ? t.text : []);"   # (all, drawn or thinned out)
        "const out = {}; if (t) t.customdata.forEach((k, i) => { if (texts[i]) out[k] = texts[i]; }); return out;")


def _width(dash_duo, graph_id):
    return dash_duo.driver.execute_script(f"return {_pane(graph_id)}._fullLayout.xaxis._length;")


def _x_range(dash_duo, graph_id):
    return dash_duo.driver.execute_script(f"const g = {_pane(graph_id)}; return g._fullLayout.xaxis.range;")


def test_two_panes_select_and_pan_together(dash_duo):
    start_app(dash_duo)
    click(dash_duo, "#bulk-fold-all")
    click(dash_duo, "#bulk-all-8")
    wait_for(lambda: "layer:conv2" in _badges(dash_duo, "graph"), what="the 8-bit recipe drawn")
    click(dash_duo, "#side-by-side input")
    wait_for(lambda: "layer:bn1" in (_positions(dash_duo, "graph-b") if dash_duo.driver.execute_script(
        f"return !!({_pane('graph-b')} && {_pane('graph-b')}.data && {_pane('graph-b')}.data.length)") else {}),
        what="pane B drawn")
    assert text_of(dash_duo, "#pane-b-caption").startswith("B: the float model")
    assert text_of(dash_duo, "#pane-a-caption").startswith("A: this recipe")
    # the float model's hover says what the float model does (it said pane A's recipe)
    hover = dash_duo.driver.execute_script(
        f"const t = {_pane('graph-b')}.data.find(d => d.name === 'nodes');"
        "return t.hovertext[t.customdata.indexOf('layer:conv2')];")
    assert "BN fold: off" in hover and "bits: float" in hover, hover
    # "original" draws the float model in pane A too: its caption says so, not "this recipe"
    click(dash_duo, "#show-graph input[value=original]")
    wait_for(lambda: text_of(dash_duo, "#pane-a-caption").startswith("A: the float model"),
             what="pane A's caption for the original graph")
    click(dash_duo, "#show-graph input[value=rewritten]")
    wait_for(lambda: text_of(dash_duo, "#pane-a-caption").startswith("A: this recipe")
             and "layer:conv2" in _badges(dash_duo, "graph"), what="the recipe back in pane A")

    # conv1 selected in A: in the float model, conv1 and the batch norm it absorbed
    dash_duo.find_element("#search").send_keys("conv1\n")
    wait_for(lambda: _outlined(dash_duo, "graph-b") == {"layer:conv1", "layer:bn1"},
             what=lambda: f"conv1 + bn1 outlined in B; {_outlined(dash_duo, 'graph-b')}")
    # bn2 clicked in B: A selects conv2, which does bn2's work now
    click_node(dash_duo, "layer:bn2", "graph-b")
    wait_for(lambda: "layer:conv2" in _outlined(dash_duo, "graph") and "layer conv2" in text_of(dash_duo, "#node-panel"),
             what=lambda: f"conv2 selected in A; {_outlined(dash_duo, 'graph')}")
    wait_for(lambda: _outlined(dash_duo, "graph-b") == {"layer:conv2", "layer:bn2"}, what="conv2 + bn2 in B")
    dash_duo.driver.execute_script("window.scrollTo(0, 0);")
    shot(dash_duo, "side_by_side.png")

    # the panes are laid out alike (the rewritten view where the float graph has each node:
    # a folded batch norm keeps its place), so a node is at one place in both
    a, b = _positions(dash_duo, "graph"), _positions(dash_duo, "graph-b")
    assert a["layer:fc1"] == b["layer:fc1"] and a["layer:bn2"] == b["layer:bn2"]
    # a pan in A: B centres the node nearest A's centre (fc1)
    x, y = a["layer:fc1"]
    dash_duo.driver.execute_script(
        f"Plotly.relayout({_pane('graph')}, {{'xaxis.range': [{x - 2}, {x + 2}], 'yaxis.range': [{y - 1}, {y + 1}]}});")
    wait_for(lambda: abs(sum(_x_range(dash_duo, "graph-b")) / 2 - b["layer:fc1"][0]) < 0.01,
             what=lambda: f"B centred on fc1 at {b['layer:fc1']}; its x range is {_x_range(dash_duo, 'graph-b')}")
    lo, hi = _x_range(dash_duo, "graph-b")
    assert abs((hi - lo) - 4) < 0.01      # at the same zoom
    # and no echo: B's new range does not move A again (A keeps exactly the range it was given)

    time.sleep(1.5)
    assert _x_range(dash_duo, "graph") == [x - 2, x + 2]

    # recipe A | recipe B: pin the 8-bit recipe, then edit A; B keeps what was pinned
    click(dash_duo, "#pin-recipe")
    wait_for(lambda: text_of(dash_duo, "#pane-b-caption").startswith("B: the pinned recipe (3 batch norm(s) folded, "
                                                                       "4 layer(s) quantized)"),
             what=lambda: f"the pinned caption; {text_of(dash_duo, '#pane-b-caption')!r}")
    edit_cell(dash_duo, "conv2", "weight_bits", "4")
    wait_for(lambda: _badges(dash_duo, "graph").get("layer:conv2", "").startswith("w4"), what="A at 4 bits")
    wait_for(lambda: _badges(dash_duo, "graph-b").get("layer:conv2", "").startswith("w8"),
             what=lambda: f"B still 8-bit; {_badges(dash_duo, 'graph-b')}")
    click(dash_duo, "#unpin-recipe")
    wait_for(lambda: text_of(dash_duo, "#pane-b-caption").startswith("B: the float model"), what="back to float")
    narrow = _width(dash_duo, "graph")
    click(dash_duo, "#side-by-side input")
    wait_for(lambda: not dash_duo.find_element("#pane-b").is_displayed(), what="pane B hidden")
    # (A widened: its zoom kept, at its new width)
    wait_for(lambda: _width(dash_duo, "graph") > 1.5 * narrow, what="pane A at its full width")
    # shown again, B opens where A looks (A panned to fc1), not at the graph's start
    a = _positions(dash_duo, "graph")
    x, y = a["layer:fc1"]
    dash_duo.driver.execute_script(
        f"Plotly.relayout({_pane('graph')}, {{'xaxis.range': [{x - 2}, {x + 2}], 'yaxis.range': [{y - 1}, {y + 1}]}});")
    wait_window_kept(dash_duo, [x - 2, x + 2])
    click(dash_duo, "#side-by-side input")
    wait_for(lambda: dash_duo.find_element("#pane-b").is_displayed(), what="pane B shown again")
    wait_for(lambda: abs(sum(_x_range(dash_duo, "graph-b")) / 2 - b["layer:fc1"][0]) < 0.01,
             what=lambda: f"B opened on fc1 at {b['layer:fc1']}; its x range is {_x_range(dash_duo, 'graph-b')}")
    # at A's zoom (drawn into a hidden pane, it was 14 times wider), A's scale kept as it narrowed
    wait_for(lambda: _near(_look(dash_duo, "graph-b")[2:], _look(dash_duo, "graph")[2:]),
             what=lambda: f"B at A's zoom: {_look(dash_duo, 'graph-b')} vs {_look(dash_duo, 'graph')}")
    assert _look(dash_duo, "graph")[2] * _width(dash_duo, "graph") < 4.01    # A shows at most the 4 it was given


def _look(dash_duo, graph_id):
    """(centre x, centre y, x units per pixel) of a pane: what it looks at, and how near."""
    return dash_duo.driver.execute_script(
        f"const g = {_pane(graph_id)}; const xa = g._fullLayout.xaxis, ya = g._fullLayout.yaxis;"
        "return [(xa.range[0] + xa.range[1]) / 2, (ya.range[0] + ya.range[1]) / 2,"
        "        Math.abs(xa.range[1] - xa.range[0]) / xa._length];")


def _near(a, b, tol=0.02):
    return all(abs(p - q) <= tol * max(abs(q), 1e-3) + 1e-6 for p, q in zip(a, b))


def test_side_by_side_on_and_off_keeps_pane_a_where_it_looked(dash_duo):
    """A user's try: each time pane B came and went, pane A zoomed out (plotly widened a
    range to keep the axes' equal scale as A narrowed, then kept it as A widened)."""
    start_app(dash_duo)
    x, y = _positions(dash_duo, "graph")["layer:conv2"]
    dash_duo.driver.execute_script(
        f"Plotly.relayout({_pane('graph')}, {{'xaxis.range': [{x - 2}, {x + 2}], 'yaxis.range': [{y - 1}, {y + 1}]}});")
    wait_for(lambda: _near(_look(dash_duo, "graph")[:2], [x, y]), what="pane A on conv2")
    before, wide = _look(dash_duo, "graph"), _width(dash_duo, "graph")
    for _ in range(2):
        click(dash_duo, "#side-by-side input")
        wait_for(lambda: _width(dash_duo, "graph") < 0.75 * wide, what="pane A narrowed for pane B")
        # narrowed, pane A keeps its centre and its zoom; pane B comes at that zoom too
        wait_for(lambda: _near(_look(dash_duo, "graph"), before),
                 what=lambda: f"pane A at {before} while B is shown; it is at {_look(dash_duo, 'graph')}")
        wait_for(lambda: _near(_look(dash_duo, "graph-b")[2:], before[2:]),
                 what=lambda: f"pane B at A's zoom {before[2]}; {_look(dash_duo, 'graph-b')}")
        click(dash_duo, "#side-by-side input")
        wait_for(lambda: _width(dash_duo, "graph") > 0.95 * wide, what="pane A at its full width again")
        wait_for(lambda: _near(_look(dash_duo, "graph"), before),
                 what=lambda: f"pane A back at {before}; it is at {_look(dash_duo, 'graph')}")

    # looking at the graph's start, pane A keeps the start where it was as it narrows (kept
    # centred, the first node was cut in half at the pane's edge)
    pos = _positions(dash_duo, "graph")
    first = min(x for x, _ in pos.values())
    dash_duo.driver.execute_script(
        f"Plotly.relayout({_pane('graph')}, {{'xaxis.range': [{first - 0.5}, {first + 3.5}], "
        f"'yaxis.range': [{y - 1}, {y + 1}]}});")
    wait_for(lambda: abs(_x_range(dash_duo, "graph")[0] - (first - 0.5)) < 1e-6, what="pane A on the start")
    click(dash_duo, "#side-by-side input")
    wait_for(lambda: _width(dash_duo, "graph") < 0.75 * wide, what="pane A narrowed for pane B")
    wait_for(lambda: abs(_x_range(dash_duo, "graph")[0] - (first - 0.5)) < 1e-3 and _x_range(dash_duo, "graph")[1] < first + 3,
             what=lambda: f"the start kept at {first - 0.5}; pane A shows {_x_range(dash_duo, 'graph')}")
    # the minimap takes a quarter of the narrowed pane, drawn at its size (it was 240 px of ~460)
    sizes = ("const box = document.getElementById('graph-minimap'), c = box.querySelector('canvas');"
             "return [box.getBoundingClientRect().width, c ? c.width / (window.devicePixelRatio || 1) : 0];")
    wait_for(lambda: 50 < dash_duo.driver.execute_script(sizes)[0] <= 0.3 * _width(dash_duo, "graph")
             and abs(dash_duo.driver.execute_script(sizes)[1] - dash_duo.driver.execute_script(sizes)[0]) < 3,
             what=lambda: f"a small minimap; box, drawing: {dash_duo.driver.execute_script(sizes)} "
                          f"in a pane of {_width(dash_duo, 'graph')}")


def test_a_node_looked_at_near_the_start_stays_in_view_as_pane_b_comes(dash_duo):
    """A user's try: "Learn BN folding" centres conv1, the graph's second node; side by side
    then showed the input at each pane's right edge and nothing else (the narrowed pane kept
    the view's left edge, four units before the graph's start, as if it opened on the start)."""
    start_app(dash_duo)
    dash_duo.find_element("#search").send_keys("conv1\n")
    x = _positions(dash_duo, "graph")["layer:conv1"][0]
    wait_for(lambda: abs(sum(_x_range(dash_duo, "graph")) / 2 - x) < 0.5,
             what=lambda: f"conv1 (x={x}) centred; pane A shows {_x_range(dash_duo, 'graph')}")
    wide = _width(dash_duo, "graph")
    click(dash_duo, "#side-by-side input")
    wait_for(lambda: _width(dash_duo, "graph") < 0.75 * wide, what="pane A narrowed for pane B")
    for pane in ("graph", "graph-b"):   # (each pane's own layout: conv1 where that pane drew it)
        wait_for(lambda: abs(sum(_x_range(dash_duo, pane)) / 2 - _positions(dash_duo, pane)["layer:conv1"][0]) < 0.5,
                 what=lambda: f"conv1 in the middle of {pane}; it shows {_x_range(dash_duo, pane)}")


def _fill(dash_duo, graph_id):
    return dash_duo.driver.execute_script(
        f"const g = {_pane(graph_id)}; const t = g.data.find(d => d.name === 'nodes'); const out = {{}};"
        "t.customdata.forEach((k, i) => { out[k] = t.marker.color[i]; }); return out;")


def test_pane_b_is_coloured_as_asked_and_frames_opened_blocks(dash_duo):
    """Pane B follows the colour-by menu for its own model (fold status: the float model
    folds nothing) and says when a metric is pane A's own run; an opened block is framed."""
    start_app(dash_duo)
    click(dash_duo, "#bulk-fold-all")
    wait_for(lambda: "layer:conv2" in _badges(dash_duo, "graph"), what="the folds drawn")
    click(dash_duo, "#side-by-side input")
    wait_for(lambda: "layer:bn2" in _positions(dash_duo, "graph-b"), what="pane B drawn")
    # pane A looks at conv2: B follows, and stays there when the colouring changes
    x, y = _positions(dash_duo, "graph")["layer:conv2"]
    dash_duo.driver.execute_script(
        f"Plotly.relayout({_pane('graph')}, {{'xaxis.range': [{x - 2}, {x + 2}], 'yaxis.range': [{y - 1}, {y + 1}]}});")
    bx = _positions(dash_duo, "graph-b")["layer:conv2"][0]
    wait_for(lambda: abs(_look(dash_duo, "graph-b")[0] - bx) < 0.01, what="pane B on conv2")
    plain, plain_a = _fill(dash_duo, "graph-b"), _fill(dash_duo, "graph")
    choose(dash_duo, "#color-by", "fold status")
    # conv2 folded in A; in the float model B, foldable but not folded: another colour than A's
    wait_for(lambda: _fill(dash_duo, "graph")["layer:conv2"] != plain_a["layer:conv2"], what="pane A coloured")
    wait_for(lambda: _fill(dash_duo, "graph-b")["layer:conv2"] != plain["layer:conv2"],
             what=lambda: f"pane B coloured by fold status; {_fill(dash_duo, 'graph-b')}")
    assert _fill(dash_duo, "graph-b")["layer:conv2"] != _fill(dash_duo, "graph")["layer:conv2"]
    assert abs(_look(dash_duo, "graph-b")[0] - bx) < 0.01, "pane B left conv2 when it was coloured"
    choose(dash_duo, "#color-by", "per-layer SQNR (this recipe)")
    wait_for(lambda: "comes from pane A's run" in text_of(dash_duo, "#pane-b-caption"),
             what=lambda: f"the caption says so; {text_of(dash_duo, '#pane-b-caption')!r}")

    click(dash_duo, "#blocks-button")
    wait_for(lambda: all(any(k.startswith("block:") for k in _positions(dash_duo, pane)) for pane in ("graph", "graph-b")),
             what="A and B grouped")
    block = next(k for k in _positions(dash_duo, "graph") if k.startswith("block:"))
    click_node(dash_duo, block)
    wait_for(lambda: text_of(dash_duo, ".block-toggle") == "open this block", what="the block's panel")
    click(dash_duo, ".block-toggle")
    frames = ("const g = " + _pane("graph-b") + "; return ((g.layout || {}).annotations || [])"
              ".filter(a => (a.text || '').startsWith('block ')).length;")
    wait_for(lambda: dash_duo.driver.execute_script(frames) == 1, what="the opened block framed in pane B")
    # and B looks at it, as A does (in a user's try on NASNetMobile it stayed at the graph's start;
    # lenet is short enough for B to show it whole either way)
    name_in_view = ("const g = " + _pane("graph-b") + "; const a = g.layout.annotations.find("
                    "a => (a.text || '').startsWith('block ')); const xa = g._fullLayout.xaxis, ya = g._fullLayout.yaxis;"
                    "return Math.min(...xa.range) <= a.x && a.x <= Math.max(...xa.range)"
                    "    && Math.min(...ya.range) <= a.y && a.y <= Math.max(...ya.range);")
    wait_for(lambda: dash_duo.driver.execute_script(name_in_view), what="the opened block's frame in pane B's view")


def test_both_panes_repaint_when_the_sweep_they_are_coloured_by_finishes(dash_duo):
    """Coloured by the sweep's suggestion before it is run, both panes paint it when the
    sweep finishes, with no other change (in a user's try they kept their op-kind
    colours until the next edit)."""
    from qviz.app.colour_by import SUGGESTED_BITS, metric_of
    from qviz.passes.recipe import FLOAT_RECIPE

    app = start_app(dash_duo)
    session = app.qviz_sessions.get(next(iter(app.qviz_sessions._sessions)))
    click(dash_duo, "#side-by-side input")
    wait_for(lambda: "layer:bn2" in _positions(dash_duo, "graph-b"), what="pane B drawn")
    choose(dash_duo, "#color-by", SUGGESTED_BITS)
    wait_for(lambda: "run the sensitivity sweep first" in text_of(dash_duo, "#metric-legend"),
             what=lambda: f"the sweep asked for; legend {text_of(dash_duo, '#metric-legend')!r}")
    before_a, before_b = _fill(dash_duo, "graph"), _fill(dash_duo, "graph-b")
    # pane A looks at conv2, and B with it: the repaint leaves both there
    x, y = _positions(dash_duo, "graph")["layer:conv2"]
    dash_duo.driver.execute_script(
        f"Plotly.relayout({_pane('graph')}, {{'xaxis.range': [{x - 2}, {x + 2}], 'yaxis.range': [{y - 1}, {y + 1}]}});")
    bx = _positions(dash_duo, "graph-b")["layer:conv2"][0]
    wait_for(lambda: abs(_look(dash_duo, "graph-b")[0] - bx) < 0.01, what="pane B on conv2")
    uncheck_sweep_widths(dash_duo, 6, 3, 2)     # sweep 8 and 4 bits only: 16 measurements
    click(dash_duo, "#sweep-run")
    wait_for(lambda: text_of(dash_duo, "#sweep-status").startswith("done"), timeout=180,
             what=lambda: f"the sweep; {text_of(dash_duo, '#sweep-status')!r}")
    suggested = metric_of(session, SUGGESTED_BITS, FLOAT_RECIPE)
    want = {f"layer:{k}": suggested.color_of(k) for k in suggested.values}
    assert want and any(before_a[k] != c for k, c in want.items())   # the suggestion paints something new

    def painted(graph_id):
        fills = _fill(dash_duo, graph_id)
        return all(fills[k] == c for k, c in want.items())

    wait_for(lambda: painted("graph"), what=lambda: f"pane A painted; {_fill(dash_duo, 'graph')}")
    wait_for(lambda: painted("graph-b"), what=lambda: f"pane B painted; {_fill(dash_duo, 'graph-b')}")
    assert before_b != _fill(dash_duo, "graph-b")
    assert abs(_look(dash_duo, "graph-b")[0] - bx) < 0.01, f"pane B left conv2: {_look(dash_duo, 'graph-b')}"
    assert abs(_look(dash_duo, "graph")[0] - x) < 0.01, f"pane A left conv2: {_look(dash_duo, 'graph')}"
    assert "run the sensitivity sweep first" not in text_of(dash_duo, "#metric-legend")


def _names_drawn(dash_duo, graph_id):
    """The node names the pane draws now (the page thins and hides them by zoom)."""
    return dash_duo.driver.execute_script(
        f"const g = {_pane(graph_id)}; const t = g && g.data ? g.data.find(d => d.name === 'nodes') : null;"
        "if (!t || t.mode !== 'markers+text' || !t.text) return [];"
        "return t.customdata.filter((k, i) => t.text[i]);")


def test_a_short_graph_in_a_half_width_pane_opens_on_its_start_with_names(dash_duo):
    """lenet (13 layers) opens whole at full width, names drawn; in a half-width pane, whole,
    its ranks were ~38 px apart, too close for names: the panes showed unnamed dots."""
    dash_duo.driver.set_window_size(1280, 800)   # a laptop's
    start_app(dash_duo)
    wait_for(lambda: "layer:conv1" in _names_drawn(dash_duo, "graph"), what="names at full width")
    whole = _x_range(dash_duo, "graph")
    pos = _positions(dash_duo, "graph")
    first, last = min(x for x, _ in pos.values()), max(x for x, _ in pos.values())
    assert whole[0] < first and whole[1] > last, "opened whole at full width"
    wide = _width(dash_duo, "graph")
    click(dash_duo, "#side-by-side input")
    wait_for(lambda: _width(dash_duo, "graph") < 0.75 * wide, what="pane A narrowed for pane B")
    wait_for(lambda: "layer:conv1" in _names_drawn(dash_duo, "graph"),
             what=lambda: f"pane A's names at half width; drawn {_names_drawn(dash_duo, 'graph')}, "
                          f"x range {_x_range(dash_duo, 'graph')}")
    a = _x_range(dash_duo, "graph")
    assert a[0] < first < a[1] < last, f"pane A on the graph's start, not whole: {a} at {_width(dash_duo, 'graph')} px"
    wait_for(lambda: "layer:conv1" in _names_drawn(dash_duo, "graph-b"),
             what=lambda: f"pane B's names; drawn {_names_drawn(dash_duo, 'graph-b')}, x {_x_range(dash_duo, 'graph-b')}")
    shot(dash_duo, "side_by_side_short_graph.png")


def test_a_click_in_pane_b_keeps_the_zoom_the_user_chose(dash_duo):
    """A user zoomed in to ~5 ranks clicked a node in pane B: both panes went to the first
    view's 10 ranks and every name vanished. The counterpart is brought into view at the
    user's zoom."""
    start_app(dash_duo)
    wide = _width(dash_duo, "graph")
    click(dash_duo, "#side-by-side input")
    wait_for(lambda: dash_duo.find_element("#pane-b").is_displayed(), what="pane B shown")
    wait_for(lambda: "layer:fc1" in _positions(dash_duo, "graph-b"), what="pane B drawn")
    wait_for(lambda: _width(dash_duo, "graph") < 0.75 * wide, what="pane A narrowed for pane B")
    wait_idle(dash_duo)   # (the page settles pane A's view at its new width first)
    x, y = _positions(dash_duo, "graph")["layer:conv1"]
    dash_duo.driver.execute_script(
        f"Plotly.relayout({_pane('graph')}, {{'xaxis.range': [{x - 1.5}, {x + 1.5}], 'yaxis.range': [{y - 1}, {y + 1}]}});")
    wait_for(lambda: abs(_x_range(dash_duo, "graph")[0] - (x - 1.5)) < 0.01, what="pane A zoomed in on conv1")
    width = _x_range(dash_duo, "graph")[1] - _x_range(dash_duo, "graph")[0]
    wait_window_kept(dash_duo, [x - 1.5, x + 1.5])
    click_node(dash_duo, "layer:fc1", "graph-b")
    fc1 = _positions(dash_duo, "graph")["layer:fc1"]
    wait_for(lambda: "layer:fc1" in _outlined(dash_duo, "graph"), what="fc1 selected in pane A")
    wait_for(lambda: _x_range(dash_duo, "graph")[0] < fc1[0] < _x_range(dash_duo, "graph")[1],
             what=lambda: f"pane A on fc1 at {fc1}; it shows {_x_range(dash_duo, 'graph')}")
    a = _x_range(dash_duo, "graph")
    assert abs((a[1] - a[0]) - width) < 0.05 * width, f"pane A kept its zoom: {width:.2f} wide, now {a}"
