"""Mixed precision: which layers' weights to narrow, for the most size saved per
decibel lost — a greedy search over the sensitivity sweep, as AIMET's.

Start with every layer's weights at the widest width swept; at each step narrow
the one layer (to its next width down) whose step costs the least added noise
per bit saved; record the recipe; repeat until every layer is at the narrowest.
Each recipe's SQNR is *estimated* from the sweep — independent quantizers' noise
powers add, so ``1/SQNR ≈ Σ 1/SQNR_i`` over every weight and activation
quantizer — and the chain of recipes traces the size-against-SQNR front.
:func:`measure_front` then runs each point (``qviz.apply`` and its verification):
the estimate guides, the measurement is what is shown as the truth.

Activations stay at one width (default: the widest swept, whose noise the sweep
measured), so the search trades weight size — or, given each layer's MACs, compute:
with ``macs`` a step's cost is the bit-operations it saves (MACs × bits dropped ×
the activation width), so a conv used at many positions is narrowed before a dense
layer of as many weights. Each point carries both figures; :func:`measure_front`
replaces the bit-operations estimate with :func:`qviz.analysis.budget.budget`'s
count on the rewritten graph.

>>> import numpy as np
>>> from qviz.analysis.sensitivity import Sensitivity
>>> s = Sensitivity(("a", "b"), (8, 4), np.array([[50.0, 26.0], [50.0, 40.0]]), np.array([[60.0, 30], [60.0, 30]]))
>>> front = search(s, {"a": 1000, "b": 1000})
>>> [(p.weight_bits, {k: b.weight_bits for k, b in p.recipe.quantize_layers.items()}) for p in front.points]
[(16000, {'a': 8, 'b': 8}), (12000, {'a': 8, 'b': 4}), (8000, {'a': 4, 'b': 4})]
>>> front.within(1500).weight_bits       # the best estimate that fits in 1500 bytes
12000
>>> by_compute = search(s, {"a": 1000, "b": 1000}, macs={"a": 10**6, "b": 1000})
>>> [{k: b.weight_bits for k, b in p.recipe.quantize_layers.items()} for p in by_compute.points][1]
{'a': 4, 'b': 8}
>>> [p.bops for p in by_compute.points], by_compute.within_bops(40_000_000).bops
([64064000, 32064000, 32032000], 32064000)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from ..ir import Graph
from ..passes import LayerBits, Recipe
from .budget import FLOAT_BITS, budget, count_text, weighted_ops
from .sensitivity import Sensitivity

__all__ = ["ParetoPoint", "MixedPrecision", "search", "weight_counts", "measure_front"]


@dataclass(frozen=True)
class ParetoPoint:
    """One recipe of the search: its weights' size and its SQNR, estimated and (once run) measured."""

    recipe: Recipe
    weight_bits: int                  # Σ weights × their width, over the searched layers
    estimated_sqnr_db: float
    measured_sqnr_db: float | None = None
    accuracy: float | None = None     # on the model's labels, when it has them
    bops: int | None = None           # bit-operations per example (None: the MACs were not known)

    @property
    def weight_bytes(self) -> float:
        return self.weight_bits / 8


