"""Tree patterns over the IR, with TensorFlow ``graph_matcher`` semantics.

A pattern describes an op and, recursively, the ops producing its inputs. A
match is rooted at one node and follows *inputs* (towards the graph's inputs).

>>> import numpy as np
>>> from qviz.ir import Graph, Node
>>> g = Graph([Node("x", "Placeholder"), Node("w", "Const"), Node("c", "Conv2D", ["x", "w"]),
...            Node("r", "Relu", ["c"])], inputs=["x"], outputs=["r"])
>>> pattern = OpTypePattern("Relu|Relu6", name="act",
...                         inputs=[OpTypePattern("Conv2D", name="conv", inputs=["*", "Const"])])
>>> [m.get_op("conv").name for m in GraphMatcher(pattern).match_graph(g)]
['c']
>>> print(explain(pattern, g, "c"))
c (Conv2D, layer c) does not match: it is a Conv2D, expected Relu|Relu6

Semantics, as in ``tensorflow.contrib.quantize``'s ``graph_matcher``:

* ``op_type`` ``'*'`` matches any op; ``'A|B'`` matches op types A or B exactly.
* With ``inputs`` given, the node must have exactly that many *data* inputs
  (control inputs never count), each matched positionally, or, with
  ``ordered_inputs=False``, under some permutation. With no inputs (``None`` or
  ``[]``), any inputs are accepted. A string input means ``OpTypePattern(that)``.
* :class:`OneofPattern` tries its alternatives in order; the first that matches wins.

Deliberate differences from the upstream implementation:

* A failed alternative (a permutation, a one-of branch, an absent optional
  node) never leaks its partial bindings into the result; upstream merged them
  before knowing the branch failed.
* A pattern object used twice in one tree must bind the *same* node both times
  (upstream silently rebound it). This is how a pattern says "this tensor feeds
  both ops", e.g. the shared ``γ·rsqrt(σ²+ε)`` factor of an unfused batch norm.
* The input limit applies only to unordered inputs (they try permutations):
  upstream applied it to ordered inputs too, where it guards nothing.

Extensions: attribute tests (``attrs={"data_format": "NHWC"}``, or a callable
predicate) and optional nodes (``optional=True``: the node may be absent, in
which case its *first* input pattern is matched in its place).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from .ir import Graph, Node

__all__ = [
    "Pattern", "OpTypePattern", "OneofPattern", "AttrTest", "GraphMatcher", "MatchResult",
    "Failure", "explain", "explain_failure", "explain_layer", "find_matches", "MAX_UNORDERED_INPUTS",
]

#: Unordered inputs try every permutation: 8 inputs is 40,320 of them.
MAX_UNORDERED_INPUTS = 8


@dataclass(frozen=True)
class AttrTest:
    """A test on one attribute: equality (``negate`` for inequality) or a predicate."""

    name: str
    value: object = None
    negate: bool = False
    predicate: Callable | None = field(default=None, compare=False)

    def check(self, node: Node) -> str | None:
        """``None`` if the node passes, else why it does not."""
        if self.name not in node.attrs:
            return f"has no attribute {self.name!r}"
        actual = node.attrs[self.name]
        if self.predicate is not None:
            return None if self.predicate(actual) else f"has {self.name}={actual!r}, which fails the test"
        equal = _equal(actual, self.value)
        if equal != self.negate:
            return None
        op = "!=" if self.negate else "="
        return f"has {self.name}={actual!r}, expected {self.name}{op}{self.value!r}"


def _equal(a, b) -> bool:
    try:
        return bool(a == b) if not hasattr(a, "shape") else bool((a == b).all())
    except (TypeError, ValueError):
        return False


class Pattern:
    """Base class: something that can match at a node."""

    name: str | None = None
    _rt: frozenset[str] | None = None  # root op types, set by GraphMatcher (None: any / unknown)

    def _match(self, node: Node, tensor: str | None, walk: "_Walk", depth: int, path: tuple) -> bool:
        """Try to match at ``node``; on success the bindings are in ``walk``, on
        failure ``walk`` is exactly as it was."""
        raise NotImplementedError

    def _root_types(self) -> frozenset[str] | None:
        """Op types a root node may have (``None``: any)."""
        raise NotImplementedError

    def _children(self) -> Sequence["Pattern"]:
        raise NotImplementedError


class OpTypePattern(Pattern):
    """Matches a node by op type, attributes and (recursively) input producers.

    Args:
        op_type: ``'*'``, one type, or ``'A|B|C'``.
        name: optional name, for :meth:`MatchResult.get_op` and the text form.
        inputs: patterns (or op-type strings) for the data inputs, or ``None``.
        ordered_inputs: ``False`` to accept the inputs in any order.
        attrs: ``{attr: value}`` (equality), ``{attr: callable}`` (predicate), or
            a sequence of :class:`AttrTest`.
        optional: the node may be absent; then ``inputs[0]`` matches in its place.
    """

    def __init__(self, op_type: str, name: str | None = None, inputs: Sequence | None = None,
                 ordered_inputs: bool = True, *, attrs=None, optional: bool = False):
        if not op_type or any(not t.strip() for t in op_type.split("|")):
            raise ValueError(f"op_type {op_type!r} must be '*' or op types separated by '|'")
        self.op_type = op_type
        self.name = name
        self.inputs = tuple(OpTypePattern(p) if isinstance(p, str) else p for p in (inputs or ()))
        for p in self.inputs:
            if not isinstance(p, Pattern):
                raise TypeError(f"pattern input {p!r} is not a Pattern or op type string")
        self.ordered_inputs = ordered_inputs
        if not ordered_inputs and len(self.inputs) > MAX_UNORDERED_INPUTS:
            raise ValueError(f"at most {MAX_UNORDERED_INPUTS} unordered inputs are supported "
                             f"(got {len(self.inputs)}): every permutation is tried")
        self.attrs = _attr_tests(attrs)
        self.optional = optional
        if optional and not self.inputs:
            raise ValueError(f"optional pattern {op_type!r} needs inputs: its first input "
                             "is matched in its place when the node is absent")
        self._types = None if op_type == "*" else frozenset(op_type.split("|"))

    def _root_types(self):
        if self._types is None:
            return None
        if self.optional:
            inner = self.inputs[0]._root_types()
            return None if inner is None else self._types | inner
        return self._types

    def _children(self):
        return self.inputs

    def _match(self, node, tensor, walk, depth, path) -> bool:
        if not walk.record and self._rt is not None and node.op not in self._rt:
            return False  # fast path: no branch of this sub-pattern can root at this op
        bound = walk.bindings.get(self)
        if bound is not None:
            if bound[0] is node:
                return True
            walk.fail(depth, path, node, f"is not the same op as {bound[0].name!r}, which the "
                                         f"pattern{_named(self)} already bound")
            return False
        mark = len(walk.trail)
        if self._match_present(node, tensor, walk, depth, path):
            return True
        walk.undo(mark)
        if self.optional:  # absent: the first input stands in its place
            return self.inputs[0]._match(node, tensor, walk, depth, path)
        return False

    def _match_present(self, node, tensor, walk, depth, path) -> bool:
        if self._types is not None and node.op not in self._types:
            if not self.optional:  # an absent optional node is always an alternative
                walk.fail(depth, path, node, f"expected {self.op_type}")
            return False
        for test in self.attrs:
            why = test.check(node)
            if why is not None:
                walk.fail(depth, path, node, why)
                return False
        if not self.inputs:
            walk.bind(self, node, tensor)
            return True
        actual = node.inputs
        if len(actual) != len(self.inputs):
            walk.fail(depth, path, node, f"has {len(actual)} data inputs, expected {len(self.inputs)}")
            return False
        if self.ordered_inputs and not walk.record:
            # one-level lookahead: reject before binding or recursing when an input's
            # producer cannot root the pattern expected there
            producer = walk.producer
            for pattern, t in zip(self.inputs, actual):
                rt = pattern._rt
                if rt is not None and producer(t).op not in rt:
                    return False
        walk.bind(self, node, tensor)
        orders = ((range(len(actual)),) if self.ordered_inputs
                  else itertools.permutations(range(len(actual))))
        mark = len(walk.trail)
        for order in orders:
            for pattern, i in zip(self.inputs, order):
                t = actual[i]
                if not pattern._match(walk.producer(t), t, walk, depth + 1, path + ((node, i),)):
                    walk.undo(mark)  # a failed permutation leaves nothing bound
                    break
            else:
                return True
        return False

    def __repr__(self) -> str:
        return f"OpTypePattern({self.op_type!r}{', name=' + repr(self.name) if self.name else ''})"


class OneofPattern(Pattern):
    """Matches if any sub-pattern matches; the first that matches wins.

    Unlike upstream, a one-of may have a ``name`` that binds the matched node.
    """

    def __init__(self, sub_patterns: Iterable, name: str | None = None):
        self.sub_patterns = tuple(OpTypePattern(p) if isinstance(p, str) else p for p in sub_patterns)
        if not self.sub_patterns:
            raise ValueError("OneofPattern needs at least one sub-pattern")
        self.name = name

    def _root_types(self):
        types: set[str] = set()
        for p in self.sub_patterns:
            t = p._root_types()
            if t is None:
                return None
            types |= t
        return frozenset(types)

    def _children(self):
        return self.sub_patterns

    def _match(self, node, tensor, walk, depth, path) -> bool:
        bound = walk.bindings.get(self)
        if bound is not None:
            return bound[0] is node
        for p in self.sub_patterns:
            if not walk.record and p._rt is not None and node.op not in p._rt:
                continue
            if p._match(node, tensor, walk, depth, path):
                if self.name is not None:
                    walk.bind(self, node, tensor)
                return True
        return False

    def __repr__(self) -> str:
        return f"OneofPattern({len(self.sub_patterns)} alternatives{', name=' + repr(self.name) if self.name else ''})"


def _named(p: Pattern) -> str:
    return f" {p.name!r}" if p.name else ""


def _attr_tests(attrs) -> tuple[AttrTest, ...]:
    if not attrs:
        return ()
    if isinstance(attrs, Mapping):
        return tuple(AttrTest(k, predicate=v) if callable(v) else AttrTest(k, v) for k, v in attrs.items())
    tests = tuple(attrs)
    for t in tests:
        if not isinstance(t, AttrTest):
            raise TypeError(f"attribute test {t!r} is not an AttrTest")
    return tests


def iter_patterns(root: Pattern) -> Iterator[Pattern]:
    """Every distinct pattern object in a tree, depth first, each once."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        p = stack.pop()
        if id(p) in seen:
            continue
        seen.add(id(p))
        yield p
        stack.extend(reversed(p._children()))


