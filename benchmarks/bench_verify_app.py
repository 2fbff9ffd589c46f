"""Verification as the app's page waits for it: a fold toggle on MobileNetV2 (224×224,
random weights, all 8-bit, every batch norm folded) → its report from the worker
processes (the report in the background lane, with the float graph's calibration
made at opening carried to the toggle's folds, as :class:`qviz.app.session.Session`
sends it), what
``benchmarks/bench_verify.py`` times in one process. The page polls every 300 ms on
top of this.

    python benchmarks/bench_verify_app.py [--toggles 6]

Target (issue 16): the numbers within 2 s of the change on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--toggles", type=int, default=6)
    args = ap.parse_args()

    import keras

    import qviz
    from qviz.app.jobs import ProcessRunner
    from qviz.app.session import Session
    from qviz.passes import Recipe, fold_candidates

    graph = qviz.load(keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3)))
    runner = ProcessRunner()
    session = Session(graph, "MobileNetV2", runner=runner)
    try:
        start = Recipe.default(graph)
        folds = [c.layer for c in fold_candidates(graph) if c.foldable]
        t0 = time.perf_counter()
        session.report_future(start).result()
        print(f"the opening's report (workers started, float model traced): {time.perf_counter() - t0:.2f} s")
        times = []
        for i in range(args.toggles):
            recipe = start.with_fold(folds[i], False)
            t0 = time.perf_counter()
            report = session.report_future(recipe).result()
            times.append(time.perf_counter() - t0)
            # (untrained weights: the softmax is near 1/1000 everywhere, below the 8-bit output's
            # step of 1/256, so the SQNR is about 0 dB on the device too: a timing, not a quality)
            print(f"toggle {i + 1}: numbers in {times[-1]:.2f} s (SQNR {report.sqnr_db:.1f} dB, untrained weights)")
        print(f"toggle → numbers: median {statistics.median(times):.2f} s (min {min(times):.2f}, "
              f"max {max(times):.2f}, n={len(times)})")
    finally:
        session.close()
        runner.close()


if __name__ == "__main__":
    main()
