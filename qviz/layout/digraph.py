"""The directed graph that drawing works on: what gets drawn, laid out and rendered.

A view graph (:func:`qviz.layout.view_graph`) is small — hundreds to a few
thousand nodes — and the first view of a model (:mod:`qviz.app.first_view`) is
drawn before anything but the standard library is imported: importing networkx
(and numpy, which it brings) took 0.2-0.3 s of the half second from
``qviz serve FILE`` to the graph on screen. So drawing has its own graph class,
with the part of ``networkx.DiGraph``'s interface it uses and the same
semantics (insertion order kept, node and edge data in dicts, ``g[u][v]`` the
edge's data), and the two orderings the layout needs. Every function of
:mod:`qviz.layout` and :mod:`qviz.render` takes either class; the IR's
dataflow graph (:attr:`qviz.Graph.nx`) stays a networkx graph, for the passes'
algorithms.

>>> g = DiGraph([("x", "conv"), ("conv", "relu"), ("x", "relu")])
>>> g.add_node("conv", kind="conv")
>>> list(g.nodes(data="kind")), list(g.successors("x")), g.in_degree("relu")
([('x', None), ('conv', 'conv'), ('relu', None)], ['conv', 'relu'], 2)
>>> [sorted(gen) for gen in topological_generations(g)]
[['x'], ['conv'], ['relu']]
>>> topological_order(DiGraph([("b", "a"), ("a", "b")]))
Traceback (most recent call last):
...
qviz.layout.digraph.CycleError: the graph has a cycle
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping

from ..ir.errors import GraphError

__all__ = ["DiGraph", "CycleError", "topological_generations", "topological_order", "reachable_within"]


class CycleError(GraphError):
    """A graph to lay out in ranks has a cycle (as ``networkx.NetworkXUnfeasible``)."""


class DiGraph:
    """A directed graph: nodes with data dicts, edges with data dicts, in insertion order.

    Constructed from an iterable of edges ``(u, v)`` as ``networkx.DiGraph`` is;
    ``graph`` holds the graph's own data.

    >>> g = DiGraph()
    >>> g.add_nodes_from(["a", ("b", {"label": "B"})])
    >>> g.add_edge("a", "b", control=True)
    >>> g["a"]["b"], g.nodes["b"], g.nodes.get("c"), list(g.edges), g.number_of_edges()
    ({'control': True}, {'label': 'B'}, None, [('a', 'b')], 1)
    >>> sub = g.subgraph(["b"])
    >>> list(sub.nodes(data=True)), list(sub.edges)
    ([('b', {'label': 'B'})], [])
    """

    def __init__(self, edges: Iterable | None = None):
        self.graph: dict = {}
        self._node: dict = {}
        self._succ: dict = {}
        self._pred: dict = {}
        if edges is not None:
            self.add_edges_from(edges)

    # --- building ---------------------------------------------------------------
    def add_node(self, n: Hashable, **data) -> None:
        if n not in self._node:
            self._node[n], self._succ[n], self._pred[n] = {}, {}, {}
        self._node[n].update(data)

    def add_nodes_from(self, nodes: Iterable, **data) -> None:
        for item in nodes:
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dict):
                self.add_node(item[0], **{**data, **item[1]})
            else:
                self.add_node(item, **data)

    def add_edge(self, u: Hashable, v: Hashable, **data) -> None:
        for n in (u, v):
            if n not in self._node:
                self.add_node(n)
        found = self._succ[u].get(v)
        if found is None:
            found = self._succ[u][v] = self._pred[v][u] = {}
        found.update(data)

    def add_edges_from(self, edges: Iterable, **data) -> None:
        for e in edges:
            u, v, *rest = e
            self.add_edge(u, v, **{**data, **(rest[0] if rest else {})})

    # --- reading ----------------------------------------------------------------
    @property
    def nodes(self) -> "_NodeView":
        return _NodeView(self._node)

    @property
    def edges(self) -> "_EdgeView":
        return _EdgeView(self._succ)

    def __iter__(self) -> Iterator:
        return iter(self._node)

    def __len__(self) -> int:
        return len(self._node)

    def __contains__(self, n) -> bool:
        try:
            return n in self._node
        except TypeError:   # (unhashable: not a node)
            return False

    def __getitem__(self, u) -> dict:
        return self._succ[u]

    def has_edge(self, u, v) -> bool:
        return u in self._succ and v in self._succ[u]

    def successors(self, n) -> Iterator:
        return iter(self._succ[n])

    def predecessors(self, n) -> Iterator:
        return iter(self._pred[n])

    def in_degree(self, n=None):
        """``n``'s count of incoming edges; without ``n``, ``(node, count)`` pairs."""
        return len(self._pred[n]) if n is not None else ((k, len(p)) for k, p in self._pred.items())

    def out_degree(self, n) -> int:
        return len(self._succ[n])

    def degree(self, n) -> int:
        return len(self._succ[n]) + len(self._pred[n])

    def number_of_nodes(self) -> int:
        return len(self._node)

    def number_of_edges(self) -> int:
        return sum(len(s) for s in self._succ.values())

    # --- copies -----------------------------------------------------------------
    def subgraph(self, nodes: Iterable) -> "DiGraph":
        """A new graph of ``nodes`` (in this graph's order) and the edges among them,
        their data shared (networkx gives a read-only view; nothing here changes one)."""
        keep = {n for n in nodes if n in self._node}
        out = DiGraph()
        out.graph = self.graph
        for n, d in self._node.items():
            if n in keep:
                out._node[n], out._succ[n], out._pred[n] = d, {}, {}
        for u in out._node:
            for v, d in self._succ[u].items():
                if v in keep:
                    out._succ[u][v] = out._pred[v][u] = d
        return out

    def copy(self) -> "DiGraph":
        """A copy with its own data dicts (as ``networkx.DiGraph.copy``: one level deep)."""
        out = DiGraph()
        out.graph = dict(self.graph)
        out.add_nodes_from((n, dict(d)) for n, d in self._node.items())
        out.add_edges_from((u, v, dict(d)) for u, vs in self._succ.items() for v, d in vs.items())
        return out

    def __repr__(self) -> str:
        return f"<DiGraph: {self.number_of_nodes()} nodes, {self.number_of_edges()} edges>"


