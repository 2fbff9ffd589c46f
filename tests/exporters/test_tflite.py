"""What qviz simulates is what TensorFlow Lite runs: every claim checked against
TF's own converter and interpreter."""

from dataclasses import replace

import numpy as np
import pytest

import qviz
from qviz.analysis.deployability import deployability
from qviz.cli import main
from qviz.exporters.tflite import TFLiteError, compare_with_device, convert, export_tflite
from qviz.passes import LayerBits
from qviz.ir.ops import FAKE_QUANT_OPS
from qviz.metrics import constant_output
from qviz.samples import data_for, normalize_batch_norms, sample_data, sample_path
from tests.models import ZOO_SIZE, zoo_model_random_bn
from qviz import runtime

SAMPLES = ["lenet_digits", "mobilenet_block", "resnet_block", "fused_bn_tf_keras"]


def _noise(graph, n=64, seed=1):
    shape = tuple(graph.producer(graph.inputs[0]).attrs["shape"])[1:]
    return np.random.default_rng(seed).standard_normal((n,) + shape).astype(np.float32)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("name", SAMPLES)
def test_samples_run_on_tflite_as_simulated(name, per_channel, tmp_path):
    g = qviz.load(sample_path(name))
    recipe = replace(qviz.Recipe.default(g), per_channel=per_channel)
    data = data_for(g)     # a sample's own data for lenet_digits, noise for the others
    done = export_tflite(g, recipe, tmp_path / "m.tflite", calibration=data.calibration,
                         verification=data.verification if name == "lenet_digits" else _noise(g))
    d = done.device
    assert (tmp_path / "m.tflite").stat().st_size == d.size_bytes > 0
    assert done.check.warnings == () and not d.float_ops          # every conv/dense runs in int8
    assert d.ops.get("QUANTIZE") == 1 and d.ops.get("DEQUANTIZE") == 1   # at the input and the output only
    assert abs(d.sqnr_qviz_db - d.sqnr_device_db) < 0.5
    assert d.agreement is None or d.agreement >= 0.98
    # Every integer op within 1 LSB of qviz's given the same inputs (TFLite's fixed-point
    # rounding differs only within ~1/256 LSB of a half); the outputs within a few LSBs.
    assert d.layers and all(t.within_1_lsb >= 0.999 and t.max_lsb <= 1.01 for t in d.layers), d.layers
    assert d.max_lsb <= 6
    if name in ("lenet_digits", "resnet_block"):
        assert d.within_1_lsb >= 0.99


def test_default_recipe_keeps_weight_zero_points_at_zero(tmp_path):
    """TFLite's int8 conv and fully-connected kernels refuse weights with a zero point:
    qviz's default ranges are symmetric, activations asymmetric."""
    import tensorflow as tf

    g = qviz.load(sample_path("lenet_digits"))
    model = convert(qviz.apply(g, qviz.Recipe.default(g), report=False).graph)
    it = tf.lite.Interpreter(model_content=model)
    it.allocate_tensors()
    zero_points = {}
    for op in it._get_ops_details():
        if op["op_name"] in ("CONV_2D", "FULLY_CONNECTED"):
            w = it._get_tensor_details(op["inputs"][1], 0)
            out = it._get_tensor_details(op["outputs"][0], 0)
            assert set(w["quantization_parameters"]["zero_points"]) == {0}
            zero_points[op["op_name"]] = out["quantization_parameters"]["zero_points"][0]
    assert any(z != 0 for z in zero_points.values())       # activations keep their own zero point


def _faithful(graph, recipe, x) -> bool:
    """Converts, loads, and the device's SQNR is within 0.5 dB of qviz's."""
    result = qviz.apply(graph, recipe, report=False, calibration=data_for(graph).calibration)
    try:
        d = compare_with_device(convert(result.graph), result.graph, graph, x)
    except TFLiteError:
        return False
    return abs(d.sqnr_qviz_db - d.sqnr_device_db) < 0.5 and d.within_1_lsb >= 0.99


