"""How much a rewrite moved the outputs: the verification report.

>>> import numpy as np
>>> sqnr_db(np.array([1.0, 2.0]), np.array([1.0, 2.0])), round(sqnr_db(np.array([3.0, 4.5]), np.array([3.0, 4.0])), 2)
(inf, 20.0)
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .. import runtime
from ..ir import Graph
from ..passes.calibration import noise_inputs

__all__ = ["LayerError", "Report", "verify", "layer_outputs", "sqnr_db", "rel_err", "error_figures", "ErrorSums",
           "LayerSums", "layer_chunk",
           "constant_output", "VERIFY_EXAMPLES"]

#: Fixed-seed noise examples verified on when the caller gives no inputs.
VERIFY_EXAMPLES = 16

#: Per-layer errors are measured on at most this many examples (memory on big nets).
PER_LAYER_EXAMPLES = 8

#: Layer values fetched by one run of a graph stay under this many bytes: the examples are
#: run a chunk at a time, one first, then as many as fit (:func:`layer_chunk`). All 156 layer
#: outputs of 8 examples held 0.7 GB on MobileNetV2 and took its worker to 3.2 GB; in chunks
#: of 256 MB it stays at 1.9 GB, and 64 MB (1.8 GB) made the quantizers' samples 20 % slower.
LAYER_CHUNK_BYTES = 256 * 2**20

#: Examples run at once when only the outputs are fetched (a sweep's measurements): each
#: run has a fixed cost, ~0.3 ms on lenet, that chunks of 8 paid 57 times over its digits.
OUTPUT_CHUNK = 64

#: ...and at most as many as this many bytes of inputs: TensorFlow holds a run's activations,
#: 2.6 GB for 64 of MobileNetV2's 224×224 images, 1.6 GB for 6 (as fast).
INPUT_CHUNK_BYTES = 4 * 2**20


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    """``max |got − want| / max |want|``."""
    return error_figures(got, want)[0]


def sqnr_db(got: np.ndarray, want: np.ndarray) -> float:
    """Signal-to-quantization-noise ratio in dB (``inf`` when equal)."""
    return error_figures(got, want)[1]


def error_figures(got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    """``(rel_err, sqnr_db)`` of ``got`` against ``want``, in float64, from one difference
    (a verification computes both for each of a hundred layer outputs of MBs each).

    >>> error_figures(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    (0.0, inf)
    >>> [round(v, 3) for v in error_figures(np.array([1.1, 2.0]), np.array([1.0, 2.0]))]
    [0.05, 26.99]
    """
    return ErrorSums().add(got, want).figures()


class ErrorSums:
    """:func:`error_figures` of arrays given a part at a time (a layer's output, a chunk of
    examples at a time): the figures of all the parts as one.

    >>> sums = ErrorSums().add(np.array([1.1]), np.array([1.0])).add(np.array([2.0]), np.array([2.0]))
    >>> sums.figures() == error_figures(np.array([1.1, 2.0]), np.array([1.0, 2.0]))
    True
    >>> [math.isnan(v) for v in ErrorSums().add(np.array([np.nan]), np.array([1.0])).add(np.ones(1), np.ones(1)).figures()]
    [True, True]
    """

    def __init__(self):
        self.size = 0
        self.peak = 1e-30      # max |want|
        self.worst = 0.0       # max |got − want|
        self.noise = 0.0       # Σ (got − want)²
        self.signal = 0.0      # Σ want²

    def add(self, got: np.ndarray, want: np.ndarray, *, reference: bool = True) -> "ErrorSums":
        """Add a part; ``reference=False``: not ``want``'s own sums (peak, signal), which
        :meth:`reference_sums` gave already."""
        want, got = np.asarray(want).ravel(), np.asarray(got).ravel()
        if want.size:
            # The difference in the arrays' own type (a float32 one is within 6e-8 of the exact
            # value): a float64 one was twice the memory to write and page in, for every layer
            # of every verification. The sums are float64, of the arrays as they are (no copy).
            diff = np.subtract(got, want, dtype=np.result_type(got, want, np.float32))
            self.size += want.size
            # (np.max, not max(): a NaN anywhere must stay NaN, as one difference had it)
            self.worst = float(np.max([self.worst, float(diff.max()), -float(diff.min())])) + 0.0
            self.noise += float(np.einsum("i,i->", diff, diff, dtype=np.float64))
            if reference:
                self.peak = float(np.max([self.peak, float(want.max()), -float(want.min())])) + 0.0   # (not -0.0)
                self.signal += float(np.einsum("i,i->", want, want, dtype=np.float64))
        return self

    def reference_sums(self, sums: tuple[float, float] | None = None) -> tuple[float, float]:
        """``want``'s own sums ``(peak, signal)``; given ``sums``, taken as those first."""
        if sums is not None:
            self.peak, self.signal = sums
        return self.peak, self.signal

    def figures(self) -> tuple[float, float]:
        """``(rel_err, sqnr_db)``; ``(0.0, inf)`` for nothing compared."""
        if not self.size:
            return 0.0, math.inf
        rel = self.worst / self.peak
        if self.noise == 0.0:
            return rel, math.inf
        return rel, 10.0 * math.log10(max(self.signal, 1e-300) / self.noise)


class LayerSums:
    """Each layer's :class:`ErrorSums`, its outputs given a chunk of examples at a time; a
    layer whose two outputs differ in shape is left out."""

    def __init__(self, layers: Sequence[str]):
        self._sums = {layer: ErrorSums() for layer in layers}
        self._unlike: set[str] = set()

    def add(self, layer: str, got: np.ndarray, want: np.ndarray, *, reference: bool = True) -> None:
        if got.shape != want.shape:
            self._unlike.add(layer)
        elif layer not in self._unlike:
            self._sums[layer].add(got, want, reference=reference)

    def reference_sums(self, layer: str, sums: tuple[float, float] | None = None) -> tuple[float, float] | None:
        """:meth:`ErrorSums.reference_sums` of ``layer``; None for a layer left out."""
        return None if layer in self._unlike else self._sums[layer].reference_sums(sums)

    def errors(self, tensors: Mapping[str, str]) -> tuple[LayerError, ...]:
        """The layers' errors, in order; ``tensors``: each layer's output tensor."""
        return tuple(LayerError(layer, tensors[layer], *sums.figures())
                     for layer, sums in self._sums.items() if layer not in self._unlike)


def output_chunk(inputs: Sequence[np.ndarray]) -> int:
    """How many examples of ``inputs`` (one array per graph input) to run at once when only
    the outputs are fetched: :data:`OUTPUT_CHUNK`, fewer for big inputs (:data:`INPUT_CHUNK_BYTES`).

    >>> output_chunk([np.zeros((100, 8, 8, 1), np.float32)]), output_chunk([np.zeros((64, 224, 224, 3), np.float32)])
    (64, 6)
    """
    return _examples_within(INPUT_CHUNK_BYTES, sum(np.asarray(x[:1]).nbytes for x in inputs))


def layer_chunk(values: Sequence[np.ndarray], examples: int) -> int:
    """How many examples to run at once from now on, ``values`` being what a run of
    ``examples`` fetched: as many as :data:`LAYER_CHUNK_BYTES` holds, 1 to :data:`OUTPUT_CHUNK`.

    >>> layer_chunk([np.zeros((1, 4096, 4096), np.float32)], 1), layer_chunk([np.zeros((2, 10))], 2)
    (4, 64)
    """
    return _examples_within(LAYER_CHUNK_BYTES, sum(np.asarray(v).nbytes for v in values) / max(examples, 1))


def _examples_within(budget: int, per_example: float) -> int:
    """How many examples of ``per_example`` bytes ``budget`` holds, 1 to :data:`OUTPUT_CHUNK`."""
    return int(max(1, min(OUTPUT_CHUNK, budget // max(per_example, 1))))


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

    @property
    def layer_examples(self) -> int:
        """How many of the examples the per-layer errors are measured on (the first ones:
        a layer's SQNR and the output's, on every example, may differ by that alone)."""
        return min(self.examples, PER_LAYER_EXAMPLES)

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
                lines.append(f"lowest layer SQNR ({how}, first {self.layer_examples} examples): " + ", ".join(
                    f"{e.layer} {e.sqnr_db:.1f} dB" for e in worst if not math.isinf(e.sqnr_db)))
        return "\n".join(lines)


def layer_outputs(graph: Graph) -> Mapping[str, str]:
    """``{layer: tensor}``: for each layer, the last tensor it hands to another layer
    (or to the graph's outputs); :meth:`qviz.ir.Graph.layer_outputs`."""
    return graph.layer_outputs()


def _accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(np.argmax(logits.reshape(len(labels), -1), axis=1) == labels))


def _run(graph: Graph, inputs: Sequence[np.ndarray], tensors: Sequence[str]):
    """``(graph's outputs, {tensor: value})`` on ``inputs``, from one TensorFlow function per
    graph whatever the examples (a new list of fetches costs a new trace, ~1 s on MobileNetV2)."""
    outs = list(graph.outputs)
    fetches = list(dict.fromkeys([*outs, *tensors]))
    values = dict(zip(fetches, runtime.run(graph, *inputs, fetches=fetches)))
    return [values[t] for t in outs], values


def _examples_key(inputs: Sequence[np.ndarray], count: int) -> str:
    """A digest of the first ``count`` examples of ``inputs`` (their bytes, types and shapes)."""
    h = hashlib.blake2b(digest_size=16)
    for x in inputs:
        part = np.ascontiguousarray(x[:count])
        h.update(f"{part.dtype.str} {part.shape}\n".encode())
        h.update(part.data)
    return h.hexdigest()


def _part(inputs: Sequence[np.ndarray], start: int, count: int) -> list[np.ndarray]:
    return [x[start:start + count] for x in inputs]


def _runs(graph: Graph, inputs: Sequence[np.ndarray], start: int, end: int, tensors: Sequence[str], step: int):
    """``(outputs, {tensor: value})`` of ``graph`` on examples ``[start, end)``, a chunk at a
    time: ``step`` examples first, then as many as :func:`layer_chunk` holds."""
    while start < end:
        part = _part(inputs, start, min(step, end - start))
        outs, values = _run(graph, part, tensors)
        if tensors:
            step = layer_chunk(list(values.values()), len(part[0]))
        start += len(part[0])
        yield outs, values
        del values


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
    if not original.inputs:
        raise runtime.RunError("the model has no inputs (no Placeholder): there are no examples to compare "
                               "it on")
    if inputs is None:
        inputs = noise_inputs(original, count=VERIFY_EXAMPLES, seed=1)
    if not len(inputs[0]):   # (it raised "max() arg is an empty sequence")
        raise runtime.RunError("no examples to verify on: the verification data holds 0")
    if labels is not None and len(labels) != len(inputs[0]):   # (it read 0% accuracy)
        raise runtime.RunError(f"{len(labels)} labels for {len(inputs[0])} examples: give one label per example")
    old, new = layer_outputs(original), layer_outputs(rewritten)
    stands_for = dict(layer_map or {})
    common = [layer for layer in rewritten.layers
              if stands_for.get(layer, layer) in old and layer in new] if per_layer else []
    # Every layer of the original, whatever the recipe: one TensorFlow function serves each
    # verification of this model. Both graphs are run a chunk of examples at a time, the
    # layers compared on the first PER_LAYER_EXAMPLES as they come: the layers' values are
    # never all held at once.
    old_tensors = list(dict.fromkeys(old.values())) if per_layer else []
    pairs = {layer: (new[layer], old[stands_for.get(layer, layer)]) for layer in common}
    new_tensors = [t for t, _ in pairs.values()]
    sums = LayerSums(common)
    split = min(len(inputs[0]), PER_LAYER_EXAMPLES) if pairs else 0   # examples [0, split) are compared layer by layer
    # The float graph's own sums of each compared output (its peak and energy) are the same in
    # every verification of this model on these examples: kept on the graph, they are a third
    # of the numbers' work (~0.4 s of a MobileNetV2 report) done once.
    float_sums = original.memo(("verify: float sums", _examples_key(inputs, split)), dict)
    known = {layer for layer, (_, old_t) in pairs.items() if old_t in float_sums}
    total = len(inputs[0])
    first = 1 if old_tensors else output_chunk(inputs)     # examples of each graph's first run
    with ThreadPoolExecutor(1, thread_name_prefix="qviz-verify") as pool:
        # The rewritten graph is new to TensorFlow: its first run costs ~1 s on MobileNetV2
        # (import, optimization). It runs in a thread while the float graph runs the examples
        # that are not compared layer by layer (~0.3 s less a verification on 2 cores).
        started = pool.submit(_run, rewritten, _part(inputs, 0, first), new_tensors)
        # ...then the examples not compared layer by layer, while this thread compares (~0.3 s less).
        after_rest = pool.submit(lambda: [outs for outs, _ in _runs(rewritten, inputs, split, total, new_tensors, 1)]) \
            if split else None
        before_rest = [outs for outs, _ in _runs(original, inputs, split, total, old_tensors, first)]
        before, after = [], []   # each chunk's outputs
        start, step = 0, first
        while start < split:   # both graphs in step, compared as the chunks come
            part = _part(inputs, start, min(step, split - start))
            outs, want = _run(original, part, old_tensors)
            before.append(outs)
            outs, got = started.result() if start == 0 else _run(rewritten, part, new_tensors)
            after.append(outs)
            for layer, (new_t, old_t) in pairs.items():
                sums.add(layer, got[new_t], want[old_t], reference=layer not in known)
            if start == 0:
                step = layer_chunk([*want.values(), *got.values()], len(part[0]))
            start += len(part[0])
            del want, got   # (before the next run's values come)
        before += before_rest
        if after_rest is not None:
            after += after_rest.result()
        else:   # (its first run: the examples' first chunk)
            after.append(started.result()[0])
            after += [outs for outs, _ in _runs(rewritten, inputs, min(first, total), total, new_tensors, first)]
    for layer, (_, old_t) in pairs.items():
        if layer in known:
            sums.reference_sums(layer, float_sums[old_t])
        elif (measured := sums.reference_sums(layer)) is not None:
            float_sums.setdefault(old_t, measured)
    before = [np.concatenate(parts) for parts in zip(*before)]
    after = [np.concatenate(parts) for parts in zip(*after)]
    max_abs = max(float(np.abs(np.asarray(a, np.float64) - b).max()) for a, b in zip(after, before))
    rel = max(rel_err(a, b) for a, b in zip(after, before))
    signal = np.concatenate([np.ravel(b) for b in before])
    noisy = np.concatenate([np.ravel(a) for a in after])
    layers = sums.errors(new)
    acc_before = acc = None
    if labels is not None:
        acc_before, acc = _accuracy(before[0], labels), _accuracy(after[0], labels)
    own: tuple[LayerError, ...] = ()
    if per_layer and local:
        from .local import local_layer_errors   # it builds on this module

        own = local_layer_errors(original, rewritten, inputs, layer_map=layer_map)
    return Report(len(inputs[0]), max_abs, rel, sqnr_db(noisy, signal), layers, acc_before, acc,
                  warning=constant_output(before), local_layers=own)
