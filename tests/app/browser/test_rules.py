"""Issue 19.3 in the app: a rule typed into the layers panel sets every layer it
selects, the graph's badges show what it resolved to, the rules applied are listed
in order, a bad rule is refused in one line, and undo takes a rule back."""

from selenium.webdriver.common.keys import Keys

from .helpers import badge_texts, click, needs_browser, shot, start_app, text_of, wait_for

pytestmark = needs_browser


def _type_rule(dash_duo, rule, enter=True):
    box = dash_duo.find_element("#rule-input")
    dash_duo.clear_input(box)
    box.send_keys(rule + (Keys.ENTER if enter else ""))
    if not enter:
        click(dash_duo, "#rule-apply")


def _badges(dash_duo):
    return {k.removeprefix("layer:"): v for k, v in badge_texts(dash_duo).items()}


def test_rules_set_layers_in_order_and_undo_takes_one_back(dash_duo):
    start_app(dash_duo)
    assert _badges(dash_duo) == {}          # a freshly opened model: nothing quantized
    _type_rule(dash_duo, "*: w8a8")
    wait_for(lambda: _badges(dash_duo) == {"conv1": "w8a8", "conv2": "w8a8", "fc1": "w8a8", "logits": "w8a8"},
             what=lambda: f"every layer at 8 bits; badges {_badges(dash_duo)}")
    _type_rule(dash_duo, "between=conv2..fc1: w4", enter=False)
    wait_for(lambda: _badges(dash_duo) == {"conv1": "w8a8", "conv2": "w4a8", "fc1": "w4a8", "logits": "w8a8"},
             what=lambda: f"conv2 to fc1 at 4 bits; badges {_badges(dash_duo)}")
    assert text_of(dash_duo, "#rules-applied") == "rules applied, in order: 1) *: w8a8 · 2) between=conv2..fc1: w4"
    weights = dash_duo.driver.execute_script(
        "const api = dash_ag_grid.getApi('layer-grid'); const out = {};"
        "api.forEachNode(n => { out[n.data.layer] = n.data.weight_bits; }); return out;")
    assert (weights["conv1"], weights["conv2"], weights["fc1"]) == ("8", "4", "4")   # the table agrees
    dash_duo.driver.execute_script("document.getElementById('rule-input').scrollIntoView({block: 'center'});")
    shot(dash_duo, "rules.png")

    _type_rule(dash_duo, "name~(: w4")
    wait_for(lambda: text_of(dash_duo, "#recipe-error").startswith("not applied: rule 'name~(: w4': name~( is not a"),
             what=lambda: f"the refusal; it reads {text_of(dash_duo, '#recipe-error')!r}")
    assert _badges(dash_duo)["conv2"] == "w4a8"     # nothing changed
    _type_rule(dash_duo, "between=fc1..conv1: fold")
    wait_for(lambda: "no path leads from layer fc1 to layer conv1" in text_of(dash_duo, "#recipe-error"),
             what=lambda: f"the refusal; it reads {text_of(dash_duo, '#recipe-error')!r}")

    click(dash_duo, "#undo")
    wait_for(lambda: _badges(dash_duo)["conv2"] == "w8a8", what=lambda: f"undone; badges {_badges(dash_duo)}")
    wait_for(lambda: text_of(dash_duo, "#rules-applied") == "rules applied, in order: 1) *: w8a8",
             what=lambda: f"one rule left; it reads {text_of(dash_duo, '#rules-applied')!r}")
    click(dash_duo, "#bulk-all-8")     # a preset overwrites what the rules chose: they are no longer listed
    wait_for(lambda: text_of(dash_duo, "#rules-applied") == "", what="the rules cleared by a preset")