@pytest.mark.parametrize("part", ["weights", "activations"])
def test_every_width_is_faithful_on_the_device_or_warned(part):
    """The deployability table is checked against the real converter, width by width:
    what it calls honoured runs as simulated; everything else is warned about."""
    g = qviz.load(sample_path("lenet_digits"))
    x = sample_data("lenet_digits")["x_test"][:64]
    for bits in range(2, 17):
        lb = LayerBits(bits, 8) if part == "weights" else LayerBits(8, bits)
        recipe = qviz.Recipe.default(g, lb)
        check = deployability(g, recipe)
        statuses = {f.status for f in check.fates if f.part == part}
        faithful = _faithful(g, recipe, x)
        if statuses == {"honoured"}:
            assert faithful, f"{part} at {bits} bits: said honoured, but TFLite does not run it as simulated"
        else:
            assert check.warnings, f"{part} at {bits} bits: not faithful, and nothing said"
            if "refused" in statuses:
                assert not faithful, f"{part} at {bits} bits: refused, but TFLite runs it as simulated"


def test_export_refuses_what_tflite_cannot_run_and_says_why(tmp_path):
    g = qviz.load(sample_path("lenet_digits"))
    with pytest.raises(TFLiteError, match=r"conv1, conv2, fc1, logits: activations at 4 bits: TFLite.s converter refuses"):
        export_tflite(g, qviz.Recipe.default(g, LayerBits(8, 4)), tmp_path / "m.tflite")
    assert not (tmp_path / "m.tflite").exists()


def test_int8_io_quantizes_the_model_boundary(tmp_path):
    g = qviz.load(sample_path("lenet_digits"))
    done = export_tflite(g, qviz.Recipe.default(g), tmp_path / "m.tflite", int8_io=True)
    assert "QUANTIZE" not in done.device.ops and "DEQUANTIZE" not in done.device.ops
    assert done.check.boundaries == 0 and done.device.agreement == 1.0 and done.device.within_1_lsb >= 0.99
    no_input_quant = qviz.Recipe.default(g).with_bits("conv1", LayerBits(8, None))
    with pytest.raises(TFLiteError, match="--int8-io needs the graph's input and output quantized"):
        export_tflite(g, no_input_quant, tmp_path / "n.tflite", int8_io=True)


@pytest.mark.parametrize("layers,fold", [(None, True), (("conv2",), True), (("conv1", "fc1"), True),
                                         (None, False)], ids=["all", "conv2", "conv1+fc1", "all-unfolded"])
def test_predicted_conversions_are_the_device_ones(layers, fold, tmp_path):
    """The check counts the float↔int conversions a recipe creates, and says which
    layers run in float; the converted model has exactly those."""
    g = qviz.load(sample_path("lenet_digits"))
    bits = {name: LayerBits(8, 8) for name in layers or ("conv1", "conv2", "fc1", "logits")}
    recipe = qviz.Recipe(fold_default=fold, quantize_default=None, quantize_layers=bits)
    done = export_tflite(g, recipe, tmp_path / "m.tflite", per_layer=False)
    assert done.check.boundaries == done.device.ops.get("QUANTIZE", 0) + done.device.ops.get("DEQUANTIZE", 0)
    # Between two integer layers, the converter quantizes a float conv itself; a conv whose
    # batch norm is not folded runs in float: the check says both.
    implicit = {f.layer for f in done.check.fates if f.status == "implicit"}
    floating = {f.layer for f in done.check.fates if f.status == "float"}
    assert implicit == ({"conv2"} if layers == ("conv1", "fc1") else set())
    assert floating == (set() if fold else {"conv1", "conv2", "fc1"})     # logits has no batch norm
    device_int = sum(op.split()[0] in ("CONV_2D", "FULLY_CONNECTED") for op in done.device.integer_ops)
    assert device_int == len(bits) + len(implicit) - len(floating)
    assert abs(done.device.sqnr_qviz_db - done.device.sqnr_device_db) < 0.5


def test_selecting_one_layer_runs_that_layer_alone_in_integer(tmp_path):
    g = qviz.load(sample_path("resnet_block"))
    recipe = qviz.Recipe(quantize_default=None, quantize_layers={"conv2": LayerBits(8, 8)})
    result = qviz.apply(g, recipe, report=False)
    assert {n.layer for n in result.graph.nodes if n.op in FAKE_QUANT_OPS} == {"conv2"}
    done = export_tflite(g, recipe, tmp_path / "m.tflite", verification=_noise(g))
    assert [op.split()[0] for op in done.device.integer_ops] == ["CONV_2D"]
    assert abs(done.device.sqnr_qviz_db - done.device.sqnr_device_db) < 0.5


