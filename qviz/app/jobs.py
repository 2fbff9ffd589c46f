"""Long work, never on a request thread: one :class:`JobRunner` protocol, its
runners, the :class:`Job` record a session keeps, and one polling helper.

A job is a *kind* (:data:`KINDS`: calibrate, report, samples, sweep, QAT
export, TFLite export, the fold explainers) and its arguments; the function
that does it is :data:`qviz.app.worker.JOBS` ``[kind]``, the same in every
runner:

* :class:`ProcessRunner` — two spawned worker processes (lanes): calibration
  and activation samples, which a redraw or a selection waits for, never queue
  behind a report or a sweep. Jobs are sent one at a time; a queued job that
  is cancelled never reaches the process. Progress comes back over the pipe, and a stop
  (:meth:`Job.stop`) goes out on it: the job reads it after its next progress report.
* :class:`ThreadRunner` — a small thread pool in this process (``worker=False``:
  tests, and a server that must not spawn).
* :class:`qviz.app.celery_worker.CeleryRunner` — Celery workers through Redis
  (``REDIS_URL``), shared by several web processes. A stop there revokes the job's tasks:
  those not started never run, a part already running finishes on its worker.

Every runner returns a :class:`JobFuture`: a ``concurrent.futures.Future``
with ``progress()``, ``time_left()`` and ``request_stop()``.

>>> runner = ThreadRunner(functions={"double": lambda x, progress: 2 * x})
>>> job = Job("double", runner.submit("double", 21))
>>> job.handle.result(timeout=10), job.state
(42, <JobState.DONE: 'done'>)
>>> poll(job, running="…", done=lambda v: f"got {v}", failed=str), poll(job, running="…", done=None, failed=None)
('got 42', 'got 42')
>>> runner.close()
"""

from __future__ import annotations

import contextlib
import enum
import logging
import multiprocessing
import os
import sys
import threading
import time
import types
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from .errors import reported

__all__ = ["KINDS", "INTERACTIVE", "JobFuture", "JobStopped", "JobState", "Job", "poll", "JobRunner", "ThreadRunner",
           "ProcessRunner", "shared_thread_runner"]

log = logging.getLogger(__name__)

#: Every kind of job, and what it is for.
KINDS = {
    "open": "a model file loaded (and a Keras model frozen) into a Graph, with its tensor shapes; run "
            "by the session store's own bounded ThreadRunner, as the graph is drawn in the web process",
    "calibrate": "the float graph's activation ranges, which every fold selection reads (a redraw with "
                 "quantized layers waits for it)",
    "samples": "what each activation quantizer sees, for the quantization grids",
    "report": "the verification report: both graphs run on the model's data",
    "sweep": "the sensitivity sweep (reports progress)",
    "sweep_part": "the sweep of some layers: one part of a sweep fanned out over Celery workers",
    "pareto": "the mixed-precision search over a sweep, each recipe measured (reports progress)",
    "pareto_chain": "the search's recipes, not yet measured, and the tensor shapes (a fanned-out search's start)",
    "pareto_measure": "some of the search's recipes measured: one part of a search fanned out",
    "qat": "the QAT Keras model of a Keras file, as .keras bytes",
    "code": "the recipe as another tool's code (tfmot, QKeras, AI Edge Quantizer): a .zip and the notes",
    "tflite": "the .tflite file, what TFLite runs of it, and the device next to the simulation",
    "explain_fold": "the inference fold explained on the model's numbers",
    "explain_training": "a training-mode fold and its check",
    "html_report": "the recipe's self-contained HTML report (rewrite, verification, folds explained)",
}
#: Kinds a user waits on interactively: their own lane, never behind a report or a sweep.
INTERACTIVE = frozenset({"calibrate", "samples", "explain_fold", "explain_training"})


class JobStopped(Exception):
    """A running job stopped on request (:meth:`Job.stop`), at one of its progress reports."""


