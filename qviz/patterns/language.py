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

>>> p = parse("Relu(Conv2D(*, *) as conv) as act")
>>> to_text(p)
'Relu(Conv2D(*, *) as conv) as act'
>>> parse("Relu(Conv2D(*, *")
Traceback (most recent call last):
...
qviz.patterns.language.PatternSyntaxError: line 1, column 17: expected ',' or ')' to continue the inputs of Conv2D, found end of text
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..matcher import AttrTest, OneofPattern, OpTypePattern, Pattern, iter_patterns
from ..matcher.pattern import in_place_cycle

__all__ = ["parse", "to_text", "PatternSyntaxError"]


class PatternSyntaxError(ValueError):
    """Pattern text that does not parse: where (line, column) and what was expected."""

    def __init__(self, message: str, line: int, column: int, text: str = ""):
        self.line, self.column, self.text = line, column, text
        self.bare_message = message
        super().__init__(f"line {line}, column {column}: {message}")


@dataclass(frozen=True)
class _Tok:
    kind: str   # ident, str, num, op (punctuation), ref, end
    value: str
    pos: int


_TOKEN = re.compile(r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<ref>\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<op>!=|[()\[\]{}|,=?*])
""", re.VERBOSE)


def _tokenize(text: str) -> list[_Tok]:
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise _error(text, pos, f"unexpected character {text[pos]!r}")
        kind = m.lastgroup
        if kind != "ws":
            tokens.append(_Tok(kind, m.group(), pos))
        pos = m.end()
    tokens.append(_Tok("end", "", len(text)))
    return tokens


def _error(text: str, pos: int, message: str) -> PatternSyntaxError:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return PatternSyntaxError(message, line, column, text)


def _describe(tok: _Tok) -> str:
    return "end of text" if tok.kind == "end" else repr(tok.value)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.named: dict[str, list[Pattern]] = {}
        self.refs: list[tuple[str, int, list, int]] = []   # (name, pos, container, index)

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

    # -- grammar
    def pattern(self) -> Pattern | _Ref:
        t = self.tok
        if t.kind == "ref":
            self.i += 1
            return _Ref(t.value[1:], t.pos)
        if t.kind == "ident" and t.value == "oneof" and self.toks[self.i + 1].value == "(":
            self.i += 2
            alts = self.pattern_list("oneof", ")")
            return self.named_as(OneofPattern(alts))
        return self.op_pattern()

    def op_pattern(self) -> Pattern:
        types = [self.op_type()]
        while self.take("|"):
            types.append(self.op_type())
        if "*" in types and len(types) > 1:
            raise _error(self.text, self.tok.pos, "'*' cannot be combined with other op types")
        op_type = "|".join(types)
        optional = self.take("?") is not None
        attrs = self.attr_tests(op_type) if self.tok.value == "[" else ()
        inputs, ordered = None, True
        if self.take("("):
            inputs = self.pattern_list(op_type, ")")
        elif self.take("{"):
            inputs, ordered = self.pattern_list(op_type, "}"), False
        if optional and not inputs:
            raise _error(self.text, self.tok.pos,
                         f"optional node {op_type}? needs inputs: its first input stands in when it is absent")
        try:  # inputs may hold _Ref placeholders until resolve()
            pattern = OpTypePattern(op_type, inputs=inputs, ordered_inputs=ordered,
                                    attrs=attrs, optional=optional)
        except ValueError as exc:
            raise _error(self.text, self.tok.pos, str(exc)) from None
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

    def pattern_list(self, owner: str, close: str) -> list:
        items = [self.pattern()]
        while not self.take(close):
            if not self.take(","):
                kind = "inputs" if owner != "oneof" else "alternatives"
                raise _error(self.text, self.tok.pos,
                             f"expected ',' or '{close}' to continue the {kind} of {owner}, "
                             f"found {_describe(self.tok)}")
            items.append(self.pattern())
        return items

    def attr_tests(self, op_type: str) -> tuple[AttrTest, ...]:
        self.expect("[", "'['")
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
                return tuple(tests)
            self.expect(",", f"',' or ']' in the attribute tests of {op_type}")

    def value(self):
        t = self.tok
        if t.kind == "str":
            self.i += 1
            return json.loads(t.value)
        if t.kind == "num":
            self.i += 1
            return float(t.value) if re.search(r"[.eE]", t.value) else int(t.value)
        if t.kind == "ident" and t.value in ("true", "false"):
            self.i += 1
            return t.value == "true"
        if self.take("["):
            items = []
            if self.take("]"):
                return items
            while True:
                items.append(self.value())
                if self.take("]"):
                    return items
                self.expect(",", "',' or ']' in a list")
        raise _error(self.text, t.pos, f"expected a value (\"string\", number, true, false or [list]), "
                                       f"found {_describe(t)}")

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
        looping = in_place_cycle(root)
        if looping is not None:
            raise _error(self.text, refs[looping.name], f"${looping.name} is used inside {looping.name!r} "
                                                        "without consuming an input: matching would never end")
        return root

    def target(self, ref: _Ref) -> Pattern:
        found = self.named.get(ref.name, [])
        if not found:
            raise _error(self.text, ref.pos, f"${ref.name} refers to no node named {ref.name!r} "
                                             f"(name one with '… as {ref.name}')")
        if len(found) > 1:
            raise _error(self.text, ref.pos, f"${ref.name} is ambiguous: {len(found)} nodes are named {ref.name!r}")
        return found[0]


class _Ref(Pattern):
    def __init__(self, name: str, pos: int):
        self.name, self.pos = name, pos

    def _children(self):
        return ()


def parse(text: str) -> Pattern:
    """Parse pattern text into a :class:`~qviz.matcher.Pattern`.

    Raises:
        PatternSyntaxError: with the line and column of the problem and what was expected.
    """
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
        ValueError: the pattern has a predicate attribute test (no text form), or
            a shared sub-pattern without a unique name.
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
    for k in p._children():
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
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value_text(x) for x in v) + "]"
    raise ValueError(f"attribute value {v!r} has no text form")
