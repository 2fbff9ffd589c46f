"""A compact text form for patterns, for typing into the UI and the CLI.

Syntax::

    Relu|Relu6( BiasAdd( Conv2D[data_format="NHWC"](*, Const) as conv, * ) ) as act

=================================  =========================================
``Conv2D``, ``Relu|Relu6``, ``*``  op types, alternatives, any op
``Op(a, b)``                       data inputs, in order
``Op{a, b}``                       data inputs, in any order
``Op?(a, …)``                      optional node: may be absent, then ``a`` stands in its place
``Op[k="v", n=3, k2!=1.5]``        attribute tests (``=`` / ``!=``; strings, numbers,
                                   ``true``/``false``, ``[lists]``)
``… as name``                      name the node (for results, and for references)
``$name``                          the node named ``name``: the same node both times
``oneof(p1, p2, …)``               the first alternative that matches
``# …``                            a comment, to the end of the line
=================================  =========================================

Strings are JSON strings (escapes ``\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX``; no raw
control characters, on one line). Numbers are JSON-like decimal numbers (ASCII
digits): an integer when written without ``.`` or an exponent, else a 64-bit
float (a float too small to represent becomes ``0.0``).

Limits, so that any text is either a pattern or one :class:`PatternSyntaxError`:

* at most :data:`MAX_DEPTH` brackets (``(``, ``{``, ``[``) open at once, and
  no chain of inputs and ``$references`` more than :data:`MAX_DEPTH` steps
  long (this keeps every recursive walk over a pattern, here and in the
  matcher, far from Python's recursion limit);
* a number is at most :data:`MAX_NUMBER_LENGTH` characters and must be finite:
  ``1e999``, ``inf`` and ``nan`` are refused.

>>> p = parse("Relu(Conv2D(*, *) as conv) as act")
>>> to_text(p)
'Relu(Conv2D(*, *) as conv) as act'
>>> parse("Relu(Conv2D(*, *")
Traceback (most recent call last):
...
qviz.patterns.language.PatternSyntaxError: line 1, column 17: expected ',' or ')' to continue the inputs of Conv2D, found end of text
>>> parse('Conv2D[padding="SAME\\q"]')
Traceback (most recent call last):
...
qviz.patterns.language.PatternSyntaxError: line 1, column 21: invalid escape in a string: a backslash followed by 'q' (the escapes are \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)
>>> parse("Relu(" * 101 + "*" + ")" * 101)
Traceback (most recent call last):
...
qviz.patterns.language.PatternSyntaxError: line 1, column 505: nested too deeply: at most 100 brackets may be open at once
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from ..errors import QvizError
from ..matcher import AttrTest, OneofPattern, OpTypePattern, Pattern, iter_patterns
from ..matcher.pattern import in_place_cycle

__all__ = ["parse", "to_text", "PatternSyntaxError", "MAX_DEPTH", "MAX_NUMBER_LENGTH"]

#: The most brackets open at once, and the longest chain of inputs and
#: ``$references`` (in steps from the root). Real patterns are under 20 deep;
#: parsing costs about three Python frames a level, walking a pattern one or
#: two, so even called from a deep stack (a Dash callback, a test runner) a
#: pattern stays far from Python's default recursion limit of 1,000.
MAX_DEPTH = 100

#: The longest number, in characters (an int64 needs 20, a float's repr 24).
MAX_NUMBER_LENGTH = 100
#: The longest pattern text accepted. Real patterns are a few hundred
#: characters; the text comes from a page anyone may type into, and tokens,
#: parsing and compiling all grow with it.
MAX_TEXT_LENGTH = 20_000


class PatternSyntaxError(QvizError, ValueError):
    """Pattern text that does not parse: where (line, column) and what was expected."""

    def __init__(self, message: str, line: int, column: int, text: str = ""):
        self.line, self.column, self.text = line, column, text
        self.bare_message = message
        super().__init__(f"line {line}, column {column}: {message}")

    def __reduce__(self):   # so it crosses to and from a worker process whole
        return type(self), (self.bare_message, self.line, self.column, self.text)


@dataclass(frozen=True)
class _Tok:
    kind: str   # ident, str, num, op (punctuation), ref, end
    value: str
    pos: int


_TOKEN = re.compile(r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<ref>\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<op>!=|[()\[\]{}|,=?*])
""", re.VERBOSE)


