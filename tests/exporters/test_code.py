"""A recipe written for tfmot and for AI Edge Quantizer: the generated code is
run with the real tool, and the layers and bits it produces are the recipe's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import qviz
from qviz.cli import main
from qviz.exporters.code import CodeExportError, export_code
from qviz.exporters.keras2 import to_tf_keras
from qviz.passes import LayerBits
from qviz.samples import sample_path

# Runs generated tfmot scripts in a fresh interpreter (they need TF_USE_LEGACY_KERAS before TensorFlow
# loads) and prints, as JSON, each quantized layer's bits and the TFLite ops of each converted model.
_TFMOT_PROBE = textwrap.dedent("""
    import json, runpy, sys
    import numpy as np
    import tf_keras
    for path in sys.argv[1:]:
        tf_keras.backend.clear_session()
        script = runpy.run_path(path)
        model = script["qat_model"]()
        bits = {}
        for layer in model.layers:
            config = getattr(layer, "quantize_config", None)
            if config is None or type(config).__name__ != "RecipeQuantizeConfig":
                continue
            weights = config.get_weights_and_quantizers(layer.layer)
            outputs = config.get_output_quantizers(layer.layer)
            bits[layer.layer.name] = [weights[0][1].num_bits if weights else None,
                                      outputs[0].num_bits if outputs else None]
        x = np.random.default_rng(0).normal(size=(8, *model.inputs[0].shape[1:])).astype("float32")
        model.compile("adam", "mse")
        model.fit(x, model.predict(x, verbose=0), epochs=1, verbose=0)   # it trains
        import tensorflow as tf
        it = tf.lite.Interpreter(model_content=script["to_tflite"](model))
        it.allocate_tensors()
        ops = []
        for op in it._get_ops_details():
            if op["op_name"] in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
                w = it.get_tensor(op["inputs"][1])
                ops.append([op["op_name"], str(w.dtype), int(np.unique(w).size)])
        print("RESULT" + json.dumps({"bits": bits, "ops": ops}))
