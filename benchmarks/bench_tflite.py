"""qviz's simulation against TensorFlow Lite, per model and recipe: the README's device table.

    python benchmarks/bench_tflite.py [--no-zoo]

For each model (the four samples, and MobileNetV2 96×96 with 10 classes and
batch norms normalized on its inputs unless --no-zoo) and recipe, the recipe's graph is converted with
TF's converter and run in TFLite's interpreter on the verification data
(lenet_digits: its 450 test digits; the others: 64 fixed-seed inputs). Printed:
convert time; each integer op against qviz's given the device's own inputs
(the worst op's fraction within 1 LSB); the outputs within 1 LSB of qviz's,
run from the model input; prediction agreement; output
SQNR against float of qviz's simulation, of TFLite running qviz's recipe, and
of TFLite's own post-training quantization (full int8, calibrated on the same
data qviz calibrates on); digits accuracy where there are labels.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

import qviz  # noqa: E402
from qviz.metrics import sqnr_db  # noqa: E402
from qviz.exporters import save_saved_model  # noqa: E402
from qviz.exporters.tflite import _interpreter, _run_device, compare_with_device, convert  # noqa: E402
from qviz.samples import data_for, normalize_batch_norms, sample_path  # noqa: E402


def tflite_own_ptq(graph, calibration):
    """TFLite's post-training full-integer quantization of the float graph."""
    import tensorflow as tf

    with tempfile.TemporaryDirectory() as tmp:
        save_saved_model(graph, Path(tmp) / "m")
        conv = tf.lite.TFLiteConverter.from_saved_model(str(Path(tmp) / "m"))
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: ([x[i:i + 1]] for x in calibration[:1] for i in range(len(x)))
        return conv.convert()


def models(zoo: bool):
    for name in ("lenet_digits", "mobilenet_block", "resnet_block", "fused_bn_tf_keras"):
        g = qviz.load(sample_path(name))
        if name == "lenet_digits":
            data = data_for(g)
            yield name, g, data.verification[0], data.labels
        else:
            shape = tuple(g.producer(g.inputs[0]).attrs["shape"])[1:]
            yield name, g, np.random.default_rng(1).standard_normal((64,) + shape).astype(np.float32), None
    if zoo:
        import keras

        # 10 classes: with 1000 near-uniform probabilities, int8 softmax (step 1/256) rounds all to 0
        model = keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3), classes=10)
        x = np.random.default_rng(1).uniform(-1, 1, (64, 96, 96, 3)).astype(np.float32)
        normalize_batch_norms(model, x[:32])   # random statistics would make the output constant
        yield "MobileNetV2 96×96, 10 classes", qviz.load(model), x, None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-zoo", action="store_true")
    args = parser.parse_args()
    print("| model | recipe | convert s | integer ops within 1 LSB, given the device's inputs | outputs within 1 LSB "
          "| agreement | SQNR qviz | SQNR TFLite (qviz recipe) | SQNR TFLite own PTQ "
          "| accuracy float / qviz / TFLite / TFLite PTQ |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, g, x, labels in models(not args.no_zoo):
        calibration = list(data_for(g).calibration)
        ref = qviz.run(g, x)[0]
        ptq_blob = tflite_own_ptq(g, calibration)
        it = _interpreter(ptq_blob, preserve=False)
        ptq = _run_device(it, g, [x])[0]
        for tag, recipe in (("8/8", qviz.Recipe.default(g)),
                            ("8/8 per-channel", replace(qviz.Recipe.default(g), per_channel=True)),
                            ("4/8", qviz.Recipe.default(g, qviz.LayerBits(4, 8)))):
            result = qviz.apply(g, recipe, calibration=calibration, report=False)
            start = time.perf_counter()
            blob = convert(result.graph)
            seconds = time.perf_counter() - start
            d = compare_with_device(blob, result.graph, g, x, per_layer=True)
            ops = f"{len(d.layers)} ops, worst {min(t.within_1_lsb for t in d.layers):.1%}"
            acc = "—"
            if labels is not None:
                sim = qviz.run(result.graph, x)[0]
                dev = _run_device(_interpreter(blob, preserve=False), result.graph, [x])[0]
                acc = " / ".join(f"{np.mean(np.argmax(v, -1) == labels):.1%}" for v in (ref, sim, dev, ptq))
            within = "—" if d.within_1_lsb is None else f"{d.within_1_lsb:.1%} (max {d.max_lsb:.0f})"
            agree = "—" if d.agreement is None else f"{d.agreement:.1%}"
            print(f"| {name} | {tag} | {seconds:.1f} | {ops} | {within} | {agree} | {d.sqnr_qviz_db:.1f} | "
                  f"{d.sqnr_device_db:.1f} | {sqnr_db(ptq, ref):.1f} | {acc} |", flush=True)


if __name__ == "__main__":
    main()
