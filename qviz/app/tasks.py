"""Celery tasks: the worker's jobs for a shared deployment (``REDIS_URL`` set).

With ``REDIS_URL`` in the environment, :func:`qviz.app.create_app` sends
calibration, verification, sensitivity sweeps, QAT and TFLite exports to Celery
workers through Redis instead of its own worker process, so several web
processes (gunicorn workers) share one pool of TensorFlow workers. Run them
with::

    REDIS_URL=redis://127.0.0.1:6379/0 celery -A qviz.app.tasks worker --concurrency 2

One task, ``qviz.job``, runs any job kind (:mod:`qviz.app.jobs`). Celery's
prefork pool forks its children before any task runs, and this module imports
no TensorFlow, so each child imports TensorFlow itself (a child
forked *after* TensorFlow started would deadlock). Jobs carry the graph
(pickled as its GraphDef); a child keeps a few graphs by key, as the app's own
worker does. Pickle is the serializer: run Redis where only the app can reach it.
"""

from __future__ import annotations

import os

from celery import Celery

from . import worker as jobs

__all__ = ["make_celery", "celery", "job"]


def make_celery(url: str) -> Celery:
    app = Celery("qviz", broker=url, backend=url)
    app.conf.update(task_serializer="pickle", result_serializer="pickle", accept_content=["pickle"],
                    worker_prefetch_multiplier=1, task_acks_late=False, result_expires=3600,
                    worker_hijack_root_logger=False)
    return app


celery = make_celery(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))


@celery.task(name="qviz.job", bind=True)
def job(self, kind, args):
    """Any app job (:data:`qviz.app.worker.JOBS`); progress goes to the task's state."""
    def progress(done, total):
        self.update_state(state="PROGRESS", meta={"done": done, "total": total})

    return jobs.JOBS[kind](*args, progress=progress)