""")


def _run_tfmot(*scripts) -> list[dict]:
    """What :data:`_TFMOT_PROBE` finds in each script, run in one interpreter (importing
    TensorFlow, tf_keras and tfmot costs ~12 s a process)."""
    pytest.importorskip("tensorflow_model_optimization", reason="pip install tensorflow-model-optimization")
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-c", _TFMOT_PROBE, *map(str, scripts)], capture_output=True, text=True,
                          env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line[6:]) for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert len(results) == len(scripts), done.stdout[-3000:]
    return results


@pytest.fixture(scope="module")
def tfmot_scripts(tmp_path_factory):
    """tfmot scripts, with their exports and what the probe found in each: lenet (Keras 3) with
    conv1 and fc1 below 8 bits; the tf_keras sample with dw at 3-bit weights, and its default
    recipe with per-tensor kernels."""
    made = {}
    for name, sample, recipe in [
            ("lenet", "lenet_digits", lambda g: qviz.Recipe.default(g).with_bits("conv1", LayerBits(4, 8))
                                                                     .with_bits("fc1", LayerBits(6, 8))),
            ("3-bit dw", "fused_bn_tf_keras", lambda g: qviz.Recipe.default(g).with_bits("dw", LayerBits(3, 8))),
            ("default", "fused_bn_tf_keras", qviz.Recipe.default)]:
        path, tmp = sample_path(sample), tmp_path_factory.mktemp("tfmot")
        made[name] = export_code(path, recipe(qviz.load(path)), "tfmot", tmp / "qat.py")
    per_tensor = made["default"].files[0].with_name("per_tensor.py")
    per_tensor.write_text(made["default"].files[0].read_text().replace("PER_CHANNEL = ('conv1', 'dw', 'project')",
                                                                       "PER_CHANNEL = ()"))
    found = _run_tfmot(made["lenet"].files[0], made["3-bit dw"].files[0], per_tensor)
    return {**made, **dict(zip(["lenet found", "3-bit dw found", "per-tensor found"], found))}


def test_tfmot_script_trains_the_recipes_bits_and_converts_to_int8(tfmot_scripts):
    done = tfmot_scripts["lenet"]       # a Keras 3 model: rebuilt for tf_keras beside the script
    assert [p.name for p in done.files] == ["qat.py", "qat_tf_keras.h5"]
    assert any("'conv1' + 'bn1'" in n and "folds first" in n for n in done.notes)

    result = tfmot_scripts["lenet found"]
    assert result["bits"] == {"conv1": [4, None], "bn1": [None, None], "relu1": [None, 8],
                              "conv2": [8, None], "bn2": [None, None], "relu2": [None, 8],
                              "fc1": [6, None], "bn3": [None, None], "relu3": [None, 8],
                              "logits": [8, 8], "pool": [None, None], "flatten": [None, None]}
    # TFLite runs the convs and the last dense in int8 (the 4-bit kernel holds at most 15 values, narrow
    # range); fc1, a dense with a batch norm after it, stays float, and the notes say so
    assert [op[:2] for op in result["ops"]] == [["CONV_2D", "int8"], ["CONV_2D", "int8"],
                                                ["FULLY_CONNECTED", "float32"], ["FULLY_CONNECTED", "int8"]]
    assert any(n.startswith("'fc1': RUNS IN FLOAT on the device") for n in done.notes)
    assert result["ops"][0][2] <= 15 and result["ops"][1][2] > 15


def test_tfmot_script_of_a_tf_keras_model_reads_its_own_copy(tmp_path, tfmot_scripts):
    path = sample_path("fused_bn_tf_keras")      # tf_keras already: saved beside the script, not rebuilt
    g = qviz.load(path)
    narrow = export_code(path, qviz.Recipe.default(g).with_bits("dw", LayerBits(8, 4)), "tfmot", tmp_path / "n.py")
    assert any(n.startswith("'dw_relu': outputs below 8 bits train, but TFLite's converter REFUSES")
               for n in narrow.notes)
    done = tfmot_scripts["3-bit dw"]
    assert [p.name for p in done.files] == ["qat.py", "qat_tf_keras.h5"]
    assert str(path.parent) not in done.files[0].read_text()     # no path of this machine in the script
    result = tfmot_scripts["3-bit dw found"]
    assert result["bits"]["dw"] == [3, None] and result["bits"]["dw_relu"] == [None, 8]
    assert result["bits"]["project_bn"] == [None, 8]      # a folded conv with no activation: after its BN
    assert all(dtype == "int8" for _, dtype, _ in result["ops"])


# Runs a generated QKeras script: each layer's class and bits, the rebuilt model's output against the
# original's (the weights were carried over), and one training epoch.
_QKERAS_PROBE = textwrap.dedent("""
    import json, runpy, sys
    import numpy as np
    script = runpy.run_path(sys.argv[1])
    qmodel = script["qkeras_model"]()
    import tf_keras as keras
    model = keras.models.load_model(script["MODEL_FILE"], compile=False)
    layers = {}
    for layer in qmodel.layers:
        kernel = getattr(layer, "kernel_quantizer_internal", None) or getattr(layer, "depthwise_quantizer_internal", None)
        layers[layer.name] = [type(layer).__name__, getattr(kernel, "bits", None),
                              getattr(getattr(layer, "quantizer", None), "bits", None)]
    x = np.random.default_rng(0).normal(size=(16, *model.inputs[0].shape[1:])).astype("float32")
    want, got = model(x, training=False).numpy(), qmodel(x, training=False).numpy()
    sqnr = 10 * np.log10((want ** 2).sum() / ((want - got) ** 2).sum())
    qmodel.compile("adam", "mse")
    qmodel.fit(x, want, epochs=1, verbose=0)
    print("RESULT" + json.dumps({"layers": layers, "sqnr": float(sqnr)}))
