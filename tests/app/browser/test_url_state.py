"""Issue 20.4: the URL carries the model, view, selection and recipe, so a reload
or a shared link restores what was on screen, and back/forward step through edits."""

from urllib.parse import parse_qs

import qviz
from qviz.app.url_state import PageState, page_location
from qviz.passes import LayerBits

from .helpers import badge_texts, choose, click, edit_cell, needs_browser, start_app, wait_for, wait_open

pytestmark = needs_browser

def _fragment(dash_duo) -> dict:
    return {k: v[0] for k, v in parse_qs(dash_duo.driver.execute_script("return location.hash").lstrip("#")).items()}


def test_reload_restores_the_page_and_back_steps_through_edits(dash_duo):
    start_app(dash_duo)
    edit_cell(dash_duo, "conv1", "fold", True)
    edit_cell(dash_duo, "conv2", "weight_bits", "4")
    dash_duo.find_element("#search").send_keys("conv2\n")
    wait_for(lambda: "layer conv2" in dash_duo.find_element("#node-panel").text, what="conv2 selected")
    wait_for(lambda: _fragment(dash_duo).get("sel") == "layer:conv2", what=lambda: f"the URL; {_fragment(dash_duo)}")
    assert dash_duo.driver.execute_script("return location.search") == "?m=lenet_digits"
    assert "r" in _fragment(dash_duo)
    want = {"layer:conv1": "+bn", "layer:conv2": "w4"}
    assert badge_texts(dash_duo) == want
    # a reload (the server still has the session; the page starts afresh) restores it all
    dash_duo.driver.refresh()
    wait_for(lambda: badge_texts(dash_duo) == want, timeout=60, what=lambda: f"the recipe back; {badge_texts(dash_duo)}")
    wait_for(lambda: "layer conv2" in dash_duo.find_element("#node-panel").text, what="conv2 selected again")
    # back: first the selection, then conv2's 4 bits (the browser's history outlives the reload)
    dash_duo.driver.back()
    wait_for(lambda: "click a node" in dash_duo.find_element("#node-panel").text, what="the selection undone")
    assert "sel" not in _fragment(dash_duo)
    assert badge_texts(dash_duo) == want
    dash_duo.driver.back()
    wait_for(lambda: badge_texts(dash_duo) == {"layer:conv1": "+bn"}, what=lambda: f"one edit back; {badge_texts(dash_duo)}")
    dash_duo.driver.forward()
    wait_for(lambda: badge_texts(dash_duo) == want, what=lambda: f"forward again; {badge_texts(dash_duo)}")


def test_a_shared_link_opens_its_model_view_and_recipe_and_a_bad_one_says_why(dash_duo):
    start_app(dash_duo)
    base = dash_duo.driver.current_url.split("?")[0].split("#")[0]
    g = qviz.load(qviz.samples.sample_path("mobilenet_block"))
    recipe = qviz.Recipe(fold_default=True, quantize_default=None).with_bits("dw", LayerBits(4, 8))
    dash_duo.driver.get("about:blank")     # a link opened afresh (not a jump within the page)
    dash_duo.driver.get(base + "".join(page_location(PageState("mobilenet_block", mode="op",
                                                               recipe=recipe.validate(g)))))
    wait_open(dash_duo, "mobilenet_block")
    wait_for(lambda: dash_duo.find_element("#view-mode input[value='op']").is_selected(), what="the op view")
    wait_for(lambda: "w4a8+bn" in badge_texts(dash_duo).values(), timeout=60,
             what=lambda: f"the link's recipe; badges {badge_texts(dash_duo)}")
    dash_duo.driver.get("about:blank")
    dash_duo.driver.get(base + "?m=lenet_digits#r=not-a-recipe")
    wait_for(lambda: "the link's recipe (r=) is not a deflated qviz recipe" in dash_duo.find_element("#alert").text,
             what=lambda: f"the alert; it reads {dash_duo.find_element('#alert').text!r}")
    assert "\n" not in dash_duo.find_element("#alert").text
    dash_duo.driver.get("about:blank")
    dash_duo.driver.get(base + "?m=no_such_model#v=op")
    wait_for(lambda: "the link names a model this server does not have: no_such_model"
             in dash_duo.find_element("#alert").text, what="the unknown model said")
    wait_open(dash_duo, "lenet_digits")      # and the page opens its default model


def _colour(dash_duo) -> str:
    return dash_duo.find_element("#color-by").text