# -- failures -------------------------------------------------------------


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
    """State of one match attempt: the graph and the deepest failure seen."""

    __slots__ = ("graph", "record", "deepest", "producer", "bindings", "trail")

    def __init__(self, graph: Graph, record: bool):
        self.graph = graph
        self.record = record
        self.deepest: Failure | None = None
        self.producer = graph.producer_index().__getitem__ if graph is not None else None
        # Backtracking state: one dict of bindings plus the order they were made,
        # so a failed branch is undone by rewinding (no copies per binding).
        self.bindings: dict = {}
        self.trail: list = []

    def bind(self, pattern, node, tensor) -> None:
        self.bindings[pattern] = (node, tensor)
        self.trail.append(pattern)

    def undo(self, mark: int) -> None:
        trail, bindings = self.trail, self.bindings
        while len(trail) > mark:
            del bindings[trail.pop()]

    def attempt(self, pattern: "Pattern", node: Node) -> dict | None:
        """Match ``pattern`` rooted at ``node``; the bindings, or None."""
        self.bindings, self.trail = {}, []
        return dict(self.bindings) if pattern._match(node, None, self, 0, ()) else None

    def fail(self, depth, path, node, reason):
        if not self.record:
            return
        best = self.deepest
        if best is None or depth > best.depth:
            self.deepest = Failure(depth, path, node, reason)
        elif (depth == best.depth and node is best.node and path == best.path
              and reason.startswith("expected ") and best.reason.startswith("expected ")):
            # alternatives (one-of branches) failing on the same node: list every accepted type
            types = dict.fromkeys(best.reason[9:].split("|") + reason[9:].split("|"))
            self.deepest = Failure(depth, path, node, "expected " + "|".join(types))