def _tokenize(text: str) -> list[_Tok]:
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            if text[pos] == '"':
                raise _error(text, pos, "unterminated string: a string ends with '\"' on the same line")
            raise _error(text, pos, f"unexpected character {text[pos]!r}")
        kind = m.lastgroup
        if kind != "ws":
            tokens.append(_Tok(kind, m.group(), pos))
        pos = m.end()
    tokens.append(_Tok("end", "", len(text)))
    return tokens


def _error(text: str, pos: int, message: str) -> PatternSyntaxError:
    if len(message) > 400:  # an op type or a name can be as long as the text
        message = message[:400] + "…"
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return PatternSyntaxError(message, line, column, text)


def _describe(tok: _Tok) -> str:
    if tok.kind == "end":
        return "end of text"
    return repr(tok.value) if len(tok.value) <= 40 else repr(tok.value[:40]) + "…"


_STRING_ESCAPES = '(the escapes are \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)'


def _string_error(text: str, tok: _Tok, exc: json.JSONDecodeError) -> PatternSyntaxError:
    """What is wrong inside a string token, at the offending character."""
    at = exc.pos
    if exc.msg.startswith("Invalid \\uXXXX") and tok.value[at - 1:at] == "\\":
        at -= 1  # point at the backslash, not at the u
    if exc.msg.startswith("Invalid \\escape"):
        message = f"invalid escape in a string: a backslash followed by {tok.value[at + 1]!r} {_STRING_ESCAPES}"
    elif exc.msg.startswith("Invalid \\uXXXX"):
        message = "invalid escape in a string: \\u must be followed by four hex digits"
    elif exc.msg.startswith("Invalid control character"):
        c = tok.value[at]
        message = f"control character {c!r} in a string: write it as the escape {json.dumps(c)[1:-1]}"
    else:  # the token is a whole JSON string literal: nothing else is expected
        message = f"invalid string: {exc.msg}"
    return _error(text, tok.pos + at, message)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.named: dict[str, list[Pattern]] = {}
        self.refs: list[tuple[str, int, list, int]] = []   # (name, pos, container, index)
        self.depth = 0  # brackets open
        self.where: dict[int, int] = {}  # id(pattern) → where its text starts

    # -- token helpers
    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def take(self, value: str | None = None, kind: str | None = None) -> _Tok | None:
        t = self.tok
        if (value is None or t.value == value) and (kind is None or t.kind == kind) and t.kind != "end":
            self.i += 1
            return t
        return None

    def expect(self, value: str, what: str) -> _Tok:
        t = self.take(value)
        if t is None:
            raise _error(self.text, self.tok.pos, f"expected {what}, found {_describe(self.tok)}")
        return t

    def enter(self, pos: int) -> None:
        """One more bracket open, at ``pos`` (every recursion in the grammar opens one)."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _error(self.text, pos, f"nested too deeply: at most {MAX_DEPTH} brackets may be open at once")

    # -- grammar
    def pattern(self) -> Pattern | _Ref:
        t = self.tok
        if t.kind == "ref":
            self.i += 1
            return _Ref(t.value[1:], t.pos)
        if t.kind == "ident" and t.value == "oneof" and self.toks[self.i + 1].value == "(":
            self.i += 2
            alts = self.pattern_list("oneof", ")", self.toks[self.i - 1].pos)
            pattern = OneofPattern(alts)
            self.where[id(pattern)] = t.pos
            return self.named_as(pattern)
        return self.op_pattern()

    def op_pattern(self) -> Pattern:
        start = self.tok.pos
        types = [self.op_type()]
        while self.take("|"):
            types.append(self.op_type())
        if "*" in types and len(types) > 1:
            raise _error(self.text, self.tok.pos, "'*' cannot be combined with other op types")
        op_type = "|".join(types)
        optional = self.take("?") is not None
        attrs = self.attr_tests(op_type) if self.tok.value == "[" else ()
        inputs, ordered = None, True
        if t := self.take("("):
            inputs = self.pattern_list(op_type, ")", t.pos)
        elif t := self.take("{"):
            inputs, ordered = self.pattern_list(op_type, "}", t.pos), False
        if optional and not inputs:
            raise _error(self.text, self.tok.pos,
                         f"optional node {op_type}? needs inputs: its first input stands in when it is absent")
        try:  # inputs may hold _Ref placeholders until resolve()
            pattern = OpTypePattern(op_type, inputs=inputs, ordered_inputs=ordered,
                                    attrs=attrs, optional=optional)
        except ValueError as exc:
            raise _error(self.text, self.tok.pos, str(exc)) from None
        self.where[id(pattern)] = start
        return self.named_as(pattern)

    def op_type(self) -> str:
        if self.take("*"):
            return "*"
        t = self.take(kind="ident")
        if t is None:
            raise _error(self.text, self.tok.pos,
                         f"expected an op type, '*', '$name' or 'oneof(', found {_describe(self.tok)}")
        return t.value

    def named_as(self, pattern: Pattern) -> Pattern:
        if self.tok.kind == "ident" and self.tok.value == "as":
            self.i += 1
            t = self.take(kind="ident")
            if t is None:
                raise _error(self.text, self.tok.pos, f"expected a name after 'as', found {_describe(self.tok)}")
            pattern.name = t.value
            self.named.setdefault(t.value, []).append(pattern)
        return pattern

    def pattern_list(self, owner: str, close: str, opened: int) -> list:
        self.enter(opened)
        items = [self.pattern()]
        while not self.take(close):
            if not self.take(","):
                kind = "inputs" if owner != "oneof" else "alternatives"
                raise _error(self.text, self.tok.pos,
                             f"expected ',' or '{close}' to continue the {kind} of {owner}, "
                             f"found {_describe(self.tok)}")
            items.append(self.pattern())
        self.depth -= 1
        return items

    def attr_tests(self, op_type: str) -> tuple[AttrTest, ...]:
        self.enter(self.expect("[", "'['").pos)
        tests = []
        while True:
            name = self.take(kind="ident")
            if name is None:
                raise _error(self.text, self.tok.pos, f"expected an attribute name, found {_describe(self.tok)}")
            if self.take("="):
                negate = False
            elif self.take("!="):
                negate = True
            else:
                raise _error(self.text, self.tok.pos, f"expected '=' or '!=' after {name.value}, "
                                                      f"found {_describe(self.tok)}")
            tests.append(AttrTest(name.value, self.value(), negate))
            if self.take("]"):
                self.depth -= 1
                return tuple(tests)
            self.expect(",", f"',' or ']' in the attribute tests of {op_type}")

    def value(self):
        t = self.tok
        if t.kind == "str":
            self.i += 1
            try:
                return json.loads(t.value)
            except json.JSONDecodeError as exc:
                raise _string_error(self.text, t, exc) from None
        if t.kind == "num":
            self.i += 1
            return self.number(t)
        if t.kind == "ident" and t.value in ("true", "false"):
            self.i += 1
            return t.value == "true"
        if self.take("["):
            self.enter(t.pos)
            items = []
            if not self.take("]"):
                while True:
                    items.append(self.value())
                    if self.take("]"):
                        break
                    self.expect(",", "',' or ']' in a list")
            self.depth -= 1
            return items
        raise _error(self.text, t.pos, f"expected a value (\"string\", number, true, false or [list]), "
                                       f"found {_describe(t)}")

    def number(self, t: _Tok) -> int | float:
        if len(t.value) > MAX_NUMBER_LENGTH:
            raise _error(self.text, t.pos, f"number too long: {len(t.value)} characters, "
                                           f"at most {MAX_NUMBER_LENGTH}")
        if not re.search(r"[.eE]", t.value):
            return int(t.value)
        value = float(t.value)
        if not math.isfinite(value):
            raise _error(self.text, t.pos, f"number out of range: {_describe(t)} is too large for a 64-bit float")
        return value

    # -- references
    def resolve(self, root) -> Pattern:
        if isinstance(root, _Ref):
            raise _error(self.text, root.pos, "a pattern cannot be only a reference")
        refs: dict[str, int] = {}
        for p in list(iter_patterns(root)):
            if isinstance(p, _Ref):
                refs.setdefault(p.name, p.pos)
                continue
            kids = p.inputs if isinstance(p, OpTypePattern) else p.sub_patterns
            fixed = tuple(self.target(k) if isinstance(k, _Ref) else k for k in kids)
            if isinstance(p, OpTypePattern):
                p.inputs = fixed
            else:
                p.sub_patterns = fixed
        if not refs:  # a tree: no deeper than its brackets
            return root
        looping = in_place_cycle(root)
        if looping is not None:
            pos = refs.get(looping.name, self.where.get(id(looping), 0))
            raise _error(self.text, pos, f"${looping.name} is used inside {looping.name!r} "
                                         "without consuming an input: matching would never end")
        too_deep = _too_deep(root)
        if too_deep is not None:
            raise _error(self.text, self.where.get(id(too_deep), 0),
                         f"nested too deeply: following inputs and $references, a chain through this "
                         f"pattern is more than {MAX_DEPTH} steps long")
        return root

    def target(self, ref: _Ref) -> Pattern:
        found = self.named.get(ref.name, [])
        if not found:
            raise _error(self.text, ref.pos, f"${ref.name} refers to no node named {ref.name!r} "
                                             f"(name one with '… as {ref.name}')")
        if len(found) > 1:
            raise _error(self.text, ref.pos, f"${ref.name} is ambiguous: {len(found)} nodes are named {ref.name!r}")
        return found[0]


def _too_deep(root: Pattern) -> Pattern | None:
    """A pattern where some walk from ``root`` passes :data:`MAX_DEPTH` steps,
    or ``None`` if none does (an upper bound, found without recursion).

    References turn the tree into a graph: a ``$name`` may lead into another
    branch, whose own references lead further, so a walk can be longer than the
    brackets are deep. Walks that never revisit a pattern (``to_text``,
    compiling, :meth:`Pattern.root_types`) follow paths without repeats. The
    matchers may revisit a one-of or an absent optional node, but not a node
    that is present (it stays bound), and a run of steps that stay at one node
    never repeats (:func:`~qviz.matcher.check_pattern`). So, in the graph of
    strongly connected components, a walk spends in a component with a cycle
    at most ``(present + 1) * (in-place + 1)`` steps, where ``present`` counts
    its op patterns and ``in-place`` its one-ofs and optional nodes, and one
    step in any other. The bound is the longest path counting those weights.
    """
    order, index, low, on_stack, stack = list(iter_patterns(root)), {}, {}, set(), []
    component: dict[int, int] = {}   # id(pattern) → component number (reverse topological order)
    members: list[list[Pattern]] = []
    for start in order:  # Tarjan's algorithm, iteratively
        if id(start) in index:
            continue
        work = [(start, iter(start.children()))]
        index[id(start)] = low[id(start)] = len(index)
        stack.append(start)
        on_stack.add(id(start))
        while work:
            p, kids = work[-1]
            k = next(kids, None)
            if k is not None:
                if id(k) not in index:
                    index[id(k)] = low[id(k)] = len(index)
                    stack.append(k)
                    on_stack.add(id(k))
                    work.append((k, iter(k.children())))
                elif id(k) in on_stack:
                    low[id(p)] = min(low[id(p)], index[id(k)])
                continue
            work.pop()
            if work:
                low[id(work[-1][0])] = min(low[id(work[-1][0])], low[id(p)])
            if low[id(p)] == index[id(p)]:
                group = []
                while True:
                    q = stack.pop()
                    on_stack.discard(id(q))
                    component[id(q)] = len(members)
                    group.append(q)
                    if q is p:
                        break
                members.append(group)
    # the longest path, each component counted at its weight; a component's successors come first
    length: list[int] = []
    below: list[Pattern | None] = []   # where the longest path goes from each component
    for c, group in enumerate(members):
        best, via = 0, None
        for q in group:
            for k in q.children():
                d = component[id(k)]
                if d != c and length[d] > best:
                    best, via = length[d], k
        length.append(_weight(group, c, component) + best)
        below.append(via)
    c = component[id(root)]
    if length[c] - 1 <= MAX_DEPTH:
        return None
    entry, used = root, 0   # walk the longest path down to the component where it passes the limit
    while True:
        used += _weight(members[c], c, component)
        if used - 1 > MAX_DEPTH:
            return entry
        entry = below[c]
        c = component[id(entry)]


def _weight(group: list[Pattern], c: int, component: dict[int, int]) -> int:
    """The most steps a walk spends in one strongly connected component (see :func:`_too_deep`)."""
    if len(group) == 1 and all(component[id(k)] != c for k in group[0].children()):
        return 1  # no cycle: visited once
    in_place = sum(isinstance(q, OneofPattern) or q.optional for q in group)
    present = sum(isinstance(q, OpTypePattern) for q in group)
    return (present + 1) * (in_place + 1)


class _Ref(Pattern):
    def __init__(self, name: str, pos: int):
        self.name, self.pos = name, pos

    def children(self):
        return ()


def parse(text: str) -> Pattern:
    """Parse pattern text into a :class:`~qviz.matcher.Pattern`.

    Raises:
        PatternSyntaxError: with the line and column of the problem and what was expected.
    """
    if isinstance(text, str) and len(text) > MAX_TEXT_LENGTH:
        raise _error(text, MAX_TEXT_LENGTH, f"the pattern is over {MAX_TEXT_LENGTH:,} characters long")
    parser = _Parser(text)
    if parser.tok.kind == "end":
        raise _error(text, 0, "the pattern is empty")
    root = parser.pattern()
    if parser.tok.kind != "end":
        raise _error(text, parser.tok.pos, f"expected end of pattern, found {_describe(parser.tok)}")
    return parser.resolve(root)


# -- text from patterns ------------------------------------------------------


def to_text(pattern: Pattern) -> str:
    """The text form of a pattern; ``parse(to_text(p))`` is equivalent to ``p``.

    A pattern object used more than once is written out the first time and as
    ``$name`` after that, so it needs a name unique in the tree.

    Raises:
        ValueError: the pattern has a predicate attribute test (no text form), a
            number that :func:`parse` would refuse (infinite, NaN, or longer than
            :data:`MAX_NUMBER_LENGTH`), or a shared sub-pattern without a unique name.
    """
    counts: dict[str, int] = {}
    for p in iter_patterns(pattern):
        if p.name:
            counts[p.name] = counts.get(p.name, 0) + 1
    uses: dict[int, int] = {}
    _count_uses(pattern, uses, set())
    written: set[int] = set()
    return _text(pattern, counts, uses, written)


def _count_uses(p: Pattern, uses: dict, expanded: set) -> None:
    uses[id(p)] = uses.get(id(p), 0) + 1
    if id(p) in expanded:
        return
    expanded.add(id(p))
    for k in p.children():
        _count_uses(k, uses, expanded)


def _text(p: Pattern, counts, uses, written) -> str:
    if id(p) in written:
        return f"${p.name}"
    if uses[id(p)] > 1:
        if not p.name or counts[p.name] > 1:
            raise ValueError(f"{p!r} is used {uses[id(p)]} times; give it a unique name to write it as text")
        written.add(id(p))
    suffix = f" as {p.name}" if p.name else ""
    if isinstance(p, OneofPattern):
        alts = ", ".join(_text(s, counts, uses, written) for s in p.sub_patterns)
        return f"oneof({alts}){suffix}"
    if not isinstance(p, OpTypePattern):
        raise TypeError(f"cannot write {type(p).__name__} as text")
    out = p.op_type + ("?" if p.optional else "")
    if p.attrs:
        out += "[" + ", ".join(_attr_text(t) for t in p.attrs) + "]"
    if p.inputs:
        inner = ", ".join(_text(s, counts, uses, written) for s in p.inputs)
        out += f"({inner})" if p.ordered_inputs else f"{{{inner}}}"
    return out + suffix


def _attr_text(test: AttrTest) -> str:
    if test.predicate is not None:
        raise ValueError(f"the test on attribute {test.name!r} is a Python predicate; it has no text form")
    return f"{test.name}{'!=' if test.negate else '='}{_value_text(test.value)}"


def _value_text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, int) and v.bit_length() <= 4 * MAX_NUMBER_LENGTH:  # repr(v) is quick, and fits
        if len(repr(v)) <= MAX_NUMBER_LENGTH:
            return repr(v)
    elif isinstance(v, float) and math.isfinite(v):
        return repr(v)
    if isinstance(v, (int, float)):
        raise ValueError(f"attribute value {_number_summary(v)} has no text form "
                         f"(numbers are finite and at most {MAX_NUMBER_LENGTH} characters)")
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value_text(x) for x in v) + "]"
    raise ValueError(f"attribute value {v!r} has no text form")


def _number_summary(v) -> str:
    if isinstance(v, float) or v.bit_length() <= 4 * MAX_NUMBER_LENGTH:
        return repr(v)
    return f"(an integer of about {int(v.bit_length() * math.log10(2)) + 1} digits)"