class _NodeView(Mapping):
    """``g.nodes``: a mapping of each node to its data (``g.nodes[n]``, ``.get``, ``in``,
    ``len``, iteration), and ``g.nodes(data=...)`` as networkx's."""

    __slots__ = ("_node",)

    def __init__(self, node: dict):
        self._node = node

    def __iter__(self):
        return iter(self._node)

    def __len__(self):
        return len(self._node)

    def __contains__(self, n):
        try:
            return n in self._node
        except TypeError:
            return False

    def __getitem__(self, n) -> dict:
        return self._node[n]

    def __call__(self, data=False, default=None):
        if data is False:
            return iter(self._node)
        if data is True:
            return iter(self._node.items())
        return ((n, d.get(data, default)) for n, d in self._node.items())


class _EdgeView:
    """``g.edges``: ``(u, v)`` pairs, ``(u, v) in g.edges``, ``g.edges[u, v]`` (the edge's data)."""

    __slots__ = ("_succ",)

    def __init__(self, succ: dict):
        self._succ = succ

    def __iter__(self):
        return ((u, v) for u, vs in self._succ.items() for v in vs)

    def __len__(self):
        return sum(len(vs) for vs in self._succ.values())

    def __contains__(self, e):
        u, v = e
        return u in self._succ and v in self._succ[u]

    def __getitem__(self, e) -> dict:
        u, v = e
        return self._succ[u][v]


def topological_generations(g) -> Iterator[list]:
    """``g``'s nodes in generations: those with no incoming edge, then those whose
    producers are all in earlier generations, … (as networkx's function of that name).

    Raises:
        CycleError: ``g`` has a cycle.
    """
    indegree = {n: 0 for n in g}
    for _, v in g.edges:
        indegree[v] += 1
    generation = [n for n, d in indegree.items() if d == 0]
    seen = 0
    while generation:
        seen += len(generation)
        yield generation
        nxt = []
        for n in generation:
            for v in g.successors(n):
                indegree[v] -= 1
                if indegree[v] == 0:
                    nxt.append(v)
        generation = nxt
    if seen != len(indegree):
        raise CycleError("the graph has a cycle")


def topological_order(g, key: Callable | None = None) -> list:
    """``g``'s nodes, each after its producers; among the nodes ready at once, the smallest
    ``key`` first (``key=None``: in ``g``'s order). With ``key`` it is the order of
    ``networkx.lexicographical_topological_sort``, so a layout does not depend on which
    class drew it.

    >>> topological_order(DiGraph([("b", "c"), ("a", "c")]), key=str)
    ['a', 'b', 'c']

    Raises:
        CycleError: ``g`` has a cycle.
    """
    index = {n: i for i, n in enumerate(g)}
    rank = key if key is not None else index.__getitem__
    indegree = dict.fromkeys(index, 0)
    for _, v in g.edges:
        indegree[v] += 1
    ready = [(rank(n), index[n], n) for n, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        _, _, n = heapq.heappop(ready)
        out.append(n)
        for v in g.successors(n):
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(ready, (rank(v), index[v], v))
    if len(out) != len(index):
        raise CycleError("the graph has a cycle")
    return out


def reachable_within(g, start, hops: int) -> set:
    """The nodes at most ``hops`` edges from ``start``, following edges either way.

    >>> sorted(reachable_within(DiGraph([("a", "b"), ("c", "b"), ("c", "d")]), "a", 2))
    ['a', 'b', 'c']
    """
    seen, frontier = {start}, [start]
    for _ in range(hops):
        nxt = []
        for n in frontier:
            for m in (*g.successors(n), *g.predecessors(n)):
                if m not in seen:
                    seen.add(m)
                    nxt.append(m)
        frontier = nxt
    return seen
