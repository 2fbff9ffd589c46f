"""A float model whose output does not depend on its input cannot measure quantization
error: the report, the sweep and its suggestion say so instead of promising ∞ dB."""

import keras
import numpy as np

import qviz
from qviz.analysis.sensitivity import sensitivity
from qviz.metrics import verify


def _constant_model():
    inp = keras.Input((6, 6, 1), name="image")
    x = keras.layers.Conv2D(4, 3, name="conv", kernel_initializer="zeros", bias_initializer="ones")(inp)
    x = keras.layers.ReLU(name="relu")(x)
    x = keras.layers.Flatten(name="flat")(x)
    out = keras.layers.Dense(3, name="logits", kernel_initializer="ones")(x)
    return qviz.load(keras.Model(inp, out))


def test_constant_reference_is_flagged_in_report_and_sweep():
    g = _constant_model()
    x = np.random.default_rng(0).normal(size=(8, 6, 6, 1)).astype("float32")
    rep = verify(g, g, [x])
    assert rep.warning and "same for every input" in rep.warning
    assert rep.format().startswith("warning: output 0 of the float model is the same for every input")
    assert rep.to_dict()["warning"] == rep.warning
    sweep = sensitivity(g, bits=(8, 2), inputs=[x])
    assert sweep.warning == rep.warning
    assert all(b.weight_bits == 8 and b.activation_bits == 8 for b in sweep.suggest(30).quantize_layers.values())


def test_a_real_model_has_no_warning(samples):
    g = qviz.load(samples["lenet_digits"])
    x = np.random.default_rng(0).normal(size=(8, 8, 8, 1)).astype("float32")
    assert verify(g, g, [x], per_layer=False).warning is None
