"""Browser tests: a real headless Chromium driven by dash[testing] (``dash_duo``).

Tests that need the browser carry :data:`needs_browser` (from ``tests/app/browser/helpers.py``):
without ``chromium`` and ``chromedriver`` they are skipped with a one-line
reason, and the rest of ``tests/app`` still runs.
"""

import os
import threading

import pytest
from dash.testing.application_runners import ThreadedRunner

from qviz.app.jobs import ProcessRunner

from .browser.helpers import CHROMIUM


@pytest.fixture(autouse=True)
def _worker_processes_end_with_their_test(monkeypatch, request):
    """An app a test makes runs its jobs on threads of the test's process (TensorFlow is
    imported there already), unless the test is marked ``worker_processes``: each
    ProcessRunner starts two processes importing TensorFlow, ~6 s of CPU a test, which
    on CI's two cores is time taken from the other tests. A test so marked gets the app's
    own runner; with REDIS_URL set (the Celery tests) every test does. Runners are closed
    after the test: worker processes would live until the test run ends (a served app
    keeps them for its lifetime), and queued jobs would take the next test's CPU."""
    import qviz.app
    from qviz.app.jobs import ThreadRunner

    threads = []   # closed after the test: its jobs not started yet are cancelled

    def in_process():
        threads.append(ThreadRunner())
        return threads[-1]

    if request.node.get_closest_marker("worker_processes") is None:
        made = qviz.app._runner
        monkeypatch.setattr(qviz.app, "_runner", lambda: made() if os.environ.get("REDIS_URL") else in_process())
    started = []
    start = ProcessRunner.start

    def tracked(self):
        started.append(self)
        return start(self)

    monkeypatch.setattr(ProcessRunner, "start", tracked)
    yield
    for runner in [*started, *threads]:
        runner.close()


class _ServedApp(ThreadedRunner):
    """dash[testing]'s threaded server, stopped by shutting the server down. Dash's own stops
    one by raising SystemExit in every thread made since it started (PyThreadState_SetAsyncExc):
    the app's job threads died mid-job ("Exception in worker … SystemExit"), and a CI run once
    hung for good in that teardown, its server waiting for a request thread that never started."""

    def start(self, app, start_timeout=10, **kwargs):
        from werkzeug.serving import make_server

        self._app = app
        app.scripts.config.serve_locally = app.css.config.serve_locally = True
        app.enable_dev_tools(False, dev_tools_disable_version_check=True)
        # port 0: the system picks a free one (dash counts ports up from one number in each xdist worker)
        self._server = make_server("127.0.0.1", kwargs.get("port", 0), app.server, threaded=True)
        self.port = self._server.server_port
        self.thread = threading.Thread(target=self._server.serve_forever, name="dash-test-server", daemon=True)
        self.thread.start()
        self.started = True

    def stop(self):
        self._server.shutdown()        # serve_forever returns; requests in flight finish on their threads
        self._server.server_close()
        self.thread.join(timeout=self.stop_timeout)
        self._app, self.started = None, False


@pytest.fixture
def dash_thread_server():
    """The server ``dash_duo`` serves the app under test with (see :class:`_ServedApp`)."""
    with _ServedApp() as server:
        yield server


def pytest_setup_options():
    from selenium.webdriver.chrome.options import Options

    options = Options()
    if CHROMIUM:
        options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--no-first-run",
                "--window-size=1600,1200"):
        options.add_argument(arg)
    return options
