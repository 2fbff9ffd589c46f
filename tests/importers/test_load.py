"""Every supported source loads, keeps Keras layer names, and runs like the original."""

import numpy as np
import pytest

import qviz
from qviz.passes.fold_batch_norms import batch_norm_nodes
from tests.models import small_keras_model
from qviz import runtime


def _x(shape=(2, 8, 8, 1), seed=0):
    return np.random.default_rng(seed).random(shape, np.float32)


def test_keras3_model_object(keras_model):
    g = qviz.load(keras_model)
    x = _x()
    np.testing.assert_allclose(runtime.run(g, x)[0], keras_model(x, training=False), rtol=1e-5, atol=1e-6)
    assert g.layers == ("image", "conv1", "bn1", "relu1", "dw", "flat", "fc")
    # Keras 3 freezes BN unfused: Rsqrt/Mul/Sub/AddV2 chain
    ops = {n.op for n in g.layer_nodes("bn1")}
    assert {"Rsqrt", "Mul", "Sub", "AddV2"} <= ops and not any("FusedBatchNorm" in o for o in ops)
    assert g.layer_scope("conv1").endswith("conv1_1")  # the real (uniquified) TF scope


def test_keras3_file(tmp_path, keras_model):
    path = tmp_path / "m.keras"
    keras_model.save(path)
    g = qviz.load(path)
    x = _x(seed=1)
    np.testing.assert_allclose(runtime.run(g, x)[0], keras_model(x, training=False), rtol=1e-5, atol=1e-6)


def test_tf_keras_object_and_h5_freeze_to_fused_batch_norm(tmp_path, tf_keras_model):
    path = tmp_path / "m.h5"
    tf_keras_model.save(path)
    for source in (tf_keras_model, path):
        g = qviz.load(source)
        assert [n.op for n in batch_norm_nodes(g)] == ["FusedBatchNormV3"]
        assert g.layers == ("image", "conv1", "bn1", "relu1", "flat", "fc")
        x = _x(seed=2)
        np.testing.assert_allclose(runtime.run(g, x)[0], tf_keras_model(x, training=False), rtol=1e-5, atol=1e-6)


def test_layer_names_survive_tf_uniquified_scopes():
    """Layers named like TF's uniquified scopes (conv2d, conv2d_1, conv2d_1_1) map back exactly."""
    import keras

    inp = keras.Input((6, 6, 1), name="image")
    x = keras.layers.Conv2D(2, 3)(inp)
    x = keras.layers.Conv2D(2, 1)(x)
    x = keras.layers.Conv2D(2, 1, name="conv2d_1_1")(x)
    inner = keras.Sequential([keras.layers.Dense(3, name="d1"), keras.layers.Dense(3, name="d2")],
                             name="inner")
    out = inner(keras.layers.Flatten(name="flat")(x))
    model = keras.Model(inp, out)
    g = qviz.load(model)
    conv_names = [layer.name for layer in model.layers if type(layer).__name__ == "Conv2D"]
    assert conv_names[-1] == "conv2d_1_1" and len(set(conv_names)) == 3
    assert [n.layer for n in g.nodes if n.op == "Conv2D"] == conv_names
    assert [n.layer for n in g.nodes if n.op == "MatMul"] == ["d1", "d2"]


def test_saved_model_keras3_export(tmp_path, keras_model):
    path = tmp_path / "sm"
    keras_model.export(str(path), verbose=False)
    g = qviz.load(path)
    x = _x(seed=3)
    np.testing.assert_allclose(runtime.run(g, x)[0], keras_model(x, training=False), rtol=1e-5, atol=1e-6)


def test_saved_model_tf_keras(tmp_path, tf_keras_model):
    path = tmp_path / "sm2"
    tf_keras_model.save(str(path), save_format="tf")
    g = qviz.load(path)
    x = _x(seed=4)
    np.testing.assert_allclose(runtime.run(g, x)[0], tf_keras_model(x, training=False), rtol=1e-5, atol=1e-6)
    assert [n.op for n in batch_norm_nodes(g)] == ["FusedBatchNormV3"]