# -- matching ---------------------------------------------------------------


class MatchResult:
    """The nodes (and consumed tensors) bound by one match."""

    def __init__(self, bindings: dict, names: Mapping[str, tuple[Pattern, ...]], root: Node):
        self._bindings = bindings
        self._names = names
        self.root = root

    def _pattern(self, key) -> Pattern | None:
        if isinstance(key, Pattern):
            return key
        if isinstance(key, str):
            for p in self._names.get(key, ()):
                if p in self._bindings:
                    return p
            return None
        raise TypeError(f"MatchResult keys are Patterns or names, not {type(key).__name__}")

    def get_op(self, pattern_or_name) -> Node | None:
        """The node bound to a pattern (object or name); ``None`` if unbound."""
        p = self._pattern(pattern_or_name)
        return self._bindings[p][0] if p is not None and p in self._bindings else None

    def get_tensor(self, pattern_or_name) -> str | None:
        """The tensor through which the node was consumed (``"split:1"``); ``None`` for the root."""
        p = self._pattern(pattern_or_name)
        return self._bindings[p][1] if p is not None and p in self._bindings else None

    def named(self) -> dict[str, Node]:
        """``{name: node}`` for every named pattern that is bound."""
        return {name: self._bindings[p][0] for name, ps in self._names.items()
                for p in ps if p in self._bindings}

    def body(self) -> set[str]:
        """Names of the bound nodes, leaving out leaf wildcards (``*`` with no inputs),
        which stand for whatever feeds the match rather than belonging to it."""
        return {node.name for p, (node, _) in self._bindings.items()
                if not (isinstance(p, OpTypePattern) and p._types is None and not p.inputs)}

    def nodes(self) -> list[Node]:
        """Every bound node, each once."""
        seen: dict[str, Node] = {}
        for node, _ in self._bindings.values():
            seen.setdefault(node.name, node)
        return list(seen.values())

    def __repr__(self) -> str:
        names = ", ".join(f"{k}={v.name}" for k, v in self.named().items())
        return f"<MatchResult root={self.root.name!r} {names}>"


