"""The first graph on screen, before TensorFlow has done anything (no Dash here).

Opening a Keras model takes seconds of TensorFlow (load, trace, freeze); its
layer graph is in the file and reads in milliseconds
(:mod:`qviz.importers.keras_config`). A frozen ``.pb`` needs TensorFlow's
protobuf classes (importing TensorFlow, seconds) to open, but not to read which
node feeds which (:mod:`qviz.importers.graphdef_sketch`). So the page is served with that layer
view already in it, and a model picked or uploaded later shows it at once too;
the frozen graph's view replaces it in the same places when it is ready.

:class:`ServedModel` is the model given to ``qviz serve``: the server answers
at once and opens the file in the background.
"""

from __future__ import annotations

import logging
import stat
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from ..importers import LoadError
from ..importers.graphdef_sketch import sketch_graph_def
from ..importers.keras_config import read_sketch
from ..importers.safety import Limits
from ..layout import CycleError, default_cache, sketch_view, view_graph
from ..layout.blocks import default_grouping, find_blocks, layer_graph
from ..layout.view import close_blocks
from ..render.marks import first_view_range
from ..render.svg import graph_svg
from .front import FirstViewEntry, first_view_block

__all__ = ["FirstView", "sketch_of", "graph_first_view", "ServedModel", "index_with", "failed_future"]

log = logging.getLogger(__name__)

#: Files whose layer graph can be read from the file itself, without TensorFlow.
SKETCHED_SUFFIXES = (".keras", ".h5", ".hdf5", ".pb")


@dataclass(frozen=True)
class FirstView:
    """A layer view to show before the model is open: how many layers it draws, as
    SVG (for the page's HTML, :mod:`qviz.render.svg`) and as the app's first plotly
    figure, made when first asked for: ``qviz serve`` answers with the SVG alone,
    before plotly is even imported."""

    layers: int
    svg: str
    from_file: bool     # drawn from the file's config (else: from the opened graph)
    drawing: tuple = field(repr=False, compare=False)   # (view graph, positions, routes, hover)

    @cached_property
    def figure(self) -> dict:
        """The same view as a plotly figure (a dict)."""
        from ..render import graph_figure, names_near_view

        vg, pos, routes, hover = self.drawing
        return names_near_view(graph_figure(vg, pos, routes=routes, hover=hover, show_status=False,
                                            first_view=True)).to_plotly_json()

    def entry(self) -> FirstViewEntry:
        """What :class:`~qviz.app.front.FirstViewCache` keeps of it (the page's SVG)."""
        return FirstViewEntry(self.svg, self.layers)

    def status(self, name: str, seconds: float | None = None) -> str:
        if not self.from_file:
            return f"{name}: {self.layers} layers"
        took = f" {seconds:.0f} s" if seconds is not None else ""
        return (f"{name}: {self.layers} layers drawn from the file; TensorFlow is opening it for the ops, "
                f"patterns and edits…{took}")


_SKETCHES: OrderedDict = OrderedDict()    # (path, size, mtime) → FirstView | None
_SKETCHES_LOCK = threading.Lock()

#: What the first view reads at most: it is drawn while a request waits (an upload's
#: answer), so its cost is bounded; a bigger model is shown once it is open.
SKETCH_LIMITS = Limits(max_bytes=512 * 2**20, max_config_bytes=8 * 2**20)
#: Layers drawn from a file at most (laying out more would hold the request up).
MAX_SKETCH_LAYERS = 5000


def sketch_of(path, max_bytes: int | None = None) -> FirstView | None:
    """The layer view a model file gives without TensorFlow — a Keras file's from its
    config, a ``.pb``'s from its nodes — cached per file version; or None: not such
    a file, over the limits above (or ``max_bytes``), or not readable as one (the
    open that follows says what is wrong with it)."""
    path = Path(path)
    if path.suffix.lower() not in SKETCHED_SUFFIXES:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):   # a FIFO would block the read: the open refuses it, in one line
        return None
    limits = SKETCH_LIMITS if max_bytes is None else replace(SKETCH_LIMITS, max_bytes=min(max_bytes,
                                                                                          SKETCH_LIMITS.max_bytes))
    key = (str(path), st.st_size, st.st_mtime_ns, limits.max_bytes)
    with _SKETCHES_LOCK:
        if key in _SKETCHES:
            _SKETCHES.move_to_end(key)
            return _SKETCHES[key]
    try:
        if path.suffix.lower() == ".pb":
            view = _first_view(view_graph(sketch_graph_def(path, limits), "layer"), from_file=True)
        else:
            view = _keras_first_view(read_sketch(path, limits))
    except (LoadError, CycleError, _TooBig) as exc:   # a cycle: the open says what is wrong
        log.info("no layer view from %s before it opens: %s", path.name, exc)
        view = None
    except Exception:   # a file shape qviz did not foresee: the open still goes on
        log.exception("drawing %s from the file failed", path.name)
        view = None
    with _SKETCHES_LOCK:
        _SKETCHES[key] = view
        while len(_SKETCHES) > 16:
            _SKETCHES.popitem(last=False)
    return view


