"""The app's TensorFlow work, as job functions (:data:`JOBS`) a runner calls
(:mod:`qviz.app.jobs`): in a spawned worker process, a Celery worker, or a
thread.

Calibration and the verification report run both graphs in TensorFlow, and
importing a graph into TF is Python code that holds the GIL for up to seconds
on a large model: done in the web server's process, it stalls every other
request. The worker is *spawned*, not forked — TensorFlow deadlocks in a child
forked after the parent has used it, which is also why Dash's
``DiskcacheManager`` (fork per job) cannot run this work — and it lives as long
as the app, so TF is imported once.

Jobs carry the original graph (graphs pickle as GraphDef + metadata) and a key;
the worker keeps a few graphs by key so their compiled TF functions are
reused. What a graph is calibrated and verified on is
:func:`qviz.samples.data_for` (a sample's own data, else noise), found here
from the graph's source.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from cachetools import LRUCache

from .. import runtime

__all__ = ["JOBS", "init_worker", "worker_graph", "open_model", "settle_heap", "calibrate", "activation_samples", "report", "sweep", "qat_export",
           "tflite_export", "explain_fold", "explain_training"]

_GRAPHS: LRUCache = LRUCache(maxsize=8)   # in the worker process: key → Graph


def init_worker():
    """Set up a worker process: quiet TensorFlow, and leave a core to the web server."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    runtime.import_quietly()   # not TensorFlow's start-up notices in the server's log
    import tensorflow as tf

    # Leave a core to the web server: a redraw must not wait for a report.
    spare = max(1, (os.cpu_count() or 2) - 1)
    tf.config.threading.set_intra_op_parallelism_threads(spare)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def open_model(path, name, directory=None, queued=None, load_options=None, progress=None):
    """Load a model file as the page names it (``name``; no server path in an
    error), with its tensor shapes inferred now, not in the first draw's request.
    ``load_options``: :func:`qviz.load`'s (``qviz serve``'s --input-shape and the like)."""
    import logging
    import time

    from ..runtime import import_quietly, limit_threads, tensor_shapes
    from .uploads import open_file

    started = time.monotonic()
    try:
        # The first open in the web process imports TensorFlow here, not before the server
        # answered; leave a core to the requests (only possible before TF has run anything).
        import_quietly()
        limit_threads(max(1, (os.cpu_count() or 2) - 1))
        graph = open_file(path, name, directory, **(load_options or {}))
        tensor_shapes(graph)
        settle_heap()
        return graph
    finally:
        logging.getLogger(__name__).info("opened %s in %.2f s after %.2f s in line", name,
                                         time.monotonic() - started, started - (queued or started))


def settle_heap() -> None:
    """Collect what is garbage now, then exempt everything alive from Python's full
    collections (``gc.freeze``): once TensorFlow and a model are loaded, the web process
    holds ~0.5 M objects, and a full collection — triggered by whatever request allocates
    when it is due — held the GIL for ~0.9 s in the middle of a fold toggle's redraw
    (MobileNetV2; the redraw took 2.1 s instead of ~0.8). Called after each model is open
    (its seconds hide this one's): what was frozen before is let go first, so the garbage
    of models since closed is collected here, not kept."""
    import gc

    gc.unfreeze()
    gc.collect()
    gc.freeze()


def worker_graph(key: str):
    """The graph this worker was sent under ``key``, if it still keeps it (else None)."""
    return _GRAPHS.get(key)


def _graph(key, graph):
    """The worker's copy of a model's graph: the first one sent under ``key``
    (so its memo — compiled functions, shapes — is kept between jobs)."""
    return _GRAPHS.setdefault(key, graph)


def _calibration(graph) -> list:
    """The model's calibration data; CalibrationError (one line) when none can be made."""
    from ..passes.calibration import noise_inputs
    from ..samples import data_for

    calibration = data_for(graph).calibration
    return list(calibration) if calibration is not None else noise_inputs(graph)   # raises, saying why


