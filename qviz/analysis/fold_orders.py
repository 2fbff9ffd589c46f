"""Fold and quantize in which order? Three orders on one layer, each with the
output error it causes, measured on the model's own data.

1. **Fold, then quantize** — what TFLite's post-training quantization and
   ``qviz.apply`` run: the kernel is scaled by ``s = γ/√(σ²+ε)`` first, and
   the folded kernel ``s·w`` is put on the grid.
2. **Quantize, then fold** — tfmot's QAT: the *unfolded* kernel ``w`` is
   trained on the grid and the batch norm stays a layer; TFLite's converter
   folds it afterwards, giving ``s·Q(w)``. Per channel this is the same kernel
   as order 1 (each channel's grid scales with it); per tensor it is not, and
   the converter cannot store it as int8 (the conv stays float on the device).
3. **Training-mode fold** — TF ``contrib/quantize`` and QKeras while training,
   before ``freeze_batch_norm_delay``: the kernel of order 1, with the output
   rescaled by ``σ/σ_B`` to the batch's statistics; its reference is batch norm
   with those batch statistics. After the freeze it *is* order 1.

Each order's error is the SQNR of the batch norm's output (the layer and its
batch norm together) against its float reference, per tensor and per channel.

>>> import qviz
>>> from qviz.samples import sample_path, data_for
>>> g = qviz.load(sample_path("lenet_digits"))
>>> o = fold_orders(g, "conv2", bits=(4,), inputs=data_for(g).calibration)
>>> [r.order for r in o.results if r.scheme == "per-tensor"]
['fold, then quantize', 'quantize, then fold', 'training-mode fold']
>>> pt = {r.order: r.sqnr_db for r in o.results if r.scheme == "per-channel"}
>>> abs(pt["fold, then quantize"] - pt["quantize, then fold"]) < 0.01     # the same kernel per channel
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..ir import Graph
from ..ir.ops import LAYER_OPS, channels_last_shape
from ..metrics import layer_outputs
from ..metrics.report import sqnr_db
from ..passes import fold_batch_norms
from ..passes.calibration import noise_inputs
from ..passes.quantize import weight_range
from .. import runtime
from .fold_explainer import foldable_candidate
from .quant_grid import fake_quant

__all__ = ["ORDERS", "OrderResult", "FoldOrders", "fold_orders"]

#: order → (who runs it, what its output is compared with)
ORDERS = {
    "fold, then quantize": ("TFLite post-training quantization (qviz.apply)", "the float batch norm"),
    "quantize, then fold": ("tfmot QAT; TFLite's converter folds afterwards", "the float batch norm"),
    "training-mode fold": ("TF contrib/quantize and QKeras QAT while training, before the freeze",
                           "batch norm with the batch's statistics"),
}
SCHEMES = ("per-tensor", "per-channel")


@dataclass(frozen=True)
class OrderResult:
    """One order at one width and scheme: the error of the layer + batch norm output."""

    order: str
    scheme: str                # "per-tensor" | "per-channel"
    bits: int
    sqnr_db: float
    max_abs: float
    channel_sqnr_db: np.ndarray


@dataclass(frozen=True)
class FoldOrders:
    layer: str
    bn_layer: str
    op: str
    examples: int
    narrow_range: bool
    results: tuple[OrderResult, ...]
    float_check: float         # max |Δ| of the unquantized fold against the batch norm (≈ 0: the fold is exact)
    multiplier: np.ndarray = None   # s per output channel (its spread is why the orders differ per tensor)

    def result(self, order: str, scheme: str, bits: int) -> OrderResult:
        return next(r for r in self.results if (r.order, r.scheme, r.bits) == (order, scheme, bits))

    @property
    def widths(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(r.bits for r in self.results))

    def deploys(self, order: str, scheme: str, bits: int = 8) -> str:
        """What TFLite stores for this order's kernel, its weights at ``bits``
        (:func:`qviz.analysis.deployability.weight_fate`: int8, int4, or refused)."""
        from .deployability import weight_fate

        stored = weight_fate(self.layer, bits).runs_as
        if self.op == "MatMul" and scheme == "per-channel":
            return "refused: TFLite's converter takes no per-channel dense weights (qviz keeps them per-tensor)"
        if stored == "—":
            return f"refused: TFLite's converter takes no {bits}-bit weights"
        if order != "quantize, then fold":
            return f"{stored} (the folded kernel)" if order == "fold, then quantize" else f"{stored} after the freeze (order 1)"
        if self.op == "MatMul":
            return "float: the converter folds no batch norm into tfmot's dense weights"
        if scheme == "per-tensor":
            return "float: one per-tensor scale cannot absorb a per-channel s, so the converter leaves the conv float"
        return f"{stored}: s moves into the per-channel scales, the same kernel as order 1"

    def summary(self, bits: int) -> str:
        """One sentence on the user's numbers at ``bits``."""
        f1, q1 = (self.result(o, "per-tensor", bits).sqnr_db for o in ("fold, then quantize", "quantize, then fold"))
        c1 = self.result("fold, then quantize", "per-channel", bits).sqnr_db
        if abs(q1 - f1) < 0.05:
            s = np.abs(np.asarray(self.multiplier, np.float64)) if self.multiplier is not None else None
            spread = ("" if s is None or s.max() == 0 or (s.max() - s.min()) / s.max() > 0.1 else
                      f": s varies little between channels ({float(s.min()):.4g} to {float(s.max()):.4g})")
            return (f"At {bits}-bit per-tensor weights the order makes no difference on {self.layer} + "
                    f"{self.bn_layer} ({f1:.1f} dB){spread}; only folding first runs in int8 on the device. "
                    f"Per channel: {c1:.1f} dB.")
        better = "loses" if f1 < q1 else "gains"
        return (f"At {bits}-bit per-tensor weights, folding before quantizing {better} "
                f"{abs(q1 - f1):.1f} dB on {self.layer} + {self.bn_layer} ({f1:.1f} dB against {q1:.1f} dB "
                f"quantizing the unfolded kernel), but only folding first runs in int8 on the device; per channel "
                f"the two orders give the same kernel ({c1:.1f} dB).")


