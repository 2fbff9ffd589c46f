"""Issue 19.4 in the app: after a sweep, the mixed-precision search measures each
recipe and draws size against SQNR; clicking a point loads its recipe, and undo
takes it back."""

from .helpers import badge_texts, click, needs_browser, shot, start_app, uncheck_sweep_widths, wait_for

pytestmark = needs_browser

_POINTS = ("const g = document.querySelector('#pareto-graph .js-plotly-plot');"
           "if (!g || !g.data || !g.data.length) return null;"
           "return {x: g.data[0].x, y: g.data[0].y, text: g.data[0].text, front: g.data[1].x.length,"
           "        xtitle: g.layout.xaxis.title.text, ytitle: g.layout.yaxis.title.text};")
# a click on point i, as plotly reports one (Dash turns it into clickData)
_CLICK = ("const g = document.querySelector('#pareto-graph .js-plotly-plot');"
          "const i = arguments[0];"
          "g.emit('plotly_click', {points: [{curveNumber: 0, pointNumber: i, pointIndex: i, x: g.data[0].x[i],"
          "                                  y: g.data[0].y[i], customdata: i, data: g.data[0]}]});")


def test_mixed_precision_front_and_a_click_loads_its_recipe(dash_duo):
    start_app(dash_duo)
    uncheck_sweep_widths(dash_duo, 6, 3, 2)     # sweep 8 and 4 bits only: 16 measurements
    click(dash_duo, "#sweep-run")
    wait_for(lambda: dash_duo.find_element("#sweep-status").text.startswith("done"), timeout=180,
             what=lambda: f"the sweep; {dash_duo.find_element('#sweep-status').text!r}")
    click(dash_duo, "#pareto-run")
    wait_for(lambda: "on the front" in dash_duo.find_element("#pareto-status").text, timeout=180,
             what=lambda: f"the search; {dash_duo.find_element('#pareto-status').text!r}")
    pts = dash_duo.driver.execute_script(_POINTS)
    assert len(pts["x"]) == 1 + 4 and pts["x"] == sorted(pts["x"], reverse=True)     # 4 layers, one step each
    assert (pts["xtitle"], pts["ytitle"]) == ("weights (KB)", "output SQNR (dB)")
    assert 1 <= pts["front"] <= 5
    dash_duo.driver.execute_script("document.getElementById('pareto-graph').scrollIntoView({block: 'center'});")
    shot(dash_duo, "pareto.png")
    # the fourth recipe: three layers' weights at 4 bits; its badges appear on the graph
    narrowed = [line.split(": w")[0] for line in pts["text"][3].split("<br>") if line.endswith("w4")]
    assert len(narrowed) == 3
    dash_duo.driver.execute_script(_CLICK, 3)
    wait_for(lambda: sum(v.startswith("w4") for v in badge_texts(dash_duo).values()) == 3,
             what=lambda: f"the recipe loaded; badges {badge_texts(dash_duo)}")
    assert {f"layer:{name}" for name in narrowed} <= {k for k, v in badge_texts(dash_duo).items() if v.startswith("w4")}
    click(dash_duo, "#undo")
    wait_for(lambda: not any(v.startswith("w4") for v in badge_texts(dash_duo).values()),
             what=lambda: f"undone; badges {badge_texts(dash_duo)}")

    # saving compute instead: the busiest conv (conv2, most MACs) is narrowed first, not fc1 (most weights)
    assert "fc1: w4" in pts["text"][1] and "conv2: w4" not in pts["text"][1]
    click(dash_duo, "#pareto-trade input[value='bops']")
    click(dash_duo, "#pareto-run")
    wait_for(lambda: (dash_duo.driver.execute_script(_POINTS) or {}).get("xtitle")
             == "bit-operations per example (millions)", timeout=180,
             what=lambda: f"the bit-ops search; {dash_duo.find_element('#pareto-status').text!r}")
    wait_for(lambda: "on the front" in dash_duo.find_element("#pareto-status").text, timeout=60,
             what=lambda: f"the bit-ops search done; {dash_duo.find_element('#pareto-status').text!r}")
    ops = dash_duo.driver.execute_script(_POINTS)
    assert "conv2: w4" in ops["text"][1] and "fc1: w4" not in ops["text"][1]
    assert abs(ops["x"][0] - 21.6) < 0.05      # all 8-bit: 21.6 M bit-ops
    assert ops["x"] == sorted(ops["x"], reverse=True)
