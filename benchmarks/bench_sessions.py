"""Many users at once: N real browser sessions against one ``qviz serve``.

Each session is its own headless Chromium. It uploads a model of its own (a
small Keras convnet whose layer names carry the session's number), waits for
the graph, then applies "all 8-bit" and waits for the rewritten graph. Printed
per N: p50/p95 time to graph and to re-render, HTTP 5xx seen by the browsers,
cross-talk (a page showing another session's model), and the server's peak RSS
(web process and its worker).

    python benchmarks/bench_sessions.py                # N = 1, 4, 8, 16
    python benchmarks/bench_sessions.py --sessions 4 8

Needs chromium and chromedriver (Debian packages). The target: 0 cross-talk,
0 5xx, p95 at 16 sessions within 3x the single-session figure.

On a 2-core machine the browsers would starve the server (16 Chromiums render
WebGL in software), so the server is pinned to CPU 0 and the browsers to CPU 1
where the machine has two or more; the server's own time per draw and per open
(read from its log) is printed beside what the browsers saw.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from browser import chromium, free_port

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def make_models(n: int, folder: Path) -> list[Path]:
    """``n`` distinct small models: different widths, layer names prefixed ``u{i}_``."""
    import keras
    from keras import layers

    paths = []
    for i in range(n):
        p = f"u{i:02d}_"
        inp = keras.Input((16, 16, 3), name=f"{p}image")
        x = layers.Conv2D(8 + i, 3, name=f"{p}conv1")(inp)
        x = layers.BatchNormalization(name=f"{p}bn1")(x)
        x = layers.ReLU(name=f"{p}relu1")(x)
        x = layers.Conv2D(16, 3, name=f"{p}conv2")(x)
        x = layers.BatchNormalization(name=f"{p}bn2")(x)
        x = layers.ReLU(name=f"{p}relu2")(x)
        x = layers.GlobalAveragePooling2D(name=f"{p}pool")(x)
        out = layers.Dense(10, name=f"{p}logits")(x)
        path = folder / f"user{i:02d}.keras"
        keras.Model(inp, out).save(path)
        paths.append(path)
    return paths


def _nodes(d) -> list[str]:
    return d.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot');"
        "if (!g || !g.data) return [];"
        "const t = g.data.find(d => d.name === 'nodes'); return t && t.text ? Array.from(t.text) : [];") or []


def _wait(cond, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if cond():
                return True
        except Exception:  # the page is still rendering
            pass
        time.sleep(0.05)
    return False


def one_user(i: int, model: Path, url: str, start: threading.Barrier, out: dict) -> None:
    d = chromium(1400, 900, console_log=True, extra_args=("--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update", "--no-first-run"))
    try:
        d.get(url)
        upload = "#model-upload input[type=file]"
        if not _wait(lambda: "lenet_digits:" in d.find_element("id", "model-status").text
                     and d.find_elements("css selector", upload), 900):
            raise RuntimeError("the first page never showed its model and upload control")
        start.wait()   # every user starts the upload together
        t0 = time.monotonic()
        d.find_element("css selector", upload).send_keys(str(model))
        own = f"u{i:02d}_"
        ok = _wait(lambda: model.name in d.find_element("id", "model-status").text
                   and any(own in n for n in _nodes(d)), 300)
        t1 = time.monotonic()
        d.find_element("id", "bulk-all-8").click()
        ok = ok and _wait(lambda: "ops added" in d.find_element("id", "diff-summary").text, 300)
        t2 = time.monotonic()
        labels = _nodes(d)
        status = d.find_element("id", "model-status").text
        others = {f"u{j:02d}_" for j in range(100)} - {own}
        crossed = (model.name not in status) or any(o in n for n in labels for o in others)
        errors = [e for e in d.get_log("browser") if "status of 5" in e.get("message", "")]
        out[i] = {"ok": ok, "graph": t1 - t0, "rerender": t2 - t1, "crossed": crossed, "5xx": len(errors)}
    except Exception as exc:  # a failed session is reported, not hidden
        if not start.broken:
            start.abort()
        out[i] = {"ok": False, "graph": float("nan"), "rerender": float("nan"), "crossed": False, "5xx": 0,
                  "error": f"{type(exc).__name__}: {exc}"[:200]}
    finally:
        d.quit()


def _rss_sampler(pid: int, stop: threading.Event, peak: list) -> None:
    import psutil

    proc = psutil.Process(pid)
    while not stop.is_set():
        try:
            total = proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))
            peak[0] = max(peak[0], total)
        except psutil.Error:
            pass
        time.sleep(0.2)


def run(n: int, models: list[Path]) -> dict:
    port = free_port()
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    pin = (lambda: os.sched_setaffinity(0, {0})) if _cores() >= 2 else None
    server = subprocess.Popen([sys.executable, "-m", "qviz", "serve", "--port", str(port), "--max-upload-mb", "50"],
                              stdout=log, stderr=subprocess.STDOUT, preexec_fn=pin)
    url = f"http://127.0.0.1:{port}/"
    try:
        import urllib.request

        if not _wait(lambda: urllib.request.urlopen(url, timeout=2).status == 200, 120):
            raise RuntimeError(f"qviz serve did not start: {Path(log.name).read_text()[-800:]}")
        stop, peak = threading.Event(), [0]
        sampler = threading.Thread(target=_rss_sampler, args=(server.pid, stop, peak), daemon=True)
        sampler.start()
        out: dict = {}
        barrier = threading.Barrier(n)
        users = [threading.Thread(target=one_user, args=(i, models[i], url, barrier, out)) for i in range(n)]
        for u in users:
            u.start()
        for u in users:
            u.join()
        stop.set()
        log.seek(0)
        lines = log.readlines()
        server_errors = sum("Traceback" in line for line in lines)
        draws = [float(m.group(1)) for m in map(re.compile(r"drew .* in ([0-9.]+) s").search, lines) if m]
        opens = [float(m.group(1)) + float(m.group(2))
                 for m in map(re.compile(r"opened user.* in ([0-9.]+) s after ([0-9.]+) s in line").search, lines) if m]
        return {"n": n, "results": out, "peak_rss": peak[0], "server_tracebacks": server_errors,
                "draws": draws, "opens": opens}
    finally:
        server.terminate()
        server.wait(30)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1


def _pct(values, q):
    values = sorted(v for v in values if v == v)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 4, 8, 16])
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="qviz-bench-sessions-"))
    models = make_models(max(args.sessions), folder)
    if _cores() >= 2:
        os.sched_setaffinity(0, {1})   # this process and the browsers it starts: CPU 1; the server: CPU 0
    print("browsers: time from upload to graph drawn, and from 'all 8-bit' to the rewrite drawn; "
          "server: open (queue + load) and draw time per request")
    print(f"{'N':>3} {'graph p50':>10} {'graph p95':>10} {'redraw p50':>11} {'redraw p95':>11} "
          f"{'failed':>6} {'5xx':>4} {'cross-talk':>10} {'peak RSS':>9} {'srv open p95':>12} {'srv draw p95':>12}")
    for n in args.sessions:
        r = run(n, models)
        res = r["results"].values()
        g = [x["graph"] for x in res]
        e = [x["rerender"] for x in res]
        failed = sum(not x["ok"] for x in res)
        print(f"{n:>3} {statistics.median(g):>9.2f}s {_pct(g, 0.95):>9.2f}s {statistics.median(e):>10.2f}s "
              f"{_pct(e, 0.95):>10.2f}s {failed:>6} {sum(x['5xx'] for x in res):>4} "
              f"{sum(x['crossed'] for x in res):>10} {r['peak_rss'] / 2**20:>7.0f}MB "
              f"{_pct(r['opens'], 0.95):>11.2f}s {_pct(r['draws'], 0.95):>11.2f}s", flush=True)
        for i, x in sorted(r["results"].items()):
            if "error" in x:
                print(f"    session {i}: {x['error']}")
        if r["server_tracebacks"]:
            print(f"    server logged {r['server_tracebacks']} traceback(s)")


if __name__ == "__main__":
    main()
