"""Per-layer quantization sensitivity: which layers tolerate how few bits.

Each layer is quantized on its own — its weights only, then its activations
only — at each bit width, with every batch norm folded and everything else
float; the output SQNR (and, for ``lenet_digits``, test accuracy) is measured.
:meth:`Sensitivity.suggest` turns the table into a mixed-precision recipe.

>>> import qviz
>>> from qviz.samples import sample_path
>>> s = sensitivity(qviz.load(sample_path("lenet_digits")), bits=(8, 2))
>>> s.layers, s.bits
(('conv1', 'conv2', 'fc1', 'logits'), (8, 2))
>>> bool((s.weight_sqnr[:, 0] > s.weight_sqnr[:, 1]).all())   # 8 bits beat 2 bits everywhere
True

A sweep splits by layers (each part on another worker) and merges back whole:

>>> g = qviz.load(sample_path("lenet_digits"))
>>> parts = [sensitivity(g, bits=(8, 2), layers=chunk) for chunk in (["conv1", "logits"], ["conv2", "fc1"])]
>>> whole = Sensitivity.merge(parts, quantizable_layers(g))
>>> whole.layers == s.layers and bool((whole.weight_sqnr == s.weight_sqnr).all())
True
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import threading
from pathlib import Path
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..ir import Graph, GraphError
from ..passes import LayerBits, Recipe, folded_into, quantizable_layers, quantized_in_graph
from ..passes.calibration import noise_inputs
from ..passes.refold import calibrate_folds
from ..metrics import VERIFY_EXAMPLES, constant_output, verify
from .. import runtime
from ..choices import SWEEP_BITS
from ..errors import QvizError

__all__ = ["Sensitivity", "sensitivity", "measured_already", "measured_so_far", "checkpoint_bits", "CheckpointError"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sensitivity:
    """Output SQNR (dB) per layer (rows) and bit width (columns)."""

    layers: tuple[str, ...]
    bits: tuple[int, ...]
    weight_sqnr: np.ndarray
    activation_sqnr: np.ndarray
    weight_accuracy: np.ndarray | None = None
    activation_accuracy: np.ndarray | None = None
    warning: str | None = None   # the float reference cannot measure error (constant output)

    @classmethod
    def merge(cls, parts: Sequence["Sensitivity"], order: Sequence[str]) -> "Sensitivity":
        """One sweep from ``parts`` that swept disjoint layers at the same bits, its rows in
        ``order`` (the graph's quantizable layers). Raises ValueError if they do not fit."""
        if not parts or len({p.bits for p in parts}) != 1:
            raise ValueError("the parts of a sweep must sweep the same bits")
        rows = {name: (p, i) for p in parts for i, name in enumerate(p.layers)}
        if sorted(rows) != sorted(order) or sum(len(p.layers) for p in parts) != len(order):
            raise ValueError(f"the parts sweep {sorted(rows)}, not the layers {sorted(order)} once each")

        def stack(field):
            if any(getattr(p, field) is None for p in parts):
                return None
            return np.array([getattr(rows[name][0], field)[rows[name][1]] for name in order]).reshape(
                len(order), len(parts[0].bits))

        return cls(tuple(order), parts[0].bits, stack("weight_sqnr"), stack("activation_sqnr"),
                   stack("weight_accuracy"), stack("activation_accuracy"),
                   warning=next((p.warning for p in parts if p.warning), None))

    def need_db(self, target_sqnr_db: float) -> float:
        """The SQNR each quantizer (weights and activations of every layer) must
        reach on its own for the whole model to reach ``target_sqnr_db``."""
        return target_sqnr_db + 10 * math.log10(max(2 * len(self.layers), 1))

    def suggest(self, target_sqnr_db: float) -> Recipe:
        """The fewest bits per layer that keep the whole model near ``target_sqnr_db``.

        Quantization noise of independent quantizers adds up, so each of the
        ``n`` quantizers (weights and activations of every layer) must reach
        ``target + 10·log10(n)`` on its own; each picks the smallest bit width
        in the sweep that does (the largest if none does). When the float model's
        output is constant (:attr:`warning`), the figures mean nothing and every
        layer gets the largest width.
        """
        need = self.need_db(target_sqnr_db)
        order = np.argsort(self.bits)  # fewest bits first

        def pick(row):
            if self.warning:   # the figures (often ∞) mean nothing: no saving is justified
                return int(max(self.bits))
            for j in order:
                if row[j] >= need:
                    return int(self.bits[j])
            return int(max(self.bits))

        layers = {name: LayerBits(pick(self.weight_sqnr[i]), pick(self.activation_sqnr[i]))
                  for i, name in enumerate(self.layers)}
        return Recipe(fold_default=True, quantize_default=None, quantize_layers=layers)

    def shortfalls(self, target_sqnr_db: float) -> list[str]:
        """Where the widths swept cannot reach what :meth:`suggest` needs, one line each
        (the layer, the part, its best figure and how far short it is); empty when all can.

        A suggestion then only says "the widest bits swept": it does not meet the target.
        """
        if self.warning:
            return []
        need = self.need_db(target_sqnr_db)
        widest = int(np.argmax(self.bits))
        out = []
        for i, name in enumerate(self.layers):
            for part, row in (("weights", self.weight_sqnr[i]), ("activations", self.activation_sqnr[i])):
                best = float(row[widest])
                if best < need:
                    out.append(f"{name} {part}: {best:.1f} dB at {int(self.bits[widest])} bits, "
                               f"{need - best:.1f} dB short of {need:.1f}")
        return out

    def format(self) -> str:
        # the names whole (cut at 15 characters, "block_1_depthwi" and "expanded_conv_d" were
        # not names), as wide as the longest
        width = max((len(name) for name in self.layers), default=5) + 1
        head = "layer".ljust(width) + "".join(f"{'w' + str(b):>8}" for b in self.bits) + \
            "".join(f"{'a' + str(b):>8}" for b in self.bits)
        rows = ([f"warning: {self.warning}"] if self.warning else []) + [head]
        for i, name in enumerate(self.layers):
            cells = [*self.weight_sqnr[i], *self.activation_sqnr[i]]
            rows.append(name.ljust(width) + "".join(
                f"{'inf' if math.isinf(c) else f'{c:.1f}':>8}" for c in cells))
        return "\n".join(rows)

    def to_dict(self) -> dict:
        def clean(a):
            return None if a is None else [[None if math.isinf(x) else float(x) for x in row] for row in a]

        return {"layers": list(self.layers), "bits": list(self.bits),
                "weight_sqnr_db": clean(self.weight_sqnr), "activation_sqnr_db": clean(self.activation_sqnr),
                "weight_accuracy": clean(self.weight_accuracy),
                "activation_accuracy": clean(self.activation_accuracy), "warning": self.warning}


def _fingerprint(graph: Graph, inputs) -> str:
    """What a checkpoint's measurements depend on: the graph and the inputs."""
    h = hashlib.sha256(graph.to_graph_def().SerializeToString(deterministic=True))
    for x in inputs:
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()[:32]


class CheckpointError(QvizError):
    """A checkpoint file a sweep must not write: not one of qviz's, another model's (or
    other inputs'), or not writable. The message names the file."""


def _check_checkpoint(path: Path, fingerprint: str) -> None:
    """Refuse, before any measurement, a file the sweep would overwrite with a loss (a
    recipe given by mistake, another model's measurements) or could not write to."""
    if not path.parent.is_dir():
        raise CheckpointError(f"{path}: no such directory to save the measurements in")
    if not path.exists() and not path.is_symlink():
        if not os.access(path.parent, os.W_OK):
            raise CheckpointError(f"{path}: the directory is not writable")
        return
    if not path.is_file():
        raise CheckpointError(f"{path}: not a regular file; give a .json file to save the measurements in")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: not a qviz sensitivity checkpoint ({type(exc).__name__}); it is not "
                              "overwritten: give another file") from None
    if not (isinstance(data, dict) and isinstance(data.get("fingerprint"), str) and "cells" in data):
        raise CheckpointError(f"{path}: not a qviz sensitivity checkpoint; it is not overwritten: give another file")
    if data["fingerprint"] != fingerprint:
        raise CheckpointError(f"{path}: the measurements of another model or other inputs; they are not "
                              "overwritten: give another file (or delete it)")
    if not os.access(path, os.W_OK):
        raise CheckpointError(f"{path}: not writable")


