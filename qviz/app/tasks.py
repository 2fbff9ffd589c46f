"""Celery tasks: the worker's jobs for a shared deployment (``REDIS_URL`` set).

With ``REDIS_URL`` in the environment, :func:`qviz.app.create_app` sends
calibration, verification, sensitivity sweeps, QAT and TFLite exports to Celery
workers through Redis instead of its own worker process, so several web
processes (gunicorn workers) share one pool of TensorFlow workers. Run them
with::

    REDIS_URL=redis://127.0.0.1:6379/0 celery -A qviz.app.tasks worker --concurrency 2

Celery's prefork pool forks its children before any task runs, and this
module imports no TensorFlow, so each child imports TensorFlow itself (a child
forked *after* TensorFlow started would deadlock). Jobs carry the graph
(pickled as its GraphDef); a child keeps a few graphs by key, as the app's own
worker does. Pickle is the serializer: run Redis where only the app can reach it.
"""

from __future__ import annotations

import os

from celery import Celery

from . import worker as jobs

__all__ = ["make_celery", "celery"]


def make_celery(url: str) -> Celery:
    app = Celery("qviz", broker=url, backend=url)
    app.conf.update(task_serializer="pickle", result_serializer="pickle", accept_content=["pickle"],
                    worker_prefetch_multiplier=1, task_acks_late=False, result_expires=3600,
                    worker_hijack_root_logger=False)
    return app


celery = make_celery(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))


@celery.task(name="qviz.ranges")
def ranges(key, graph, fold_layers):
    return jobs._ranges_job(key, graph, fold_layers)


@celery.task(name="qviz.report")
def report(key, graph, recipe_json, activation_ranges):
    return jobs._report_job(key, graph, recipe_json, activation_ranges)


@celery.task(name="qviz.sensitivity", bind=True)
def sensitivity(self, key, graph, bits):
    def progress(done, total):
        self.update_state(state="PROGRESS", meta={"done": done, "total": total})

    return jobs.run_sensitivity(jobs._graph(key, graph), bits, progress)


@celery.task(name="qviz.qat")
def qat(source, recipe_json, folding_mode, freeze_bn_delay):
    return jobs.run_qat_export(source, recipe_json, folding_mode, freeze_bn_delay)


@celery.task(name="qviz.tflite")
def tflite(key, graph, recipe_json, int8_io):
    return jobs._tflite_job(key, graph, recipe_json, int8_io)


@celery.task(name="qviz.samples")
def samples(key, graph, recipe_json, activation_ranges):
    return jobs._samples_job(key, graph, recipe_json, activation_ranges)
