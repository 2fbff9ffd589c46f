"""TensorFlow work for the app, in two long-lived worker processes (lanes).

Calibration and the verification report run both graphs in TensorFlow, and
importing a graph into TF is Python code that holds the GIL for up to seconds
on a large model: done in the web server's process, it stalls every other
request (a fold toggle waited seconds for a redraw). The worker is *spawned*,
not forked — TensorFlow deadlocks in a child forked after the parent has used
it, which is also why Dash's ``DiskcacheManager`` (fork per job) cannot run
this work — and it lives as long as the app, so TF is imported once. Calibration,
which a redraw waits for, has a process of its own, so no redraw queues behind
another session's verification report or sweep (:data:`LANES`).

Jobs carry the original graph (graphs pickle as GraphDef + metadata) and a key;
the worker keeps a few graphs by key so their compiled TF functions are reused.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import tempfile
import threading
import types
import uuid
from concurrent.futures import Future, ProcessPoolExecutor

from cachetools import LRUCache

from .. import runtime

__all__ = ["Worker", "in_thread", "sensitivity_in_thread", "run_sensitivity", "run_qat_export",
           "run_tflite_export", "run_activation_samples"]

_GRAPHS: LRUCache = LRUCache(maxsize=8)   # in the worker process only: key → Graph


def _init():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    # Leave a core to the web server: a redraw must not wait for a report.
    spare = max(1, (os.cpu_count() or 2) - 1)
    tf.config.threading.set_intra_op_parallelism_threads(spare)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def _graph(key, graph):
    """The worker's copy of a model's graph: the first one sent under ``key``
    (so its memo — compiled functions, shapes — is kept between jobs)."""
    return _GRAPHS.setdefault(key, graph)


def _ranges_job(key, graph, fold_layers):
    """Activation ranges of every quantizable layer of the graph folded as asked."""
    from ..passes import LayerBits, QuantizeConfig, fold_batch_norms, quant_points, quantizable_units
    from ..passes.calibration import activation_ranges
    from ..ir.ops import LAYER_OPS
    from ..passes.quant_points import bypass_adds
    from ..samples import data_for

    graph = _graph(key, graph)
    folded = fold_batch_norms(graph, layers=list(fold_layers)).graph
    config = QuantizeConfig({name: LayerBits(8, 8) for name in quantizable_units(folded)})
    points, _ = quant_points(folded, config)
    adds = set(bypass_adds(folded))
    tensors = [p.tensor for p in points if p.kind not in ("weights", "requantize", "fixed")]
    # and every unit's input: a layer quantized alone rounds its input at a range of its own
    units = set(config.layers)
    tensors += [t for n in folded.nodes if n.layer in units and (n.op in LAYER_OPS or n in adds)
                for t in (n.inputs[:1] if n.op in LAYER_OPS else n.inputs)]
    return activation_ranges(folded, list(dict.fromkeys(tensors)), list(data_for(graph).calibration))


def _report_job(key, graph, recipe_json, ranges):
    from ..passes import Recipe
    from ..pipeline import apply, report_for
    from ..samples import data_for

    graph = _graph(key, graph)
    recipe = Recipe.from_json(recipe_json)
    data = data_for(graph)
    result = apply(graph, recipe, ranges=ranges, calibration=data.calibration, report=False)
    return report_for(graph, recipe, result, data.verification, data.labels)


def run_activation_samples(graph, recipe_json, ranges, examples=64):
    """``{tensor: values}``: what every activation quantizer of the rewritten graph
    sees on the first calibration examples (a fixed-size sample of each, for the
    quantization grids). One run per recipe: any layer selected next is drawn at once."""
    from ..analysis.quant_grid import activation_tensors, subsample
    from ..passes import Recipe
    from ..pipeline import apply
    from ..samples import data_for

    calibration = data_for(graph).calibration
    rewritten = apply(graph, Recipe.from_json(recipe_json), ranges=ranges, calibration=calibration,
                      report=False).graph
    tensors = activation_tensors(rewritten)
    if not tensors:
        return {}
    values = runtime.run(rewritten, *[x[:examples] for x in calibration], fetches=tensors)
    return {t: subsample(v) for t, v in zip(tensors, values)}


def _samples_job(key, graph, recipe_json, ranges):
    return run_activation_samples(_graph(key, graph), recipe_json, ranges)


def run_sensitivity(graph, bits, progress=None):
    """The per-layer sweep; ``progress(done, total)`` after each measurement."""
    from ..analysis.sensitivity import sensitivity
    from ..samples import data_for

    data = data_for(graph)
    return sensitivity(graph, bits=tuple(bits), inputs=data.verification, labels=data.labels,
                       calibration=data.calibration, progress=progress)


def _sensitivity_job(key, graph, bits, progress_path):
    # The app is another process: progress goes to a small file it polls.
    return run_sensitivity(_graph(key, graph), bits, lambda done, total: write_progress(progress_path, done, total))


def run_qat_export(source, recipe_json, folding_mode, freeze_bn_delay):
    """The ``.keras`` bytes of the QAT model of a Keras model file."""
    from pathlib import Path

    from ..passes import Recipe
    from ..qat import export_qat
    from ..samples import data_for

    with tempfile.TemporaryDirectory(prefix="qviz-qat-") as tmp:
        out = Path(tmp) / "model_qat.keras"
        export_qat(source, Recipe.from_json(recipe_json), out, folding_mode=folding_mode,
                   freeze_bn_delay=freeze_bn_delay, calibration=lambda g: data_for(g).calibration)
        return out.read_bytes()


def run_tflite_export(graph, recipe_json, int8_io):
    """``(tflite bytes, DeployCheck, DeviceReport)`` of a recipe (see :func:`qviz.exporters.export_tflite`)."""
    from pathlib import Path

    from ..exporters.tflite import export_tflite
    from ..passes import Recipe
    from ..samples import data_for

    with tempfile.TemporaryDirectory(prefix="qviz-tflite-") as tmp:
        data = data_for(graph)
        done = export_tflite(graph, Recipe.from_json(recipe_json), Path(tmp) / "model.tflite", int8_io=int8_io,
                             calibration=data.calibration, verification=data.verification)
        return done.path.read_bytes(), done.check, done.device


def _tflite_job(key, graph, recipe_json, int8_io):
    return run_tflite_export(_graph(key, graph), recipe_json, int8_io)


def write_progress(path, done: int, total: int) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(f"{done} {total}")
    os.replace(tmp, path)  # readers never see a half-written file


def _remove(path) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


def read_progress(path) -> tuple[int, int] | None:
    try:
        with open(path, encoding="utf-8") as f:
            done, total = f.read().split()
        return int(done), int(total)
    except (OSError, ValueError):
        return None


#: The worker's lanes, one process each. A redraw waits for calibration ranges
#: (interactive); reports, sweeps and QAT exports are polled (background). With
#: one queue, every session's redraw waited behind every session's report.
LANES = ("interactive", "background")


class Worker:
    """Two one-process pools (:data:`LANES`), started on first use."""

    def __init__(self):
        self._pools: dict[str, ProcessPoolExecutor] = {}
        self._lock = threading.Lock()

    def start(self) -> "Worker":
        """Launch the worker processes now (they import TensorFlow while the app starts).

        Call from the main thread before serving: starting swaps ``__main__``.
        """
        for lane in LANES:
            self._get(lane)
        return self

    def _get(self, lane: str = "background") -> ProcessPoolExecutor:
        with self._lock:
            if lane not in self._pools:
                with _plain_main():
                    pool = ProcessPoolExecutor(max_workers=1, initializer=_init,
                                               mp_context=multiprocessing.get_context("spawn"))
                    pool.submit(os.getpid)  # starts the process here, inside _plain_main
                if not self._pools:
                    # Before concurrent.futures' own exit hook joins the workers (which,
                    # holding TensorFlow's threads, may never exit by themselves): terminate them.
                    threading._register_atexit(self.close)
                self._pools[lane] = pool
            return self._pools[lane]

    def ranges(self, key, graph, fold_layers) -> Future:
        return self._get("interactive").submit(_ranges_job, key, graph, tuple(fold_layers))

    def report(self, key, graph, recipe_json: str, ranges) -> Future:
        return self._get().submit(_report_job, key, graph, recipe_json, ranges)

    def samples(self, key, graph, recipe_json: str, ranges) -> Future:
        return self._get("interactive").submit(_samples_job, key, graph, recipe_json, ranges)

    def sensitivity(self, key, graph, bits) -> Future:
        """The sweep as a future with a ``progress()`` method: ``(done, total)``."""
        path = os.path.join(tempfile.gettempdir(), f"qviz-sweep-{key}-{uuid.uuid4().hex[:8]}")
        write_progress(path, 0, 1)
        fut = self._get().submit(_sensitivity_job, key, graph, tuple(bits), path)
        fut.progress = lambda: read_progress(path) or (0, 1)
        fut.add_done_callback(lambda _: _remove(path))
        return fut

    def qat(self, source, recipe_json: str, folding_mode: str, freeze_bn_delay) -> Future:
        return self._get().submit(run_qat_export, str(source), recipe_json, folding_mode, freeze_bn_delay)

    def tflite(self, key, graph, recipe_json: str, int8_io: bool) -> Future:
        return self._get().submit(_tflite_job, key, graph, recipe_json, int8_io)

    def close(self) -> None:
        """Stop the worker processes (they may be busy in TensorFlow: they are terminated)."""
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            processes = list((pool._processes or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for p in processes:
                p.terminate()
                p.join(5)


def in_thread(fn, *args) -> Future:
    """Run ``fn`` in a daemon thread of this process, as a future (opening a model;
    the long jobs when the app runs without a worker)."""
    fut = Future()

    def run():
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:  # handed to whoever polls the future
            fut.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return fut


def sensitivity_in_thread(graph, bits) -> Future:
    """:meth:`Worker.sensitivity` without a worker process."""
    state = [0, 1]

    def progress(done, total):
        state[:] = [done, total]

    fut = in_thread(run_sensitivity, graph, tuple(bits), progress)
    fut.progress = lambda: tuple(state)
    return fut


@contextlib.contextmanager
def _plain_main():
    """Start processes without the parent's ``__main__``: a spawned child re-imports
    it, and a script without a ``__name__`` guard would run again in the worker."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main