def _read_checkpoint(path: Path, fingerprint: str) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("fingerprint") != fingerprint:
        return {}
    return _valid_cells(data.get("cells"))


def _valid_cells(cells) -> dict:
    """The well-formed measurements of a checkpoint's ``cells``: ``[sqnr, accuracy]``, each a
    number or None (a cell written otherwise is measured again)."""
    if not isinstance(cells, dict):
        return {}
    ok = lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))  # noqa: E731
    return {k: v for k, v in cells.items() if isinstance(v, list) and len(v) == 2 and ok(v[0]) and ok(v[1])}


def _write_checkpoint(path: Path, fingerprint: str, cells: dict) -> None:
    """Write ``cells`` with those another writer put in the file meanwhile (a sweep being
    stopped may still write as the next one starts: each keeps the other's). A directory
    gone (its session closed while the sweep stopped) is not written to."""
    if not path.parent.is_dir():
        return
    cells.update({k: v for k, v in _read_checkpoint(path, fingerprint).items() if k not in cells})
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")   # (each writer its own)
    try:
        tmp.write_text(json.dumps({"fingerprint": fingerprint, "cells": cells}), encoding="utf-8")
        os.replace(tmp, path)   # a sweep stopped mid-write leaves the previous checkpoint whole
    except FileNotFoundError:   # removed meanwhile
        tmp.unlink(missing_ok=True)
    except OSError as exc:   # a disk full, a directory put in its place: said, nothing left behind
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise CheckpointError(f"{path}: the measurements could not be saved: {exc.strerror or exc}") from None


