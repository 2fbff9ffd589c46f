"""Mixed precision on a real architecture: the sensitivity sweep, the greedy search and
each recipe measured, on MobileNetV2 (96×96, built offline with random weights, its
batch norms set to the statistics they see, fixed-seed noise as data) or a bundled
sample. Prints how long each part took and
the size-vs-SQNR front.

    python benchmarks/bench_pareto.py [--model mobilenet_v2 | lenet_digits] [--bits 8 4] [--trade size|bit-ops]
        [--max-recipes N]

``--max-recipes`` measures only the first N recipes of the chain (the widest),
for a quick look; the default measures all of them.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _mobilenet_v2(path: str) -> str:
    import keras
    import numpy as np

    from qviz.samples import normalize_batch_norms

    # logits, not softmax (a random net's softmax is nearly flat whatever its weights' bits), and
    # batch norms set to the statistics they see: an untrained net otherwise loses its signal
    model = keras.applications.MobileNetV2(input_shape=(96, 96, 3), weights=None, classes=10,
                                           classifier_activation=None)
    normalize_batch_norms(model, np.random.default_rng(0).normal(size=(32, 96, 96, 3)).astype("float32"))
    model.save(path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="mobilenet_v2", help="mobilenet_v2, or a bundled sample's name")
    ap.add_argument("--bits", type=int, nargs="+", default=[8, 4])
    ap.add_argument("--trade", choices=("size", "bit-ops"), default="size")
    ap.add_argument("--max-recipes", type=int, default=None)
    args = ap.parse_args()

    import qviz
    from qviz.analysis.budget import layer_macs
    from qviz.analysis.mixed_precision import measure_front, search, weight_counts
    from qviz.analysis.sensitivity import sensitivity
    from qviz.runtime import tensor_shapes
    from qviz.samples import data_for, sample_path

    with tempfile.TemporaryDirectory() as tmp:
        path = _mobilenet_v2(f"{tmp}/mobilenet_v2.keras") if args.model == "mobilenet_v2" else sample_path(args.model)
        t = time.perf_counter()
        graph = qviz.load(path)
        print(f"{args.model}: {len(graph)} ops, {len(graph.layers)} layers; loaded in {time.perf_counter() - t:.1f} s")
    data = data_for(graph)
    t = time.perf_counter()
    sens = sensitivity(graph, bits=tuple(args.bits), **data.sweep_kwargs())
    sweep_s = time.perf_counter() - t
    print(f"sweep of {list(args.bits)} bits: {2 * len(sens.layers) * len(sens.bits)} measurements in {sweep_s:.1f} s")
    shapes = tensor_shapes(graph)
    t = time.perf_counter()
    chain = search(sens, weight_counts(graph), macs=layer_macs(graph, shapes) if args.trade == "bit-ops" else None)
    print(f"greedy search ({args.trade}): {len(chain.points)} recipes in {time.perf_counter() - t:.2f} s")
    if args.max_recipes:
        chain = dataclasses.replace(chain, points=chain.points[:args.max_recipes])
    t = time.perf_counter()
    measured = measure_front(graph, chain, **data.sweep_kwargs(), shapes=shapes)
    measure_s = time.perf_counter() - t
    print(f"measured {len(measured.points)} recipes in {measure_s:.1f} s "
          f"({measure_s / max(len(measured.points), 1):.2f} s each)")
    front = measured.front()
    print(f"on the front: {len(front)} of them")
    step = max(1, len(measured.points) // 12)
    print(measured.format().splitlines()[0])
    for line in measured.format().splitlines()[1::step]:
        print(line[:110])
    print(f"total: {sweep_s + measure_s:.1f} s")


if __name__ == "__main__":
    main()
