"""A recipe as a QKeras script: the model rebuilt with QKeras layers at the
recipe's bits, its batch norms folded and still trainable.

The script rewrites the model's functional config: a conv or depthwise conv
whose batch norm the recipe folds becomes one ``QConv2DBatchnorm`` /
``QDepthwiseConv2DBatchnorm`` (the batch norm's readers read it instead);
another quantized conv/dense becomes ``QConv2D`` / ``QDepthwiseConv2D`` /
``QDense``; a ``QActivation`` follows every output the recipe quantizes. The
weights are copied by name. What QKeras does differently from the recipe is
written at the top of the script and returned as notes:

- QKeras' kernel quantizer ``quantized_bits(bits, 0, alpha="auto")`` scales
  each output channel by a least-squares fit, not by the kernel's max, and
  has no per-tensor mode;
- its output quantizers have power-of-two ranges (``2^integer``), chosen to
  cover the calibrated range;
- QKeras 0.9 has no ``QDenseBatchnorm``: a dense layer's batch norm stays a
  layer (quantize, then fold at conversion).

>>> from qviz.qat import QATPlan, LayerPlan, OutputQuant
>>> plan = QATPlan((LayerPlan("conv1", "Conv2D", "bn1", 4),), (OutputQuant("relu1", 8, 0.0, 5.2),),
...                narrow_range=True, weight_symmetric=True, activation_symmetric=False, per_channel=False)
>>> code = qkeras_script(plan, {"conv1": "Conv2D", "bn1": "BatchNormalization", "relu1": "ReLU"}, "m.h5")
>>> print(code.text[code.text.index("OUTPUTS = "):].split("}")[0] + "}")
OUTPUTS = {
    'relu1': (8, 3, False),
}
>>> compile(code.text, "qat.py", "exec") is not None
True
"""

from __future__ import annotations

import math

from ..qat.plan import QATPlan
from .code_text import GeneratedCode, comment_lines, docstring_safe, python_dict

__all__ = ["qkeras_script", "QKERAS_LAYERS"]

#: Keras class → (its QKeras class, with the batch norm folded in or None, the kernel quantizer's argument)
QKERAS_LAYERS = {"Conv2D": ("QConv2D", "QConv2DBatchnorm", "kernel_quantizer"),
                 "DepthwiseConv2D": ("QDepthwiseConv2D", "QDepthwiseConv2DBatchnorm", "depthwise_quantizer"),
                 "Dense": ("QDense", None, "kernel_quantizer")}

_TEMPLATE = '''"""Quantization-aware training with QKeras, as chosen in qviz.

Written by qviz from {source}. Run it: ``python {script}`` builds the model and
prints its summary; import ``qkeras_model`` to train it. Needs
``pip install qkeras tf_keras``.

What QKeras does differently from the qviz recipe:
{notes}
"""

import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")   # QKeras builds on Keras 2 (tf_keras)

import tf_keras as keras
from qkeras import quantized_bits, quantized_relu
from qkeras.utils import _add_supported_quantized_objects

MODEL_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), {model_file!r})

#: layer → bits of its kernel
WEIGHT_BITS = {weight_bits}
#: conv layer → the batch norm folded into it (trained together, QKeras' folding_mode)
FOLDS = {folds}
#: layer → (bits, integer, signed) of the quantizer after its output: its range is ±2^integer
#: (0 to 2^integer unsigned), the power of two that covers the range qviz calibrated
OUTPUTS = {outputs}
NARROW_RANGE = {narrow}
FOLDING_MODE = "ema_stats_folding"
#: Keras class → (QKeras class, QKeras class with the batch norm folded in, kernel quantizer argument)
QKERAS_LAYERS = {qkeras_layers}


def weight_quantizer(bits):
    return quantized_bits(bits, 0, symmetric=int(NARROW_RANGE), keep_negative=True, alpha="auto")


def output_quantizer(bits, integer, signed):
    if signed:
        return quantized_bits(bits, integer, keep_negative=True, alpha=1)
    return quantized_relu(bits, integer)


def _rewired(nodes, renamed):
    """Inbound nodes reading, instead of a removed or quantized layer, what replaces it."""
    def new(name):
        while name in renamed:
            name = renamed[name]
        return name
    return [[[new(ref[0]), *ref[1:]] for ref in node] for node in nodes]


def qkeras_config(model):
    """The model's functional config with QKeras layers in place."""
    config = model.get_config()
    folded_bn = {{bn: conv for conv, bn in FOLDS.items()}}
    configs = {{layer["name"]: layer["config"] for layer in config["layers"]}}
    layers, renamed = [], {{}}
    for layer in config["layers"]:
        name, cls, cfg = layer["name"], layer["class_name"], dict(layer["config"])
        if name in folded_bn:                      # merged into its conv: its readers read the conv
            renamed[name] = folded_bn[name]
            continue
        if name in WEIGHT_BITS:
            plain, folded, argument = QKERAS_LAYERS[cls]
            cfg[argument] = weight_quantizer(WEIGHT_BITS[name])
            if name in FOLDS:
                bn = configs[FOLDS[name]]
                cfg.update({{k: bn[k] for k in ("axis", "momentum", "epsilon", "center", "scale")}})
                cfg.update(use_bias=True, folding_mode=FOLDING_MODE)
                cls = folded
            else:
                cls = plain
        entry = {{k: v for k, v in layer.items() if k not in ("module", "registered_name")}}  # found by class name
        layers.append({{**entry, "class_name": cls, "config": cfg,
                       "inbound_nodes": _rewired(layer["inbound_nodes"], renamed)}})
        if name in OUTPUTS:                        # a quantizer after the output; readers read it
            layers.append({{"class_name": "QActivation", "name": name + "_quant",
                           "config": {{"name": name + "_quant", "activation": output_quantizer(*OUTPUTS[name])}},
                           "inbound_nodes": [[[name, 0, 0, {{}}]]]}})
            renamed[name] = name + "_quant"
    config["layers"] = layers
    config["output_layers"] = _rewired([config["output_layers"]], renamed)[0]
    return config


def _copy_weights(model, qmodel):
    for layer in qmodel.layers:
        sources = [layer.name] + ([FOLDS[layer.name]] if layer.name in FOLDS else [])
        values = {{}}
        for source in sources:
            if source in [l.name for l in model.layers]:
                for w in model.get_layer(source).weights:
                    values[w.name.split("/")[-1].split(":")[0]] = w.numpy()
        for w in layer.weights:
            key = w.name.split("/")[-1].split(":")[0]
            if key in values and tuple(values[key].shape) == tuple(w.shape):
                w.assign(values[key])
            elif key == "bias" and layer.name in FOLDS:
                w.assign(w.numpy() * 0)           # a conv without bias before its batch norm


def qkeras_model():
    """The model rebuilt with QKeras layers at the recipe's bits, weights copied, ready to compile and fit."""
    model = keras.models.load_model(MODEL_FILE, compile=False)
    custom_objects = {{}}
    _add_supported_quantized_objects(custom_objects)
    qmodel = keras.Model.from_config(qkeras_config(model), custom_objects=custom_objects)
    _copy_weights(model, qmodel)
    return qmodel


if __name__ == "__main__":
    qkeras_model().summary()
'''


