"""Why folding a batch norm can hurt per-tensor quantization, on the layer's own weights.

The fold scales output channel ``c`` of the weights by ``s_c = γ_c/√(σ²_c+ε)``.
When the ``s_c`` differ, so do the channels' ranges after the fold; one
per-tensor scale is set by the widest channel, and a narrow channel then uses
only a few of the grid's steps. A per-channel scale gives each channel the whole
grid. :func:`channel_ranges` measures that: every output channel's weight range
before and after the fold, and the quantization error (SQNR, dB) each scheme
gives at a width, computed the way TensorFlow's FakeQuant ops compute it
(:func:`fake_quant`, checked against them in the tests).

>>> import qviz
>>> from qviz.samples import sample_path
>>> r = channel_ranges(qviz.load(sample_path("lenet_digits")), "conv1", bits=4)
>>> r.bn_layer, r.channels, r.after.lo.shape
('bn1', 16, (16,))
>>> e = r.error("after fold", "per-channel")
>>> bool(e.sqnr_db > r.error("after fold", "per-tensor").sqnr_db)    # per-channel fits each channel
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph
from ..ir.ops import channels_last_shape
from ..passes.quantize import weight_range
from ..metrics.report import sqnr_db
from .fold_explainer import foldable_candidate
from .quant_grid import fake_quant

__all__ = ["ChannelSpan", "SchemeError", "ChannelRanges", "channel_ranges",
           "channel_ranges_of", "STAGES", "SCHEMES"]

STAGES = ("before fold", "after fold")
SCHEMES = ("per-tensor", "per-channel")


@dataclass(frozen=True)
class ChannelSpan:
    """Each output channel's weight range ``[lo, hi]`` at one stage."""
    lo: np.ndarray
    hi: np.ndarray

    @property
    def width(self) -> np.ndarray:
        return self.hi - self.lo


@dataclass(frozen=True)
class SchemeError:
    """The quantization error of one scheme at one stage: the whole tensor's SQNR
    and each output channel's."""
    stage: str                 # "before fold" | "after fold"
    scheme: str                # "per-tensor" | "per-channel"
    sqnr_db: float
    channel_sqnr_db: np.ndarray


@dataclass(frozen=True)
class ChannelRanges:
    layer: str
    bn_layer: str
    op: str
    bits: int
    narrow_range: bool
    multiplier: np.ndarray     # s_c, one per output channel (flattened for depthwise)
    before: ChannelSpan
    after: ChannelSpan
    errors: tuple[SchemeError, ...]

    @property
    def channels(self) -> int:
        return len(self.multiplier)

    def error(self, stage: str, scheme: str) -> SchemeError:
        return next(e for e in self.errors if e.stage == stage and e.scheme == scheme)

    def steps_of_narrowest(self, stage: str = "after fold") -> tuple[int, float]:
        """(the narrowest channel, how many of the per-tensor grid's steps its range spans)."""
        span = self.after if stage == "after fold" else self.before
        whole = float(span.hi.max() - span.lo.min())
        c = int(np.argmin(span.width))
        steps = 2 ** self.bits - (2 if self.narrow_range else 1)
        return c, float(span.width[c] / whole * steps) if whole > 0 else 0.0

    def summary(self) -> str:
        """One sentence on the user's numbers: how the fold moved the per-tensor error."""
        c, steps = self.steps_of_narrowest()
        t0, t1 = self.error("before fold", "per-tensor"), self.error("after fold", "per-tensor")
        c1 = self.error("after fold", "per-channel")
        return (f"At {self.bits} bits, per-tensor SQNR goes from {_db(t0.sqnr_db)} before the fold to "
                f"{_db(t1.sqnr_db)} after it (per-channel after it: {_db(c1.sqnr_db)}). The fold multiplies "
                f"channel c by s_c, here {self.multiplier.min():.3g} to {self.multiplier.max():.3g}: one "
                f"per-tensor step is set by the widest channel, and the narrowest (channel {c}) spans "
                f"{steps:.1f} of its {2 ** self.bits - (2 if self.narrow_range else 1)} steps.")


def _db(x: float) -> str:
    return "∞ dB (exact)" if np.isinf(x) and x > 0 else f"{x:.1f} dB"


def _errors(stage: str, w: np.ndarray, bits: int, narrow_range: bool, symmetric: bool) -> list[SchemeError]:
    """``w`` with output channels on the last axis."""
    out = []
    for scheme, axis in (("per-tensor", None), ("per-channel", -1)):
        lo, hi = weight_range(w, symmetric, axis=axis)
        q = fake_quant(w, lo, hi, bits, narrow_range)
        flat_w, flat_q = w.reshape(-1, w.shape[-1]), q.reshape(-1, w.shape[-1])
        per_channel = np.array([sqnr_db(flat_q[:, c], flat_w[:, c]) for c in range(w.shape[-1])])
        out.append(SchemeError(stage, scheme, sqnr_db(q, w), per_channel))
    return out


def channel_ranges_of(values, op: str, layer: str, bn_layer: str, bits: int = 8, *,
                      narrow_range: bool = True, symmetric: bool = True) -> ChannelRanges:
    """:func:`channel_ranges` from a fold's numbers (a
    :class:`qviz.passes.fold_batch_norms.FoldValues`) with no graph."""
    if not 2 <= int(bits) <= 16:
        raise ValueError(f"bits must be 2 to 16, not {bits}")
    spans, errors = [], []
    for stage, w in zip(STAGES, (values.weights, values.folded_weights)):
        w = np.asarray(w, np.float32).reshape(channels_last_shape(op, w.shape))
        spans.append(ChannelSpan(*weight_range(w, False, axis=-1)))
        errors += _errors(stage, w, int(bits), narrow_range, symmetric)
    return ChannelRanges(layer, bn_layer, op, int(bits), narrow_range, np.ravel(values.multiplier),
                         spans[0], spans[1], tuple(errors))


def channel_ranges(graph: Graph, layer: str, bits: int = 8, *, narrow_range: bool = True,
                   symmetric: bool = True) -> ChannelRanges:
    """Every output channel's weight range before and after folding the batch norm
    after ``layer``, and each quantization scheme's error at ``bits``. Data-free:
    it reads the graph's constants and runs nothing.

    Raises:
        ValueError: ``layer`` has no foldable batch norm after it (the message says why),
            or ``bits`` is not 2–16.
    """
    cand = foldable_candidate(graph, layer)
    return channel_ranges_of(cand.values, cand.match.layer_op.op, layer, cand.bn_layer, bits,
                             narrow_range=narrow_range, symmetric=symmetric)
