"""The graph as a file: an SVG of the layer or op view with a recipe's diff and bits,
and a PNG of it drawn by a headless Chromium.

The SVG is :func:`qviz.render.svg.graph_svg` (the app's first view) with the
marks of the app's graph: outlines by change (added, modified, removed), the
ops the rewrite removed faded where they were, and each layer's bits-and-fold
badge (:func:`recipe_badges`). It needs nothing but Python.

PNG: plotly's own static export needs Kaleido, which needs a Chrome it would
download; nothing is downloaded here. :func:`svg_to_png` has the Chromium on
the machine draw the SVG instead (``apt-get install chromium``), and says so in
one line when there is none. In the app, the graph's camera button saves what
is in view as PNG (plotly.js, in the browser).

>>> import qviz
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> svg = graph_svg_of(g, title="lenet_digits")
>>> svg.startswith("<?xml"), svg.count("<circle"), ">lenet_digits</text>" in svg
(True, 13, True)
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..errors import QvizError
from ..ir import Graph
from ..ir.ops import ADD_OPS, LAYER_OPS
from ..layout import DiGraph, ViewKey, around, default_cache, diff_status, routes_in_place, view_graph
from ..passes import Recipe, fold_candidates, quantizable_layers, quantizable_units, quantized_in_graph
from .marks import Badge
from .png import crop_png
from .svg import graph_svg

__all__ = ["recipe_badges", "rewrite_view", "graph_svg_of", "svg_to_png", "ImageError", "find_chromium", "MAX_PNG_PX"]

log = logging.getLogger(__name__)

#: Chromium draws nothing past ~16k px a side: a bigger graph is scaled down to fit.
MAX_PNG_PX = 16000
#: How much taller than the picture the window is (its viewport is shorter than the window
#: by a hidden frame, 143 px in Chromium 150), and the narrowest viewport Chromium makes.
_FRAME_PX, _MIN_WINDOW_PX = 400, 500


class ImageError(QvizError, RuntimeError):
    """An image could not be made (no Chromium, or it failed); the message says which."""


def recipe_badges(graph: Graph, vg: DiGraph, recipe: Recipe, *, slots: bool = False) -> dict[str, Badge]:
    """View key → the :class:`~qviz.render.marks.Badge` saying what ``recipe`` does
    to the layer drawn there (``w4a8+bn``): on a layer's node in the layer view, on
    the op that carries the layer's weights (or its bypass Add) in the op view.
    Layers the recipe leaves alone get none, nor do nodes the rewrite removed.
    ``graph`` is the float graph the recipe is for; ``vg`` a view of it or of its
    rewrite. With ``slots``, every layer node the recipe could mark gets a badge, an
    empty one (``Badge("", None)``) where it marks nothing: the page writes an
    edit's badge in place, before its redraw, and needs the point to be there.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.passes import LayerBits
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> r = qviz.Recipe.default(g).with_bits("conv2", LayerBits(4, 8))
    >>> badges = recipe_badges(g, view_graph(g, "layer"), r)
    >>> badges["layer:conv1"].text, badges["layer:conv2"].text, "layer:relu1" in badges
    ('w8a8+bn', 'w4a8+bn', False)
    >>> float_start = recipe_badges(g, view_graph(g, "layer"), qviz.Recipe(fold_default=False, quantize_default=None),
    ...                             slots=True)
    >>> float_start["layer:conv1"], "layer:relu1" in float_start
    (Badge(text='', bits=None), False)

    A model quantized already (:func:`~qviz.passes.quantized_in_graph`) shows its own widths:

    >>> q = qviz.apply(g, r, report=False).graph
    >>> recipe_badges(q, view_graph(q, "layer"), qviz.Recipe.default(q))["layer:conv2"].text
    'w4a8'
    """
    units = set(quantizable_units(graph))
    in_file = quantized_in_graph(graph)    # a model quantized already: its own widths
    weighted = set(quantizable_layers(graph)) | {layer for layer, b in in_file.items() if b.weight_bits}
    folded = {c.layer for c in fold_candidates(graph) if c.foldable and recipe.folds(c.layer)}
    marked = units | folded | set(in_file)

    def widths(layer):
        bits = recipe.bits(layer) if layer in units else in_file.get(layer)
        return (bits.weight_bits if bits and layer in weighted else None,   # an Add has no weights
                bits.activation_bits if bits else None, layer in folded)

    out = {}
    markable = (units | {c.layer for c in fold_candidates(graph) if c.foldable}) if slots else set()
    for key, d in vg.nodes(data=True):
        k = ViewKey.parse(key)
        if k is None or d.get("ghost_of") or d.get("status") == "removed":
            continue
        if k.is_layer and d.get("layer") in markable:    # a slot, empty unless the recipe marks it
            out[key] = Badge.of(*widths(d["layer"])) or Badge("", None)
            continue
        if k.is_block:     # a closed block: the range of its layers' widths
            marks = [widths(layer) for layer in d.get("layers", ()) if layer in marked]
            badge = Badge.span([w for w, _, _ in marks], [a for _, a, _ in marks], any(f for _, _, f in marks))
        else:
            layer = d.get("layer")
            if layer not in marked or (
                    not k.is_layer and d["op"] not in (LAYER_OPS if layer in weighted else ADD_OPS)):
                continue
            badge = Badge.of(*widths(layer))
        if badge is not None:
            out[key] = badge
    return out


def rewrite_view(original: Graph, result=None, view: str = "layer", direction: str = "LR", *,
                 around_layers: Sequence[str] = (), hops: int = 2):
    """``(view graph, positions, edge routes)`` of ``result``'s rewrite of ``original``,
    its changes marked (removed ops kept as ghosts), or of ``original`` when ``result`` is None;
    with ``around_layers``, only what lies within ``hops`` edges of them (:func:`qviz.layout.around`)."""
    status, removed = diff_status(result) if result is not None else ({}, [])
    vg = view_graph(result.graph if result is not None else original, view, removed=removed, status=status,
                    original=original)
    if around_layers:
        vg = around(vg, around_layers, hops)
    if result is None:
        return (vg, *default_cache().routes(vg, direction))
    # where the float graph has it, as the page draws it (qviz.layout.routes_in_place)
    return (vg, *routes_in_place(vg, view_graph(original, view), direction, default_cache().routes))


def graph_svg_of(original: Graph, result=None, recipe: Recipe | None = None, *, view: str = "layer",
                 direction: str = "LR", title: str = "", around_layers: Sequence[str] = (), hops: int = 2) -> str:
    """A standalone SVG of ``original``'s graph, or of its rewrite.

    Args:
        original: the float graph.
        result: what :func:`qviz.apply` made of it (``.graph``, ``.changes``); drawn
            with its changes marked. None: the float graph.
        recipe: the recipe ``result`` came from, for the bits badges.
        view: ``"layer"`` (one node a layer) or ``"op"`` (every op).
        direction: ``"LR"`` (left to right) or ``"TB"`` (top to bottom).
        title: the first line of the image.
        around_layers: draw only these layers and what lies within ``hops``
            edges of them (a sub-graph for a slide); empty: the whole graph.

    Raises:
        ValueError: a bad ``view``/``direction``, or a layer in ``around_layers`` not in the graph.
    """
    if view not in ("layer", "op"):
        raise ValueError(f"view must be 'layer' or 'op', not {view!r}")
    if direction not in ("LR", "TB"):
        raise ValueError(f"direction must be 'LR' or 'TB', not {direction!r}")
    vg, pos, routes = rewrite_view(original, result, view, direction, around_layers=around_layers, hops=hops)
    badges = recipe_badges(original, vg, recipe) if recipe is not None else None
    return graph_svg(vg, pos, routes, direction=direction, badges=badges, show_status=result is not None,
                     standalone=True, title=title)


def find_chromium() -> str | None:
    """The Chromium (or Chrome) on this machine: ``$QVIZ_CHROMIUM``, else the first on ``PATH``."""
    given = os.environ.get("QVIZ_CHROMIUM")
    if given:
        return given
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _size(svg: str) -> tuple[int, int]:
    import re

    m = re.search(r'<svg[^>]* width="(\d+)" height="(\d+)"', svg)
    if m is None:
        raise ValueError("the SVG has no size in pixels (make it with standalone=True)")
    return int(m.group(1)), int(m.group(2))


def svg_to_png(svg: str, path, *, scale: float = 1.0, browser: str | None = None, timeout: float = 120) -> Path:
    """Draw a standalone SVG (:func:`graph_svg_of`) as a PNG at ``path`` with headless Chromium.

    Raises:
        ImageError: no Chromium here, or it failed or took longer than ``timeout`` s.
    """
    browser = browser or find_chromium()
    if browser is None:
        raise ImageError("PNG needs Chromium to draw the graph (apt-get install chromium, or set QVIZ_CHROMIUM); "
                         "SVG needs nothing: write a .svg")
    width, height = _size(svg)
    fit = min(scale, MAX_PNG_PX / width, (MAX_PNG_PX - _FRAME_PX) / height)
    px_w, px_h = max(1, round(width * fit)), max(1, round(height * fit))
    out = Path(path).resolve()
    with tempfile.TemporaryDirectory(prefix="qviz-png-") as tmp:
        page = Path(tmp) / "graph.html"
        # The SVG at the page's top-left, at the size asked for, in a bigger window: the
        # screenshot is the window, but only the viewport inside it is drawn (qviz.render.png)
        page.write_text('<!doctype html><meta charset="utf-8"><style>html,body{margin:0;background:#fff}'
                        f'svg{{width:{px_w}px;height:{px_h}px;display:block}}</style>'
                        + svg.split("?>", 1)[-1], encoding="utf-8")
        shot = Path(tmp) / "graph.png"
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
               "--no-first-run", f"--user-data-dir={tmp}/profile",
               f"--window-size={max(px_w, _MIN_WINDOW_PX)},{px_h + _FRAME_PX}", f"--screenshot={shot}",
               page.as_uri()]
        try:
            done = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise ImageError(f"Chromium took longer than {timeout:.0f} s to draw the graph") from None
        except OSError as exc:
            raise ImageError(f"Chromium could not be started ({browser}: {exc.strerror or exc})") from None
        if not shot.exists():
            log.warning("chromium failed (%s): %s", done.returncode, done.stderr.decode(errors="replace")[-2000:])
            raise ImageError(f"Chromium did not draw the graph (exit {done.returncode}); see the log")
        try:
            picture = crop_png(shot.read_bytes(), px_w, px_h)
        except ValueError as exc:
            raise ImageError(f"Chromium's picture of the graph could not be read: {exc}") from None
        try:
            out.write_bytes(picture)
        except OSError as exc:
            raise ImageError(f"{out}: cannot write: {exc.strerror or exc}") from None
    return out
