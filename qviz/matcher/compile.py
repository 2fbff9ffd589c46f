"""Patterns compiled to Python functions: the fast way to match.

:mod:`.explain` states the rules as a walk over the pattern. Walking is slow in
Python: every step dispatches on the pattern's kind, asks whether it is bound,
records failures and keeps an undo trail. Here each pattern object becomes one
small generated function that does only what that pattern needs, with its op
types, input count and children fixed in the code. Bindings go into a flat list
of slots (node, tensor) instead of a dict of tuples, so a successful match
allocates one tuple, and a failed one allocates nothing.

Undo without a trail: a pattern reached on one path only (the usual case) knows
statically which slots its subtree may fill, and clears exactly those when it
fails. Patterns used twice in one tree (``$scale``), and everything below them,
are checked for an existing binding on entry and logged on a trail, as in the
reference walk, because they may be reached bound.

>>> from qviz.ir import Graph, Node
>>> from qviz.matcher import OpTypePattern
>>> g = Graph([Node("x", "Placeholder"), Node("r", "Relu", ["x"])], inputs=["x"], outputs=["r"])
>>> relu = OpTypePattern("Relu", inputs=[OpTypePattern("*", name="x")])
>>> compiled = compile_pattern(relu)
>>> match = compiled.matcher(g)
>>> values = match(g.node("r"))
>>> values[compiled.slots[relu]].name, values[compiled.slots[relu.inputs[0]] + 1]
('r', 'x:0')
>>> match(g.node("x")) is None
True
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable

from ..ir import Graph, Node
from .pattern import OneofPattern, OpTypePattern, Pattern, check_pattern, iter_patterns

__all__ = ["CompiledPattern", "compile_pattern"]

#: Ordered inputs up to this many are unrolled into nested ``if``s; more use a loop.
_UNROLL = 12
_CODE: OrderedDict[str, object] = OrderedDict()  # generated source → code object
_CODE_MAX = 256


class CompiledPattern:
    """One pattern compiled; :meth:`matcher` binds it to a graph.

    A match is a tuple of ``2 * len(patterns)`` values: ``values[slots[p]]`` is the
    node bound to pattern ``p`` (``None`` if unbound) and ``values[slots[p] + 1]``
    the tensor through which its parent consumed it (meaningful only when bound).

    Attributes:
        pattern: the root pattern.
        slots: pattern object → index of its node in a match's values.
        names: name → slots of the patterns with that name, in tree order.
        body: slots of every pattern except leaf wildcards (``*`` with no inputs).
        root_types: op types a root node must have (``None``: any).
        source: the generated Python, for the curious.
    """

    def __init__(self, pattern: Pattern):
        check_pattern(pattern)
        self.pattern = pattern
        order = list(iter_patterns(pattern))
        self.slots = {p: 2 * i for i, p in enumerate(order)}
        names: dict[str, list[int]] = {}
        for p in order:
            if p.name:
                names.setdefault(p.name, []).append(self.slots[p])
        self.names = {k: tuple(v) for k, v in names.items()}
        self.body = tuple(self.slots[p] for p in order if not _leaf_wildcard(p))
        self.root_types = pattern.root_types()
        self.source, constants = _Generator(pattern, order, self.slots).generate()
        code = _CODE.get(self.source)
        if code is None:
            code = compile(self.source, "<qviz pattern>", "exec")
            _CODE[self.source] = code
            if len(_CODE) > _CODE_MAX:
                _CODE.popitem(last=False)
        else:
            _CODE.move_to_end(self.source)
        namespace = dict(constants)
        exec(code, namespace)  # defines make(P, BLANK)
        self._make = namespace["make"]
        self._blank = [None] * (2 * len(order))

    def matcher(self, graph: Graph) -> Callable[[Node], tuple | None]:
        """``match(node)`` → the values of the match rooted at ``node``, or ``None``.

        The returned function does not check the root's op type against
        :attr:`root_types`; callers skip those nodes first (it is their fast path).
        """
        return self._make(graph.producer_index(), self._blank)


def compile_pattern(pattern: Pattern) -> CompiledPattern:
    """Compile ``pattern`` (after its last edit: later edits are not seen)."""
    return CompiledPattern(pattern)


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
        for c in p._children():
            refs[c] = refs.get(c, 0) + 1
    shared = {p for p in order if refs[p] > 1}
    stack = list(shared)
    while stack:
        q = stack.pop()
        if _unbound(q) or getattr(q, "optional", False):
            for c in q._children():
                if c not in shared:
                    shared.add(c)
                    stack.append(c)
    return shared


class _Generator:
    """Writes the source of ``make(P, BLANK)``, which returns ``root(node)``."""

    def __init__(self, root: Pattern, order: list[Pattern], slots: dict[Pattern, int]):
        self.root, self.order, self.slots = root, order, slots
        self.index = {p: i for i, p in enumerate(order)}
        self.shared = _shared(root, order)
        self.constants: dict[str, object] = {}
        self.own: dict[Pattern, tuple[int, ...]] = {}

    def _own(self, p: Pattern) -> tuple[int, ...]:
        """Slots an attempt at ``p`` may fill, except below shared patterns (which
        log what they fill on the trail)."""
        if p not in self.own:
            slots = [] if _unbound(p) else [self.slots[p]]
            for c in p._children():
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
                stack.extend(q._children())
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
            lines.append(f"{ind}s[{self.slots[c]}] = {n}; s[{self.slots[c] + 1}] = {t}")
        else:
            lines.append(f"{ind}if {self.call(c, n, t)}:")
            ind += "    "
        rest = self.chain(items[1:], success, ind, fetch)
        if any(line.lstrip().startswith("if ") for line in rest):  # else it always returns
            rest += self.clear(self.owned(c), ind, False)
        return lines + rest

    # -- functions
    def generate(self) -> tuple[str, dict]:
        out = ["def make(P, BLANK):", "    s = list(BLANK)", "    tr = []"]
        for p in self.order:
            out += ["    " + line for line in self.function(p)]
        for p in self.order:  # children tuples for looped inputs, after every def
            if isinstance(p, OpTypePattern) and self._looped(p):
                kids = ", ".join(f"m{self.index[c]}" for c in p.inputs)
                out.append(f"    C{self.index[p]} = ({kids},)")
        r = self.index[self.root]
        out += ["    def root(node):",
                f"        if m{r}(node, None):",
                "            values = tuple(s)",
                "            s[:] = BLANK",
                "            tr.clear()",
                "            return values",
                "        return None",
                "    return root"]
        return "\n".join(out) + "\n", self.constants

    def _looped(self, p: OpTypePattern) -> bool:
        n = len(p.inputs)
        return n > 0 and (n > _UNROLL if p.ordered_inputs else n > 2)

    def function(self, p: Pattern) -> list[str]:
        k = self.index[p]
        shared = p in self.shared
        head = [f"def m{k}(node, tensor):"]
        if shared and not _unbound(p):
            head += [f"    v = s[{self.slots[p]}]", "    if v is not None: return v is node"]
        # a shared pattern logs every slot it filled, for its ancestors' undo
        push = [f"tr.extend({self._own(p)!r})"] if shared and not _unbound(p) else []
        if isinstance(p, OneofPattern):
            alts = " or ".join(self.call(c, "node", "tensor") for c in p.sub_patterns)
            bind = [] if _unbound(p) else [f"s[{self.slots[p]}] = node; s[{self.slots[p] + 1}] = tensor"]
            return head + [f"    if {alts}:"] + ["        " + line for line in bind + push + ["return True"]] \
                + ["    return False"]
        if not p.optional:
            return head + ["    " + line for line in self.present(p, push)]
        # optional: the node itself, or its first input standing in its place
        types = p.types
        test = "" if types is None else f"node.op in {self.const(f'T{k}', types)} and "
        return ([f"def p{k}(node, tensor):"] + ["    " + line for line in self.present(p, push, typed=False)]
                + head + [f"    if {test}p{k}(node, tensor): return True",
                          f"    return {self.call(p.inputs[0], 'node', 'tensor')}"])

    def present(self, p: OpTypePattern, push: list[str], typed: bool = True) -> list[str]:
        """Body matching ``p`` as present at ``node`` (its own type tested if ``typed``)."""
        k = self.index[p]
        lines = []
        if typed and p.types is not None:
            lines.append(f"if node.op not in {self.const(f'T{k}', p.types)}: return False")
        for j, test in enumerate(p.attrs):
            lines.append(f"if {self.const(f'A{k}_{j}', test.check)}(node) is not None: return False")
        slot = self.slots[p]
        if not p.inputs:
            return lines + [f"s[{slot}] = node; s[{slot + 1}] = tensor"] + push + ["return True"]
        n = len(p.inputs)
        mark = self._needs_trail(p)
        lines += ["ins = node.inputs", f"if len(ins) != {n}: return False",
                  f"s[{slot}] = node; s[{slot + 1}] = tensor"]
        if mark:
            lines.append("mark = len(tr)")
        success = push + ["return True"]
        if self._looped(p):
            kids = tuple(dict.fromkeys(s for c in p.inputs for s in self.owned(c)))
            orders = ((tuple(range(n)),) if p.ordered_inputs else tuple(itertools.permutations(range(n))))
            lines += [f"for order in {self.const(f'O{k}', orders)}:",
                      f"    for m, i in zip(C{k}, order):",
                      "        t = ins[i]",
                      "        if not m(P[t], t): break",
                      "    else:"] + ["        " + line for line in success]
            lines += self.clear(kids, "    ", mark)
        elif p.ordered_inputs or n == 1:
            chain = self.chain(list(zip(p.inputs, range(n))), success, "", fetch=True)
            lines += chain
            if not any(line.startswith("if ") for line in chain):
                return lines  # only wildcard leaves: it cannot fail
        else:  # two unordered inputs: both orders, unrolled
            a, b = p.inputs
            lines.append("t0 = ins[0]; n0 = P[t0]; t1 = ins[1]; n1 = P[t1]")
            lines += self.chain([(a, 0), (b, 1)], success, "", fetch=False)
            lines += self.clear((), "", mark)
            lines += self.chain([(a, 1), (b, 0)], success, "", fetch=False)
        lines += self.clear((slot,), "", mark)
        return lines + ["return False"]


def _unbound(p: Pattern) -> bool:
    """An unnamed one-of binds nothing: it only chooses."""
    return isinstance(p, OneofPattern) and p.name is None
