"""A pattern's matches followed through a rewrite: numbered on the float graph,
each with its fate, the skipped ones with the pass's reason (issue 18.5)."""

import qviz
from qviz.analysis.match_fates import match_fates
from qviz.passes import LayerBits, Recipe
from qviz.patterns import BUILTIN, parse

from tests.passes.test_fold import _keras_model

NO_FOLD = Recipe(fold_default=False)


def _apply(graph, recipe):
    return qviz.apply(graph, recipe, report=False)


def test_folding_keeps_every_match_with_its_number_and_says_what_was_folded(samples):
    g = qviz.load(samples["lenet_digits"])
    float_fates = match_fates(BUILTIN["conv_bn"], g, _apply(g, NO_FOLD))
    assert [(f.number, f.layers, f.fate) for f in float_fates] == [
        (1, ("conv1", "bn1"), "kept"), (2, ("conv2", "bn2"), "kept"), (3, ("fc1", "bn3"), "kept")]

    one = _apply(g, Recipe(fold_default=False, fold_layers={"conv2": True}))
    fates = match_fates(BUILTIN["conv_bn"], g, one)
    assert [(f.number, f.root) for f in fates] == [(f.number, f.root) for f in float_fates]   # same numbers
    assert [f.fate for f in fates] == ["kept", "folded", "kept"]
    assert fates[1].reason == "bn2 folded into conv2"
    # the folded match is carried by conv2's ops, which are still in the rewritten graph
    assert fates[1].survivors and {one.graph.node(n).layer for n in fates[1].survivors} == {"conv2"}
    assert all(n in one.graph for f in fates for n in f.survivors)

    everything = _apply(g, Recipe.default(g))        # fold all, quantize all at 8 bits
    assert [f.fate for f in match_fates(BUILTIN["conv_bn"], g, everything)] == ["folded"] * 3


def test_quantizing_without_folding_marks_the_matches_quantized(samples):
    g = qviz.load(samples["lenet_digits"])
    result = _apply(g, Recipe(fold_default=False, quantize_default=LayerBits(8, 8)))
    fates = match_fates(BUILTIN["conv_bn"], g, result)
    assert [f.fate for f in fates] == ["quantized"] * 3
    assert fates[0].reason.startswith("fake-quantized")


def test_matches_made_by_the_rewrite_come_after_the_float_graphs(samples):
    g = qviz.load(samples["lenet_digits"])
    pattern = parse("FakeQuantWithMinMaxVars(*, *, *)")
    assert match_fates(pattern, g, _apply(g, NO_FOLD)) == []
    result = _apply(g, Recipe(fold_default=False, quantize_layers={"conv1": LayerBits(8, 8)}))
    fates = match_fates(pattern, g, result)
    assert fates and {f.fate for f in fates} == {"new"}
    assert [f.number for f in fates] == list(range(1, len(fates) + 1))


def test_a_batch_norm_the_fold_cannot_take_is_kept_with_the_reason():
    def build(L, x):
        a = L.Conv2D(4, 3, padding="same", name="conv_a")(x)
        shared = L.BatchNormalization(name="bn_shared")(a)        # conv_a also feeds the add
        b = L.Conv2D(4, 3, padding="same", name="conv_b")(x)
        return L.Add(name="add")([shared, a, L.BatchNormalization(name="bn_b")(b)])

    g = qviz.load(_keras_model(build))
    fates = {f.layers: f for f in match_fates(BUILTIN["conv_bn"], g, _apply(g, Recipe()))}
    assert fates[("conv_a", "bn_shared")].fate == "kept"
    assert "also feeds" in fates[("conv_a", "bn_shared")].reason
    assert fates[("conv_b", "bn_b")].fate == "folded"
