"""The app's worker interface (:class:`qviz.app.worker.Worker`) over Celery.

Each method sends a task by name (:mod:`qviz.app.tasks`) and returns a small
future over its ``AsyncResult``, with the methods the app polls: ``done``,
``result``, ``cancel``, ``cancelled`` and, for sweeps, ``progress``.
"""

from __future__ import annotations

__all__ = ["CeleryWorker"]


class _TaskFuture:
    def __init__(self, result):
        self._result = result
        self._cancelled = False

    def done(self) -> bool:
        return self._cancelled or self._result.ready()

    def result(self, timeout=None):
        if self._cancelled:
            raise RuntimeError("the job was cancelled")
        return self._result.get(timeout=timeout, propagate=True, disable_sync_subtasks=False)

    def cancel(self) -> bool:
        """Revoke the task if it has not finished (a queued task then never runs)."""
        if self._result.ready():
            return False
        self._result.revoke()
        self._cancelled = True
        return True

    def cancelled(self) -> bool:
        return self._cancelled

    def progress(self):
        info = self._result.info if self._result.state == "PROGRESS" else None
        return (info["done"], info["total"]) if isinstance(info, dict) else None


class CeleryWorker:
    """Send the app's jobs to Celery workers through Redis at ``url``."""

    def __init__(self, url: str):
        from .tasks import make_celery

        self.app = make_celery(url)

    def start(self) -> "CeleryWorker":
        return self

    def _send(self, name, *args) -> _TaskFuture:
        return _TaskFuture(self.app.send_task(name, args=args))

    def ranges(self, key, graph, fold_layers):
        return self._send("qviz.ranges", key, graph, tuple(fold_layers))

    def report(self, key, graph, recipe_json: str, ranges):
        return self._send("qviz.report", key, graph, recipe_json, ranges)

    def sensitivity(self, key, graph, bits):
        return self._send("qviz.sensitivity", key, graph, tuple(bits))

    def qat(self, source, recipe_json: str, folding_mode: str, freeze_bn_delay):
        return self._send("qviz.qat", str(source), recipe_json, folding_mode, freeze_bn_delay)

    def samples(self, key, graph, recipe_json: str, ranges):
        return self._send("qviz.samples", key, graph, recipe_json, ranges)

    def tflite(self, key, graph, recipe_json: str, int8_io: bool):
        return self._send("qviz.tflite", key, graph, recipe_json, int8_io)

    def close(self) -> None:
        self.app.close()
