"""The Dash app: ``create_app()`` builds it, ``qviz serve`` runs it.

Only this package imports Dash, and only when the app is built: ``qviz serve``
answers from :mod:`qviz.app.front`, inside this package, before that (so importing
the package itself stays light). State: each page load gets a random session id;
its model and cached results live in the app's :class:`SessionStore` on the
server; the browser holds only that id, the recipe history and view settings.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path

from ..samples import DEFAULT_SAMPLE

__all__ = ["create_app"]

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets"


def _linked_model() -> str | None:
    """The model the page's link names (``?m=``, see :mod:`qviz.app.url_state`): the
    page asks for its layout from that URL, which the request's Referer carries."""
    from urllib.parse import urlparse

    import flask

    from .url_state import linked_model

    referrer = flask.request.referrer if flask.has_request_context() else None
    return linked_model(urlparse(referrer).query) if referrer else None


def create_app(model=None, *, model_name: str | None = None, default_sample: str = DEFAULT_SAMPLE,
               max_upload_mb: float = 200, sessions: int = 32, worker: bool = True,
               allowed_hosts: Iterable[str] = (), token: str | None = None, load_workers: int = 2,
               load_options: dict | None = None, recipe=None):
    """Build the app.

    Args:
        model: the model every new session opens (``qviz serve FILE``): a
            :class:`qviz.Graph`, or a model file's path — opened in the
            background, so the app answers at once (a Keras file's layer view
            is in the first page, drawn from its config); default: the
            ``default_sample``.
        load_options: :func:`qviz.load`'s options for a ``model`` path
            (``input_shape``, ``safe_mode``, ``max_bytes``).
        max_upload_mb: uploads larger than this are refused with a message.
        sessions: how many browser sessions are kept on the server (LRU).
        worker: run TensorFlow work (calibration, verification, sweeps,
            exports, the fold explainers) in spawned worker processes
            (:class:`qviz.app.jobs.ProcessRunner`) so it never stalls the web
            server — or, with ``REDIS_URL`` set, in Celery workers shared by
            every web process. ``False``: in a small thread pool of this
            process (tests).
        allowed_hosts: ``Host`` names served besides the loopback ones
            (``QVIZ_ALLOWED_HOSTS``, comma-separated, adds more; ``*`` for any).
        token: an access token every request must carry (default: ``QVIZ_TOKEN``;
            none). See :mod:`qviz.app.guard`.
        load_workers: how many models open at once (the rest wait in line).
        recipe: the :class:`qviz.Recipe` the page starts ``model`` with (default:
            nothing folded or quantized); other models open without it.
    """
    import atexit
    import os

    import dash

    from ..layout.blocks import default_grouping
    from ..samples import SAMPLES, sample_path
    from . import callbacks
    from .errors import make_error_handler
    from .first_view import ServedModel, index_with, sketch_of
    from .jobs import ThreadRunner
    from .front import READY_PATH
    from .guard import install_guard, served_hosts
    from .layout import page
    from .session import SessionStore
    from .uploads import size_text

    store = SessionStore(sessions, load_workers=load_workers)
    max_upload_bytes = int(max_upload_mb * 2**20)
    name = model_name or (str(model) if isinstance(model, (str, Path)) else getattr(model, "source", "")) or "model"
    served = ServedModel(model, name, store.loads, load_options) if model is not None else None
    options = {"served": served, "model_name": name,
               "max_upload_bytes": max_upload_bytes, "default_sample": default_sample,
               "runner": _runner() if worker else ThreadRunner(), "start_recipe": recipe}
    # What the page shows before any callback: the first model's layer view.
    first = None
    if served is not None:
        first = served.first
    elif default_sample in SAMPLES:
        first = sketch_of(sample_path(default_sample))
        # every new page opens it: start now, not when the first page asks
        store.samples[default_sample] = store.loads.submit("open", sample_path(default_sample), default_sample,
                                                           None, time.monotonic())
    # The worker processes start once the first model is open: until then the CPU draws the page.
    first_open = served.future() if served is not None else store.samples.get(default_sample)
    if first_open is not None:
        # a thread of its own, made here: the worker processes take the priority of the thread
        # that starts them, and the loading threads run below the server's (jobs.ThreadRunner)
        settle = served is not None and served.path is None   # a graph given: no open job settles the heap
        threading.Thread(target=_start_when_open, args=(first_open, options["runner"], settle), daemon=True,
                         name="qviz-start-workers").start()
    app = dash.Dash(__name__, title="qviz", assets_folder=str(ASSETS), suppress_callback_exceptions=True,
                    on_error=make_error_handler(store, options))
    first_name = name if served is not None else default_sample
    app.index_string = index_with(app.index_string, first, first.status(first_name) if first else "")
    app.layout = lambda: page(default_sample, store.new_id(), max_upload_bytes,
                              served_name=name if served is not None else None,
                              figure=first.figure if first else None,
                              status=first.status(first_name) if first else "", linked=_linked_model(),
                              grouped=first is not None and default_grouping(first.layers))
    app.server.config["MAX_CONTENT_LENGTH"] = int(max_upload_bytes * 1.4) + 2**20  # base64 overhead
    install_guard(app.server, allowed_hosts=served_hosts(allowed_hosts),
                  token=token or os.environ.get("QVIZ_TOKEN") or None, upload_limit_text=size_text(max_upload_bytes))
    # The page `qviz serve` answered with while this app was starting (qviz.app.front) asks
    # this to know the app has taken over.
    app.server.add_url_rule(READY_PATH, "qviz_ready", lambda: ("", 204))
    app.qviz_first_view = first
    callbacks.register(app, store, options)

    def shutdown() -> None:
        """Stop the worker processes, then remove every session's files: no upload
        directory outlives the server. Safe to call twice (at exit and by ``qviz serve``)."""
        options["runner"].close()
        store.close_all()

    atexit.register(shutdown)
    app.qviz_shutdown = shutdown  # qviz serve calls it on SIGTERM and Ctrl-C
    app.qviz_sessions = store  # for tests and diagnostics
    return app


def _start_when_open(opening, runner, settle: bool = False) -> None:
    """Start the worker processes once the first model is open; ``settle``: a model given as a
    graph, not opened by a job (:func:`qviz.app.worker.open_model` settles those itself)."""
    from concurrent.futures import wait

    wait([opening])
    if settle:
        from .worker import settle_heap

        settle_heap()
    try:
        runner.start()
    except RuntimeError:   # closed meanwhile (the app is stopping)
        pass


def _runner():
    import os

    url = os.environ.get("REDIS_URL")
    if url:
        from .celery_worker import CeleryRunner

        return CeleryRunner(url)
    # Started when the first model is open (create_app), or by the first job: until then the
    # CPU goes to drawing the first page, not to two processes importing TensorFlow.
    from .jobs import ProcessRunner

    return ProcessRunner()
