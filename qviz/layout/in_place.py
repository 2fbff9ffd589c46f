"""A rewritten view laid out where its float graph was, so an edit moves nothing.

Laid out alone, a rewritten view is shorter by a rank for each batch norm folded
away: toggling one fold moved every layer after it (139 of MobileNetV2's 156), and
the eye could not follow the change. :func:`routes_in_place` lays out the rewritten
view together with the float graph's view instead:

* a node the rewrite removed (a ghost, ``ghost_of`` set by
  :func:`qviz.layout.view_graph`) keeps its own place, between the nodes it sat
  between, drawn faded there;
* an edge the rewrite made across ghosts (``conv → relu`` where the float graph had
  ``conv → bn → relu``) is drawn along the old path, through the ghosts' places;
* a node the rewrite added in a line (one input, one output: a fake-quant, a
  fold's bias add), or a run of them, is drawn on the edge it was put on, just off
  it (:data:`ADDED_OFFSET` across), taking no rank; one with only an input or
  only an output drawn, half a rank from it; anything else added takes a place of its own.

In the layer view every recipe's view then has the float graph's layout (a rewrite
removes or changes layers; it adds none), so one layout serves them all and
:meth:`qviz.layout.LayoutCache.routes` answers an edit from memory. In the op view
the ops of the float graph keep their places too, whatever the rewrite added.

>>> from qviz.layout import DiGraph
>>> before = DiGraph([("x", "conv"), ("conv", "bn"), ("bn", "relu")])
>>> after = DiGraph([("x", "conv"), ("conv", "relu")])
>>> after.add_node("bn", ghost_of="conv")
>>> pos, routes = routes_in_place(after, before)
>>> [pos[n][0] for n in ("x", "conv", "bn", "relu")], routes[("conv", "relu")]
([0.0, 1.0, 2.0, 3.0], [(2.0, -0.0)])

A fake-quant put between ``conv`` and ``relu`` moves neither:

>>> quantized = DiGraph([("x", "conv"), ("conv", "fq"), ("fq", "relu")])
>>> pos, _ = routes_in_place(quantized, DiGraph([("x", "conv"), ("conv", "relu")]))
>>> pos["conv"], pos["relu"], pos["fq"]
((1.0, -0.0), (2.0, -0.0), (1.5, 0.4))

An added node after another added one is placed after it:

>>> pos, _ = routes_in_place(DiGraph([("a", "zp"), ("zp", "k1"), ("zp", "k2"), ("k1", "b"), ("k2", "c")]),
...                          DiGraph([("a", "b"), ("a", "c")]))
>>> sorted(pos) == ["a", "b", "c", "k1", "k2", "zp"]
True
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Callable

from .digraph import CycleError, DiGraph, topological_order
from .layered import layered_routes

__all__ = ["routes_in_place"]

log = logging.getLogger(__name__)

#: Ghosts an edge's old path may cross (a chain of removed layers is short; this bounds the search).
MAX_GHOSTS_CROSSED = 8
#: How far off the edge it was put on a node the rewrite added is drawn (layout units: a rank is 1).
ADDED_OFFSET = 0.4
#: The least distance between an added node drawn off an edge and any other node (layout units).
MIN_GAP = 0.3


def routes_in_place(vg: DiGraph, before: DiGraph, direction: str = "LR",
                    lay_out: Callable[..., tuple[dict, dict]] = layered_routes) -> tuple[dict, dict]:
    """``(positions, routes)`` of the rewritten view ``vg``, laid out with ``before``
    (the same view of the float graph) as the module describes; ``lay_out(g, direction)``
    is the layered layout (:meth:`qviz.layout.LayoutCache.routes` to remember it).

    The routes are ``vg``'s edges' bends, as :func:`qviz.layout.layered_routes` gives them.
    Should the two graphs together have a cycle (no rewrite of qviz makes one), ``vg`` is
    laid out alone.
    """
    ghosts = {k for k, d in vg.nodes(data=True) if d.get("ghost_of") is not None}
    runs = _added_runs(vg, before, ghosts)
    floating = {k for run, _, _ in runs for k in run}
    skeleton = DiGraph()
    skeleton.add_nodes_from(k for k in vg if k not in floating)
    # the float graph's edges among the nodes drawn: a ghost keeps its place in the chain
    skeleton.add_edges_from((u, v) for u, v in before.edges if u in vg and v in vg)
    crossing: dict[tuple, list] = {}
    for u, v in vg.edges:
        if skeleton.has_edge(u, v) or u in floating or v in floating:
            continue
        path = _through_ghosts(before, u, v, ghosts) if ghosts else None
        if path is None:
            skeleton.add_edge(u, v)
        else:
            crossing[(u, v)] = path
    for k in ghosts:   # no edge to a node drawn (cut off by qviz.layout.around): behind the one it names
        if not skeleton.degree(k) and vg.nodes[k]["ghost_of"] in vg:
            skeleton.nodes[k]["ghost_of"] = vg.nodes[k]["ghost_of"]
    try:
        pos, bends = lay_out(skeleton, direction)
    except CycleError:
        log.warning("the rewritten view and the float graph's make a cycle together: laid out alone")
        return lay_out(vg, direction)
    pos = dict(pos)
    _place_runs(pos, runs, vg, direction)
    routes = {e: bends[e] for e in vg.edges if e in bends}
    for (u, v), path in crossing.items():
        points: list = []
        for a, b in zip(path, path[1:]):
            points += bends.get((a, b), [])
            if b != v:
                points.append(pos[b])
        routes[(u, v)] = points
    return pos, routes


def _added_runs(vg: DiGraph, before: DiGraph, ghosts: set) -> list[tuple[list, object, object]]:
    """The rewrite's added nodes that are drawn off an edge rather than laid out: runs of
    nodes not in ``before`` with at most one input each, each but the last with one output,
    as ``(run, the node before it or None, the one node after it or None)``; a run with
    neither is laid out."""
    lined = {k for k in vg if k not in before and k not in ghosts and vg.in_degree(k) <= 1}

    def after(k):   # the one node after k (None: none, or several: k is drawn off the node before it)
        return next(iter(vg.successors(k))) if vg.out_degree(k) == 1 else None

    runs = []
    for k in lined:
        pred = next(iter(vg.predecessors(k)), None)
        if pred in lined and after(pred) == k:
            continue   # not a run's first node
        run = [k]
        while (nxt := after(run[-1])) in lined and len(run) <= len(lined):
            run.append(nxt)
        if pred is not None or nxt is not None:
            runs.append((run, pred, nxt))
    return runs


def _place_runs(pos: dict, runs, vg: DiGraph, direction: str) -> None:
    """Put each run of added nodes (:func:`_added_runs`) on its edge, just off it: evenly
    between the nodes before and after it, or within half a rank of the one it has. A place
    within :data:`MIN_GAP` of a node placed already (a ghost where a run spans ranks) moves
    it further off. Runs go in ``vg``'s order: one after another run is placed after it."""
    along = (1.0, 0.0) if direction != "TB" else (0.0, -1.0)
    across = (0.0, ADDED_OFFSET) if direction != "TB" else (ADDED_OFFSET, 0.0)
    taken = _Taken(pos.values())
    try:
        order = {n: i for i, n in enumerate(topological_order(vg))}
    except CycleError:   # (no rewrite makes a cycle; its runs then go by name)
        order = {}
    for run, pred, succ in sorted(runs, key=lambda r: (order.get(r[0][0], 0), str(r[0][0]))):
        _place_run(pos, run, pred if pred in pos else None, succ if succ in pos else None, along, across, taken)


