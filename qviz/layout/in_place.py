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
* anything else the rewrite added takes a place of its own, as it would alone.

In the layer view every recipe's view then has the float graph's layout (a rewrite
removes or changes layers; it adds none), so one layout serves them all and
:meth:`qviz.layout.LayoutCache.routes` answers an edit from memory. In the op view a
rewrite adds ops (a fold's scaled weights, fake-quant nodes): what follows them may
still shift by a rank.

>>> import networkx as nx
>>> before = nx.DiGraph([("x", "conv"), ("conv", "bn"), ("bn", "relu")])
>>> after = nx.DiGraph([("x", "conv"), ("conv", "relu")])
>>> after.add_node("bn", ghost_of="conv")
>>> pos, routes = routes_in_place(after, before)
>>> [pos[n][0] for n in ("x", "conv", "bn", "relu")], routes[("conv", "relu")]
([0.0, 1.0, 2.0, 3.0], [(2.0, -0.0)])
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Callable

import networkx as nx

from .layered import layered_routes

__all__ = ["routes_in_place"]

log = logging.getLogger(__name__)

#: Ghosts an edge's old path may cross (a chain of removed layers is short; this bounds the search).
MAX_GHOSTS_CROSSED = 8


def routes_in_place(vg: nx.DiGraph, before: nx.DiGraph, direction: str = "LR",
                    lay_out: Callable[..., tuple[dict, dict]] = layered_routes) -> tuple[dict, dict]:
    """``(positions, routes)`` of the rewritten view ``vg``, laid out with ``before``
    (the same view of the float graph) as the module describes; ``lay_out(g, direction)``
    is the layered layout (:meth:`qviz.layout.LayoutCache.routes` to remember it).

    The routes are ``vg``'s edges' bends, as :func:`qviz.layout.layered_routes` gives them.
    Should the two graphs together have a cycle (no rewrite of qviz makes one), ``vg`` is
    laid out alone.
    """
    ghosts = {k for k, d in vg.nodes(data=True) if d.get("ghost_of") is not None}
    skeleton = nx.DiGraph()
    skeleton.add_nodes_from(vg.nodes)
    # the float graph's edges among the nodes drawn: a ghost keeps its place in the chain
    skeleton.add_edges_from((u, v) for u, v in before.edges if u in vg and v in vg)
    crossing: dict[tuple, list] = {}
    for u, v in vg.edges:
        if skeleton.has_edge(u, v):
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
    except nx.NetworkXUnfeasible:
        log.warning("the rewritten view and the float graph's make a cycle together: laid out alone")
        return lay_out(vg, direction)
    routes = {e: bends[e] for e in vg.edges if e in bends}
    for (u, v), path in crossing.items():
        points: list = []
        for a, b in zip(path, path[1:]):
            points += bends.get((a, b), [])
            if b != v:
                points.append(pos[b])
        routes[(u, v)] = points
    return dict(pos), routes


def _through_ghosts(before: nx.DiGraph, u, v, ghosts: set) -> list | None:
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
