"""qviz in a Jupyter notebook: the app inline, next to the code that made the model.

:func:`show` serves the app for one model (a :class:`qviz.Graph`, a Keras
model, or a model file) from a thread of the notebook's kernel (as Dash's own
notebook mode does) and shows it in the cell — an ``<iframe>``
(``mode="inline"``) or a link (``"external"``) — and returns a handle to stop
it. Outside a notebook (a script, a test) it serves the same way and prints
the address. The page is at ``http://127.0.0.1:PORT``: a notebook behind a
proxy (JupyterHub, Colab) cannot reach it. A :class:`qviz.Result` shows itself
as a short summary (``_repr_html_``).

Example (in a notebook cell)::

    import qviz
    g = qviz.load("model.keras")
    app = qviz.show(g, qviz.Recipe.default(g))   # the app, inline, on that recipe
    app.stop()
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass

__all__ = ["show", "Shown"]


@dataclass
class Shown:
    """A running notebook app: where it is, and how to stop it."""

    url: str
    app: object
    server: object = None

    def stop(self) -> None:
        """Stop serving and end the app's worker processes."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        self.app.qviz_shutdown()

    def _repr_html_(self) -> str:
        return f'<a href="{self.url}" target="_blank">qviz at {self.url}</a>'


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def show(model, recipe=None, *, mode: str = "inline", height: int = 820, host: str = "127.0.0.1",
         port: int | None = None, worker: bool = True) -> Shown:
    """Serve the app on ``model`` and show it in the notebook.

    Args:
        model: a :class:`qviz.Graph`, a Keras model, or a model file's path.
        recipe: the :class:`qviz.Recipe` the page starts with (checked against
            the model first: a recipe naming layers it lacks raises ``RecipeError``).
        mode: ``"inline"`` (the app in the cell) or ``"external"`` (a link to it).
        port: default: a free one.
        worker: TensorFlow work in worker processes (False: threads of the kernel).
    """
    from werkzeug.serving import WSGIRequestHandler, make_server

    class Quiet(WSGIRequestHandler):
        def log_request(self, *args, **kwargs):   # not a line in the notebook per request
            pass

    from .app import create_app
    from .importers import load
    from .ir import Graph

    if mode not in ("inline", "external"):
        raise ValueError(f"mode must be 'inline' or 'external', not {mode!r}")
    graph = model if isinstance(model, Graph) else load(model)
    if recipe is not None:
        recipe.validate(graph)
    name = getattr(model, "name", None) if not isinstance(model, (str, Graph)) else None
    app = create_app(graph, model_name=str(name or graph.source or "model"), recipe=recipe, worker=worker)
    server = make_server(host, port or _free_port(host), app.server, threaded=True,
                         request_handler=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True, name="qviz-notebook").start()
    shown = Shown(f"http://{host}:{server.server_port}/", app, server)
    _display(shown, mode, height)
    return shown


def _display(shown: Shown, mode: str, height: int) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import IFrame, display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(f"qviz is at {shown.url} (stop it with .stop())")
    elif mode == "inline":
        display(IFrame(shown.url, width="100%", height=height))
    else:
        display(shown)
