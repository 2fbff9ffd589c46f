"""Issue 19.2: per-layer error in two modes. Accumulated carries every earlier
layer's error in; local feeds each layer the float model's values, so a layer the
recipe did not touch is exact (to float round-off) however much error reaches it."""


import pytest

import qviz
from qviz.cli import main
from qviz.metrics.local import isolated, local_layer_errors
from qviz.metrics.report import layer_outputs
from qviz.passes import LayerBits, Recipe
from qviz.pipeline import report_for
from qviz.samples import data_for


def _modes(graph, recipe):
    data = data_for(graph)
    result = qviz.apply(graph, recipe, calibration=data.calibration, report=False)
    rep = report_for(graph, recipe, result, data.verification, local=True)
    return {e.layer: e.sqnr_db for e in rep.layers}, {e.layer: e.sqnr_db for e in rep.local_layers}, result


def test_only_the_quantized_layer_has_a_local_error(samples):
    g = qviz.load(samples["lenet_digits"])
    # conv2's weights at 3 bits, nothing else quantized or folded: one source of error
    recipe = Recipe(fold_default=False, quantize_default=None, quantize_layers={"conv2": LayerBits(3, None)})
    accumulated, local, _ = _modes(g, recipe)
    assert set(local) == set(accumulated)
    assert local["conv2"] == pytest.approx(accumulated["conv2"], abs=0.01) and local["conv2"] < 30
    after = ["bn2", "relu2", "pool", "flatten", "fc1", "logits"]
    # "exact": beyond 100 dB (the cut graph may pick another float kernel: round-off, ~130 dB)
    assert all(local[layer] > 100 for layer in local if layer != "conv2"), local
    assert all(accumulated[layer] < 40 for layer in after), accumulated      # they inherit it


def test_a_model_quantized_already_compared_with_itself_is_exact_in_both_modes(samples):
    """A graph qviz wrote, opened again and verified unchanged, read 35 dB local at its
    logits: its own quantizers (the model's, not the rewrite's) were counted as error."""
    g = qviz.load(samples["lenet_digits"])
    q = qviz.apply(g, Recipe.default(g), report=False).graph
    accumulated, local, _ = _modes(q, Recipe.default(q))
    assert set(local) == set(accumulated) and all(v == float("inf") for v in accumulated.values())
    assert all(v > 100 for v in local.values()), local


def test_each_quantizer_counts_once_for_the_layer_it_is_in(samples):
    g = qviz.load(samples["resnet_block"])
    recipe = Recipe.default(g).with_bits("conv1", LayerBits(2, 8))
    accumulated, local, result = _modes(g, recipe)
    assert local["conv1"] < 15 < local["conv2"] and accumulated["conv2"] < 15   # conv2 only inherits conv1's
    # add1 reads stem_relu's and conv2's rounded outputs and rounds nothing itself: those roundings are
    # stem_relu's and conv2's errors, not add1's
    assert local["add1"] > 100 and accumulated["add1"] < 20
    assert local["stem_conv"] == pytest.approx(accumulated["stem_conv"], abs=0.01)   # nothing upstream
    # the cut graph: every crossing between layers is a placeholder fed from the float model; a folded conv
    # hands on what its batch norm did
    dtypes = {t: "float32" for t in {*layer_outputs(g).values(), *(t for n in result.graph.nodes for t in n.inputs)}}
    cut = isolated(g, result.graph, dtypes, {"conv1": "bn1", "conv2": "bn2", "conv3": "bn3", "stem_conv": "stem_bn"})
    assert not cut.not_isolated
    assert layer_outputs(g)["bn1"] in cut.feeds.values()
    assert len(result.graph) < len(cut.graph) and g.nodes == qviz.load(samples["resnet_block"]).nodes


def test_without_a_layer_map_a_folded_conv_still_hands_on_its_batch_norms_output(samples):
    g = qviz.load(samples["lenet_digits"])
    recipe = Recipe.default(g, LayerBits(8, None))     # folded, weights at 8 bits, activations float
    rewritten = qviz.apply(g, recipe, report=False).graph
    # conv1's BiasAdd keeps its name but now computes bn1's output: it is not fed the old pre-BN value
    local = {e.layer: e.sqnr_db for e in local_layer_errors(g, rewritten)}
    assert local["relu1"] > 100 and local["conv2"] > 30 and local["conv1"] > 30, local


def test_the_report_and_cli_say_both(samples, tmp_path, capsys):
    g = qviz.load(samples["lenet_digits"])
    assert local_layer_errors(g, g) and all(e.sqnr_db > 100 for e in local_layer_errors(g, g))
    recipe = tmp_path / "r.json"
    recipe.write_text(Recipe.default(g, LayerBits(3, 8)).to_json())
    report = tmp_path / "report.json"
    assert main(["apply", str(samples["lenet_digits"]), "--recipe", str(recipe), "--local",
                 "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "lowest layer SQNR (accumulated, first 8 examples):" in out
    assert "lowest layer SQNR (local, each layer's own, first 8 examples):" in out
    import json

    written = json.loads(report.read_text())["report"]
    assert {e["layer"] for e in written["local_layers"]} == {e["layer"] for e in written["layers"]}
