"""A sensitivity sweep fanned out over Celery workers: 1 worker against N, same job.

Starts a private ``redis-server`` and a Celery worker with ``--concurrency`` 1, then
N, and times the same sweep through :class:`qviz.app.celery_worker.CeleryRunner`
(split into ``--parts`` parts; each part calibrates again, which is the overhead
one worker pays for the split). Needs ``redis-server`` on the PATH.

    python benchmarks/bench_celery.py [--model mobilenet_v2 | lenet_digits] [--bits 8 4] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(url: str, concurrency: int, log: str) -> subprocess.Popen:
    env = {**os.environ, "REDIS_URL": url, "TF_CPP_MIN_LOG_LEVEL": "3", "C_FORCE_ROOT": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "celery", "-A", "qviz.app.tasks", "worker", "--concurrency",
                             str(concurrency), "--loglevel", "warning"], env=env, stdout=open(log, "w"),
                            stderr=subprocess.STDOUT)
    from qviz.app.tasks import make_celery

    app = make_celery(url)
    end = time.time() + 120
    while len(app.control.ping(timeout=0.5) or []) < 1:
        if time.time() > end or proc.poll() is not None:
            raise SystemExit(f"the Celery worker did not start; see {log}")
    return proc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="mobilenet_v2")
    ap.add_argument("--bits", type=int, nargs="+", default=[8, 4])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--parts", type=int, default=4)
    args = ap.parse_args()

    import qviz
    import qviz.passes
    from qviz.app.celery_worker import CeleryRunner
    from qviz.samples import sample_path

    tmp = tempfile.mkdtemp(prefix="qviz-bench-celery-")
    if args.model == "mobilenet_v2":
        import keras

        path = f"{tmp}/mobilenet_v2.keras"
        keras.applications.MobileNetV2(input_shape=(96, 96, 3), weights=None, classes=10).save(path)
    else:
        path = sample_path(args.model)
    graph = qviz.load(path)
    port = _free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
                              "--bind", "127.0.0.1"], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    print(f"{args.model}: {len(graph)} ops; sweep of {args.bits} bits in {args.parts} parts; "
          f"{os.cpu_count()} CPUs")
    try:
        for n in args.workers:
            worker = _worker(url, n, f"{tmp}/worker{n}.log")
            runner = CeleryRunner(url, fan_out=args.parts)
            try:
                # a first job per child loads TensorFlow and the graph there: not what is timed
                warm = [runner.submit("sweep_part", "k", graph, (8,), [qviz.passes.quantizable_layers(graph)[i]])
                        for i in range(n)]
                for job in warm:
                    job.result(timeout=600)
                t = time.perf_counter()
                swept = runner.submit("sweep", "k", graph, tuple(args.bits)).result(timeout=3600)
                took = time.perf_counter() - t
                print(f"{n} worker(s): {2 * len(swept.layers) * len(swept.bits)} measurements in {took:.1f} s")
            finally:
                runner.close()
                worker.terminate()
                worker.wait(30)
    finally:
        redis.terminate()
        redis.wait(10)


if __name__ == "__main__":
    main()
