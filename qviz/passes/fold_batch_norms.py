"""Inference-mode batch-norm folding into the preceding Conv2D / DepthwiseConv2dNative / MatMul.

A batch norm after a layer computes ``y = x·s + t`` per output channel, with
``s = γ/√(σ²+ε)`` and ``t = β − μ·s``. Folding moves it into the layer's
constants: ``w' = w·s`` (along the output channel; a depthwise kernel
``[h, w, in, multiplier]`` takes ``s`` reshaped to ``[in, multiplier]``) and
``b' = b·s + t = β + (b − μ)·s``; the batch norm disappears.

The pass has the shape of TF's ``fold_batch_norms``: the pattern is declared
(:data:`qviz.patterns.BUILTIN` ``conv_bn``, fused and Keras 3's unfused chain),
:func:`_find_batch_norms` yields typed :class:`BatchNormMatch` records, and the
rewrite consumes them. Batch norms that cannot be folded are left alone and
reported with the reason (:func:`fold_candidates`).

>>> import qviz
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> result = fold_batch_norms(g, layers=["conv1"])
>>> [c.bn_layer for c in fold_candidates(g) if c.foldable], len(result.changes.removed) > 0
(['bn1', 'bn2', 'bn3'], True)
>>> [name.rsplit("/", 2)[-2:] for name in result.changes.by_layer()["conv1"].added]
[['BatchNorm_Fold', 'weights'], ['BatchNorm_Fold', 'bias']]
>>> "bn1" in {n.layer for n in result.graph.nodes}, "bn2" in {n.layer for n in result.graph.nodes}
(False, True)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from ..ir import Graph, GraphError, Node
from ..ir.ops import ADD_OPS, BATCH_NORM_OPS, MATMUL, channel_scale_shape, output_channels
from ..matcher import GraphMatcher, explain_layer
from ..patterns import BUILTIN
from .constants import constant_value
from .result import Changes, PassResult, Skipped
from .rewrite import GraphEditor, const_node

__all__ = ["BatchNormMatch", "FoldCandidate", "FoldValues", "fold_batch_norms", "fold_candidates", "folded_into", "batch_norm_nodes",
           "fold_values"]

#: The pattern this pass folds: a conv/dense layer, then a fused or unfused batch norm.
PATTERN = BUILTIN["conv_bn"]


@dataclass(frozen=True)
class BatchNormMatch:
    """One layer → batch norm occurrence, as the pattern found it."""

    layer: str                 # the conv/dense layer that would absorb the batch norm
    layer_op: Node             # Conv2D | DepthwiseConv2dNative | MatMul
    weights: str               # the weights tensor the layer op reads
    chain: tuple[Node, ...]    # BatchToSpaceND?, BiasAdd?, Identity? between layer op and BN
    bias_add: Node | None
    bn_input: str              # the tensor the batch norm normalizes
    bn: Node                   # the fused op, or the final Add of the unfused chain
    bn_nodes: tuple[str, ...]  # the batch norm's own nodes (what folding removes)
    fused: bool
    gamma: str | None          # tensors; gamma is None for BatchNormalization(scale=False)
    beta: str | None
    mean: str | None
    variance: str | None
    epsilon: str | float | None
    scale: str | None          # unfused: the tensor x is multiplied by (γ·rsqrt(σ²+ε))
    shift: str | None          # unfused: the tensor added (β − μ·scale)

    @property
    def bn_layer(self) -> str:
        return self.bn.layer

    @property
    def output(self) -> str:
        """The tensor the batch norm produces (its consumers get the folded result)."""
        return self.bn.output(0)


@dataclass(frozen=True)
class FoldCandidate:
    """A batch norm in the graph and whether (into which layer) it folds."""

    bn_layer: str
    bn_node: str
    layer: str | None          # the absorbing layer, if the pattern matched
    match: BatchNormMatch | None
    reason: str | None         # why it cannot be folded; None if it can
    values: "FoldValues | None" = None  # the fold's numbers, when foldable

    @property
    def foldable(self) -> bool:
        return self.reason is None


@dataclass(frozen=True)
class FoldValues:
    """The numbers of one fold, per output channel (for checks and the explainer)."""

    gamma: np.ndarray
    beta: np.ndarray
    mean: np.ndarray
    variance: np.ndarray
    epsilon: float
    multiplier: np.ndarray     # s = γ/√(σ²+ε), one per output channel
    offset: np.ndarray         # t = β − μ·s
    weights: np.ndarray
    bias: np.ndarray
    folded_weights: np.ndarray
    folded_bias: np.ndarray

    def __repr__(self) -> str:   # (not every array: a candidate printed ran to hundreds of lines)
        return f"<FoldValues: {np.size(self.multiplier)} channels, weights {tuple(np.shape(self.weights))}>"


# -- finding ---------------------------------------------------------------------


def _find_batch_norms(graph: Graph) -> Iterator[BatchNormMatch]:
    """Every place the ``conv_bn`` pattern matches, as a record (foldable or not)."""
    for m in GraphMatcher(PATTERN).match_graph(graph):
        layer_op = m.get_op("layer")
        chain = tuple(n for n in (m.get_op("batch_to_space"), m.get_op("bias_add"), m.get_op("identity"))
                      if n is not None)
        bn = m.root
        fused = bn.op in BATCH_NORM_OPS
        if fused:
            bn_input = bn.inputs[0]
            gamma, beta, mean, variance = bn.inputs[1:5]
            epsilon, scale, shift = float(bn.attrs.get("epsilon", 1e-3)), None, None
            bn_nodes = (bn.name,)
        else:
            scale = m.get_tensor("scale")
            shift = m.get_tensor("shift")
            mul = m.get_op("scaled")
            bn_input = next(t for t in mul.inputs if t != scale)
            gamma = m.get_tensor("gamma")
            beta, mean, variance = m.get_tensor("beta"), m.get_tensor("mean"), m.get_tensor("variance")
            epsilon = m.get_tensor("epsilon")
            names = ("bn", "scaled", "shift", "scale", "rsqrt")
            own = [m.get_op(k) for k in names if m.get_op(k) is not None]
            shift_node, rsqrt = m.get_op("shift"), m.get_op("rsqrt")
            own += [graph.producer(t) for t in shift_node.inputs if graph.producer(t).op in ("Mul", "Neg")]
            own.append(graph.producer(rsqrt.inputs[0]))
            bn_nodes = tuple(dict.fromkeys(n.name for n in own))
        yield BatchNormMatch(
            layer=layer_op.layer, layer_op=layer_op, weights=layer_op.inputs[1], chain=chain,
            bias_add=m.get_op("bias_add"), bn_input=bn_input, bn=bn, bn_nodes=bn_nodes, fused=fused,
            gamma=gamma, beta=beta, mean=mean, variance=variance, epsilon=epsilon,
            scale=scale, shift=shift)


def _check(graph: Graph, m: BatchNormMatch) -> tuple[str | None, FoldValues | None]:
    """(why the match cannot be folded, or None; the fold's values when it can)."""
    reason = _why_not_foldable(graph, m)
    if reason is not None:
        return reason, None
    try:
        return None, fold_values(graph, m)
    except ValueError as exc:
        return str(exc), None


def _why_not_foldable(graph: Graph, m: BatchNormMatch) -> str | None:
    """``None`` if the structure and constness allow folding, else the reason in a user's words."""
    if not graph.is_constant(m.weights):
        return f"the weights of {m.layer} ({m.weights}) are not constant"
    if m.fused:
        if m.bn.attrs.get("is_training", False):
            return f"{m.bn.name} runs in training mode (is_training=true)"
        used = [m.bn.output(i) for i in range(1, 6) if graph.consumers(m.bn.output(i))]
        if used:
            return f"{m.bn.name}'s batch statistics ({', '.join(sorted(used))}) are used elsewhere"
    ops = (m.layer_op, *m.chain)
    for node, nxt in zip(ops, (*m.chain, None)):
        readers = [c for c in graph.consumers(node) if nxt is None or c.name != nxt.name]
        if nxt is None:
            readers = [c for c in readers if c.name != m.bn.name and c.name not in m.bn_nodes]
        if readers:
            others = ", ".join(f"{c.name} ({c.op})" for c in readers[:3])
            return (f"the output of {node.name} also feeds {others}, which must keep seeing "
                    f"the un-normalized values")
    for what in ("gamma", "beta", "mean", "variance", "scale", "shift"):
        t = getattr(m, what)
        if t is not None and not graph.is_constant(t):
            return f"the batch norm's {what} ({t}) is not constant"
    if m.bias_add is not None and not graph.is_constant(m.bias_add.inputs[1]):
        return f"the bias of {m.layer} ({m.bias_add.inputs[1]}) is not constant"
    return None


def batch_norm_nodes(graph: Graph) -> list[Node]:
    """One node per batch norm: each fused BN op, and the ``Rsqrt`` of each unfused
    inference-mode chain (``Rsqrt(AddV2(variance, epsilon))`` with constant operands,
    as Keras 3 freezes ``BatchNormalization``)."""
    found = []
    for node in graph.nodes:
        if node.op in BATCH_NORM_OPS:
            found.append(node)
        elif node.op == "Rsqrt" and node.inputs:
            add = graph.producer(node.inputs[0])
            if (add.op in ADD_OPS and len(add.inputs) == 2
                    and all(graph.is_constant(t) for t in add.inputs)
                    and any(c.op == "Mul" for c in graph.consumers(node.output(0)))):
                found.append(node)
    return found


def fold_candidates(graph: Graph) -> tuple[FoldCandidate, ...]:
    """Every batch norm of the graph, with the layer it folds into or why it does not.

    Cached per graph (graphs are immutable).
    """
    return graph.memo("fold.candidates", lambda: _fold_candidates(graph))


def folded_into(graph: Graph, layers=None) -> dict[str, str]:
    """Conv/dense layer → the batch norm folding absorbs into it, for every foldable one
    (or those of ``layers``): what the folded layer's output stands for.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> folded_into(qviz.load(sample_path("lenet_digits")), ["conv2"])
    {'conv2': 'bn2'}
    """
    chosen = None if layers is None else set(layers)
    return {c.layer: c.bn_layer for c in fold_candidates(graph)
            if c.foldable and (chosen is None or c.layer in chosen)}


def _fold_candidates(graph: Graph) -> tuple[FoldCandidate, ...]:
    out, covered = [], set()
    for m in _find_batch_norms(graph):
        covered.update(m.bn_nodes)
        out.append(FoldCandidate(m.bn_layer, m.bn.name, m.layer, m, *_check(graph, m)))
    for node in batch_norm_nodes(graph):
        if node.name in covered:
            continue
        reason = explain_layer(PATTERN, graph, node.layer)
        out.append(FoldCandidate(node.layer, node.name, None, None,
                                 f"not after a conv/dense layer: {reason}"))
    return tuple(out)


# -- the numbers -----------------------------------------------------------------------


def _channels(graph: Graph, m: BatchNormMatch, w: np.ndarray) -> tuple[int, int]:
    """(output channel count, channel axis of the layer's output)."""
    op = m.layer_op
    if op.op == MATMUL:
        if w.ndim != 2:
            raise ValueError(f"{op.name}: MatMul weights of rank {w.ndim}, expected 2")
        return output_channels(op.op, w.shape, bool(op.attrs.get("transpose_b"))), -1
    if w.ndim != 4:
        raise ValueError(f"{op.name}: {op.op} weights of rank {w.ndim}, expected 4")
    axis = 1 if op.attrs.get("data_format", "NHWC") == "NCHW" else -1
    return output_channels(op.op, w.shape), axis


def _per_channel(value: np.ndarray, count: int, axis: int, rank: int, what: str, layer: str) -> np.ndarray:
    """``value`` as one number per output channel (broadcasting a scalar)."""
    v = np.asarray(value, np.float64)
    if v.size == 1:
        return np.full(count, float(v.reshape(-1)[0]))
    shape = (1,) * (rank - v.ndim) + v.shape if v.ndim <= rank else None
    channel_axis = axis % rank
    if (shape is None or v.size != count
            or any(d != 1 for i, d in enumerate(shape) if i != channel_axis)):
        raise ValueError(f"the batch norm's {what} has shape {v.shape}, not one value per "
                         f"output channel of {layer} ({count})")
    return v.reshape(-1)


def fold_values(graph: Graph, m: BatchNormMatch) -> FoldValues:
    """Compute the folded weights and bias of one match (float64 math, layer dtype out).

    Raises:
        ValueError: shapes that are not one value per output channel.
    """
    w = constant_value(graph, m.weights)
    count, axis = _channels(graph, m, w)
    rank = 2 if m.layer_op.op == MATMUL else 4
    if m.layer_op.op != MATMUL and m.bn.op in BATCH_NORM_OPS:
        if m.bn.attrs.get("data_format", "NHWC") != m.layer_op.attrs.get("data_format", "NHWC"):
            raise ValueError(f"{m.bn.name} and {m.layer_op.name} use different data formats")

    def vec(tensor, what, default):
        if tensor is None:
            return np.full(count, default)
        return _per_channel(constant_value(graph, tensor), count, axis, rank, what, m.layer)

    gamma, beta = vec(m.gamma, "gamma", 1.0), vec(m.beta, "beta", 0.0)
    mean, variance = vec(m.mean, "mean", 0.0), vec(m.variance, "variance", 1.0)
    if isinstance(m.epsilon, str):
        eps = np.asarray(constant_value(graph, m.epsilon), np.float64)
        if eps.size != 1:
            raise ValueError(f"the batch norm's epsilon has shape {eps.shape}, expected a scalar")
        epsilon = float(eps.reshape(-1)[0])
    else:
        epsilon = float(m.epsilon)
    if m.fused:
        s = gamma / np.sqrt(variance + epsilon)
        t = beta - mean * s
    else:  # use the graph's own scale and shift: exactly what the chain computes
        s, t = vec(m.scale, "scale", 1.0), vec(m.shift, "shift", 0.0)
    if m.bias_add is not None:
        b = _per_channel(constant_value(graph, m.bias_add.inputs[1]), count, axis, rank, "bias", m.layer)
    else:
        b = np.zeros(count)
    view = channel_scale_shape(m.layer_op.op, w.shape, bool(m.layer_op.attrs.get("transpose_b")))
    w_new = w * (s if view is None else s.reshape(view))
    return FoldValues(gamma, beta, mean, variance, epsilon, s, t, w, b,
                      w_new.astype(w.dtype), (b * s + t).astype(w.dtype))


# -- the rewrite ---------------------------------------------------------------------


def fold_batch_norms(graph: Graph, layers: Iterable[str] | None = None) -> PassResult:
    """Fold batch norms into the conv/dense layers before them (inference mode).

    Args:
        graph: the graph (not modified).
        layers: names of the absorbing conv/dense layers to fold (as in
            ``graph.layers``); ``None`` folds every foldable batch norm.

    Returns:
        :class:`~qviz.passes.rewrite.PassResult`; ``skipped`` lists each batch
        norm that was asked for (or, with ``layers=None``, exists) but cannot be
        folded, with the reason.

    Raises:
        GraphError: a name in ``layers`` is not a layer of the graph.
    """
    wanted = None if layers is None else list(layers)
    if wanted is not None:
        unknown = [name for name in wanted if name not in graph.layers]
        if unknown:
            raise GraphError(f"fold_batch_norms: no layer named {unknown[0]!r} in the graph")
        wanted = set(wanted)
        if not wanted:
            return PassResult(graph, Changes(), ())
    # the result depends on the set asked for alone, and is immutable: the last few are kept
    key = None if wanted is None else frozenset(wanted)
    recent, lock = graph.memo("fold_batch_norms.recent", lambda: (OrderedDict(), threading.Lock()))
    with lock:
        if key in recent:
            recent.move_to_end(key)
            return recent[key]
    result = _fold(graph, wanted)
    with lock:
        recent[key] = result
        while len(recent) > RECENT_FOLDS:
            recent.popitem(last=False)
    return result


#: Fold results kept per graph: a fold toggle in the app asks for the same selections two or
#: three times (its activation ranges are read off the last calibration by folding both the
#: old and the new selection, then the rewrite folds the new one again): ~25 of its ~80 ms.
RECENT_FOLDS = 3


def _fold(graph: Graph, wanted: set[str] | None) -> PassResult:
    """:func:`fold_batch_norms` of ``wanted`` (None: every foldable batch norm), not kept."""
    editor = GraphEditor(graph)
    skipped = []
    for cand in fold_candidates(graph):
        selected = wanted is None or cand.layer in wanted or cand.bn_layer in wanted
        if not selected:
            continue
        if not cand.foldable:
            skipped.append(Skipped(cand.bn_layer, cand.bn_node, cand.reason))
            continue
        _fold_one(graph, editor, cand.match, cand.values)
    if wanted is not None:
        folded_layers = {c.layer for c in fold_candidates(graph)} | {c.bn_layer for c in fold_candidates(graph)}
        for name in sorted(wanted - folded_layers):
            skipped.append(Skipped(name, "", f"layer {name} has no batch norm to fold"))
    return editor.finish(skipped)


def _fold_one(graph: Graph, editor: GraphEditor, m: BatchNormMatch, values: FoldValues) -> None:
    scope = f"{graph.layer_scope(m.layer)}/BatchNorm_Fold"
    op = m.layer_op
    weights = editor.add(const_node(editor.unique_name(f"{scope}/weights"), values.folded_weights, m.layer),
                         after=graph.producer(m.weights).name)
    editor.reroute(weights.output(0), m.weights, can_modify=[op.name])
    bias = const_node(editor.unique_name(f"{scope}/bias"), values.folded_bias, m.layer)
    if m.bias_add is not None:
        editor.add(bias, after=graph.producer(m.bias_add.inputs[1]).name)
        editor.reroute(bias.output(0), m.bias_add.inputs[1], can_modify=[m.bias_add.name])
        new_output = m.bn_input
    else:
        last = graph.producer(m.bn_input)
        editor.add(bias, after=last.name)
        fmt = op.attrs.get("data_format", "NHWC") if op.op != MATMUL else "NHWC"
        add = Node(editor.unique_name(f"{scope}/BiasAdd"), "BiasAdd", [m.bn_input, bias.output(0)],
                   attrs={"T": values.folded_bias.dtype, "data_format": fmt}, layer=m.layer)
        editor.add(add, after=bias.name)
        new_output = add.output(0)
    changed = editor.reroute(new_output, m.output)
    if not editor.replace_output(m.output, new_output) and changed == 0:
        raise GraphError(f"folding {m.bn.name}: nothing reads its output {m.output}")
