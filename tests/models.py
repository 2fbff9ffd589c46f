"""Models and measures the tests share: small Keras models with both batch-norm
forms, keras.applications nets built offline, the relative error the proofs use."""

from __future__ import annotations

import numpy as np

from qviz.samples import randomize_batch_norms

ZOO_SIZE = 64  # small inputs keep keras.applications fast while the graphs stay real


def small_keras_model(name="small"):
    """Conv-BN-ReLU, DepthwiseConv(depth_multiplier=2), Dense: both BN forms' raw material."""
    import keras
    from keras import layers

    inp = keras.Input((8, 8, 1), name="image")
    x = layers.Conv2D(4, 3, name="conv1")(inp)
    x = layers.BatchNormalization(name="bn1")(x)
    x = layers.ReLU(name="relu1")(x)
    x = layers.DepthwiseConv2D(3, depth_multiplier=2, name="dw")(x)
    x = layers.Flatten(name="flat")(x)
    out = layers.Dense(3, name="fc")(x)
    return keras.Model(inp, out, name=name)


def small_tf_keras_model():
    import tf_keras
    from tf_keras import layers

    inp = tf_keras.Input((8, 8, 1), name="image")
    x = layers.Conv2D(4, 3, name="conv1")(inp)
    x = layers.BatchNormalization(name="bn1")(x)
    x = layers.ReLU(name="relu1")(x)
    x = layers.Flatten(name="flat")(x)
    out = layers.Dense(3, name="fc")(x)
    return tf_keras.Model(inp, out)


_zoo_cache: dict = {}


def zoo_model(name: str):
    """A keras.applications net with weights=None (built offline), cached per session."""
    if name not in _zoo_cache:
        import keras

        _zoo_cache[name] = getattr(keras.applications, name)(
            weights=None, input_shape=(ZOO_SIZE, ZOO_SIZE, 3))
    return _zoo_cache[name]


_random_bn_cache: dict = {}


def zoo_model_random_bn(name: str, *, tf_keras: bool = False):
    """A fresh keras.applications (or tf_keras.applications) net with random BN statistics."""
    key = (name, tf_keras)
    if key not in _random_bn_cache:
        if tf_keras:
            import tf_keras as k
        else:
            import keras as k
        model = getattr(k.applications, name)(weights=None, input_shape=(ZOO_SIZE, ZOO_SIZE, 3))
        randomize_batch_norms(model)
        _random_bn_cache[key] = model
    return _random_bn_cache[key]


def rel_err(a, b) -> float:
    """max |a - b| / max |b|: the relative error measure the proofs use."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


def separable_bn_model():
    """SeparableConv2D → BN → ReLU twice (NASNet's cells): the fold scales the pointwise
    conv, so the depthwise output between them keeps its value. BN statistics are not 0/1."""
    import keras
    from keras import layers

    rng = np.random.default_rng(3)
    inp = keras.Input((10, 10, 3), name="image")
    x = inp
    for i, width in enumerate((6, 4)):
        x = layers.SeparableConv2D(width, 3, use_bias=False, name=f"sep{i}")(x)
        bn = layers.BatchNormalization(name=f"bn{i}")
        x = layers.ReLU(name=f"relu{i}")(bn(x))
        bn.set_weights([rng.uniform(0.5, 2, width), rng.normal(0, 0.5, width), rng.normal(0, 0.5, width),
                        rng.uniform(0.2, 3, width)])
    return keras.Model(inp, layers.GlobalAveragePooling2D(name="pool")(x), name="separable")
