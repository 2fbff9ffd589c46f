"""Names that run into each other: pairs of node labels that touch, by view and zoom.

    python benchmarks/label_overlaps.py [--nets MobileNetV2 NASNetMobile] [--px 110 80 70]

For each net's layer and op view (whole, and grouped into blocks), laid out as the app
lays them out: how many pairs of labels overlap or come within ``qviz.render.marks.CLEAR_PX``
of each other at a zoom of N pixels a rank, with the ranks' alternation alone (below,
above: ``label_position``) and with the names placed (``label_sides``), and what placing
them cost. The first view opens at ~110 px a rank; names show from ``LABEL_PX`` (45) up.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def touching(g, pos, sides, unit) -> int:
    """Pairs of label boxes that overlap or come within CLEAR_PX, at ``unit`` px a rank."""
    from qviz.render.marks import CHAR_PX, CLEAR_PX, LABEL_GAP_PX, LINE_PX, short_label

    boxes = []
    for k, (x, y) in pos.items():
        X, Y = x * unit, y * unit
        half = len(short_label(str(g.nodes[k].get("label", k)))) * CHAR_PX / 2
        if sides[k] == "top center":
            boxes.append((X - half, X + half, Y + LABEL_GAP_PX, Y + LABEL_GAP_PX + LINE_PX))
        elif sides[k] == "bottom center":
            boxes.append((X - half, X + half, Y - LABEL_GAP_PX - LINE_PX, Y - LABEL_GAP_PX))
        else:
            boxes.append((X + LABEL_GAP_PX, X + LABEL_GAP_PX + 2 * half, Y + 2, Y + 2 + LINE_PX))
    boxes.sort()
    n = 0
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if b[0] >= a[1] + CLEAR_PX[0]:
                break
            if min(a[3], b[3]) - max(a[2], b[2]) + CLEAR_PX[1] > 0:
                n += 1
    return n


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--nets", nargs="*", default=["MobileNetV2", "NASNetMobile"])
    ap.add_argument("--px", nargs="*", type=float, default=[110.0, 80.0, 70.0])
    args = ap.parse_args(argv)
    import keras

    import qviz
    from qviz.layout import layered_routes, view_graph
    from qviz.layout.blocks import find_blocks, layer_graph
    from qviz.layout.view import close_blocks
    from qviz.render.marks import label_position, label_sides

    print("| net | view | nodes | px a rank | touching: alternated | touching: placed | placing ms |")
    print("|---|---|---|---|---|---|---|")
    for net in args.nets:
        g = qviz.load(getattr(keras.applications, net)(weights=None, input_shape=(224, 224, 3)))
        blocks = find_blocks(layer_graph(view_graph(g, "layer")))
        for mode in ("layer", "op"):
            for grouped in (False, True):
                vg = view_graph(g, mode)
                if grouped:
                    vg = close_blocks(vg, blocks)
                pos, _ = layered_routes(vg)
                pos = {k: pos[k] for k in vg.nodes}
                alternated = {k: label_position(pos[k], vg.nodes[k]) for k in pos}
                t = time.perf_counter()
                placed = label_sides(vg, pos)
                ms = (time.perf_counter() - t) * 1e3
                for px in args.px:
                    print(f"| {net} | {mode}{' (blocks)' if grouped else ''} | {len(pos)} | {px:.0f} | "
                          f"{touching(vg, pos, alternated, px)} | {touching(vg, pos, placed, px)} | {ms:.0f} |")


if __name__ == "__main__":
    main()
