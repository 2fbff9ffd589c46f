"""Every panel fits what it shows, at a laptop's and a desktop's window size (issue 18.2).

The page is filled the way a student and an engineer fill it: a layer folded and
quantized and selected, its fold explained (inference and training fold), a
sensitivity sweep run, the TFLite check done. Then, at 1280×800 and 1600×1000:
no element sticks out of its panel (scrolling inside a table or a chart is fine),
no chart title runs out of its chart or over another title, the training-fold
graphs' labels do not overlap, no column header of the layer table is cut, and
the selected layer's own controls stay at the top of its panel.
"""

from .helpers import click, needs_browser, set_cell, shot, start_app, uncheck_sweep_widths, wait_for

pytestmark = needs_browser

SIZES = ((1280, 800), (1600, 1000))

#: Returns one line per problem; an empty list when everything fits.
MEASURE = r"""
const problems = [];
const name = el => {
  const id = el.id || (el.closest('[id]') || {}).id || '';
  const text = (el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 40);
  return `${el.tagName.toLowerCase()}${el.className && el.className.baseVal === undefined && el.className
          ? '.' + String(el.className).split(' ')[0] : ''} in #${id} "${text}"`;
};
const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
const scrolls = el => ['auto', 'scroll', 'hidden'].includes(getComputedStyle(el).overflowX);
const unseen = el => { const st = getComputedStyle(el); return st.opacity === '0' || st.visibility === 'hidden'; };
for (const panel of document.querySelectorAll('.panel')) {
  if (!panel.getClientRects().length) continue;
  const p = panel.getBoundingClientRect();
  for (const el of panel.querySelectorAll('*')) {
    if (!el.getClientRects().length || unseen(el) || el.closest('svg') && el.tagName.toLowerCase() !== 'svg') continue;
    let a = el.parentElement, inside = false;
    while (a && a !== panel) { if (scrolls(a)) { inside = true; break; } a = a.parentElement; }
    if (inside) continue;       // scrolling inside a table or a chart is how it is meant to fit
    const r = el.getBoundingClientRect();
    if (r.width > 0 && (r.right > p.right + 1 || r.left < p.left - 1))
      problems.push(`${name(el)} is ${Math.round(r.width)} px wide, sticks out of its ${Math.round(p.width)} px panel`);
    else if (!['svg', 'input', 'textarea', 'select'].includes(el.tagName.toLowerCase()) && getComputedStyle(el).display !== 'inline' && !scrolls(el)
             && el.scrollWidth > el.clientWidth + 1)     // its text runs past its edge
      problems.push(`${name(el)}: its content is ${el.scrollWidth} px wide, it is ${el.clientWidth} px`);
  }
}
for (const column of document.querySelectorAll('.side, .main'))
  if (column.scrollWidth > column.clientWidth + 1)
    problems.push(`.${column.className} scrolls sideways: ${column.scrollWidth} px in ${column.clientWidth} px`);
for (const chart of document.querySelectorAll('.panel .js-plotly-plot')) {
  if (!chart.getClientRects().length) continue;
  const svg = chart.querySelector('svg.main-svg').getBoundingClientRect();
  const titles = [...chart.querySelectorAll('.gtitle, .annotation-text')]
    .filter(t => (t.textContent || '').trim()).map(t => [t.textContent.trim(), t.getBoundingClientRect()]);
  for (const [text, r] of titles)
    if (r.left < svg.left - 1 || r.right > svg.right + 1)
      problems.push(`chart title "${text}" runs out of its ${Math.round(svg.width)} px chart`);
  for (let i = 0; i < titles.length; i++)
    for (let j = i + 1; j < titles.length; j++)
      if (overlap(titles[i][1], titles[j][1]))
        problems.push(`chart titles "${titles[i][0]}" and "${titles[j][0]}" overlap`);
}
for (const chart of document.querySelectorAll('.fold-graph')) {
  const labels = [...chart.querySelectorAll('.textpoint text')].map(t => [t.textContent, t.getBoundingClientRect()]);
  for (let i = 0; i < labels.length; i++)
    for (let j = i + 1; j < labels.length; j++)
      if (overlap(labels[i][1], labels[j][1]))
        problems.push(`fold graph labels "${labels[i][0]}" and "${labels[j][0]}" overlap`);
}
for (const h of document.querySelectorAll('#layer-grid .ag-header-cell-text')) {
  const text = document.createRange(); text.selectNodeContents(h);     // the text as laid out, uncut
  const cell = h.closest('.ag-header-cell').getBoundingClientRect(), r = text.getBoundingClientRect();
  if (r.right > cell.right + 1 || r.bottom > cell.bottom + 1) problems.push(`layer table header "${h.textContent}" is cut`);
  const node = h.firstChild, words = /\S+/g;        // each word on one line
  for (let m; node && (m = words.exec(node.textContent));) {
    const word = document.createRange(); word.setStart(node, m.index); word.setEnd(node, m.index + m[0].length);
    if (new Set([...word.getClientRects()].map(l => Math.round(l.top))).size > 1)
      problems.push(`layer table header "${h.textContent}" breaks the word "${m[0]}"`);
  }
}
return problems;
"""