def _output_range(lo: float, hi: float) -> tuple[int, bool]:
    """The power-of-two ``integer`` whose range covers ``[lo, hi]``, and whether it needs a sign."""
    m = max(abs(lo), abs(hi), 1e-12)
    return max(0, math.ceil(math.log2(m))), lo < 0


def qkeras_script(plan: QATPlan, layer_classes: dict[str, str], model_file: str, *,
                  source: str = "a qviz recipe", script: str = "qat_qkeras.py") -> GeneratedCode:
    """The QKeras script for ``plan`` (arguments as :func:`qviz.exporters.tfmot_code.tfmot_script`)."""
    notes, weight_bits, folds, outputs = [], {}, {}, {}
    dense_folds = []
    for p in plan.layers:
        cls = layer_classes.get(p.layer)
        if cls not in QKERAS_LAYERS:
            notes.append(f"{p.layer!r} ({cls}): no QKeras layer here; it stays float")
            continue
        if p.weight_bits is None:
            if p.bn_layer is not None:
                notes.append(f"{p.layer!r}: its weights stay float, so its batch norm is not folded in QKeras")
            continue
        weight_bits[p.layer] = p.weight_bits
        if p.bn_layer is not None:
            if QKERAS_LAYERS[cls][1] is None:
                dense_folds.append(p.layer)
            else:
                folds[p.layer] = p.bn_layer
    for out in plan.outputs:
        integer, signed = _output_range(out.min, out.max)
        outputs[out.layer] = (out.bits, integer, signed)
        if out.before_activation:
            notes.append(f"{out.layer!r}: QKeras quantizes its output after its {out.before_activation}, "
                         "qviz (as TensorFlow's graph rewrite) before it")
    notes.insert(0, "weights: quantized_bits(bits, 0, alpha='auto') scales each output channel by a "
                    "least-squares fit, not by the kernel's max, and QKeras has no per-tensor mode"
                    + ("" if plan.per_channel else " (the recipe says per-tensor)"))
    if outputs:
        notes.insert(1, "outputs: power-of-two ranges (±2^integer, or 0 to 2^integer after a ReLU) covering "
                        "the ranges qviz calibrated, where TFLite uses the calibrated range itself")
    if dense_folds:
        notes.append(f"{', '.join(map(repr, dense_folds))}: QKeras 0.9 has no QDenseBatchnorm; the batch norm "
                     "stays a layer after the quantized dense (quantize, then fold at conversion)")
    text = _TEMPLATE.format(
        source=docstring_safe(source), script=docstring_safe(script), notes=comment_lines(notes, "- "),
        model_file=model_file, weight_bits=python_dict(weight_bits), folds=python_dict(folds),
        outputs=python_dict(outputs), narrow=plan.narrow_range, qkeras_layers=python_dict(QKERAS_LAYERS))
    return GeneratedCode(text, tuple(notes))
