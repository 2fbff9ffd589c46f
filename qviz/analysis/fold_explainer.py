"""The numbers of one batch-norm fold, for teaching: per-channel γ, β, μ, σ², ε,
the multiplier, old and new weights and bias, and a numeric check.

>>> import qviz
>>> from qviz.samples import sample_path
>>> e = explain_fold(qviz.load(sample_path("lenet_digits")), "conv1")
>>> e.bn_layer, e.kind, e.values.multiplier.shape, e.max_abs_diff < 1e-4
('bn1', 'unfused', (16,), True)

The formula worked through for one channel, on the model's own numbers:

>>> print(e.worked(0)[0])
s₀ = γ₀ / √(σ²₀ + ε) = 1.046 / √(0.008646 + 0.001) = 1.046 / 0.09822 = 10.65
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph
from ..ir.ops import channels_last_shape
from ..passes import fold_batch_norms, fold_candidates
from ..passes.calibration import noise_inputs
from ..passes.fold_batch_norms import FoldValues
from ..metrics import layer_outputs
from .. import runtime

__all__ = ["FoldExplanation", "explain_fold", "foldable_candidate", "FORMULAS", "worked_channel"]

#: The fold, in Markdown with LaTeX (render with MathJax).
FORMULAS = r"""
A batch norm after the layer computes, per output channel $c$:

$$y_c = \gamma_c \frac{x_c - \mu_c}{\sqrt{\sigma_c^2 + \varepsilon}} + \beta_c = s_c\,x_c + t_c,
\qquad s_c = \frac{\gamma_c}{\sqrt{\sigma_c^2 + \varepsilon}},\quad t_c = \beta_c - \mu_c\,s_c$$

Since $x_c = (w * \text{input})_c + b_c$ is linear in the weights of channel $c$, the scale moves into them:

$$w'_{\cdot,c} = s_c\,w_{\cdot,c} \qquad b'_c = s_c\,b_c + t_c = \beta_c + (b_c - \mu_c)\,s_c$$
"""


@dataclass(frozen=True)
class FoldExplanation:
    layer: str
    bn_layer: str
    op: str                    # Conv2D | DepthwiseConv2dNative | MatMul
    kind: str                  # "fused" | "unfused"
    values: FoldValues
    weights_shape: tuple
    max_abs_diff: float        # folded layer output vs layer → batch norm, on sample inputs
    examples: int
    orders: object = None      # a qviz.analysis.fold_orders.FoldOrders, when measured (the app's explainer)

    def worked(self, channel: int = 0) -> list[str]:
        """The fold's formulas for output ``channel`` with this model's numbers, one line each."""
        return worked_channel(self.values, self.op, channel)

    @property
    def channel_norms(self) -> tuple[np.ndarray, np.ndarray]:
        """L2 norm of each output channel's weights, before and after."""
        return _channel_norms(self.values.weights, self.op), _channel_norms(self.values.folded_weights, self.op)


_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def worked_channel(v: FoldValues, op: str, c: int = 0) -> list[str]:
    """The fold of output channel ``c`` worked through with the numbers in ``v``:
    the multiplier s, the offset t, the new bias b′, and what happens to the
    channel's weights (its largest one, before and after)."""
    n = str(c).translate(_SUB)
    g, b, mu, var = (float(np.ravel(x)[c]) for x in (v.gamma, v.beta, v.mean, v.variance))
    s, t = float(np.ravel(v.multiplier)[c]), float(np.ravel(v.offset)[c])
    bias, new_bias = float(np.ravel(v.bias)[c]), float(np.ravel(v.folded_bias)[c])
    w = v.weights.reshape(channels_last_shape(op, v.weights.shape))
    w2 = v.folded_weights.reshape(w.shape)
    col, col2 = w.reshape(-1, w.shape[-1])[:, c], w2.reshape(-1, w.shape[-1])[:, c]
    k = int(np.argmax(np.abs(col)))
    root = float(np.sqrt(var + v.epsilon))
    # √(1 + 0.001) to 4 digits is "1", and "1 / 1 = 0.9995" reads as false arithmetic
    shown_root = f"{root:.4g}"
    if float(shown_root) != root and float(shown_root).is_integer():
        shown_root = f"{root:.6g}"

    def f(x: float) -> str:
        return f"{x:.4g}" if x >= 0 else f"({x:.4g})"

    return [f"s{n} = γ{n} / √(σ²{n} + ε) = {g:.4g} / √({var:.4g} + {v.epsilon:g}) = {g:.4g} / {shown_root} = {s:.4g}",
            f"t{n} = β{n} − μ{n}·s{n} = {b:.4g} − {f(mu)}·{s:.4g} = {t:.4g}",
            f"b′{n} = s{n}·b{n} + t{n} = {s:.4g}·{f(bias)} + {f(t)} = {new_bias:.4g}",
            f"w′{n} = s{n}·w{n}: each of channel {c}'s {col.size} weights times {s:.4g}; its largest, "
            f"{col[k]:.4g}, becomes {col2[k]:.4g}"]


def _channel_norms(w: np.ndarray, op: str) -> np.ndarray:
    w = w.reshape(channels_last_shape(op, w.shape)).astype(np.float64)
    return np.sqrt((w ** 2).reshape(-1, w.shape[-1]).sum(axis=0))


def foldable_candidate(graph: Graph, layer: str):
    """The fold candidate of ``layer`` (:func:`qviz.passes.fold_candidates`), if it folds:
    the conv/dense layer, or its batch norm (as the app's selection of either explains it).

    Raises:
        ValueError: the layer has no batch norm after it, or that one cannot be folded (why).
    """
    candidates = fold_candidates(graph)
    cand = next((c for c in candidates if c.layer == layer), None) or \
        next((c for c in candidates if c.bn_layer == layer and c.layer is not None), None)
    if cand is None:
        raise ValueError(f"layer {layer!r} has no batch norm after it")
    if not cand.foldable:
        raise ValueError(f"the batch norm after {layer} cannot be folded: {cand.reason}")
    return cand


def explain_fold(graph: Graph, layer: str, inputs=None, examples: int = 8) -> FoldExplanation:
    """Explain folding the batch norm after ``layer`` (a conv/dense layer name).

    Raises:
        ValueError: the layer has no foldable batch norm (the message says why).
    """
    cand = foldable_candidate(graph, layer)
    m = cand.match
    folded = fold_batch_norms(graph, [layer]).graph
    x = [a[:examples] for a in (inputs if inputs is not None else noise_inputs(graph))]
    want = runtime.run(graph, *x, fetches=[layer_outputs(graph)[cand.bn_layer]])[0]
    got = runtime.run(folded, *x, fetches=[layer_outputs(folded)[layer]])[0]
    return FoldExplanation(layer, cand.bn_layer, m.layer_op.op, "fused" if m.fused else "unfused",
                           cand.values, tuple(cand.values.weights.shape),
                           float(np.abs(got.astype(np.float64) - want).max()), len(x[0]))