class JobFuture(Future):
    """A future with ``progress()``: ``(done, total)`` as last reported, or None; and
    ``time_left()``, the seconds left at the pace since the first report.

    >>> f = JobFuture()
    >>> f.report_progress(1, 10, now=100.0); f.time_left(now=101.0) is None   # one report: no pace yet
    True
    >>> f.report_progress(3, 10, now=104.0); f.time_left(now=104.0)           # 2 steps in 4 s, 7 to go
    14.0
    """

    def __init__(self):
        super().__init__()
        self._progress: tuple[int, int] | None = None
        self._first: tuple[float, int] | None = None    # (when, done) at the first report
        self._stop = threading.Event()
        self._tell: Callable[[], None] | None = None

    def request_stop(self) -> None:
        """Ask the running job to stop at its next progress report (its runner tells it)."""
        self._stop.set()
        if self._tell is not None:
            self._tell()

    def on_stop(self, tell: Callable[[], None]) -> None:
        """``tell()`` passes a stop on to where the job runs (at once if one was asked for)."""
        self._tell = tell
        if self._stop.is_set():
            tell()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def progress(self) -> tuple[int, int] | None:
        return self._progress

    def report_progress(self, done: int, total: int, *, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if self._first is None:
            # paced from here: what came before (a start-up, a calibration) is not a step
            self._first = (now, int(done))
        self._progress = (int(done), int(total))

    def time_left(self, *, now: float | None = None) -> float | None:
        """Seconds until done at the pace since the first report; None before a second one."""
        if self._first is None or self._progress is None:
            return None
        (since, first), (done, total) = self._first, self._progress
        if done <= first:
            return None
        now = time.monotonic() if now is None else now
        return (now - since) / (done - first) * max(total - done, 0)


class JobState(enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass
class Job:
    """A job a page started and polls: its kind, the runner's handle, and the
    page's last answer once it ended (a poll tick sent while the finishing one
    was in flight gets it again: the page drops the older response)."""

    kind: str
    handle: Future
    key: object = None              # what it was started for (the bits swept, a recipe…)
    answer: object = None
    started: float = field(default_factory=time.monotonic)

    @property
    def state(self) -> JobState:
        h = self.handle
        if h.cancelled() or (h.done() and isinstance(h.exception(), JobStopped)):
            return JobState.CANCELLED
        if h.done():
            return JobState.FAILED if h.exception() is not None else JobState.DONE
        return JobState.RUNNING if h.running() else JobState.QUEUED

    def progress(self) -> tuple[int, int] | None:
        get = getattr(self.handle, "progress", None)
        return get() if get is not None else None

    def time_left(self) -> float | None:
        get = getattr(self.handle, "time_left", None)
        return get() if get is not None else None

    def cancel(self) -> bool:
        return self.handle.cancel()

    def stop(self) -> bool:
        """Cancel the job if it has not started; if it runs, ask it to stop at its next progress
        report (a sweep: after the measurement under way; a job that reports none runs to its
        end). False: it had ended."""
        if self.handle.cancel():
            return True
        request = getattr(self.handle, "request_stop", None)
        if request is None or self.handle.done():
            return False
        request()
        return True


def poll(job: Job | None, *, running, done: Callable, failed: Callable):
    """The callback's answer for ``job``: ``running`` while it runs, ``done(result)``
    or ``failed(message)`` once it ended (computed once, then replayed), None for no job.
    ``message`` is one line for the page (:func:`qviz.app.errors.reported`: a failure that
    is not qviz's own error is logged with its traceback)."""
    if job is None:
        return None
    if job.answer is not None:
        return job.answer
    if not job.handle.done():
        return running
    try:
        answer = done(job.handle.result())
    except Exception as exc:  # the job's own error (QATPlanError, TFLiteError, RecipeError…), one line
        answer = failed(reported(exc, f"job {job.kind}"))
    job.answer = answer
    return answer


class JobRunner(Protocol):
    """Where jobs run. ``submit`` never blocks on the work. ``shares_files``: its jobs run on
    this machine, so a job may be given a file of the web process to read and write."""

    shares_files: bool

    def submit(self, kind: str, *args) -> Future: ...

    def start(self) -> "JobRunner": ...

    def close(self) -> None: ...


def _functions() -> Mapping[str, Callable]:
    from .worker import JOBS

    return JOBS


class ThreadRunner:
    """Jobs in a bounded thread pool of this process."""

    shares_files = True

    def __init__(self, threads: int = 2, functions: Mapping[str, Callable] | None = None, nice: int = 0):
        """``nice``: how much lower than the process its threads are scheduled (Linux;
        elsewhere ignored): opening a model must not take the CPU a page is drawn with."""
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="qviz-job",
                                        initializer=_lower_priority, initargs=(nice,))
        self._functions = functions
        self._waiting: list[JobFuture] = []   # not started yet, in order: cancelled by close()
        self._lock = threading.Lock()

    def start(self) -> "ThreadRunner":
        return self

    def submit(self, kind: str, *args) -> JobFuture:
        fn = (self._functions or _functions())[kind]
        fut = JobFuture()

        def run():
            with self._lock:
                if fut in self._waiting:
                    self._waiting.remove(fut)
            if not fut.set_running_or_notify_cancel():
                return

            def progress(done, total):
                fut.report_progress(done, total)
                if fut.stop_requested:   # (raised in the job's own thread: it unwinds the job)
                    raise JobStopped(f"stopped after {done} of {total}")

            try:
                fut.set_result(fn(*args, progress=progress))
            except BaseException as exc:  # handed to whoever polls the future
                fut.set_exception(exc)

        with self._lock:
            self._waiting.append(fut)
        self._pool.submit(run)
        return fut

    def position(self, fut: Future) -> int:
        """0 when ``fut`` is running or done; else how many jobs start before it, plus one
        (what a page waiting to open a model is told)."""
        with self._lock:
            self._waiting = [f for f in self._waiting if not f.done()]
            return self._waiting.index(fut) + 1 if fut in self._waiting else 0

    def close(self) -> None:
        """Cancel what has not started (running jobs finish: threads cannot be stopped)."""
        with self._lock:
            waiting, self._waiting = list(self._waiting), []
        for fut in waiting:
            fut.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)


