"""Rewrite-pass speed: fold every BN, then quantize every layer at 8 bits.

    python benchmarks/bench_apply.py [--nets ResNet50 NASNetMobile] [--sizes 10000 100000]

The passes are timed on their own (activation ranges given, so no calibration
runs); calibration and verification, which execute the graph in TensorFlow,
are timed separately on the keras.applications nets (224x224, 8 examples).
Target: passes <= 0.3 s on ResNet50, linear in graph size.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from synthetic import synthetic_graph  # noqa: E402

from qviz.metrics import verify  # noqa: E402
from qviz.passes import LayerBits, QuantizeConfig, fold_batch_norms, quant_points, quantizable_layers, quantize  # noqa: E402
from qviz.passes.calibration import activation_ranges  # noqa: E402


def _fresh(graph):
    """The same graph without cached derived data, so every timing starts cold."""
    return graph.with_nodes(graph.nodes)


def passes(graph, ranges=None):
    t0 = time.perf_counter()
    folded = fold_batch_norms(graph)
    t1 = time.perf_counter()
    config = QuantizeConfig({name: LayerBits(8, 8) for name in quantizable_layers(folded.graph)})
    if ranges is None:
        points, _ = quant_points(folded.graph, config)
        ranges = {p.tensor: (0.0, 6.0) for p in points if p.kind != "weights"}
    t2 = time.perf_counter()
    quantized = quantize(folded.graph, config, ranges=ranges)
    t3 = time.perf_counter()
    return folded, quantized, t1 - t0, t3 - t2


def row(name, graph, extra=""):
    best = None
    for _ in range(3):
        folded, quantized, tf_, tq = passes(_fresh(graph))
        if best is None or tf_ + tq < best[0] + best[1]:
            best = (tf_, tq)
    tf_, tq = best
    print(f"| {name} | {len(graph)} | {tf_ * 1e3:.0f} | {tq * 1e3:.0f} | {(tf_ + tq) * 1e3:.0f} | "
          f"{(tf_ + tq) / len(graph) * 1e6:.1f} | {extra}")
    return folded, quantized


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--nets", nargs="*", default=["ResNet50", "NASNetMobile"])
    ap.add_argument("--sizes", nargs="*", type=int, default=[10_000, 100_000])
    args = ap.parse_args(argv)
    print("| graph | ops | fold ms | quantize ms | passes ms | µs/op | calibration s / verification s |")
    print("|---|---|---|---|---|---|---|")
    for net in args.nets:
        import keras

        import qviz

        model = getattr(keras.applications, net)(weights=None, input_shape=(224, 224, 3))
        graph = qviz.load(model)
        folded, quantized = row(net, graph, "…")
        x = np.random.default_rng(0).uniform(0, 1, (8, 224, 224, 3)).astype(np.float32)
        config = QuantizeConfig({n: LayerBits(8, 8) for n in quantizable_layers(folded.graph)})
        points, _ = quant_points(folded.graph, config)
        t0 = time.perf_counter()
        activation_ranges(folded.graph, [p.tensor for p in points if p.kind != "weights"], [x])
        t1 = time.perf_counter()
        verify(graph, quantized.graph, [x])
        t2 = time.perf_counter()
        print(f"|   ↳ {net} calibration / verification (8 examples) | | | | | | {t1 - t0:.2f} / {t2 - t1:.2f} |")
    for size in args.sizes:
        row(f"synthetic {size // 1000}k", synthetic_graph(size, values=True))


if __name__ == "__main__":
    main()
