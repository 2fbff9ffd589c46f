"""Calibration: the inputs activation ranges are measured on, and the measuring.

What to calibrate on is the caller's choice (a model's own data: see
:func:`qviz.samples.data_for`); :func:`noise_inputs` is the fallback.

>>> import qviz
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> [x.shape for x in noise_inputs(g)]     # fixed-seed noise shaped like the input
[(64, 8, 8, 1)]
>>> relu = g.layer_nodes("relu1")[-1].output(0)
>>> lo, hi = activation_ranges(g, [relu], noise_inputs(g))[relu]
>>> lo == 0.0 and hi > 0
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import ModelRunError
from .. import runtime
from ..ir import Graph

__all__ = ["noise_inputs", "activation_ranges", "as_input_list", "CalibrationError", "CALIBRATION_BATCH"]

#: Examples a calibration runs at once. TensorFlow holds every activation of a batch while
#: it runs: MobileNetV2's 64 noise examples took 2.1 GB at once, 1.3 GB eight at a time,
#: in 0.46 s instead of 0.53 (``benchmarks/worker_memory.py``).
CALIBRATION_BATCH = 8
#: ...but an EMA's are 64: its average is taken over the batches, so their size is part
#: of the recipe's numbers (64 is what they have always been).
EMA_BATCH = 64


class CalibrationError(ModelRunError, ValueError):
    """Calibration inputs cannot be made or do not fit the graph."""


def noise_inputs(graph: Graph, count: int = 64, seed: int = 0) -> list[np.ndarray]:
    """``count`` examples of fixed-seed standard normal noise shaped like each
    graph input: what qviz calibrates and verifies on when the caller gives
    no data. Real data gives real ranges; noise only shows the mechanics.

    Raises:
        CalibrationError: an input's shape is unknown beyond the batch.
    """
    rng = np.random.default_rng(seed)
    out = []
    for tensor in graph.inputs:
        node = graph.producer(tensor)
        shape = node.attrs.get("shape")
        dtype = node.attrs.get("dtype")
        if shape is None or shape.rank is None:
            raise CalibrationError(f"input {tensor} has an unknown shape: give it (--input-shape, or input_shape= "
                                   "to qviz.load) or give calibration inputs")
        dims = list(shape)
        if dims and dims[0] is None:
            dims[0] = count
        if any(d is None for d in dims):
            raise CalibrationError(f"input {tensor} has shape {shape} with unknown dimensions "
                                   "besides the batch; give calibration inputs")
        np_dtype = dtype.numpy if dtype is not None else np.float32
        out.append(rng.standard_normal(dims).astype(np_dtype))
    return out


def as_input_list(graph: Graph, data) -> list[np.ndarray]:
    """``data`` as one array per graph input: a list or tuple of arrays as given,
    or a bare array for a one-input graph (as Keras' ``predict`` takes it).

    >>> import numpy as np, qviz
    >>> from qviz.samples import sample_path
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> [x.shape for x in as_input_list(g, np.zeros((4, 8, 8, 1), np.float32))]
    [(4, 8, 8, 1)]
    """
    if isinstance(data, (list, tuple)):
        return list(data)
    if len(graph.inputs) != 1:
        raise CalibrationError(f"one array was given, but the graph has {len(graph.inputs)} inputs: "
                               "give a list with one array per input")
    return [np.asarray(data)]


def _batches(inputs: Sequence[np.ndarray], batch_size: int):
    n = len(inputs[0])
    if any(len(x) != n for x in inputs):
        raise CalibrationError("calibration inputs have different batch sizes: "
                               f"{[len(x) for x in inputs]}")
    for start in range(0, n, batch_size):
        yield [x[start:start + batch_size] for x in inputs]


def activation_ranges(graph: Graph, tensors: Sequence[str], inputs: Sequence[np.ndarray], *,
                      batch_size: int | None = None, ema_decay: float | None = None) -> dict[str, tuple[float, float]]:
    """``{tensor: (min, max)}`` seen while running ``graph`` on ``inputs``.

    Args:
        tensors: the tensors to observe.
        inputs: one array per graph input (examples along axis 0).
        batch_size: examples per run: :data:`CALIBRATION_BATCH`, or with ``ema_decay``
            :data:`EMA_BATCH`, the examples of each update of the average.
        ema_decay: ``None`` keeps the overall min and max; a decay ``d`` keeps an
            exponential moving average of each batch's min and max instead
            (``r ← d·r + (1−d)·batch``, started at the first batch), as TF's
            ``MovingAvgQuantize`` does during training.
    """
    if ema_decay is not None and not 0.0 <= ema_decay < 1.0:
        raise CalibrationError(f"ema_decay must be in [0, 1), got {ema_decay}")
    inputs = as_input_list(graph, inputs)
    if len(inputs) != len(graph.inputs):
        raise CalibrationError(f"the graph has {len(graph.inputs)} input(s), "
                               f"but {len(inputs)} calibration array(s) were given")
    tensors = list(dict.fromkeys(tensors))
    if not tensors:
        return {}
    if batch_size is None:
        batch_size = CALIBRATION_BATCH if ema_decay is None else EMA_BATCH
    lo = np.full(len(tensors), np.inf)
    hi = np.full(len(tensors), -np.inf)
    first = True
    for batch in _batches([np.asarray(x) for x in inputs], batch_size):
        b_lo, b_hi = runtime.extrema(graph, *batch, tensors=tensors)   # (not the activations themselves)
        if ema_decay is None or first:
            lo, hi = np.minimum(lo, b_lo), np.maximum(hi, b_hi)
        else:
            lo = ema_decay * lo + (1 - ema_decay) * b_lo
            hi = ema_decay * hi + (1 - ema_decay) * b_hi
        first = False
    if first:
        raise CalibrationError("no calibration examples were given")
    bad = [t for t, a, b in zip(tensors, lo, hi) if not (math.isfinite(a) and math.isfinite(b))]
    if bad:   # (a NaN range made every later number NaN, then "math domain error")
        raise CalibrationError(f"the calibration gives {bad[0]} a range of [{lo[tensors.index(bad[0])]:.3g}, "
                               f"{hi[tensors.index(bad[0])]:.3g}] ({len(bad)} tensor(s) so): NaN or inf in "
                               "the calibration inputs or the model's values")
    return {t: (float(a), float(b)) for t, a, b in zip(tensors, lo, hi)}
