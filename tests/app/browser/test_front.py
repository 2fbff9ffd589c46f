"""In a real browser: the page `qviz serve FILE` answers with before the app is up
shows the model's layer view, then reloads into the app when the app takes the
port over, whose HTML holds the same drawing."""

import threading
import urllib.request

from werkzeug.serving import make_server

from qviz.app import create_app
from qviz.app.first_view import sketch_of
from qviz.app.front import Front, listening_socket
from qviz.samples import sample_path

from .helpers import figure_nodes, needs_browser, shot, wait_for, wait_open

pytestmark = needs_browser


def test_the_waiting_page_shows_the_graph_then_becomes_the_app(dash_duo):
    path = sample_path("mobilenet_block")
    sock = listening_socket("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    front = Front(sock, name=path.name)
    entry = sketch_of(path).entry()
    front.show(entry)
    front.start()
    server = None
    try:
        dash_duo.driver.get(url)
        wait_for(lambda: "the app is starting" in dash_duo.find_element(".first-view-status").text,
                 what="the waiting page's status")
        assert dash_duo.driver.execute_script("return document.querySelectorAll('#first-view circle').length") > 0
        assert entry.svg in front.page()
        shot(dash_duo, "front_waiting")
        app = create_app(path, model_name=path.name, worker=False)
        server = make_server("127.0.0.1", 0, app.server, threaded=True, fd=front.hand_over().fileno())
        threading.Thread(target=server.serve_forever, daemon=True).start()
        # the page notices the app and reloads into it; the app's HTML holds the same drawing
        wait_for(lambda: dash_duo.driver.execute_script("return !!document.getElementById('model-status')"),
                 what="the page reloaded into the app")
        with urllib.request.urlopen(url) as response:
            assert entry.svg in response.read().decode()
        wait_open(dash_duo, path.name)
        wait_for(lambda: figure_nodes(dash_duo) > 0, what="the app's graph drawn")
    finally:
        if server is not None:
            server.shutdown()
        sock.close()
