"""The weights a Keras config declares, against those its file stores.

Keras builds every layer, allocating its weights, before it reads one stored
value: a config edited to say ``"filters": 150000000`` made a 30 KB ``.keras``
take 18 GB of memory before Keras noticed the stored kernel did not fit. The
weights a layer declares are known, in part, from its config alone — at least
``filters × kernel`` for a convolution, whatever its input — so a file whose
layers declare more weights than it stores is refused before Keras builds it.

>>> conv = {"class_name": "Conv2D", "config": {"name": "c", "filters": 150_000_000, "kernel_size": [3, 3]}}
>>> declared_at_least({"class_name": "Functional", "config": {"layers": [conv]}})
(1350000000, 'c')
>>> oversized({"class_name": "Functional", "config": {"layers": [conv]}}, stored=2_000)
'its layers declare at least 1,350,000,000 weights (the most: layer c), but the file stores 2,000'
"""

from __future__ import annotations

import math

__all__ = ["declared_at_least", "oversized", "stored_weights"]

#: Weights stored beyond those counted, before a file is refused (rounding, a few
#: layers whose weights the table does not know).
SLACK = 1024


def _ints(value) -> list[int] | None:
    values = value if isinstance(value, list) else [value]
    if values and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        return values
    return None


def _at_least(cls: str, cfg: dict) -> int:
    """A lower bound on the weights of one layer, from its config alone (0: not known)."""
    get = lambda key: _ints(cfg.get(key))   # noqa: E731
    kernel = get("kernel_size")
    size = math.prod(kernel) if kernel else 1
    if cls in ("Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose"):
        filters = get("filters")
        return filters[0] * size if filters else 0
    if cls in ("DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D"):
        multiplier, filters = get("depth_multiplier"), get("filters")
        return (multiplier[0] if multiplier else 1) * size + (filters[0] if filters else 0)
    if cls == "Dense":
        units = get("units")
        return units[0] if units else 0
    if cls == "Embedding":
        rows, cols = get("input_dim"), get("output_dim")
        return rows[0] * cols[0] if rows and cols else 0
    gates = {"LSTM": 4, "GRU": 3, "SimpleRNN": 1}.get(cls)
    if gates:
        units = get("units")
        return gates * units[0] * units[0] if units else 0
    return 0


def declared_at_least(config) -> tuple[int, str | None]:
    """``(weights, the largest layer's name)``: a lower bound on the weights ``config``'s
    layers declare (nested models and wrapped layers included). Walks the config without
    recursion."""
    total, largest, most = 0, None, -1
    stack = [config]
    while stack:
        obj = stack.pop()
        if isinstance(obj, list):
            stack.extend(obj)
            continue
        if not isinstance(obj, dict):
            continue
        cls, cfg = obj.get("class_name"), obj.get("config")
        if isinstance(cls, str) and isinstance(cfg, dict):
            n = _at_least(cls, cfg)
            total += n
            if n > most:
                most, largest = n, cfg.get("name") if isinstance(cfg.get("name"), str) else cls
        stack.extend(obj.values())
    return total, largest


def oversized(config, stored: int) -> str | None:
    """Why ``config`` cannot be the model of a file storing ``stored`` weights, or None."""
    declared, largest = declared_at_least(config)
    if declared > stored + SLACK:
        return (f"its layers declare at least {declared:,} weights (the most: layer {largest}), but the file "
                f"stores {stored:,}")
    return None


def stored_weights(h5file) -> tuple[int, int]:
    """``(values, bytes)`` an open ``h5py.File``'s datasets hold, from their shapes and types
    (nothing read: a dataset's shape is its size once read, however well it compresses)."""
    import h5py

    values = nbytes = 0

    def count(_name, obj):
        nonlocal values, nbytes
        if isinstance(obj, h5py.Dataset) and obj.shape is not None:
            values += math.prod(obj.shape)
            nbytes += math.prod(obj.shape) * obj.dtype.itemsize

    h5file.visititems(count)
    return values, nbytes