def _quantized(w: np.ndarray, op: str, bits: int, scheme: str, narrow_range: bool) -> np.ndarray:
    """``w`` (the op's own layout) fake-quantized symmetrically, per tensor or per output channel."""
    shaped = w.astype(np.float32).reshape(channels_last_shape(op, w.shape))
    lo, hi = weight_range(shaped, True, axis=None if scheme == "per-tensor" else -1)
    return fake_quant(shaped, lo, hi, bits, narrow_range).reshape(w.shape)


def _channel_sqnr(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    g, w = got.reshape(-1, got.shape[-1]), want.reshape(-1, want.shape[-1])
    return np.array([sqnr_db(g[:, c], w[:, c]) for c in range(w.shape[-1])])


def fold_orders(graph: Graph, layer: str, bits: Sequence[int] = (8, 6, 4, 3, 2), *, narrow_range: bool = True,
                inputs=None, examples: int = 64) -> FoldOrders:
    """The three orders of folding and quantizing ``layer``'s weights, at each width in ``bits``.

    Only the weights are quantized (activations stay float), so the numbers are
    the order's own doing. Each order feeds its kernel to the folded layer
    (:func:`qviz.runtime.run_from`) on the layer's real input.

    Raises:
        ValueError: ``layer`` has no foldable batch norm after it (the message says why).
    """
    cand = foldable_candidate(graph, layer)
    v, op = cand.values, cand.match.layer_op.op
    folded = fold_batch_norms(graph, [layer]).graph
    layer_op = next(n for n in folded.layer_nodes(layer) if n.op in LAYER_OPS)
    x_tensor, kernel_tensor = layer_op.inputs[0], layer_op.inputs[1]
    x = [a[:examples] for a in (inputs if inputs is not None else noise_inputs(graph))]
    outs = layer_outputs(graph)
    layer_in, pre_bn, reference = runtime.run(graph, *x, fetches=[x_tensor, outs[layer], outs[cand.bn_layer]])
    folded_out = layer_outputs(folded)[layer]

    def run_with(kernel):
        return runtime.run_from(folded, {x_tensor: layer_in, kernel_tensor: kernel}, [folded_out])[0]

    folded_bias = np.ravel(v.folded_bias).astype(np.float64)
    float_fold = run_with(v.folded_weights.astype(np.float32))
    # the training fold's reference: batch norm with the statistics of this batch
    axes = tuple(range(pre_bn.ndim - 1))
    mean_b, var_b = pre_bn.mean(axis=axes, dtype=np.float64), pre_bn.var(axis=axes, dtype=np.float64)
    sigma, sigma_b = np.sqrt(np.ravel(v.variance) + v.epsilon), np.sqrt(var_b + v.epsilon)
    gamma, beta, bias = (np.ravel(a).astype(np.float64) for a in (v.gamma, v.beta, v.bias))
    reference_b = gamma * (pre_bn - mean_b) / sigma_b + beta

    def training_fold(conv_of_kernel):     # conv(x, Q(s·w)), then TF contrib's correction σ/σ_B
        return (sigma / sigma_b) * conv_of_kernel + gamma * (bias - mean_b) / sigma_b + beta

    results = []
    s = np.ravel(v.multiplier).astype(np.float32)
    for b in bits:
        for scheme in SCHEMES:
            fold_first = run_with(_quantized(v.folded_weights, op, int(b), scheme, narrow_range))
            q = _quantized(v.weights, op, int(b), scheme, narrow_range)
            shaped = q.reshape(channels_last_shape(op, q.shape))
            quant_first = run_with((shaped * s).reshape(q.shape))
            training = training_fold(fold_first.astype(np.float64) - folded_bias)
            for order, got, want in (("fold, then quantize", fold_first, reference),
                                     ("quantize, then fold", quant_first, reference),
                                     ("training-mode fold", training, reference_b)):
                results.append(OrderResult(order, scheme, int(b), sqnr_db(got, want),
                                           float(np.abs(np.asarray(got, np.float64) - want).max()),
                                           _channel_sqnr(np.asarray(got), np.asarray(want))))
    check = max(float(np.abs(float_fold.astype(np.float64) - reference).max()),
                float(np.abs(training_fold(float_fold.astype(np.float64) - folded_bias) - reference_b).max()))
    return FoldOrders(layer, cand.bn_layer, op, len(x[0]), narrow_range, tuple(results), check, s)