def test_pb_and_pbtxt(tmp_path, keras_model):
    from google.protobuf import text_format

    gd = qviz.load(keras_model).to_graph_def()
    (tmp_path / "m.pb").write_bytes(gd.SerializeToString())
    (tmp_path / "m.pbtxt").write_text(text_format.MessageToString(gd))
    x = _x(seed=5)
    want = keras_model(x, training=False)
    for name in ("m.pb", "m.pbtxt"):
        g = qviz.load(tmp_path / name)
        np.testing.assert_allclose(runtime.run(g, x)[0], want, rtol=1e-5, atol=1e-6)
        # bare GraphDef: layers are name scopes under the model's root scope
        assert any(layer.endswith("/conv1_1") for layer in g.layers)


def test_input_shape_given_for_unbuilt_model():
    import keras

    model = keras.Sequential([keras.layers.Dense(4, name="d")])
    g = qviz.load(model, input_shape=(5,))
    assert g.node(g.inputs[0]).attrs["shape"] == (None, 5)
    assert runtime.run(g, np.ones((2, 5), np.float32))[0].shape == (2, 4)


def test_multi_input_model():
    import keras

    a, b = keras.Input((3,), name="a"), keras.Input((3,), name="b")
    out = keras.layers.Dense(2, name="d")(keras.layers.Concatenate(name="cat")([a, b]))
    model = keras.Model([a, b], out)
    g = qviz.load(model)
    assert g.inputs == ("a:0", "b:0")
    xa, xb = np.ones((1, 3), np.float32), np.zeros((1, 3), np.float32)
    np.testing.assert_allclose(runtime.run(g, xa, xb)[0], model([xa, xb]), rtol=1e-6)


def test_custom_op_loads_for_viewing_but_not_running(tmp_path):
    (tmp_path / "custom.pbtxt").write_text(
        'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }\n'
        'node { name: "y" op: "MyFancyOp" input: "x" }\n')
    g = qviz.load(tmp_path / "custom.pbtxt")
    assert g.node("y").op == "MyFancyOp" and g.outputs == ("y:0",)
    with pytest.raises(qviz.RunError, match="'MyFancyOp' \\(node 'y'\\) is not known to TensorFlow"):
        runtime.run(g, np.ones((1,), np.float32))


def test_loading_never_changes_the_model():
    model = small_keras_model("untouched")
    before = [w.copy() for w in model.get_weights()]
    qviz.load(model)
    assert "call" not in model.get_layer("conv1").__dict__  # the recording wrapper is gone
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_samples_load_with_expected_batch_norms(samples):
    expect = {"lenet_digits": (3, "Rsqrt"), "mobilenet_block": (3, "Rsqrt"),
              "resnet_block": (4, "Rsqrt"), "fused_bn_tf_keras": (3, "FusedBatchNormV3")}
    for name, path in samples.items():
        g = qviz.load(path)
        bns = batch_norm_nodes(g)
        assert (len(bns), bns[0].op) == expect[name], name
        assert path.stat().st_size <= 1024 * 1024


def test_inputs_of_the_wrong_shape_are_one_line_and_results_cannot_be_changed():
    """The runtime calls TensorFlow's flat function (the structured call formats every
    input's values first); a wrong shape must still be an error, not an aborted process
    (oneDNN's conv aborts on an image of the wrong rank)."""
    from qviz.samples import sample_path

    g = qviz.load(sample_path("lenet_digits"))
    with pytest.raises(qviz.RunError, match=r"the input image:0 takes shape \(None, 8, 8, 1\), not \(3, 64\)"):
        runtime.run(g, np.zeros((3, 64), np.float32))
    with pytest.raises(qviz.RunError, match="could not convert string to float"):
        runtime.run(g, np.array([["a"]]))
    out = runtime.run(g, np.zeros((3, 8, 8, 1), np.float32))[0]
    assert out.shape == (3, 10)
    with pytest.raises(ValueError, match="read-only"):   # TensorFlow's buffer, not a copy
        out[0, 0] = 1.0


