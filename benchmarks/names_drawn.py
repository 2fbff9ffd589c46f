"""Names drawn in the page, and pairs of them that overlap, at N px a rank (headless Chromium).

    qviz serve NASNetMobile.keras --port 8790 &
    python benchmarks/names_drawn.py 8790 110,80,60,48 "#blocks-button"

Against a running ``qviz serve`` on PORT: opens the page (1600×1000), runs the clicks given
(a CSS selector, or ``op``/``layer`` for the view), then zooms the graph to each N pixels a
rank from its start and prints how many nodes are in view, how many names are drawn inside
the plot, and how many pairs of drawn names' boxes overlap (``assets/graph_view.js`` leaves
out a name that would touch one drawn); then the same for every text of the points (names,
bit badges, TFLite ⚠ marks: a node's marks are drawn with its name or not at all). Screenshots go to ``names_<N>.png`` here.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import chromium  # noqa: E402

port = sys.argv[1]
d = chromium(1600, 1000)
JS_OVER = """
const g = document.querySelector('#graph .js-plotly-plot');
const i = g.data.findIndex(d => d.name === 'nodes');
const plot = g.querySelector('.nsewdrag').getBoundingClientRect();
// the boxes of the texts drawn inside the plot, and how many pairs of them overlap
const boxes = texts => [...texts].filter(e => e.textContent).map(e => e.getBoundingClientRect())
  .filter(r => r.right > plot.left && r.left < plot.right && r.bottom > plot.top && r.top < plot.bottom);
const pairs = rs => { let n = 0; for (let a = 0; a < rs.length; a++) for (let b = a + 1; b < rs.length; b++) {
  const p = rs[a], q = rs[b];
  if (Math.min(p.right, q.right) - Math.max(p.left, q.left) > 0 && Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top) > 0) n++;
} return n; };
const names = boxes(g.querySelectorAll('.scatterlayer .trace' + g._fullData[i].uid + ' .textpoint text'));
// every text of the plot's points: names, bit badges, TFLite marks
const all = boxes(g.querySelectorAll('.scatterlayer .textpoint text'));
const xr = g._fullLayout.xaxis.range; let inview = 0;
g.data[i].x.forEach((x, k) => { if (x >= xr[0] && x <= xr[1]) inview++; });
return [names.length, pairs(names), inview, g.data[i].mode, g._fullLayout.xaxis._length / (xr[1] - xr[0]), all.length, pairs(all)];
"""
try:
    d.get(f"http://127.0.0.1:{port}/")
    for _ in range(600):
        if d.execute_script("let a; try { a = dash_ag_grid.getApi('layer-grid'); } catch(e) { return false; } return !!a && a.getDisplayedRowCount() > 0;"): break
        time.sleep(0.2)
    time.sleep(2)
    for step in sys.argv[3:]:
        d.execute_script("for (const i of document.querySelectorAll('#view-mode input')) if (i.value === arguments[0]) i.click();", step) if step in ("op", "layer") else d.execute_script("document.querySelector(arguments[0]).click()", step)
        time.sleep(4)
    start = d.execute_script("return document.querySelector('#graph .js-plotly-plot')._fullLayout.xaxis.range;")
    for px in [float(p) for p in sys.argv[2].split(",")]:
        width = d.execute_script("return document.querySelector('#graph .js-plotly-plot')._fullLayout.xaxis._length;")
        ranks = width / px
        d.execute_script("Plotly.relayout(document.querySelector('#graph .js-plotly-plot'), {'xaxis.range': arguments[0]});",
                         [start[0] + 5, start[0] + 5 + ranks])
        time.sleep(2.5)
        drawn, over, inview, mode, actual, texts, texts_over = d.execute_script(JS_OVER)
        print(f"{px:.0f} px a rank (actual {actual:.0f}): {inview} nodes in view, {drawn} names drawn, {over} overlapping pairs; "
              f"with badges and ⚠ marks {texts} texts, {texts_over} overlapping pairs; mode {mode}")
        d.save_screenshot(f"names_{int(px)}.png")
finally:
    d.quit()