@dataclass(frozen=True)
class MixedPrecision:
    """The search's recipes, widest first."""

    points: tuple[ParetoPoint, ...]
    float_weight_bits: int
    activation_bits: int | None = None    # every layer's activation width in these recipes
    cost: str = "size"                    # what the search traded: "size" (weight bits) or "bops"
    float_bops: int | None = None

    def front(self) -> tuple[ParetoPoint, ...]:
        """The points no other beats on both counts (smaller and better SQNR, measured if
        measured), widest first: the Pareto front.

        >>> r = Recipe()
        >>> m = MixedPrecision((ParetoPoint(r, 30, 40.0), ParetoPoint(r, 20, 41.0), ParetoPoint(r, 10, 5.0)), 64)
        >>> [p.weight_bits for p in m.front()]
        [20, 10]
        """
        c = self.cost_of
        return tuple(p for p in self.points
                     if not any(c(q) <= c(p) and _sqnr(q) >= _sqnr(p)
                                and (c(q), _sqnr(q)) != (c(p), _sqnr(p)) for q in self.points))

    def cost_of(self, p: ParetoPoint) -> float:
        """``p``'s cost in what the search traded: weight bits, or bit-operations."""
        return p.weight_bits if self.cost == "size" else (p.bops if p.bops is not None else math.inf)

    def within(self, size_bytes: float) -> ParetoPoint | None:
        """The point with the best SQNR (measured if measured, else estimated) whose
        weights fit in ``size_bytes``; None if none does."""
        fits = [p for p in self.points if p.weight_bytes <= size_bytes]
        return max(fits, key=_sqnr, default=None)

    def within_bops(self, bops: float) -> ParetoPoint | None:
        """The point with the best SQNR whose bit-operations are at most ``bops``; None if none is."""
        fits = [p for p in self.points if p.bops is not None and p.bops <= bops]
        return max(fits, key=_sqnr, default=None)

    def reaching(self, target_sqnr_db: float) -> ParetoPoint | None:
        """The cheapest point (in :attr:`cost`) whose SQNR (measured if measured) reaches ``target_sqnr_db``."""
        ok = [p for p in self.points if _sqnr(p) >= target_sqnr_db]
        return min(ok, key=self.cost_of, default=None)

    def format(self) -> str:
        accuracy = any(p.accuracy is not None for p in self.points)
        bops = any(p.bops is not None for p in self.points)
        on_front = {id(p) for p in self.front()}   # marked "*": the CLI counts them
        rows = [f"  {'weights':>10} {'of float':>9}" + (f" {'bit-ops':>9} {'of float':>9}" if bops else "")
                + f" {'est. dB':>8} {'meas. dB':>9}" + (f" {'accuracy':>9}" if accuracy else "")
                + "  weight bits per layer"]
        for p in self.points:
            per_layer = " ".join(f"{k}:{b.weight_bits}" for k, b in p.recipe.quantize_layers.items()
                                 if b.weight_bits is not None)
            measured = "" if p.measured_sqnr_db is None else f"{p.measured_sqnr_db:.1f}"
            acc = "" if not accuracy else f" {'' if p.accuracy is None else f'{100 * p.accuracy:.2f}%':>9}"
            share = 100 * p.weight_bits / self.float_weight_bits if self.float_weight_bits else math.nan
            ops = ""
            if bops:
                of = 100 * p.bops / self.float_bops if p.bops is not None and self.float_bops else math.nan
                ops = f" {count_text(p.bops) if p.bops is not None else '':>9} {of:8.2f}%"
            rows.append(f"{'*' if id(p) in on_front else ' '} {_kb(p.weight_bytes):>10} {share:8.1f}%{ops} "
                        f"{p.estimated_sqnr_db:8.1f} {measured:>9}{acc}  {per_layer}")
        return "\n".join(rows)


def _sqnr(p: ParetoPoint) -> float:
    return p.measured_sqnr_db if p.measured_sqnr_db is not None else p.estimated_sqnr_db


def _kb(n: float) -> str:
    return f"{n / 1024:.1f} KB" if n < 2**20 else f"{n / 2**20:.2f} MB"


def weight_counts(graph: Graph) -> dict[str, int]:
    """Each layer's number of weights (its conv/dense kernels; layers without any are left out)."""
    counts: dict[str, int] = {}
    for node, count in weighted_ops(graph):
        counts[node.layer] = counts.get(node.layer, 0) + count
    return counts


def _noise(db: float) -> float:
    return 0.0 if math.isinf(db) else 10 ** (-db / 10)


