"""A layered (Sugiyama-style) layout.

0. Order: nodes and edges are taken in a canonical order (topological, ties
   by name), so the layout depends only on the graph's structure and names.
1. Ranks: topological generations (each node one past its latest
   input), then nodes with slack pulled towards their consumers.
2. Long edges get virtual nodes on every rank they cross, so crossing reduction
   sees them (and they bend around nodes instead of through them).
3. Crossing reduction: alternating down/up sweeps ordering each rank by the
   median of its neighbours' positions in the previous rank, keeping the best
   ordering seen; then adjacent transpositions (swap two neighbours in a rank
   whenever that removes crossings) until nothing improves.
4. Coordinates: rank → x (or y), position in rank → the other axis, each rank
   centred. A long edge is drawn through its virtual nodes' places
   (:func:`layered_routes`), so the crossings the sweeps removed stay removed in
   the drawing; :func:`layered_layout` gives the node positions alone.

>>> from qviz.layout import DiGraph
>>> g = DiGraph([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
>>> pos = layered_layout(g)
>>> pos["a"][0] < pos["b"][0] < pos["d"][0], pos["b"][0] == pos["c"][0]
(True, True)
"""

from __future__ import annotations

from .digraph import DiGraph, topological_generations, topological_order

__all__ = ["layered_layout", "layered_routes", "count_crossings", "LAYOUT_VERSION"]

#: Bumped whenever a change here moves what :func:`layered_routes` returns: layouts cached
#: on disk (:mod:`qviz.layout.cache`) under an older version are not used.
LAYOUT_VERSION = 1


def _ranks(g: DiGraph) -> dict:
    """Earliest ranks (topological generations), then each node pulled as late as
    its consumers allow: shorter edges mean fewer virtual nodes and crossings."""
    rank = {}
    generations = list(topological_generations(g))
    for i, generation in enumerate(generations):
        for n in generation:
            rank[n] = i
    for generation in reversed(generations):
        for n in generation:
            succ = [rank[v] for v in g.successors(n)]
            if succ:
                rank[n] = max(rank[n], min(succ) - 1)
    return rank


def _with_virtual_nodes(g: DiGraph, rank: dict):
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


def _pair_crossings(u, v, neighbours, order) -> int:
    """Crossings between the edges of u and of v (u placed before v) towards one rank."""
    count = 0
    for a in neighbours.get(u, ()):
        pa = order[a]
        for b in neighbours.get(v, ()):
            if pa > order[b]:
                count += 1
    return count


def _rank_crossings(upper, down, order) -> int:
    pairs = sorted((order[u], order[v]) for u in upper for v in down.get(u, ()))
    return _inversions([b for _, b in pairs])


def _total_crossings(layers, down, order) -> int:
    return sum(_rank_crossings(layers[r], down, order) for r in range(len(layers) - 1))


def _transpose(layers, down, up, order, max_rounds: int = 8) -> None:
    for _ in range(max_rounds):
        improved = False
        for layer in layers:
            for i in range(len(layer) - 1):
                u, v = layer[i], layer[i + 1]
                before = _pair_crossings(u, v, up, order) + _pair_crossings(u, v, down, order)
                after = _pair_crossings(v, u, up, order) + _pair_crossings(v, u, down, order)
                if after < before:
                    layer[i], layer[i + 1] = v, u
                    order[u], order[v] = i + 1, i
                    improved = True
        if not improved:
            return


def _canonical(g: DiGraph) -> DiGraph:
    """``g``'s structure with its nodes and edges in an order that depends on the
    structure and names alone (a topological order, ties broken by name), not on
    the order they were added in: the layout is then a function of what is drawn,
    so a layer view drawn from a Keras file's config and the same view of the
    frozen graph land in the same places (and a cached layout stays valid)."""
    order = list(topological_order(g, key=str))
    index = {n: i for i, n in enumerate(order)}
    out = DiGraph()
    out.add_nodes_from(order)
    out.add_edges_from(sorted(g.edges, key=lambda e: (index[e[1]], index[e[0]])))
    return out


#: How far behind (up and right of) the node that replaced it a removed node is drawn.
GHOST_OFFSET = 0.22


def layered_layout(g: DiGraph, direction: str = "LR", sweeps: int = 16) -> dict:
    """``{node: (x, y)}`` for a DAG; ``direction`` ``"LR"`` (left→right) or ``"TB"``.

    Raises :class:`~qviz.layout.digraph.CycleError` on a cycle.
    """
    return layered_routes(g, direction, sweeps)[0]


