"""Recipes (JSON in and out, errors naming the field), qviz.apply, and the CLI around them."""

import json

import numpy as np
import pytest

import qviz
from qviz.samples import data_for
from qviz import LayerBits, Recipe, RecipeError
from qviz.cli import main
from qviz.ir.ops import FAKE_QUANT_OPS
from qviz import runtime

ISSUE_EXAMPLE = {
    "fold": {"default": True, "layers": {"conv2": False}},
    "quantize": {"default": {"weight_bits": 8, "activation_bits": 8},
                 "layers": {"conv1": {"weight_bits": 4, "activation_bits": 8}, "logits": None}},
    "options": {"narrow_range": True, "symmetric": False, "per_channel": False},
}


@pytest.fixture(scope="module")
def lenet(samples):
    return qviz.load(samples["lenet_digits"])


def test_recipe_json_round_trip():
    r = Recipe.from_dict(ISSUE_EXAMPLE)
    assert Recipe.from_json(r.to_json()) == r
    assert r.to_dict()["quantize"]["layers"]["logits"] is None
    assert r.bits("conv1") == LayerBits(4, 8) and r.bits("fc1") == LayerBits(8, 8)
    assert not r.folds("conv2") and r.folds("conv1")


@pytest.mark.parametrize("bad,field", [
    ({"fold": {"default": "yes"}}, "fold.default"),
    ({"fold": {"layers": {"conv1": 1}}}, "fold.layers.conv1"),
    ({"quantize": {"layers": {"conv1": {"weight_bits": 1}}}}, "quantize.layers.conv1.weight_bits"),
    ({"quantize": {"default": {"activation_bits": "8"}}}, "quantize.default.activation_bits"),
    ({"quantize": {"default": {"bits": 8}}}, "quantize.default.bits"),
    ({"options": {"per_channel": 1}}, "options.per_channel"),
    ({"options": {"ema_decay": 2}}, "options.ema_decay"),
    ({"folds": {}}, "folds"),
    ([], ""),
])
def test_bad_recipes_name_the_field(bad, field):
    with pytest.raises(RecipeError) as info:
        Recipe.from_dict(bad)
    assert str(info.value).startswith(field + ":") or (not field and "must be an object" in str(info.value))
    assert "\n" not in str(info.value)


def test_recipe_validated_against_the_graph(lenet):
    with pytest.raises(RecipeError, match=r"^quantize.layers.conv9: no such layer"):
        qviz.apply(lenet, Recipe(quantize_layers={"conv9": LayerBits()}))
    with pytest.raises(RecipeError, match=r"^quantize.layers.relu1: not a Conv2D"):
        qviz.apply(lenet, Recipe(quantize_layers={"relu1": LayerBits()}))
    with pytest.raises(RecipeError, match=r"^fold.layers.logits: this layer has no batch norm"):
        qviz.apply(lenet, Recipe(fold_layers={"logits": True}))
    with pytest.raises(RecipeError, match="not valid JSON"):
        Recipe.from_json("{")
    # rules alone (written by hand): the layers are what applies, and there are none
    with pytest.raises(RecipeError, match=r"^rules: the recipe has rules but no layers: .* --rules-from"):
        qviz.apply(lenet, Recipe.from_json('{"rules": ["*: w4a8"]}'))


def test_default_recipe_lists_every_layer(lenet):
    r = Recipe.default(lenet)
    assert dict(r.fold_layers) == {"conv1": True, "conv2": True, "fc1": True}
    assert list(r.quantize_layers) == ["conv1", "conv2", "fc1", "logits"]


