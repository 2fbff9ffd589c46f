"""Rules choose layers by name, op type or pattern; later ones win; the recipe keeps
them; the rewrite then does what they resolved to (checked on the graph's own fake quants)."""

from dataclasses import replace

import pytest

import qviz
from qviz.cli import main
from qviz.ir.ops import FAKE_QUANT_OPS
from qviz.passes import LayerBits, Recipe, RecipeError, apply_rules


@pytest.fixture(scope="module")
def block(samples):
    return qviz.load(samples["mobilenet_block"])


def test_rules_resolve_in_order_by_op_type_name_and_pattern(block):
    r = apply_rules(Recipe(fold_default=False, quantize_default=None),
                    ["*: w8a8", "op=DepthwiseConv2dNative: w4", "pattern=conv_bn & name~^(dw|project)$: fold",
                     "name~logits: float"], block)
    assert r.bits("stem_conv") == LayerBits(8, 8) and r.bits("dw") == LayerBits(4, 8)
    assert r.bits("logits") is None and r.bits("residual") == LayerBits(8, 8)   # the bypass Add too
    assert (r.folds("stem_conv"), r.folds("dw"), r.folds("project")) == (False, True, True)
    later = apply_rules(r, ["name~dw: w2"], block)   # a later rule wins, and only where it says
    assert later.bits("dw") == LayerBits(2, 8) and later.bits("stem_conv") == LayerBits(8, 8)


def test_between_selects_a_residual_block_branches_and_bypass_alike(samples, capsys):
    g = qviz.load(samples["resnet_block"])
    # from the block's input to its Add: both convs of the branch, and the stem relu that bypasses them
    r = apply_rules(Recipe.default(g), ["between=stem_relu..add1: w4a6"], g)
    assert {layer for layer in g.layers if r.bits(layer) == LayerBits(4, 6)} == {"conv1", "conv2", "add1"}
    assert r.bits("stem_conv") == r.bits("conv3") == LayerBits(8, 8)   # outside the block: unchanged
    chosen = apply_rules(Recipe(fold_default=False), ["between=conv1..relu2: fold"], g)
    assert [layer for layer in g.layers if chosen.folds(layer)] == ["conv1", "conv2"]
    assert main(["recipe", str(samples["resnet_block"]), "--rule", "between=conv3..add2 & op=Conv2D: w3"]) == 0
    r = Recipe.from_json(capsys.readouterr().out)
    assert [layer for layer in g.layers if (r.bits(layer) or LayerBits(0, 0)).weight_bits == 3] == ["conv3"]


def test_the_rewrite_quantizes_what_the_rules_resolved_to(block):
    r = apply_rules(Recipe.default(block), ["op=DepthwiseConv2dNative: w4a6"], block)
    graph = qviz.apply(block, r, report=False).graph
    dw = next(n for n in graph.nodes if n.op == "DepthwiseConv2dNative")
    weights = graph.producer(dw.inputs[1])
    assert weights.op in FAKE_QUANT_OPS and weights.attrs["num_bits"] == 4
    outputs = [n for n in graph.nodes if n.op in FAKE_QUANT_OPS and n.layer in ("dw", "dw_relu")
               and n is not weights]
    assert {n.attrs["num_bits"] for n in outputs} == {6}


def test_the_recipe_keeps_its_rules_and_a_recipe_without_rules_is_written_as_before(block):
    r = apply_rules(Recipe.default(block), ["name~^stem: w4a8"], block)
    back = Recipe.from_json(r.to_json())
    assert back == r and back.rules == ("name~^stem: w4a8",) and back.bits("stem_conv") == LayerBits(4, 8)
    assert "rules" not in Recipe.default(block).to_dict()   # older qviz reads these unchanged
    for preset in ("all-8", "first-last-8-rest-4", "float"):   # it overwrote what the rules chose
        assert r.with_preset(preset, block).rules == ()
    assert r.with_preset("fold-all", block).rules == r.rules     # bits only: it still applies
    both = apply_rules(Recipe.default(block), ["name~^stem: w4a8, nofold"], block)
    assert both.with_preset("all-8", block).rules == ("name~^stem: nofold",)
    assert not both.with_preset("all-8", block).folds("stem_conv")
    with pytest.raises(RecipeError, match=r"rules: must be a list"):
        Recipe.from_dict({"rules": "name~x: w4"})
    with pytest.raises(RecipeError, match=r"rule 'name~x w4': expected SELECTORS: ACTIONS"):
        Recipe.from_dict({"rules": ["name~x w4"]})