def _cell(which: str, layer: str, bits: int) -> str:
    return json.dumps([which, layer, bits])


def _any_cells(checkpoint) -> dict:
    """The well-formed measurements of a checkpoint, whatever graph it was made for (``{}``
    if it cannot be read)."""
    try:
        return _valid_cells(json.loads(Path(checkpoint).read_text(encoding="utf-8")).get("cells"))
    except (OSError, ValueError, AttributeError):
        return {}


def checkpoint_bits(checkpoint: str | os.PathLike) -> tuple[int, ...]:
    """The widths ``checkpoint`` holds measurements at, widest first (``()``: none, or no
    readable checkpoint: :func:`sensitivity` says why when given it).

    >>> import tempfile
    >>> d = tempfile.TemporaryDirectory()
    >>> path = Path(d.name) / "sweep.json"
    >>> _write_checkpoint(path, "f", {_cell("w", "conv1", 8): [40.0, None], _cell("a", "fc1", 4): [20.0, None]})
    >>> checkpoint_bits(path), checkpoint_bits(path.with_name("none.json"))
    ((8, 4), ())
    >>> d.cleanup()
    """
    bits = set()
    for key in _any_cells(checkpoint):
        try:
            b = json.loads(key)[2]
        except (ValueError, IndexError, TypeError, KeyError):
            continue
        if isinstance(b, int) and not isinstance(b, bool):
            bits.add(b)
    return tuple(sorted(bits, reverse=True))


def measured_already(checkpoint: str | os.PathLike, layers: Sequence[str], bits: Sequence[int]) -> int:
    """How many of the measurements a sweep of ``layers`` at ``bits`` would make are in
    ``checkpoint`` (the caller's own, for the same graph and inputs: not checked here).

    >>> import tempfile
    >>> d = tempfile.TemporaryDirectory()
    >>> path = Path(d.name) / "sweep.json"
    >>> _write_checkpoint(path, "f", {_cell("w", "conv1", 8): [40.0, None], _cell("a", "conv1", 4): [20.0, None]})
    >>> measured_already(path, ["conv1", "fc1"], [8, 2]), measured_already(path.with_name("none.json"), ["conv1"], [8])
    (1, 0)
    >>> d.cleanup()
    """
    cells = _any_cells(checkpoint)
    return sum(_cell(which, layer, int(b)) in cells for layer in layers for which in ("w", "a") for b in bits)


def measured_so_far(checkpoint: str | os.PathLike, layers: Sequence[str], bits: Sequence[int]) -> Sensitivity | None:
    """What ``checkpoint`` holds of a sweep of ``layers`` at ``bits`` (a sweep stopped part
    way), as a :class:`Sensitivity` with NaN where a measurement was not made; None if it
    holds none of them. The caller's own checkpoint, for the same graph and inputs: not
    checked here, as in :func:`measured_already`.

    >>> import tempfile
    >>> d = tempfile.TemporaryDirectory()
    >>> path = Path(d.name) / "sweep.json"
    >>> _write_checkpoint(path, "f", {_cell("w", "conv1", 8): [40.0, 0.9], _cell("a", "conv1", 8): [None, 0.9]})
    >>> part = measured_so_far(path, ["conv1", "fc1"], [8, 2])
    >>> part.weight_sqnr.tolist(), part.activation_sqnr[0].tolist(), part.weight_accuracy[0].tolist()
    ([[40.0, nan], [nan, nan]], [inf, nan], [0.9, nan])
    >>> measured_so_far(path, ["fc1"], [8]) is None
    True
    >>> d.cleanup()
    """
    bits = tuple(int(b) for b in bits)
    sq, acc, found, has_acc = _table(_any_cells(checkpoint), layers, bits)
    if not found:
        return None
    return Sensitivity(tuple(layers), bits, sq["w"], sq["a"], acc["w"] if has_acc else None,
                       acc["a"] if has_acc else None)


def _table(cells: dict, layers: Sequence[str], bits: Sequence[int]):
    """``(sqnr, accuracy, any cell found, any accuracy found)`` of ``cells`` (a checkpoint's
    measurements): ``{"w"|"a": layers × bits array}`` each, NaN where a cell is missing;
    an SQNR written as None is exact (∞), an accuracy written as None is NaN."""
    shape = (len(layers), len(bits))
    sq = {"w": np.full(shape, np.nan), "a": np.full(shape, np.nan)}
    acc = {"w": np.full(shape, np.nan), "a": np.full(shape, np.nan)}
    found = has_acc = False
    for i, layer in enumerate(layers):
        for which in ("w", "a"):
            for j, b in enumerate(bits):
                cell = cells.get(_cell(which, layer, b))
                if cell is None:
                    continue
                found = True
                sq[which][i, j] = math.inf if cell[0] is None else cell[0]
                if cell[1] is not None:
                    acc[which][i, j], has_acc = cell[1], True
    return sq, acc, found, has_acc