def calibrate(key, graph, ema_decay=None, progress=None):
    """The float graph's activation ranges, which every fold selection reads
    (:func:`qviz.passes.refold.float_ranges`); ``ema_decay``: the recipe's moving
    average of each batch's extremes, as ``qviz apply`` calibrates it."""
    from ..passes.refold import float_ranges

    graph = _graph(key, graph)
    return float_ranges(graph, _calibration(graph), ema_decay=ema_decay)


def report(key, graph, recipe_json, ranges, local=False, progress=None):
    """The verification report of a recipe, on the model's own data (``local``: each
    layer's own error too)."""
    from ..passes import Recipe
    from ..pipeline import apply, report_for
    from ..samples import data_for

    graph = _graph(key, graph)
    recipe = Recipe.from_json(recipe_json)
    data = data_for(graph)
    # the calibration is made only if a range is missing (noise: 0.1 s on MobileNetV2 224)
    result = apply(graph, recipe, ranges=ranges, calibration=lambda: data.calibration, report=False)
    return report_for(graph, recipe, result, data.verification, data.labels, local=local)


def activation_samples(key, graph, recipe_json, ranges, examples=64, progress=None):
    """``{tensor: values}``: what every activation quantizer of the rewritten graph
    sees on the first calibration examples (a fixed-size sample of each, for the
    quantization grids). One run per recipe: any layer selected next is drawn at once."""
    from ..analysis.quant_grid import activation_samples as sampled
    from ..passes import Recipe
    from ..pipeline import apply

    graph = _graph(key, graph)
    calibration = _calibration(graph)
    rewritten = apply(graph, Recipe.from_json(recipe_json), ranges=ranges, calibration=calibration,
                      report=False).graph
    return sampled(rewritten, [x[:examples] for x in calibration])


def sweep(key, graph, bits, checkpoint=None, progress=None):
    """The per-layer sensitivity sweep; ``progress(done, total)`` after each measurement.
    ``checkpoint``: the session's file of measurements made (by a sweep stopped, or of
    other widths), not made again (:func:`qviz.analysis.sensitivity.sensitivity`)."""
    return sweep_part(key, graph, bits, None, checkpoint, progress=progress)


def sweep_part(key, graph, bits, layers, checkpoint=None, progress=None):
    """The sweep of ``layers`` only (None: all): one part of a sweep fanned out
    (:mod:`qviz.app.fan_out`)."""
    from ..analysis.sensitivity import sensitivity
    from ..samples import data_for

    graph = _graph(key, graph)
    data = data_for(graph)
    return sensitivity(graph, bits=tuple(bits), **data.sweep_kwargs(), progress=progress, layers=layers,
                       checkpoint=checkpoint)


def qat_export(source, recipe_json, folding_mode, freeze_bn_delay, progress=None):
    """The ``.keras`` bytes of the QAT model of a Keras model file."""
    from ..passes import Recipe
    from ..qat import export_qat
    from ..samples import data_for

    with tempfile.TemporaryDirectory(prefix="qviz-qat-") as tmp:
        out = Path(tmp) / "model_qat.keras"
        export_qat(source, Recipe.from_json(recipe_json), out, folding_mode=folding_mode,
                   freeze_bn_delay=freeze_bn_delay, calibration=lambda g: data_for(g).calibration)
        return out.read_bytes()


def pareto(key, graph, sens, trade="size", progress=None):
    """The mixed-precision search over the sweep ``sens`` saving ``trade`` ("size" or
    "bops"), each recipe measured on the model's data and its bit-operations counted."""
    chain, shapes = pareto_chain(key, graph, sens, trade)
    return pareto_measure(key, graph, chain, shapes, progress=progress)


def pareto_chain(key, graph, sens, trade="size", progress=None):
    """``(the search's recipes, not yet measured; the graph's tensor shapes)``."""
    from ..analysis.budget import layer_macs
    from ..analysis.mixed_precision import search, weight_counts
    from ..runtime import tensor_shapes

    graph = _graph(key, graph)
    shapes = tensor_shapes(graph)
    return search(sens, weight_counts(graph), macs=layer_macs(graph, shapes) if trade == "bops" else None), shapes


