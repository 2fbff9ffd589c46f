"""The :class:`~qviz.app.jobs.JobRunner` over Celery: jobs go to Celery workers
through Redis (``REDIS_URL``), shared by every web process.

Each job is the one task ``qviz.job`` (:mod:`qviz.app.tasks`) with its kind and
arguments; the handle is a :class:`~qviz.app.jobs.JobFuture` kept up to date
from the task's ``AsyncResult`` by a small poller thread.

Why not Dash's ``CeleryManager`` (background callbacks)? It binds one job to
one callback invocation and its outputs; qviz's jobs are shared: one
calibration feeds the redraw, the node panel, the report and the grids of
every later recipe with the same folds, and a report is cached per recipe and
cancelled when the user moves on. Background callbacks would re-run that work
per callback, pickle the callback's whole closure and arguments (the graph)
into Redis per call, and need the worker to import the Dash app. Progress,
cancel and "running" are a few lines here.
"""

from __future__ import annotations

import threading
import time

from .jobs import JobFuture

__all__ = ["CeleryRunner"]

#: How often running tasks are asked for their state (seconds).
POLL_INTERVAL = 0.1


class CeleryRunner:
    """Send the app's jobs to Celery workers through Redis at ``url``."""

    def __init__(self, url: str):
        from .tasks import make_celery

        self.app = make_celery(url)
        self._running: dict[JobFuture, object] = {}   # future → AsyncResult
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def start(self) -> "CeleryRunner":
        return self

    def submit(self, kind: str, *args) -> JobFuture:
        fut = _CeleryFuture()
        result = self.app.send_task("qviz.job", args=(kind, args))
        fut.result_handle = result
        with self._lock:
            self._running[fut] = result
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="qviz-celery", daemon=True)
                self._thread.start()
        return fut

    def _watch(self):
        while not self._closed:
            with self._lock:
                running = list(self._running.items())
            for fut, result in running:
                try:
                    state = result.state
                    if state == "PROGRESS" and isinstance(result.info, dict):
                        fut.report_progress(result.info["done"], result.info["total"])
                    elif result.ready() and fut.set_running_or_notify_cancel():
                        try:
                            fut.set_result(result.get(propagate=True, disable_sync_subtasks=False))
                        except Exception as exc:  # the job's own error, or the broker's
                            fut.set_exception(exc)
                except Exception as exc:  # Redis unreachable: the job is lost, say so
                    if fut.set_running_or_notify_cancel():
                        fut.set_exception(RuntimeError(f"the job queue is unreachable: {exc}"))
                if fut.done():
                    with self._lock:
                        self._running.pop(fut, None)
            time.sleep(POLL_INTERVAL)

    def close(self) -> None:
        self._closed = True
        self.app.close()


class _CeleryFuture(JobFuture):
    """A task's future. It stays pending until the task answers (the app cannot
    tell queued from running through Redis cheaply), so it can be cancelled until
    then: cancelling revokes the task, and a queued task then never runs."""

    result_handle = None

    def cancel(self) -> bool:
        if not super().cancel():
            return False
        self.result_handle.revoke()
        return True
