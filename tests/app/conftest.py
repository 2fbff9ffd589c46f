"""Browser tests: a real headless Chromium driven by dash[testing] (``dash_duo``).

Tests that need the browser carry :data:`needs_browser` (from ``tests/app/browser/helpers.py``):
without ``chromium`` and ``chromedriver`` they are skipped with a one-line
reason, and the rest of ``tests/app`` still runs.
"""

import os
import threading

import pytest
from dash.testing.application_runners import ThreadedRunner
from dash.testing.composite import DashComposite

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

    port_kept = 0   # (0: the system picks a free one; dash counted up from one number in each xdist worker)

    def start(self, app, start_timeout=10, **kwargs):
        from werkzeug.serving import make_server

        self._app = app
        app.scripts.config.serve_locally = app.css.config.serve_locally = True
        app.enable_dev_tools(False, dev_tools_disable_version_check=True)
        # One port for every test of this process (the first free one the system gave), so that
        # the browser, which lives as long (:class:`_OneChromium`), loads Dash's and plotly's
        # scripts from its cache, compiled: ~1.8 s less a test. Taken meanwhile: another one.
        try:
            self._server = make_server("127.0.0.1", _ServedApp.port_kept, app.server, threaded=True)
        except OSError:
            self._server = make_server("127.0.0.1", 0, app.server, threaded=True)
        self.port = _ServedApp.port_kept = self._server.server_port
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


class _OneChromium:
    """The Chromium every browser test of this process drives, started once: starting one
    costs ~1.2 s, ~2 minutes of CI's time over the browser tests. Each test still gets a
    fresh page on a fresh server, and no cookie or stored value of the last one's page
    (:class:`_BrowserOfThisProcess`); what it keeps is its cache of scripts."""

    driver = None

    @classmethod
    def close(cls):
        if cls.driver is not None:
            try:
                cls.driver.quit()
            except Exception:   # (already gone)
                pass
            cls.driver = None


class _BrowserOfThisProcess(DashComposite):
    """``dash_duo`` on :class:`_OneChromium`'s browser: the test's downloads go to its own
    directory, and after it the browser is put back as a new one is (one blank window at
    the default size, its log read, the page's cookies and storage gone: the next test's
    page has the same origin). A browser that fails that is quit, and the next test
    starts another."""

    def get_webdriver(self):
        if _OneChromium.driver is None:
            _OneChromium.driver = super().get_webdriver()
        driver = _OneChromium.driver
        driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": self.download_path})
        return driver

    def __exit__(self, *exc):
        driver = self.driver
        try:
            for handle in driver.window_handles[1:]:
                driver.switch_to.window(handle)
                driver.close()
            driver.switch_to.window(driver.window_handles[0])
            driver.get("about:blank")
            driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
            for host in ("localhost", "127.0.0.1"):
                driver.execute_cdp_cmd("Storage.clearDataForOrigin", {
                    "origin": f"http://{host}:{self.server.port}", "storageTypes": "local_storage,session_storage"})
            driver.set_window_size(*_WINDOW)
            driver.get_log("browser")
        except Exception:
            _OneChromium.close()


#: The browser's window size, as each browser test starts with it.
_WINDOW = (1600, 1200)


@pytest.fixture(scope="session")
def _one_chromium():
    yield _OneChromium
    _OneChromium.close()


@pytest.fixture
def dash_duo(request, dash_thread_server, tmpdir, _one_chromium):
    """dash[testing]'s ``dash_duo``, on this process's one browser (:class:`_BrowserOfThisProcess`)."""
    config = request.config
    with _BrowserOfThisProcess(server=dash_thread_server, browser=config.getoption("webdriver"),
                               remote=config.getoption("remote"), remote_url=config.getoption("remote_url"),
                               headless=config.getoption("headless"), options=config.hook.pytest_setup_options(),
                               download_path=tmpdir.mkdir("download").strpath,
                               percy_assets_root=config.getoption("percy_assets"),
                               percy_finalize=config.getoption("nopercyfinalize"),
                               pause=config.getoption("pause")) as duo:
        yield duo


def pytest_setup_options():
    from selenium.webdriver.chrome.options import Options

    options = Options()
    if CHROMIUM:
        options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--no-first-run",
                f"--window-size={_WINDOW[0]},{_WINDOW[1]}"):
        options.add_argument(arg)
    return options
