"""Patterns compiled to Python functions: the fast way to match.

:mod:`.explain` states the rules as a walk over the pattern. Walking is slow in
Python: every step dispatches on the pattern's kind, asks whether it is bound,
records failures and keeps an undo trail. Here each pattern object becomes one
small generated function that does only what that pattern needs, with its op
types, input count and children fixed in the code. Bindings go into a flat list
of slots (node name, tensor) instead of a dict of tuples; a successful match
appends its slots to one list shared by the whole scan, and a failed one
allocates nothing.

Undo without a trail: a pattern reached on one path only (the usual case) knows
statically which slots its subtree may fill, and clears those its children
actually filled when a later sibling fails. Patterns used twice in one tree
(``$scale``) are checked for an existing binding on entry and log what they
fill on a trail, as in the reference walk, because they may be reached bound.

>>> from qviz.ir import Graph, Node
>>> from qviz.matcher import OpTypePattern
>>> g = Graph([Node("x", "Placeholder"), Node("r", "Relu", ["x"])], inputs=["x"], outputs=["r"])
>>> relu = OpTypePattern("Relu", inputs=[OpTypePattern("*", name="x")])
>>> compiled = compile_pattern(relu)
>>> values = []
>>> match = compiled.matcher(g, values)
>>> match(g.node("r")), match(g.node("x"))
(True, False)
>>> values[compiled.slots[relu]], values[compiled.slots[relu.inputs[0]] + compiled.tensors]
('r', 'x:0')
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

from ..ir import Graph, Node
from .pattern import OneofPattern, OpTypePattern, Pattern, check_pattern, in_place_children, iter_patterns

__all__ = ["CompiledPattern", "compile_pattern"]

#: Ordered inputs up to this many are unrolled into nested ``if``s; more use a loop.
_UNROLL = 12
@functools.lru_cache(maxsize=256)
def _compiled(source: str):
    """The code object of a generated matcher (patterns recur: the app recompiles
    the same few on every redraw)."""
    return compile(source, "<qviz pattern>", "exec")


class CompiledPattern:
    """One pattern compiled; :meth:`matcher` binds it to a graph.

    A match is ``width = 2 * len(patterns)`` strings: ``values[slots[p]]`` is
    the name of the node bound to pattern ``p`` (``None`` if unbound) and
    ``values[slots[p] + tensors]`` the tensor through which its parent consumed
    it (meaningful only when bound).

    The slots are laid out so that :func:`find_matches` reads each match's
    body as one slice: first the patterns that may bind the root node itself
    (``[0, at_root)``), then the rest of the body (``[at_root, body)``), then
    leaf wildcards (``*`` with no inputs, which stand for whatever feeds the
    match rather than belonging to it) and unnamed one-ofs (which bind nothing).

    Attributes:
        pattern: the root pattern.
        slots: pattern object → index of its node in a match's values.
        names: name → slots of the patterns with that name, in tree order.
        tensors: offset from a node's slot to its tensor's.
        width: values per match.
        at_root: slots below this one are of patterns that may bind the root
            node itself: the root pattern and what stands in its place (one-of
            alternatives, the first input of an absent optional node). Every
            other pattern binds a producer of the root, reached through an input.
        body: slots below this one belong to the match's body.
        root_types: op types a root node must have (``None``: any).
        root_inputs: op type → the op types the producer of a root's input 0
            must have, for the root op types where the pattern says (a
            necessary condition, checked before an attempt).
        source: the generated Python, for the curious.
    """

    def __init__(self, pattern: Pattern):
        check_pattern(pattern)
        self.pattern = pattern
        order = list(iter_patterns(pattern))
        in_place = _in_place(pattern)
        outside = [p for p in order if _leaf_wildcard(p) or _unbound(p)]
        out = set(outside)   # patterns hash by identity; a list made this quadratic (20k alternatives: 194 s)
        at_root = [p for p in order if p in in_place and p not in out]
        layout = at_root + [p for p in order if p not in in_place and p not in out] + outside
        self.slots = {p: i for i, p in enumerate(layout)}
        self.tensors, self.width = len(layout), 2 * len(layout)
        self.at_root, self.body = len(at_root), len(layout) - len(outside)
        names: dict[str, list[int]] = {}
        for p in order:
            if p.name:
                names.setdefault(p.name, []).append(self.slots[p])
        self.names = {k: tuple(v) for k, v in names.items()}
        self.root_types = pattern.root_types()
        self.root_inputs = _root_inputs(pattern, self.root_types)
        self.source, constants = _Generator(pattern, order, self.slots, self.tensors).generate()
        namespace = dict(constants)
        exec(_compiled(self.source), namespace)  # defines make(P, BLANK, OUT)
        self._make = namespace["make"]
        self._blank = [None] * self.width

    def matcher(self, graph: Graph, out: list) -> Callable[[Node], bool]:
        """``match(node)`` → whether the pattern matches rooted at ``node``; if it
        does, the match's values are appended to ``out``.

        One list for all the matches of a scan, rather than a tuple each: a young
        container is scanned by every garbage collection until it ages, and
        scanning means touching each node name it holds, scattered in memory (on
        1M ops that was a fifth of the time). One list ages at once.

        The returned function does not check the root's op type against
        :attr:`root_types`; callers skip those nodes first (it is their fast path).
        """
        return self._make(graph.producer_index(), self._blank, out)


def compile_pattern(pattern: Pattern) -> CompiledPattern:
    """Compile ``pattern`` (after its last edit: later edits are not seen)."""
    return CompiledPattern(pattern)


def _in_place(root: Pattern) -> set[Pattern]:
    """The patterns reachable from ``root`` without consuming an input."""
    seen, stack = {root}, [root]
    while stack:
        for k in in_place_children(stack.pop()):
            if k not in seen:
                seen.add(k)
                stack.append(k)
    return seen


def _root_inputs(root: Pattern, root_types) -> dict[str, frozenset[str]]:
    """For each root op type, what the producer of the root's first input may be.

    Whatever the path through one-ofs and absent optional nodes, some op-type
    pattern reachable in place is matched *present* at the root; the root's
    input 0 must then fit what that pattern expects there. Many attempts end
    on exactly that (an ``Identity`` read of a constant is no layer output);
    answering it before the attempt saves a few calls each.
    """
    if root_types is None:
        return {}
    allowed: dict[str, set[str] | None] = {}  # None: anything
    for q in _in_place(root):
        if not isinstance(q, OpTypePattern):
            continue
        accept: set[str] | None = set() if q.inputs else None
        for k in q.inputs[:1] if q.ordered_inputs else q.inputs:
            types = k.root_types()
            accept = None if types is None or accept is None else accept | types
        for op in root_types if q.types is None else q.types & root_types:
            before = allowed.get(op, set())
            allowed[op] = None if before is None or accept is None else before | accept
    return {op: frozenset(a) for op, a in allowed.items() if a is not None}


def _leaf_wildcard(p: Pattern) -> bool:
    return isinstance(p, OpTypePattern) and p.op_type == "*" and not p.inputs


def _shared(root: Pattern, order: list[Pattern]) -> set[Pattern]:
    """Patterns that may be reached while already bound.

    Those referenced more than once (the root counts as one reference). Below a
    shared pattern that binds itself before its inputs, a second visit stops
    at it; but an absent optional node or an unnamed one-of binds nothing, so
    what is below them may be visited again, and is shared too.
    """
    refs: dict[Pattern, int] = {root: 1}
    for p in order:
        for c in p.children():
            refs[c] = refs.get(c, 0) + 1
    shared = {p for p in order if refs[p] > 1}
    stack = list(shared)
    while stack:
        q = stack.pop()
        if _unbound(q) or getattr(q, "optional", False):
            for c in q.children():
                if c not in shared:
                    shared.add(c)
                    stack.append(c)
    return shared


class _Generator:
    """Writes the source of ``make(P, BLANK, OUT)``, which returns ``root(node)``."""

    def __init__(self, root: Pattern, order: list[Pattern], slots: dict[Pattern, int], tensors: int):
        self.root, self.order, self.slots, self.tensors = root, order, slots, tensors
        self.index = {p: i for i, p in enumerate(order)}
        self.shared = _shared(root, order)
        self.constants: dict[str, object] = {}
        self.own: dict[Pattern, tuple[int, ...]] = {}

    def _own(self, p: Pattern) -> tuple[int, ...]:
        """Slots an attempt at ``p`` may fill, except below shared patterns (which
        log what they fill on the trail)."""
        if p not in self.own:
            slots = [] if _unbound(p) else [self.slots[p]]
            for c in p.children():
                slots += self.owned(c)
            self.own[p] = tuple(dict.fromkeys(slots))
        return self.own[p]

    def owned(self, c: Pattern) -> tuple[int, ...]:
        """What a parent clears for its child ``c`` when a later sibling fails."""
        return () if c in self.shared else self._own(c)

    def _needs_trail(self, p: Pattern) -> bool:
        """Whether a shared pattern may be bound during an attempt at ``p``."""
        seen, stack = set(), [p]
        while stack:
            q = stack.pop()
            if q in self.shared:
                return True
            if q not in seen:
                seen.add(q)
                stack.extend(q.children())
        return False

    def const(self, name: str, value) -> str:
        self.constants[name] = value
        return name

    # -- code pieces
    def call(self, c: Pattern, n: str, t: str) -> str:
        """An expression: does ``c`` match at node ``n`` consumed as ``t``?"""
        rt = c.root_types()
        fn = f"m{self.index[c]}({n}, {t})"
        if rt is None:
            return fn
        return f"({n}.op in {self.const(f'R{self.index[c]}', rt)} and {fn})"

    def clear(self, slots, ind: str, mark: bool) -> list[str]:
        lines = [f"{ind}{' = '.join(f's[{i}]' for i in slots)} = None"] if slots else []
        if mark:
            lines.append(f"{ind}while len(tr) > mark: s[tr.pop()] = None")
        return lines

    def chain(self, items, success: list[str], ind: str, fetch: bool) -> list[str]:
        """Nested ``if``s: each (child, input index) in turn; ``success`` innermost.

        When a later child fails, control falls back out through the levels and
        each level clears what its own child bound: a failure costs only the
        bindings actually made (the trail, for shared patterns, is the caller's).
        """
        if not items:
            return [ind + line for line in success]
        c, i = items[0]
        lines = [f"{ind}t{i} = ins[{i}]; n{i} = P[t{i}]"] if fetch else []
        n, t = f"n{i}", f"t{i}"
        # (an optional pattern always has inputs, so it is never a leaf)
        if c not in self.shared and isinstance(c, OpTypePattern) and not c.inputs and not c.attrs:
            if c.types is not None:  # a leaf: test and bind inline
                lines.append(f"{ind}if {n}.op in {self.const(f'T{self.index[c]}', c.types)}:")
                ind += "    "
            lines.append(f"{ind}s[{self.slots[c]}] = {n}.name; s[{self.slots[c] + self.tensors}] = {t}")
        else:
            lines.append(f"{ind}if {self.call(c, n, t)}:")
            ind += "    "
        rest = self.chain(items[1:], success, ind, fetch)
        if any(line.lstrip().startswith("if ") for line in rest):  # else it always returns
            rest += self.clear(self.owned(c), ind, False)
        return lines + rest

    # -- functions
    def generate(self) -> tuple[str, dict]:
        out = ["def make(P, BLANK, OUT):", "    s = list(BLANK)", "    tr = []"]
        for p in self.order:
            out += ["    " + line for line in self.function(p)]
        for p in self.order:  # children tuples for looped inputs, after every def
            if isinstance(p, OpTypePattern) and self._looped(p):
                kids = ", ".join(f"m{self.index[c]}" for c in p.inputs)
                out.append(f"    C{self.index[p]} = ({kids},)")
        r = self.index[self.root]
        out += ["    def root(node):",
                f"        if m{r}(node, None):",
                "            OUT.extend(s)",
                "            s[:] = BLANK",
                "            tr.clear()",
                "            return True",
                "        return False",
                "    return root"]
        return "\n".join(out) + "\n", self.constants

    def _looped(self, p: OpTypePattern) -> bool:
        n = len(p.inputs)
        return n > 0 and (n > _UNROLL if p.ordered_inputs else n > 2)

    def function(self, p: Pattern) -> list[str]:
        k = self.index[p]
        shared = p in self.shared and not _unbound(p)
        lines = [f"def m{k}(node, tensor):"]
        if shared:
            lines += [f"    v = s[{self.slots[p]}]", "    if v is not None: return v == node.name"]
        # a shared pattern logs every slot it filled, for its ancestors' undo
        push = [f"tr.extend({self._own(p)!r})"] if shared else []
        if isinstance(p, OneofPattern):
            alts = " or ".join(self.call(c, "node", "tensor") for c in p.sub_patterns)
            bind = [] if _unbound(p) else [f"s[{self.slots[p]}] = node.name; s[{self.slots[p] + self.tensors}] = tensor"]
            return lines + [f"    if {alts}:"] + ["        " + line for line in bind + push + ["return True"]] \
                + ["    return False"]
        body = ["    " + line for line in self.present(p, push)]
        if p.types is not None:
            types = self.const(f"T{k}", p.types)
            if p.optional:
                lines.append(f"    if node.op in {types}:")
                body = ["    " + line for line in body]
            else:
                lines.append(f"    if node.op not in {types}: return False")
        # optional: when the node is not there, its first input stands in its place
        last = self.call(p.inputs[0], "node", "tensor") if p.optional else "False"
        return lines + body + [f"    return {last}"]

    def present(self, p: OpTypePattern, push: list[str]) -> list[str]:
        """Lines that return True if ``p`` matches as present at ``node`` (its op type
        already tested), or else fall through, leaving nothing bound."""
        k = self.index[p]
        tests = [f"{self.const(f'A{k}_{j}', test.check)}(node) is None" for j, test in enumerate(p.attrs)]
        slot = self.slots[p]
        bind = [f"s[{slot}] = node.name; s[{slot + self.tensors}] = tensor"]
        if not p.inputs:
            if not tests:
                return bind + push + ["return True"]
            return [f"if {' and '.join(tests)}:"] + ["    " + line for line in bind + push + ["return True"]]
        n = len(p.inputs)
        mark = any(self._needs_trail(c) for c in p.inputs)
        lines = ["ins = node.inputs", f"if {' and '.join(tests + [f'len(ins) == {n}'])}:"]
        body = bind + (["mark = len(tr)"] if mark else [])
        success = push + ["return True"]
        if self._looped(p):
            kids = tuple(dict.fromkeys(s for c in p.inputs for s in self.owned(c)))
            orders = ((tuple(range(n)),) if p.ordered_inputs else tuple(itertools.permutations(range(n))))
            body += [f"for order in {self.const(f'O{k}', orders)}:",
                     f"    for m, i in zip(C{k}, order):",
                     "        t = ins[i]",
                     "        if not m(P[t], t): break",
                     "    else:"] + ["        " + line for line in success]
            body += self.clear(kids, "    ", mark)
        elif p.ordered_inputs or n == 1:
            chain = self.chain(list(zip(p.inputs, range(n))), success, "", fetch=True)
            body += chain
            if not any(line.startswith("if ") for line in chain):  # only wildcard leaves: cannot fail
                return lines + ["    " + line for line in body]
        else:  # two unordered inputs: both orders, unrolled
            a, b = p.inputs
            body.append("t0 = ins[0]; n0 = P[t0]; t1 = ins[1]; n1 = P[t1]")
            body += self.chain([(a, 0), (b, 1)], success, "", fetch=False)
            body += self.clear((), "", mark)
            body += self.chain([(a, 1), (b, 0)], success, "", fetch=False)
        body += self.clear((slot,), "", mark)
        return lines + ["    " + line for line in body]


def _unbound(p: Pattern) -> bool:
    """An unnamed one-of binds nothing: it only chooses."""
    return isinstance(p, OneofPattern) and p.name is None