class GraphMatcher:
    """Finds where a pattern matches, rooted at each node.

    ``match_op`` and ``match_ops`` need the graph the nodes belong to: give it to
    the constructor, or call ``match_graph(graph)``.
    """

    def __init__(self, pattern: Pattern, graph: Graph | None = None):
        if isinstance(pattern, str):
            pattern = OpTypePattern(pattern)
        self.pattern = pattern
        self.graph = graph
        names: dict[str, list[Pattern]] = {}
        for p in iter_patterns(pattern):
            if p.name:
                names.setdefault(p.name, []).append(p)
        self._names = {k: tuple(v) for k, v in names.items()}
        # Patterns are plain objects that may be edited until matched; the root
        # types that drive the fast path are computed here, once per matcher.
        for p in iter_patterns(pattern):
            p._rt = p._root_types()
        self._root_types = pattern._rt

    def _node(self, node) -> Node:
        if self.graph is None:
            raise ValueError("GraphMatcher has no graph: pass graph= to the constructor or use match_graph()")
        return self.graph.node(node) if isinstance(node, str) else node

    def match_op(self, node) -> MatchResult | None:
        """The match rooted at ``node`` (a Node or a name), or ``None``."""
        node = self._node(node)
        if self._root_types is not None and node.op not in self._root_types:
            return None
        bindings = _Walk(self.graph, False).attempt(self.pattern, node)
        return None if bindings is None else MatchResult(bindings, self._names, node)

    def match_ops(self, nodes: Iterable) -> Iterator[MatchResult]:
        """Matches rooted at each of ``nodes``, in order."""
        types = self._root_types
        walk = _Walk(self.graph, False)
        for node in nodes:
            if isinstance(node, str):
                node = self._node(node)
            if types is not None and node.op not in types:
                continue  # the fast path: most nodes fail on their op type
            bindings = walk.attempt(self.pattern, node)
            if bindings is not None:
                yield MatchResult(bindings, self._names, node)

    def match_graph(self, graph: Graph) -> Iterator[MatchResult]:
        """Matches rooted at every node of ``graph``, in graph order."""
        self.graph = graph
        return self.match_ops(graph.nodes)


def find_matches(pattern: Pattern, graph: Graph) -> list[MatchResult]:
    """The maximal matches of ``pattern`` in ``graph``, in graph order.

    ``GraphMatcher.match_graph`` yields a match at every root that fits, so a
    pattern with an optional root (``Relu?(…)``) also matches at each inner node
    of a larger match. This drops every match whose root lies in the body of
    another match (see :meth:`MatchResult.body`): one match per occurrence, the
    largest.
    """
    matches = list(GraphMatcher(pattern).match_graph(graph))
    owner: dict[str, int] = {}
    for i, m in enumerate(matches):
        for name in m.body():
            if name != m.root.name:
                owner.setdefault(name, i)
    return [m for m in matches if m.root.name not in owner]


def explain_failure(pattern: Pattern, graph: Graph, node_name: str) -> Failure | None:
    """The deepest failure of ``pattern`` rooted at ``node_name``; ``None`` if it matches."""
    GraphMatcher(pattern)  # computes the root types of every sub-pattern
    node = graph.node(node_name)
    walk = _Walk(graph, True)
    if walk.attempt(pattern, node) is not None:
        return None
    return walk.deepest or Failure(0, (), node, "does not match the pattern")


def explain(pattern: Pattern, graph: Graph, node_name: str) -> str:
    """Why ``pattern`` does not match at ``node_name``, in words a user understands.

    The deepest pattern position that failed is reported, with what was found
    there instead (see the module example).
    """
    node = graph.node(node_name)
    failure = explain_failure(pattern, graph, node_name)
    head = f"{node.name} ({node.op}, layer {node.layer})"
    if failure is None:
        return f"{head} matches"
    return f"{head} does not match: {failure.describe()}"


def explain_layer(pattern: Pattern, graph: Graph, layer: str) -> str:
    """Why ``pattern`` does not match anywhere in ``layer``.

    Tries every node of the layer as the root and explains the attempt that got
    deepest into the pattern (for a batch-norm layer, that is its output op).
    """
    best_node, best = None, None
    for node in graph.layer_nodes(layer):
        failure = explain_failure(pattern, graph, node.name)
        if failure is None:
            return f"layer {layer} matches at {node.name} ({node.op})"
        if best is None or failure.depth >= best.depth:
            best_node, best = node, failure
    return (f"layer {layer} does not match; the closest is {best_node.name} ({best_node.op}): "
            f"{best.describe()}")
