"""Jobs: what a runner promises the app — progress, cancelling what waits,
one-line failures, and a worker process that dies does not take the app with it."""

import os
import signal
import time

import pytest

import qviz
from qviz.app.jobs import Job, JobState, JobStopped, ProcessRunner, ThreadRunner, poll
from qviz.passes import LayerBits, Recipe


def _wait(cond, timeout=120):
    end = time.time() + timeout
    while not cond():
        assert time.time() < end, "timed out"
        time.sleep(0.05)


def test_a_thread_job_reports_progress_and_its_failure():
    def count(n, progress):
        for i in range(n):
            progress(i + 1, n)
        if n > 2:
            raise ValueError(f"{n} is too many")
        return n

    runner = ThreadRunner(threads=1, functions={"count": count})
    ok = Job("count", runner.submit("count", 2))
    assert ok.handle.result(timeout=10) == 2 and ok.progress() == (2, 2) and ok.state is JobState.DONE
    bad = Job("count", runner.submit("count", 3))
    _wait(bad.handle.done)
    assert bad.state is JobState.FAILED
    # (not a qviz error: a bug, its traceback in the log and a reference on the page)
    assert poll(bad, running="…", done=str, failed=lambda e: f"failed: {e}").startswith("failed: internal error (ValueError)")
    runner.close()


def test_a_cancelled_job_that_waited_never_runs():
    import threading

    release, ran = threading.Event(), []

    def block(name, progress):
        release.wait(10)
        ran.append(name)
        return name

    runner = ThreadRunner(threads=1, functions={"block": block})
    first, second = runner.submit("block", "first"), runner.submit("block", "second")
    assert second.cancel() and Job("block", second).state is JobState.CANCELLED
    release.set()
    assert first.result(timeout=10) == "first"
    time.sleep(0.2)
    assert ran == ["first"]
    runner.close()


def test_a_running_thread_job_stops_at_its_next_progress_report():
    import threading

    go_on, steps = threading.Event(), []

    def count(n, progress):
        for i in range(n):
            steps.append(i)
            progress(i + 1, n)
            go_on.wait(10)
        return n

    runner = ThreadRunner(threads=1, functions={"count": count})
    job = Job("count", runner.submit("count", 100))
    _wait(lambda: job.progress() == (1, 100))
    assert job.stop() and job.state is JobState.RUNNING   # it stops at its next report
    go_on.set()
    with pytest.raises(JobStopped, match="stopped after 2 of 100"):
        job.handle.result(timeout=10)
    assert job.state is JobState.CANCELLED and len(steps) == 2
    assert not job.stop()   # nothing left to stop
    runner.close()


def test_a_stopped_sweep_runs_again_and_a_sweep_of_other_widths_stops_the_running_one(samples):
    import threading

    from qviz.app.session import Session

    runs = []   # (bits, the event that lets that run go on past each measurement)

    def sweep(key, graph, bits, checkpoint, progress):
        go_on = threading.Event()
        runs.append((bits, go_on))
        for i in range(50):
            progress(i + 1, 50)
            go_on.wait(10)
        return bits

    runner = ThreadRunner(threads=1, functions={"sweep": sweep})
    s = Session(qviz.load(samples["lenet_digits"]), "lenet", runner=runner)
    first = s.start_sweep([8, 4])
    _wait(lambda: first.progress() is not None)
    assert s.start_sweep([8, 4]) is first   # the same widths, still running: the same sweep
    assert first.stop() and s.start_sweep([8, 4]) is not first   # stopping: run again, it runs again
    second = s.jobs["sweep"]
    runs[0][1].set()
    _wait(lambda: first.state is JobState.CANCELLED and second.progress() is not None)
    third = s.start_sweep([8])   # other widths: the running sweep is stopped, not queued behind it
    runs[1][1].set()
    _wait(lambda: len(runs) == 3)
    runs[2][1].set()
    assert third.handle.result(timeout=10) == (8,)
    assert second.state is JobState.CANCELLED and second.progress() == (2, 50)
    assert [bits for bits, _ in runs] == [(8, 4), (8, 4), (8,)]
    runner.close()


def test_a_sweep_run_again_makes_only_the_measurements_it_does_not_have(samples, monkeypatch):
    """A page's sweeps share what they measured: run again (after a stop, or for other
    widths), a sweep makes only the measurements it lacks, and the plan says how many it has."""
    import qviz.pipeline
    from qviz.app.services import sweep_plan
    from qviz.app.session import Session

    made = []   # one per measurement (each applies its one-layer recipe)
    apply = qviz.pipeline.apply
    monkeypatch.setattr(qviz.pipeline, "apply", lambda *a, **k: made.append(1) or apply(*a, **k))
    runner = ThreadRunner(threads=1)
    s = Session(qviz.load(samples["lenet_digits"]), "lenet", runner=runner)
    try:
        assert sweep_plan(s, [8]).startswith("8 measurements: 4 layers × 1 width,")
        first = s.start_sweep([8]).handle.result(timeout=120)
        assert len(made) == 8
        assert sweep_plan(s, [8, 4]).startswith("16 measurements (8 made already): 4 layers × 2 widths,")
        both = s.start_sweep([8, 4]).handle.result(timeout=120)
        assert len(made) == 16 and both.bits == (8, 4)
        assert (both.weight_sqnr[:, 0] == first.weight_sqnr[:, 0]).all()
        assert (both.weight_sqnr[:, 0] > both.weight_sqnr[:, 1]).all()   # and the new column measured
        kept = s.work_dir
    finally:
        s.close()
        runner.close()
    assert not kept.exists()   # the measurements go with the session


