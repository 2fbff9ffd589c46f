"""Where the user panned to stays put: a click on a node, an edit or a colour redraws
the marks, not the window (it jumped back to the graph's start); a new view (the op
view) opens at its start."""

from selenium.webdriver.common.action_chains import ActionChains

from .helpers import click, figure_nodes, needs_browser, start_app, wait_for, wait_idle

pytestmark = needs_browser

_GRAPH = "document.querySelector('#graph .js-plotly-plot')"


def _x_range(dash_duo):
    return dash_duo.driver.execute_script(f"return {_GRAPH}._fullLayout.xaxis.range.slice();")


def _drag_left(dash_duo, px: int) -> list:
    """Drag the graph ``px`` pixels left with the mouse, as a user pans; the new x range."""
    start = _x_range(dash_duo)
    area = dash_duo.find_element("#graph .nsewdrag")
    ActionChains(dash_duo.driver).move_to_element(area).click_and_hold().move_by_offset(-px // 2, 0) \
        .move_by_offset(-px // 2, 0).release().perform()
    wait_for(lambda: _x_range(dash_duo)[0] > start[0] + 0.5, what="the drag moved the window")
    wait_idle(dash_duo)
    return _x_range(dash_duo)


def test_a_click_keeps_the_window_the_user_panned_to(dash_duo):
    start_app(dash_duo)
    wait_idle(dash_duo)
    panned = _drag_left(dash_duo, 240)
    # a click on a node in view, as a user's click reaches the app
    dash_duo.driver.execute_script(
        f"const g = {_GRAPH}; const t = g.data.findIndex(d => d.name === 'nodes'); const tr = g.data[t];"
        "const r = g._fullLayout.xaxis.range; let i = tr.x.findIndex(x => x > r[0] && x < r[1]);"
        "g.emit('plotly_click', {points: [{curveNumber: t, pointNumber: i, pointIndex: i, x: tr.x[i], y: tr.y[i],"
        "                                  customdata: tr.customdata[i], data: tr}]});")
    wait_for(lambda: "layer" in dash_duo.find_element("#node-panel").text, what="the clicked node's panel")
    wait_idle(dash_duo)
    assert _x_range(dash_duo) == panned
    click(dash_duo, "#bulk-all-8")             # an edit redraws the marks, in the same window
    wait_idle(dash_duo)
    assert _x_range(dash_duo) == panned
    click(dash_duo, "#view-mode input[value='op']")    # a new view: from its start
    wait_for(lambda: figure_nodes(dash_duo) > 13 and _x_range(dash_duo)[0] < 0 < panned[0] - 0.5,
             what=lambda: f"the op view from its start; {_x_range(dash_duo)}, panned {panned}")


def test_a_found_node_is_centred_once_and_the_minimap_jump_is_kept(dash_duo):
    """Search centres its hit; a drag away from it is kept through an edit (the edit
    centred the found node again), and so is a jump from the minimap."""
    start_app(dash_duo)
    dash_duo.find_element("#search").send_keys("conv2\n")
    wait_for(lambda: "layer conv2" in dash_duo.find_element("#node-panel").text, what="conv2 found")
    wait_idle(dash_duo)
    panned = _drag_left(dash_duo, 300)
    click(dash_duo, "#bulk-all-8")
    wait_idle(dash_duo)
    assert _x_range(dash_duo) == panned
    # the minimap's jump (assets/graph_view.js sets both ends of each axis at once)
    dash_duo.driver.execute_script(f"Plotly.relayout({_GRAPH}, {{'xaxis.range': [0, 4], 'yaxis.range': [-1, 1]}});")
    wait_for(lambda: _x_range(dash_duo) == [0, 4], what="the jump")
    wait_idle(dash_duo)
    click(dash_duo, "#bulk-first-last-8-rest-4")
    wait_idle(dash_duo)
    assert _x_range(dash_duo) == [0, 4]
