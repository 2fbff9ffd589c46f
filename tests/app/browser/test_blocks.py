"""Blocks in the app (issue 16.3): runs of layers drawn as one node each, opened
with expand, closed with collapse all, in either view; a closed block carries the
range of its layers' bits and lists its layers in the panel."""

from qviz.app.session import Session
from qviz.samples import sample_path

from .helpers import badge_texts, click, click_node, needs_browser, shot, start_app, text_of, wait_for, wait_idle

pytestmark = needs_browser


def _keys(dash_duo):
    return set(dash_duo.driver.execute_script(
        "const g = document.querySelector('#graph .js-plotly-plot'); if (!g || !g.data) return [];"
        "const t = g.data.find(d => d.name === 'nodes'); return t ? t.customdata : [];"))


def test_blocks_close_open_and_summarize_their_layers(dash_duo):
    import qviz

    blocks = Session(qviz.load(sample_path("lenet_digits")), "lenet").blocks
    conv2 = next(b for b in blocks if "conv2" in b.layers)
    start_app(dash_duo)
    click(dash_duo, "#bulk-fold-all")
    click(dash_duo, "#bulk-all-8")
    wait_for(lambda: "layer:conv2" in badge_texts(dash_duo), what="the 8-bit recipe drawn")
    layers_drawn = _keys(dash_duo)

    click(dash_duo, "#blocks-button")
    wait_for(lambda: _keys(dash_duo) == {f"block:{b.id}" for b in blocks}, what=lambda: f"blocks; {_keys(dash_duo)}")
    assert text_of(dash_duo, "#blocks-button") == "ungroup blocks"
    # a closed block's badge: the range of its layers' widths, and their folds
    assert badge_texts(dash_duo)[f"block:{conv2.id}"] == "w8a8+bn"

    # a layer in a closed block is found as its block; the panel lists the block's layers
    dash_duo.find_element("#search").send_keys("conv2\n")
    wait_for(lambda: "in block" in text_of(dash_duo, "#search-status"), what="search names the block")
    wait_for(lambda: f"block {conv2.label}" in text_of(dash_duo, "#node-panel"), what="the block's panel")
    panel = text_of(dash_duo, "#node-panel")
    assert all(layer in panel for layer in conv2.layers) and "w8a8+bn" in panel
    shot(dash_duo, "blocks.png")

    # expand opens the selected block into its layers; the others stay closed
    click(dash_duo, "#expand-button")
    wait_for(lambda: "layer:conv2" in _keys(dash_duo), what="the block opened")
    keys = _keys(dash_duo)
    assert {f"layer:{name}" for name in conv2.layers} - {"layer:bn2"} <= keys   # bn2 is folded: a ghost
    assert f"block:{conv2.id}" not in keys and len([k for k in keys if k.startswith("block:")]) == len(blocks) - 1

    # the op view keeps closed blocks closed, and draws the open one's ops
    click(dash_duo, "#view-mode input[value='op']")
    wait_for(lambda: any(k.startswith("op:") and "/conv2" in k for k in _keys(dash_duo)), what="conv2's ops")
    assert len([k for k in _keys(dash_duo) if k.startswith("block:")]) == len(blocks) - 1
    # closed blocks hide ops: the toolbar says so, and points at the button that ungroups them
    wait_for(lambda: f"{len(blocks) - 1} closed blocks hide their ops" in text_of(dash_duo, "#node-count"),
             what=lambda: f"the hint; {text_of(dash_duo, '#node-count')!r}")
    assert "hint" in dash_duo.find_element("#blocks-button").get_attribute("class")

    # collapse all closes every block; ungroup draws layers again
    click(dash_duo, "#view-mode input[value='layer']")
    wait_for(lambda: "hint" not in dash_duo.find_element("#blocks-button").get_attribute("class"),
             what="no hint in the layer view")
    click(dash_duo, "#collapse-all-button")
    wait_for(lambda: _keys(dash_duo) == {f"block:{b.id}" for b in blocks}, what="every block closed again")
    # two matches in one closed block are two items (both lead to the block)
    items = dash_duo.driver.execute_script("return document.querySelectorAll('#match-list .match-item').length;")
    assert items == 3, items
    click(dash_duo, "#blocks-button")
    wait_for(lambda: _keys(dash_duo) == layers_drawn, what="the layers drawn again")
    # the block that was selected is no longer drawn: its first layer is selected instead
    wait_for(lambda: f"layer {conv2.layers[0]}" in text_of(dash_duo, "#node-panel"),
             what=lambda: f"{conv2.layers[0]}'s panel; {text_of(dash_duo, '#node-panel')[:80]!r}")