def _lower_priority(nice: int) -> None:
    """Lower the calling thread's (or process's) scheduling priority by ``nice``."""
    if nice <= 0:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), min(19, os.getpriority(os.PRIO_PROCESS, 0) + nice))
    except (AttributeError, OSError):   # not Linux, or not allowed: the same priority
        pass


_SHARED: list = []
_SHARED_LOCK = threading.Lock()


def shared_thread_runner() -> ThreadRunner:
    """One :class:`ThreadRunner` for sessions made outside an app (scripts, tests)."""
    with _SHARED_LOCK:
        if not _SHARED:
            _SHARED.append(ThreadRunner())
        return _SHARED[0]


class ProcessRunner:
    """Jobs in two spawned worker processes (lanes: interactive and background)."""

    shares_files = True

    def __init__(self):
        self._lanes = {"interactive": _Lane("interactive"), "background": _Lane("background")}

    def start(self) -> "ProcessRunner":
        """Launch the worker processes now (they import TensorFlow while the app starts)."""
        for lane in self._lanes.values():
            lane.ensure_process()
        return self

    def submit(self, kind: str, *args) -> JobFuture:
        if kind not in KINDS:
            raise ValueError(f"no job kind {kind!r}")
        return self._lanes["interactive" if kind in INTERACTIVE else "background"].submit(kind, args)

    def close(self) -> None:
        for lane in self._lanes.values():
            lane.close()


class _Lane:
    """One worker process and the jobs waiting for it, sent one at a time by a
    daemon thread that also reads the answers (so no exit hook has to join anything)."""

    def __init__(self, name: str):
        self.name = name
        self._waiting: deque = deque()
        self._cond = threading.Condition()
        self._process = None
        self._conn = None
        self._closed = False
        self._thread: threading.Thread | None = None
        self._sending = threading.Lock()   # one writer on the pipe to the worker at a time
        self._current: JobFuture | None = None   # the job under way in the worker, until told to stop
        self._graphs_sent: set[str] = set()   # model keys whose graph this lane's process was sent

    def submit(self, kind: str, args: tuple) -> JobFuture:
        fut = JobFuture()
        with self._cond:
            if self._closed:
                raise RuntimeError("the job runner is closed")
            self._waiting.append((fut, kind, args))
            if self._thread is None:
                self._thread = threading.Thread(target=self._dispatch, name=f"qviz-{self.name}", daemon=True)
                self._thread.start()
            self._cond.notify()
        return fut

    def ensure_process(self):
        with self._cond:
            if self._closed:
                raise RuntimeError("the job runner is closed")
            if self._process is None or not self._process.is_alive():
                ctx = multiprocessing.get_context("spawn")
                parent, child = ctx.Pipe()
                with _plain_main():
                    process = ctx.Process(target=_serve, args=(child, self.name), name=f"qviz-worker-{self.name}",
                                          daemon=True)   # terminated by multiprocessing at exit
                    process.start()
                child.close()
                self._process, self._conn = process, parent
                self._graphs_sent = set()
            return self._conn

    def _dispatch(self):
        while True:
            with self._cond:
                while not self._waiting and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                fut, kind, args = self._waiting.popleft()
            if not fut.set_running_or_notify_cancel():
                continue   # cancelled while it waited: it never reaches the process
            if self._closed:
                fut.set_exception(RuntimeError("the job runner is closed"))
                return
            try:
                conn = self.ensure_process()
                key = _graph_key(args)
                with self._sending:
                    conn.send((kind, _by_reference(args) if key in self._graphs_sent else args))
                    self._current = fut
                fut.on_stop(lambda: self._tell_stop(fut))
                while True:
                    message = conn.recv()
                    if message[0] == "progress":
                        fut.report_progress(*message[1:])
                        continue
                    if message[0] == "missing graph":   # the worker let it go (it keeps a few): send it whole
                        with self._sending:
                            conn.send((kind, args))
                            # a stop asked for meanwhile reached the worker before this job did,
                            # which dropped it as late: it is sent again, after the job
                            self._current = None if fut.stop_requested else fut
                            if fut.stop_requested:
                                conn.send(_STOP)
                        continue
                    if key is not None:
                        self._graphs_sent.add(key)
                    if message[0] == "done":
                        fut.set_result(message[1])
                    else:
                        fut.set_exception(message[1])
                    break
            except (EOFError, OSError) as exc:   # the process died (killed, out of memory): start anew
                if not self._closed:
                    log.error("worker process %s stopped during a %s job", self.name, kind, exc_info=exc)
                self._process = None
                fut.set_exception(RuntimeError(f"the worker process stopped during the {kind} job"))
            except Exception as exc:   # the arguments could not be sent (not picklable): a bug
                fut.set_exception(exc)
            finally:
                with self._sending:
                    self._current = None

    def _tell_stop(self, fut: JobFuture) -> None:
        """Send the worker a stop for ``fut`` (from the thread that asked for it: the lane's own
        thread waits for the worker's next message). Only while ``fut`` is the job under way: a
        stop the worker reads after it ended is dropped, one sent after the next job was sent
        would stop that one."""
        with self._sending:
            if self._current is not fut or self._conn is None:
                return
            try:
                self._conn.send(_STOP)
            except OSError:   # the process died: the lane says so to the job
                pass
            self._current = None   # (told once)

    def close(self):
        with self._cond:
            self._closed = True
            waiting, self._waiting = list(self._waiting), deque()
            process = self._process
            self._cond.notify_all()
        for fut, _, _ in waiting:
            fut.cancel()
        if process is not None and process.is_alive():
            process.terminate()   # it may be busy in TensorFlow
            process.join(5)


