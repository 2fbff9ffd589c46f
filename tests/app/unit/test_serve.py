"""``qviz serve`` as a process: it answers with the model's first view before the app
is up, hands over to the app, and stops cleanly on SIGTERM, as process managers send it."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request

import psutil

from qviz.app.front import READY_PATH, FirstViewCache
from qviz.samples import sample_path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_answer(server, url, end, status=200) -> str:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == status:
                    return response.read().decode()
        except OSError:
            pass
        assert server.poll() is None, server.stdout.read().decode()[-2000:]
        assert time.monotonic() < end, f"qviz serve did not answer {url}"
        time.sleep(0.2)


def test_a_sigterm_whose_exit_python_swallowed_still_stops_the_server(tmp_path):
    """SIGTERM 2 s after `qviz serve` started landed while the main thread ran an import's
    module-lock weakref callback: its SystemExit was printed as "Exception ignored" and the
    server went on serving. Here the signal is raised inside such a callback (Python
    ignores what it raises, so the handler's exit is lost), then the server is started:
    it must stop by itself, cleanly."""
    script = textwrap.dedent(f"""
        import signal, sys, weakref
        from qviz import cli
        cli._stop_on_sigterm()
        class Held: pass
        held = Held()
        ref = weakref.ref(held, lambda _: signal.raise_signal(signal.SIGTERM))
        del held   # the callback runs, the handler's SystemExit is ignored
        sys.exit(cli.main(["serve", "--port", "{_free_port()}"]))
    """)
    env = {**os.environ, "TMPDIR": str(tmp_path), "QVIZ_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert "Exception ignored" in done.stderr, done.stderr[-2000:]   # (the exit was lost, as it was)
    assert done.returncode == 0, done.stderr[-2000:]


def test_serve_shows_the_first_view_hands_over_and_stops_on_sigterm(tmp_path):
    port = _free_port()
    model = sample_path("mobilenet_block")
    env = {**os.environ, "TMPDIR": str(tmp_path), "QVIZ_CACHE_DIR": str(tmp_path / "cache")}
    server = subprocess.Popen([sys.executable, "-m", "qviz", "serve", str(model), "--port", str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 120
        # the front's page or the app's: either has the model's layer view in its HTML
        first = _wait_answer(server, f"http://127.0.0.1:{port}/", end)
        assert "first-view-graph" in first
        _wait_answer(server, f"http://127.0.0.1:{port}{READY_PATH}", end, status=204)   # the app took over
        assert "_dash-config" in _wait_answer(server, f"http://127.0.0.1:{port}/", end)
        # drawn once, kept: the next `qviz serve` of this file shows it without laying it out
        assert FirstViewCache(tmp_path / "cache").read(model) is not None
        # the worker processes start once the first model (here the default sample) is open
        while not (children := psutil.Process(server.pid).children(recursive=True)):
            assert time.monotonic() < end, "the worker processes never started"
            time.sleep(0.5)
        server.send_signal(signal.SIGTERM)
        assert server.wait(30) == 0
        gone, alive = psutil.wait_procs(children, timeout=30)
        assert not alive, f"orphaned after SIGTERM: {[p.cmdline()[:3] for p in alive]}"
    finally:
        if server.poll() is None:
            server.kill()
