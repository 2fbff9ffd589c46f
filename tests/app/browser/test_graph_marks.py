"""Issue 19.1: what the recipe does to each layer is on the graph itself — a badge
per layer with its bits and fold, coloured by width — and a legend says what every
mark means."""

from qviz.render.figure import bits_color

from .helpers import needs_browser, set_cell, shot, start_app, wait_for

pytestmark = needs_browser

_BADGES = ("const g = document.querySelector('#graph .js-plotly-plot');"
           "const t = g && g.data ? g.data.find(d => d.name === 'bits') : null;"
           "if (!t) return {};"
           "const out = {}; t.customdata.forEach((k, i) => { out[k] = [t.text[i], t.textfont.color[i], t.visible]; });"
           "return out;")


def test_each_layers_bits_and_fold_are_on_the_graph_coloured_by_width(dash_duo):
    start_app(dash_duo)
    legend = dash_duo.find_element("#graph-legend").text
    for words in ("batch norm", "modified by the rewrite", "a match of the pattern", "w4a8", "TFLite refuses"):
        assert words in legend
    assert dash_duo.driver.execute_script(_BADGES) == {}, "the starting recipe changes nothing: no badges"
    for layer, col, value in (("conv1", "fold", True), ("conv1", "weight_bits", "8"),
                              ("conv2", "weight_bits", "4"), ("conv2", "activation_bits", "8")):
        set_cell(dash_duo, layer, col, value)
        # one edit at a time, as a person would (each is a step of the undo history)
        wait_for(lambda: dash_duo.driver.execute_script(
            "return dash_ag_grid.getApi('layer-grid').getRowNode(arguments[0]).data[arguments[1]];",
            layer, col) == value, what=f"{layer}.{col} = {value}")
    wait_for(lambda: dash_duo.driver.execute_script(_BADGES).get("layer:conv2", [""])[0] == "w4a8",
             what=lambda: f"conv2's badge; badges now {dash_duo.driver.execute_script(_BADGES)}")
    badges = dash_duo.driver.execute_script(_BADGES)
    assert badges["layer:conv1"] == ["w8+bn", bits_color(8), True]
    assert badges["layer:conv2"] == ["w4a8", bits_color(4), True]
    assert bits_color(8) != bits_color(4)
    assert "layer:relu1" not in badges and "layer:bn1" not in badges   # not quantized; folded away
    shot(dash_duo, "graph_badges.png")
    # zoomed out until the names cannot be read, the badges go with them
    dash_duo.driver.execute_script(
        "Plotly.relayout(document.querySelector('#graph .js-plotly-plot'),"
        " {'xaxis.range': [-500, 500], 'yaxis.range': [-300, 300]});")
    wait_for(lambda: dash_duo.driver.execute_script(_BADGES)["layer:conv2"][2] is False, what="badges hidden")
