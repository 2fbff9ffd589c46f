"""Verification after an edit: the report the app's Verification panel shows, for a
fold toggle on MobileNetV2 (224×224, random weights, all 8-bit), on its 16 noise
examples, as the worker computes it (one TensorFlow thread per worker on a 2-core
machine). The rewrite reads the float graph's one calibration, carried to the
toggle's folds (as the app and ``qviz apply`` do since stop 45), and, beside it, the
toggle's own calibration of its folded graph (stops 39–44); the report runs both
graphs in TensorFlow.

    python benchmarks/bench_verify.py [--toggles 5] [--threads 1]

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
    ap.add_argument("--toggles", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    import keras

    import qviz
    from qviz.passes import Recipe, fold_batch_norms, fold_candidates
    from qviz.passes.calibration import activation_ranges
    from qviz.passes.refold import calibration_tensors, float_ranges, ranges_for_folds
    from qviz.pipeline import apply, report_for
    from qviz.runtime import limit_threads
    from qviz.samples import data_for

    limit_threads(args.threads)
    graph = qviz.load(keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3)))
    data = data_for(graph)
    start = Recipe.default(graph)
    folds = [c.layer for c in fold_candidates(graph) if c.foldable]
    # the calibration the app's worker made when the model opened (services.warm_up)
    measured = float_ranges(graph, data.calibration)
    paths = {"the float graph's calibration (now)": [], "its own calibration (stops 39-44)": []}
    for i in range(args.toggles + 1):
        recipe = start.with_fold(folds[i], False)
        toggled = [f for f in folds if f != folds[i]]
        for path, times in paths.items():
            t0 = time.perf_counter()
            if path.startswith("its own"):   # the toggle's folded graph calibrated
                refolded = fold_batch_norms(graph, layers=toggled).graph
                ranges = activation_ranges(refolded, calibration_tensors(refolded), data.calibration)
            else:   # the opening's calibration of the float graph, carried to the folds
                ranges = ranges_for_folds(graph, measured, toggled)
            result = apply(graph, recipe, ranges=ranges, calibration=lambda: data.calibration, report=False)
            t1 = time.perf_counter()
            report = report_for(graph, recipe, result, data.verification, data.labels)
            t2 = time.perf_counter()
            label = "first (traces the float model)" if i == 0 else f"toggle {i}"
            print(f"{label}, {path}: ranges + rewrite {t1 - t0:.2f} s, report {t2 - t1:.2f} s, "
                  f"SQNR {report.sqnr_db:.2f} dB")
            if i:
                times.append(t2 - t0)
    for path, times in paths.items():
        print(f"toggle → numbers, {path}: median {statistics.median(times):.2f} s (min {min(times):.2f}, "
              f"max {max(times):.2f}, n={len(times)}), {args.threads} TensorFlow thread(s)")

if __name__ == "__main__":
    main()
