"""Every bad source gives one LoadError line naming the file and the cause."""

import zipfile

import numpy as np
import pytest

import qviz
from qviz import runtime


def _check(path, pattern, **kwargs):
    with pytest.raises(qviz.LoadError) as info:
        qviz.load(path, **kwargs)
    msg = str(info.value)
    assert "\n" not in msg, msg
    assert msg.startswith(str(path)), msg
    assert pattern in msg, msg
    return msg


def test_missing_path(tmp_path):
    _check(tmp_path / "nope.keras", "no such file or directory")


def test_unknown_extension(tmp_path):
    p = tmp_path / "model.onnx"
    p.write_bytes(b"\x08\x01")
    _check(p, "unknown model format '.onnx'")


@pytest.mark.parametrize("ext", [".keras", ".h5", ".pb", ".pbtxt"])
def test_empty_file(tmp_path, ext):
    p = tmp_path / f"empty{ext}"
    p.write_bytes(b"")
    _check(p, "the file is empty")


@pytest.mark.parametrize("ext,cause", [
    (".keras", "not a valid zip file"), (".h5", "not an HDF5 file"), (".pb", "not a"),
])
def test_random_bytes(tmp_path, ext, cause):
    p = tmp_path / f"noise{ext}"
    p.write_bytes(np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    _check(p, cause)


def test_truncated_keras(tmp_path, keras_model):
    good = tmp_path / "good.keras"
    keras_model.save(good)
    bad = tmp_path / "truncated.keras"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    _check(bad, "not a valid zip file (truncated or corrupt?)")


def test_zip_that_is_not_keras(tmp_path):
    p = tmp_path / "photos.keras"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("cat.txt", "meow")
    _check(p, "not a Keras model: it has no config.json")


def test_malformed_pbtxt(tmp_path):
    p = tmp_path / "bad.pbtxt"
    p.write_text('node { name: "x" op: "Placeholder" }\nnode { name: "y" op: Neg }}\n')
    msg = _check(p, "malformed text GraphDef")
    assert "2:" in msg  # line number of the problem


def test_node_input_that_does_not_exist(tmp_path):
    p = tmp_path / "dangling.pbtxt"
    p.write_text('node { name: "y" op: "Neg" input: "ghost:1" }\n')
    _check(p, "node 'y' has input 'ghost:1', but no node 'ghost' exists")


def test_directory_that_is_not_a_saved_model(tmp_path):
    (tmp_path / "stuff.txt").write_text("hi")
    _check(tmp_path, "not a SavedModel")


def test_unknown_input_shape(tmp_path):
    import keras

    model = keras.Sequential([keras.layers.Dense(3)])
    with pytest.raises(qviz.LoadError, match="input shape is unknown.*--input-shape"):
        qviz.load(model)
    inp = keras.Input((None, None, 3), name="img")
    conv = keras.Model(inp, keras.layers.Conv2D(2, 3)(inp))
    path = tmp_path / "dyn.keras"
    conv.save(path)
    _check(path, "input 'img' has unknown dimensions (None, None, None, 3)")
    g = qviz.load(path, input_shape=(10, 10, 3))
    assert runtime.run(g, np.zeros((1, 10, 10, 3), np.float32))[0].shape == (1, 8, 8, 2)


def test_lambda_layer_refused_in_safe_mode(tmp_path):
    import keras

    inp = keras.Input((4,), name="x")
    model = keras.Model(inp, keras.layers.Lambda(lambda t: t * 2.0, name="double")(inp))
    path = tmp_path / "lambda.keras"
    model.save(path)
    _check(path, "--unsafe")
    g = qviz.load(path, safe_mode=False)
    np.testing.assert_allclose(runtime.run(g, np.ones((1, 4), np.float32))[0], 2.0)


def test_saved_model_pb_passed_as_file_gets_a_hint(tmp_path, keras_model):
    sm = tmp_path / "sm"
    keras_model.export(str(sm), verbose=False)
    with pytest.raises(qviz.LoadError, match="load its directory|no nodes|not a"):
        qviz.load(sm / "saved_model.pb")


def test_not_a_model_object():
    with pytest.raises(qviz.LoadError, match="cannot load a int"):
        qviz.load(42)
