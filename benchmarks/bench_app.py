"""App speed: layout, figure, payload, crossings (vs Graphviz dot), and browser timings.

    python benchmarks/bench_app.py [--nets MobileNetV2 ResNet50 DenseNet121 NASNetMobile]
                                   [--synthetic 50000] [--no-dot] [--no-browser]
    python benchmarks/bench_app.py --vs-netron [--nets …] [--repeats 3] [--cold]
    python benchmarks/bench_app.py --op-view [--nets NASNetMobile] [--repeats 3]

``--vs-netron``: from ``qviz serve FILE`` to the graph on screen, side by side
with ``netron FILE`` (``pip install netron``), for each net as ``.keras`` and as
a frozen ``.pb`` (see ``first_view.py``).

Per graph and view: time to build the view and lay it out (the layered layout
on networkx), time to build the plotly figure, the figure's JSON size, and
edge crossings; the same view laid out by Graphviz ``dot`` (Debian
``graphviz``) for crossings and time. In a headless Chromium (MobileNetV2):
page load → graph drawn, and a fold toggle → the page's preview and the server's redraw
drawn (median of 10, timed in the page; the redraw's first drawing: its nodes in and near
the view, the rest drawn once that is on screen, assets/graph_view.js cutToView).

``--op-view``: in a headless Chromium on ``qviz serve FILE`` (blocks ungrouped), the
click on *ops* (and back on *layers*) → the new graph drawn, per net.

Targets: op view of NASNetMobile laid out + built <= 1 s (and on screen <= 1 s after
the click); layer view <= 0.2 s;
crossings <= 1.5x dot's; toggle -> re-rendered graph <= 150 ms median on
MobileNetV2 (issue 16); the 50k-op synthetic graph opens in the layer view <= 5 s.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser import chromium, free_port  # noqa: E402
from synthetic import synthetic_graph  # noqa: E402

from qviz.layout import count_crossings, layered_routes, view_graph  # noqa: E402
from qviz.layout.blocks import find_blocks, layer_graph  # noqa: E402
from qviz.layout.view import close_blocks  # noqa: E402
from qviz.render import graph_figure  # noqa: E402


def dot_layout(vg, timeout=600):
    """(positions by rank index, edge routes, seconds) from Graphviz dot, or
    (None, None, None) without it. Routes are dot's spline control points, with x
    mapped to (fractional) rank indices, so crossings are counted along the
    edges dot draws, as ours are along our bends."""
    if not shutil.which("dot"):
        return None, None, None
    import numpy as np

    names = {k: f"n{i}" for i, k in enumerate(vg.nodes)}
    back = {v: k for k, v in names.items()}
    text = "digraph G { rankdir=LR; node [shape=point];\n" + "".join(
        f"{names[u]} -> {names[v]};\n" for u, v in vg.edges) + "".join(
        f"{names[k]};\n" for k in vg.nodes) + "}\n"
    t0 = time.perf_counter()
    out = subprocess.run(["dot", "-Tplain"], input=text, capture_output=True, text=True, timeout=timeout)
    dt = time.perf_counter() - t0
    raw, splines = {}, {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "node":
            raw[back[parts[1]]] = (float(parts[2]), float(parts[3]))
        elif parts and parts[0] == "edge":
            n = int(parts[3])
            pts = [(float(parts[4 + 2 * i]), float(parts[5 + 2 * i])) for i in range(n)]
            splines[(back[parts[1]], back[parts[2]])] = pts
    xs = sorted({round(x, 3) for x, _ in raw.values()})
    ranks = {x: i for i, x in enumerate(xs)}

    def rank_of(x):
        return float(np.interp(x, xs, range(len(xs))))

    pos = {k: (float(ranks[round(x, 3)]), y) for k, (x, y) in raw.items()}
    routes = {e: [(rank_of(x), y) for x, y in pts] for e, pts in splines.items()}
    return pos, routes, dt


def measure(name, graph, mode, use_dot=True, blocks=False):
    """One row of the table; ``blocks``: with the graph's blocks closed (the blocks found
    within the time measured), as the app opens a graph of more than 400 layers."""
    t0 = time.perf_counter()
    vg = view_graph(graph, mode)
    if blocks:
        vg = close_blocks(vg, find_blocks(layer_graph(vg)))
        name += " (blocks)"
    pos, routes = layered_routes(vg)
    t1 = time.perf_counter()
    fig = graph_figure(vg, pos, routes=routes)
    size = len(fig.to_json())
    t2 = time.perf_counter()
    crossings = count_crossings(vg, pos, routes=routes)
    dot_pos, dot_routes, dot_s = dot_layout(vg) if use_dot else (None, None, None)
    dot_cross = count_crossings(vg, dot_pos, routes=dot_routes) if dot_pos else None
    ratio = f"{crossings / dot_cross:.2f}" if dot_cross else ("—" if dot_cross is None else "n/a (dot 0)")
    print(f"| {name} | {mode} | {vg.number_of_nodes()} | {(t1 - t0) * 1e3:.0f} | {(t2 - t1) * 1e3:.0f} | "
          f"{(t2 - t0) * 1e3:.0f} | {size / 1024:.0f} | {crossings} | "
          f"{dot_cross if dot_cross is not None else '—'} | {ratio} | "
          f"{f'{dot_s:.2f}' if dot_s is not None else '—'} |", flush=True)


def browser_timings(graph, toggles=10, name="MobileNetV2", port=8765):
    """(page load → graph drawn s, [toggle → re-rendered s]) in headless Chromium; the page
    load → the first view's SVG (in the page's HTML) on screen is printed too."""
    from werkzeug.serving import make_server

    from qviz.app import create_app

    app = create_app(graph, model_name=name)
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)   # not a line per request
    server = make_server("127.0.0.1", port, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    driver = chromium(1600, 1200)
    nodes_js = ("const g = document.querySelector('#graph .js-plotly-plot');"
                "if (!g || !g.data) return -1; const t = g.data.find(d => d.name === 'nodes');"
                "return t ? t.x.length : -1;")
    try:
        t0 = time.perf_counter()
        driver.get(f"http://127.0.0.1:{port}/")
        svg = None
        while driver.execute_script(nodes_js) <= 0:
            if svg is None and driver.execute_script(
                    "return document.querySelectorAll('#first-view circle, #first-view rect').length > 0;"):
                svg = time.perf_counter() - t0
            time.sleep(0.02)
        load = time.perf_counter() - t0
        print(f"  {name}: page load → first view (SVG) on screen "
              f"{'—' if svg is None else f'{svg:.2f} s'}; → interactive graph {load:.2f} s")
        driver.execute_script(
            "const g = document.querySelector('#graph .js-plotly-plot');"
            # timed in the page (performance.now), not by this script's polls: the page's own
            # preview of an edit (recipe.PREVIEW_EDIT: the batch norm faded, the badge), and
            # plotly's drawing of the server's redraw (the figure's data replaced)
            "window.__pvAt = window.__apAt = null;"
            "g.on('qviz_preview', () => { if (window.__pvAt === null) window.__pvAt = performance.now(); });"
            "g.on('plotly_afterplot', () => {"
            "  if (window.__apAt === null && g.data !== window.__data) window.__apAt = performance.now(); });")
        rows_js = ("let api; try { api = dash_ag_grid.getApi('layer-grid'); } catch (e) { return []; } if (!api) return [];"
                   "const out = []; api.forEachNode(n => { if (n.data.foldable === 'yes') out.push(n.data.layer); });"
                   "return out;")
        while not (rows := driver.execute_script(rows_js)):   # the table fills once the model is open
            time.sleep(0.05)
        time.sleep(1.0)   # the open's own redraw, not a toggle's
        times, badges = [], []
        for i in range(toggles):
            layer = rows[i % len(rows)]
            driver.execute_script(
                "window.__data = document.querySelector('#graph .js-plotly-plot').data;"
                "window.__pvAt = window.__apAt = null; window.__t0 = performance.now();"
                "const n = dash_ag_grid.getApi('layer-grid').getRowNode(arguments[0]);"
                "n.setDataValue('fold', !n.data.fold);", layer)
            t = time.perf_counter()
            while (at := driver.execute_script("return [window.__apAt, window.__pvAt, window.__t0];"))[0] is None:
                if time.perf_counter() - t > 60:
                    raise RuntimeError(f"toggling {layer}'s fold never redrew the graph")
                time.sleep(0.02)
            times.append((at[0] - at[2]) / 1e3)
            badges.append(None if at[1] is None or at[1] > at[0] else (at[1] - at[2]) / 1e3)
            time.sleep(0.3)
        seen = [b for b in badges if b is not None]
        if toggles:
            print(f"  {name}: fold toggle → shown in the page (its batch norm faded, its badge): "
                  + (f"median {statistics.median(seen) * 1e3:.0f} ms (max {max(seen) * 1e3:.0f}, "
                     f"{len(seen)} of {toggles} toggles)" if seen else "never before the redraw"))
        return load, times
    finally:
        driver.quit()
        server.shutdown()


def view_switch_timings(path: str, repeats: int = 3) -> None:
    """Print, for the model file ``path`` served by ``qviz serve`` with its blocks
    ungrouped, seconds from a click on *ops* (then *layers*) to the new graph drawn
    (the first click also lays the view out; later ones find it cached)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "qviz", "serve", path, "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    graph = "document.querySelector('#graph .js-plotly-plot')"
    driver = chromium(1600, 1000)
    try:
        deadline = time.perf_counter() + 180
        while True:
            try:
                driver.get(f"http://127.0.0.1:{port}/")
                break
            except Exception:   # not listening yet
                if time.perf_counter() > deadline:
                    raise
                time.sleep(0.2)
        while not re.search(r": \d+ ops, \d+ layers", driver.execute_script(
                "return (document.querySelector('#model-status') || {}).textContent || '';")):
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{path} never opened")
            time.sleep(0.2)
        time.sleep(3)
        if driver.execute_script("return document.querySelector('#blocks-button').textContent;") == "ungroup blocks":
            driver.find_element("css selector", "#blocks-button").click()
            time.sleep(3)
        for _ in range(repeats):
            for mode in ("op", "layer"):
                driver.execute_script(f"window.__data = {graph}.data;")
                t = time.perf_counter()
                driver.find_element("css selector", f"#view-mode input[value='{mode}']").click()
                while driver.execute_script(f"return {graph}.data === window.__data;"):
                    time.sleep(0.01)
                took = time.perf_counter() - t
                nodes = driver.execute_script(f"return {graph}.data.find(d => d.name === 'nodes').x.length;")
                print(f"  {Path(path).name}: click on {mode}s → graph drawn {took:.2f} s ({nodes} nodes)", flush=True)
                time.sleep(2)
    finally:
        driver.quit()
        proc.terminate()
        proc.wait(timeout=30)


