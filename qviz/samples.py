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
           "randomize_batch_norms", "digits_split", "ModelData", "data_for", "data_from_file", "DATA_KEYS", "NOISE"]

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
    """The sample name if ``path`` is one of the bundled sample files, or a copy of one
    (the same bytes: a copied sample was calibrated on noise)."""
    try:
        resolved = Path(path).resolve()
        size = resolved.stat().st_size if resolved.is_file() else None
    except (TypeError, OSError):
        return None
    for name, (fname, _) in SAMPLES.items():
        sample = (SAMPLE_DIR / fname).resolve()
        if resolved == sample:
            return name
    for name, (fname, _) in SAMPLES.items():
        sample = SAMPLE_DIR / fname
        try:
            if size is not None and sample.stat().st_size == size and sample.read_bytes() == resolved.read_bytes():
                return name
        except OSError:
            continue
    return None


#: :attr:`ModelData.origin` of the noise a model without data is calibrated and verified on.
NOISE = "fixed-seed noise"


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

    @property
    def is_noise(self) -> bool:
        """Whether this is the fixed-seed noise :func:`data_for` gives a model without data."""
        return self.origin == NOISE

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
    return own if own is not None else ModelData(noise(64, 0), noise(VERIFY_EXAMPLES, 1), None, NOISE)


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


#: The arrays a data file (``--data FILE.npz``) holds: the layout of the samples' own data.
DATA_KEYS = {"x_calib": "examples to measure activation ranges on",
             "x_test": "examples to compare outputs on (default: x_calib)",
             "y_test": "class labels of x_test, for accuracy (optional)"}


def data_from_file(graph: Graph, path, max_bytes: int = 2**31) -> ModelData:
    """The data in a ``.npz`` file (``numpy.savez``), for a one-input ``graph``: the
    arrays of :data:`DATA_KEYS`, examples along axis 0, as the samples' own data is kept.

    Read without pickles, its archive checked before any array is (no zip bomb, at most
    ``max_bytes`` unpacked).

    Raises:
        qviz.LoadError: not such a file, or arrays that do not fit the graph's input.

    >>> import numpy as np, tempfile, os, qviz
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> path = os.path.join(tempfile.mkdtemp(), "d.npz")
    >>> np.savez(path, x_calib=np.zeros((4, 8, 8, 1), np.float32))
    >>> data = data_from_file(g, path)
    >>> data.origin, len(data.verification[0]), data.labels
    ('the data in d.npz', 4, None)
    >>> np.savez(path, x_calib=np.zeros((4, 9, 9, 1), np.float32))
    >>> data_from_file(g, path)
    Traceback (most recent call last):
    ...
    qviz.importers.errors.LoadError: d.npz: x_calib holds examples of shape (9, 9, 1); the model's input image:0 takes (8, 8, 1)
    """
    import numpy as np

    from .importers.errors import LoadError
    from .importers.safety import Limits, check_model_path, check_zip

    path = Path(path)
    label = path.name
    limits = Limits(max_bytes=max_bytes)
    check_model_path(path, label, limits)
    check_zip(path, label, limits)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files if k in DATA_KEYS}
    except (OSError, ValueError, EOFError) as exc:
        raise LoadError(label, f"not a numpy .npz file ({exc})") from None
    if "x_calib" not in arrays and "x_test" not in arrays:
        raise LoadError(label, "holds neither x_calib nor x_test (arrays saved with numpy.savez(path, "
                               "x_calib=…, x_test=…, y_test=…))")
    if len(graph.inputs) != 1:
        raise LoadError(label, f"the model has {len(graph.inputs)} inputs; a data file feeds one-input models only")
    node = graph.producer(graph.inputs[0])
    shape = node.attrs.get("shape")
    want = tuple(shape)[1:] if shape is not None and getattr(shape, "rank", 1) is not None else None
    for key in ("x_calib", "x_test"):
        x = arrays.get(key)
        if x is None:
            continue
        if x.dtype.kind not in "fiu" or x.ndim < 1 or len(x) == 0:
            raise LoadError(label, f"{key} is not a non-empty array of numbers ({x.dtype}, shape {x.shape})")
        if want is not None and (len(want) != x.ndim - 1 or any(w is not None and w != d
                                                                 for w, d in zip(want, x.shape[1:]))):
            shown = "(" + ", ".join("?" if w is None else str(w) for w in want) + ")"
            raise LoadError(label, f"{key} holds examples of shape {tuple(x.shape[1:])}; the model's input "
                                   f"{graph.inputs[0]} takes {shown}")
    calib = arrays.get("x_calib", arrays.get("x_test")).astype(np.float32, copy=False)
    test = arrays.get("x_test", arrays.get("x_calib")).astype(np.float32, copy=False)
    labels = arrays.get("y_test")
    if labels is not None and (labels.ndim != 1 or len(labels) != len(test) or labels.dtype.kind not in "iu"):
        raise LoadError(label, f"y_test must be one integer class label per example of x_test ({len(test)}), "
                               f"not {labels.dtype} of shape {labels.shape}")
    return ModelData((calib,), (test,), labels, f"the data in {label}")
