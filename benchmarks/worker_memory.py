"""How much memory the app's worker processes hold as a user edits: each lane's
resident set after each job, the jobs a page sends (a calibration per fold
selection, a verification report and the quantizers' samples per recipe).

    python benchmarks/worker_memory.py MODEL.keras [--edits 12]
"""

from __future__ import annotations

import argparse
import random
import sys
import time


def _rss_mb(pid: int) -> float:
    import psutil

    try:
        return psutil.Process(pid).memory_info().rss / 2**20
    except psutil.Error:
        return float("nan")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--edits", type=int, default=12)
    args = ap.parse_args(argv)
    import qviz
    from qviz.app.jobs import ProcessRunner
    from qviz.passes import Recipe
    from qviz.passes.fold_batch_norms import fold_candidates

    graph = qviz.load(args.model)
    layers = [c.layer for c in fold_candidates(graph)]
    runner = ProcessRunner().start()
    lanes = runner._lanes   # (a benchmark looks inside: which process is each lane's now)
    rng = random.Random(0)
    print(f"{args.model}: {len(layers)} batch norms")
    print(f"{'edit':>4} {'job':>10} {'s':>6} {'interactive MB':>15} {'background MB':>14} pids")
    try:
        for edit in range(args.edits):
            folds = tuple(sorted(rng.sample(layers, rng.randrange(len(layers) + 1))))
            bits = rng.choice([8, 6, 4])
            recipe = Recipe.from_dict({"fold": {"default": False, "layers": {n: True for n in folds}},
                                       "quantize": {"default": {"weight_bits": bits, "activation_bits": 8}}})
            key = recipe.to_json(indent=None)
            ranges = None
            for kind in ("calibrate", "report", "samples"):
                job_args = ("bench", graph, folds) if kind == "calibrate" else ("bench", graph, key, ranges)
                started = time.monotonic()
                answer = runner.submit(kind, *job_args).result()
                seconds = time.monotonic() - started
                ranges = answer if kind == "calibrate" else ranges
                pids = [lane._process.pid if lane._process is not None else None for lane in lanes.values()]
                mbs = [_rss_mb(p) if p else float("nan") for p in pids]
                print(f"{edit:>4} {kind:>10} {seconds:>6.2f} {mbs[0]:>15.0f} {mbs[1]:>14.0f} {pids}")
                sys.stdout.flush()
    finally:
        runner.close()


if __name__ == "__main__":
    main()
