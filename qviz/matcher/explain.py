"""The reference walk: matches one root by following the pattern, and records
the deepest position that failed so a user can be told *why*.

It is the executable statement of the matching rules (see :mod:`qviz.matcher`);
:mod:`.compile` turns the same rules into fast code, and the tests check that
the two agree.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..ir import Graph, Node
from .pattern import OneofPattern, OpTypePattern, Pattern, check_pattern

__all__ = ["Failure", "explain", "explain_failure", "explain_layer", "reference_match", "nowhere"]


@dataclass(frozen=True)
class Failure:
    """Where a match failed: the deepest pattern position reached.

    ``path`` is the chain of (node, input index) from the root down to the
    parent of ``node``; ``node`` is what was found there; ``reason`` says what
    was wrong with it, in words.
    """

    depth: int
    path: tuple
    node: Node
    reason: str

    def describe(self) -> str:
        """The failure as a phrase: ``its input 0 comes from 'c' (ConcatV2, layer cat), expected …``."""
        found = f"{self.node.name!r} ({self.node.op}, layer {self.node.layer})"
        if not self.path:
            reason = self.reason
            if reason.startswith("expected "):
                return f"it is a {self.node.op}, {reason}"
            return f"it {reason}"
        (_, i0), rest = self.path[0], self.path[1:]
        route = f"its input {i0}"
        for parent, i in rest:
            route += f" → {parent.name!r} ({parent.op}) input {i}"
        if self.reason.startswith("expected "):
            return f"{route} comes from {found}, {self.reason}"
        return f"{route} comes from {found}, which {self.reason}"


class _Walk:
    """One match attempt: bindings with undo, and the deepest failure seen."""

    def __init__(self, graph: Graph):
        self.producer = graph.producer_index().__getitem__
        self.deepest: Failure | None = None
        # One dict of bindings plus the order they were made, so a failed branch
        # is undone by rewinding.
        self.bindings: dict = {}
        self.trail: list = []

    def attempt(self, pattern: Pattern, node: Node) -> dict | None:
        """Match ``pattern`` rooted at ``node``: ``{pattern: (node, tensor)}``, or None."""
        check_pattern(pattern)
        self.bindings, self.trail = {}, []
        return dict(self.bindings) if self.match(pattern, node, None, 0, ()) else None

    def bind(self, pattern, node, tensor) -> None:
        self.bindings[pattern] = (node, tensor)
        self.trail.append(pattern)

    def undo(self, mark: int) -> None:
        while len(self.trail) > mark:
            del self.bindings[self.trail.pop()]

    def fail(self, depth, path, node, reason) -> None:
        best = self.deepest
        if best is None or depth > best.depth:
            self.deepest = Failure(depth, path, node, reason)
        elif (depth == best.depth and node is best.node and path == best.path
              and reason.startswith("expected ") and best.reason.startswith("expected ")):
            # alternatives (one-of branches) failing on the same node: list every accepted type
            types = dict.fromkeys(best.reason[9:].split("|") + reason[9:].split("|"))
            self.deepest = Failure(depth, path, node, "expected " + "|".join(types))

    def match(self, p: Pattern, node: Node, tensor, depth: int, path: tuple) -> bool:
        """On success the bindings are in ``self``; on failure they are as they were."""
        bound = self.bindings.get(p)
        if bound is not None:  # a pattern object used twice binds one node
            if bound[0] is node:
                return True
            self.fail(depth, path, node, f"is not the same op as {bound[0].name!r}, which the "
                                         f"pattern{_named(p)} already bound")
            return False
        if isinstance(p, OneofPattern):
            for sub in p.sub_patterns:
                if self.match(sub, node, tensor, depth, path):
                    if p.name is not None:
                        self.bind(p, node, tensor)
                    return True
            return False
        mark = len(self.trail)
        if self.present(p, node, tensor, depth, path):
            return True
        self.undo(mark)
        if p.optional:  # absent: the first input stands in its place
            return self.match(p.inputs[0], node, tensor, depth, path)
        return False

    def present(self, p: OpTypePattern, node, tensor, depth, path) -> bool:
        types = p.types
        if types is not None and node.op not in types:
            if not p.optional:  # an absent optional node is always an alternative
                self.fail(depth, path, node, f"expected {p.op_type}")
            return False
        for test in p.attrs:
            why = test.check(node)
            if why is not None:
                self.fail(depth, path, node, why)
                return False
        if not p.inputs:
            self.bind(p, node, tensor)
            return True
        actual = node.inputs
        if len(actual) != len(p.inputs):
            self.fail(depth, path, node, f"has {len(actual)} data inputs, expected {len(p.inputs)}")
            return False
        self.bind(p, node, tensor)
        orders = ((range(len(actual)),) if p.ordered_inputs
                  else itertools.permutations(range(len(actual))))
        mark = len(self.trail)
        for order in orders:
            for sub, i in zip(p.inputs, order):
                t = actual[i]
                if not self.match(sub, self.producer(t), t, depth + 1, path + ((node, i),)):
                    self.undo(mark)  # a failed permutation leaves nothing bound
                    break
            else:
                return True
        return False


def _named(p: Pattern) -> str:
    return f" {p.name!r}" if p.name else ""


def reference_match(pattern: Pattern, graph: Graph, node: Node | str) -> dict | None:
    """``{pattern: (node, tensor)}`` for the match rooted at ``node``, or ``None``,
    computed by the reference walk (slow; :class:`GraphMatcher` is the fast way)."""
    node = graph.node(node) if isinstance(node, str) else node
    return _Walk(graph).attempt(pattern, node)


def explain_failure(pattern: Pattern, graph: Graph, node_name: str) -> Failure | None:
    """The deepest failure of ``pattern`` rooted at ``node_name``; ``None`` if it matches."""
    node = graph.node(node_name)
    walk = _Walk(graph)
    if walk.attempt(pattern, node) is not None:
        return None
    return walk.deepest or Failure(0, (), node, "does not match the pattern")


def explain(pattern: Pattern, graph: Graph, node_name: str) -> str:
    """Why ``pattern`` does not match at ``node_name``, in words a user understands.

    The deepest pattern position that failed is reported, with what was found
    there instead (see the example in :mod:`qviz.matcher`).
    """
    node = graph.node(node_name)
    failure = explain_failure(pattern, graph, node_name)
    head = f"{node.name} ({node.op}, layer {node.layer})"
    if failure is None:
        return f"{head} matches"
    return f"{head} does not match: {failure.describe()}"


_MAIN_ROLES = ("layer", "bn", "act", "add", "bypass")
_PLUMBING = frozenset({"Identity", "Const", "Squeeze", "Reshape", "ExpandDims"})


def explain_layer(pattern: Pattern, graph: Graph, layer: str) -> str:
    """Whether ``layer`` takes part in a match of ``pattern``, and if not, why.

    A layer takes part when one of its ops is in the body of a match, wherever
    that match is rooted: a conv whose batch norm folds is in the conv+BN match
    rooted at the batch norm's output, in another layer. Otherwise every node of
    the layer is tried as the root and the attempt that got deepest into the
    pattern is explained (for a batch-norm layer, that is its output op).
    """
    from .graph_matcher import find_matches   # at call time: graph_matcher builds on this module

    own = {node.name for node in graph.layer_nodes(layer)}
    for m in find_matches(pattern, graph):
        if own & m.body():
            mine = [(name, node) for name, node in m.named().items() if node.name in own]
            # Name the layer's main op (the conv, the batch norm), not a weight read or a bias reshape.
            mine.sort(key=lambda nn: (nn[0] not in _MAIN_ROLES, nn[1].op in _PLUMBING))
            role = f" as {mine[0][0]} ({mine[0][1].op})" if mine else ""
            where = "" if m.root.layer == layer else f", layer {m.root.layer}"
            return f"layer {layer} takes part{role} in the match rooted at {m.root.name} ({m.root.op}{where})"
    best_node, best = None, None
    for node in graph.layer_nodes(layer):
        failure = explain_failure(pattern, graph, node.name)
        if failure is None:
            return f"layer {layer} matches at {node.name} ({node.op})"
        if best is None or failure.depth >= best.depth:
            best_node, best = node, failure
    return (f"layer {layer} does not match; the closest is {best_node.name} ({best_node.op}): "
            f"{best.describe()}")


def nowhere(pattern: Pattern, graph: Graph) -> str | None:
    """Why ``pattern`` can match at no node of ``graph`` at all, if no op of ``graph`` has
    a type its root takes (a typo, mostly: ``Conv2d``); None if some op has.

    >>> from qviz.ir import Graph, Node
    >>> g = Graph([Node("x", "Placeholder"), Node("c", "Conv2D", ["x", "x"])])
    >>> nowhere(OpTypePattern("Conv2d|Conv3D"), g)
    'no op of type Conv2d or Conv3D in this model'
    >>> nowhere(OpTypePattern("Conv2D"), g) is None and nowhere(OpTypePattern("*"), g) is None
    True
    """
    types = pattern.root_types()
    present = graph.op_counts()
    if types is None or any(t in present for t in types):
        return None
    return f"no op of type {' or '.join(sorted(types))} in this model"