def pareto_measure(key, graph, chain, shapes, progress=None):
    """``chain``'s recipes measured on the model's data (all of a search's, or one part)."""
    from ..analysis.mixed_precision import measure_front
    from ..samples import data_for

    graph = _graph(key, graph)
    return measure_front(graph, chain, **data_for(graph).sweep_kwargs(), shapes=shapes, progress=progress)


def code_export(source, recipe_json, tool, name, progress=None):
    """``(zip bytes, notes)``: the recipe written for ``tool`` (:func:`qviz.exporters.code.export_code`),
    every file it writes in one archive."""
    import zipfile
    from io import BytesIO

    from ..exporters.code import CODE_TOOLS, export_code
    from ..passes import Recipe
    from ..samples import data_for

    with tempfile.TemporaryDirectory(prefix="qviz-code-") as tmp:
        out = Path(tmp) / f"{name}{CODE_TOOLS[tool]}"
        done = export_code(source, Recipe.from_json(recipe_json), tool, out,
                           calibration=lambda g: data_for(g).calibration)
        archive = BytesIO()
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
            for path in done.files:
                z.write(path, path.name)
        return archive.getvalue(), done.notes


def tflite_export(key, graph, recipe_json, int8_io, progress=None):
    """``(tflite bytes, DeployCheck, DeviceReport)`` of a recipe (see :func:`qviz.exporters.export_tflite`)."""
    from ..exporters.tflite import export_tflite
    from ..passes import Recipe
    from ..samples import data_for

    graph = _graph(key, graph)
    with tempfile.TemporaryDirectory(prefix="qviz-tflite-") as tmp:
        data = data_for(graph)
        done = export_tflite(graph, Recipe.from_json(recipe_json), Path(tmp) / "model.tflite", int8_io=int8_io,
                             calibration=data.calibration, verification=data.verification)
        return done.path.read_bytes(), done.check, done.device


def explain_fold(key, graph, layer, progress=None):
    """The inference fold of ``layer``'s batch norm, explained on the model's own numbers,
    with the three orders of folding and quantizing it measured at the sweep's widths."""
    from dataclasses import replace

    from ..analysis.fold_explainer import explain_fold as explain
    from ..analysis.fold_orders import fold_orders
    from ..choices import SWEEP_BITS
    from ..samples import data_for

    graph = _graph(key, graph)
    data = data_for(graph).calibration
    return replace(explain(graph, layer, data), orders=fold_orders(graph, layer, SWEEP_BITS, inputs=data))


def explain_training(key, graph, layer, mode, frozen, progress=None):
    """A training-mode fold of ``layer`` in ``mode``, checked before or after the freeze."""
    from ..analysis.training_fold import explain_training_fold
    from ..samples import data_for

    graph = _graph(key, graph)
    return explain_training_fold(graph, layer, mode, frozen=frozen, inputs=data_for(graph).calibration)


#: Job kind (:data:`qviz.app.jobs.KINDS`) → the function that does it. Each takes
#: its arguments and ``progress``, a ``(done, total)`` callback.
def html_report(key, graph, recipe_json, name, explain, sensitivity, target_sqnr_db, progress=None):
    """The recipe's HTML report (:func:`qviz.render.report.make_report`), as a string."""
    from ..passes import Recipe
    from ..render.report import make_report

    graph = _graph(key, graph)
    return make_report(graph, Recipe.from_json(recipe_json), name=name, explain=explain, sensitivity=sensitivity,
                       target_sqnr_db=target_sqnr_db)


JOBS: dict[str, Callable] = {
    "open": open_model,
    "calibrate": calibrate,
    "samples": activation_samples,
    "report": report,
    "sweep": sweep,
    "sweep_part": sweep_part,
    "qat": qat_export,
    "code": code_export,
    "pareto": pareto,
    "pareto_chain": pareto_chain,
    "pareto_measure": pareto_measure,
    "tflite": tflite_export,
    "explain_fold": explain_fold,
    "explain_training": explain_training,
    "html_report": html_report,
}
