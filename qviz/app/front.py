"""The page ``qviz serve`` answers with while the app is still starting (no Dash here).

Importing Dash, Flask, plotly, numpy and networkx takes a second before the app
can answer anything, where a viewer such as Netron answers in a tenth of one. So
``qviz serve`` binds its port first and answers from a :class:`Front` — the
standard library only — with the model's first view (its layer graph as SVG,
:mod:`qviz.app.first_view`), and a line saying the app is starting. The page
asks ``/_qviz/ready`` every 150 ms; when the app has taken the port over (the
same listening socket, so no request is refused in between) it answers — 204,
or the app's own refusal, which the reload then shows — and the page reloads
into the app, whose HTML holds the same SVG in the same place: the
graph does not move.

The first view comes from a disk cache (:class:`FirstViewCache`), so a model
served before is on screen without laying anything out; a model never seen is
drawn once before the first answer, with the standard library alone (MobileNetV2's
layer view: about 60 ms, imports included). An entry is keyed by the file's path, size and modification
time, and the app draws the view again from the file when it starts: an entry
that no longer matches what qviz draws is replaced (:meth:`FirstViewCache.refresh`).

The same host and token checks as the app's (:mod:`qviz.app.guard`) apply.

>>> import socket, urllib.request
>>> sock = listening_socket("127.0.0.1", 0)
>>> front = Front(sock, name="m.keras")
>>> front.show(FirstViewEntry('<svg class="first-view-graph"></svg>', 3))
>>> front.start()
>>> url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
>>> page = urllib.request.urlopen(url).read().decode()
>>> "first-view-graph" in page and "m.keras: 3 layers drawn from the file" in page
True
>>> front.hand_over() is sock      # the app serves on it from here
True
>>> sock.close()
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import socket
import threading
from dataclasses import dataclass
from html import escape
from http import cookies
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from ..cache_dir import cache_directory, mark_used, prune, read_entry, save_json
from . import ASSETS
from .guard import COOKIE, host_name, host_allowed, served_hosts, token_given, token_matches

__all__ = ["Front", "ForkedFront", "start_front", "FirstViewCache", "FirstViewEntry", "listening_socket",
           "first_view_block", "READY_PATH"]

log = logging.getLogger(__name__)

#: What the waiting page polls; the app answers it (204), the front does not (503).
READY_PATH = "/_qviz/ready"
#: How long the front waits for a connection's request (then closes it; a browser opens another).
HANDLER_TIMEOUT = 2.0
#: How long a request for the page waits for a first view being drawn before it is sent without one.
DRAW_WAIT_SECONDS = 3.0


@dataclass(frozen=True)
class FirstViewEntry:
    """A first view as the page shows it: the SVG and how many layers it draws."""

    svg: str
    layers: int


def first_view_block(svg: str, status: str) -> str:
    """The first view's HTML, the same in the front's page and in the app's (so a
    reload from one to the other leaves the graph where it was)."""
    return (f'<div id="first-view" class="first-view">{svg}'
            f'<div class="first-view-status">{escape(status)}</div></div>')


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening (``OSError`` if the port is taken)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


#: An entry bigger than this is not read (NASNetMobile's is ~60 kB).
MAX_ENTRY_BYTES = 16 * 2**20


class FirstViewCache:
    """First views on disk (``first-view-<key>.json`` in qviz's cache directory,
    beside the layouts), at most :attr:`max_files` of them, the least recently
    used going first. Entries are JSON text: nothing read is executed, and an
    entry that cannot be read is drawn again.

    An entry is markup put into the page as it is, so one is used only if it
    could only have been written by this user: a regular file (not a link, not
    a FIFO) of at most :data:`MAX_ENTRY_BYTES`, owned by this user and writable by
    no one else, in a directory of the same kind, holding an ``<svg>`` without
    scripts. Anything else is drawn again (and logged)."""

    PREFIX = "first-view-"
    #: What the drawing is: a new one (blocks since version 2, their labels since 3 and 4,
    #: node labels shortened by words since 4) is not served from an old entry.
    DRAWING = 4

    def __init__(self, directory=None, max_files: int = 64):
        self.directory = Path(directory) if directory is not None else cache_directory()
        self.max_files = max_files

    def _path(self, model: Path) -> Path | None:
        try:
            st = model.stat()
        except OSError:
            return None
        key = hashlib.sha256(f"{model.resolve()}\n{st.st_size}\n{st.st_mtime_ns}\n{self.DRAWING}".encode()).hexdigest()
        return self.directory / f"{self.PREFIX}{key}.json"

    def read(self, model) -> FirstViewEntry | None:
        path = self._path(Path(model))
        if path is None:
            return None
        try:
            entry = _read_entry(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
            log.info("first-view cache entry %s not used (%s): drawn again", path.name, exc)
            return None
        mark_used(path)
        return entry

    def write(self, model, entry: FirstViewEntry) -> None:
        path = self._path(Path(model))
        if path is not None:
            save_json(path, {"svg": entry.svg, "layers": entry.layers}, what="first view")
            prune(self.directory, self.PREFIX, self.max_files)

    def read_or_draw(self, model, max_bytes: int | None = None) -> FirstViewEntry | None:
        """The cached first view of ``model``, else drawn from the file now (tens of ms;
        a 100 MB ``.pb`` is read and parsed in ~0.25 s) and kept; None if the file gives none."""
        model = Path(model)
        cached = self.read(model) if model.is_file() else None
        if cached is not None:
            return cached
        from .first_view import sketch_of

        first = sketch_of(model, max_bytes)
        if first is None:
            return None
        self.write(model, first.entry())
        return first.entry()

    def refresh(self, model, entry: FirstViewEntry | None) -> None:
        """Store ``entry`` (the view the app drew from the file) unless the cache already holds it."""
        if entry is not None and entry.svg and self.read(model) != entry:
            self.write(model, entry)


def _read_entry(path: Path) -> FirstViewEntry:
    """One entry, on the terms of :class:`FirstViewCache` (``OSError``/``ValueError`` otherwise)."""
    data = json.loads(read_entry(path, MAX_ENTRY_BYTES).decode("utf-8"))
    svg, layers = data["svg"], data["layers"]
    if not (isinstance(svg, str) and isinstance(layers, int) and 0 <= layers < 10**9):
        raise ValueError("not a first view")
    lowered = svg.lower()
    if not lowered.startswith("<svg") or "<script" in lowered or "javascript:" in lowered:
        raise ValueError("not the SVG qviz draws")
    return FirstViewEntry(svg, layers)


class Front:
    """Answers on ``sock`` until :meth:`hand_over`: the waiting page on ``/``,
    503 on anything else. ``token``/``allowed_hosts`` as for the app."""

    def __init__(self, sock: socket.socket, *, name: str | None, allowed_hosts=(), token: str | None = None):
        self.sock, self.name, self.token = sock, name, token
        self.allowed = served_hosts(allowed_hosts)
        self._entry: FirstViewEntry | None = None
        self._drawn = threading.Event()
        self._css = _read_css()
        front = self

        class Handler(BaseHTTPRequestHandler):
            timeout = HANDLER_TIMEOUT   # a connection that sends nothing does not hold the handover up

            def do_GET(self):   # noqa: N802 (http.server's names)
                front._answer(self)

            def do_HEAD(self):   # noqa: N802
                front._answer(self, body=False)

            def do_POST(self):   # noqa: N802 — e.g. a tab of an earlier run asking for a callback
                front._answer(self)

            def log_message(self, format, *args):   # noqa: A002 — not a line per request on the terminal
                log.debug("front: " + format, *args)

        class Server(ThreadingHTTPServer):
            daemon_threads = False   # server_close() waits for the answers being sent

            def handle_error(self, request, client_address):   # a browser hanging up is not an error
                log.debug("front: request from %s failed", client_address, exc_info=True)

        self._server = Server(sock.getsockname()[:2], Handler, bind_and_activate=False)
        self._server.socket.close()
        self._server.socket = sock
        self._thread: threading.Thread | None = None

    def show(self, entry: FirstViewEntry | None) -> None:
        """The first view to put in the page (None: there is none; the page says the app is starting)."""
        self._entry = entry
        self._drawn.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="qviz-front", daemon=True)
        self._thread.start()

    def hand_over(self) -> socket.socket:
        """Stop answering (requests being answered finish) and give the listening socket back."""
        self._drawn.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            # server_close() waits for the answers being sent; it closes a duplicate, not the socket
            self._server.socket = socket.socket(fileno=os.dup(self.sock.fileno()))
            self._server.server_close()
            self._thread = None
        return self.sock

    def _allowed(self, request: BaseHTTPRequestHandler) -> tuple[int, str] | None:
        host = request.headers.get("Host")
        if not host_allowed(host, self.allowed):
            log.warning("refused a request for host %r", host)
            return 403, (f"qviz: host {host!r} is not served here; start qviz with --allowed-host "
                         f"{host_name(host or '')} to serve it\n")
        if not self.token:
            return None
        jar = cookies.SimpleCookie()
        try:
            jar.load(request.headers.get("Cookie", ""))
        except cookies.CookieError:
            pass
        given = token_given(request.headers.get("Authorization", ""),
                            (parse_qs(urlsplit(request.path).query).get("token") or [None])[0],
                            jar[COOKIE].value if COOKIE in jar else None)
        if not token_matches(given, self.token):
            return 401, "qviz: this server needs its access token: open the URL it printed (…/?token=…)\n"
        return None

    def _answer(self, request: BaseHTTPRequestHandler, body: bool = True) -> None:
        refused = self._allowed(request)
        path = urlsplit(request.path).path
        if refused is not None:
            status, text, kind = *refused, "text/plain"
        elif path == "/" and request.command != "POST":
            self._drawn.wait(DRAW_WAIT_SECONDS)
            status, text, kind = 200, self.page(), "text/html"
        else:
            status, text, kind = 503, "qviz is starting; try again in a moment\n", "text/plain"
        data = text.encode("utf-8")
        request.send_response(status)
        request.send_header("Content-Type", f"{kind}; charset=utf-8")
        request.send_header("Content-Length", str(len(data)))
        request.send_header("Cache-Control", "no-store")
        if status == 503:
            request.send_header("Retry-After", "1")
        request.end_headers()
        if body:
            request.wfile.write(data)

    def page(self) -> str:
        """The waiting page: the first view (if drawn) and the status line, reloading into the app."""
        entry, name = self._entry, self.name or "qviz"
        if entry is not None:
            status = f"{name}: {entry.layers} layers drawn from the file; the app is starting…"
            body = first_view_block(entry.svg, status)
        else:
            body = first_view_block("", f"{name}: the app is starting…")
        return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>qviz — {escape(name)}</title>
<style>{self._css}</style></head>
<body>{body}
<script>
(function poll() {{
  fetch("{READY_PATH}" + location.search, {{cache: "no-store", credentials: "same-origin"}})
    .then(function (r) {{ if (r.status !== 503) {{ location.reload(); }} else {{ setTimeout(poll, 150); }} }})
    .catch(function () {{ setTimeout(poll, 150); }});
}})();
</script></body></html>"""


