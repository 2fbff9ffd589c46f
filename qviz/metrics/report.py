"""How much a rewrite moved the outputs: the verification report.

>>> import numpy as np
>>> sqnr_db(np.array([1.0, 2.0]), np.array([1.0, 2.0])), round(sqnr_db(np.array([3.0, 4.5]), np.array([3.0, 4.0])), 2)
(inf, 20.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .. import runtime
from ..ir import Graph
from ..passes.calibration import noise_inputs

__all__ = ["LayerError", "Report", "verify", "layer_outputs", "sqnr_db", "rel_err",
           "constant_output", "VERIFY_EXAMPLES"]

#: Fixed-seed noise examples verified on when the caller gives no inputs.
VERIFY_EXAMPLES = 16

#: Per-layer errors are measured on at most this many examples (memory on big nets).
PER_LAYER_EXAMPLES = 8


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    """``max |got − want| / max |want|``."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)) if want.size else 0.0


def sqnr_db(got: np.ndarray, want: np.ndarray) -> float:
    """Signal-to-quantization-noise ratio in dB (``inf`` when equal)."""
    want = np.asarray(want, np.float64)
    noise = float(np.sum((np.asarray(got, np.float64) - want) ** 2))
    signal = float(np.sum(want ** 2))
    if noise == 0.0:
        return math.inf
    return 10.0 * math.log10(max(signal, 1e-300) / noise)


def constant_output(outputs: Sequence[np.ndarray]) -> str | None:
    """Why these float outputs cannot measure quantization error, or ``None``.

    An output that is the same for every input (an untrained net whose
    activations die out, a constant head) makes every error figure meaningless:
    SQNR is ∞ or arbitrary whatever the bits.

    >>> constant_output([np.ones((4, 3))])
    'output 0 of the float model is the same for every input (4 examples): error and SQNR say nothing about quantization here (untrained or broken weights?)'
    >>> constant_output([np.arange(6.0).reshape(2, 3)]) is None
    True
    """
    for i, out in enumerate(outputs):
        b = np.asarray(out, np.float64)
        if b.ndim == 0 or b.shape[0] < 2 or b.size == 0:
            continue
        spread = float(np.std(b, axis=0).max())
        if spread <= 1e-7 * max(float(np.abs(b).max()), 1e-30):
            return (f"output {i} of the float model is the same for every input ({b.shape[0]} examples): "
                    "error and SQNR say nothing about quantization here (untrained or broken weights?)")
    return None


@dataclass(frozen=True)
class LayerError:
    layer: str
    tensor: str          # the layer's output tensor in the rewritten graph
    rel_err: float
    sqnr_db: float


@dataclass(frozen=True)
class Report:
    """Output error of a rewritten graph against the original, on ``examples`` inputs."""

    examples: int
    max_abs: float
    rel_err: float
    sqnr_db: float
    layers: tuple[LayerError, ...] = ()      # accumulated: each layer's output as the rewritten model runs
    accuracy_before: float | None = None
    accuracy: float | None = None
    warning: str | None = None    # the reference cannot measure error (see constant_output)
    #: local: each layer fed the float model's values at its inputs (:mod:`qviz.metrics.local`)
    local_layers: tuple[LayerError, ...] = ()

    def to_dict(self) -> dict:
        def num(x):
            return None if x is None or math.isinf(x) else float(x)

        return {"examples": self.examples, "max_abs": self.max_abs, "rel_err": self.rel_err,
                "sqnr_db": num(self.sqnr_db), "accuracy_before": self.accuracy_before,
                "accuracy": self.accuracy, "warning": self.warning,
                "layers": [{"layer": e.layer, "tensor": e.tensor, "rel_err": e.rel_err,
                            "sqnr_db": num(e.sqnr_db)} for e in self.layers],
                "local_layers": [{"layer": e.layer, "tensor": e.tensor, "rel_err": e.rel_err,
                                  "sqnr_db": num(e.sqnr_db)} for e in self.local_layers]}

    def format(self) -> str:
        """A few lines for a terminal."""
        sq = "inf" if math.isinf(self.sqnr_db) else f"{self.sqnr_db:.1f}"
        lines = [f"warning: {self.warning}"] if self.warning else []
        lines.append(f"outputs on {self.examples} examples: max |Δ| {self.max_abs:.3g}, "
                     f"relative {self.rel_err:.3g}, SQNR {sq} dB")
        if self.accuracy is not None:
            lines.append(f"test accuracy: {self.accuracy_before:.2%} → {self.accuracy:.2%}")
        for errors, how in ((self.layers, "accumulated"), (self.local_layers, "local, each layer's own")):
            worst = sorted(errors, key=lambda e: e.sqnr_db)[:3]
            if worst and not math.isinf(worst[0].sqnr_db):
                lines.append(f"lowest layer SQNR ({how}): " + ", ".join(
                    f"{e.layer} {e.sqnr_db:.1f} dB" for e in worst if not math.isinf(e.sqnr_db)))
        return "\n".join(lines)


