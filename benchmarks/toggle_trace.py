"""Where a fold toggle's redraw goes in the page: MobileNetV2 served in-process, a fresh
headless Chromium, ``N`` toggles of the layer table's fold cells.

    python benchmarks/toggle_trace.py [N]            # each request's start → end, ms after the toggle
    python benchmarks/toggle_trace.py [N] --profile  # + the page's CPU time by script, toggle → afterplot

The timeline is the browser's (``performance`` resource timings): the page's own
preview of the edit (``qviz_preview``), the edit's request (its answer carries the
redraw), plotly's ``afterplot``, then the callbacks the new recipe runs. The profile
is Chrome's sampling profiler (CDP ``Profiler``), started at each toggle and stopped
when plotly has drawn.
"""

from __future__ import annotations

import collections
import logging
import os
import sys
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ROWS = ("let api; try { api = dash_ag_grid.getApi('layer-grid'); } catch (e) { return []; } if (!api) return [];"
        "const out = []; api.forEachNode(n => { if (n.data.foldable === 'yes') out.push(n.data.layer); }); return out;")
TOGGLE = ("window.__ap = window.__pv = null; performance.clearResourceTimings();"
          "const g = document.querySelector('#graph .js-plotly-plot');"
          "g.once('plotly_afterplot', () => { window.__ap = performance.now(); });"
          "g.once('qviz_preview', () => { window.__pv = performance.now(); });"
          "const t = performance.now(); const n = dash_ag_grid.getApi('layer-grid').getRowNode(arguments[0]);"
          "n.setDataValue('fold', !n.data.fold); return t;")
REQUESTS = ("return performance.getEntriesByType('resource').filter(e => e.name.includes('update-component'))"
            ".map(e => [e.startTime, e.responseEnd]);")


def main() -> None:
    import keras
    from werkzeug.serving import make_server

    import qviz
    from browser import chromium
    from qviz.app import create_app
    from qviz.runtime import limit_threads

    toggles = int(next((a for a in sys.argv[1:] if a.isdigit()), 5))
    profile = "--profile" in sys.argv
    limit_threads(1)
    app = create_app(qviz.load(keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3))),
                     model_name="MobileNetV2")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server("127.0.0.1", 8769, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    d = chromium(1600, 1200)
    try:
        d.get("http://127.0.0.1:8769/")
        while not (rows := d.execute_script(ROWS)):
            time.sleep(0.1)
        time.sleep(3)   # the open's own redraw and verification
        by_script: collections.Counter = collections.Counter()
        if profile:
            d.execute_cdp_cmd("Profiler.enable", {})
            d.execute_cdp_cmd("Profiler.setSamplingInterval", {"interval": 200})
        for i in range(toggles):
            if profile:
                d.execute_cdp_cmd("Profiler.start", {})
            t0 = d.execute_script(TOGGLE, rows[i % len(rows)])
            while (drawn := d.execute_script("return window.__ap")) is None:
                time.sleep(0.003)
            if profile:
                p = d.execute_cdp_cmd("Profiler.stop", {})["profile"]
                url = {n["id"]: n["callFrame"]["url"].split("/")[-1].split("?")[0] or n["callFrame"]["functionName"]
                       for n in p["nodes"]}
                for sample, delta in zip(p["samples"], p["timeDeltas"]):
                    by_script[url[sample]] += delta / 1e3 / toggles
            time.sleep(1.5)
            requests = d.execute_script(REQUESTS)
            previewed = d.execute_script("return window.__pv")
            print(f"toggle {i}: previewed at {'—' if previewed is None else f'{previewed - t0:.0f}'} ms, "
                  f"plotly drew at {drawn - t0:.0f} ms; requests (ms after the toggle) "
                  + " ".join(f"{s - t0:.0f}→{e - t0:.0f}" for s, e in requests if s - t0 < drawn - t0 + 200))
        if profile:
            print("page CPU per toggle, toggle → afterplot, by script:")
            for name, ms in by_script.most_common(8):
                print(f"  {ms:7.1f} ms  {name}")
    finally:
        d.quit()
        server.shutdown()


if __name__ == "__main__":
    main()