class ForkedFront:
    """A :class:`Front` answering from a child process (``os.fork``), so the import of
    Dash in this one cannot hold its answers up: in a thread of the same process a
    browser's request waited 60-220 ms for the GIL (some imports hold it for long C
    calls). The child gets the first view and, at :meth:`hand_over`, the word to stop
    through a pipe; if this process dies the pipe closes and the child ends too.
    Call it before any other thread starts (a fork copies only the calling thread)."""

    def __init__(self, front: Front):
        self.front = front
        read, self._pipe = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:   # the child: answer until told to stop, then leave without clean-up
            os.close(self._pipe)
            code = 0
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C is the parent's to handle
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                front.start()
                with os.fdopen(read, "r", encoding="utf-8") as messages:
                    for line in messages:
                        if line.strip() == "stop":
                            break
                        data = json.loads(line)
                        front.show(FirstViewEntry(data["svg"], data["layers"]) if data else None)
                front.hand_over()
            except BaseException:   # noqa: BLE001 — nothing may escape into the parent's code
                log.exception("the page before the app stopped answering (the app answers once it is up)")
                code = 1
            os._exit(code)
        os.close(read)

    def show(self, entry: FirstViewEntry | None) -> None:
        data = {"svg": entry.svg, "layers": entry.layers} if entry is not None else None
        self._send(json.dumps(data) + "\n")

    def hand_over(self) -> socket.socket:
        """Stop the child (the requests it is answering finish first) and give the socket back."""
        self._send("stop\n")
        try:
            os.close(self._pipe)
        except OSError:
            pass
        os.waitpid(self._pid, 0)
        return self.front.sock

    def _send(self, text: str) -> None:
        data = text.encode("utf-8")
        try:
            while data:
                data = data[os.write(self._pipe, data):]
        except OSError as exc:   # the child is gone: the app answers once it is up
            log.info("the front's process is gone: %s", exc)


def start_front(sock: socket.socket, **kwargs) -> Front | ForkedFront:
    """A :class:`Front` on ``sock``, answering from a child process where the system
    can fork (a thread of this one elsewhere); ``show`` and ``hand_over`` either way."""
    front = Front(sock, **kwargs)
    if hasattr(os, "fork"):
        return ForkedFront(front)
    front.start()
    return front


def _read_css() -> str:
    """The app's stylesheet, inlined (a token-guarded server has no cookie yet for a second request)."""
    try:
        return (ASSETS / "qviz.css").read_text(encoding="utf-8").replace("</", "<\\/")
    except OSError:
        return ""