""")


def test_qkeras_script_folds_and_quantizes_at_the_recipes_bits(tmp_path):
    pytest.importorskip("qkeras", reason="pip install qkeras")
    path = sample_path("mobilenet_block")        # depthwise (multiplier 2), a residual Add; Keras 3
    g = qviz.load(path)
    recipe = qviz.Recipe.default(g).with_bits("dw", LayerBits(4, 8)).with_bits("project", LayerBits(6, 4))
    done = export_code(path, recipe, "qkeras", tmp_path / "qat.py")
    assert [p.name for p in done.files] == ["qat.py", "qat_tf_keras.h5"]
    assert any("least-squares fit" in n and "per-tensor" in n for n in done.notes)
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    run = subprocess.run([sys.executable, "-c", _QKERAS_PROBE, str(tmp_path / "qat.py")], capture_output=True,
                         text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(next(line for line in run.stdout.splitlines() if line.startswith("RESULT"))[6:])
    layers = result["layers"]
    assert layers["stem_conv"] == ["QConv2DBatchnorm", 8, None]
    assert layers["dw"] == ["QDepthwiseConv2DBatchnorm", 4, None]
    assert layers["project"] == ["QConv2DBatchnorm", 6, None]
    assert layers["project_quant"] == ["QActivation", None, 4]       # project's output at 4 bits
    assert layers["dw_relu_quant"][2] == 8 and layers["residual_quant"][2] == 8
    assert not {"stem_bn", "dw_bn", "project_bn"} & set(layers)      # folded away
    assert layers["logits"] == ["QDense", 8, None]
    assert result["sqnr"] > 15        # the weights came along (a model without them is at ~0 dB)


def test_the_tf_keras_rebuild_of_a_keras_3_model_computes_the_same():
    import keras

    for name in ("lenet_digits", "resnet_block", "mobilenet_block"):
        model = keras.models.load_model(sample_path(name), compile=False)
        twin = to_tf_keras(model)
        assert type(twin).__module__.startswith("tf_keras")
        x = np.random.default_rng(3).normal(size=(4, *model.inputs[0].shape[1:])).astype(np.float32)
        np.testing.assert_allclose(twin(x, training=False).numpy(), np.asarray(model(x, training=False)),
                                   atol=1e-5)


def test_generated_code_holds_hostile_layer_names_as_data():
    import ast

    from qviz.exporters.tfmot_code import tfmot_script
    from qviz.qat import LayerPlan, QATPlan

    evil = 'x"""\nimport os; os.system("touch /tmp/pwned")\n"""'
    plan = QATPlan((LayerPlan(evil, "Conv2D", None, 4),), (), True, True, False, False)
    code = tfmot_script(plan, {evil: "Dense"}, evil, source=evil)
    module = ast.parse(code.text)                     # still one valid module…
    assert not [n for n in ast.walk(module) if isinstance(n, ast.Attribute) and n.attr == "system"]
    strings = [n.value for n in ast.walk(module) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert evil in strings                            # …holding the name as a string, in BITS
    assert 'os.system("touch /tmp/pwned")' in ast.get_docstring(module)   # and in its prose, escaped


def _aeq_quantize(recipe_path, tflite_path, data):
    aeq = pytest.importorskip("ai_edge_quantizer.quantizer", reason="pip install ai-edge-quantizer")
    from ai_edge_litert.interpreter import Interpreter

    quantizer = aeq.Quantizer(str(tflite_path), json.loads(recipe_path.read_text()))
    it = Interpreter(str(tflite_path))
    signature = next(iter(it.get_signature_list()))
    name = next(iter(it.get_signature_list()[signature]["inputs"]))
    result = quantizer.calibrate({signature: [{name: x[None]} for x in data]})
    it = Interpreter(model_content=bytes(quantizer.quantize(result).quantized_model))
    it.allocate_tensors()
    producers = {o: op for op in it._get_ops_details() if op["op_name"] != "DELEGATE" for o in op["outputs"]}
    ops = []
    for op in it._get_ops_details():
        if op["op_name"] not in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            continue
        w = op["inputs"][1]
        weight_only = w in producers and producers[w]["op_name"] == "DEQUANTIZE"
        stored = it.get_tensor(producers[w]["inputs"][0] if weight_only else w)
        ops.append((op["op_name"], str(stored.dtype), int(np.unique(stored).size), weight_only))
    return ops


def test_ai_edge_quantizer_recipe_quantizes_each_layer_at_its_bits(tmp_path):
    path = sample_path("lenet_digits")
    g = qviz.load(path)
    recipe = (qviz.Recipe.default(g).with_bits("conv1", LayerBits(3, 8)).with_bits("logits", LayerBits(8, None)))
    done = export_code(path, recipe, "ai-edge-quantizer", tmp_path / "recipe.json")
    assert [p.name for p in done.files] == ["recipe.json", "recipe_float.tflite"]
    assert "'conv1': 3-bit weights are written as 4-bit (AEQ's widths for CONV_2D)" in done.notes
    assert any("leaves the activations of 'logits' float" in n for n in done.notes)

    data = np.load(sample_path("lenet_digits").with_name("lenet_digits_data.npz"))
    images = data[sorted(data.files)[0]][:16].astype(np.float32)
    ops = _aeq_quantize(tmp_path / "recipe.json", tmp_path / "recipe_float.tflite", images)
    assert [op[0] for op in ops] == ["CONV_2D", "CONV_2D", "FULLY_CONNECTED", "FULLY_CONNECTED"]
    conv1, conv2, fc1, logits = ops
    assert conv1[1] == "int8" and conv1[2] <= 15 and not conv1[3]         # 4-bit values in int8 storage
    assert conv2[1] == "int8" and conv2[2] > 15 and not conv2[3]
    assert fc1[1] == "int8" and not fc1[3]
    assert logits[3] and logits[1] == "int8"                              # weight-only: float activations


def test_export_code_refuses_what_a_tool_cannot_take(tmp_path):
    g = qviz.load(sample_path("lenet_digits"))
    recipe = qviz.Recipe.default(g)
    with pytest.raises(CodeExportError, match="written as a .py file"):
        export_code(sample_path("lenet_digits"), recipe, "tfmot", tmp_path / "qat.txt")
    with pytest.raises(CodeExportError, match="unknown tool 'qkeras2'"):
        export_code(sample_path("lenet_digits"), recipe, "qkeras2", tmp_path / "x.py")
    pb = tmp_path / "m.pb"
    from qviz.exporters import save_graph_def
    save_graph_def(g, pb)
    with pytest.raises(CodeExportError, match="frozen graph has no layers to rebuild"):
        export_code(pb, recipe, "tfmot", tmp_path / "qat.py")


def test_cli_export_code_writes_the_files_and_prints_the_notes(tmp_path, capsys):
    g = qviz.load(sample_path("lenet_digits"))
    recipe_file = tmp_path / "r.json"
    recipe_file.write_text(qviz.Recipe.default(g).with_bits("conv2", LayerBits(2, 8)).to_json())
    (tmp_path / "a-file").write_text("")
    out = tmp_path / "aeq.json"
    assert main(["export-code", str(sample_path("lenet_digits")), "--recipe", str(recipe_file),
                 "--tool", "ai-edge-quantizer", "-o", str(out)]) == 0
    printed = capsys.readouterr()
    assert str(out) in printed.out and "aeq_float.tflite" in printed.out
    assert "'conv2': 2-bit weights are written as 4-bit" in printed.out
    assert json.loads(out.read_text())[0]["regex"] == ".*"
    assert main(["export-code", str(sample_path("lenet_digits")), "--recipe", str(recipe_file),
                 "--tool", "tfmot", "-o", str(tmp_path / "a-file" / "qat.py")]) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cannot write" in err


def test_why_folded_convs_get_per_channel_weights_in_tfmot(tfmot_scripts):
    # the claim in the script's notes and in the fold-order lesson: with per-tensor kernels, TFLite's
    # converter cannot fold a batch norm into a tfmot conv, and the conv runs in float
    done = tfmot_scripts["default"]
    assert "PER_CHANNEL = ('conv1', 'dw', 'project')" in done.files[0].read_text()
    result = tfmot_scripts["per-tensor found"]
    assert [op[:2] for op in result["ops"]] == [["CONV_2D", "float32"], ["DEPTHWISE_CONV_2D", "float32"],
                                                ["CONV_2D", "float32"], ["FULLY_CONNECTED", "int8"]]


def test_a_file_name_that_is_not_utf8_and_a_bad_input_shape_are_one_line(tmp_path):
    import shutil

    odd = tmp_path / "m\udcff.keras"
    shutil.copy(sample_path("lenet_digits"), odd)
    g = qviz.load(odd)
    done = export_code(odd, qviz.Recipe.default(g), "tfmot", tmp_path / "qat.py")
    compile(done.files[0].read_text(), "qat.py", "exec")             # the name is in it, escaped
    recipe = tmp_path / "r.json"
    recipe.write_text("{}")
    assert main(["export-code", str(sample_path("lenet_digits")), "--recipe", str(recipe), "--tool", "tfmot",
                 "-o", str(tmp_path / "q.py"), "--input-shape", "1,2,3,4,5"]) != 0
