"""Issue 20.6: the fold explainer puts the three orders of folding and quantizing
side by side on the selected layer, each with its output error at the recipe's
width, the same numbers as the library's, and what TFLite stores for each."""

import qviz
from qviz.analysis.fold_orders import fold_orders
from qviz.choices import SWEEP_BITS
from qviz.samples import data_for, sample_path

from .helpers import explain_fold_of, needs_browser, shot, start_app, text_of, wait_for

pytestmark = needs_browser

_FIGURE = ("const g = document.querySelector('.fold-orders .js-plotly-plot');"
           "if (!g || !g.data) return null;"
           "return {names: g.data.map(d => d.name), x: g.data[0].x, y: g.data.map(d => d.y),"
           "        xtitle: g.layout.xaxis.title.text, ytitle: g.layout.yaxis.title.text};")


def test_three_orders_of_fold_and_quantize_side_by_side(dash_duo):
    start_app(dash_duo)
    explain_fold_of(dash_duo, "conv2", "4")
    wait_for(lambda: text_of(dash_duo, "#fold-orders-table"), timeout=90,
             what=lambda: f"the fold-order table; the explainer reads {text_of(dash_duo, '#fold-explainer')[:300]!r}")

    g = qviz.load(sample_path("lenet_digits"))
    want = fold_orders(g, "conv2", SWEEP_BITS, inputs=data_for(g).calibration)
    assert text_of(dash_duo, ".orders-summary") == want.summary(4)
    rows = text_of(dash_duo, "#fold-orders-table").splitlines()
    assert rows[0].startswith("order (weights at 4 bits)")
    for order in ("fold, then quantize", "quantize, then fold", "training-mode fold"):
        row = next(r for r in rows if r.startswith(order))
        pt, pc = (want.result(order, s, 4).sqnr_db for s in ("per-tensor", "per-channel"))
        assert f"{pt:.1f} dB {pc:.1f} dB" in row, row
    # what the device keeps of each, for the recipe's per-tensor weights
    assert "float: one per-tensor scale cannot absorb" in next(r for r in rows if r.startswith("quantize, then"))

    wait_for(lambda: dash_duo.driver.execute_script(_FIGURE) is not None, what="the fold-order figure")
    fig = dash_duo.driver.execute_script(_FIGURE)
    assert len(fig["names"]) == 6 and fig["names"][0] == "fold, then quantize · per-tensor"
    assert fig["x"] == list(SWEEP_BITS)
    assert (fig["xtitle"], fig["ytitle"]) == ("weight bits", "output SQNR (dB)")
    assert [round(v, 3) for v in fig["y"][0]] == [round(want.result("fold, then quantize", "per-tensor", b).sqnr_db, 3)
                                                  for b in SWEEP_BITS]
    dash_duo.driver.execute_script("document.querySelector('.fold-orders').scrollIntoView();")
    shot(dash_duo, "fold_orders.png")
