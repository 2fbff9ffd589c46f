"""In a real browser: what a user sees when the server dropped their session, when
a file is over the upload limit, and when a callback gets a forged value."""

import qviz
from qviz.app import create_app
from qviz.app.session import Origin, Session
from qviz.samples import sample_path

from .helpers import click, figure_nodes, needs_browser, wait_for, wait_idle, wait_open

pytestmark = needs_browser


def _start(dash_duo, **kwargs):
    app = create_app(worker=False, **kwargs)
    dash_duo.start_server(app)
    wait_open(dash_duo, "lenet_digits")
    wait_for(lambda: figure_nodes(dash_duo) > 0, what="graph drawn")
    return app


def _alert(dash_duo) -> str:
    return dash_duo.find_element("#alert").text


def test_evicted_session_is_told_and_reopened_with_its_recipe(dash_duo):
    app = _start(dash_duo, sessions=1)
    store = app.qviz_sessions
    graph = qviz.load(sample_path("lenet_digits"))
    store.put(store.new_id(), Session(graph, "other user", origin=Origin("sample", "lenet_digits")))  # evicts ours
    click(dash_duo, "#bulk-all-8")
    wait_for(lambda: "dropped this page's session" in _alert(dash_duo), what="the eviction message")
    assert "reopening lenet_digits with your recipe" in _alert(dash_duo)
    wait_open(dash_duo, "lenet_digits")
    wait_for(lambda: figure_nodes(dash_duo) > 0, what="graph redrawn")
    click(dash_duo, "#bulk-all-8")               # the controls work again
    wait_for(lambda: "ops added" in dash_duo.find_element("#diff-summary").text, timeout=60, what="the rewrite")
    click(dash_duo, "#alert")                    # and the message can be dismissed
    wait_for(lambda: _alert(dash_duo) == "", what="alert dismissed")


def test_a_file_over_the_upload_limit_is_refused_in_the_page(dash_duo, tmp_path):
    _start(dash_duo, max_upload_mb=0.01)                       # 10 KB
    big = tmp_path / "big.pb"
    big.write_bytes(b"\0" * 50_000)
    dash_duo.wait_for_element("#model-upload input[type=file]", timeout=30).send_keys(str(big))
    dash_duo.wait_for_contains_text("#model-status", "big.pb: is 48.8 KB, over the 10.2 KB upload limit",
                                    timeout=60)
    assert "big.pb" in _alert(dash_duo)
    assert figure_nodes(dash_duo) > 0                          # the previous model stays


def test_a_forged_callback_value_is_one_line_not_a_silent_500(dash_duo):
    _start(dash_duo)
    wait_idle(dash_duo)
    dash_duo.driver.execute_script(
        "window.dash_clientside.set_props('model-picker', {value: '../../../etc/passwd'});")
    # one line in the red bar; the status line goes on naming the model still open
    wait_for(lambda: "no such sample" in _alert(dash_duo), timeout=60, what="the forged pick's one line")
    assert "\n" not in _alert(dash_duo)
    assert dash_duo.find_element("#model-status").text.startswith("lenet_digits: ")
    dash_duo.driver.execute_script("window.dash_clientside.set_props('session-store', {data: {sid: 42}});")
    click(dash_duo, "#bulk-all-8")
    wait_for(lambda: "reload the page" in _alert(dash_duo), what="the forged-session message")
    assert not [e for e in dash_duo.get_logs() or [] if "500" in e.get("message", "")]


def test_a_forged_match_pick_selects_nothing_and_breaks_nothing(dash_duo):
    """The Patterns list's clicks reach the server as page data (MATCH_PICK): a forged
    value (not a dict, a key that is no string, markup, a huge key) selects nothing,
    and a real pick still works after them."""
    _start(dash_duo)
    wait_idle(dash_duo)
    for forged in ("5", "{key: ['layer:conv1']}", "{key: '<img src=x onerror=window.__pwned=1>'}",
                   "{key: 'layer:' + 'x'.repeat(100000)}", "{key: 'block:99'}"):
        dash_duo.driver.execute_script(f"window.dash_clientside.set_props('match-pick', {{data: {forged}}});")
        wait_idle(dash_duo)
    assert not dash_duo.driver.execute_script("return window.__pwned;")
    assert _alert(dash_duo) == ""
    assert not [e for e in dash_duo.get_logs() or [] if "500" in e.get("message", "")]
    click(dash_duo, "#match-list .match-item")
    wait_for(lambda: "layer bn1" in dash_duo.find_element("#node-panel").text, what="a real pick selects its root")
