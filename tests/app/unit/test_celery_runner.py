"""The Celery runner's poller, with stand-in task handles (no Redis): whenever a
task finishes, the job gets its result, and progress never reads a result."""

import pytest

pytest.importorskip("celery")

from qviz.app.celery_worker import CeleryRunner, _CeleryFuture  # noqa: E402


class _Backend:
    """A task's record, which says PROGRESS for its first ``reads`` reads and then
    SUCCESS with a result that is not a progress dict."""

    def __init__(self, reads: int, result):
        self.reads, self.result, self.count = reads, result, 0

    def get_task_meta(self, task_id):
        self.count += 1
        if self.count <= self.reads:
            return {"status": "PROGRESS", "result": {"done": 3, "total": 8}}
        return {"status": "SUCCESS", "result": self.result}


class _Handle:
    """The parts of celery's AsyncResult the runner uses, each a read of the record."""

    id = "task"

    def __init__(self, backend: _Backend):
        self.backend = backend

    def _meta(self):
        return self.backend.get_task_meta(self.id)

    @property
    def state(self):
        return self._meta()["status"]

    @property
    def info(self):
        return self._meta()["result"]

    def ready(self):
        return self.state == "SUCCESS"

    def failed(self):
        return False

    def get(self, **_):
        return self.info

    def revoke(self):
        pass


@pytest.mark.parametrize("reads", range(6))
def test_a_task_that_finishes_while_its_progress_is_read_gives_its_result(reads):
    runner = CeleryRunner("redis://127.0.0.1:1/0", fan_out=1)    # (never connects: no task is sent)
    fut = _CeleryFuture()
    result = object()
    fut.handles = [_Handle(_Backend(reads, result))]
    seen = set()
    try:
        for _ in range(10):
            runner._step(fut, None)
            seen.add(fut.progress())
            if fut.done():
                break
        assert fut.result(timeout=0) is result
        assert seen <= {None, (3, 8)}
    finally:
        runner.close()
