"""Per-browser-session state on the server: the model, and caches derived from it.

Nothing here is module-level: a :class:`SessionStore` belongs to one app
(:func:`qviz.app.create_app`), and each browser session gets its own
:class:`Session`, keyed by the random id in its ``dcc.Store``. Results are
pure functions of (model, recipe), so they are cached by the recipe's JSON.
"""

from __future__ import annotations

import math
import logging
import shutil
import tempfile
import threading
import uuid
import weakref
from collections import OrderedDict
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from cachetools import LRUCache

from ..choices import MODEL_SUFFIXES
from ..ir import Graph
from ..layout import view_graph
from ..layout.blocks import find_blocks, layer_graph
from ..matcher import GraphMatcher
from ..passes import Recipe
from ..passes.refold import ranges_for_folds
from .jobs import Job, JobState, ThreadRunner, shared_thread_runner

if TYPE_CHECKING:
    from .first_view import FirstView


log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Origin:
    """Where a session's model came from, so an evicted session can be reopened:
    ``kind`` is ``"sample"`` (``name`` is the sample), ``"served"`` (the model
    given to ``qviz serve``) or ``"upload"`` (gone with its directory)."""

    kind: str
    name: str

    @property
    def reopenable(self) -> bool:
        return self.kind in ("sample", "served")


class SessionGone(Exception):
    """The page's session is no longer on the server: evicted to make room for
    newer ones (``origin`` says what it showed), or from before a restart."""

    def __init__(self, sid: str, origin: Origin | None):
        self.sid, self.origin = sid, origin
        super().__init__(sid)


@dataclass
class PendingOpen:
    """A model being opened for a page: the queued load, then the page's answer.

    ``answer`` is kept once the load is done: the page drops the answer of a
    poll that was in flight when a newer one went out, so later polls repeat it.
    """

    future: Future                  # Future[Graph]
    origin: Origin
    started: float                  # time.monotonic() when queued
    upload: object = None           # the Upload being opened, if any (its directory goes on failure)
    keep_recipe: bool = False       # a reopened session keeps the page's recipe
    answer: tuple | None = None     # the open callback's outputs, once done
    first: FirstView | None = None  # the layer view shown meanwhile (drawn from the file), if any


