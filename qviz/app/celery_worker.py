"""The :class:`~qviz.app.jobs.JobRunner` over Celery: jobs go to Celery workers
through Redis (``REDIS_URL``), shared by every web process.

Each job is the one task ``qviz.job`` (:mod:`qviz.app.tasks`) with its kind and
arguments — a sweep or a search, several (:mod:`qviz.app.fan_out`); the handle is
a :class:`~qviz.app.jobs.JobFuture` kept up to date from the tasks'
``AsyncResult``\ s by a small poller thread.

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

import logging
import os
import threading
import time

from celery.states import READY_STATES

from .fan_out import Plan, plan
from .jobs import JobFuture

__all__ = ["CeleryRunner"]

log = logging.getLogger(__name__)

#: How often running tasks are asked for their state (seconds).
POLL_INTERVAL = 0.1


class CeleryRunner:
    """Send the app's jobs to Celery workers through Redis at ``url``.

    A sweep or a mixed-precision search is split into ``fan_out`` parts
    (:mod:`qviz.app.fan_out`; default ``QVIZ_FAN_OUT`` or 4) that any idle worker
    takes, their progress summed and their results merged here; 1 sends each job
    as one task."""

    shares_files = False   # (the workers may be on other machines)

    def __init__(self, url: str, fan_out: int | None = None):
        from .tasks import make_celery

        self.app = make_celery(url)
        self.fan_out = max(1, int(os.environ.get("QVIZ_FAN_OUT", "4")) if fan_out is None else fan_out)
        self._running: dict[JobFuture, _FannedOut | None] = {}   # future → its parts (None: one task)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def start(self) -> "CeleryRunner":
        return self

    def _send(self, kind: str, args: tuple):
        return self.app.send_task("qviz.job", args=(kind, args))

    def submit(self, kind: str, *args) -> JobFuture:
        fut = _CeleryFuture()
        split = plan(kind, args, self.fan_out) if self.fan_out > 1 else None
        if split is None:
            fut.handles = [self._send(kind, args)]
            track = None
        else:
            track = _FannedOut(split)
            if split.first is not None:
                fut.handles = [self._send(*split.first)]
            else:
                self._send_parts(fut, track, None)
        with self._lock:
            self._running[fut] = track
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="qviz-celery", daemon=True)
                self._thread.start()
        return fut

    def _send_parts(self, fut: "_CeleryFuture", track: "_FannedOut", first_result) -> None:
        track.first_result, track.sent = first_result, True
        parts = track.plan.parts(first_result)
        track.totals = [total for *_, total in parts]
        fut.handles = [self._send(kind, args) for kind, args, _ in parts]
        if fut.cancelled():   # cancelled while the first task ran: the parts never start
            for handle in fut.handles:
                handle.revoke()

    def _step(self, fut: "_CeleryFuture", track: "_FannedOut | None") -> None:
        """Follow one job's tasks: progress, the next stage, the result or the error."""
        handles = list(fut.handles)
        if track is not None and not track.sent:      # the first task of a plan
            if handles[0].ready() and not fut.cancelled():
                self._send_parts(fut, track, handles[0].get(propagate=True, disable_sync_subtasks=False))
            return
        done = total = 0
        for i, handle in enumerate(handles):
            part_total = track.totals[i] if track is not None else None
            # one read of the task's record: its state and its info are two reads of
            # the backend, and a task may finish between them (its info is then the result)
            meta = handle.backend.get_task_meta(handle.id)
            if meta["status"] in READY_STATES:
                done += part_total or 0
            elif meta["status"] == "PROGRESS" and isinstance(meta["result"], dict):
                done += meta["result"]["done"]
                part_total = part_total or meta["result"]["total"]
            total += part_total or 0
        if total:
            fut.report_progress(done, total)
        failed = next((h for h in handles if h.ready() and h.failed()), None)
        if failed is None and not all(h.ready() for h in handles):
            return
        if not fut.set_running_or_notify_cancel():
            return
        try:
            results = [h.get(propagate=True, disable_sync_subtasks=False) for h in ([failed] if failed else handles)]
            fut.set_result(results[0] if track is None else track.plan.merge(track.first_result, results))
        except Exception as exc:  # the job's own error, or the broker's
            for handle in handles:
                handle.revoke()
            fut.set_exception(exc)

    def _watch(self):
        while not self._closed:
            with self._lock:
                running = list(self._running.items())
            for fut, track in running:
                try:
                    self._step(fut, track)
                except Exception as exc:  # Redis unreachable: the job is lost, say so
                    log.error("following a Celery job failed", exc_info=exc)
                    if fut.set_running_or_notify_cancel():
                        fut.set_exception(RuntimeError(f"the job queue is unreachable: {exc}"))
                if fut.done():
                    with self._lock:
                        self._running.pop(fut, None)
            time.sleep(POLL_INTERVAL)

    def close(self) -> None:
        self._closed = True
        self.app.close()


class _FannedOut:
    """A job split by a :class:`~qviz.app.fan_out.Plan`: whether its parts were sent,
    the first task's result, and each part's expected progress total."""

    def __init__(self, split: Plan):
        self.plan = split
        self.sent = False
        self.first_result = None
        self.totals: list[int] = []


class _CeleryFuture(JobFuture):
    """A job's future. It stays pending until its tasks answer (the app cannot
    tell queued from running through Redis cheaply), so it can be cancelled until
    then: cancelling revokes its tasks, and a queued task then never runs."""

    handles: list = []   # the AsyncResults of the tasks it waits for now

    def cancel(self) -> bool:
        if not super().cancel():
            return False
        for handle in self.handles:
            handle.revoke()
        return True