def layered_routes(g: DiGraph, direction: str = "LR", sweeps: int = 16) -> tuple[dict, dict]:
    """``(positions, routes)``: the layout, and for each edge spanning more than
    one rank the points it bends through, one per rank crossed
    (``{(u, v): [(x, y), ...]}``, endpoints excluded).

    >>> g = DiGraph([("a", "b"), ("b", "c"), ("a", "c")])
    >>> pos, routes = layered_routes(g)
    >>> list(routes), len(routes[("a", "c")])
    ([('a', 'c')], 1)

    A node with a ``ghost_of`` attribute (something a rewrite removed, see
    :func:`qviz.layout.view_graph`) takes no room in the layout: it is drawn
    just behind the node it names, up and to the right.

    >>> g.add_node("gone", ghost_of="b")
    >>> pos, _ = layered_routes(g)
    >>> round(pos["gone"][0] - pos["b"][0], 2), round(pos["gone"][1] - pos["b"][1], 2)
    (0.22, 0.22)
    """
    if direction not in ("LR", "TB"):
        raise ValueError(f"direction must be 'LR' or 'TB', not {direction!r}")
    ghosts = {n: a for n, a in g.nodes(data="ghost_of") if a is not None and a in g}
    if ghosts:
        pos, routes = layered_routes(g.subgraph([n for n in g if n not in ghosts]), direction, sweeps)
        behind: dict = {}
        for n, anchor in ghosts.items():
            i = behind[anchor] = behind.get(anchor, -1) + 1     # several behind one node: fanned out
            x, y = pos[anchor]
            step = GHOST_OFFSET + 0.1 * min(i, 3)
            pos[n] = (round(x + step, 6), round(y + step, 6))
        return pos, routes
    if g.number_of_nodes() == 0:
        return {}, {}
    g = _canonical(g)
    rank = _ranks(g)
    layers, down, up = _with_virtual_nodes(g, rank)
    # Initial order: depth-first discovery from the sources (as dot does), which
    # keeps each branch together before any sweep.
    seen: dict = {}
    stack = [n for layer in layers[:1] for n in reversed(layer)]
    stack += [n for n in reversed(list(down)) if not up.get(n)]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen[n] = len(seen)
        stack.extend(reversed(down.get(n, ())))
    for layer in layers:
        layer.sort(key=lambda n: seen.get(n, len(seen)))
    order = {n: i for layer in layers for i, n in enumerate(layer)}
    best, best_count = [list(layer) for layer in layers], _total_crossings(layers, down, order)
    for i in range(sweeps):
        if best_count == 0:
            break
        if i % 2 == 0:
            _sweep(layers[1:], up, order)
        else:
            _sweep(list(reversed(layers[:-1])), down, order)
        _transpose(layers, down, up, order, max_rounds=2)
        count = _total_crossings(layers, down, order)
        if count < best_count:
            best, best_count = [list(layer) for layer in layers], count
    layers = best
    order = {n: i for layer in layers for i, n in enumerate(layer)}
    if best_count:
        _transpose(layers, down, up, order)
    pos, bends = {}, {}
    for r, layer in enumerate(layers):
        offset = (len(layer) - 1) / 2
        for i, n in enumerate(layer):
            across = i - offset
            xy = (float(r), float(-across)) if direction == "LR" else (float(across), float(-r))
            if isinstance(n, tuple) and n and n[0] == "__virtual__":
                bends[n] = xy
            else:
                pos[n] = xy
    routes = {}
    for u, v in g.edges:
        if rank[v] - rank[u] > 1:
            routes[(u, v)] = [bends[("__virtual__", u, v, r)] for r in range(rank[u] + 1, rank[v])]
    return pos, routes


def count_crossings(g: DiGraph, pos: dict, direction: str = "LR", routes: dict | None = None) -> int:
    """Edge crossings between adjacent ranks of a layout, for comparing layouts.

    Ranks are the integer coordinates along ``direction``. An edge is drawn
    through its ``routes`` points if it has any, else straight; either way it is
    cut into one segment per pair of adjacent ranks (interpolating where it
    crosses each rank).
    """
    axis, other = (0, 1) if direction == "LR" else (1, 0)
    segments: dict[float, list[tuple[float, float]]] = {}
    for u, v in g.edges:
        points = [pos[u], *(routes or {}).get((u, v), ()), pos[v]]
        r0, r1 = points[0][axis], points[-1][axis]
        if r0 == r1:
            continue
        if r1 < r0:
            points.reverse()
            r0, r1 = r1, r0
        at = [_across_at(points, r, axis, other) for r in range(int(round(r0)), int(round(r1)) + 1)]
        for s in range(len(at) - 1):
            segments.setdefault(round(r0) + s, []).append((at[s], at[s + 1]))
    crossings = 0
    for segs in segments.values():
        segs.sort()
        tails = [y1 for _, y1 in segs]
        crossings += _inversions(tails)
    return crossings


def _across_at(points, r, axis, other) -> float:
    """Where a polyline (sorted along ``axis``) is at rank coordinate ``r``."""
    for (a, b) in zip(points, points[1:]):
        if a[axis] <= r <= b[axis]:
            if b[axis] == a[axis]:
                return a[other]
            t = (r - a[axis]) / (b[axis] - a[axis])
            return a[other] + t * (b[other] - a[other])
    return points[-1][other] if r > points[-1][axis] else points[0][other]


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
