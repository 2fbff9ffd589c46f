"""From ``qviz serve FILE`` to the graph on screen, side by side with ``netron FILE``.

Used by ``bench_app.py --vs-netron``. Each run starts the server as a user
would (a fresh process), waits for its first HTTP answer, then opens the page
in a fresh headless Chromium (no cache) and waits for the graph:

* Netron: its SVG graph has nodes (``g.node``). Netron's cookie-consent prompt
  (shown on a first visit, after a 2 s lookup of the visitor's country, which
  fails offline) is answered beforehand with its own cookie, so it is not counted
  against Netron.
Both pages get the same script before their own (:data:`WATCH_JS`): it stamps the
frame in which the graph's first element is painted, so neither tool's time includes
how long its page keeps the test's polls waiting.

* qviz: nodes of the graph are painted (``--cold``: each run with an empty cache
  directory, so the first view is drawn before the first answer) — the first view's SVG in the HTML, or the
  plotly graph; then, separately, when the model is open for edits (the status
  line reads ``…: N ops, M layers``) and when plotly has drawn the graph.

Runs alternate between the tools (qviz, Netron, qviz, …) so load on a shared
machine falls on both alike. Both run from compiled bytecode, as after ``pip install``:
qviz's is compiled first (an editable install with ``PYTHONDONTWRITEBYTECODE`` set, as
on this workplace's machines, would otherwise compile every module on every launch).
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from browser import chromium, free_port

QVIZ_JS = """
const status = (document.querySelector('#model-status') || {}).textContent || '';
const g = document.querySelector('#graph .js-plotly-plot');
const plotted = !!(g && g.data && g.data.some(d => d.name === 'nodes' && d.x && d.x.length));
return [document.querySelectorAll('#first-view circle, #first-view rect').length > 0 || plotted, plotted, status];
"""
NETRON_JS = "return document.querySelectorAll('g.node').length;"
#: What each tool's graph is made of: its first element in the page is the graph appearing.
QVIZ_GRAPH, NETRON_GRAPH = "#first-view circle, #first-view rect, #graph .js-plotly-plot .point", "g.node"

#: Put into each page before its own scripts (the same for both tools): the moment the graph
#: is first in the document (a mutation observer) and the frame that paints it (the next
#: animation frame), in ms since navigation. A poll from the test's side sees it late by as
#: much as the page keeps its main thread busy (parsing qviz's scripts: up to ~0.25 s).
WATCH_JS = """
(function () {
  const selector = %s;
  const seen = () => {
    if (window.__benchSeen !== undefined || !document.querySelector(selector)) return false;
    window.__benchSeen = performance.now();
    requestAnimationFrame(() => { window.__benchPainted = performance.now(); });
    return true;
  };
  const watch = new MutationObserver(() => { if (seen()) watch.disconnect(); });
  watch.observe(document, {childList: true, subtree: true});
})();
"""


def _watch(driver, selector: str) -> None:
    """Stamp the graph's first paint in each page ``driver`` opens from now on (:data:`WATCH_JS`)."""
    import json

    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH_JS % json.dumps(selector)})


def _painted(driver) -> float | None:
    """Seconds from navigation to the frame that painted the graph, once stamped."""
    ms = driver.execute_script("return window.__benchPainted === undefined ? null : window.__benchPainted;")
    return None if ms is None else ms / 1000


def _wait_http(url: str, proc, timeout: float) -> float:
    t0 = time.perf_counter()
    while True:
        try:
            urllib.request.urlopen(url, timeout=1)
            return time.perf_counter() - t0
        except OSError:
            if proc.poll() is not None or time.perf_counter() - t0 > timeout:
                raise RuntimeError(f"{url} never answered") from None
            time.sleep(0.02)


