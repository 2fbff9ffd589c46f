"""Two panes, side by side: the current recipe's graph (pane A) and, in pane B, the
float model or a recipe pinned to compare with. No Dash here (the callbacks are
:mod:`qviz.app.callbacks.side_by_side`).

The panes are laid out apart (a folded batch norm leaves a gap in one and not in
the other), so they are kept in step through the change record, not through
coordinates: a node selected in either pane selects its counterparts in the
other — a folded conv the conv *and* the batch norm it absorbed — and a pan or
zoom in one centres the other on the counterpart of the node nearest the centre
of the view, at the same zoom.

>>> import qviz
>>> from qviz.samples import sample_path
>>> from qviz.app.session import Session
>>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
>>> recipe = qviz.Recipe.default(s.graph)
>>> a, b = pane_views(s, recipe, None, ViewChoice())
>>> pairs = folded_pairs(s, recipe)
>>> counterparts("layer:conv1", a, b, pairs)            # conv1 in the float model: conv1 and its batch norm
['layer:conv1', 'layer:bn1']
>>> counterparts("layer:bn1", b, a, pairs)              # and back: the conv that absorbed it first
['layer:conv1', 'layer:bn1']
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from ..layout import ViewKey
from ..layout.view import block_showing
from ..passes import Recipe, folded_into
from .services import DrawnView, ViewChoice, draw_view

__all__ = ["pane_views", "folded_pairs", "counterparts", "synced_range", "pane_caption"]


def pane_views(session, recipe: Recipe, pinned: Recipe | None, choice: ViewChoice) -> tuple[DrawnView, DrawnView]:
    """(pane A, pane B): ``recipe`` as ``choice`` asks; the float model, or ``pinned`` rewritten,
    in the same mode, direction and expanded layers."""
    a = draw_view(session, recipe, choice)
    side = replace(choice, show="original" if pinned is None else "rewritten")
    return a, draw_view(session, pinned if pinned is not None else recipe, side)


def folded_pairs(session, *recipes: Recipe | None) -> dict[str, str]:
    """Conv layer → the batch norm it absorbs, for the folds any of ``recipes`` makes."""
    pairs = {}
    for recipe in filter(None, recipes):
        pairs.update(folded_into(session.graph, recipe.fold_selection(session.graph)))
    return pairs


def counterparts(key: str, source: DrawnView, target: DrawnView, pairs: Mapping[str, str]) -> list[str]:
    """The keys in ``target`` that stand for ``key`` of ``source`` (most direct first):
    the same node; for a conv, the batch norm it absorbed, and for that batch norm,
    the conv; for an op the other pane lacks, the ops of its layer (and its pair's)."""
    parsed = ViewKey.parse(key)
    if parsed is None:
        return []
    layer = parsed.name if parsed.is_layer else source.graph.nodes.get(key, {}).get("layer")
    if layer is None:
        return [key] if key in target.pos else []
    absorbed_by = {bn: conv for conv, bn in pairs.items()}
    related = [name for name in (absorbed_by.get(layer), layer, pairs.get(layer)) if name]
    if parsed.is_layer:
        found = list(dict.fromkeys(k for k in (ViewKey.layer(name) for name in related) if k in target.pos))
    elif key in target.pos:
        found = [key]
    else:
        found = [k for k in target.pos if target.graph.nodes[k].get("layer") in related]
    block = block_showing(target.graph, layer)     # the other pane has the layer in a closed block
    return found or ([block] if block in target.pos else [])


def _axis_range(relayout: Mapping, axis: str) -> tuple[float, float] | None:
    """The ``axis`` range plotly's relayoutData sets, or None (not set, or not two finite numbers)."""
    if f"{axis}.range[0]" in relayout and f"{axis}.range[1]" in relayout:
        ends = relayout[f"{axis}.range[0]"], relayout[f"{axis}.range[1]"]
    else:
        ends = relayout.get(f"{axis}.range")
    if not isinstance(ends, (list, tuple)) or len(ends) != 2:
        return None
    try:
        lo, hi = float(ends[0]), float(ends[1])
    except (TypeError, ValueError):   # the page's data: a forged value is ignored
        return None
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None


def synced_range(relayout: Mapping | None, source: DrawnView, target: DrawnView,
                 pairs: Mapping[str, str]) -> tuple[list[float], list[float]] | None:
    """The ``(x range, y range)`` that shows, in ``target``, the counterpart of the node
    nearest the centre of ``source``'s new view (``relayout``: plotly's relayoutData),
    at the same zoom; None when the event moved no axis or nothing maps across.

    >>> from qviz.layout import DiGraph
    >>> a = DrawnView(DiGraph([("layer:x", "layer:y")]), {"layer:x": (0, 0), "layer:y": (1, 0)}, {})
    >>> b = DrawnView(DiGraph([("layer:x", "layer:y")]), {"layer:x": (0, 0), "layer:y": (5, 2)}, {})
    >>> synced_range({"xaxis.range[0]": 0.5, "xaxis.range[1]": 1.5, "yaxis.range[0]": -1, "yaxis.range[1]": 1},
    ...              a, b, {})
    ([4.5, 5.5], [1.0, 3.0])
    >>> synced_range({"xaxis.range": ["x", 1], "yaxis.range": [0, float("nan")]}, a, b, {}) is None
    True
    """
    xr, yr = _axis_range(relayout or {}, "xaxis"), _axis_range(relayout or {}, "yaxis")
    if xr is None or yr is None or not source.pos:
        return None
    cx, cy = (xr[0] + xr[1]) / 2, (yr[0] + yr[1]) / 2
    nearest = min(source.pos, key=lambda k: math.dist(source.pos[k], (cx, cy)))
    found = counterparts(nearest, source, target, pairs)
    if not found:
        return None
    # keep the offset from the node, so a pan moves the other pane by as much
    tx, ty = target.pos[found[0]]
    sx, sy = source.pos[nearest]
    dx, dy = tx - sx, ty - sy
    return [xr[0] + dx, xr[1] + dx], [yr[0] + dy, yr[1] + dy]


def pane_caption(pinned: Recipe | None, session) -> str:
    """What pane B shows, in a few words."""
    if pinned is None:
        return "B: the float model (before any rewrite)"
    layers = pinned.quantize_config(session.graph).layers
    folds = len(pinned.fold_selection(session.graph))
    return f"B: the pinned recipe ({folds} batch norm(s) folded, {len(layers)} layer(s) quantized)"