_FRAMES = ("const g = document.querySelector('#graph .js-plotly-plot');"
           "return (g._fullLayout.annotations || []).map(a => a.text);")


def test_search_steps_through_hits_and_a_block_opens_and_closes_from_its_panel(dash_duo):
    import qviz

    blocks = Session(qviz.load(sample_path("lenet_digits")), "lenet").blocks
    first = blocks[0]
    start_app(dash_duo)
    # Enter again on the same text goes to the next hit, round to the first
    search = dash_duo.find_element("#search")
    search.send_keys("conv\n")
    wait_for(lambda: text_of(dash_duo, "#search-status") == "1 of 2 found (Enter: next)",
             what=lambda: f"the first hit; {text_of(dash_duo, '#search-status')!r}")
    wait_for(lambda: "layer conv1" in text_of(dash_duo, "#node-panel"), what="conv1 selected")
    search.send_keys("\n")
    wait_for(lambda: "layer conv2" in text_of(dash_duo, "#node-panel"), what="Enter: the next hit, conv2")
    assert text_of(dash_duo, "#search-status") == "2 of 2 found (Enter: next)"

    # grouped: the block's panel opens it; the opened block is framed and named; its button closes it
    click(dash_duo, "#blocks-button")
    wait_for(lambda: _keys(dash_duo) == {f"block:{b.id}" for b in blocks}, what="blocks")
    click_node(dash_duo, f"block:{first.id}")
    wait_for(lambda: text_of(dash_duo, ".block-toggle") == "open this block", what="the block's panel and its button")
    click(dash_duo, ".block-toggle")
    wait_for(lambda: "layer:conv1" in _keys(dash_duo), what="the block opened from its panel")
    wait_for(lambda: dash_duo.driver.execute_script(_FRAMES) == [f"block {first.label}"],
             what=lambda: f"the opened block framed; annotations {dash_duo.driver.execute_script(_FRAMES)}")
    wait_for(lambda: text_of(dash_duo, ".block-toggle") == "close this block", what="the button says close")
    shot(dash_duo, "block_opened.png")
    # a layer inside the opened block names it, and closes it
    click_node(dash_duo, "layer:conv1")
    wait_for(lambda: "layer conv1" in text_of(dash_duo, "#node-panel")
             and f"in block {first.label}" in text_of(dash_duo, "#node-panel"), what="conv1's panel names its block")
    click(dash_duo, ".block-toggle")
    wait_for(lambda: _keys(dash_duo) == {f"block:{b.id}" for b in blocks}, what="the block closed from a layer's panel")
    assert dash_duo.driver.execute_script(_FRAMES) == []
    # ungrouped, the panel's block line goes; a panel redrawn without its block button expands nothing
    click(dash_duo, "#blocks-button")
    wait_for(lambda: "layer:conv1" in _keys(dash_duo), what="ungrouped")
    wait_for(lambda: not dash_duo.find_element(".block-line").is_displayed(), what="the block line hidden")
    click_node(dash_duo, "layer:conv2")
    wait_for(lambda: "layer conv2" in text_of(dash_duo, "#node-panel"), what="conv2's panel")
    wait_idle(dash_duo)
    assert not any(k.startswith("op:") for k in _keys(dash_duo)), "a layer was expanded nobody asked to"