def run_qviz(path: str, timeout: float = 180.0, cold: bool = False) -> dict:
    """Seconds: launch → HTTP answer, navigation → graph painted, → plotly graph, → open for edits.
    ``cold``: with an empty cache directory (the first view is laid out and drawn before the
    first answer, as on a model's first ``qviz serve``)."""
    port = free_port()
    env = dict(os.environ)
    if cold:
        env["QVIZ_CACHE_DIR"] = tempfile.mkdtemp(prefix="qviz-cold-cache-")
    proc = subprocess.Popen([sys.executable, "-m", "qviz", "serve", path, "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    driver = None
    try:
        answer = _wait_http(f"http://127.0.0.1:{port}/", proc, timeout)
        driver = chromium(1280, 900, paint_timing=True)
        _watch(driver, QVIZ_GRAPH)
        t0 = time.perf_counter()
        driver.get(f"http://127.0.0.1:{port}/")
        out = {"answer": answer, "graph": None, "plotly": None, "open": None}
        seen = None
        while time.perf_counter() - t0 < timeout and (out["open"] is None or out["plotly"] is None
                                                      or out["graph"] is None):
            painted, plotted, status = driver.execute_script(QVIZ_JS)
            now = time.perf_counter() - t0
            if painted and seen is None:
                seen = now
            if seen is not None and out["graph"] is None:
                out["graph"] = _painted(driver)
                if out["graph"] is None and now - seen > 5:   # never stamped: the poll's time
                    out["graph"] = seen
            if plotted and out["plotly"] is None:
                out["plotly"] = now
            if re.search(r": \d+ ops, \d+ layers", status):
                out["open"] = now
            time.sleep(0.01)
        # the browser's own start-up is neither tool's time
        out["launch_to_graph"] = answer + (out["graph"] if out["graph"] is not None else float("nan"))
        return out
    finally:
        if driver is not None:
            driver.quit()
        proc.terminate()
        proc.wait(30)


def run_netron(path: str, timeout: float = 180.0) -> dict:
    """Seconds: launch → HTTP answer, navigation → graph drawn."""
    netron = shutil.which("netron")
    if netron is None:
        raise RuntimeError("netron is not installed (pip install netron)")
    port = free_port()
    proc = subprocess.Popen([netron, path, "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    driver = None
    try:
        answer = _wait_http(f"http://localhost:{port}/", proc, timeout)
        driver = chromium(1280, 900, paint_timing=True)
        driver.get(f"http://localhost:{port}/favicon.ico")     # the origin, to set its cookie on
        driver.add_cookie({"name": "consent", "value": str(int(time.time() * 1000))})
        _watch(driver, NETRON_GRAPH)
        t0 = time.perf_counter()
        driver.get(f"http://localhost:{port}/")
        graph = None
        while time.perf_counter() - t0 < timeout:
            if driver.execute_script(NETRON_JS) > 0:
                graph = time.perf_counter() - t0
                break
            time.sleep(0.01)
        deadline = time.perf_counter() + 5   # its frame, stamped in the page
        while graph is not None and (painted := _painted(driver)) is None and time.perf_counter() < deadline:
            time.sleep(0.01)
        graph = painted if graph is not None and painted is not None else graph
        # as for qviz: the server's answer, then navigation → graph (not the browser's start-up)
        return {"answer": answer, "graph": graph,
                "launch_to_graph": answer + (graph if graph is not None else float("nan"))}
    finally:
        if driver is not None:
            driver.quit()
        proc.terminate()
        proc.wait(30)


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def compare(files: list[str], repeats: int = 3, cold: bool = False) -> None:
    """Print a markdown table: medians over ``repeats`` interleaved runs per file (``cold``:
    every qviz run with an empty cache; otherwise the first run of each file fills it)."""
    import compileall

    import qviz

    compileall.compile_dir(os.path.dirname(qviz.__file__), quiet=1)
    print("| file | Netron: answer / graph / launch→graph s | qviz: answer / graph / launch→graph s | "
          "qviz: plotly graph / open for edits s | launch→graph, Netron ÷ qviz |")
    print("|---|---|---|---|---|")
    for path in files:
        q, n = [], []
        for _ in range(repeats):
            q.append(run_qviz(path, cold=cold))
            n.append(run_netron(path))
        med = {k: _median([r[k] for r in q]) for k in q[0]}
        nmed = {k: _median([r[k] for r in n]) for k in n[0]}
        print(f"| {path.rsplit('/', 1)[-1]} | {nmed['answer']:.2f} / {nmed['graph']:.2f} / "
              f"{nmed['launch_to_graph']:.2f} | {med['answer']:.2f} / {med['graph']:.2f} / "
              f"{med['launch_to_graph']:.2f} | {med['plotly']:.2f} / {med['open']:.2f} | "
              f"{nmed['launch_to_graph'] / med['launch_to_graph']:.1f}× |", flush=True)
