"""Selecting a layer on a real network: search → the node panel, and whether the
verification panel flashes "verifying…" although the recipe did not change.

    python benchmarks/bench_select.py [--repeats 5] [--size 96]

MobileNetV2 (``weights=None``, 96×96) served by ``create_app`` in this process,
driven by headless Chromium at 1600×1000. For each repeat, a different layer is
typed in the search box; the figures are medians over the repeats:

- *search → panel*: Enter until the node panel names the layer (timed in the page);
- *search → grids*: until its quantization grids are drawn (recipe: first and
  last layer 8-bit, the rest 4-bit, all folded);
- *verifying flashes*: how many selections showed "verifying…" in the
  verification panel (sampled every 20 ms) while the recipe stayed the same.

Issue 18.7 measured 3.7 s to the panel and 5.5 s with grids on this network.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import threading
import time

from browser import chromium

LAYERS = ["block_13_expand", "block_3_project", "Conv_1", "block_6_depthwise", "expanded_conv_project",
          "block_10_expand", "block_15_project"]


def _until(cond, timeout=120.0, every=0.01, what=lambda: ""):
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        try:
            if cond():
                return time.perf_counter()
        except Exception:  # the page is re-rendering
            pass
        time.sleep(every)
    raise TimeoutError(f"timed out: {what()}")


#: Stamps, in ``window.__qv``, when the node panel first names the target layer,
#: when its grids are drawn, and whether "verifying…" showed meanwhile.
WATCH = """
const panel = document.getElementById('node-panel'), verify = document.getElementById('verify-panel');
new MutationObserver(() => {
  const qv = window.__qv; if (!qv) return;
  if (qv.panel === null && panel.textContent.includes(qv.target)) qv.panel = performance.now();
  if (qv.panel !== null && qv.grids === null && panel.querySelector('.quant-grid .main-svg')
      && !panel.querySelector('#grid-waiting')) qv.grids = performance.now();
}).observe(panel, {childList: true, subtree: true, characterData: true});
new MutationObserver(() => {
  if (window.__qv && verify.textContent.includes('verifying')) window.__qv.verifying = true;
}).observe(verify, {childList: true, subtree: true, characterData: true});
"""


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--size", type=int, default=96)
    ap.add_argument("--port", type=int, default=8771)
    ap.add_argument("--timeout", type=float, default=60.0, help="give up waiting after this many seconds")
    ap.add_argument("--log", action="store_true", help="print the app's own timings (qviz loggers at INFO)")
    args = ap.parse_args(argv)
    if args.log:
        logging.basicConfig(level=logging.WARNING, format="%(relativeCreated)8.0f ms %(name)s: %(message)s")
        logging.getLogger("qviz").setLevel(logging.INFO)
    import keras
    from werkzeug.serving import make_server

    import qviz
    from qviz.app import create_app

    graph = qviz.load(keras.applications.MobileNetV2(weights=None, input_shape=(args.size, args.size, 3)))
    app = create_app(graph, model_name="MobileNetV2")
    server = make_server("127.0.0.1", args.port, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    d = chromium(1600, 1000)
    text = lambda sel: d.find_element("css selector", sel).text  # noqa: E731
    try:
        d.get(f"http://127.0.0.1:{args.port}/")
        _until(lambda: "ops" in text("#model-status") and d.execute_script(
            "const g = document.querySelector('#graph .js-plotly-plot'); return !!(g && g.data && g.data.length);"))
        d.find_element("css selector", "#bulk-fold-all").click()
        d.find_element("css selector", "#bulk-first-last-8-rest-4").click()
        _until(lambda: "SQNR" in text("#verify-panel"), timeout=300)
        panel, grids, flashes = [], [], 0
        # Times are taken in the page (performance.now() in a MutationObserver), not by polling
        # over WebDriver, whose round trips stall while the page is busy drawing.
        d.execute_script(WATCH)
        for layer in LAYERS[:args.repeats]:
            box = d.find_element("css selector", "#search")
            box.clear()
            box.send_keys(layer)
            d.execute_script("window.__qv = {target: 'layer ' + arguments[0], t0: performance.now(),"
                             " panel: null, grids: null, verifying: false};", layer)
            logging.getLogger("qviz.bench").info("Enter on %s", layer)
            box.send_keys("\n")
            try:
                _until(lambda: d.execute_script("return window.__qv.grids !== null"), timeout=args.timeout)
            except TimeoutError:
                pass
            time.sleep(1.0)     # a late "verifying…", after the panel settled
            qv = d.execute_script("return window.__qv")
            panel.append((qv["panel"] - qv["t0"]) / 1e3 if qv["panel"] is not None else args.timeout)
            grids.append((qv["grids"] - qv["t0"]) / 1e3 if qv["grids"] is not None else args.timeout)
            flashes += bool(qv["verifying"])
        late = sum(t >= args.timeout for t in panel + grids)
        print(f"MobileNetV2 {args.size}×{args.size}, {len(panel)} searches: search → panel median "
              f"{statistics.median(panel):.2f} s (max {max(panel):.2f}); search → grids median "
              f"{statistics.median(grids):.2f} s (max {max(grids):.2f}); "
              f"'verifying…' shown on {flashes} of {len(panel)} selections"
              + (f"; {late} waits gave up at {args.timeout:.0f} s (counted as {args.timeout:.0f} s)" if late else ""))
    finally:
        d.quit()
        server.shutdown()


if __name__ == "__main__":
    main()