def test_cli_export_tflite(tmp_path, capsys):
    recipe = tmp_path / "r.json"
    g = qviz.load(sample_path("lenet_digits"))
    recipe.write_text(qviz.Recipe.default(g, LayerBits(6, 8)).to_json())
    out = tmp_path / "m.tflite"
    assert main(["export-tflite", str(sample_path("lenet_digits")), "--recipe", str(recipe), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert out.exists() and "TFLite vs qviz on 450 examples" in captured.out
    assert "qviz: warning: TFLite: conv1, conv2, fc1, logits: weights at 6 bits: TFLite re-rounds them" in captured.err
    recipe.write_text(qviz.Recipe.default(g, LayerBits(8, 3)).to_json())
    assert main(["export-tflite", str(sample_path("lenet_digits")), "--recipe", str(recipe),
                 "-o", str(tmp_path / "x.tflite")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "activations at 3 bits" in err
    assert main(["export-tflite", str(sample_path("lenet_digits")), "--recipe", str(recipe),
                 "-o", str(tmp_path / "x.pb")]) == 2
    assert "name the file *.tflite" in capsys.readouterr().err


@pytest.mark.zoo
@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_mobilenet_v2_runs_on_tflite_as_simulated(per_channel, tmp_path):
    import keras

    # 10 classes: 1000 near-uniform probabilities would all round to 0 in int8 softmax (step 1/256)
    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(weights=None, input_shape=(ZOO_SIZE, ZOO_SIZE, 3), classes=10)
    x = np.random.default_rng(0).uniform(-1, 1, (32, ZOO_SIZE, ZOO_SIZE, 3)).astype(np.float32)
    normalize_batch_norms(model, x)     # random statistics lose the signal: the output would be constant
    g = qviz.load(model)
    recipe = replace(qviz.Recipe.default(g), per_channel=per_channel)
    done = export_tflite(g, recipe, tmp_path / "m.tflite", verification=x)
    d = done.device
    assert not d.float_ops and done.check.warnings == ()
    assert constant_output(runtime.run(g, x)) is None
    # All 65 integer ops agree with qviz within 1 LSB given the same inputs. End to end, an
    # untrained MobileNetV2 at 8 bits (~10 dB SQNR) amplifies any one-LSB difference layer by
    # layer, as qviz does against itself when its biases move by a hundredth of an LSB; the
    # SQNR of the two still agrees.
    assert len(d.layers) >= 60 and all(t.within_1_lsb >= 0.999 and t.max_lsb <= 1.01 for t in d.layers)
    assert abs(d.sqnr_qviz_db - d.sqnr_device_db) < 1.0


@pytest.mark.zoo
def test_one_layer_of_mobilenet_v2_leaks_into_no_other(tmp_path):
    g = qviz.load(zoo_model_random_bn("MobileNetV2"))
    recipe = qviz.Recipe(quantize_default=None, quantize_layers={"block_3_project": LayerBits(8, 8)})
    result = qviz.apply(g, recipe, report=False)
    assert {n.layer for n in result.graph.nodes if n.op in FAKE_QUANT_OPS} == {"block_3_project"}


def test_ops_given_the_devices_inputs_run_together_as_each_alone():
    """The TFLite check's local runs share pruned functions: each value is the one a run of
    that op alone gives, an op fed where another is computed is run apart, and one that
    needs the graph's input is None."""
    from qviz.exporters.tflite import _local_runs
    from qviz.runtime import run_from

    g = qviz.load(sample_path("resnet_block"))
    result = qviz.apply(g, qviz.Recipe.default(g), report=False)
    q = result.graph
    x = _noise(g)[:2]
    relus = [n.output(0) for n in q.nodes if n.op == "Relu"]
    values = dict(zip(relus, runtime.run(q, x, fetches=relus)))
    # each ReLU's output from the tensor before it, and what takes the ReLU's output from it,
    # perturbed (as the device's values differ): a ReLU computed in one run is fed in another
    wanted = []
    for t in relus:
        before, after = q.producer(t).inputs[0], q.consumers(t)[0].output(0)
        wanted.append((t, {before: runtime.run(q, x, fetches=[before])[0] * 1.01}))
        wanted.append((after, {t: values[t] * 1.02}))
    wanted.append((relus[-1], {}))     # nothing fed: needs the graph's input
    calls = []

    def counted(*args):
        calls.append(args)
        return run_from(*args)

    import qviz.exporters.tflite as tflite
    original, tflite.run_from = tflite.run_from, counted
    try:
        got = _local_runs(q, wanted)
    finally:
        tflite.run_from = original
    assert got[-1] is None
    for (tensor, feeds), value in zip(wanted[:-1], got[:-1]):
        np.testing.assert_array_equal(value, run_from(q, feeds, [tensor])[0])
        assert tensor not in values or not np.array_equal(value, values[tensor])   # from the feeds
    assert len(calls) < len(wanted) - 1


def test_a_layer_run_in_float_still_has_its_activation_width_refused(tmp_path):
    """First and last layers at 8 bits, the rest at 4 (the preset's old widths), without
    folds: conv2 and fc1 run in float (their batch norms are not folded), but their outputs
    are still quantized at 4 bits, which the converter refuses. The check said "float" and
    the converter then failed with a screen of MLIR; now the check says refused, as the
    converter does."""
    g = qviz.load(sample_path("lenet_digits"))
    recipe = qviz.Recipe.from_dict({"fold": {"default": False}, "quantize": {
        "default": {"weight_bits": 4, "activation_bits": 4},
        "layers": {"conv1": {"weight_bits": 8, "activation_bits": 8}, "logits": {"weight_bits": 8, "activation_bits": 8}}}})
    check = deployability(g, recipe)
    assert {f.layer for f in check.refused} == {"conv2", "fc1"}
    assert {f.layer for f in check.fates if f.status == "float"} == {"conv1"}     # 8 bits: runs, in float
    assert len({(f.layer, f.part) for f in check.fates}) == len(check.fates)    # one fate a part
    result = qviz.apply(g, recipe, report=False, calibration=data_for(g).calibration)
    with pytest.raises(TFLiteError) as converter:     # the converter itself, in one line naming the op
        convert(result.graph)
    message = str(converter.value)
    assert "pool_1/MaxPool2d: 'tfl.max_pool_2d' op" in message and "loc(" not in message and "\n" not in message
    with pytest.raises(TFLiteError, match=r"conv2, fc1: activations at 4 bits: TFLite.s converter refuses"):
        export_tflite(g, recipe, tmp_path / "m.tflite")   # one line, before the converter


def test_the_one_click_mixed_preset_converts(tmp_path):
    """"first & last 8-bit, rest 4" set 4-bit activations, which TFLite's converter refuses:
    a user's click gave a recipe the device cannot run. Its rest is w4a8 now, and converts."""
    g = qviz.load(sample_path("lenet_digits"))
    recipe = qviz.Recipe.default(g).with_preset("first-last-8-rest-4", g)
    assert recipe.bits("conv2") == qviz.LayerBits(4, 8)
    assert not deployability(g, recipe).refused
    export_tflite(g, recipe, tmp_path / "m.tflite")
    assert (tmp_path / "m.tflite").stat().st_size > 0


def test_every_integer_op_is_compared_given_the_devices_own_inputs(tmp_path):
    """Each op's row compares qviz's op given the device's inputs. A bias the converter
    shares between layers (equal values: here every folded bias is zero) is named
    "tfl.pseudo_qconst", and the first conv reads the device's QUANTIZE: qviz could not
    place either, and those rows quietly compared from the model input instead."""
    import keras

    x = keras.Input((8, 8, 3), name="img")
    h = x
    for i in range(3):
        h = keras.layers.Conv2D(4, 3, padding="same", use_bias=False, name=f"c{i}")(h)
        h = keras.layers.BatchNormalization(name=f"bn{i}")(h)
        h = keras.layers.ReLU(name=f"r{i}")(h)
    h = keras.layers.Dense(3, name="d")(keras.layers.GlobalAveragePooling2D(name="gap")(h))
    keras.Model(x, h).save(tmp_path / "m.keras")
    g = qviz.load(tmp_path / "m.keras")
    recipe = qviz.Recipe.default(g)
    calibration = _noise(g)
    export_tflite(g, recipe, tmp_path / "m.tflite", calibration=calibration)
    result = qviz.apply(g, recipe, calibration=calibration, report=False)
    rows = compare_with_device((tmp_path / "m.tflite").read_bytes(), result.graph, g, _noise(g, 16, 2),
                               per_layer=True).layers
    assert {t.layer for t in rows} >= {"r0", "r1", "r2", "d"}
    assert all(t.given_device_inputs for t in rows), [(t.layer, t.given_device_inputs) for t in rows]
    assert all(t.max_lsb <= 1.01 for t in rows), [(t.layer, t.max_lsb) for t in rows]


def test_a_model_whose_output_is_constant_is_said_so_beside_the_devices_sqnr(tmp_path, capsys):
    """``export-tflite`` printed "SQNR vs float: qviz 0.00 dB, TFLite 0.00 dB" on an untrained
    MobileNetV2 without the warning ``qviz apply`` gives for the same model."""
    import keras

    model = keras.Sequential([keras.Input((4,), name="x"),
                              keras.layers.Dense(3, kernel_initializer="zeros", bias_initializer="ones", name="d")])
    path = tmp_path / "flat.keras"
    model.save(path)
    g = qviz.load(path)
    done = export_tflite(g, qviz.Recipe.default(g), tmp_path / "flat.tflite")
    assert "the same for every input" in done.device.warning
    recipe = tmp_path / "r.json"
    recipe.write_text(qviz.Recipe.default(g).to_json())
    assert main(["export-tflite", str(path), "--recipe", str(recipe), "-o", str(tmp_path / "c.tflite")]) == 0
    assert "qviz: warning: output 0 of the float model is the same for every input" in capsys.readouterr().err


@pytest.mark.parametrize("adds", [(), ("add1",), ("add1", "add2")], ids=["adds-float", "add1", "both"])
def test_predicted_conversions_around_bypass_adds_are_the_device_ones(adds, tmp_path):
    """An Add left float between integer convs runs in float on the device: its integer
    inputs are dequantized, and a FakeQuant after it is a QUANTIZE, even when the Add's
    output also feeds one (qviz counted 3 conversions where the device had 7)."""
    g = qviz.load(sample_path("resnet_block"))
    bits = {name: LayerBits(8, 8) for name in ("stem_conv", "conv1", "conv2", "conv3", "logits", *adds)}
    recipe = qviz.Recipe(fold_default=True, quantize_default=None, quantize_layers=bits)
    done = export_tflite(g, recipe, tmp_path / "m.tflite", per_layer=False)
    device = done.device.ops.get("QUANTIZE", 0) + done.device.ops.get("DEQUANTIZE", 0)
    assert done.check.boundaries == device, (done.check.boundaries, done.device.ops)


@pytest.mark.parametrize("preset", ["all-8", "first-last-8-rest-4"])
def test_a_quantizing_preset_runs_a_residual_block_in_integer_on_the_device(preset, tmp_path):
    """One click, a model the device runs in integer from input to output: the bypass Adds
    and the pool too (first-last-8-rest-4 left the Adds float: 7 conversions on the device)."""
    g = qviz.load(sample_path("resnet_block"))
    done = export_tflite(g, qviz.Recipe().with_preset(preset, g), tmp_path / "m.tflite", per_layer=False)
    assert done.device.ops.get("QUANTIZE", 0) == 1 and done.device.ops.get("DEQUANTIZE", 0) == 1, done.device.ops
    assert done.check.boundaries == 2 and not [f for f in done.check.fates if f.status == "float"]


def test_a_float_recipe_converts_to_a_float_model(tmp_path):
    """A recipe that quantizes nothing: the converter, asked to optimize, stored conv2's and
    fc1's weights in int8 on its own while qviz said they stay float (45 KB, not 149)."""
    import tensorflow as tf

    g = qviz.load(sample_path("lenet_digits"))
    done = export_tflite(g, qviz.Recipe(fold_default=True, quantize_default=None), tmp_path / "f.tflite",
                         per_layer=False)
    it = tf.lite.Interpreter(model_path=str(tmp_path / "f.tflite"))
    assert {d["dtype"] for d in it.get_tensor_details()} <= {np.float32, np.int32}   # (int32: shapes)
    assert done.check.boundaries == 0 and done.device.ops.get("QUANTIZE", 0) == 0


def test_a_model_whose_values_overflow_is_refused_before_the_converter(tmp_path):
    """Kernels times 1e15 gave quantizer ranges of 1e31, which made the converter abort the
    process (exit 139, no message); smaller, the ranges are finite but as wide (a float
    overflow is refused by the calibration already). Refused in one line naming a layer."""
    import keras

    model = keras.saving.load_model(sample_path("lenet_digits"), compile=False)
    for layer in model.layers:
        if layer.get_weights():
            layer.set_weights([w * 1e6 for w in layer.get_weights()])
    model.save(tmp_path / "overflow.keras")
    g = qviz.load(tmp_path / "overflow.keras")
    with np.errstate(all="ignore"), pytest.raises(TFLiteError, match=r"its quantization range .* is not one TFLite can hold"):
        export_tflite(g, qviz.Recipe().with_preset("all-8", g), tmp_path / "o.tflite", per_layer=False)
    assert not (tmp_path / "o.tflite").exists()


def test_the_least_faithful_ops_break_ties_by_their_drift_from_the_model_input():
    """Every op at 100 % given the device's inputs: the list showed the first five ops, not
    the ones that drift most (the output at 7.5 % within 1 LSB from the model input)."""
    from qviz.exporters.tflite import DeviceReport, TensorAgreement

    rows = [TensorAgreement(f"op{i}", f"t{i}", 1.0, 1.0, chained) for i, chained in enumerate([1.0, 0.99, 0.075, 1.0])]
    rows.append(TensorAgreement("odd", "t", 3.0, 0.98, 1.0))
    import dataclasses

    report = DeviceReport(**{**{f.name: None for f in dataclasses.fields(DeviceReport)}, "layers": tuple(rows)})
    assert [t.layer for t in report.least_faithful(3)] == ["odd", "op2", "op1"] and report.faithful_line() is None
    # every op exact both ways: one line, not five "least faithful" ops at 100 %
    exact = dataclasses.replace(report, layers=tuple(TensorAgreement(f"op{i}", "t", 1.0, 1.0, 1.0) for i in range(6)))
    assert exact.faithful_line().startswith("each of the 6 integer ops, given the device's own inputs or run from")


def test_a_model_qviz_quantized_opens_again_as_quantized(tmp_path):
    """A frozen graph qviz wrote, opened again (a trial's): it was offered for quantizing
    again, a recipe at other bits changed nothing without a word, and the device check
    called its convs "implicit" with 0 B of weights."""
    from qviz.exporters import save_graph_def
    from qviz.passes import RecipeError, quantizable_layers, quantized_in_graph

    g = qviz.load(sample_path("lenet_digits"))
    default = qviz.Recipe.default(g)
    recipe = replace(default, quantize_layers={**default.quantize_layers, "conv2": LayerBits(4, 8)})
    q = qviz.load(save_graph_def(qviz.apply(g, recipe, report=False).graph, tmp_path / "q.pb"))
    assert sorted(b.short for b in quantized_in_graph(q).values()) == ["w4a8", "w8a8", "w8a8", "w8a8"]
    assert quantizable_layers(q) == () and qviz.Recipe.default(q).quantize_layers == {}
    conv2 = next(layer for layer in quantized_in_graph(q) if "conv2" in layer)
    with pytest.raises(RecipeError, match="fake-quantized in the graph already .w4a8."):
        qviz.apply(q, qviz.Recipe(quantize_layers={conv2: LayerBits(8, 8)}), report=False)
    # the device check reads the same model out of either: the same fates, the same weight bytes
    before, after = deployability(g, recipe), deployability(q, qviz.Recipe.default(q))
    assert [(f.part, f.bits, f.status) for f in after.fates] == [(f.part, f.bits, f.status) for f in before.fates]
    assert (after.weight_bytes, after.float_weight_bytes) == (before.weight_bytes, before.float_weight_bytes)
    assert after.boundaries == before.boundaries
    # and so does the cost line (it read "weights 0 B at their bits · 0 bit-ops")
    from qviz.analysis.budget import budget
    from qviz.runtime import tensor_shapes

    rewritten = qviz.apply(g, recipe, report=False).graph
    assert budget(q, q, tensor_shapes(q)).summary() == budget(g, rewritten, tensor_shapes(g)).summary()
    done = export_tflite(q, qviz.Recipe.default(q), tmp_path / "q.tflite", verification=_noise(q))
    assert done.device.ops.get("QUANTIZE") == 1 and not done.device.float_ops


def test_the_weight_bytes_are_the_devices_when_a_layer_runs_in_float(tmp_path):
    """conv2's batch norm left unfolded: TFLite runs conv2 in float with float32 weights, which
    the check counted at 8 bits (MobileNetV2 with four blocks unfolded: 7.1 MB said, 8.4 MB stored)."""
    import tensorflow as tf

    g = qviz.load(sample_path("lenet_digits"))
    recipe = qviz.Recipe.default(g).with_fold("conv2", False)
    done = export_tflite(g, recipe, tmp_path / "m.tflite", per_layer=False)
    it = tf.lite.Interpreter(model_path=str(tmp_path / "m.tflite"))
    it.allocate_tensors()
    stored = 0
    for t in it.get_tensor_details():   # the conv/dense kernels: rank 4 or 2, first axis the output channels
        if len(t["shape"]) in (2, 4) and t["shape"][0] != 1:
            stored += it.get_tensor(t["index"]).nbytes
    assert done.check.weight_bytes == stored
    assert [f.status for f in done.check.fates if f.layer == "conv2"] == ["float"]