class _TooBig(Exception):
    pass


def _keras_first_view(sketch) -> FirstView:
    vg = sketch_view(sketch)
    hover = {}
    for key, d in vg.nodes(data=True):
        lines = []
        if d["input_shapes"]:
            lines.append("input " + ", ".join(str(tuple(s)).replace("None", "?") for s in d["input_shapes"]))
        if d["params"] is not None:
            lines.append(f"{d['params']:,} parameters")
        lines.append("ops, patterns, edits: once TensorFlow has opened the model")
        hover[key] = "<br>" + "<br>".join(lines)
    return _first_view(vg, hover=hover, from_file=True)


def _first_view(vg, hover=None, from_file: bool = False) -> FirstView:
    """Lay out a view graph (cached on disk) and draw it as the first figure and as SVG;
    a graph of more than :data:`~qviz.layout.blocks.BLOCKS_FROM_LAYERS` layers with its
    blocks closed, as the app opens it."""
    layers = layer_graph(vg)
    if default_grouping(layers.number_of_nodes()):
        vg = close_blocks(vg, find_blocks(layers))
    if vg.number_of_nodes() > MAX_SKETCH_LAYERS:
        raise _TooBig(f"{vg.number_of_nodes()} nodes (the first view draws at most {MAX_SKETCH_LAYERS})")
    pos, routes = default_cache().routes(vg)
    svg = graph_svg(vg, pos, routes, window=first_view_range(pos), css_class="first-view-graph")
    return FirstView(layers.number_of_nodes(), svg, from_file, (vg, pos, routes, hover))


def graph_first_view(graph) -> FirstView | None:
    """The layer view of an opened graph as the page's first figure (None if too big)."""
    try:
        return _first_view(view_graph(graph, "layer"))
    except _TooBig:
        return None


def failed_future(fut: Future) -> bool:
    """Whether ``fut`` is done without a result (cancelled, or raised)."""
    return fut.done() and (fut.cancelled() or fut.exception() is not None)


class ServedModel:
    """The model ``qviz serve`` was given: a :class:`qviz.Graph`, or a file opened
    in the background by ``loads`` (a :class:`qviz.app.jobs.ThreadRunner`), so the
    server answers before TensorFlow has even been imported.

    :meth:`future` is the open (shared by every page); one that failed is tried
    again by the next page that asks (the file may have been fixed — the first
    view drawn from it, made once, is still the old file's until the open succeeds).
    """

    def __init__(self, model, name: str, loads=None, load_options: dict | None = None):
        self.name = name
        self._loads, self._options = loads, dict(load_options or {})
        self._lock = threading.Lock()
        if isinstance(model, (str, Path)):
            self.path: Path | None = Path(model)
            self._future = self._submit()     # first: the open need not wait for the drawing
            self.first = sketch_of(self.path, self._options.get("max_bytes"))
        else:
            self.path = None
            self._future = Future()
            self._future.set_result(model)
            self.first = graph_first_view(model)

    def _submit(self) -> Future:
        fut = self._loads.submit("open", self.path, self.name, None, time.monotonic(), self._options)
        fut.add_done_callback(self._report)
        return fut

    def _report(self, fut: Future) -> None:
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None:   # the terminal says it too: the page is not the only place to look
            log.error("%s", exc if isinstance(exc, LoadError) else f"opening {self.name} failed: {exc!r}")

    def future(self) -> Future:
        with self._lock:
            if self.path is not None and failed_future(self._future):
                self._future = self._submit()
            return self._future


def index_with(index_string: str, first: FirstView | None, status: str) -> str:
    """Dash's page template with the first view's SVG in the HTML itself: on screen as
    soon as the HTML is, before any script (assets/graph_view.js moves it over the
    graph's place when the page is built, and removes it when plotly has drawn)."""
    if first is None or not first.svg:
        return index_string
    block = first_view_block(first.svg, status)
    # Dash fills the template's {%…%} slots after this: a name from the file must not be one
    block = block.replace("{", "&#123;").replace("}", "&#125;")
    return index_string.replace("{%app_entry%}", block + "{%app_entry%}", 1)