@dataclass
class Session:
    graph: Graph
    name: str
    runner: object = field(default_factory=shared_thread_runner)   # where TensorFlow work runs (qviz.app.jobs)
    origin: Origin | None = None
    upload_dir: Path | None = None   # an uploaded model's temporary directory: removed with the session
    work_dir: Path | None = None     # its jobs' files (the sweep's measurements): removed with the session
    # Per-recipe caches, least recently used first out: undo/redo and re-selection are instant.
    results: LRUCache = field(default_factory=lambda: LRUCache(8))   # recipe json → Result (no report)
    folds: LRUCache = field(default_factory=lambda: LRUCache(4))     # fold selection → the graph folded so
    checks: LRUCache = field(default_factory=lambda: LRUCache(8))    # recipe json → DeployCheck
    reports: LRUCache = field(default_factory=lambda: LRUCache(8))   # recipe json → Future[Report]
    # recipe json → Future[Report] with each layer's own error too (asked for apart: it costs seconds more)
    local_reports: LRUCache = field(default_factory=lambda: LRUCache(4))
    samples: LRUCache = field(default_factory=lambda: LRUCache(4))   # recipe json → Future[{tensor: values}] (MBs)
    layouts: dict = field(default_factory=dict)                 # (graph id, ViewChoice) → DrawnView
    # the recipe last drawn: reports for older ones are not worth computing, and a draw of it
    # again is skipped (qviz.app.redraw.already_drawn)
    latest: str = ""
    warmed: bool = False   # the starting calibration has been asked for (services.warm_up)
    sweep_target: float = 30.0   # the sweep panel's target SQNR (dB): its suggestion colours the graph
    # EMA decay (None: extremes) → Future of the float graph's activation ranges (shared per graph)
    ranges: dict = field(default_factory=dict)
    fold_ranges: LRUCache = field(default_factory=lambda: LRUCache(8))   # (folds, EMA) → ranges for them
    key: str = field(default_factory=lambda: uuid.uuid4().hex)  # names this model in the worker
    # Jobs the page started and polls, by name ("sweep", "qat", "tflite", "explain", "training"): one
    # each, replaced by the next start, cancelled when the session goes.
    jobs: dict[str, Job] = field(default_factory=dict)
    matches: LRUCache = field(default_factory=lambda: LRUCache(8))   # (pattern, recipe json) → [MatchFate]
    matchers: LRUCache = field(default_factory=lambda: LRUCache(8))  # pattern source → its GraphMatcher
    node_data: dict = field(default_factory=dict)   # menu name → NodeData by layer (uploaded node-data files)

    @property
    def file_stem(self) -> str:
        """What the page's downloads are named after: the model file's name, no folders (a
        served model's name is the path it was served from) and no model suffix (a
        SavedModel directory's dots are its name's).

        >>> [Session(None, n).file_stem for n in ("/srv/models/mnv2.keras", "lenet_digits", "/m/mobilenet_v2_1.0_224")]
        ['mnv2', 'lenet_digits', 'mobilenet_v2_1.0_224']
        """
        name = Path(self.name).name
        suffix = Path(name).suffix.lower()
        return (name[:-len(suffix)] if suffix in MODEL_SUFFIXES + (".zip",) else name) or "model"

    @cached_property
    def blocks(self):
        """The float graph's blocks (:func:`qviz.layout.blocks.find_blocks`): its rewrites
        are drawn with the same blocks, so a block does not change as the recipe does."""
        return find_blocks(layer_graph(view_graph(self.graph, "layer")))

    def aim_sweep(self, target) -> None:
        """Take the sweep panel's target SQNR (dB), which "suggested weight bits" paints,
        if the page sent a finite number (else the last one stays).

        >>> import qviz
        >>> from qviz.samples import sample_path
        >>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
        >>> for sent in (24, float("nan"), "40", True, None): s.aim_sweep(sent)
        >>> s.sweep_target
        24.0
        """
        if isinstance(target, (int, float)) and not isinstance(target, bool) and math.isfinite(target):
            self.sweep_target = float(target)

    def block(self, block_id: str):
        """The block with id ``block_id`` (None: the model has none; a page's key is not trusted)."""
        return next((b for b in self.blocks if b.id == block_id), None)

    @property
    def data(self):
        """What this model is calibrated and verified on (:func:`qviz.samples.data_for`)."""
        from ..samples import data_for

        return data_for(self.graph)

    def result(self, recipe: Recipe):
        """``qviz.apply(original, recipe, report=False)``, cached (undo/redo is instant): the
        model the recipe makes, with the ranges ``qviz apply`` gives it (the float graph's
        calibration carried to its folds), which the drawing, the verification, the
        downloads and the exports all read. A fold toggle calibrates nothing again.

        The passes take milliseconds; the report, which runs both graphs in
        TensorFlow, is :meth:`report`, so the graph can be redrawn first.
        """
        return _cached(self.results, recipe, lambda: self._apply(recipe, self.folded_ranges))

    def folded(self, recipe: Recipe):
        """The graph with the recipe's batch norms folded and nothing quantized, cached per fold
        selection: what its weights are quantized from (no calibration: it runs no TensorFlow)."""
        from ..passes import fold_batch_norms

        folds = tuple(recipe.fold_selection(self.graph))
        return _cached(self.folds, folds, lambda: fold_batch_norms(self.graph, layers=list(folds)).graph)

    def _apply(self, recipe: Recipe, ranges_of):
        from ..pipeline import apply

        quantizes = bool(recipe.quantize_config(self.graph).layers)
        # the data is made only if the calibration job missed a range (noise for a big
        # model's input takes ~0.1 s: most of a toggle's rewrite)
        return apply(self.graph, recipe, report=False, ranges=ranges_of(recipe) if quantizes else None,
                     calibration=(lambda: self.data.calibration) if quantizes else None)

    def check(self, recipe: Recipe):
        """What TFLite will run of the recipe (:func:`qviz.analysis.deployability`), cached:
        the graph's ⚠ marks and the table's *on TFLite* column read the same check."""
        from ..analysis.deployability import deployability

        return _cached(self.checks, recipe, lambda: deployability(self.graph, recipe, self.result(recipe)))

    def match_fates(self, source: str, pattern, recipe: Recipe):
        """The float graph's matches of ``pattern`` followed through the recipe's rewrite
        (:func:`qviz.analysis.match_fates.match_fates`), cached: the graph's halos, the
        match list and the node panel's explanation read the same list."""
        from ..analysis.match_fates import match_fates

        key = (source, recipe.to_json(indent=None))
        # compiled once per pattern (~20 ms of each edit's redraw on MobileNetV2 when it was not)
        matcher = _cached(self.matchers, source, lambda: GraphMatcher(pattern))
        return _cached(self.matches, key, lambda: match_fates(matcher, self.graph, self.result(recipe)))

    def folded_ranges(self, recipe: Recipe) -> dict | None:
        """The activation ranges of the recipe's fold selection (bits do not change them):
        the float graph's calibration (:meth:`ranges_future`; waits for it) carried to its
        folds (:func:`qviz.passes.refold.ranges_for_folds`), cached; None if they do not carry
        (a model whose layers do not tell a conv from its batch norm): ``qviz.apply`` then
        calibrates the folded graph, as ``qviz apply`` does."""
        fut = self.ranges_future(recipe)
        try:
            measured = fut.result()
        except Exception:   # not kept: the next recipe tries again
            self._forget_calibration(recipe, fut)
            raise
        key = (tuple(recipe.fold_selection(self.graph)), self._calibration_key(recipe))
        return _cached(self.fold_ranges, key, lambda: ranges_for_folds(self.graph, measured, key[0]))

    def _calibration_key(self, recipe: Recipe) -> float | None:
        """What a calibration is made for, and the job's argument: the recipe's EMA decay or
        None (an EMA's ranges are an average over the batches, not their extremes)."""
        return recipe.quantize_config(self.graph).ema_decay

    def _forget_calibration(self, recipe: Recipe, failed: Future) -> None:
        """Drop a failed calibration (the next ask tries again), unless a newer one replaced it."""
        key = self._calibration_key(recipe)
        with _CACHES:
            if self.ranges.get(key) is failed:
                del self.ranges[key]

    def ranges_future(self, recipe: Recipe) -> Future:
        """The float graph's calibration the recipe reads (:func:`qviz.passes.refold.float_ranges`:
        one per EMA decay, whatever the folds), running or done in the runner."""
        key = self._calibration_key(recipe)
        with _CACHES:
            if key in self.ranges:
                return self.ranges[key]
        return self._submit_once(self.ranges, key, "calibrate", self.key, self.graph, key)

    def result_ready(self, recipe: Recipe) -> bool:
        """Whether :meth:`result` returns at once (made already, or only the passes left to run)."""
        with _CACHES:
            made = recipe.to_json(indent=None) in self.results
        if made or not recipe.quantize_config(self.graph).layers:
            return True
        return self.ranges_future(recipe).done()

    def report_future(self, recipe: Recipe, local: bool = False) -> Future:
        """The verification report as a future, run by the runner on the model's data;
        ``local``: with each layer's own error too (:mod:`qviz.metrics.local`).

        Reports still queued for recipes other than this one are cancelled: the
        user has moved on, and their results would only delay this one.
        """
        key = recipe.to_json(indent=None)
        cache = self.local_reports if local else self.reports
        with _CACHES:
            if key in cache:
                return cache[key]
            stale = [(other, fut) for other, fut in cache.items() if other != key and not fut.done()]
        for other, fut in stale:
            if fut.cancel():
                with _CACHES:
                    cache.pop(other, None)
        return self._submit_once(cache, key, "report", self.key, self.graph, key, _RANGES, local,
                                 recipe=recipe)

    def samples_future(self, recipe: Recipe) -> Future:
        """What every activation quantizer of the recipe sees (for the quantization grids),
        one job per recipe, cached."""
        key = recipe.to_json(indent=None)
        with _CACHES:
            if key in self.samples:
                return self.samples[key]
        return self._submit_once(self.samples, key, "samples", self.key, self.graph, key, _RANGES, recipe=recipe)

    def _submit_once(self, cache: LRUCache, key, kind: str, *args, recipe: Recipe | None = None) -> Future:
        """A job for ``key``, cached; if another callback submitted one meanwhile, that one.
        An argument :data:`_RANGES` is the recipe's activation ranges (None if it quantizes
        nothing): the job is sent once its calibration is done, and asking never waits for it."""
        start = None
        if any(a is _RANGES for a in args):
            fut, start = self._after_ranges(recipe, kind, args, forget=lambda failed: _drop(cache, key, failed))
        else:
            fut = self.runner.submit(kind, *args)
        with _CACHES:
            kept = cache.setdefault(key, fut)
        if kept is not fut:
            fut.cancel()
        elif start is not None:
            start()   # (once cached: a calibration failing at once finds it there to drop)
        return kept

    def _after_ranges(self, recipe: Recipe, kind: str, args: tuple, forget):
        """``(answer, start)``: the job ``kind`` with the recipe's ranges for :data:`_RANGES`,
        submitted by ``start()`` once they are in; the future answers for both (cancelled before
        then, the job is never sent). A failed calibration fails it, and ``forget(answer)``
        first drops it from its cache: asked again, both are tried again."""
        answer = _AfterRanges()

        def send(ranges) -> None:
            if not answer.set_running_or_notify_cancel():
                return
            try:
                answer.job = self.runner.submit(kind, *(ranges if a is _RANGES else a for a in args))
            except BaseException as exc:   # (the runner closed, Redis gone): said, not "verifying…" forever
                answer.set_exception(exc)
                return
            answer.job.add_done_callback(lambda done: _copy(done, answer))

        if not recipe.quantize_config(self.graph).layers:
            return answer, lambda: send(None)
        calibration = self.ranges_future(recipe)

        def calibrated(done: Future) -> None:
            try:
                done.result()
                ranges = self.folded_ranges(recipe)   # (at once: the calibration is done)
            except BaseException as exc:   # the calibration failed or was cancelled: so does this job
                self._forget_calibration(recipe, done)
                forget(answer)   # (first: whoever sees the failure and asks again gets a new try)
                if answer.set_running_or_notify_cancel():
                    answer.set_exception(exc)
                return
            send(ranges)

        return answer, lambda: calibration.add_done_callback(calibrated)

    def start(self, name: str, kind: str, *args, key=None) -> Job:
        """Start the page's job ``name`` (a ``kind`` of :data:`qviz.app.jobs.KINDS`),
        replacing (and cancelling) the one it had — unless that one is for the same
        ``key`` and not cancelled: then it is returned as it is."""
        old = self.jobs.get(name)
        # (a stopped or stopping one is not: run again, it runs again)
        if (old is not None and key is not None and old.key == key and old.state is not JobState.CANCELLED
                and not getattr(old.handle, "stop_requested", False)):
            return old
        if old is not None:
            old.cancel()
        job = self.jobs[name] = Job(kind, self.runner.submit(kind, *args), key=key)
        return job

    def start_sweep(self, bits) -> Job:
        """The sensitivity sweep over ``bits`` (the running one, if it sweeps the same bits)."""
        bits = tuple(int(b) for b in bits)
        old = self.jobs.get("sweep")
        if old is not None and old.key != bits:
            old.stop()   # a sweep of other widths is not wanted any more: it would hold the lane for minutes
        # (Celery's workers may be on other machines: they measure everything again)
        checkpoint = str(self.sweep_checkpoint) if getattr(self.runner, "shares_files", False) else None
        return self.start("sweep", "sweep", self.key, self.graph, bits, checkpoint, key=bits)

    @property
    def sweep_checkpoint(self) -> Path:
        """The file the sweeps write each measurement to as it is made: a sweep run again (stopped,
        or for other widths) makes only those it does not hold."""
        if self.work_dir is None:
            self.work_dir = Path(tempfile.mkdtemp(prefix="qviz-session-"))
        return self.work_dir / "sweep.json"

    def start_pareto(self, sens, trade: str = "size") -> Job:
        """The mixed-precision search over the sweep ``sens``, saving ``trade`` ("size" or
        "bops"; the running one, if it is for that sweep and trade)."""
        # keyed by what the sweep measured (an id could be reused by the next sweep's result)
        key = (tuple(sens.layers), tuple(sens.bits), sens.weight_sqnr.tobytes(), sens.activation_sqnr.tobytes(),
               trade)
        return self.start("pareto", "pareto", self.key, self.graph, sens, trade, key=key)

    def start_qat(self, recipe: Recipe, folding_mode: str, freeze_bn_delay=None) -> Job:
        """The ``.keras`` bytes of the QAT model (the model must come from a Keras file)."""
        return self.start("qat", "qat", self.graph.source, recipe.to_json(indent=None), folding_mode,
                          freeze_bn_delay)

    def start_code(self, recipe: Recipe, tool: str, name: str) -> Job:
        """``(zip bytes, notes)`` of the recipe written for ``tool`` (the model must come from a file)."""
        recipe_json = recipe.to_json(indent=None)
        return self.start("code", "code", self.graph.source, recipe_json, tool, name, key=(tool, recipe_json))

    def start_report(self, recipe: Recipe, explain: list[str], sensitivity, target_sqnr_db: float) -> Job:
        """The recipe's HTML report (a string): explaining the folds of ``explain``, with a sweep if given."""
        recipe_json = recipe.to_json(indent=None)
        return self.start("html_report", "html_report", self.key, self.graph, recipe_json, self.name, explain,
                          sensitivity, target_sqnr_db, key=(recipe_json, tuple(explain), id(sensitivity),
                                                             target_sqnr_db))

    def start_tflite(self, recipe: Recipe, int8_io: bool) -> Job:
        """``(tflite bytes, DeployCheck, DeviceReport)`` of the recipe."""
        return self.start("tflite", "tflite", self.key, self.graph, recipe.to_json(indent=None), int8_io)

    def close(self) -> None:
        """Free what the session holds: its jobs still waiting, its files (an upload's, its jobs')."""
        for job in self.jobs.values():
            job.stop()   # a sweep running for minutes would hold the worker's lane for nobody
        # (not the calibrations: sessions of one model share them, SessionStore.ranges_for)
        for fut in [*self.reports.values(), *self.local_reports.values(), *self.samples.values()]:
            fut.cancel()
        remove_dir(self.upload_dir)
        remove_dir(self.work_dir)
        self.upload_dir = self.work_dir = None


