"""What an edit costs the server before the browser draws: a weight-width change and a
fold toggle on MobileNetV2 (224×224, random weights), stage by stage, as the app's draw
callback runs them (the session's caches as in the app; the calibration job done).

    python benchmarks/bench_edit.py [--edits 8]

A fold toggle reads its ranges off the last calibration (``qviz.passes.refold``); the
calibration it used to wait for is timed beside it.

Stages (ms): the rewrite (``qviz.apply``'s passes with the calibrated ranges), the
layout, hover lines, TFLite flags, bit badges, the plotly figure, its JSON, the
cost line. Side by side in the same run: the rewrite handed its calibration data
eagerly (as before) and lazily (made only if a range is missing).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

STAGES = ("rewrite", "layout", "hover", "flags", "badges", "figure", "json", "cost")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edits", type=int, default=8)
    args = ap.parse_args()

    import keras

    import qviz
    from qviz.app import services
    from qviz.app.services import ViewChoice
    from qviz.app.session import Session
    from qviz.passes import LayerBits, fold_candidates, quantizable_layers
    from qviz.render import graph_figure

    graph = qviz.load(keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3)))
    session = Session(graph, "MobileNetV2")
    base = qviz.Recipe.default(graph)
    session.ranges_future(base).result()      # the calibration job, done (as after opening)
    choice = ViewChoice()

    def draw(recipe) -> list[float]:
        marks = [time.perf_counter()]
        shown, result = services.shown(session, recipe, choice)
        marks.append(time.perf_counter())
        view = services.draw_view(session, recipe, choice)
        marks.append(time.perf_counter())
        hover = services.hover_lines(session, shown, view.graph, recipe, services.hover_shapes(graph, shown))
        marks.append(time.perf_counter())
        flags = services.device_flags(session, view.graph, recipe, hover)
        marks.append(time.perf_counter())
        badges = services.bit_badges(session, view.graph, recipe)
        marks.append(time.perf_counter())
        fig = graph_figure(view.graph, view.pos, routes=view.routes, hover=hover, flags=flags, badges=badges,
                           first_view=True)
        marks.append(time.perf_counter())
        fig.to_json()
        marks.append(time.perf_counter())
        services.cost_line(session, result.graph)
        marks.append(time.perf_counter())
        return [1e3 * (b - a) for a, b in zip(marks, marks[1:])]

    draw(base)
    layers = list(quantizable_layers(graph))
    foldable = [c.layer for c in fold_candidates(graph) if c.foldable]
    print(f"MobileNetV2: {len(graph)} ops; median of {args.edits} edits, ms per stage")
    print(f"{'edit':<28}" + "".join(f"{s:>9}" for s in STAGES) + f"{'total':>9}")
    for what, recipes in (("weight width (4 bits)", [base.with_bits(layers[5 + i], LayerBits(4, 8))
                                                      for i in range(args.edits)]),
                          ("fold toggle", [base.with_fold(foldable[5 + i], False) for i in range(args.edits)])):
        rows = [draw(r) for r in recipes]
        med = [statistics.median(col) for col in zip(*rows)]
        print(f"{what:<28}" + "".join(f"{m:9.0f}" for m in med) + f"{sum(med):9.0f}")

    # what a fold toggle waited for before its ranges were read off the last calibration
    from qviz.app import worker

    waits = []
    for i in range(3):
        folds = tuple(base.with_fold(foldable[15 + i], False).fold_selection(graph))
        t = time.perf_counter()
        worker.calibrate("bench", graph, folds)
        waits.append(1e3 * (time.perf_counter() - t))
    print(f"calibrating a fold selection again (what a fold toggle waited for): median {statistics.median(waits):.0f} ms")

    # the rewrite alone: calibration data handed eagerly, against lazily
    ranges = session.ranges_future(base).result()
    data = session.data
    for how, calibration in (("eager data", lambda: data.calibration), ("lazy data", None)):
        times = []
        for i in range(args.edits):
            recipe = base.with_bits(layers[20 + i], LayerBits(3, 8))
            t = time.perf_counter()
            qviz.apply(graph, recipe, report=False, ranges=ranges,
                       calibration=calibration() if calibration is not None else (lambda: data.calibration))
            times.append(1e3 * (time.perf_counter() - t))
        print(f"rewrite with {how}: median {statistics.median(times):.0f} ms")


if __name__ == "__main__":
    main()
