"""Per-browser-session state on the server: the model, and caches derived from it.

Nothing here is module-level: a :class:`SessionStore` belongs to one app
(:func:`qviz.app.create_app`), and each browser session gets its own
:class:`Session`, keyed by the random id in its ``dcc.Store``. Results are
pure functions of (model, recipe), so they are cached by the recipe's JSON.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field

from ..ir import Graph
from ..passes import Recipe


@dataclass
class Session:
    graph: Graph
    name: str
    worker: object = None   # a qviz.app.worker.Worker; None computes in this process
    results: OrderedDict = field(default_factory=OrderedDict)   # recipe json → Result (no report)
    reports: OrderedDict = field(default_factory=OrderedDict)   # recipe json → Future[Report]
    layouts: dict = field(default_factory=dict)                 # view key → (view graph, positions)
    latest: str = ""   # the recipe last drawn: reports for older ones are not worth computing
    ranges: dict = field(default_factory=dict)                  # fold selection → activation ranges
    key: str = field(default_factory=lambda: uuid.uuid4().hex)  # names this model in the worker
    sweep: tuple | None = None   # (bits, Future[Sensitivity]) of the last sweep
    qat: object = None           # the QAT export: a Future (bytes of a .keras file), then its answer

    def result(self, recipe: Recipe):
        """``qviz.apply(original, recipe, report=False)``, cached (undo/redo is instant).

        The passes take milliseconds; the report, which runs both graphs in
        TensorFlow, is :meth:`report`, so the graph can be redrawn first.
        """
        from ..pipeline import apply

        def compute():
            ranges = self._ranges(recipe) if recipe.quantize_config(self.graph).layers else None
            return apply(self.graph, recipe, report=False, ranges=ranges)

        return _cached(self.results, recipe, compute)

    def _ranges(self, recipe: Recipe):
        """Activation ranges for this fold selection (bits do not change them), cached."""
        folds = tuple(recipe.fold_selection(self.graph))
        if folds not in self.ranges and self.worker is not None:
            self.ranges[folds] = self.worker.ranges(self.key, self.graph, folds).result()
        return self.ranges.get(folds)

    def report(self, recipe: Recipe):
        """The verification report (blocking)."""
        return self.report_future(recipe).result()

    def report_future(self, recipe: Recipe) -> Future:
        """The report as a future: run in the worker process, or here without one.

        Reports still queued for recipes other than this one are cancelled: the
        user has moved on, and their results would only delay this one.
        """
        from ..pipeline import report_for

        key = recipe.to_json(indent=None)
        if key in self.reports:
            return self.reports[key]
        for other, fut in list(self.reports.items()):
            if other != key and not fut.done() and fut.cancel():
                del self.reports[other]
        if self.worker is None:
            fut = Future()
            fut.set_result(report_for(self.graph, recipe, self.result(recipe)))
        else:
            ranges = self._ranges(recipe) if recipe.quantize_config(self.graph).layers else None
            fut = self.worker.report(self.key, self.graph, key, ranges)
        self.reports[key] = fut
        while len(self.reports) > 8:
            self.reports.popitem(last=False)
        return fut

    def sensitivity_future(self, bits) -> Future:
        """Start (or return the running) sensitivity sweep over ``bits``: a future
        with a ``progress()`` method giving ``(done, total)``."""
        from .worker import sensitivity_in_thread

        bits = tuple(int(b) for b in bits)
        if self.sweep is not None and self.sweep[0] == bits and not self.sweep[1].cancelled():
            return self.sweep[1]
        if self.sweep is not None:
            self.sweep[1].cancel()
        fut = (self.worker.sensitivity(self.key, self.graph, bits) if self.worker is not None
               else sensitivity_in_thread(self.graph, bits))
        self.sweep = (bits, fut)
        return fut

    def qat_future(self, recipe: Recipe, folding_mode: str, freeze_bn_delay=None) -> Future:
        """The ``.keras`` bytes of the QAT model (the model must come from a Keras file)."""
        from .worker import in_thread, run_qat_export

        args = (self.graph.source, recipe.to_json(indent=None), folding_mode, freeze_bn_delay)
        return self.worker.qat(*args) if self.worker is not None else in_thread(run_qat_export, *args)


def _cached(cache: OrderedDict, recipe: Recipe, compute, size: int = 8):
    key = recipe.to_json(indent=None)
    if key not in cache:
        cache[key] = compute()
        while len(cache) > size:
            cache.popitem(last=False)
    cache.move_to_end(key)
    return cache[key]


class SessionStore:
    """Sessions by id, at most ``capacity`` (least recently used dropped)."""

    def __init__(self, capacity: int = 32):
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()
        self.capacity = capacity
        # session id → (Future[Graph], name, start time) of a model being opened,
        # then ("done", the callback's answer) once it is open (see callbacks/model.py)
        self.loading: dict[str, tuple] = {}

    @staticmethod
    def new_id() -> str:
        return uuid.uuid4().hex

    def put(self, sid: str, session: Session) -> Session:
        with self._lock:
            self._sessions[sid] = session
            self._sessions.move_to_end(sid)
            while len(self._sessions) > self.capacity:
                self._sessions.popitem(last=False)
        return session

    def get(self, sid: str | None) -> Session | None:
        with self._lock:
            s = self._sessions.get(sid) if sid else None
            if s is not None:
                self._sessions.move_to_end(sid)
            return s
