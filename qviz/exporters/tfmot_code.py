"""A recipe as a TensorFlow Model Optimization (tfmot) training script.

The script annotates the user's Keras model layer by layer
(``quantize_annotate_layer`` with one ``QuantizeConfig`` carrying the layer's
bits), applies tfmot's quantization (``quantize_apply``) and hands back the
model to ``fit``. What tfmot does differently from qviz's recipe is written
at the top of the script, in the user's layer names, never left implicit:

- tfmot trains a conv and its batch norm as two layers and quantizes the
  *unfolded* kernel; TFLite's converter folds them afterwards (qviz folds
  first, as the deployed model runs).
- tfmot builds on Keras 2 (``tf_keras``): a Keras 3 model is rebuilt as a
  tf_keras ``.h5`` next to the script (:mod:`qviz.exporters.keras2`).
- the model input is quantized by tfmot's own 8-bit input layer.

>>> from qviz.qat import QATPlan, LayerPlan, OutputQuant
>>> plan = QATPlan((LayerPlan("conv1", "Conv2D", "bn1", 4),), (OutputQuant("relu1", 8, 0.0, 6.0),),
...                narrow_range=True, weight_symmetric=True, activation_symmetric=False, per_channel=False)
>>> code = tfmot_script(plan, {"conv1": "Conv2D", "bn1": "BatchNormalization", "relu1": "ReLU"}, "m.h5")
>>> print(code.text[code.text.index("BITS = "):].split("}")[0] + "}")
BITS = {
    'conv1': (4, None),
    'bn1': (None, None),
    'relu1': (None, 8),
}
>>> code.notes[0]
"'conv1' + 'bn1': tfmot quantizes each kernel before its batch norm is folded, and TFLite's converter folds them afterwards; qviz folds first, as the device runs"
>>> compile(code.text, "qat.py", "exec") is not None
True
"""

from __future__ import annotations

from ..qat.plan import QATPlan
from .code_text import GeneratedCode, comment_lines, docstring_safe, python_dict

__all__ = ["tfmot_script"]

#: Keras layer classes whose kernel tfmot's script quantizes, and the attribute holding it.
KERNELS = {"Conv2D": "kernel", "Dense": "kernel", "DepthwiseConv2D": "depthwise_kernel"}
#: tfmot's input quantizer (``QuantizeLayer`` after each model input) is 8 bits.
TFMOT_INPUT_BITS = 8

_TEMPLATE = '''"""Quantization-aware training with TensorFlow Model Optimization (tfmot), as chosen in qviz.

Written by qviz from {source}. Run it: ``python {script}`` builds the model and
prints its summary; import ``qat_model`` to train it. Needs
``pip install tensorflow-model-optimization tf_keras``.

What tfmot does differently from the qviz recipe:
{notes}
"""

import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")   # tfmot builds on Keras 2 (tf_keras)

import tensorflow as tf
import tensorflow_model_optimization as tfmot
import tf_keras as keras

MODEL_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), {model_file!r})

#: layer → (bits of its kernel, bits of its output); None leaves it float.
BITS = {bits}
#: the weights: symmetric, per-tensor except in these layers (one range per output channel);
#: narrow range drops -2^(b-1).
PER_CHANNEL = {per_channel}
NARROW_RANGE = {narrow}
#: the outputs: moving-average ranges, asymmetric unless the recipe says otherwise.
SYMMETRIC_OUTPUTS = {symmetric_outputs}
KERNELS = {kernels}

quantizers = tfmot.quantization.keras.quantizers


class RecipeQuantizeConfig(tfmot.quantization.keras.QuantizeConfig):
    """One layer's bits: its kernel's (LastValueQuantizer) and its output's (MovingAverageQuantizer)."""

    def __init__(self, weight_bits=None, output_bits=None):
        self.weight_bits = weight_bits
        self.output_bits = output_bits

    def get_weights_and_quantizers(self, layer):
        if self.weight_bits is None:
            return []
        return [(getattr(layer, KERNELS[type(layer).__name__]), quantizers.LastValueQuantizer(
            num_bits=self.weight_bits, per_axis=layer.name in PER_CHANNEL, symmetric=True, narrow_range=NARROW_RANGE))]

    def get_activations_and_quantizers(self, layer):
        return []

    def set_quantize_weights(self, layer, quantize_weights):
        if quantize_weights:
            setattr(layer, KERNELS[type(layer).__name__], quantize_weights[0])

    def set_quantize_activations(self, layer, quantize_activations):
        pass

    def get_output_quantizers(self, layer):
        if self.output_bits is None:
            return []
        return [quantizers.MovingAverageQuantizer(num_bits=self.output_bits, per_axis=False,
                                                  symmetric=SYMMETRIC_OUTPUTS, narrow_range=False)]

    def get_config(self):
        return {{"weight_bits": self.weight_bits, "output_bits": self.output_bits}}


def annotate(layer):
    if layer.name not in BITS:
        return layer
    return tfmot.quantization.keras.quantize_annotate_layer(layer, RecipeQuantizeConfig(*BITS[layer.name]))


def qat_model():
    """The model, every layer annotated with the recipe's bits, ready to compile and fit."""
    model = keras.models.load_model(MODEL_FILE, compile=False)
    annotated = keras.models.clone_model(model, clone_function=annotate)
    with tfmot.quantization.keras.quantize_scope({{"RecipeQuantizeConfig": RecipeQuantizeConfig}}):
        return tfmot.quantization.keras.quantize_apply(annotated)


def to_tflite(model):
    """The trained model as TFLite runs it (the converter folds each batch norm here)."""
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return converter.convert()


if __name__ == "__main__":
    qat_model().summary()
'''


