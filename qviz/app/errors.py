"""Failures in callbacks: a logged traceback on the server, one line on the page.

:func:`make_error_handler` is the app's ``on_error``: Dash calls it with any
exception a callback raises, and it (1) logs the traceback with Python
``logging`` (logger ``qviz.app``), (2) shows one line in the page's alert bar via
``set_props``, and (3) leaves every output of the failed callback as it was.

What the line says:

* qviz's own errors (a bad model, recipe, pattern, …) say what they say — they
  are written for users — with server paths removed;
* a session the server dropped says so, and reopens the model when it can
  (:func:`qviz.app.callbacks.model.reopen_message`);
* anything else is a bug: the page gets the exception's type and a reference
  to find the traceback in the log, never its message (which may hold object
  reprs or paths).
"""

from __future__ import annotations

import logging
import re
import uuid

from .._text import hide_temp_paths, one_line
from ..errors import QvizError

__all__ = ["make_error_handler", "user_message", "reported", "failure_of", "USER_ERRORS"]

log = logging.getLogger("qviz.app")


#: What a user can fix: every qviz error (:class:`qviz.errors.QvizError`).
USER_ERRORS = (QvizError,)

_REPR = re.compile(r"<[^<>]* at 0x[0-9a-fA-F]+>")


def user_message(exc: BaseException, limit: int = 400) -> str:
    """One line for the page about ``exc`` (no paths under the temp dir, no object reprs).

    >>> from qviz.importers import LoadError
    >>> user_message(LoadError("model.pb", "the file is empty"))
    'model.pb: the file is empty'
    >>> user_message(KeyError("x")).startswith("internal error (KeyError)")
    True
    """
    if isinstance(exc, USER_ERRORS):
        text = _REPR.sub("(object)", hide_temp_paths(one_line(str(exc))))
        return text[:limit]
    ref = uuid.uuid4().hex[:8]
    return f"internal error ({type(exc).__name__}); the server log has the details under ref {ref}"


def reported(exc: BaseException, what: str) -> str:
    """:func:`user_message` for a job that failed (``what``: "the verification", …), logged:
    qviz's own errors as a warning, anything else with its traceback (the page's line
    names the reference to find it by).

    >>> reported(ValueError("list index out of range"), "the verification").startswith("internal error (ValueError)")
    True
    """
    message = user_message(exc)
    if isinstance(exc, USER_ERRORS):
        log.warning("%s refused: %s", what, message)
    else:
        log.error("%s failed: %s", what, message, exc_info=exc)
    return message


def failure_of(future, what: str) -> str | None:
    """The one line for a finished ``future`` that failed (None if it did not), logged by
    :func:`reported` the first time it is asked for: a panel redrawn at each edit reads the
    same failed job again.

    >>> from concurrent.futures import Future
    >>> f = Future(); f.set_exception(IndexError("list index out of range"))
    >>> failure_of(f, "the verification") == failure_of(f, "the verification")   # (logged once)
    True
    """
    if future.cancelled():   # (exception() would raise)
        return "stopped before it finished"
    exc = future.exception()
    if exc is None:
        return None
    if getattr(future, "_qviz_failure", None) is None:
        future._qviz_failure = reported(exc, what)
    return future._qviz_failure


def make_error_handler(store, options):
    """The ``on_error`` handler of one app (its session store and options)."""
    from dash import set_props

    from . import ids
    from .callbacks.model import reopen_message
    from .session import SessionGone

    def on_error(exc: Exception):
        if isinstance(exc, SessionGone):
            pending = store.loading.get(exc.sid)
            if pending is not None and pending.answer is None and not pending.future.done():
                return None   # already reopening: the poll will finish it
            message, reopening = reopen_message(store, exc, options)
            log.info("session %s gone: %s", exc.sid[:8], message)
            set_props(ids.ALERT, {"children": message, "className": "alert alert-info"})
            if reopening:
                set_props(ids.MODEL_STATUS, {"children": message})
                set_props(ids.MODEL_POLL, {"disabled": False})
            return None
        message = user_message(exc)
        if isinstance(exc, USER_ERRORS):
            log.warning("callback refused input: %s", message, exc_info=exc)
        else:
            log.error("callback failed: %s", message, exc_info=exc)
        set_props(ids.ALERT, {"children": f"error: {message}", "className": "alert"})
        return None

    return on_error
