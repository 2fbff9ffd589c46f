"""The bundled sample models in ``sample_models/`` and their data.

The core never looks a model's data up by itself: the CLI and the app ask
:func:`data_for` what to calibrate and verify a graph on, and pass it in.

>>> "lenet_digits" in list_samples()
True
>>> sample_path("lenet_digits").name
'lenet_digits.keras'
>>> import qviz
>>> data = data_for(qviz.load(sample_path("lenet_digits")))
>>> data.origin, data.calibration[0].shape, data.labels is not None
("the lenet_digits sample's own data", (128, 8, 8, 1), True)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # numpy and the rest are imported where used: `qviz serve` reads the table below first
    import numpy as np

    from .ir import Graph

__all__ = ["SAMPLES", "SAMPLE_DIR", "DEFAULT_SAMPLE", "list_samples", "sample_path", "sample_data",
           "randomize_batch_norms", "digits_split", "ModelData", "data_for"]

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


#: The sample the app opens when it is given no model.
DEFAULT_SAMPLE = "lenet_digits"


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
    import numpy as np

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


class ModelData:
    """What a graph is calibrated and verified on, and where that came from.

    Attributes:
        calibration: one array per graph input, to measure activation ranges on,
            or None when none can be made (an input of unknown size: the pass
            that needs them then says so).
        verification: the same, to compare outputs on.
        labels: class labels of ``verification`` (accuracy), or None.
        origin: what the data is, in words a user reads ("fixed-seed noise").

    Noise is made when asked for, not kept: a model's data costs nothing until a
    recipe quantizes or a report runs.
    """

    def __init__(self, calibration, verification, labels, origin: str):
        self._calibration, self._verification = calibration, verification
        self.labels, self.origin = labels, origin

    @property
    def calibration(self) -> tuple[np.ndarray, ...] | None:
        return self._calibration() if callable(self._calibration) else self._calibration

    @property
    def verification(self) -> tuple[np.ndarray, ...] | None:
        return self._verification() if callable(self._verification) else self._verification

    def apply_kwargs(self) -> dict:
        """As keywords of :func:`qviz.apply`: ``qviz.apply(g, recipe, **data.apply_kwargs())``."""
        return {"calibration": self.calibration, "verification": self.verification, "labels": self.labels}

    def sweep_kwargs(self) -> dict:
        """As keywords of :func:`qviz.analysis.sensitivity`."""
        return {"calibration": self.calibration, "inputs": self.verification, "labels": self.labels}

    def __repr__(self) -> str:
        return f"<ModelData: {self.origin}>"


def data_for(graph: Graph) -> ModelData:
    """A bundled sample's own data (calibration split, test split and labels)
    when ``graph`` was loaded from a sample file; fixed-seed noise otherwise
    (made on each access, None for inputs of unknown size)."""
    from .metrics import VERIFY_EXAMPLES
    from .passes.calibration import CalibrationError, noise_inputs

    def sample() -> ModelData | None:
        name = sample_name_of(graph.source) if graph.source else None
        data = sample_data(name) if name else None
        if data is not None and {"x_calib", "x_test"} <= set(data) and len(graph.inputs) == 1:
            return ModelData((data["x_calib"],), (data["x_test"],), data.get("y_test"),
                             f"the {name} sample's own data")
        return None

    def noise(count: int, seed: int):
        def make():
            try:
                return tuple(noise_inputs(graph, count=count, seed=seed))
            except CalibrationError:
                return None
        return make

    own = graph.memo("samples.data", sample)   # the lookup only: noise is never kept
    return own if own is not None else ModelData(noise(64, 0), noise(VERIFY_EXAMPLES, 1), None, "fixed-seed noise")


def randomize_batch_norms(model, rng: np.random.Generator | int = 1) -> None:
    """Give every BatchNormalization of a Keras model random, non-trivial γ, β,
    moving mean and variance (untrained ones fold into near-identity and prove
    nothing). Used to make the samples and by the zoo proofs; BNs built with
    ``scale=False`` / ``center=False`` get only the weights they have."""
    import numpy as np

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
    import numpy as np

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