def tfmot_script(plan: QATPlan, layer_classes: dict[str, str], model_file: str, *,
                 source: str = "a qviz recipe", script: str = "qat_tfmot.py") -> GeneratedCode:
    """The tfmot script for ``plan``.

    Args:
        plan: the recipe as it falls on the Keras layers (:func:`qviz.qat.qat_plan`).
        layer_classes: every Keras layer's name → class name, in model order.
        model_file: the tf_keras model file the script loads, relative to the script.
        source: what the script was written from (a line in its docstring).
        script: the script's file name (for its "run it" line).
    """
    notes, per_channel, dense_folds, narrow_outputs = [], [], [], []
    bits: dict[str, tuple[int | None, int | None]] = {}
    for p in plan.layers:
        cls = layer_classes.get(p.layer)
        if p.weight_bits is not None and cls not in KERNELS:
            notes.append(f"{p.layer!r} ({cls}): tfmot's script quantizes the kernels of "
                         f"{', '.join(KERNELS)} only; its {p.weight_bits}-bit weights stay float")
            continue
        bits[p.layer] = (p.weight_bits, None)
        if p.bn_layer is not None:
            bits[p.bn_layer] = (None, None)
        if p.weight_bits is not None and (plan.per_channel or p.bn_layer is not None) and cls != "Dense":
            per_channel.append(p.layer)
        if p.weight_bits is not None and p.bn_layer is not None and cls == "Dense":
            dense_folds.append(p.layer)
    folded_into = {p.layer: p.bn_layer for p in plan.layers if p.bn_layer is not None}
    if folded_into:
        pairs = ", ".join(f"{conv!r} + {bn!r}" for conv, bn in folded_into.items())
        notes.insert(0, f"{pairs}: tfmot quantizes each kernel before its batch norm is folded, and TFLite's "
                        "converter folds them afterwards; qviz folds first, as the device runs")
    for out in plan.outputs:
        cls = layer_classes.get(out.layer)
        if cls == "InputLayer":
            if out.bits != TFMOT_INPUT_BITS:
                notes.append(f"the input {out.layer!r}: tfmot quantizes it at {TFMOT_INPUT_BITS} bits, "
                             f"not {out.bits}")
            continue
        target = folded_into.get(out.layer, out.layer)
        weight_bits, _ = bits.get(target, (None, None))
        bits[target] = (weight_bits, out.bits)
        if out.bits < 8:
            narrow_outputs.append(out.layer)
        if out.before_activation:
            notes.append(f"{out.layer!r}: tfmot quantizes its output after its {out.before_activation}, "
                         "qviz (as TensorFlow's graph rewrite) before it")
    for name, cls in layer_classes.items():   # the rest joins tfmot's quantized domain without a quantizer
        if name not in bits and cls != "InputLayer":
            bits[name] = (None, None)
    ordered = {name: bits[name] for name in layer_classes if name in bits}
    widened = [name for name in per_channel if not plan.per_channel]
    if widened:
        notes.append(f"{', '.join(map(repr, widened))}: per-channel weights, as tfmot's own default; TFLite's "
                     "converter folds a batch norm into a conv's weights only when they are per-channel, and "
                     "leaves the conv float otherwise")
    if dense_folds:
        notes.append(f"{', '.join(map(repr, dense_folds))}: RUNS IN FLOAT on the device: TFLite's converter folds "
                     "no batch norm into tfmot's quantized dense weights (per-tensor), and refuses per-channel "
                     "ones; leave the fold out of the recipe, or fold before training")
    if narrow_outputs:
        notes.append(f"{', '.join(map(repr, narrow_outputs))}: outputs below 8 bits train, but TFLite's converter "
                     "REFUSES them (its kernels take int8 or int16 tensors, nothing narrower): to_tflite fails until "
                     "they are 8 bits")
    text = _TEMPLATE.format(
        source=docstring_safe(source), script=docstring_safe(script), notes=comment_lines(notes or ["nothing: every choice carries over"], "- "),
        model_file=model_file, bits=python_dict(ordered), narrow=plan.narrow_range, per_channel=repr(tuple(per_channel)),
        symmetric_outputs=plan.activation_symmetric, kernels=python_dict(KERNELS))
    return GeneratedCode(text, tuple(notes))