def test_a_sweep_in_the_worker_process_stops_and_the_worker_goes_on(samples):
    g = qviz.load(samples["lenet_digits"])
    runner = ProcessRunner()   # (not started: only the sweeps' lane starts its process, importing TensorFlow)
    try:
        job = Job("sweep", runner.submit("sweep", "k", g, (8, 6, 4, 3, 2)))   # 40 measurements
        _wait(lambda: job.progress() is not None)
        assert job.stop()
        with pytest.raises(JobStopped):
            job.handle.result(timeout=120)
        done, total = job.progress()
        assert job.state is JobState.CANCELLED and done < total == 40
        # the same worker answers the next job (a stop that came too late is dropped there)
        assert runner.submit("sweep", "k", g, (8,)).result(timeout=120).layers == ("conv1", "conv2", "fc1", "logits")
    finally:
        runner.close()


def test_the_worker_process_runs_jobs_reports_progress_and_survives_being_killed(samples):
    g = qviz.load(samples["lenet_digits"])
    recipe = Recipe.default(g, LayerBits(8, 8))
    runner = ProcessRunner().start()
    try:
        sweep = runner.submit("sweep", "k", g, (8,))
        waiting = runner.submit("report", "k", g, Recipe().to_json(indent=None), None)   # behind the sweep
        assert waiting.cancel()
        seen = set()
        while not sweep.done():
            seen.add(sweep.progress())
            time.sleep(0.02)
        assert sweep.result().layers == ("conv1", "conv2", "fc1", "logits")
        assert any(p is not None and 0 < p[0] < p[1] == 8 for p in seen), seen
        # a job that fails in the worker: its own error, one line
        with pytest.raises(ValueError, match="no batch norm after it"):
            runner.submit("explain_fold", "k", g, "logits").result(timeout=120)
        # the worker process dies mid-job (killed after the first of 24 measurements):
        # that job fails with one line, and the next job gets a new process
        doomed = runner.submit("sweep", "k", g, (8, 4, 2))
        _wait(lambda: doomed.progress() is not None)
        lane = runner._lanes["background"]
        os.kill(lane._process.pid, signal.SIGKILL)
        with pytest.raises(RuntimeError, match="worker process stopped during the sweep job"):
            doomed.result(timeout=60)
        rep = runner.submit("report", "k", g, recipe.to_json(indent=None), None).result(timeout=120)
        assert rep.examples > 0
    finally:
        runner.close()


def test_a_worker_is_sent_a_models_graph_once_and_again_when_it_let_it_go(samples, monkeypatch):
    """Unpickling MobileNetV2's graph cost a worker 0.24 s a job: later jobs of a model name its
    graph by key. A worker that no longer keeps it (it keeps a few) asks for it again."""
    from qviz.app import jobs

    g = qviz.load(samples["lenet_digits"])
    recipe = Recipe.default(g, LayerBits(8, 8)).to_json(indent=None)
    sent = []
    real = jobs._by_reference
    monkeypatch.setattr(jobs, "_by_reference", lambda args: sent.append(args[0]) or real(args))
    runner = ProcessRunner()   # (not started: only the reports' lane starts its process)
    try:
        first = runner.submit("report", "k", g, recipe, None).result(timeout=120)
        assert sent == [] and "k" in runner._lanes["background"]._graphs_sent
        again = runner.submit("report", "k", g, recipe, None).result(timeout=120)
        assert sent == ["k"] and again.sqnr_db == first.sqnr_db
        # a key the worker never kept (as one it let go): named, refused, sent whole, answered
        runner._lanes["background"]._graphs_sent.add("gone")
        other = runner.submit("report", "gone", g, recipe, None).result(timeout=120)
        assert sent == ["k", "gone"] and other.sqnr_db == first.sqnr_db
    finally:
        runner.close()


def test_a_failed_job_is_one_line_on_the_page_and_a_traceback_in_the_log(caplog):
    """A job's failure that is not qviz's own error (a bug) reads as one line naming a
    reference, its traceback logged once however often the page reads it; qviz's own
    error reads as itself."""
    import logging
    from concurrent.futures import Future

    from qviz.app.errors import failure_of
    from qviz.app.jobs import Job, poll
    from qviz.runtime import RunError

    bug = Future()
    bug.set_exception(IndexError("list index out of range"))
    with caplog.at_level(logging.WARNING, logger="qviz.app"):
        lines = {failure_of(bug, "the verification") for _ in range(3)}
    (line,) = lines
    assert line.startswith("internal error (IndexError)") and "list index" not in line
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == 1 and line in logged[0].getMessage()
    theirs = Future()
    theirs.set_exception(RunError("op type 'Bogus' (node 'x') is not known to TensorFlow"))
    answer = poll(Job("report", theirs), running=None, done=lambda r: r, failed=lambda line: ("failed", line))
    assert answer == ("failed", "op type 'Bogus' (node 'x') is not known to TensorFlow")


def test_an_open_model_and_tensorflow_are_left_out_of_pythons_full_collections():
    """A full collection of the web process's ~0.5 M objects held the GIL ~0.9 s in the middle
    of a redraw: after an open, what is alive is frozen (and what was garbage collected)."""
    import subprocess
    import sys

    script = "\n".join([
        "import gc, weakref",
        "from qviz.app.worker import open_model",
        "from qviz.samples import sample_path",
        "class Cycle: pass",
        "a = Cycle(); a.me = a; gone = weakref.ref(a); del a",
        "gc.disable()   # (the open's own collection alone may take it)",
        "graph = open_model(sample_path('lenet_digits'), 'lenet_digits')",
        "print(gone() is None, gc.get_freeze_count() > 10_000, gc.get_count()[0] < 1000)",
    ])
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}).stdout
    assert out.split()[-3:] == ["True", "True", "True"], out
