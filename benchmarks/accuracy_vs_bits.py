"""Digits test accuracy of the lenet_digits sample at several weight/activation bit widths.

    python benchmarks/accuracy_vs_bits.py

Every batch norm folded; every layer quantized (per-tensor, narrow-range weights,
asymmetric ranges, min/max calibration on the sample's calibration split);
accuracy on the 450-image test split. This is the README's table.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import qviz  # noqa: E402
from qviz.samples import data_for, sample_path  # noqa: E402

SETTINGS = [(8, 8), (6, 6), (4, 8), (4, 4), (3, 3), (2, 2)]


def main():
    graph = qviz.load(sample_path("lenet_digits"))
    data = data_for(graph).apply_kwargs()   # the sample's own splits and labels (qviz.apply's default is noise)
    print("| weights / activations | test accuracy | output SQNR dB |")
    print("|---|---|---|")
    float_result = qviz.apply(graph, qviz.Recipe(quantize_default=None), **data)
    print(f"| float (BN folded) | {float_result.report.accuracy:.2%} | — |")
    for per_channel in (False, True):
        for w, a in SETTINGS:
            recipe = qviz.Recipe(quantize_default=qviz.LayerBits(w, a), per_channel=per_channel)
            rep = qviz.apply(graph, recipe, **data).report
            tag = " per-channel" if per_channel else ""
            print(f"| {w} / {a}{tag} | {rep.accuracy:.2%} | {rep.sqnr_db:.1f} |")


if __name__ == "__main__":
    main()
