"""``qviz serve`` as a process: it stops cleanly on SIGTERM, as process managers send it."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import psutil


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sigterm_stops_the_server_and_its_worker(tmp_path):
    port = _free_port()
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    server = subprocess.Popen([sys.executable, "-m", "qviz", "serve", "--port", str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 120
        while True:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).status == 200:
                    break
            except OSError:
                assert server.poll() is None, server.stdout.read().decode()[-2000:]
                assert time.monotonic() < end, "qviz serve did not answer"
                time.sleep(0.5)
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
