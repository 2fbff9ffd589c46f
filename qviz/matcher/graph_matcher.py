"""Finding matches in a graph: :class:`GraphMatcher`, :class:`MatchResult`, :func:`find_matches`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..ir import Graph, Node
from ..ir.graph import graphs_containing
from .compile import CompiledPattern, compile_pattern
from .pattern import OpTypePattern, Pattern

__all__ = ["GraphMatcher", "MatchResult", "find_matches"]


class MatchResult:
    """The nodes (and consumed tensors) bound by one match.

    Keys are pattern objects or names. A name used by several patterns refers
    to the first of them (in tree order) that is bound.
    """

    __slots__ = ("_store", "_at", "_compiled", "_graph", "_root")

    def __init__(self, store: list, at: int, compiled: CompiledPattern, graph: Graph, root: str):
        # store[at:at + compiled.width]: node names and tensors, laid out by
        # compiled.slots (one store is shared by all the matches of a scan)
        self._store, self._at = store, at
        self._compiled = compiled
        self._graph = graph
        self._root = root

    @property
    def _values(self) -> list:
        return self._store[self._at:self._at + self._compiled.width]

    @property
    def root(self) -> Node:
        """The node the match is rooted at."""
        return self._graph.node(self._root)

    def _slot(self, key) -> int | None:
        if isinstance(key, Pattern):
            return self._compiled.slots.get(key)
        if isinstance(key, str):
            store, at = self._store, self._at
            for i in self._compiled.names.get(key, ()):
                if store[at + i] is not None:
                    return i
            return None
        raise TypeError(f"MatchResult keys are Patterns or names, not {type(key).__name__}")

    def get_op(self, pattern_or_name) -> Node | None:
        """The node bound to a pattern (object or name); ``None`` if unbound."""
        i = self._slot(pattern_or_name)
        name = None if i is None else self._store[self._at + i]
        return None if name is None else self._graph.node(name)

    def get_tensor(self, pattern_or_name) -> str | None:
        """The tensor through which the node was consumed (``"split:1"``); ``None`` for the root."""
        i = self._slot(pattern_or_name)
        store, at = self._store, self._at
        return None if i is None or store[at + i] is None else store[at + i + self._compiled.tensors]

    def named(self) -> dict[str, Node]:
        """``{name: node}`` for every named pattern that is bound."""
        values, node = self._values, self._graph.node
        return {name: node(values[i]) for name, slots in self._compiled.names.items()
                for i in slots if values[i] is not None}

    def bindings(self) -> dict[Pattern, tuple[Node, str | None]]:
        """``{pattern: (node, tensor)}`` for every bound pattern."""
        values, node, tensors = self._values, self._graph.node, self._compiled.tensors
        return {p: (node(values[i]), values[i + tensors]) for p, i in self._compiled.slots.items()
                if values[i] is not None}

    def body(self) -> set[str]:
        """Names of the bound nodes, leaving out leaf wildcards (``*`` with no inputs),
        which stand for whatever feeds the match rather than belonging to it."""
        names = set(self._store[self._at:self._at + self._compiled.body])
        names.discard(None)
        return names

    def nodes(self) -> list[Node]:
        """Every bound node, each once."""
        names = dict.fromkeys(self._values[i] for i in self._compiled.slots.values())
        names.pop(None, None)
        return [self._graph.node(name) for name in names]

    def __repr__(self) -> str:
        names = ", ".join(f"{k}={v.name}" for k, v in self.named().items())
        return f"<MatchResult root={self._root!r} {names}>"


class GraphMatcher:
    """Finds where a pattern matches, rooted at each node.

    The pattern is compiled when the matcher is made: edit patterns before,
    not after. ``match_op`` and ``match_ops`` work on the graph given to the
    constructor or to ``match_graph``; without one, on the graph the node
    belongs to (as TF's ``op.graph``), when only one live graph holds it.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.patterns import BUILTIN
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> relu = next(n for n in g.nodes if n.op == "Relu")
    >>> GraphMatcher(BUILTIN["layer_activation"]).match_op(relu).get_op("layer").layer
    'conv1'
    """

    def __init__(self, pattern: Pattern, graph: Graph | None = None):
        if isinstance(pattern, str):
            pattern = OpTypePattern(pattern)
        self.pattern = pattern
        self.graph = graph
        self.compiled = compile_pattern(pattern)

    def _node(self, node) -> Node:
        return self._graph().node(node) if isinstance(node, str) else node

    def match_op(self, node) -> MatchResult | None:
        """The match rooted at ``node`` (a Node or a name), or ``None``."""
        if self.graph is None and isinstance(node, Node):
            owners = graphs_containing(node)
            if len(owners) != 1:
                raise ValueError(f"GraphMatcher has no graph and node {node.name!r} is in "
                                 f"{len(owners) or 'no'} live graph(s) (a rewrite shares unchanged nodes): "
                                 "pass graph= to the constructor or use match_graph()")
            return next(GraphMatcher._bound(self, owners[0]).match_ops([node]), None)
        return next(self.match_ops([self._node(node)]), None)

    @staticmethod
    def _bound(matcher: "GraphMatcher", graph: Graph) -> "GraphMatcher":
        """The same compiled pattern on ``graph`` (the matcher itself is not rebound)."""
        bound = object.__new__(GraphMatcher)
        bound.pattern, bound.compiled, bound.graph = matcher.pattern, matcher.compiled, graph
        return bound

    def match_ops(self, nodes: Iterable) -> Iterator[MatchResult]:
        """Matches rooted at each of ``nodes``, in order."""
        compiled = self.compiled
        types = compiled.root_types
        graph = self._graph()
        store: list = []
        match = compiled.matcher(graph, store)
        width = compiled.width
        first_input, producer = compiled.root_inputs, graph.producer_index()
        for node in nodes:
            if isinstance(node, str):
                node = self._node(node)
            if types is not None and node.op not in types:
                continue  # most nodes fail on their op type alone
            accept = first_input.get(node.op)
            if accept is not None and not (node.inputs and producer[node.inputs[0]].op in accept):
                continue  # ... and many others on their first input's
            if match(node):
                yield MatchResult(store, len(store) - width, compiled, graph, node.name)

    def match_graph(self, graph: Graph) -> Iterator[MatchResult]:
        """Matches rooted at every node of ``graph``, in graph order."""
        self.graph = graph
        return self.match_ops(graph.nodes)

    def _graph(self) -> Graph:
        if self.graph is None:
            raise ValueError("GraphMatcher has no graph: pass graph= to the constructor or use match_graph()")
        return self.graph


def find_matches(pattern: Pattern | GraphMatcher, graph: Graph) -> list[MatchResult]:
    """The maximal matches of ``pattern`` in ``graph``, in graph order (``pattern`` may be a
    :class:`GraphMatcher` made before: its compiled pattern is used, not compiled again).

    ``GraphMatcher.match_graph`` yields a match at every root that fits, so a
    pattern with an optional root (``Relu?(…)``) also matches at each inner node
    of a larger match. This drops every match whose root lies in the body of
    another match (see :meth:`MatchResult.body`): one match per occurrence, the
    largest.
    """
    matcher = GraphMatcher._bound(pattern, graph) if isinstance(pattern, GraphMatcher) else GraphMatcher(pattern)
    matches = list(matcher.match_graph(graph))
    if not matches:
        return matches
    compiled = matcher.compiled
    store, width, at_root, body = matches[0]._store, compiled.width, compiled.at_root, compiled.body
    # Each match's body is one slice of the store. Past at_root, a pattern binds
    # a producer of the root, never the root itself (the graph is acyclic), so
    # that part goes in whole; before it, the root's own name is left out.
    owned: set = set()
    update = owned.update
    roots = [m._root for m in matches]
    for at, root in zip(range(0, len(store), width), roots):
        update(store[at + at_root:at + body])
        head = set(store[at:at + at_root])
        head.discard(root)
        update(head)
    return [m for m, root in zip(matches, roots) if root not in owned]