def remove_dir(path: Path | None) -> None:
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)


#: Guards the sessions' LRU caches: callbacks of one page run at once, and even a
#: read reorders an LRU. Never held while computing (that may wait for a job).
_CACHES = threading.Lock()


#: A job argument standing for the recipe's activation ranges (:meth:`Session._submit_once`).
_RANGES = object()


class _AfterRanges(Future):
    """A job's answer, before the job is sent (its calibration runs) and after: a cancel
    reaches the job once it is sent."""

    job: Future | None = None

    def cancel(self) -> bool:
        return self.job.cancel() if self.job is not None else super().cancel()

    def cancelled(self) -> bool:
        return super().cancelled() or (self.job is not None and self.job.cancelled())


def _drop(cache: LRUCache, key, fut: Future) -> None:
    """Remove ``cache[key]`` if it is still ``fut``."""
    with _CACHES:
        if cache.get(key) is fut:
            del cache[key]


def _copy(done: Future, answer: Future) -> None:
    """Hand a finished future's outcome on to ``answer``."""
    if done.cancelled():
        answer.set_exception(CancelledError())
    elif done.exception() is not None:
        answer.set_exception(done.exception())
    else:
        answer.set_result(done.result())


def _cached(cache: LRUCache, key, compute):
    """``cache[key]``, computed and stored first if missing (a recipe is keyed by its JSON)."""
    if isinstance(key, Recipe):
        key = key.to_json(indent=None)
    with _CACHES:
        if key in cache:
            return cache[key]
    value = compute()
    with _CACHES:
        return cache.setdefault(key, value)


