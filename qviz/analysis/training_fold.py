"""The training-mode fold of one layer, for teaching: its graph beside the
inference fold, the formulas of each mode, and the check that it computes what
it should (batch norm with batch statistics before the freeze, the inference
fold after it).

>>> import qviz
>>> from qviz.samples import sample_path
>>> e = explain_training_fold(qviz.load(sample_path("lenet_digits")), "conv2", "tf_contrib", frozen=False)
>>> e.reference, e.max_abs_diff < 1e-4, "correction_scale" in " ".join(e.added)
('batch norm with batch statistics', True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph
from ..passes import fold_batch_norms, fold_candidates
from ..passes.calibration import noise_inputs
from ..passes.fold_training import MODES, batch_norm_with_batch_stats, fold_batch_norms_training
from ..metrics import layer_outputs
from .. import runtime

__all__ = ["TrainingFoldExplanation", "explain_training_fold", "TRAINING_FORMULAS"]

#: The freeze switch: σ = √(σ²+ε) of the moving statistics, σ_B of the batch.
_COMMON = r"""
Training sees the batch's statistics $\mu_B, \sigma_B$ of $y = w * x + b$; the moving averages
$\mu, \sigma$ are still moving. Before step `freeze_batch_norm_delay` the output must be the batch norm
with batch statistics, $\gamma\frac{y-\mu_B}{\sigma_B}+\beta$; from then on (and at inference) the one with the
moving statistics, $\gamma\frac{y-\mu}{\sigma}+\beta$ — the inference fold.
"""

TRAINING_FORMULAS = {
    "tf_contrib": _COMMON + r"""
**TF `contrib/quantize` (what TFLite's QAT does).** The weights are always scaled by the slow moving
statistics, so their quantization does not jitter from batch to batch:

$$w' = \underbrace{\tfrac{\sigma_B}{\sigma}}_{\text{correction_scale}}\,w\cdot\frac{\gamma}{\sigma_B}
= w\,\frac{\gamma}{\sigma}$$

and the output is corrected:

$$(w' * x)\cdot\text{correction_recip} + \text{correction_offset} + \beta - \gamma\,\frac{\mu_B - b}{\sigma_B}$$

| | before the freeze | after |
|---|---|---|
| `correction_recip` | $\sigma/\sigma_B$ | $1$ |
| `correction_offset` | $0$ | $\gamma\left(\frac{\mu_B-b}{\sigma_B} - \frac{\mu-b}{\sigma}\right)$ |
""",
    "ema_stats_folding": _COMMON + r"""
**QKeras `ema_stats_folding`.** As TF's, written differently: the kernel is folded with the moving
statistics, $w' = w\,\gamma/\sigma$; before the freeze the output is multiplied by
$y_\text{corr} = \sigma/\sigma_B$ and the bias uses the batch statistics:

| | before the freeze | after |
|---|---|---|
| $y_\text{corr}$ | $\sigma/\sigma_B$ | $1$ |
| bias | $\beta + (b-\mu_B)\,\gamma/\sigma_B$ | $\beta + (b-\mu)\,\gamma/\sigma$ |
""",
    "batch_stats_folding": _COMMON + r"""
**QKeras `batch_stats_folding`.** The kernel is folded with whichever statistics are in use — the
batch's before the freeze, the moving ones after — and there is no output correction:

$$w' = w\,\frac{\gamma}{\sigma_\ast},\qquad b' = \beta + (b - \mu_\ast)\,\frac{\gamma}{\sigma_\ast},\qquad
(\mu_\ast, \sigma_\ast) = \begin{cases}(\mu_B, \sigma_B) & \text{before the freeze}\\
(\mu, \sigma) & \text{after}\end{cases}$$

The quantized weights then change with every batch until the freeze.
""",
}


@dataclass(frozen=True)
class TrainingFoldExplanation:
    layer: str
    bn_layer: str
    mode: str
    frozen: bool
    graph: Graph               # the training-mode fold of this layer only
    inference: Graph           # the inference fold of this layer only
    added: tuple[str, ...]     # nodes the training fold adds
    reference: str             # what it was checked against
    max_abs_diff: float
    examples: int


def explain_training_fold(graph: Graph, layer: str, mode: str = "tf_contrib", *, frozen: bool = False,
                          delay: int = 1000, inputs=None, examples: int = 16) -> TrainingFoldExplanation:
    """The training fold of ``layer``'s batch norm in ``mode``, at a step before
    (``frozen=False``) or after the ``delay``.

    Raises:
        ValueError: the layer has no foldable batch norm, or an unknown mode.
    """
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    cand = next((c for c in fold_candidates(graph) if c.layer == layer), None)
    if cand is None:
        raise ValueError(f"layer {layer!r} has no batch norm after it")
    if not cand.foldable:
        raise ValueError(f"the batch norm after {layer} cannot be folded: {cand.reason}")
    r = fold_batch_norms_training(graph, [layer], mode=mode, freeze_batch_norm_delay=delay,
                                  step=delay if frozen else 0)
    if r.skipped:
        raise ValueError(str(r.skipped[0]))
    inference = fold_batch_norms(graph, [layer]).graph
    x = [a[:examples] for a in (inputs if inputs is not None else noise_inputs(graph))]
    got = runtime.run(r.graph, *x, fetches=[layer_outputs(r.graph)[layer]])[0]
    if frozen:
        want, reference = runtime.run(inference, *x, fetches=[layer_outputs(inference)[layer]])[0], "the inference fold"
    else:
        y = runtime.run(graph, *x, fetches=[cand.match.bn_input])[0]
        want, reference = batch_norm_with_batch_stats(y, cand.values), "batch norm with batch statistics"
    diff = float(np.abs(np.asarray(got, np.float64) - want).max())
    return TrainingFoldExplanation(layer, cand.bn_layer, mode, frozen, r.graph, inference,
                                   r.changes.added, reference, diff, len(x[0]))