def _place_run(pos: dict, run: list, pred, succ, along, across, taken: "_Taken") -> None:
    n = len(run)
    if pred is not None and succ is not None:
        (x0, y0), (x1, y1) = pos[pred], pos[succ]
        spots = [(x0 + (x1 - x0) * i / (n + 1), y0 + (y1 - y0) * i / (n + 1)) for i in range(1, n + 1)]
    elif pred is not None:
        x0, y0 = pos[pred]
        spots = [(x0 + along[0] * 0.5 * i / n, y0 + along[1] * 0.5 * i / n) for i in range(1, n + 1)]
    elif succ is not None:
        x1, y1 = pos[succ]
        spots = [(x1 - along[0] * 0.5 * i / n, y1 - along[1] * 0.5 * i / n) for i in range(n, 0, -1)]
    else:
        spots = [(along[0] * i, along[1] * i) for i in range(n)]
    for k, (x, y) in zip(run, spots):
        place = (round(x + across[0], 6), round(y + across[1], 6))
        while taken.near(place):
            place = (round(place[0] + across[0], 6), round(place[1] + across[1], 6))
        taken.add(place)
        pos[k] = place


class _Taken:
    """Places taken, in cells of :data:`MIN_GAP`, to ask if a place is too near one."""

    def __init__(self, places):
        self._cells: dict = {}
        for p in places:
            self.add(p)

    def add(self, p) -> None:
        self._cells.setdefault((int(p[0] // MIN_GAP), int(p[1] // MIN_GAP)), []).append(p)

    def near(self, p) -> bool:
        cx, cy = int(p[0] // MIN_GAP), int(p[1] // MIN_GAP)
        return any((q[0] - p[0]) ** 2 + (q[1] - p[1]) ** 2 < MIN_GAP ** 2
                   for dx in (-1, 0, 1) for dy in (-1, 0, 1) for q in self._cells.get((cx + dx, cy + dy), ()))


def _through_ghosts(before: DiGraph, u, v, ghosts: set) -> list | None:
    """The shortest path ``u → … → v`` of ``before`` whose inner nodes are all ghosts, or None."""
    if u not in before or v not in before:
        return None
    came: dict = {u: None}
    queue = deque([(u, 0)])
    while queue:
        n, depth = queue.popleft()
        for m in before.successors(n):
            if m == v and n != u:
                path = [v, n]
                while came[path[-1]] is not None:
                    path.append(came[path[-1]])
                return path[::-1]
            if m in ghosts and m not in came and depth < MAX_GHOSTS_CROSSED:
                came[m] = n
                queue.append((m, depth + 1))
    return None