def model_files(nets, directory: Path) -> list[str]:
    """Each net saved as ``.keras`` and as a frozen ``.pb`` (by qviz), in ``directory``."""
    import keras

    import qviz

    files = []
    for net in nets:
        model = getattr(keras.applications, net)(weights=None, input_shape=(224, 224, 3))
        model.save(directory / f"{net}.keras")
        (directory / f"{net}.pb").write_bytes(qviz.load(model).to_graph_def().SerializeToString())
        files += [str(directory / f"{net}.keras"), str(directory / f"{net}.pb")]
    return files


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--nets", nargs="*", default=["MobileNetV2", "ResNet50", "DenseNet121", "NASNetMobile"])
    ap.add_argument("--synthetic", type=int, default=50_000)
    ap.add_argument("--no-dot", action="store_true")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--vs-netron", action="store_true",
                    help="only: from `qviz serve FILE` to the graph on screen, side by side with `netron FILE` "
                         "(.keras and frozen .pb of each net)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--op-view", action="store_true",
                    help="only: the click on ops (and back on layers) → the graph drawn, per net (.keras)")
    ap.add_argument("--cold", action="store_true",
                    help="with --vs-netron: every qviz run with an empty first-view and layout cache")
    args = ap.parse_args(argv)
    import keras

    if args.op_view:
        directory = Path(tempfile.mkdtemp(prefix="qviz-bench-"))
        for net in args.nets:
            getattr(keras.applications, net)(weights=None, input_shape=(224, 224, 3)).save(directory / f"{net}.keras")
            view_switch_timings(str(directory / f"{net}.keras"), args.repeats)
        return
    if args.vs_netron:
        from first_view import compare

        compare(model_files(args.nets, Path(tempfile.mkdtemp(prefix="qviz-bench-"))), args.repeats, args.cold)
        return

    import qviz
    from qviz.runtime import limit_threads

    limit_threads((os.cpu_count() or 2) - 1)  # as `qviz serve` does
    # The browser runs first, while this process (which also serves the app) holds
    # only the served model: with four big networks loaded, Python's garbage
    # collector alone adds seconds to every request — a cost `qviz serve` never has.
    if not args.no_browser:
        model = qviz.load(keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3)))
        load, times = browser_timings(model)
        print(f"browser (MobileNetV2, layer view): page load → graph drawn {load:.2f} s; "
              f"fold toggle → re-rendered graph median {statistics.median(times) * 1e3:.0f} ms "
              f"(min {min(times) * 1e3:.0f}, max {max(times) * 1e3:.0f}, n={len(times)})")
        del model
        if args.synthetic:
            label = f"synthetic {args.synthetic // 1000}k"
            # with constant values, so the layer table can tell which batch norms fold
            load, _ = browser_timings(synthetic_graph(args.synthetic, values=True), toggles=0, name=label,
                                      port=8766)
            print(f"browser ({label} ops, layer view): page load → graph drawn {load:.2f} s\n")
    print("| graph | view | nodes drawn | layout ms | figure ms | total ms | JSON KiB | crossings | "
          "dot crossings | ratio | dot s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for net in args.nets:
        graph = qviz.load(getattr(keras.applications, net)(weights=None, input_shape=(224, 224, 3)))
        for mode in ("layer", "op"):
            measure(net, graph, mode, use_dot=not args.no_dot)
    if args.synthetic:
        graph = synthetic_graph(args.synthetic)
        measure(f"synthetic {args.synthetic // 1000}k", graph, "layer", use_dot=False)
        measure(f"synthetic {args.synthetic // 1000}k", graph, "layer", use_dot=False, blocks=True)


if __name__ == "__main__":
    tempfile.tempdir = tempfile.gettempdir()
    main()
