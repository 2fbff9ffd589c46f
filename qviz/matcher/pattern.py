"""Pattern objects: what to look for. Matching lives in :mod:`.compile` (fast)
and :mod:`.explain` (the reference walk that also says why a match failed)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ..ir import Node

__all__ = ["Pattern", "OpTypePattern", "OneofPattern", "AttrTest", "iter_patterns", "check_pattern",
           "MAX_UNORDERED_INPUTS"]

#: Unordered inputs try every permutation: 8 inputs is 40,320 of them.
MAX_UNORDERED_INPUTS = 8


@dataclass(frozen=True)
class AttrTest:
    """A test on one attribute: equality (``negate`` for inequality) or a predicate.

    >>> AttrTest("padding", "SAME").check(Node("c", "Conv2D", attrs={"padding": "VALID"}))
    "has padding='VALID', expected padding='SAME'"
    """

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

    def children(self) -> Sequence["Pattern"]:
        """The sub-patterns this one matches its inputs (or alternatives) with."""
        raise NotImplementedError

    def root_types(self) -> frozenset[str] | None:
        """Op types a node must have for this pattern to match there (``None``: any)."""
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

    >>> OpTypePattern("Relu|Relu6", inputs=["Conv2D"], optional=True).root_types() == {"Relu", "Relu6", "Conv2D"}
    True
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

    @property
    def types(self) -> frozenset[str] | None:
        """The accepted op types (``None`` for ``'*'``)."""
        return None if self.op_type == "*" else frozenset(self.op_type.split("|"))

    def root_types(self, _seen=None):
        types = self.types
        if types is None or not self.optional:
            return types
        seen = _seen or set()
        if id(self) in seen:  # a reference cycle through optional roots: no constraint known
            return None
        seen.add(id(self))
        inner = self.inputs[0].root_types(seen)
        return None if inner is None else types | inner

    def children(self):
        return self.inputs

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

    def root_types(self, _seen=None):
        seen = _seen or set()
        if id(self) in seen:
            return None
        seen.add(id(self))
        types: set[str] = set()
        for p in self.sub_patterns:
            t = p.root_types(seen)
            if t is None:
                return None
            types |= t
        return frozenset(types)

    def children(self):
        return self.sub_patterns

    def __repr__(self) -> str:
        return f"OneofPattern({len(self.sub_patterns)} alternatives{', name=' + repr(self.name) if self.name else ''})"


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
        stack.extend(reversed(p.children()))


def check_pattern(root: Pattern) -> None:
    """Refuse a pattern whose matching would never end.

    A pattern object may be used again below itself (``$name``). Each step from
    a node to one of its inputs moves up the graph, so a loop that takes such a
    step ends. A loop made only of steps that stay at the same node (one-of
    alternatives, the first input of an absent optional node) would not.

    >>> a = OneofPattern(["Relu"], name="a")
    >>> a.sub_patterns += (a,)
    >>> check_pattern(a)
    Traceback (most recent call last):
    ...
    ValueError: pattern 'a' reaches itself without consuming an input: matching it would never end
    """
    looping = in_place_cycle(root)
    if looping is not None:
        raise ValueError(f"pattern {looping.name or looping!r} reaches itself without consuming an input: "
                         "matching it would never end")


def in_place_cycle(root: Pattern) -> Pattern | None:
    """A pattern that reaches itself by steps that stay at the same node, or ``None``."""
    done: set[int] = set()
    for start in iter_patterns(root):
        path, stack = {id(start)}, [(start, iter(in_place_children(start)))]
        while stack:
            p, kids = stack[-1]
            k = next(kids, None)
            if k is None:
                stack.pop()
                path.discard(id(p))
                done.add(id(p))
            elif id(k) in path:
                return k
            elif id(k) not in done:
                path.add(id(k))
                stack.append((k, iter(in_place_children(k))))
    return None


def in_place_children(p: Pattern) -> Sequence[Pattern]:
    """The sub-patterns matched at the same node as ``p``: a one-of's
    alternatives, or the first input of an optional node (standing in for it)."""
    if isinstance(p, OneofPattern):
        return p.sub_patterns
    return p.inputs[:1] if getattr(p, "optional", False) else ()