@pytest.mark.parametrize("rule, says", [
    ("name~stem: w17", "w17: widths must be between 2 and 16 bits"),
    ("name~stem: w4, float", "float and bit widths contradict each other"),
    ("name~stem: fold, nofold", "fold and nofold contradict each other"),
    ("name~stem: w4a8, w2", "two weight widths (4 and 2) contradict each other"),
    ("name~stem: w4a8x", "'w4a8x' is not an action"),
    ("pattern=conv_bnn: fold", "no built-in pattern 'conv_bnn'"),
    ("name~image: fold", "none of its 1 layers has a batch norm to fold"),
    ("name~stem_relu: w8a8", "none of its 1 layers can be quantized"),
    ("op=Conv3D: w8a8", "selects no layer of this model"),
    ("between=dw..stem_conv: w4", "no path leads from layer dw to layer stem_conv"),
    ("between=dw..nowhere: w4", "between=: no layer named 'nowhere' in this model"),
    ("between=dw: w4", "between= takes two layer names, A..B"),
])
def test_a_rule_that_cannot_apply_is_one_line_naming_it(block, rule, says):
    with pytest.raises(RecipeError) as err:
        apply_rules(Recipe(), [rule], block)
    assert says in str(err.value) and str(err.value).startswith(f"rule {rule!r}") and "\n" not in str(err.value)


def test_qviz_recipe_takes_rules(samples, capsys):
    assert main(["recipe", str(samples["lenet_digits"]), "--rule", "name~^conv: w4a8", "--rule", "name~fc1: float"]) == 0
    r = Recipe.from_json(capsys.readouterr().out)
    assert r.bits("conv2") == LayerBits(4, 8) and r.bits("fc1") is None and r.bits("logits") == LayerBits(8, 8)
    assert main(["recipe", str(samples["lenet_digits"]), "--rule", "name~(: w4"]) == 2
    assert "rule 'name~(: w4': name~( is not a regular expression" in capsys.readouterr().err


def test_a_recipes_rules_carry_over_to_another_model(samples, tmp_path, capsys):
    block = qviz.load(samples["mobilenet_block"])
    made = apply_rules(Recipe.default(block), ["op=DepthwiseConv2dNative: w4", "name~^stem: w6a8"], block)
    saved = tmp_path / "block_recipe.json"
    saved.write_text(made.to_json())
    # resnet_block has no depthwise conv: the first carried rule is refused, naming itself
    assert main(["recipe", str(samples["resnet_block"]), "--rules-from", str(saved)]) == 2
    assert "rule 'op=DepthwiseConv2dNative: w4': selects no layer of this model" in capsys.readouterr().err
    assert main(["recipe", str(samples["mobilenet_block"]), "--rules-from", str(saved), "--rule", "name~dw: w3"]) == 0
    again = Recipe.from_json(capsys.readouterr().out)
    assert again.rules == (*made.rules, "name~dw: w3")
    assert again.bits("dw") == LayerBits(3, 8) and again.bits("stem_conv") == LayerBits(6, 8)
    # the recipe's options and default widths come too (they are not the model's): per-channel
    # weights at 6 bits by default stay so for the next model, unless the command says otherwise
    saved.write_text(replace(made, per_channel=True, ema_decay=0.9, quantize_default=LayerBits(6, 8)).to_json())
    assert main(["recipe", str(samples["mobilenet_block"]), "--rules-from", str(saved)]) == 0
    carried = Recipe.from_json(capsys.readouterr().out)
    assert carried.per_channel and carried.ema_decay == 0.9 and carried.quantize_default == LayerBits(6, 8)
    assert carried.bits("project") == LayerBits(6, 8) and carried.bits("dw") == LayerBits(4, 8)
    saved.write_text(replace(made, quantize_default=LayerBits(6, 4)).to_json())
    assert main(["recipe", str(samples["mobilenet_block"]), "--rules-from", str(saved), "--weight-bits", "8"]) == 0
    assert Recipe.from_json(capsys.readouterr().out).bits("project") == LayerBits(8, 4)   # each width its own
    saved.write_text(Recipe.default(block).to_json())
    assert main(["recipe", str(samples["mobilenet_block"]), "--rules-from", str(saved)]) == 2
    assert "the recipe has no rules to carry over" in capsys.readouterr().err


