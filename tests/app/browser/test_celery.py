"""A shared deployment: with REDIS_URL set, the app's jobs run in Celery workers
through a real Redis (``redis-server``, installed by .ci/run)."""

import os
import shutil
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import qviz
from qviz.passes import LayerBits, Recipe
from qviz.samples import sample_path

from .helpers import needs_browser

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None,
                                reason="needs redis-server (apt-get install redis-server; .ci/run does)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """A private Redis and a Celery worker (prefork, as documented; one child) for this module."""
    port = _free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
                              "--bind", "127.0.0.1"], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    # CI runs as root; Celery refuses pickle as root unless forced (never do this in a deployment).
    env = {**os.environ, "REDIS_URL": url, "TF_CPP_MIN_LOG_LEVEL": "3", "C_FORCE_ROOT": "1"}
    log = tmp_path_factory.mktemp("celery") / "worker.log"
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "qviz.app.tasks", "worker",
                               "--concurrency", "1", "--loglevel", "warning"],
                              env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    from qviz.app.tasks import make_celery

    app = make_celery(url)
    end = time.time() + 60
    while not app.control.ping(timeout=0.5):
        if time.time() > end or worker.poll() is not None:
            raise AssertionError(f"the Celery worker did not start:\n{log.read_text()[-2000:]}")
    yield url
    worker.terminate()
    worker.wait(10)
    redis.terminate()
    redis.wait(10)


def _result_and_progress(fut):
    """The job's result, and every progress it reported while it ran."""
    seen = set()
    while not fut.done():
        seen.add(fut.progress())
        time.sleep(0.05)
    return fut.result(), seen


def test_jobs_run_in_celery_and_match_in_process(redis_url):
    from qviz.analysis.sensitivity import sensitivity
    from qviz.app.celery_worker import CeleryRunner
    from qviz.passes.refold import ranges_for_folds
    from qviz.pipeline import apply, report_for
    from qviz.samples import data_for

    g = qviz.load(sample_path("lenet_digits"))
    recipe = Recipe.default(g, LayerBits(4, 4))
    runner = CeleryRunner(redis_url)
    measured = runner.submit("calibrate", "k", g, None).result(timeout=120)
    ranges = ranges_for_folds(g, measured, recipe.fold_selection(g))
    rep = runner.submit("report", "k", g, recipe.to_json(indent=None), ranges).result(timeout=120)
    data = data_for(g)      # what the workers verify on: the sample's own digits
    here = report_for(g, recipe, apply(g, recipe, report=False, calibration=data.calibration),
                      data.verification, data.labels)
    assert rep.accuracy == here.accuracy and rep.sqnr_db == pytest.approx(here.sqnr_db, abs=0.05)

    fut = runner.submit("sweep", "k", g, (8, 4))
    swept, seen = _result_and_progress(fut)
    assert any(p is not None and 0 < p[0] < p[1] == 16 for p in seen), seen   # 4 layers × 2 × 2 bits
    np.testing.assert_allclose(swept.weight_sqnr, sensitivity(g, bits=(8, 4), **data_for(g).sweep_kwargs()).weight_sqnr,
                               rtol=1e-6)

    blob = runner.submit("qat", str(sample_path("lenet_digits")), recipe.to_json(indent=None), "ema_stats_folding",
                         None)
    assert blob.result(timeout=120)[:2] == b"PK"   # a .keras archive
    bad = runner.submit("qat", "/nonexistent/model.pb", recipe.to_json(indent=None), "ema_stats_folding", None)
    with pytest.raises(Exception, match="export-qat needs a Keras model"):
        bad.result(timeout=60)
    runner.close()


def test_a_sweep_and_a_search_fan_out_and_merge_to_what_one_task_gives(redis_url):
    from qviz.analysis.sensitivity import sensitivity
    from qviz.app import worker
    from qviz.app.celery_worker import CeleryRunner
    from qviz.samples import data_for

    g = qviz.load(sample_path("lenet_digits"))
    # (a key of its own: worker.pareto below runs here, where another test's graph may be under "k")
    k = f"fan-out-{id(g)}"
    fanned, single = CeleryRunner(redis_url, fan_out=3), CeleryRunner(redis_url, fan_out=1)
    fut = fanned.submit("sweep", k, g, (8, 2))
    swept, seen = _result_and_progress(fut)
    here = sensitivity(g, bits=(8, 2), **data_for(g).sweep_kwargs())
    assert swept.layers == here.layers      # the parts' rows back in the graph's order
    np.testing.assert_allclose(swept.weight_sqnr, here.weight_sqnr, rtol=1e-6)
    np.testing.assert_allclose(swept.activation_accuracy, here.activation_accuracy)
    assert {p[1] for p in seen if p} == {16}    # one progress over every part

    front = fanned.submit("pareto", k, g, swept, "bops").result(timeout=180)
    one = single.submit("pareto", k, g, swept, "bops").result(timeout=180)
    local = worker.pareto(k, g, here, "bops")
    assert [p.recipe for p in front.points] == [p.recipe for p in one.points] == [p.recipe for p in local.points]
    assert [p.bops for p in front.points] == [p.bops for p in local.points] and front.float_bops == local.float_bops
    np.testing.assert_allclose([p.measured_sqnr_db for p in front.points],
                               [p.measured_sqnr_db for p in local.points], rtol=1e-6)

    doomed = fanned.submit("sweep", k, g, (8, 6, 4, 3, 2))
    assert doomed.cancel() and len(doomed.handles) == 3       # every part revoked
    assert fanned.submit("report", k, g, Recipe.default(g).to_json(indent=None), None).result(timeout=120)
    fanned.close()
    single.close()


@needs_browser
def test_app_verifies_through_celery(redis_url, dash_duo, monkeypatch):
    from .helpers import set_cell, start_app, wait_for

    monkeypatch.setenv("REDIS_URL", redis_url)
    app = start_app(dash_duo)
    assert type(app.qviz_sessions.get(next(iter(app.qviz_sessions._sessions))).runner).__name__ == "CeleryRunner"
    set_cell(dash_duo, "conv1", "fold", True)
    set_cell(dash_duo, "conv2", "weight_bits", "4")
    wait_for(lambda: "test accuracy" in dash_duo.find_element("#verify-panel").text, timeout=120,
          what="verification from the Celery worker")
