"""Whether a real browser is here, the mark for tests that need one, and the
helpers the browser tests share (start the app, wait, read the figure, edit a cell)."""

import os
import re
import shutil
import time
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BROWSER = bool(CHROMIUM and shutil.which("chromedriver"))

needs_browser = pytest.mark.skipif(
    not BROWSER, reason="needs chromium and chromedriver (apt-get install chromium chromium-driver; .ci/run does)")

# Screenshots for the README: QVIZ_SCREENSHOTS=docs python -m pytest tests/app
SHOTS = os.environ.get("QVIZ_SCREENSHOTS")


def shot(dash_duo, name):
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        dash_duo.driver.save_screenshot(str(Path(SHOTS) / name))


def figure_nodes(dash_duo):
    """Number of drawn graph nodes, read from the plotly figure in the page."""
    return dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "if (!g || !g.data) return -1;"
        "const t = g.data.find(d => d.name === 'nodes'); return t ? t.x.length : -1;")


def halos(dash_duo):
    """How many match halos the graph shows (not those drawn clear: services.match_marks)."""
    return dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "const t = g && g.data ? g.data.find(d => d.name === 'matches') : null; if (!t) return 0;"
        "const o = t.marker.opacity; return Array.isArray(o) ? o.filter(v => v > 0).length : t.x.length;")


def wait_for(cond, timeout=30, what="condition"):
    """Wait until ``cond()`` is true. On a timeout the error says what was awaited, the last
    error ``cond`` raised (a browser that stopped answering shows as one), and, printed to
    the test's output, what the page and this process were doing (:func:`_where_it_waits`)."""
    end = time.time() + timeout
    last = None
    while time.time() < end:
        try:
            if cond():
                return
        except Exception as exc:  # the page is still rendering
            last = exc
        time.sleep(0.2)
    try:
        print(_where_it_waits())
    except Exception as exc:   # (the timeout is the message: a failed diagnosis only notes itself)
        print(f"no diagnosis: {type(exc).__name__}: {exc}")
    said = ""
    if last is not None and str(last).strip():
        said = f"; last error {type(last).__name__}: {str(last).strip().splitlines()[0][:200]}"
    raise AssertionError(f"timed out waiting for {what() if callable(what) else what}{said}")


#: The browser test under way in this process (set by :func:`start_app`), for :func:`_where_it_waits`.
_CURRENT = []


def _where_it_waits() -> str:
    """The page's callbacks in flight (Dash's state) and the stacks of this process's
    server and job threads: what a test that timed out was waiting on (a request that never
    answered, a job stuck, or a page that sent nothing)."""
    import sys
    import threading
    import traceback

    lines = []
    if _CURRENT:
        try:
            lines.append("dash callbacks: " + str(_CURRENT[0].driver.execute_script(
                "const c = window.dash_stores[0].getState().callbacks || {}; const out = {};"
                "for (const k of ['requested', 'prioritized', 'blocked', 'executing', 'watched', 'executed'])"
                "  out[k] = (c[k] || []).map(cb => cb.callback && cb.callback.output);"
                "return JSON.stringify(out);")))
        except Exception as exc:   # (a page that does not answer says so)
            lines.append(f"the page did not answer: {type(exc).__name__}: {str(exc).strip()[:200]}")
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        name = names.get(ident, "?")
        stack = traceback.format_stack(frame)
        # the server's requests ("Thread-N (process_request_thread)") and the jobs, not idle ones
        busy = "work_queue.get" not in stack[-1]
        if ident != threading.get_ident() and name.startswith(("qviz", "Thread-")) and busy:
            lines.append(f"--- thread {name}:\n" + "".join(stack[-12:]))
    return "\n".join(lines)


def store_data(dash_duo, store_id):
    """A ``dcc.Store``'s data as the page holds it (read from Dash's own state)."""
    return dash_duo.driver.execute_script(
        "const s = window.dash_stores[0].getState(); let n = s.layout;"
        "for (const k of s.paths.strs[arguments[0]]) n = n[k]; return n.props.data;", store_id)


