"""Post-training quantization vs quantization-aware training on lenet_digits.

For each recipe: the digits test accuracy of the float model, of ``qviz.apply``
(PTQ), and of the ``export-qat`` model after 5 epochs of fine-tuning on the
digits training split (Adam, cosine decay from 1e-3, batch 32; batch norms
folded with ``ema_stats_folding``, moving statistics from epoch 2 on), over a
few seeds. Prints a Markdown table (the README's).

    python benchmarks/qat_digits.py [--seeds 4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import qviz  # noqa: E402
from qviz.qat import export_qat  # noqa: E402
from qviz.samples import data_for, digits_split, sample_path  # noqa: E402


def main() -> None:
    import keras

    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=5)
    args = ap.parse_args()
    x_train, x_test, y_train, y_test = digits_split()
    path = sample_path("lenet_digits")
    g = qviz.load(path)

    def acc(logits):
        return 100 * float((np.asarray(logits).argmax(-1) == y_test).mean())

    float_acc = acc(qviz.run(g, x_test)[0])
    # the sample's own calibration split, as the app and the CLI take it (the library's
    # default is noise: N(0, 1) for pixels in [0, 1] leaves a 3-bit input two useful levels)
    calibration = data_for(g).calibration
    recipes = {
        "4/4": qviz.Recipe.default(g, qviz.LayerBits(4, 4)),
        "3/3, logits 8/8": qviz.Recipe.default(g, qviz.LayerBits(3, 3)).with_bits("logits", qviz.LayerBits(8, 8)),
        "3/3": qviz.Recipe.default(g, qviz.LayerBits(3, 3)),
        "2/2": qviz.Recipe.default(g, qviz.LayerBits(2, 2)),
    }
    steps = int(np.ceil(len(x_train) / 32))
    print(f"float: {float_acc:.2f} %  (digits test split, {len(y_test)} examples)\n")
    print("| bits w/a | PTQ | QAT, 5 epochs (min / median / max over seeds) | within 2 points of float |")
    print("|---|---|---|---|")
    for name, recipe in recipes.items():
        ptq = acc(qviz.run(qviz.apply(g, recipe, calibration=calibration, report=False).graph, x_test)[0])
        results, t0 = [], time.perf_counter()
        for seed in range(args.seeds):
            keras.utils.set_random_seed(seed)
            qat = export_qat(path, recipe, freeze_bn_delay=2 * steps, calibration=calibration)
            qat.compile(optimizer=keras.optimizers.Adam(
                keras.optimizers.schedules.CosineDecay(1e-3, args.epochs * steps)),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            qat.fit(x_train, y_train, epochs=args.epochs, batch_size=32, verbose=0)
            results.append(acc(qat.predict(x_test, verbose=0)))
        per_run = (time.perf_counter() - t0) / args.seeds
        ok = sum(r >= float_acc - 2 for r in results)
        print(f"| {name} | {ptq:.2f} % | {min(results):.2f} / {statistics.median(results):.2f} / "
              f"{max(results):.2f} % | {ok} of {args.seeds} seeds ({per_run:.1f} s per run) |", flush=True)


if __name__ == "__main__":
    main()