def layer_outputs(graph: Graph) -> Mapping[str, str]:
    """``{layer: tensor}``: for each layer, the last tensor it hands to another layer
    (or to the graph's outputs); :meth:`qviz.ir.Graph.layer_outputs`."""
    return graph.layer_outputs()


def _accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(np.argmax(logits.reshape(len(labels), -1), axis=1) == labels))


def verify(original: Graph, rewritten: Graph, inputs: Sequence[np.ndarray] | None = None, *,
           labels: np.ndarray | None = None, per_layer: bool = True,
           layer_map: Mapping[str, str] | None = None, local: bool = False) -> Report:
    """Compare ``rewritten`` with ``original`` on ``inputs`` (default: fixed-seed
    noise, :data:`VERIFY_EXAMPLES` examples, seed 1; pass real data for real numbers).

    Output error is over every output; per-layer error compares each layer's
    output tensor (:func:`layer_outputs`) in both graphs, for layers present in
    both (a folded-away batch norm has none). ``layer_map`` says which original
    layer a rewritten layer now stands for: a conv that absorbed its batch norm
    produces what the batch norm did (``{"conv1": "bn1"}``). With ``labels``,
    test accuracy of output 0 before and after. With ``local``, each layer's own
    error too (:func:`qviz.metrics.local.local_layer_errors`).
    """
    if inputs is None:
        inputs = noise_inputs(original, count=VERIFY_EXAMPLES, seed=1)
    before = runtime.run(original, *inputs)
    after = runtime.run(rewritten, *inputs)
    max_abs = max(float(np.abs(np.asarray(a, np.float64) - b).max()) for a, b in zip(after, before))
    rel = max(rel_err(a, b) for a, b in zip(after, before))
    signal = np.concatenate([np.ravel(b) for b in before])
    noisy = np.concatenate([np.ravel(a) for a in after])
    layers: list[LayerError] = []
    if per_layer:
        old, new = layer_outputs(original), layer_outputs(rewritten)
        stands_for = dict(layer_map or {})
        common = [layer for layer in rewritten.layers
                  if stands_for.get(layer, layer) in old and layer in new]
        few = [x[:PER_LAYER_EXAMPLES] for x in inputs]
        got = runtime.run(rewritten, *few, fetches=[new[k] for k in common])
        want = runtime.run(original, *few, fetches=[old[stands_for.get(k, k)] for k in common])
        for layer, g, w in zip(common, got, want):
            if g.shape == w.shape:
                layers.append(LayerError(layer, new[layer], rel_err(g, w), sqnr_db(g, w)))
    acc_before = acc = None
    if labels is not None:
        acc_before, acc = _accuracy(before[0], labels), _accuracy(after[0], labels)
    own: tuple[LayerError, ...] = ()
    if per_layer and local:
        from .local import local_layer_errors   # it builds on this module

        own = local_layer_errors(original, rewritten, inputs, layer_map=layer_map)
    return Report(len(inputs[0]), max_abs, rel, sqnr_db(noisy, signal), tuple(layers), acc_before, acc,
                  warning=constant_output(before), local_layers=own)