_STOP = ("stop",)   # to a worker process: stop the job under way at its next progress report


@dataclass(frozen=True)
class GraphReference:
    """A model's graph, named by its key, in a job sent to a worker process that was sent
    the graph before: unpickling MobileNetV2's graph (14 MB) took a worker 0.24 s a job,
    twice a fold toggle (its calibration, then its report). A worker that no longer has
    it answers ``("missing graph",)`` and is sent the graph again."""

    key: str


def _graph_key(args: tuple) -> str | None:
    """The model key of a job's ``(key, graph, …)`` arguments; None for other jobs."""
    from ..ir import Graph

    if len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], (Graph, GraphReference)):
        return args[0]
    return None


def _by_reference(args: tuple) -> tuple:
    return (args[0], GraphReference(args[0]), *args[2:])


def _serve(conn, name: str = "") -> None:
    """The worker process (lane ``name``): run jobs as they come, answer each."""
    import signal

    from .worker import JOBS, init_worker, worker_graph

    # Ends when told to: a parent stopping on SIGTERM ignores further ones (qviz.cli), and a
    # worker started meanwhile would inherit that and outlive it (exit waits for its workers).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # Ctrl-C in the server's terminal reaches its whole process group: the server stops
    # the workers itself (SIGTERM), so a worker neither dies mid-answer nor prints a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if name == "background":   # sweeps, exports, reports: after the web server and the interactive lane
        _lower_priority(10)    # first: the threads TensorFlow starts inherit it
    init_worker()
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message == _STOP:   # for a job that ended before it was read
            continue
        kind, args = message

        def progress(done, total):
            conn.send(("progress", done, total))
            if conn.poll() and conn.recv() == _STOP:   # nothing else is sent while a job runs
                raise JobStopped(f"stopped after {done} of {total}")

        if len(args) >= 2 and isinstance(args[1], GraphReference):
            kept = worker_graph(args[0])
            if kept is None:
                conn.send(("missing graph",))
                continue
            args = (args[0], kept, *args[2:])
        try:
            answer = ("done", JOBS[kind](*args, progress=progress))
        except BaseException as exc:  # sent to the app, which shows it in one line
            answer = ("error", exc)
        try:
            conn.send(answer)
        except OSError:   # the app is gone (stopped, killed): nobody is waiting for answers
            return
        except Exception as exc:  # the answer does not pickle: say so instead
            try:
                conn.send(("error", RuntimeError(f"the {kind} job's answer could not be sent back: "
                                                 f"{type(exc).__name__}: {exc}")))
            except OSError:
                return
        _give_back_memory()   # (after the answer: no reply waits for it)


def _give_back_memory() -> None:
    """Return the memory a job freed to the system (glibc keeps it otherwise: TensorFlow's
    threads free a batch's activations into many arenas). A MobileNetV2 worker levelled off
    at 1.43 GB instead of 1.58 (``benchmarks/worker_memory.py``). Elsewhere, nothing."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):   # not glibc
        pass


@contextlib.contextmanager
def _plain_main():
    """Start processes without the parent's ``__main__``: a spawned child re-imports
    it, and a script without a ``__name__`` guard would run again in the worker."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main
