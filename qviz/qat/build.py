"""Build the quantization-aware-training Keras model from a model and a :class:`QATPlan`.

The model is cloned layer by layer (``keras.models.clone_model``): each planned
conv/dense layer becomes a :class:`~qviz.keras_layers.FoldedQuantLayer` holding
its weights and its batch norm's, the folded batch norm becomes an
``Identity``, and an :class:`~qviz.keras_layers.OutputQuantizer` named
``<layer>_act_quant`` follows each layer whose output the plan quantizes. Every
other layer is copied with its weights.
"""

from __future__ import annotations

from pathlib import Path

import keras

from ..ir.ops import KIND_OF_OP
from ..keras_layers import FOLDING_MODES, FoldedQuantLayer, OutputQuantizer
from .plan import QATPlan, QATPlanError

__all__ = ["build_qat_model"]

_KERAS_CLASSES = {"conv2d": ("Conv2D",), "depthwise": ("DepthwiseConv2D",), "dense": ("Dense",)}


def _check_layer(layer, kind: str) -> None:
    cls = type(layer).__name__
    if cls not in _KERAS_CLASSES[kind]:
        raise QATPlanError(f"layer {layer.name}: a {cls}, but its graph op says {kind}; "
                           f"export-qat handles {', '.join(c for cs in _KERAS_CLASSES.values() for c in cs)}")
    cfg = layer.get_config()
    if cfg.get("data_format", "channels_last") != "channels_last":
        raise QATPlanError(f"layer {layer.name}: data_format {cfg['data_format']}; export-qat needs channels_last")
    if kind != "dense" and cfg.get("groups", 1) != 1:
        raise QATPlanError(f"layer {layer.name}: grouped convolution is not supported by export-qat")


def build_qat_model(model, plan: QATPlan, *, folding_mode: str = "ema_stats_folding",
                    freeze_bn_delay: int | None = None, ema_decay: float = 0.99):
    """A new Keras model for QAT; ``model`` is not changed.

    Raises:
        QATPlanError: the plan names a layer the model does not have, or one
            export-qat cannot rebuild.
    """
    if folding_mode not in FOLDING_MODES:
        raise QATPlanError(f"folding_mode: {folding_mode!r} is not one of {', '.join(FOLDING_MODES)}")
    names = {layer.name for layer in model.layers}
    for name in [p.layer for p in plan.layers] + [p.bn_layer for p in plan.layers if p.bn_layer] \
            + [o.layer for o in plan.outputs]:
        if name not in names:
            raise QATPlanError(f"layer {name}: in the plan but not a top-level layer of model {model.name}")
    planned = {p.layer: p for p in plan.layers}
    folded_bns = {p.bn_layer: p.layer for p in plan.layers if p.bn_layer}
    by_name = {layer.name: layer for layer in model.layers}

    def config_of(layer):
        """The layer's config; linear when its activation moves after the quantizer."""
        config = layer.get_config()
        q = plan.output(layer.name)
        if q is not None and q.before_activation:
            config = {**config, "activation": "linear"}
        return config

    def clone(layer):
        p = planned.get(layer.name)
        if p is not None:
            kind = KIND_OF_OP[p.op]
            _check_layer(layer, kind)
            bn_config = by_name[p.bn_layer].get_config() if p.bn_layer else None
            return FoldedQuantLayer(kind, config_of(layer), bn_config, weight_bits=p.weight_bits,
                                    narrow_range=plan.narrow_range, symmetric=plan.weight_symmetric,
                                    per_channel=plan.per_channel, folding_mode=folding_mode,
                                    freeze_bn_delay=freeze_bn_delay, name=layer.name)
        if layer.name in folded_bns:
            return keras.layers.Identity(name=layer.name)
        return layer.__class__.from_config(config_of(layer))

    def quantizer(q, name):
        return OutputQuantizer(q.bits, q.min, q.max, ema_decay=1.0 if q.fixed else ema_decay,
                               symmetric=plan.activation_symmetric, name=name)

    quantized_inputs = {}

    def quantize_input(x):
        """A model input the plan quantizes (the graph input before the first conv): one quantizer."""
        history = getattr(x, "_keras_history", None)
        source = getattr(history, "operation", None)
        q = plan.output(source.name) if isinstance(source, keras.layers.InputLayer) else None
        if q is None:
            return x
        if id(x) not in quantized_inputs:
            quantized_inputs[id(x)] = quantizer(q, f"{source.name}_input_quant")(x)
        return quantized_inputs[id(x)]

    def call(layer, *args, **kwargs):
        if layer.name in folded_bns or layer.name in planned:  # they take no mask=
            kwargs.pop("mask", None)
        if layer.name in folded_bns:
            kwargs.pop("training", None)
        args = keras.tree.map_structure(quantize_input, args)
        out = layer(*args, **kwargs)
        q = plan.output(layer.name)
        if q is None:
            return out
        out = quantizer(q, f"{layer.name}_act_quant")(out)
        if q.before_activation:   # Dense(softmax) → Dense(linear) → quantizer → Activation(softmax)
            out = keras.layers.Activation(q.before_activation, name=f"{layer.name}_activation")(out)
        if q.after is not None:   # → TFLite's fixed-range softmax output
            out = quantizer(q.after, f"{layer.name}_out_quant")(out)
        return out

    qat = keras.models.clone_model(model, clone_function=clone, call_function=call)
    for layer in model.layers:
        p = planned.get(layer.name)
        if p is None:
            if layer.name not in folded_bns and layer.weights:
                qat.get_layer(layer.name).set_weights(layer.get_weights())
            continue
        new = qat.get_layer(layer.name)
        weights = {"kernel": layer.kernel}
        if getattr(layer, "bias", None) is not None:
            weights["bias"] = layer.bias
        if p.bn_layer:
            bn = by_name[p.bn_layer]
            weights.update({k: getattr(bn, k) for k in ("gamma", "beta", "moving_mean", "moving_variance")
                            if getattr(bn, k, None) is not None})
        for var in new.weights:
            key = var.path.rsplit("/", 1)[-1]
            if key in weights:
                var.assign(weights[key])
    if model.compiled and getattr(model, "_compile_config", None) is not None:
        qat.compile_from_config(model.get_compile_config())
    return qat


def save_qat_model(qat, path) -> Path:
    """Write the QAT model as ``.keras``."""
    path = Path(path)
    if path.suffix != ".keras":
        raise QATPlanError(f"{path}: the QAT model is written as .keras; give a path ending in .keras")
    path.parent.mkdir(parents=True, exist_ok=True)
    qat.save(path)
    return path