def wait_window_kept(dash_duo, x_range):
    """Wait until the page has kept the window pane A was moved to (``x_range``: a
    clientside callback stores it; a draw after it keeps that window)."""
    from qviz.app import ids

    wait_for(lambda: store_data(dash_duo, ids.VIEW_WINDOW)["x"] == list(x_range),
             what=lambda: f"the window {list(x_range)} kept; the page holds {store_data(dash_duo, ids.VIEW_WINDOW)}")


def is_open(dash_duo, name) -> bool:
    """Whether the status line says model ``name`` is open ("name: N ops, M layers"),
    not only drawn from its file."""
    return re.search(rf"{re.escape(str(name))}: \d+ ops, \d+ layers", dash_duo.find_element("#model-status").text)


def wait_open(dash_duo, name, timeout=60):
    wait_for(lambda: is_open(dash_duo, name), timeout=timeout,
             what=lambda: f"{name} open; the status reads {dash_duo.find_element('#model-status').text!r}")


def wait_idle(dash_duo, timeout=60):
    """Wait until the page has no callback in flight: a value set from the test
    then triggers its own request instead of racing a late poll of the page's
    opening (a loaded CI machine once lost a forged value that way)."""
    wait_for(dash_duo._wait_for_callbacks, timeout=timeout, what="the page idle (no callback in flight)")


def start_app(dash_duo):
    from qviz.app import create_app

    app = create_app()
    _CURRENT[:] = [dash_duo]
    dash_duo.start_server(app)
    wait_open(dash_duo, "lenet_digits")
    wait_for(lambda: figure_nodes(dash_duo) > 0, what="graph drawn")
    wait_for(lambda: dash_duo.driver.execute_script(
        "const api = dash_ag_grid.getApi('layer-grid'); return api && api.getDisplayedRowCount() > 0;"),
        what="the layer table filled")
    return app


def wait_whole(dash_duo, graph_id="graph"):
    """Wait until a pane's plot has drawn all of its figure: a new figure is drawn first in
    and near its view, the rest once that is on screen, and until then the positions of the
    nodes out of reach are null in its data (assets/graph_view.js, cutToView); then plotly
    draws them (a point for each node, unless the figure asks for those in view only)."""
    wait_for(lambda: dash_duo.driver.execute_script(
        f"const g = document.querySelector('#{graph_id} .js-plotly-plot');"
        "if (!g || !g.data || g.__qvizCut) return false;"
        "const i = g.data.findIndex(d => d.name === 'nodes'), t = g.data[i];"
        "if (!t || !t.x || (t.marker && t.marker.maxdisplayed) || g._fullData[i].type !== 'scatter') return true;"
        "const layer = g.querySelector('.scatterlayer .trace' + g._fullData[i].uid);"
        "return !!layer && layer.querySelectorAll('path.point').length === t.x.filter(x => x !== null).length;"),
        what=f"{graph_id}'s whole figure drawn")


def click_node(dash_duo, key, graph_id="graph"):
    """Click the node ``key`` of a pane's graph, as plotly reports a click on it."""
    wait_whole(dash_duo, graph_id)
    dash_duo.driver.execute_script(
        f"const g = document.querySelector('#{graph_id} .js-plotly-plot');"
        "const t = g.data.findIndex(d => d.name === 'nodes'); const i = g.data[t].customdata.indexOf(arguments[0]);"
        "g.emit('plotly_click', {points: [{curveNumber: t, pointNumber: i, pointIndex: i, x: g.data[t].x[i],"
        "                                  y: g.data[t].y[i], customdata: arguments[0], data: g.data[t]}]});", key)