#: Where the selected layer's fold checkbox sits below the top of its panel (px).
CONTROLS_TOP = ("const panel = document.getElementById('node-panel').getBoundingClientRect();"
                "const fold = document.querySelector('#node-panel [id*=\"layer-fold\"]');"
                "return fold ? fold.getBoundingClientRect().top - panel.top : null;")


def test_every_panel_fits_at_both_window_sizes(dash_duo):
    start_app(dash_duo)
    click(dash_duo, "#bulk-fold-all")
    click(dash_duo, "#bulk-all-8")
    wait_for(lambda: dash_duo.driver.execute_script(
        "return dash_ag_grid.getApi('layer-grid').getRowNode('conv1').data.weight_bits") == "8", what="all 8-bit")
    set_cell(dash_duo, "conv1", "weight_bits", "4")
    dash_duo.find_element("#search").send_keys("conv1\n")
    wait_for(lambda: len(dash_duo.find_elements("#node-panel .quant-grid")) == 2, timeout=120,
             what="conv1's weight and activation grids")
    assert not dash_duo.find_element("#fold-explainer-panel").is_displayed()   # until a fold is explained
    click(dash_duo, ".fold-explain-button")
    wait_for(lambda: "max |Δ|" in dash_duo.find_element("#fold-explainer").text, timeout=60, what="the explainer")
    wait_for(lambda: len(dash_duo.find_elements("#train-fold-view .fold-graph .js-plotly-plot")) == 2,
             timeout=60, what="the training-fold graphs")
    uncheck_sweep_widths(dash_duo, 6, 4, 3, 2)      # a short sweep: 8 bits only
    click(dash_duo, "#sweep-run")
    click(dash_duo, "#tflite-export-button")
    wait_for(lambda: dash_duo.find_element("#sweep-status").text.startswith("done"), timeout=120, what="the sweep")
    wait_for(lambda: dash_duo.find_element("#tflite-status").text.startswith("downloaded"), timeout=120,
             what="the TFLite check")

    for width, height in SIZES:
        dash_duo.driver.set_window_size(width, height)
        wait_for(lambda: dash_duo.driver.execute_script("return window.innerWidth") == width, what="resized")
        # plotly re-lays out its charts on resize, asynchronously: give it the few frames it needs
        wait_for(lambda: not dash_duo.driver.execute_script(MEASURE), timeout=10,
                 what=lambda: f"at {width}×{height}: " + "; ".join(dash_duo.driver.execute_script(MEASURE)[:8]))
        top = dash_duo.driver.execute_script(CONTROLS_TOP)
        assert top is not None and top < 120, f"at {width}×{height} the fold checkbox is {top} px down its panel"
        # the layer table shows a good part of a model (it showed 4½ rows above an empty half-panel)
        rows = dash_duo.driver.execute_script(
            "const box = document.querySelector('#layer-grid .ag-body-viewport').getBoundingClientRect();"
            "const row = document.querySelector('#layer-grid .ag-row').getBoundingClientRect();"
            "return box.height / row.height;")
        assert rows >= 8, f"at {width}×{height} the layer table shows {rows:.1f} rows"
        # every column in view, none behind a sideways scroll
        scroll = dash_duo.driver.execute_script(
            "const v = document.querySelector('#layer-grid .ag-center-cols-viewport');"
            "return [v.scrollWidth, v.clientWidth];")
        assert scroll[0] <= scroll[1] + 1, f"at {width}×{height} the layer table scrolls sideways: {scroll}"
        dash_duo.driver.execute_script("document.getElementById('fold-explainer-panel').scrollIntoView()")
        shot(dash_duo, f"fold_explainer_{width}.png")
        dash_duo.driver.execute_script("document.getElementById('layer-errors').scrollIntoView()")
        shot(dash_duo, f"sqnr_chart_{width}.png")
    click(dash_duo, "#fold-explainer-close")
    wait_for(lambda: not dash_duo.find_element("#fold-explainer-panel").is_displayed(), what="the explainer closed")
