"""The quantization grid of a fake-quantized tensor: its levels and clipping range.

TensorFlow's FakeQuant ops first *nudge* ``[min, max]`` so that zero is exactly
representable, then round to ``2^bits`` levels (``2^bits − 1`` with
``narrow_range``, which drops the lowest).

>>> lv = quant_levels(-1.0, 1.0, 2, narrow_range=True)
>>> [round(float(x), 3) for x in lv]
[-1.0, 0.0, 1.0]
>>> len(quant_levels(0.0, 6.0, 4))
16
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import runtime
from ..ir import Graph
from ..ir.ops import FAKE_QUANT_OPS
from ..metrics.report import layer_chunk
from ..passes.constants import constant_value

__all__ = ["quant_levels", "fake_quant", "ErrorSplit", "error_split", "QuantGrid", "quant_grids", "grids_of_layer",
           "activation_tensors", "subsample", "activation_samples"]


def quant_levels(lo: float, hi: float, bits: int, narrow_range: bool = False) -> np.ndarray:
    """The values a FakeQuant with this range can output (TF's nudging included,
    in float32 as TF computes it: a zero point at exactly .5 rounds as TF's does)."""
    qmin, qmax = np.float32(1 if narrow_range else 0), np.float32(2 ** bits - 1)
    scale = (np.float32(hi) - np.float32(lo)) / (qmax - qmin)
    zero_from_min = qmin - np.float32(lo) / scale
    zero = np.clip(np.floor(zero_from_min + np.float32(0.5)) if zero_from_min >= 0
                   else np.ceil(zero_from_min - np.float32(0.5)), qmin, qmax)
    nudged_lo = (qmin - zero) * scale
    return (nudged_lo + scale * np.arange(qmax - qmin + 1, dtype=np.float32)).astype(np.float64)


def fake_quant(values: np.ndarray, lo, hi, bits: int, narrow_range: bool = True) -> np.ndarray:
    """``values`` through a FakeQuant with range ``[lo, hi]`` (scalars, or one per
    last-axis slice as the per-channel op takes them), as TensorFlow computes it:
    nudge the range so zero is a level, clamp, round half up, in float32.

    >>> [round(float(v), 4) for v in fake_quant(np.array([-1.0, -0.4, 0.1, 0.26, 2.0]), -1.0, 1.0, 3)]
    [-1.0, -0.3333, 0.0, 0.3333, 1.0]
    """
    x = np.asarray(values, np.float32)
    lo, hi = np.asarray(lo, np.float32), np.asarray(hi, np.float32)
    qmin, qmax = np.float32(1 if narrow_range else 0), np.float32(2 ** bits - 1)
    scale = (hi - lo) / (qmax - qmin)
    zero_from_min = qmin - lo / scale
    zero = np.clip(np.where(zero_from_min < 0, np.ceil(zero_from_min - 0.5), np.floor(zero_from_min + 0.5)),
                   qmin, qmax)   # std::round: half away from zero
    nudged_lo, nudged_hi = (qmin - zero) * scale, (qmax - zero) * scale
    clamped = np.clip(x, nudged_lo, nudged_hi)
    return (np.floor((clamped - nudged_lo) / scale + np.float32(0.5)) * scale + nudged_lo).astype(np.float32)


@dataclass(frozen=True)
class ErrorSplit:
    """A tensor's quantization error at one width, split by where it comes from:
    *rounding* (values inside the range, moved to the nearest level) and
    *clipping* (values outside it, cut to the end of the range). Both are mean
    squares over all values, so they add up to the total."""

    bits: int
    rounding: float
    clipping: float
    clipped: float      # the share of values outside the range

    def summary(self) -> str:
        total = self.rounding + self.clipping
        share = f"{self.clipping / total:.0%}" if total > 0 else "0%"
        return (f"error at {self.bits} bits (mean square): rounding {self.rounding:.3g}, clipping "
                f"{self.clipping:.3g} ({share} of it; {self.clipped:.2%} of values outside the range)")


def error_split(values: np.ndarray, lo: float, hi: float, bits: int, narrow_range: bool = False) -> ErrorSplit:
    """:class:`ErrorSplit` of ``values`` through a FakeQuant with range ``[lo, hi]``.

    >>> e = error_split(np.array([-1.0, -0.4, 0.1, 0.26, 2.0]), -1.0, 1.0, 3, narrow_range=True)
    >>> e.clipped, round(e.clipping, 3), e.rounding < e.clipping     # 2.0 is cut to 1.0: (1.0)² / 5
    (0.2, 0.2, True)
    """
    v = np.asarray(values, np.float32).ravel()
    if v.size == 0:
        return ErrorSplit(bits, 0.0, 0.0, 0.0)
    levels = quant_levels(lo, hi, bits, narrow_range)
    # within float32 round-off of the grid's end is inside: the largest |weight| of a symmetric
    # range lands there (it read "0.17 % of values outside the range", clipping 4e-19)
    slack = 1e-5 * float(levels[-1] - levels[0]) / max(len(levels) - 1, 1)
    inside = (v >= levels[0] - slack) & (v <= levels[-1] + slack)
    err = (v.astype(np.float64) - fake_quant(v, lo, hi, bits, narrow_range)) ** 2
    return ErrorSplit(bits, float(err[inside].sum() / v.size), float(err[~inside].sum() / v.size),
                      float((~inside).mean()))


@dataclass(frozen=True)
class QuantGrid:
    node: str            # the FakeQuant op
    kind: str            # "weights" | "activation"
    tensor: str          # the tensor it quantizes
    bits: int
    narrow_range: bool
    per_channel: bool
    lo: np.ndarray       # clipping range (per channel: one per output channel)
    hi: np.ndarray
    values: np.ndarray | None   # the weights (activations are sampled by the caller)

    def levels(self, channel: int = 0) -> np.ndarray:
        lo = float(np.ravel(self.lo)[channel if self.per_channel else 0])
        hi = float(np.ravel(self.hi)[channel if self.per_channel else 0])
        return quant_levels(lo, hi, self.bits, self.narrow_range)


def quant_grids(graph: Graph, layers: set[str]) -> list[QuantGrid]:
    """The FakeQuant ops of a rewritten graph that belong to ``layers``."""
    out = []
    for node in graph.nodes:
        if node.op not in FAKE_QUANT_OPS or node.layer not in layers:
            continue
        source = node.inputs[0]
        kind = "weights" if graph.is_constant(source) else "activation"
        lo, hi = (constant_value(graph, t) for t in node.inputs[1:3])
        out.append(QuantGrid(node.name, kind, source, int(node.attrs["num_bits"]),
                             bool(node.attrs.get("narrow_range", False)),
                             node.op.endswith("PerChannel"), lo, hi,
                             constant_value(graph, source) if kind == "weights" else None))
    return out


def grids_of_layer(graph: Graph, layer: str, reach: int = 3, limit: int = 3) -> list[QuantGrid]:
    """The quantization grids a user selecting ``layer`` wants to see: its own
    weights' grid, and the activation grids within ``reach`` ops downstream of
    its output (a conv's activation is quantized after its BiasAdd and ReLU,
    which may be layers of their own); at most ``limit``, in graph order.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> r = qviz.apply(g, qviz.Recipe.default(g), report=False)
    >>> [grid.kind for grid in grids_of_layer(r.graph, "conv1")]
    ['weights', 'activation']
    """
    from ..metrics import layer_outputs

    if layer not in graph.layers:
        return []
    near, frontier = {layer}, [layer_outputs(graph).get(layer)]
    for _ in range(reach):
        nxt = []
        for t in filter(None, frontier):
            for c in graph.consumers(t):
                near.add(c.layer)
                nxt.append(c.output(0))
        frontier = nxt
    grids = [g for g in quant_grids(graph, near)
             if (graph.node(g.node).layer == layer if g.kind == "weights"
                 else graph.producer(g.tensor).layer in near)]
    return grids[:limit]


def activation_tensors(graph: Graph) -> list[str]:
    """The tensors the activation quantizers of a rewritten graph read (not weights)."""
    return list(dict.fromkeys(n.inputs[0] for n in graph.nodes
                              if n.op in FAKE_QUANT_OPS and not graph.is_constant(n.inputs[0])))


def subsample(values: np.ndarray, keep: int = 16384, seed: int = 0) -> np.ndarray:
    """At most ``keep`` of ``values`` (flattened), picked at random with a fixed seed:
    enough for a histogram, and a whole network's activations stay a few MB.

    >>> subsample(np.arange(10.0), keep=4).shape, subsample(np.arange(3.0)).tolist()
    ((4,), [0.0, 1.0, 2.0])
    """
    flat = np.asarray(values).ravel()
    if flat.size <= keep:
        return flat
    return flat[np.random.default_rng(seed).choice(flat.size, keep, replace=False)]


def activation_samples(graph: Graph, inputs, keep: int = 16384) -> dict[str, np.ndarray]:
    """``{tensor: values}``: at most ``keep`` of what each activation quantizer of a
    rewritten graph reads (:func:`activation_tensors`) as it runs on ``inputs`` (one array
    per graph input). Run a chunk of examples at a time (:func:`qviz.metrics.report.layer_chunk`),
    each chunk sampled for its share: all of MobileNetV2's quantized activations of 64
    examples held 1.8 GB at once.

    >>> import qviz
    >>> from qviz.samples import sample_path, data_for
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> rewritten = qviz.apply(g, qviz.Recipe.default(g), report=False).graph
    >>> samples = activation_samples(rewritten, [x[:16] for x in data_for(g).calibration], keep=100)
    >>> len(samples) == len(activation_tensors(rewritten)), {len(v) for v in samples.values()}
    (True, {100})
    """
    tensors = activation_tensors(graph)
    total = len(inputs[0]) if tensors else 0
    parts: dict[str, list] = {t: [np.zeros(0, np.float32)] for t in tensors}   # (no examples: none)
    start, step = 0, 1
    while start < total:
        part = [x[start:start + step] for x in inputs]
        values = runtime.run(graph, *part, fetches=tensors)
        share = -(-keep * len(part[0]) // total)   # (rounded up: trimmed to keep at the end)
        for t, v in zip(tensors, values):
            parts[t].append(subsample(v, share, seed=start))
        if start == 0:
            step = layer_chunk(values, len(part[0]))
        start += len(part[0])
        del values   # (before the next run's values come)
    return {t: subsample(np.concatenate(p), keep) for t, p in parts.items()}