def test_apply_is_pure_and_reports(lenet):
    before = lenet.to_graph_def().SerializeToString()
    recipe = Recipe.from_dict(ISSUE_EXAMPLE)
    own = data_for(lenet).apply_kwargs()
    a, b = qviz.apply(lenet, recipe, **own), qviz.apply(lenet, recipe, **own)
    assert lenet.to_graph_def().SerializeToString() == before
    assert a.graph.to_graph_def().SerializeToString() == b.graph.to_graph_def().SerializeToString()
    layers = {n.layer for n in a.graph.nodes}
    assert "bn2" in layers and "bn1" not in layers and "bn3" not in layers   # conv2's fold is off
    fq_layers = {n.layer for n in a.graph.nodes if n.op in FAKE_QUANT_OPS}
    assert "logits" not in fq_layers and {"conv1", "conv2", "fc1"} <= fq_layers
    bits = {n.name: n.attrs["num_bits"] for n in a.graph.nodes if n.op in FAKE_QUANT_OPS}
    assert [v for k, v in bits.items() if "conv1_1/weights_quant" in k] == [4]
    rep = a.report
    assert rep.examples == 450 and rep.accuracy_before > 0.99 and rep.accuracy > 0.97
    assert 0 < rep.rel_err < 0.5 and rep.sqnr_db > 10
    by_layer = {e.layer: e for e in rep.layers}
    assert by_layer["conv1"].sqnr_db > 10, "conv1 (folded) must be compared with bn1's output"
    # the combined diff is against the original: both passes' additions are "added", except
    # what the second removed again (a folded bias replaced by its int32-grid copy)
    assert (set(a.folded.changes.added) | set(a.quantized.changes.added)) - set(a.quantized.changes.removed) \
        == set(a.changes.added)
    assert any(name.endswith("bias_int32_grid") for name in a.changes.added)
    assert not set(a.changes.added) & set(a.changes.modified)


def test_float_recipe_with_folding_only_is_exact(lenet):
    res = qviz.apply(lenet, Recipe(quantize_default=None), **data_for(lenet).apply_kwargs())
    assert res.report.rel_err < 1e-5 and res.report.accuracy == res.report.accuracy_before
    assert not any(n.op in FAKE_QUANT_OPS for n in res.graph.nodes)


def test_accuracy_falls_with_bits(lenet):
    acc = {}
    for w, a in ((8, 8), (4, 4), (2, 2)):
        recipe = Recipe(quantize_default=LayerBits(w, a))
        acc[w, a] = qviz.apply(lenet, recipe, **data_for(lenet).apply_kwargs()).report.accuracy
    assert acc[8, 8] > 0.99 and acc[8, 8] >= acc[4, 4] > acc[2, 2]
    assert acc[2, 2] < 0.5


def test_cli_recipe_then_apply(samples, tmp_path, capsys):
    model = str(samples["resnet_block"])
    assert main(["recipe", model, "--weight-bits", "4"]) == 0
    recipe = json.loads(capsys.readouterr().out)
    assert recipe["quantize"]["layers"]["conv1"] == {"weight_bits": 4, "activation_bits": 8}
    (tmp_path / "r.json").write_text(json.dumps(recipe))
    out, report, sm = tmp_path / "out.pb", tmp_path / "rep.json", tmp_path / "sm"
    assert main(["apply", model, "--recipe", str(tmp_path / "r.json"), "-o", str(out),
                 "--report", str(report), "--saved-model", str(sm)]) == 0
    text = capsys.readouterr().out
    assert "SQNR" in text and "ops added" in text
    rewritten = qviz.load(out)
    assert any(n.op == "FakeQuantWithMinMaxVars" and n.attrs["num_bits"] == 4 for n in rewritten.nodes)
    assert json.loads(report.read_text())["report"]["examples"] == 16
    x = np.random.default_rng(0).normal(size=(2, 16, 16, 3)).astype(np.float32)
    np.testing.assert_allclose(runtime.run(qviz.load(sm), x)[0], runtime.run(rewritten, x)[0], rtol=1e-5, atol=1e-6)


