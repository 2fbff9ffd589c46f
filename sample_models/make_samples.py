"""Regenerate the bundled sample models, deterministically.

    python sample_models/make_samples.py

Every model is built from fixed seeds; ``lenet_digits`` is trained on
scikit-learn's bundled 8x8 digits (no download) and its held-out test split
plus a calibration batch are saved beside it. BatchNorm statistics of the
untrained samples are set to random, non-trivial values so that folding them
changes the weights for real.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # runnable from a checkout without installing

from qviz.samples import digits_split, randomize_batch_norms  # noqa: E402
SEED = 20261122


def _seed():
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(SEED)
    tf.config.experimental.enable_op_determinism()


def make_lenet_digits():
    import keras
    from keras import layers

    _seed()
    x_train, x_test, y_train, y_test = digits_split()
    inp = keras.Input((8, 8, 1), name="image")
    x = layers.Conv2D(16, 3, padding="same", name="conv1")(inp)
    x = layers.BatchNormalization(name="bn1")(x)
    x = layers.ReLU(name="relu1")(x)
    x = layers.Conv2D(32, 3, padding="same", name="conv2")(x)
    x = layers.BatchNormalization(name="bn2")(x)
    x = layers.ReLU(name="relu2")(x)
    x = layers.MaxPooling2D(2, name="pool")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(64, name="fc1")(x)
    x = layers.BatchNormalization(name="bn3")(x)
    x = layers.ReLU(name="relu3")(x)
    out = layers.Dense(10, name="logits")(x)
    model = keras.Model(inp, out, name="lenet_digits")
    model.compile(optimizer=keras.optimizers.Adam(2e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x_train, y_train, epochs=30, batch_size=32, verbose=0, shuffle=True)
    _, acc = model.evaluate(x_test, y_test, verbose=0)
    model.save(HERE / "lenet_digits.keras")
    rng = np.random.default_rng(SEED)
    calib = x_train[rng.choice(len(x_train), 128, replace=False)]
    np.savez_compressed(HERE / "lenet_digits_data.npz", x_test=x_test, y_test=y_test, x_calib=calib)
    return acc


def make_mobilenet_block():
    import keras
    from keras import layers

    _seed()
    inp = keras.Input((16, 16, 3), name="image")
    x = layers.Conv2D(8, 3, strides=2, padding="same", use_bias=False, name="stem_conv")(inp)
    x = layers.BatchNormalization(name="stem_bn")(x)
    stem = layers.ReLU(6.0, name="stem_relu")(x)
    x = layers.DepthwiseConv2D(3, padding="same", depth_multiplier=2, use_bias=False, name="dw")(stem)
    x = layers.BatchNormalization(name="dw_bn")(x)
    x = layers.ReLU(6.0, name="dw_relu")(x)
    x = layers.Conv2D(8, 1, use_bias=False, name="project")(x)
    x = layers.BatchNormalization(name="project_bn")(x)
    x = layers.Add(name="residual")([stem, x])
    x = layers.GlobalAveragePooling2D(name="pool")(x)
    out = layers.Dense(10, name="logits")(x)
    model = keras.Model(inp, out, name="mobilenet_block")
    randomize_batch_norms(model, np.random.default_rng(SEED + 1))
    model.save(HERE / "mobilenet_block.keras")


def make_resnet_block():
    import keras
    from keras import layers

    _seed()
    inp = keras.Input((16, 16, 3), name="image")
    x = layers.Conv2D(8, 3, padding="same", name="stem_conv")(inp)
    x = layers.BatchNormalization(name="stem_bn")(x)
    stem = layers.ReLU(name="stem_relu")(x)
    x = layers.Conv2D(8, 3, padding="same", name="conv1")(stem)
    x = layers.BatchNormalization(name="bn1")(x)
    x = layers.ReLU(name="relu1")(x)
    x = layers.Conv2D(8, 3, padding="same", name="conv2")(x)
    x = layers.BatchNormalization(name="bn2")(x)
    x = layers.Add(name="add1")([x, stem])           # bypass before the activation
    block1 = layers.ReLU(name="relu2")(x)
    x = layers.Conv2D(8, 3, padding="same", name="conv3")(block1)
    x = layers.BatchNormalization(name="bn3")(x)
    x = layers.ReLU(name="relu3")(x)
    x = layers.Add(name="add2")([x, block1])         # post-activation bypass
    x = layers.GlobalAveragePooling2D(name="pool")(x)
    out = layers.Dense(10, name="logits")(x)
    model = keras.Model(inp, out, name="resnet_block")
    randomize_batch_norms(model, np.random.default_rng(SEED + 2))
    model.save(HERE / "resnet_block.keras")


def make_fused_bn_tf_keras():
    import tensorflow as tf
    import tf_keras
    from tf_keras import layers

    tf_keras.utils.set_random_seed(SEED)
    inp = tf_keras.Input((12, 12, 3), name="image")
    x = layers.Conv2D(8, 3, name="conv1")(inp)
    x = layers.BatchNormalization(name="bn1")(x)
    x = layers.ReLU(name="relu1")(x)
    x = layers.DepthwiseConv2D(3, depth_multiplier=2, name="dw")(x)
    x = layers.BatchNormalization(name="dw_bn")(x)
    x = layers.ReLU(6.0, name="dw_relu")(x)
    x = layers.Conv2D(8, 1, name="project")(x)
    x = layers.BatchNormalization(name="project_bn")(x)
    x = layers.Flatten(name="flatten")(x)
    out = layers.Dense(10, name="logits")(x)
    model = tf_keras.Model(inp, out, name="fused_bn_tf_keras")
    randomize_batch_norms(model, np.random.default_rng(SEED + 3))
    del tf
    model.save(HERE / "fused_bn_tf_keras.h5")


def main() -> int:
    acc = make_lenet_digits()
    print(f"lenet_digits: test accuracy {acc:.4f}")
    make_mobilenet_block()
    make_resnet_block()
    make_fused_bn_tf_keras()
    for f in sorted(HERE.iterdir()):
        if f.suffix in (".keras", ".h5", ".npz"):
            print(f"{f.name}: {f.stat().st_size / 1024:.1f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