def test_a_backtracking_regex_is_answered_not_run_for_hours(monkeypatch):
    from qviz.passes import rules

    names = ["block_16_depthwise_relu_expand_xxxxxxxxxxxxxxxx"] * 200
    # (.*.*)*! takes Python's re minutes on one such name; the rules' engine answers at once
    assert rules._named(names, "(.*.*)*!", "name~(.*.*)*!: w4") == set()

    class Slow:   # an engine that does run out of time: the rule says so, naming itself
        def search(self, name, timeout):
            raise TimeoutError("regex timed out")

    monkeypatch.setattr(rules.regex, "compile", lambda pattern: Slow())
    with pytest.raises(RecipeError, match=r"rule 'name~\(x\+\)\+y: w4': name~\(x\+\)\+y takes over 1 s to match"):
        rules._named(names, "(x+)+y", "name~(x+)+y: w4")


def test_between_follows_data_not_control_edges():
    import numpy as np

    from qviz.ir import Graph, Node
    from qviz.passes.rules import parse_rule

    f32 = {"T": np.dtype("float32")}
    g = Graph([Node("x", "Placeholder", attrs={"dtype": np.dtype("float32")}, layer="a"),
               Node("a/out", "Relu", ["x"], f32, layer="a"),
               Node("y", "Placeholder", attrs={"dtype": np.dtype("float32")}, layer="s"),
               Node("s/out", "Relu", ["y"], f32, layer="s", control_inputs=["a/out"]),   # after a, reads no data of it
               Node("b/out", "Relu", ["s/out"], f32, layer="b")])
    with pytest.raises(RecipeError, match="no path leads from layer a to layer b"):
        parse_rule("between=a..b: w4").layers(g)
    assert parse_rule("between=s..b: w4").layers(g) == {"s", "b"}
    with pytest.raises(RecipeError, match="no split of it names two layers"):
        parse_rule("between=a..c..d: w4").layers(g)


def test_a_hand_edit_after_rules_is_recorded_so_the_rules_still_make_the_layers(block):
    from qviz.app.services import rules_line, set_layer

    base = Recipe(fold_default=False)
    recipe = apply_rules(base, ["*: w8a8", "name~conv$: w4, fold"], block)
    conv, dense = "stem_conv", "logits"
    for layer, field, value in ((conv, "fold", False), (conv, "weight_bits", "float"),
                                (dense, "activation_bits", "6"), (dense, "weight_bits", "3")):
        recipe = set_layer(recipe, layer, field, value)
    assert recipe.bits(conv) == LayerBits(None, 8) and recipe.bits(dense).activation_bits == 6
    remade = apply_rules(base, recipe.rules, block)
    assert [(layer, remade.folds(layer), remade.bits(layer)) for layer in block.layers] == \
        [(layer, recipe.folds(layer), recipe.bits(layer)) for layer in block.layers]
    assert f"name~^{conv}$: nofold" in rules_line(recipe)
    plain = set_layer(Recipe.default(block), conv, "weight_bits", "4")   # no rules: none recorded
    assert plain.rules == () and plain.bits(conv).weight_bits == 4