def search(sens: Sensitivity, counts: Mapping[str, int], *, activation_bits: int | None = 0,
           macs: Mapping[str, int] | None = None) -> MixedPrecision:
    """The greedy chain of recipes from every searched layer's weights at the widest
    width swept down to all at the narrowest (see the module docstring).

    Args:
        sens: the sweep (:func:`qviz.analysis.sensitivity.sensitivity`).
        counts: layer → number of weights (:func:`weight_counts`); layers of the
            sweep not in it (a bypass Add) get only their activation width.
        activation_bits: every layer's activation width: one of the sweep's (its
            noise is counted), None (float), or 0 (default) for the widest swept.
        macs: layer → multiply-accumulates per example
            (:func:`qviz.analysis.budget.layer_macs`): trade bit-operations, not
            size, and estimate each point's (inputs taken at the activation width).

    Raises:
        ValueError: no layer of the sweep has weights to narrow, an activation
            width the sweep did not measure, or ``macs`` lacks a layer to narrow.
    """
    if activation_bits == 0:
        activation_bits = max(sens.bits)
    if activation_bits is not None and activation_bits not in sens.bits:
        raise ValueError(f"activations at {activation_bits} bits: the sweep measured {list(sens.bits)}, so their "
                         "noise is not known")
    order = sorted(range(len(sens.bits)), key=lambda j: -sens.bits[j])      # widest first
    widths = [sens.bits[j] for j in order]
    layers = [name for name in sens.layers if counts.get(name)]
    if not layers:
        raise ValueError("no layer of the sweep has weights to narrow")
    unknown = [name for name in layers if macs is not None and not macs.get(name)]
    if unknown:
        raise ValueError(f"bit-operations need each layer's output shape, not known for {', '.join(unknown[:3])}"
                         f"{' …' if len(unknown) > 3 else ''} (set --input-shape, or trade size)")
    row = {name: i for i, name in enumerate(sens.layers)}
    act_col = sens.bits.index(activation_bits) if activation_bits in sens.bits else None
    act_noise = sum(_noise(sens.activation_sqnr[i, act_col]) for i in range(len(sens.layers))) \
        if act_col is not None else 0.0
    level = {name: 0 for name in layers}       # index into widths
    a_in = activation_bits if activation_bits is not None else FLOAT_BITS
    # what narrowing a layer by one bit saves: its weights' bits, or its bit-operations
    per_bit = {name: counts[name] if macs is None else macs.get(name, 0) * a_in for name in layers}

    def noise_of(name: str, k: int) -> float:
        return _noise(sens.weight_sqnr[row[name], order[k]])

    def point() -> ParetoPoint:
        bits = {name: widths[level[name]] for name in layers}
        size = sum(counts[name] * b for name, b in bits.items())
        total = act_noise + sum(noise_of(name, level[name]) for name in layers)
        recipe = Recipe(fold_default=True, quantize_default=None, quantize_layers={
            **{name: LayerBits(None, activation_bits) for name in sens.layers if activation_bits is not None},
            **{name: LayerBits(b, activation_bits) for name, b in bits.items()}})
        ops = None if macs is None else sum(macs.get(name, 0) * b * a_in for name, b in bits.items())
        return ParetoPoint(recipe, size, math.inf if total == 0 else -10 * math.log10(total), bops=ops)

    points = [point()]
    while True:
        steps = [((noise_of(n, level[n] + 1) - noise_of(n, level[n]))
                  / max(per_bit[n] * (widths[level[n]] - widths[level[n] + 1]), 1), n)
                 for n in layers if level[n] + 1 < len(widths)]
        if not steps:
            break
        _, cheapest = min(steps)
        level[cheapest] += 1
        points.append(point())
    return MixedPrecision(tuple(points), FLOAT_BITS * sum(counts[name] for name in layers), activation_bits,
                          cost="size" if macs is None else "bops",
                          float_bops=None if macs is None else FLOAT_BITS * FLOAT_BITS * sum(
                              macs.get(name, 0) for name in layers))


def measure_front(graph: Graph, front: MixedPrecision, *, inputs, labels=None, calibration=None,
                  shapes: dict | None = None,
                  progress: Callable[[int, int], None] | None = None) -> MixedPrecision:
    """``front`` with each point's SQNR (and accuracy, with ``labels``) measured by
    ``qviz.apply`` and its verification on ``inputs``; with ``shapes``
    (:func:`qviz.runtime.tensor_shapes`), its bit-operations counted on the
    rewritten graph (the widths it really simulates, the model input's included)."""
    from ..pipeline import apply

    measured = []
    float_bops = front.float_bops
    for i, p in enumerate(front.points):
        result = apply(graph, p.recipe, calibration=calibration, verification=inputs, labels=labels)
        p = replace(p, measured_sqnr_db=result.report.sqnr_db, accuracy=result.report.accuracy)
        if shapes is not None:
            cost = budget(graph, result.graph, shapes)
            if cost.bops is not None:    # else the estimate stays (an output shape was not known)
                p, float_bops = replace(p, bops=cost.bops), cost.float_bops
        measured.append(p)
        if progress is not None:
            progress(i + 1, len(front.points))
    return replace(front, points=tuple(measured), float_bops=float_bops)