def test_a_graph_frozen_at_batch_one_still_runs_more_examples(tmp_path):
    """The runtime's shape check leaves the batch alone, as TensorFlow's own call did."""
    (tmp_path / "b1.pbtxt").write_text(
        'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }\n'
        '       attr { key: "shape" value { shape { dim { size: 1 } dim { size: 4 } } } } }\n'
        'node { name: "y" op: "Identity" input: "x" attr { key: "T" value { type: DT_FLOAT } } }\n')
    g = qviz.load(tmp_path / "b1.pbtxt")
    assert runtime.run(g, np.ones((3, 4), np.float32))[0].shape == (3, 4)
    with pytest.raises(qviz.RunError, match=r"takes shape \(1, 4\), not \(3, 5\)"):
        runtime.run(g, np.ones((3, 5), np.float32))


@pytest.mark.parametrize("field, value", [("filters", 150_000_000), ("kernel_size", [30_000, 30_000])])
def test_a_config_declaring_more_weights_than_the_file_stores_is_refused_before_keras(tmp_path, samples,
                                                                                      monkeypatch, field, value):
    """lenet's config edited to 150M filters: Keras allocated 18 GB building the layer before
    it read a stored value. Refused in one line, from the file's own sizes, before Keras."""
    import json
    import zipfile

    import keras

    bomb = tmp_path / "bomb.keras"
    with zipfile.ZipFile(samples["lenet_digits"]) as src, zipfile.ZipFile(bomb, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "config.json":
                config = json.loads(data)
                conv = next(layer for layer in config["config"]["layers"] if layer["class_name"] == "Conv2D")
                conv["config"][field] = value
                data = json.dumps(config).encode()
            dst.writestr(info, data)
    monkeypatch.setattr(keras.saving, "load_model", lambda *a, **k: pytest.fail("Keras was given the file"))
    with pytest.raises(qviz.LoadError, match=r"not a model this file holds: its layers declare at least [\d,]+ "
                                             r"weights \(the most: layer conv1\), but the file stores [\d,]+") as e:
        qviz.load(bomb)
    assert str(bomb) in str(e.value) and "\n" not in str(e.value)


def test_an_h5_config_declaring_more_weights_than_the_file_stores_is_refused(tmp_path, samples):
    import json
    import shutil

    import h5py

    bomb = tmp_path / "bomb.h5"
    shutil.copy(samples["fused_bn_tf_keras"], bomb)
    with h5py.File(bomb, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        conv = next(layer for layer in config["config"]["layers"] if layer["class_name"] == "Conv2D")
        conv["config"]["filters"] = 150_000_000
        f.attrs["model_config"] = json.dumps(config)
    with pytest.raises(qviz.LoadError, match="not a model this file holds: its layers declare at least"):
        qviz.load(bomb)


def test_an_input_shape_a_model_cannot_take_is_refused_in_one_line(tmp_path, samples):
    """It was ignored for a frozen graph (the graph kept its shapes) and raised TypeError for "8,8,1"."""
    from qviz.exporters import save_graph_def

    pb = tmp_path / "m.pb"
    save_graph_def(qviz.load(samples["lenet_digits"]), pb)
    with pytest.raises(qviz.LoadError, match="an input shape applies to Keras models only"):
        qviz.load(pb, input_shape=(5, 5, 1))
    for bad in ("8,8,1", (8, 0, 1), (8.0, 8, 1), []):
        with pytest.raises(qviz.LoadError, match="is not a shape"):
            qviz.load(samples["lenet_digits"], input_shape=bad)