def test_cli_apply_errors_are_one_line(samples, tmp_path, capsys):
    model = str(samples["lenet_digits"])
    (tmp_path / "bad.json").write_text('{"quantize": {"layers": {"conv9": null}}}')
    assert main(["apply", model, "--recipe", str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"qviz: error: --recipe {tmp_path / 'bad.json'}: quantize.layers.conv9: no such layer in the graph"
    assert main(["apply", model, "--recipe", str(tmp_path / "missing.json")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


@pytest.mark.zoo
def test_cli_apply_on_a_keras_applications_saved_model(tmp_path, capsys, mobilenet_v2_saved_model):
    sm = str(mobilenet_v2_saved_model)
    assert main(["recipe", sm]) == 0
    (tmp_path / "r.json").write_text(capsys.readouterr().out)
    assert main(["apply", sm, "--recipe", str(tmp_path / "r.json"),
                 "-o", str(tmp_path / "o.pb")]) == 0
    g = qviz.load(tmp_path / "o.pb")
    assert sum(n.op.startswith("FakeQuant") for n in g.nodes) > 100
    assert "Rsqrt" not in g.op_counts()


def test_a_recipe_pickles_as_itself():
    """Recipes travel to and from worker processes (a mixed-precision front holds one per point)."""
    import pickle

    r = Recipe.from_dict({"fold": {"default": True, "layers": {"conv2": False}},
                          "quantize": {"default": {"weight_bits": 8, "activation_bits": 8},
                                       "layers": {"conv1": {"weight_bits": 4, "activation_bits": 8}}},
                          "options": {"per_channel": True}})
    back = pickle.loads(pickle.dumps(r))
    assert back == r and back.bits("conv1") == r.bits("conv1") and back.per_channel


def test_the_change_line_counts_the_weight_quantizers_apart():
    """Quantizing weights adds a FakeQuant on each layer's constants, which the op view does
    not draw (the badge shows the bits): the line said "0 ops added" for a w4 layer, and
    "9 ops added" where the rewritten graph had 14 FakeQuants."""
    from qviz.samples import sample_path

    g = qviz.load(sample_path("lenet_digits"))
    only_weights = qviz.apply(g, qviz.Recipe(quantize_default=None, quantize_layers={"conv2": LayerBits(4, None)}),
                              report=False)
    assert only_weights.change_summary().endswith("(not counting constants), and 1 weight quantizer added")
    every = qviz.apply(g, qviz.Recipe().with_preset("all-8", g), report=False)
    line = every.change_summary()
    drawn, weights = int(line.split(" ops added")[0]), int(line.split("and ")[1].split(" weight")[0])
    assert drawn + weights == sum(1 for n in every.graph.nodes if n.op in FAKE_QUANT_OPS)


def test_a_recipe_that_is_not_one_and_nan_calibration_are_qviz_errors(samples):
    """apply(g, {...}) raised AttributeError; NaN calibration data, "math domain error"."""
    from qviz.passes.calibration import CalibrationError

    g = qviz.load(samples["lenet_digits"])
    with pytest.raises(RecipeError, match=r"Recipe.from_dict or Recipe.from_json for a dict"):
        qviz.apply(g, {"fold": {}})
    with pytest.raises(CalibrationError, match=r"NaN or inf in the calibration inputs"):
        qviz.apply(g, Recipe.default(g), calibration=np.full((4, 8, 8, 1), np.nan, np.float32))


def test_a_fold_asked_by_name_that_cannot_be_done_says_why():
    """A conv whose output feeds its batch norm and an Add: asked by name, the fold was
    dropped without a word ("0 ops added", nothing skipped)."""
    import keras

    i = keras.Input((8, 8, 1))
    c = keras.layers.Conv2D(4, 3, padding="same", name="c_shared")(i)
    a = keras.layers.Add(name="add")([keras.layers.BatchNormalization(name="bn")(c), c])
    g = qviz.load(keras.Model(i, keras.layers.Dense(2, name="fc")(keras.layers.Flatten()(a))))
    result = qviz.apply(g, Recipe.from_dict({"fold": {"layers": {"c_shared": True}}}), report=False)
    (skipped,) = result.skipped
    assert skipped.layer == "bn" and "also feeds" in skipped.reason and "add" in skipped.reason


def test_apply_takes_verification_data_as_it_takes_calibration_data(lenet):
    """A bare array for verification raised RunError ("450 array(s) were given"); calibration
    alone verified on noise (2 dB where the data gives 37); 10 labels for 450 examples read
    0% accuracy; a path for the graph raised AttributeError."""
    from qviz.ir import GraphError
    from qviz.runtime import RunError
    from qviz.samples import sample_data

    d, recipe = sample_data("lenet_digits"), Recipe.default(lenet)
    bare = qviz.apply(lenet, recipe, calibration=d["x_calib"], verification=d["x_test"], labels=d["y_test"]).report
    listed = qviz.apply(lenet, recipe, calibration=[d["x_calib"]], verification=[d["x_test"]], labels=d["y_test"]).report
    assert bare.examples == listed.examples == 450 and bare.sqnr_db == listed.sqnr_db > 30
    assert qviz.apply(lenet, recipe, calibration=d["x_calib"]).report.examples == len(d["x_calib"])
    with pytest.raises(RunError, match="10 labels for 450 examples"):
        qviz.apply(lenet, recipe, calibration=d["x_calib"], verification=d["x_test"], labels=d["y_test"][:10])
    with pytest.raises(RunError, match="no examples to verify on"):   # (a bare ValueError of max())
        qviz.apply(lenet, recipe, calibration=d["x_calib"], verification=d["x_test"][:0])
    with pytest.raises(GraphError, match=r"apply takes a qviz.Graph \(qviz.load\(path\) first\), not a str"):
        qviz.apply("model.keras", recipe)
