"""Loading cost on real architectures: TF freeze vs. qviz's GraphDef <-> IR.

    python benchmarks/bench_load.py [--size 224] [--repeat 5] [NET ...]

For each keras.applications net (built offline, ``weights=None``) prints the op
count, TensorFlow's own trace+freeze time, GraphDef -> IR time, IR -> GraphDef
time, and the IR build + round trip as a share of the freeze time.
Targets: GraphDef -> IR <= 50 ms on NASNetMobile; IR build + round trip
<= 10 % of the freeze time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

NETS = ["MobileNetV2", "ResNet50", "EfficientNetB0", "DenseNet121", "NASNetMobile"]


def _best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times), out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("nets", nargs="*", default=NETS)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    import keras
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    from qviz import Graph, load

    print(f"{'net':<16}{'ops':>7}{'freeze s':>10}{'qviz.load s':>12}{'GD->IR ms':>11}"
          f"{'IR->GD ms':>11}{'IR+rt/freeze':>14}")
    for name in args.nets:
        net = getattr(keras.applications, name)
        shape = (args.size, args.size, 3)
        model = net(weights=None, input_shape=shape)

        def tf_freeze():
            fn = tf.function(lambda x: model(x, training=False))
            cf = fn.get_concrete_function(tf.TensorSpec((None, *shape), tf.float32))
            return convert_variables_to_constants_v2(cf).graph.as_graph_def()

        freeze_s, _, graph_def = _best(tf_freeze, 1)
        load_s, _, _ = _best(lambda: load(model), 1)
        to_ir, to_ir_med, graph = _best(lambda: Graph.from_graph_def(graph_def, copy=False), args.repeat)
        to_gd, to_gd_med, _ = _best(graph.to_graph_def, args.repeat)
        share = (to_ir_med + to_gd_med) / freeze_s
        print(f"{name:<16}{len(graph):>7}{freeze_s:>10.2f}{load_s:>12.2f}{to_ir * 1e3:>11.1f}"
              f"{to_gd * 1e3:>11.1f}{share:>13.1%}", flush=True)


if __name__ == "__main__":
    main()
