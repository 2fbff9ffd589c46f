"""The Keras layers qviz defines, for quantization-aware training (TensorFlow backend).

:class:`FoldedQuantLayer` is a Conv2D, DepthwiseConv2D or Dense with its batch
norm folded in a trainable way (QKeras' ``ema_stats_folding`` or
``batch_stats_folding``; see :mod:`qviz.passes.fold_training` for the formulas)
and its folded weights fake-quantized; :class:`OutputQuantizer` fake-quantizes
a tensor with a range tracked by an exponential moving average, as TF's
``MovingAvgQuantize`` does. Both use TensorFlow's ``FakeQuantWithMinMaxVars``
ops, whose gradient is the straight-through estimator (1 inside the range, 0
outside), so the frozen graph of a trained model carries real FakeQuant ops
that :func:`qviz.load` shows with their ``num_bits``.

Importing this module registers the layers, so ``keras.models.load_model`` can
read an exported ``model_qat.keras`` (``import qviz.keras_layers`` first;
:func:`qviz.load` does it). It depends on nothing else in qviz, so the
importers may import it.
"""

from __future__ import annotations

import keras
import tensorflow as tf

__all__ = ["FoldedQuantLayer", "OutputQuantizer", "FOLDING_MODES", "KINDS"]

FOLDING_MODES = ("ema_stats_folding", "batch_stats_folding")
KINDS = ("conv2d", "depthwise", "dense")


def _fake_quant_weights(w, bits: int, narrow_range: bool, symmetric: bool, per_channel: bool):
    """Fake-quantize weights on their own current range (contrib's LastValueQuantize)."""
    if per_channel:
        shape = tf.shape(w)
        flat = tf.reshape(w, [-1, shape[-1]])
        lo = tf.minimum(tf.reduce_min(flat, axis=0), 0.0)
        hi = tf.maximum(tf.reduce_max(flat, axis=0), 0.0)
    else:
        lo = tf.minimum(tf.reduce_min(w), 0.0)
        hi = tf.maximum(tf.reduce_max(w), 0.0)
    if symmetric:
        hi = tf.maximum(-lo, hi)
        lo = -hi
    hi = tf.maximum(hi, lo + 1e-8)
    lo, hi = tf.stop_gradient(lo), tf.stop_gradient(hi)
    if per_channel:
        return tf.quantization.fake_quant_with_min_max_vars_per_channel(
            w, lo, hi, num_bits=bits, narrow_range=narrow_range)
    return tf.quantization.fake_quant_with_min_max_vars(w, lo, hi, num_bits=bits, narrow_range=narrow_range)


@keras.saving.register_keras_serializable(package="qviz")
class OutputQuantizer(keras.layers.Layer):
    """Fake-quantize the input with a range kept as an EMA of batch min/max.

    Args:
        bits: 2–16.
        init_min, init_max: the starting range (qviz passes the calibrated one).
        ema_decay: ``r ← d·r + (1−d)·batch`` per training step (1: a fixed range).
        symmetric: make the range ``[−a, a]``.
    """

    def __init__(self, bits: int = 8, init_min: float = -6.0, init_max: float = 6.0,
                 ema_decay: float = 0.99, symmetric: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.bits, self.init_min, self.init_max = int(bits), float(init_min), float(init_max)
        self.ema_decay, self.symmetric = float(ema_decay), bool(symmetric)

    def build(self, input_shape):
        self.range_min = self.add_weight(name="min", shape=(), trainable=False,
                                         initializer=keras.initializers.Constant(self.init_min))
        self.range_max = self.add_weight(name="max", shape=(), trainable=False,
                                         initializer=keras.initializers.Constant(self.init_max))

    def call(self, inputs, training=None):
        if training:
            d = self.ema_decay
            self.range_min.assign(d * self.range_min + (1 - d) * tf.reduce_min(inputs))
            self.range_max.assign(d * self.range_max + (1 - d) * tf.reduce_max(inputs))
        lo = tf.minimum(self.range_min, 0.0)
        hi = tf.maximum(self.range_max, 0.0)
        wide = self.bits == 16   # TFLite's int16 activations: symmetric, zero point 0 (as qviz.quantize)
        if self.symmetric or wide:
            hi = tf.maximum(-lo, hi)
            lo = -hi
        return tf.quantization.fake_quant_with_min_max_vars(inputs, lo, tf.maximum(hi, lo + 1e-8),
                                                            num_bits=self.bits, narrow_range=wide)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "bits": self.bits, "init_min": self.init_min,
                "init_max": self.init_max, "ema_decay": self.ema_decay, "symmetric": self.symmetric}


