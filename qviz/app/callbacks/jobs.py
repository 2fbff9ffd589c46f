"""Polling a long job that ends in a download (QAT export, TFLite export).

The job lives on the session under one attribute: a Future while it runs, then
its answer (the callback's outputs). A tick sent while the one that finished
was in flight gets the answer again: the page drops the older response, so the
newer must carry it (and the file).
"""

from __future__ import annotations

__all__ = ["poll_job"]


def poll_job(session, attr: str, *, running, done, failed):
    """The callback's outputs for the job in ``session.<attr>``, or ``None`` when there is none.

    Args:
        running: the outputs while it runs.
        done: result → the outputs once it succeeded.
        failed: exception → the outputs once it failed (one line each).
    """
    job = getattr(session, attr)
    if job is None or isinstance(job, tuple):
        return job
    if not job.done():
        return running
    try:
        answer = done(job.result())
    except Exception as exc:  # the job's own error (QATPlanError, TFLiteError, RecipeError…)
        answer = failed(exc)
    setattr(session, attr, answer)
    return answer
