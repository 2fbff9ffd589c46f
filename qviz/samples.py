"""The bundled sample models in ``sample_models/`` and their data.

>>> "lenet_digits" in list_samples()
True
>>> sample_path("lenet_digits").name
'lenet_digits.keras'
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["SAMPLES", "SAMPLE_DIR", "list_samples", "sample_path", "sample_data", "randomize_batch_norms",
           "digits_split"]

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample_models"

#: name → (file, what it shows)
SAMPLES = {
    "lenet_digits": ("lenet_digits.keras",
                     "LeNet-style CNN trained on the 8x8 digits (Conv-BN-ReLU x2, Dense-BN-ReLU, Dense)"),
    "mobilenet_block": ("mobilenet_block.keras",
                        "DepthwiseConv2D(depth_multiplier=2)-BN-ReLU6, pointwise Conv-BN, inverted residual"),
    "resnet_block": ("resnet_block.keras",
                     "Conv-BN-Add(bypass)-ReLU and a post-activation bypass Add"),
    "fused_bn_tf_keras": ("fused_bn_tf_keras.h5",
                          "tf_keras (Keras 2) model whose BatchNorms freeze to FusedBatchNormV3"),
}


def list_samples() -> list[str]:
    """Names of the samples present on disk."""
    return [name for name, (fname, _) in SAMPLES.items() if (SAMPLE_DIR / fname).exists()]


def sample_path(name: str) -> Path:
    """The file of sample ``name``; ``KeyError`` names the known samples."""
    if name not in SAMPLES:
        raise KeyError(f"no sample named {name!r}; samples: {', '.join(SAMPLES)}")
    return SAMPLE_DIR / SAMPLES[name][0]


def sample_data(name: str) -> dict[str, np.ndarray] | None:
    """The sample's own data (``x_test``, ``y_test``, ``x_calib``) if it ships any."""
    path = SAMPLE_DIR / f"{name}_data.npz"
    if not path.exists():
        return None
    with np.load(path) as npz:
        return {k: npz[k] for k in npz.files}


def sample_name_of(path) -> str | None:
    """The sample name if ``path`` is one of the bundled sample files."""
    try:
        resolved = Path(path).resolve()
    except (TypeError, OSError):
        return None
    for name, (fname, _) in SAMPLES.items():
        if resolved == (SAMPLE_DIR / fname).resolve():
            return name
    return None


def randomize_batch_norms(model, rng: np.random.Generator | int = 1) -> None:
    """Give every BatchNormalization of a Keras model random, non-trivial γ, β,
    moving mean and variance (untrained ones fold into near-identity and prove
    nothing). Used to make the samples and by the zoo proofs; BNs built with
    ``scale=False`` / ``center=False`` get only the weights they have."""
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if type(layer).__name__ == "BatchNormalization":
            n = layer.get_weights()[-1].shape
            new = []
            if layer.scale:
                new.append(rng.uniform(0.5, 1.5, n))
            if layer.center:
                new.append(rng.normal(0, 0.3, n))
            new += [rng.normal(0, 0.3, n), rng.uniform(0.3, 2.0, n)]
            layer.set_weights([w.astype("float32") for w in new])


def normalize_batch_norms(model, x, rng: np.random.Generator | int = 1) -> None:
    """Set every BatchNormalization's moving statistics to the statistics of its
    input on ``x`` (as training mode normalizes), with random γ and β.

    An untrained net with random statistics (:func:`randomize_batch_norms`) can
    lose its signal on the way through (MobileNetV2 gives the same output for
    every input); normalized with its own statistics, each layer passes an
    input-dependent signal on, so output errors measure something.
    """
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    bns = [layer for layer in model._flatten_layers(include_self=False, recursive=True)
           if type(layer).__name__ == "BatchNormalization"]
    momenta = [layer.momentum for layer in bns]
    for layer in bns:
        layer.momentum = 0.0     # one training-mode call sets the moving statistics to the batch's
        n = layer.get_weights()[-1].shape
        new = ([rng.uniform(0.5, 1.5, n)] if layer.scale else []) + ([rng.normal(0, 0.3, n)] if layer.center else [])
        layer.set_weights([w.astype("float32") for w in new] + layer.get_weights()[len(new):])
    model(x, training=True)
    for layer, momentum in zip(bns, momenta):
        layer.momentum = momentum


def digits_split():
    """``(x_train, x_test, y_train, y_test)`` of scikit-learn's bundled 8x8 digits,
    the split ``lenet_digits`` was trained and tested on (needs scikit-learn;
    no download)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype("float32")[..., None]
    y = digits.target.astype("int64")
    return train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
