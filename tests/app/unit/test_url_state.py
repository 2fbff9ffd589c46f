"""The URL fragment a page writes is read back to the same state; a hostile one is one
line, never a zip bomb or a crash."""

import base64
import zlib

import pytest

import qviz
from qviz.app.url_state import MAX_RECIPE_BYTES, PageState, PageStateError, page_location, parse_page_hash
from qviz.passes import LayerBits


def test_round_trip_of_every_field(samples):
    g = qviz.load(samples["mobilenet_block"])
    recipe = qviz.Recipe.default(g).with_bits("dw", LayerBits(4, 8))
    state = PageState("mobilenet_block", "op", "original", "TB", "op:mobilenet_block_1/dw_1/depthwise", recipe)
    query, fragment = page_location(state)
    assert parse_page_hash(fragment, query) == state
    assert page_location(PageState("lenet_digits")) == ("?m=lenet_digits", "")     # defaults left out
    assert parse_page_hash("") is None and parse_page_hash("#") is None


def _bomb() -> str:
    packed = zlib.compress(b" " * (MAX_RECIPE_BYTES * 4), 9)
    return base64.urlsafe_b64encode(packed).decode().rstrip("=")


@pytest.mark.parametrize("fragment, words", [
    ("#v=op&v=layer", "gives v= 2 times"),
    ("#v=sideways", "v= must be one of layer, op, not 'sideways'"),
    ("#c=%3Cscript%3Ealert(1)%3C/script%3E", "c= must be one of"),     # colour-by: the built-in metrics only
    ("#c=my_painted_file.json", "not 'my_painted_file.json'"),           # a file painted stays with its page
    ("#c=" + "x" * 5000, "c= must be one of"),
    ("#y=1&m=a", "fields qviz does not know: m, y"),
    ("#r=" + _bomb(), "inflates past 2 MB"),
    ("#r=" + base64.urlsafe_b64encode(zlib.compress(b'{"fold": 3}')).decode(), "the link's recipe (r=): fold"),
    ("#r=" + base64.urlsafe_b64encode(zlib.compress(b"{" * 10)[:-3]).decode(), "not a deflated qviz recipe"),
    ("#" + "v=op&" * 40000, "qviz reads at most"),
])
def test_a_bad_fragment_is_one_line_naming_the_part(fragment, words):
    with pytest.raises(PageStateError) as err:
        parse_page_hash(fragment)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_expanded_layers_round_trip_and_a_link_expanding_too_many_is_refused():
    from qviz.app.url_state import MAX_EXPANDED, PageState, PageStateError, page_location, parse_page_hash

    state = PageState("lenet_digits", expanded=("conv2", "bn1", "a,b"))    # a name with a comma is not kept
    query, fragment = page_location(state)
    assert parse_page_hash(fragment, query).expanded == ("bn1", "conv2")
    with pytest.raises(PageStateError, match=f"expands {MAX_EXPANDED + 1} layers"):
        parse_page_hash("#x=" + ",".join(f"l{i}" for i in range(MAX_EXPANDED + 1)))
