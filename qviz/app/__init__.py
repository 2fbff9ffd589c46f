"""The Dash app: ``create_app()`` builds it, ``qviz serve`` runs it.

Only this package imports Dash. State: each page load gets a random session id;
its model and cached results live in the app's :class:`SessionStore` on the
server; the browser holds only that id, the recipe history and view settings.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .jobs import ProcessRunner

__all__ = ["create_app"]

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets"


def create_app(model=None, *, model_name: str | None = None, default_sample: str = "lenet_digits",
               max_upload_mb: float = 200, sessions: int = 32, worker: bool = True,
               allowed_hosts: Iterable[str] = (), token: str | None = None, load_workers: int = 2):
    """Build the app.

    Args:
        model: a :class:`qviz.Graph` to open in every new session (``qviz serve FILE``);
            default: the ``default_sample``.
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
    """
    import atexit
    import os

    import dash

    from . import callbacks
    from .errors import make_error_handler
    from .jobs import ThreadRunner
    from .guard import LOOPBACK_HOSTS, install_guard
    from .layout import page
    from .session import SessionStore
    from .uploads import size_text

    if model is not None:
        from ..runtime import tensor_shapes

        tensor_shapes(model)   # the hover's shapes (TensorFlow): now, not in the first draw's request
    store = SessionStore(sessions, load_workers=load_workers)
    max_upload_bytes = int(max_upload_mb * 2**20)
    options = {"model": model, "model_name": model_name or getattr(model, "source", "") or "model",
               "max_upload_bytes": max_upload_bytes, "default_sample": default_sample,
               "runner": _runner() if worker else ThreadRunner()}
    app = dash.Dash(__name__, title="qviz", assets_folder=str(ASSETS), suppress_callback_exceptions=True,
                    on_error=make_error_handler(store, options))
    app.layout = lambda: page(default_sample, store.new_id(), max_upload_bytes,
                              served_name=options["model_name"] if model is not None else None)
    app.server.config["MAX_CONTENT_LENGTH"] = int(max_upload_bytes * 1.4) + 2**20  # base64 overhead
    hosts = set(LOOPBACK_HOSTS) | set(allowed_hosts)
    hosts |= {h.strip() for h in os.environ.get("QVIZ_ALLOWED_HOSTS", "").split(",") if h.strip()}
    install_guard(app.server, allowed_hosts=hosts, token=token or os.environ.get("QVIZ_TOKEN") or None,
                  upload_limit_text=size_text(max_upload_bytes))
    callbacks.register(app, store, options)
    atexit.register(store.close_all)   # no upload directory outlives the server
    atexit.register(options["runner"].close)
    app.qviz_sessions = store  # for tests and diagnostics
    return app


def _runner():
    import os

    url = os.environ.get("REDIS_URL")
    if url:
        from .celery_worker import CeleryRunner

        return CeleryRunner(url)
    return ProcessRunner().start()