def _ranges(graph: Graph, calibration) -> dict:
    """The activation ranges every measurement of a sweep uses: the folded graph's, as
    ``qviz.apply`` gives them (the float graph's calibration carried to the folds)."""
    return calibrate_folds(graph, sorted(folded_into(graph)),
                           list(calibration) if calibration is not None else noise_inputs(graph))


def sensitivity(graph: Graph, *, bits: Sequence[int] = SWEEP_BITS,
                inputs: Sequence[np.ndarray] | None = None, labels: np.ndarray | None = None,
                calibration: Sequence[np.ndarray] | None = None,
                progress: Callable[[int, int], None] | None = None,
                checkpoint: str | os.PathLike | None = None, layers: Sequence[str] | None = None) -> Sensitivity:
    """Sweep every quantizable layer over ``bits``, weights then activations.

    Args:
        graph: the original graph (batch norms are folded first, as ``apply`` does).
        inputs, labels: what to measure on (default: fixed-seed noise, no labels).
        calibration: what activation ranges are measured on (default: noise).
        progress: called with ``(done, total)`` after each measurement made;
            ``total`` counts only the measurements ``checkpoint`` does not hold
            (a resumed sweep's bar and time left are those of the work left).
        checkpoint: a JSON file the measurements are written to as they are
            made; measurements already in it (for the same graph and inputs)
            are not made again, so a stopped sweep resumes where it stopped.
        layers: sweep only these quantizable layers (one part of a sweep fanned
            out over workers; :meth:`Sensitivity.merge` joins the parts).

    Raises:
        ValueError: ``layers`` names a layer that is not quantizable.
        GraphError: the graph has no layer to quantize.
    """
    from ..pipeline import apply

    bits = tuple(dict.fromkeys(int(b) for b in bits))   # (8 8 4 measured 8 twice)
    for b in bits:
        LayerBits(b, b)  # validates the range
    if inputs is None:
        inputs = noise_inputs(graph, count=VERIFY_EXAMPLES, seed=1)
    inputs = list(inputs)
    every = quantizable_layers(graph)
    if not every:
        done = len(quantized_in_graph(graph))
        raise GraphError("nothing to measure: the model has no conv/dense layer left to quantize"
                         + (f" ({done} fake-quantized already)" if done else ""))
    if layers is not None:
        unknown = [name for name in layers if name not in every]
        if unknown:
            raise ValueError(f"not quantizable layers of this graph: {unknown[:5]}")
    layers = every if layers is None else [name for name in every if name in set(layers)]
    # One calibration for every run (made at the first measurement a checkpoint does not hold)
    ranges = None
    path = Path(checkpoint) if checkpoint is not None else None
    fingerprint = _fingerprint(graph, inputs) if path is not None else ""
    if path is not None:
        _check_checkpoint(path, fingerprint)
    cells = _read_checkpoint(path, fingerprint) if path is not None else {}
    total = sum(_cell(which, layer, b) not in cells for layer in layers for which in ("w", "a") for b in bits)
    done = 0
    if path is not None and total < 2 * len(layers) * len(bits):
        log.info("%d of %d measurements read from %s", 2 * len(layers) * len(bits) - total,
                 2 * len(layers) * len(bits), path)
    for layer in layers:
        for which in ("w", "a"):
            for b in bits:
                key = _cell(which, layer, b)
                if key not in cells:
                    if ranges is None:
                        ranges = _ranges(graph, calibration)
                    lb = LayerBits(b, None) if which == "w" else LayerBits(None, b)
                    result = apply(graph, Recipe(quantize_default=None, quantize_layers={layer: lb}),
                                   ranges=ranges, report=False)
                    rep = verify(graph, result.graph, inputs, labels=labels, per_layer=False)
                    cells[key] = [None if math.isinf(rep.sqnr_db) else rep.sqnr_db, rep.accuracy]
                    if path is not None:
                        _write_checkpoint(path, fingerprint, cells)
                    done += 1
                    if progress is not None:
                        progress(done, total)
    sq, acc, _, _ = _table(cells, layers, bits)
    has_acc = labels is not None
    return Sensitivity(tuple(layers), bits, sq["w"], sq["a"],
                       acc["w"] if has_acc else None, acc["a"] if has_acc else None,
                       warning=constant_output(runtime.run(graph, *inputs)))