def set_cell(dash_duo, layer, col, value):
    """Edit a layer-table cell through the grid's API, as typing into it would."""
    dash_duo.driver.execute_script(
        "const api = dash_ag_grid.getApi('layer-grid');"
        "const node = api.getRowNode(arguments[0]); node.setDataValue(arguments[1], arguments[2]);",
        layer, col, value)


def click(dash_duo, selector, timeout=10):
    """Click ``selector``, again if the page redrew it between finding and clicking
    (a panel re-rendered by a poll replaces its buttons)."""
    def attempt():
        dash_duo.find_element(selector).click()
        return True

    wait_for(attempt, timeout=timeout, what=f"a click on {selector}")


def uncheck_sweep_widths(dash_duo, *bits):
    """Untick widths of the sweep, one at a time: each click waits for the box to show the
    last one. (Dash's checklist makes a click's value from the value it last rendered: two
    clicks within one render, as a loaded CI machine gave, kept only the second.)"""
    for b in bits:
        box = f"#sweep-bits input[value='{b}']"
        assert dash_duo.find_element(box).is_selected(), f"width {b} is ticked before it is unticked"
        click(dash_duo, box)
        wait_for(lambda: not dash_duo.find_element(box).is_selected(), what=f"width {b} unticked")


_BADGE_TEXTS = ("const g = document.querySelector('#graph .js-plotly-plot');"
                "const t = g && g.data ? g.data.find(d => d.name === 'bits') : null; const out = {};"
                # (all the badges: the page draws those whose node's name is drawn, graph_view.js thinned)
                "const texts = t && t.meta && t.meta.texts ? t.meta.texts : (t ? t.text : []);"
                "if (t) t.customdata.forEach((k, i) => { if (texts[i]) out[k] = texts[i]; }); return out;")


def choose(dash_duo, selector, label, timeout=30):
    """Pick ``label`` in the dropdown ``selector`` and wait until it shows it.

    The dropdown is first scrolled to the middle of the window, so its menu opens
    with room below it; a click the page took elsewhere (a panel redrawn between
    opening the menu and clicking its option: seen once on a loaded CI machine)
    closes the menu and tries again."""
    from selenium.webdriver.common.keys import Keys

    def attempt():
        dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});",
                                       dash_duo.find_element(selector))
        try:
            dash_duo.select_dcc_dropdown(selector, value=label)
        except Exception:
            dash_duo.find_element("body").send_keys(Keys.ESCAPE)
            raise
        return label in dash_duo.find_element(selector).text

    wait_for(attempt, timeout=timeout, what=lambda: f"{label!r} chosen in {selector}; it shows "
                                                    f"{dash_duo.find_element(selector).text!r}")


def badge_texts(dash_duo) -> dict:
    """View key → the bits badge the graph has for it (``{"layer:conv2": "w4a8"}``; drawn while its name is)."""
    return dash_duo.driver.execute_script(_BADGE_TEXTS)


def edit_cell(dash_duo, layer, col, value):
    """Edit a layer-table cell and wait until the recipe has it (the line under the graph
    redrawn: the grid shows an edit at once, before the recipe has it)."""
    before = dash_duo.find_element("#diff-summary").text
    set_cell(dash_duo, layer, col, value)
    wait_for(lambda: dash_duo.find_element("#diff-summary").text != before, what=f"{layer}.{col} applied")


def text_of(dash_duo, selector) -> str:
    """The text of the first element ``selector`` finds ("" while there is none)."""
    found = dash_duo.find_elements(selector)
    return found[0].text if found else ""


def explain_fold_of(dash_duo, layer: str, weight_bits: str) -> None:
    """Set ``layer``'s weight bits, select it, and open its fold explainer."""
    edit_cell(dash_duo, layer, "weight_bits", weight_bits)
    dash_duo.find_element("#search").send_keys(f"{layer}\n")
    wait_for(lambda: f"layer {layer}" in dash_duo.find_element("#node-panel").text, what=f"{layer} selected")
    dash_duo.find_element(".fold-explain-button").click()
