"""Training-mode batch-norm folding: the graph quantization-aware training runs.

At inference a batch norm folds into constants (:mod:`.fold_batch_norms`). While
training it cannot: the batch norm normalizes with the statistics of the
current batch (μ_B, σ_B), and the moving averages (μ, σ) are still moving. The
fold is rewritten so that the *weights* are always scaled by a slowly moving
factor (quantized weights then jitter less from batch to batch), and a
correction on the layer's output restores batch-norm semantics. Three variants:

``"tf_contrib"`` (TF 1 ``contrib/quantize``, what TFLite's QAT does)
    ``w' = (correction_scale · w) · γ/σ_B`` with ``correction_scale = σ_B/σ``,
    i.e. ``w' = w·γ/σ``; the layer output is multiplied by ``correction_recip``
    and ``correction_offset`` is added, then the bias ``β − μ_B·γ/σ_B``. Before
    the freeze: ``correction_recip = σ/σ_B`` and ``correction_offset = 0`` (batch
    statistics); from step ``freeze_batch_norm_delay`` on: ``correction_recip = 1``
    and ``correction_offset = γ(μ_B/σ_B − μ/σ)`` (moving statistics; both means
    taken without the layer's bias, which the new conv does not add).
``"ema_stats_folding"`` (QKeras' default)
    ``w' = w·γ/σ`` always; before the freeze the output is multiplied by
    ``y_corr = σ/σ_B`` and the bias uses the batch statistics,
    ``β + (b − μ_B)·γ/σ_B``; after it ``y_corr = 1`` and ``β + (b − μ)·γ/σ``.
``"batch_stats_folding"`` (QKeras)
    the weights are folded with the batch statistics (``w·γ/σ_B``) before the
    freeze and with the moving ones after; no output correction.

In every variant the output equals the batch norm with batch statistics before
the freeze and the inference fold after it — the tests check both. Here
σ = √(σ²+ε), and the batch statistics are those of the layer's un-normalized
output (conv + bias), so the layer op is kept once, with the original weights,
just to measure them.

A frozen graph has no training step and no variables, so the step is a
``PlaceholderWithDefault`` named :data:`STEP` (default ``step``) and the switch
is ``GreaterEqual(step, freeze_batch_norm_delay)`` feeding ``SelectV2`` ops;
the moving averages' own updates are not part of the graph. With
``freeze_batch_norm_delay=None`` the batch statistics are used for ever and no
switch is built.

>>> import qviz
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> r = fold_batch_norms_training(g, ["conv1"], mode="tf_contrib", freeze_batch_norm_delay=100)
>>> sorted(n.rsplit("/", 1)[-1] for n in r.changes.by_layer()["conv1"].added
...        if "correction" in n)
['correction_add', 'correction_mult', 'correction_offset', 'correction_recip', 'correction_scale']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..ir import Graph, GraphError, Node
from ..ir.attrs import Shape
from ..ir.ops import MATMUL, channel_scale_shape
from .fold_batch_norms import BatchNormMatch, FoldValues, fold_candidates
from .result import PassResult, Skipped
from .rewrite import GraphEditor, const_node

__all__ = ["MODES", "STEP", "fold_batch_norms_training", "batch_norm_with_batch_stats"]

MODES = ("tf_contrib", "ema_stats_folding", "batch_stats_folding")
#: The training step the freeze switch reads (a PlaceholderWithDefault).
STEP = "qviz_training/step"


@dataclass(frozen=True)
class _Ctx:
    """One fold in progress: where new nodes go and how to name them."""

    editor: GraphEditor
    scope: str
    layer: str
    dtype: np.dtype

    def const(self, name, value, after):
        return self.editor.add(const_node(self.editor.unique_name(f"{self.scope}/{name}"),
                                          np.asarray(value, self.dtype), self.layer), after=after).output(0)

    def op(self, name, op, inputs, after, **attrs):
        attrs.setdefault("T", self.dtype)
        node = Node(self.editor.unique_name(f"{self.scope}/{name}"), op, list(inputs), attrs=attrs,
                    layer=self.layer)
        return self.editor.add(node, after=after.split(":")[0]).output(0)


def fold_batch_norms_training(graph: Graph, layers: Iterable[str] | None = None, *,
                              mode: str = "tf_contrib", freeze_batch_norm_delay: int | None = None,
                              step: int = 0) -> PassResult:
    """Rewrite conv/dense + batch norm into the training-mode fold of ``mode``.

    Args:
        graph: the graph (not modified).
        layers: conv/dense layers whose batch norm to fold; ``None`` = every foldable one.
        mode: one of :data:`MODES`.
        freeze_batch_norm_delay: the step from which the moving statistics are
            used; ``None`` never switches.
        step: the default value of the :data:`STEP` placeholder.

    Raises:
        ValueError: an unknown mode or a negative delay.
        GraphError: a name in ``layers`` is not a layer of the graph.
    """
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    if freeze_batch_norm_delay is not None and freeze_batch_norm_delay < 0:
        raise ValueError(f"freeze_batch_norm_delay: must be ≥ 0, got {freeze_batch_norm_delay}")
    wanted = None if layers is None else set(layers)
    for name in sorted(wanted or ()):
        if name not in graph.layers:
            raise GraphError(f"fold_batch_norms_training: no layer named {name!r} in the graph")
    editor = GraphEditor(graph)
    skipped, frozen = [], None
    for cand in fold_candidates(graph):
        if wanted is not None and cand.layer not in wanted and cand.bn_layer not in wanted:
            continue
        reason = cand.reason or _unsupported(cand.match)
        if reason:
            skipped.append(Skipped(cand.bn_layer, cand.bn_node, reason))
            continue
        if freeze_batch_norm_delay is not None and frozen is None:
            frozen = _freeze_switch(graph, editor, freeze_batch_norm_delay, step)
        _fold_one(graph, editor, cand.match, cand.values, mode, frozen)
    return editor.finish(skipped)


def _unsupported(m: BatchNormMatch) -> str | None:
    if m.layer_op.op != MATMUL and m.layer_op.attrs.get("data_format", "NHWC") != "NHWC":
        return f"{m.layer_op.name} is NCHW; the training-mode fold handles NHWC only"
    if any(n.op == "BatchToSpaceND" for n in m.chain):
        return f"{m.layer_op.name} is atrous (BatchToSpaceND); the training-mode fold does not handle it"
    return None


def _freeze_switch(graph: Graph, editor: GraphEditor, delay: int, step: int) -> str:
    """``GreaterEqual(step, delay)``: true once the moving statistics take over."""
    first = graph.nodes[0].name
    default = editor.add(const_node(f"{STEP}/default", np.int64(step), "qviz_training"), after=first)
    placeholder = editor.add(Node(STEP, "PlaceholderWithDefault", [default.output(0)],
                                  attrs={"dtype": np.dtype("int64"), "shape": Shape(())},
                                  layer="qviz_training"), after=default.name)
    limit = editor.add(const_node("qviz_training/freeze_batch_norm_delay", np.int64(delay), "qviz_training"),
                       after=placeholder.name)
    return editor.add(Node("qviz_training/use_moving_average", "GreaterEqual",
                           [placeholder.output(0), limit.output(0)], attrs={"T": np.dtype("int64")},
                           layer="qviz_training"), after=limit.name).output(0)


def _weights_view(m: BatchNormMatch, w: np.ndarray) -> tuple[int, ...] | None:
    """The shape a per-channel vector takes to scale the weights (None: as is)."""
    return channel_scale_shape(m.layer_op.op, w.shape, bool(m.layer_op.attrs.get("transpose_b")))


def _fold_one(graph, editor, m: BatchNormMatch, v: FoldValues, mode: str, frozen: str | None) -> None:
    """Replace one batch norm by the training fold of ``mode`` (the statistics both
    modes need first, then the mode's own weights, bias and correction)."""
    ctx = _Ctx(editor, f"{graph.layer_scope(m.layer)}/BatchNorm_Fold", m.layer, np.dtype(v.weights.dtype))
    stats = _statistics(ctx, m, v)
    build = {"tf_contrib": _contrib_fold, "ema_stats_folding": _ema_stats_fold,
             "batch_stats_folding": _batch_stats_fold}[mode]
    out = build(_Fold(ctx, m, v, frozen), stats)
    changed = editor.reroute(out, m.output)
    if not editor.replace_output(m.output, out) and changed == 0:
        raise GraphError(f"folding {m.bn.name} for training: nothing reads its output {m.output}")


@dataclass(frozen=True)
class _Stats:
    """The tensors every training fold reads: the batch norm's constants and the
    batch statistics of the layer's output ``y``."""

    at: str                # where the nodes that follow are placed (after the batch variance)
    gamma: str
    beta: str
    moving_mean: str
    bias: str              # the layer's own bias (zeros without one)
    mean_b: str            # μ_B
    recip_sigma_b: str     # 1/σ_B
    recip_sigma_mv: str    # 1/σ (moving)


def _statistics(ctx: _Ctx, m: BatchNormMatch, v: FoldValues) -> _Stats:
    y = at = m.bn_input                      # conv (+ bias): what the batch norm normalizes
    eps = ctx.const("epsilon", v.epsilon, at)
    gamma, beta = ctx.const("gamma", v.gamma, at), ctx.const("beta", v.beta, at)
    moving_mean = ctx.const("moving_mean", v.mean, at)
    moving_var = ctx.const("moving_variance", v.variance, at)
    bias = ctx.const("layer_bias", v.bias, at)
    rank = 2 if m.layer_op.op == MATMUL else 4
    axes = ctx.editor.add(const_node(ctx.editor.unique_name(f"{ctx.scope}/moment_axes"),
                                     np.arange(rank - 1, dtype=np.int32), m.layer), after=at).output(0)
    mean_b = ctx.op("batch_mean", "Mean", [y, axes], at, Tidx=np.dtype("int32"), keep_dims=False)
    centered = ctx.op("squared_difference", "SquaredDifference",
                      [y, ctx.op("stop_gradient", "StopGradient", [mean_b], mean_b)], mean_b)
    var_b = ctx.op("batch_variance", "Mean", [centered, axes], centered, Tidx=np.dtype("int32"),
                   keep_dims=False)
    at = var_b
    recip_sigma_b = ctx.op("recip_sigma_batch", "Rsqrt", [ctx.op("var_eps_batch", "AddV2", [var_b, eps], at)], at)
    recip_sigma_mv = ctx.op("recip_sigma_moving", "Rsqrt",
                            [ctx.op("var_eps_moving", "AddV2", [moving_var, eps], at)], at)
    return _Stats(at, gamma, beta, moving_mean, bias, mean_b, recip_sigma_b, recip_sigma_mv)


@dataclass(frozen=True)
class _Fold:
    """One fold being built: where, of what, and the freeze switch (None: no switch)."""

    ctx: _Ctx
    m: BatchNormMatch
    v: FoldValues
    frozen: str | None

    def select(self, name: str, when_frozen: str, before: str) -> str:
        """``when_frozen`` after the freeze, ``before`` until then (``before`` with no switch)."""
        if self.frozen is None:
            return before
        return self.ctx.op(name, "SelectV2", [self.frozen, when_frozen, before], before)

    def scale_weights(self, name: str, vector: str, after: str, weights: str | None = None) -> str:
        """The layer's weights (or ``weights``) times a per-output-channel vector."""
        ctx, m = self.ctx, self.m
        view = _weights_view(m, self.v.weights)
        if view is not None:
            shape = ctx.editor.add(const_node(ctx.editor.unique_name(f"{ctx.scope}/{name}_shape"),
                                              np.array(view, np.int32), m.layer), after=after).output(0)
            vector = ctx.op(f"{name}_reshape", "Reshape", [vector, shape], after, Tshape=np.dtype("int32"))
        return ctx.op(name, "Mul", [weights or m.weights, vector], vector)

    def ones(self, after: str) -> str:
        return self.ctx.const("ones", np.ones_like(self.v.gamma), after)


def _contrib_fold(f: _Fold, s: _Stats) -> str:
    """TF contrib's fold: weights scaled by γ/σ_B and corrected by σ_B/σ, the
    output corrected back; the bias correction switched in at the freeze."""
    ctx, at = f.ctx, s.at
    scale = ctx.op("correction_scale", "Identity",
                   [ctx.op("scale_compute", "RealDiv", [s.recip_sigma_mv, s.recip_sigma_b], at)], at)
    corrected = f.scale_weights("correction_mult", scale, scale)
    multiplier = ctx.op("multiplier", "Mul", [s.gamma, s.recip_sigma_b], corrected)
    weights = f.scale_weights("mul_fold", multiplier, multiplier, corrected)
    recip = f.select("correction_recip", f.ones(weights), ctx.op("reciprocal_compute", "Reciprocal", [scale], weights))
    if f.frozen is None:  # name the tensor as contrib does even when nothing switches
        recip = ctx.op("correction_recip", "Identity", [recip], recip)
    # The means of conv + b, minus b: the conv's own (the new conv has no bias).
    conv_mean = ctx.op("conv_mean", "Sub", [s.mean_b, s.bias], recip)
    moving_conv_mean = ctx.op("moving_conv_mean", "Sub", [s.moving_mean, s.bias], recip)
    offset = ctx.op("offset_compute", "Mul", [s.gamma, ctx.op("offset_diff", "Sub", [
        ctx.op("mean_over_sigma_batch", "Mul", [conv_mean, s.recip_sigma_b], recip),
        ctx.op("mean_over_sigma_moving", "Mul", [moving_conv_mean, s.recip_sigma_mv], recip)], recip)], recip)
    offset = f.select("correction_offset", offset, ctx.const("zeros", np.zeros_like(f.v.gamma), offset))
    folded_bias = ctx.op("bias", "Sub", [s.beta, ctx.op("mean_times_multiplier", "Mul", [
        conv_mean, multiplier], offset)], offset)
    conv = _clone_layer_op(ctx, f.m, weights, folded_bias)
    out = ctx.op("post_conv_mul", "Mul", [conv, recip], conv)
    if f.frozen is not None:
        out = ctx.op("correction_add", "AddV2", [out, offset], out)
    return ctx.op("add_fold", "AddV2", [out, folded_bias], out)


def _qkeras_bias(f: _Fold, s: _Stats) -> tuple[str, str, str]:
    """``(γ/σ, γ/σ_B, folded bias)`` of QKeras' modes: β + (b − μ)·γ/σ with the
    moving statistics after the freeze, the batch's before."""
    ctx, at = f.ctx, s.at
    inv_mv = ctx.op("multiplier_moving", "Mul", [s.gamma, s.recip_sigma_mv], at)
    inv_b = ctx.op("multiplier_batch", "Mul", [s.gamma, s.recip_sigma_b], at)

    def bias_with(inv, mean, name):
        return ctx.op(name, "AddV2", [ctx.op(f"{name}_scaled", "Mul", [inv, ctx.op(
            f"{name}_centered", "Sub", [s.bias, mean], inv)], inv), s.beta], inv)

    bias_b = bias_with(inv_b, s.mean_b, "bias_batch")
    bias_mv = bias_with(inv_mv, s.moving_mean, "bias_moving")
    folded_bias = f.select("folded_bias", bias_mv, bias_b)
    return inv_mv, inv_b, folded_bias


def _ema_stats_fold(f: _Fold, s: _Stats) -> str:
    """QKeras ``ema_stats_folding``: weights folded with the moving statistics, the
    output corrected by σ/σ_B until the freeze."""
    ctx = f.ctx
    inv_mv, _, folded_bias = _qkeras_bias(f, s)
    weights = f.scale_weights("folded_kernel", inv_mv, folded_bias)
    conv = _clone_layer_op(ctx, f.m, weights, folded_bias)
    y_corr = ctx.op("y_corr", "Mul", [ctx.op("sigma_moving", "Reciprocal", [s.recip_sigma_mv], conv),
                                      s.recip_sigma_b], conv)
    y_corr = f.select("y_corr_switch", f.ones(y_corr), y_corr)
    out = ctx.op("corrected", "Mul", [conv, y_corr], y_corr)
    return ctx.op("add_fold", "AddV2", [out, folded_bias], out)


def _batch_stats_fold(f: _Fold, s: _Stats) -> str:
    """QKeras ``batch_stats_folding``: weights folded with whichever statistics are
    in use (the batch's, then the moving ones); no output correction."""
    inv_mv, inv_b, folded_bias = _qkeras_bias(f, s)
    weights = f.scale_weights("folded_kernel", f.select("multiplier", inv_mv, inv_b), folded_bias)
    out = _clone_layer_op(f.ctx, f.m, weights, folded_bias)
    return f.ctx.op("add_fold", "AddV2", [out, folded_bias], out)


def _clone_layer_op(ctx: _Ctx, m: BatchNormMatch, weights: str, after: str) -> str:
    """The layer op again, on the same input, reading the folded weights (no bias)."""
    op = m.layer_op
    node = Node(ctx.editor.unique_name(f"{ctx.scope}/{op.name.rsplit('/', 1)[-1]}_Fold"), op.op,
                [op.inputs[0], weights], attrs=dict(op.attrs), layer=m.layer)
    return ctx.editor.add(node, after=after.split(":")[0]).output(0)


def batch_norm_with_batch_stats(x: np.ndarray, v: FoldValues) -> np.ndarray:
    """What the batch norm computes in training mode: ``γ(x − μ_B)/√(σ²_B+ε) + β``
    over every axis but the last (the reference the training folds must equal).

    >>> from types import SimpleNamespace
    >>> v = SimpleNamespace(gamma=np.array([2.0]), beta=np.array([1.0]), epsilon=0.0)
    >>> batch_norm_with_batch_stats(np.array([[1.0], [3.0]]), v).ravel()
    array([-1.,  3.])
    """
    x = np.asarray(x, np.float64)
    axes = tuple(range(x.ndim - 1))
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    return v.gamma * (x - mean) / np.sqrt(var + v.epsilon) + v.beta
