"""The Dash app: ``create_app()`` builds it, ``qviz serve`` runs it.

Only this package imports Dash. State: each page load gets a random session id;
its model and cached results live in the app's :class:`SessionStore` on the
server; the browser holds only that id, the recipe history and view settings.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["create_app"]

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets"


def create_app(model=None, *, model_name: str | None = None, default_sample: str = "lenet_digits",
               max_upload_mb: float = 200, sessions: int = 32, worker: bool = True):
    """Build the app.

    Args:
        model: a :class:`qviz.Graph` to open in every new session (``qviz serve FILE``);
            default: the ``default_sample``.
        max_upload_mb: uploads larger than this are refused with a message.
        sessions: how many browser sessions are kept on the server (LRU).
        worker: run calibration, verification, sweeps and QAT exports in a
            spawned worker process (:mod:`qviz.app.worker`) so they never stall
            the web server — or, with ``REDIS_URL`` set, in Celery workers
            (:mod:`qviz.app.tasks`) shared by every web process.
    """
    import dash

    from . import callbacks
    from .layout import page
    from .session import SessionStore

    store = SessionStore(sessions)
    app = dash.Dash(__name__, title="qviz", assets_folder=str(ASSETS), suppress_callback_exceptions=True)
    app.layout = lambda: page(None if model is not None else default_sample, store.new_id())
    app.server.config["MAX_CONTENT_LENGTH"] = int(max_upload_mb * 2**20 * 1.4) + 2**20  # base64 overhead
    options = {"model": model, "model_name": model_name or getattr(model, "source", "") or "model",
               "max_upload_bytes": int(max_upload_mb * 2**20), "default_sample": default_sample,
               "worker": _worker() if worker else None}
    callbacks.register(app, store, options)
    app.qviz_sessions = store  # for tests and diagnostics
    return app


def _worker():
    import os

    url = os.environ.get("REDIS_URL")
    if url:
        from .celery_worker import CeleryWorker

        return CeleryWorker(url)
    from .worker import Worker

    return Worker().start()