@keras.saving.register_keras_serializable(package="qviz")
class FoldedQuantLayer(keras.layers.Layer):
    """A conv/dense layer, optionally with its batch norm folded in trainably, whose
    (folded) weights are fake-quantized.

    In training (before the freeze) the output equals conv → batch norm with
    batch statistics, and the moving statistics are updated; from step
    ``freeze_bn_delay`` on, and at inference, the moving statistics are used,
    i.e. exactly the inference fold.

    Args:
        kind: ``"conv2d"``, ``"depthwise"`` or ``"dense"``.
        layer_config: the original layer's ``get_config()`` (strides, padding,
            activation, units/filters…).
        bn_config: the batch norm's ``get_config()``, or ``None`` for no fold.
        weight_bits: ``None`` keeps the weights float.
        folding_mode: one of :data:`FOLDING_MODES`.
        freeze_bn_delay: training steps after which the moving statistics are
            used (``None``: never while training).
    """

    def __init__(self, kind: str, layer_config: dict, bn_config: dict | None = None,
                 weight_bits: int | None = 8, narrow_range: bool = True, symmetric: bool = False,
                 per_channel: bool = False, folding_mode: str = "ema_stats_folding",
                 freeze_bn_delay: int | None = None, **kwargs):
        super().__init__(**kwargs)
        if kind not in KINDS:
            raise ValueError(f"kind: {kind!r} is not one of {', '.join(KINDS)}")
        if folding_mode not in FOLDING_MODES:
            raise ValueError(f"folding_mode: {folding_mode!r} is not one of {', '.join(FOLDING_MODES)}")
        self.kind, self.layer_config, self.bn_config = kind, dict(layer_config), bn_config
        self.weight_bits, self.narrow_range, self.symmetric = weight_bits, narrow_range, symmetric
        self.per_channel, self.folding_mode, self.freeze_bn_delay = per_channel, folding_mode, freeze_bn_delay
        self.activation = keras.activations.get(self.layer_config.get("activation", "linear"))
        self.use_bias = bool(self.layer_config.get("use_bias", True))

    # -- weights -------------------------------------------------------------------

    def build(self, input_shape):
        c = self.layer_config
        in_ch = int(input_shape[-1])
        if self.kind == "dense":
            kshape, out_ch = (in_ch, int(c["units"])), int(c["units"])
        elif self.kind == "conv2d":
            kshape, out_ch = (*c["kernel_size"], in_ch, int(c["filters"])), int(c["filters"])
        else:
            mult = int(c.get("depth_multiplier", 1))
            kshape, out_ch = (*c["kernel_size"], in_ch, mult), in_ch * mult
        self.out_channels = out_ch
        self.kernel = self.add_weight(name="kernel", shape=kshape, initializer="glorot_uniform")
        self.bias = self.add_weight(name="bias", shape=(out_ch,), initializer="zeros") if self.use_bias else None
        bn = self.bn_config
        if bn is not None:
            self.gamma = self.add_weight(name="gamma", shape=(out_ch,), initializer="ones") \
                if bn.get("scale", True) else None
            self.beta = self.add_weight(name="beta", shape=(out_ch,), initializer="zeros") \
                if bn.get("center", True) else None
            self.moving_mean = self.add_weight(name="moving_mean", shape=(out_ch,), initializer="zeros",
                                               trainable=False)
            self.moving_variance = self.add_weight(name="moving_variance", shape=(out_ch,),
                                                   initializer="ones", trainable=False)
            self.step = self.add_weight(name="step", shape=(), dtype="int64", initializer="zeros",
                                        trainable=False)

    # -- the computation -----------------------------------------------------------------

    def _apply(self, x, kernel):
        c = self.layer_config
        if self.kind == "dense":
            return tf.matmul(x, kernel) if len(x.shape) == 2 else tf.tensordot(x, kernel, 1)
        strides = [1, *c.get("strides", (1, 1)), 1]
        padding = c.get("padding", "valid").upper()
        dilations = list(c.get("dilation_rate", (1, 1)))
        if self.kind == "conv2d":
            return tf.nn.conv2d(x, kernel, strides, padding, dilations=[1, *dilations, 1])
        return tf.nn.depthwise_conv2d(x, kernel, strides, padding, dilations=dilations)

    def _per_kernel(self, v):
        """A per-output-channel vector shaped to scale the kernel."""
        if self.kind == "depthwise":
            return tf.reshape(v, self.kernel.shape[2:])
        return v

    def _quantize(self, kernel):
        if self.weight_bits is None:
            return kernel
        if self.kind == "depthwise" and self.per_channel:   # channels (in·mult) last
            shape = tf.shape(kernel)
            flat = tf.reshape(kernel, [shape[0], shape[1], 1, -1])
            q = _fake_quant_weights(flat, self.weight_bits, self.narrow_range, self.symmetric, True)
            return tf.reshape(q, shape)
        return _fake_quant_weights(kernel, self.weight_bits, self.narrow_range, self.symmetric,
                                   self.per_channel)

    def call(self, inputs, training=None):
        bias = self.bias if self.bias is not None else tf.zeros(self.out_channels)
        if self.bn_config is None:
            return self.activation(self._apply(inputs, self._quantize(self.kernel)) + bias)
        eps = float(self.bn_config.get("epsilon", 1e-3))
        gamma = self.gamma if self.gamma is not None else tf.ones(self.out_channels)
        beta = self.beta if self.beta is not None else tf.zeros(self.out_channels)
        # Read the moving statistics once: the updates below must not leak into this step.
        moving_mean = tf.identity(self.moving_mean)
        moving_var = tf.identity(self.moving_variance)
        inv_mv = gamma * tf.math.rsqrt(moving_var + eps)
        if not training:
            kernel = self.kernel * self._per_kernel(inv_mv)
            out = self._apply(inputs, self._quantize(kernel)) + beta + (bias - moving_mean) * inv_mv
            return self.activation(out)
        # Batch statistics of the float layer's output (conv + bias), as the batch norm sees it.
        y = self._apply(inputs, self.kernel) + bias
        mean_b, var_b = tf.nn.moments(y, list(range(len(y.shape) - 1)))
        frozen = tf.constant(False) if self.freeze_bn_delay is None else \
            self.step >= self.freeze_bn_delay
        inv_b = gamma * tf.math.rsqrt(var_b + eps)
        if self.folding_mode == "ema_stats_folding":
            out = self._apply(inputs, self._quantize(self.kernel * self._per_kernel(inv_mv)))
            y_corr = tf.where(frozen, tf.ones_like(var_b),
                              tf.sqrt(moving_var + eps) * tf.math.rsqrt(var_b + eps))
            folded_bias = tf.where(frozen, beta + (bias - moving_mean) * inv_mv,
                                   beta + (bias - mean_b) * inv_b)
            out = out * y_corr + folded_bias
        else:
            inv = tf.where(frozen, inv_mv, inv_b)
            mean = tf.where(frozen, moving_mean, mean_b)
            out = self._apply(inputs, self._quantize(self.kernel * self._per_kernel(inv)))
            out = out + beta + (bias - mean) * inv
        momentum = float(self.bn_config.get("momentum", 0.99))
        self.moving_mean.assign(momentum * moving_mean + (1 - momentum) * tf.stop_gradient(mean_b))
        self.moving_variance.assign(momentum * moving_var + (1 - momentum) * tf.stop_gradient(var_b))
        self.step.assign_add(1)
        return self.activation(out)

    def get_config(self):
        return {**super().get_config(), "kind": self.kind, "layer_config": self.layer_config,
                "bn_config": self.bn_config, "weight_bits": self.weight_bits,
                "narrow_range": self.narrow_range, "symmetric": self.symmetric,
                "per_channel": self.per_channel, "folding_mode": self.folding_mode,
                "freeze_bn_delay": self.freeze_bn_delay}
