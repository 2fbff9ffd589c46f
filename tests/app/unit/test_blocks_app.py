"""Blocks in the app's services (issue 16.3): what the page relies on when a layer is
inside a closed block — it is found, selected, expanded and saved through its block;
what the page sends about blocks is checked."""

import pytest

import qviz
from qviz.app import navigation, services
from qviz.app.services import START_RECIPE, ViewChoice
from qviz.app.session import Session
from qviz.app.url_state import PageState, PageStateError, page_location, parse_page_hash
from qviz.samples import sample_path


@pytest.fixture(scope="module")
def session():
    return Session(qviz.load(sample_path("lenet_digits")), "lenet_digits")


def _grouped(session, **kw):
    return services.draw_view(session, START_RECIPE, ViewChoice(blocks=True, **kw))


def test_a_layer_in_a_closed_block_is_found_selected_expanded_and_saved_through_it(session):
    view = _grouped(session)
    block = next(b for b in session.blocks if "conv2" in b.layers)
    key = f"block:{block.id}"
    # search: an exact name, and part of a name (the block's label need not contain it)
    assert navigation.search(view.graph, "conv2")[0] == [key]
    assert key in navigation.search(view.graph, "relu")[0]
    # a layer selected elsewhere (a chart, a link) is drawn selected as its block
    assert services.drawn_key(view, session.graph, "layer:conv2") == key
    # expand on it opens the block
    assert navigation.with_expanded({"opened": []}, "layer:conv2", view.graph)["opened"] == [block.id]
    # the selection's image: the block and its neighbours
    name, svg = services.graph_svg_file(session, START_RECIPE, ViewChoice(blocks=True), around_layer="conv2", hops=1)
    assert "<svg" in svg and "<rect" in svg and "around conv2" in svg


def test_forged_or_stale_block_ids_cost_no_new_layout(session):
    base = _grouped(session)
    assert _grouped(session, opened=("999", "nope")) is base                 # ids the model lacks
    flat = services.draw_view(session, START_RECIPE, ViewChoice())
    assert services.draw_view(session, START_RECIPE, ViewChoice(opened=("1",))) is flat   # not grouped


def test_the_link_keeps_grouping_and_opened_blocks_and_refuses_bad_values():
    query, fragment = page_location(PageState("lenet_digits", blocks=False, opened=("2",)))
    back = parse_page_hash(fragment, query)
    assert back.blocks is False and back.opened == ()          # nothing is open when not grouped
    assert parse_page_hash(page_location(PageState("m"))[1] or "#v=op").blocks is None   # the model's default
    for bad, why in (("#g=2", "g= must be one of"), ("#o=" + ",".join(map(str, range(1001))), "at most 1000"),
                     ("#g=1&g=0", "g= 2 times")):
        with pytest.raises(PageStateError, match=why):
            parse_page_hash(bad)
