"""A layered (Sugiyama-style) layout on networkx.

1. Ranks: ``networkx.topological_generations`` (each node one past its latest input).
2. Long edges get virtual nodes on every rank they cross, so crossing reduction
   sees them (and they bend around nodes instead of through them).
3. Crossing reduction: alternating down/up sweeps ordering each rank by the
   median of its neighbours' positions in the previous rank.
4. Coordinates: rank → x (or y), position in rank → the other axis, each rank
   centred; virtual nodes are dropped from the result.

>>> import networkx as nx
>>> g = nx.DiGraph([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
>>> pos = layered_layout(g)
>>> pos["a"][0] < pos["b"][0] < pos["d"][0], pos["b"][0] == pos["c"][0]
(True, True)
"""

from __future__ import annotations

import networkx as nx

__all__ = ["layered_layout", "count_crossings"]


def _ranks(g: nx.DiGraph) -> dict:
    rank = {}
    for i, generation in enumerate(nx.topological_generations(g)):
        for n in generation:
            rank[n] = i
    return rank


def _with_virtual_nodes(g: nx.DiGraph, rank: dict):
    """Layers (lists of nodes per rank) and the proper graph's edges (rank r → r+1)."""
    layers: list[list] = [[] for _ in range(max(rank.values(), default=-1) + 1)]
    for n in g.nodes:  # graph order: a stable start for the sweeps
        layers[rank[n]].append(n)
    down: dict = {n: [] for n in g.nodes}
    for u, v in g.edges:
        prev = u
        for r in range(rank[u] + 1, rank[v]):
            virtual = ("__virtual__", u, v, r)
            layers[r].append(virtual)
            down.setdefault(prev, []).append(virtual)
            down[virtual] = []
            prev = virtual
        down.setdefault(prev, []).append(v)
    up: dict = {n: [] for n in down}
    for u, vs in down.items():
        for v in vs:
            up.setdefault(v, []).append(u)
    return layers, down, up


def _median(values):
    values = sorted(values)
    n = len(values)
    if n == 0:
        return None
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def _sweep(layers, neighbours_of, order):
    for layer in layers:
        keyed = []
        for i, n in enumerate(layer):
            m = _median([order[p] for p in neighbours_of.get(n, ())])
            keyed.append((m if m is not None else order[n], i, n))
        keyed.sort(key=lambda t: (t[0], t[1]))
        layer[:] = [n for _, _, n in keyed]
        for i, n in enumerate(layer):
            order[n] = i


def layered_layout(g: nx.DiGraph, direction: str = "LR", sweeps: int = 4) -> dict:
    """``{node: (x, y)}`` for a DAG; ``direction`` ``"LR"`` (left→right) or ``"TB"``.

    Raises ``networkx.NetworkXUnfeasible`` on a cycle.
    """
    if direction not in ("LR", "TB"):
        raise ValueError(f"direction must be 'LR' or 'TB', not {direction!r}")
    if g.number_of_nodes() == 0:
        return {}
    rank = _ranks(g)
    layers, down, up = _with_virtual_nodes(g, rank)
    order = {n: i for layer in layers for i, n in enumerate(layer)}
    for i in range(sweeps):
        if i % 2 == 0:
            _sweep(layers[1:], up, order)
        else:
            _sweep(list(reversed(layers[:-1])), down, order)
    pos = {}
    for r, layer in enumerate(layers):
        offset = (len(layer) - 1) / 2
        for i, n in enumerate(layer):
            if isinstance(n, tuple) and n and n[0] == "__virtual__":
                continue
            across = i - offset
            pos[n] = (float(r), float(-across)) if direction == "LR" else (float(across), float(-r))
    return pos


def count_crossings(g: nx.DiGraph, pos: dict, direction: str = "LR") -> int:
    """Edge crossings between adjacent ranks of a layout (long edges as straight
    segments split per rank), for comparing layouts."""
    axis, other = (0, 1) if direction == "LR" else (1, 0)
    segments: dict[float, list[tuple[float, float]]] = {}
    for u, v in g.edges:
        a, b = pos[u], pos[v]
        r0, r1 = a[axis], b[axis]
        if r0 == r1:
            continue
        steps = int(round(abs(r1 - r0)))
        for s in range(steps):
            t0, t1 = s / steps, (s + 1) / steps
            y0 = a[other] + (b[other] - a[other]) * t0
            y1 = a[other] + (b[other] - a[other]) * t1
            key = min(r0, r1) + s if r1 > r0 else r0 - s - 1
            segments.setdefault(key, []).append((y0, y1))
    crossings = 0
    for segs in segments.values():
        segs.sort()
        tails = [y1 for _, y1 in segs]
        crossings += _inversions(tails)
    return crossings


def _inversions(values: list) -> int:
    """Pairs i < j with values[i] > values[j] (merge sort, O(n log n))."""
    if len(values) < 2:
        return 0
    mid = len(values) // 2
    left, right = values[:mid], values[mid:]
    count = _inversions(left) + _inversions(right)
    left.sort(), right.sort()
    j = 0
    for x in left:
        while j < len(right) and right[j] < x:
            j += 1
        count += j
    return count