class SessionStore:
    """Sessions by id, at most ``capacity`` (least recently used dropped).

    A dropped session's upload directory is removed at once, and a tombstone
    (its :class:`Origin`) is kept so the page can be told and the model reopened.
    """

    def __init__(self, capacity: int = 32, load_workers: int = 2):
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()
        self.capacity = capacity
        self.loading: dict[str, PendingOpen] = {}   # session id → its model being opened
        # Opening models: at most ``load_workers`` at a time (each open holds a model's
        # weights and a TensorFlow trace; 16 users opening at once would starve each other).
        self.loads = ThreadRunner(load_workers, nice=10)
        self.samples: dict[str, Future] = {}   # sample name → Future[Graph], shared by every session
        self.lock = threading.Lock()            # guards ``samples``
        self._issued: OrderedDict[str, None] = OrderedDict()   # ids handed to pages by this process
        self._evicted: OrderedDict[str, Origin | None] = OrderedDict()
        self._ranges: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # Graph → calibrations

    def ranges_for(self, graph: Graph) -> dict:
        """The calibrations of ``graph`` (fold selection → Future of ranges), shared by
        every session showing it: a second page of the served model calibrates nothing again."""
        with self.lock:
            return self._ranges.setdefault(graph, {})

    def new_id(self) -> str:
        sid = uuid.uuid4().hex
        with self._lock:
            self._issued[sid] = None
            while len(self._issued) > 100 * self.capacity:
                self._issued.popitem(last=False)
        return sid

    def put(self, sid: str, session: Session) -> Session:
        closing = []
        with self._lock:
            old = self._sessions.get(sid)
            if old is not None and old is not session:
                closing.append(old)
            self._sessions[sid] = session
            self._sessions.move_to_end(sid)
            self._evicted.pop(sid, None)
            while len(self._sessions) > self.capacity:
                gone_sid, gone = self._sessions.popitem(last=False)
                self._evicted[gone_sid] = gone.origin
                closing.append(gone)
                log.info("session %s evicted (%d sessions kept): %s", gone_sid[:8], self.capacity, gone.name)
            while len(self._evicted) > 100 * self.capacity:
                self._evicted.popitem(last=False)
        for old in closing:
            old.close()
        return session

    def get(self, sid: str | None) -> Session | None:
        with self._lock:
            s = self._sessions.get(sid) if isinstance(sid, str) else None
            if s is not None:
                self._sessions.move_to_end(sid)
            return s

    def require(self, session_data) -> Session | None:
        """The session of a page's session store; ``None`` while its first model
        is still opening. Raises :class:`SessionGone` for a session that was
        evicted, or that this server never issued (it restarted)."""
        sid = session_data.get("sid") if isinstance(session_data, dict) else None
        if not isinstance(sid, str):
            raise SessionGone("", None)
        s = self.get(sid)
        if s is not None:
            return s
        with self._lock:
            if sid in self._evicted:
                raise SessionGone(sid, self._evicted[sid])
            if sid in self._issued or sid in self.loading:
                return None
        raise SessionGone(sid, None)

    def close_all(self) -> None:
        """Remove every session's files (at exit)."""
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for s in sessions:
            s.close()
        for pending in list(self.loading.values()):
            # answered or not: an open that finished but was not yet taken up by its page
            # still holds its upload's directory (removing it twice is harmless)
            if pending.upload is not None:
                pending.upload.discard()
        self.loads.close()