def test_expanded_layers_and_the_colouring_are_in_the_link_and_come_back_on_reload(dash_duo):
    from .helpers import figure_nodes

    start_app(dash_duo)
    wait_for(lambda: figure_nodes(dash_duo) > 0, what="the graph")
    collapsed = figure_nodes(dash_duo)
    dash_duo.find_element("#search").send_keys("conv2\n")
    wait_for(lambda: "layer conv2" in dash_duo.find_element("#node-panel").text, what="conv2 selected")
    click(dash_duo, "#expand-button")
    wait_for(lambda: _fragment(dash_duo).get("x") == "conv2", what=lambda: f"x= in the URL; {_fragment(dash_duo)}")
    expanded = figure_nodes(dash_duo)
    assert expanded > collapsed                 # conv2 drawn as its ops
    choose(dash_duo, "#color-by", "fold status")
    wait_for(lambda: _fragment(dash_duo).get("c") == "fold status", what=lambda: f"c= in the URL; {_fragment(dash_duo)}")
    dash_duo.driver.refresh()
    wait_for(lambda: figure_nodes(dash_duo) == expanded, timeout=60,
             what=lambda: f"conv2 expanded again; {figure_nodes(dash_duo)} nodes drawn, not {expanded}")
    wait_for(lambda: "fold status" in _colour(dash_duo), what=lambda: f"the colouring back; menu reads {_colour(dash_duo)!r}")
    wait_for(lambda: "fold status" in dash_duo.find_element("#metric-legend").text,
             what="the graph painted by fold status again")
    click(dash_duo, "#collapse-all-button")
    wait_for(lambda: "x" not in _fragment(dash_duo), what=lambda: f"x= gone; {_fragment(dash_duo)}")


def test_another_model_picked_is_in_the_link_without_the_last_ones_selection(dash_duo):
    """A sample picked after edits and a selection: the link names it (a reload opens it, not
    the last model), and nothing of the last model is selected or said."""
    start_app(dash_duo)
    edit_cell(dash_duo, "conv2", "weight_bits", "4")
    dash_duo.find_element("#search").send_keys("conv2\n")
    wait_for(lambda: _fragment(dash_duo).get("sel") == "layer:conv2", what=lambda: f"the URL; {_fragment(dash_duo)}")
    choose(dash_duo, "#model-picker", "mobilenet_block")
    wait_open(dash_duo, "mobilenet_block")
    wait_for(lambda: dash_duo.driver.execute_script("return location.search") == "?m=mobilenet_block",
             what=lambda: f"the link naming mobilenet_block; it is {dash_duo.driver.current_url}")
    wait_for(lambda: "click a node" in dash_duo.find_element("#node-panel").text,
             what=lambda: f"no node selected; the panel reads {dash_duo.find_element('#node-panel').text[:120]!r}")
    assert "sel" not in _fragment(dash_duo) and "r" not in _fragment(dash_duo), _fragment(dash_duo)
    assert dash_duo.find_element("#search-status").text == ""
    dash_duo.driver.refresh()
    wait_open(dash_duo, "mobilenet_block")


def test_a_table_row_selected_in_the_last_model_is_not_selected_in_the_next(dash_duo):
    """lenet_digits' conv2 row selected (a click on its cell), then resnet_block picked, which
    has a conv2 too: no row is selected in its table (the grid kept rows by name, so the
    last model's selection showed on another layer), as no node is in its graph."""
    selected_rows = "return dash_ag_grid.getApi('layer-grid').getSelectedRows().map(r => r.layer);"
    start_app(dash_duo)
    dash_duo.driver.execute_script("dash_ag_grid.getApi('layer-grid').getRowNode('conv2').setSelected(true);")
    wait_for(lambda: dash_duo.driver.execute_script(selected_rows) == ["conv2"], what="conv2's row selected")
    choose(dash_duo, "#model-picker", "resnet_block")
    wait_open(dash_duo, "resnet_block")
    rows = "return dash_ag_grid.getApi('layer-grid').getDisplayedRowCount();"
    wait_for(lambda: dash_duo.driver.execute_script(rows) > 0
             and dash_duo.driver.execute_script(selected_rows) == [],
             what=lambda: f"no row selected; {dash_duo.driver.execute_script(selected_rows)} are")
    assert "click a node" in dash_duo.find_element("#node-panel").text


def test_a_link_to_a_sample_opens_that_sample_on_a_server_started_with_a_file(dash_duo):
    """``qviz serve model.keras`` then a link (or a reload) naming lenet_digits: the page
    opened the served model under a picker reading lenet_digits."""
    from qviz.app import create_app
    from qviz.samples import sample_path

    def table_layers(dash_duo):
        return dash_duo.driver.execute_script(
            "const api = dash_ag_grid.getApi('layer-grid'); const out = [];"
            "if (api) api.forEachNode(n => out.push(n.data.layer)); return out;")

    dash_duo.start_server(create_app(str(sample_path("resnet_block")), model_name="resnet_block", worker=False))
    wait_open(dash_duo, "resnet_block")
    base = dash_duo.driver.current_url.split("?")[0].split("#")[0]
    dash_duo.driver.get("about:blank")
    dash_duo.driver.get(base + "?m=lenet_digits")
    wait_open(dash_duo, "lenet_digits")
    wait_for(lambda: "conv1" in table_layers(dash_duo) and "stem_conv" not in table_layers(dash_duo),
             what=lambda: f"lenet's layers in the table; it lists {table_layers(dash_duo)[:6]}")
    assert "resnet_block" not in dash_duo.find_element("#model-status").text
