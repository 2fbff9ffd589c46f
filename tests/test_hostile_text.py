"""Hostile input is normal input (issue 12): the two text readers, the pattern
language and the recipe JSON, either return a value or raise their one
documented error, in one line, saying where. Fuzzed (hypothesis) and by case.
"""

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qviz.ir import Graph, Node
from qviz.matcher import GraphMatcher, compile_pattern, explain, iter_patterns
from qviz.passes.recipe import MAX_NESTING, Recipe, RecipeError
from qviz.patterns import BUILTIN, PatternSyntaxError, parse, to_text
from qviz.patterns.language import MAX_DEPTH, MAX_NUMBER_LENGTH

FUZZ = settings(max_examples=5000, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


def _one_line(message: str) -> bool:
    return len(message.splitlines()) == 1 and message == message.strip()


# -- the pattern language --------------------------------------------------------------

def check_parse(text: str):
    """``parse(text)``: a pattern that round-trips through ``to_text`` and compiles,
    or a PatternSyntaxError of one line whose line and column are in the text."""
    try:
        p = parse(text)
    except PatternSyntaxError as exc:
        message = str(exc)
        assert _one_line(message), repr(message)
        m = re.match(r"line (\d+), column (\d+): \S", message)
        assert m, repr(message)
        line, column = int(m[1]), int(m[2])
        assert (exc.line, exc.column) == (line, column)
        lines = text.split("\n")
        assert 1 <= line <= len(lines), (message, len(lines))
        assert 1 <= column <= len(lines[line - 1]) + 1, (message, len(lines[line - 1]))
        return exc
    written = to_text(p)
    assert to_text(parse(written)) == written
    if len(written) < 400:  # (compiling a deep one takes milliseconds: those are tested below)
        compile_pattern(p)
    return p


class _Bytes:
    """Choices read from one hypothesis byte string: one draw per example keeps
    5,000 examples cheap (structured strategies cost milliseconds each), and
    the bytes still shrink."""

    def __init__(self, data: bytes):
        self.data, self.i = data, 0

    def more(self) -> bool:
        return self.i < len(self.data)

    def next(self, n: int) -> int:
        """A choice in ``range(n)`` (0 once the bytes run out)."""
        if self.i >= len(self.data):
            return 0
        self.i += 1
        return self.data[self.i - 1] % n

    def pick(self, seq):
        return seq[self.next(len(seq))]


# characters inside strings: escapes valid and not, control characters, quotes, unicode
_STRING_CHARS = ['\\', '\\', 'q', 'u', 'n', 't', '"', '/', '0', 'a', 'F', 'd', '8', ' ', '\t', '\x00', '\x1f',
                 '\x7f', '\u2028', '\r', '\n', 'é', '\ud800', 'x']
_NUMBERS = ["0", "-1", "+2", "1.", ".5", "-.5e-3", "1.5e3", "2E-7", "1e308", "1.8e308", "-1e309", "1e-400",
            "0e999999", "9" * (MAX_NUMBER_LENGTH - 1), "9" * MAX_NUMBER_LENGTH, "-" + "9" * MAX_NUMBER_LENGTH,
            "9" * (MAX_NUMBER_LENGTH + 1), "4" * 4301, "9" * 5000, "1e" + "9" * 400, "1." + "0" * 98,
            "inf", "nan", "-inf", "٣", "1_000", "0x1f", "12345678901234567890", "-0.0", "1e", "1e+"]
_PATTERN_TOKENS = ["Relu", "Conv2D", "*", "|", "(", ")", "{", "}", "[", "]", "=", "!=", ",", "?", "as", "a",
                   "x", "$a", "$x", "$", "oneof", "oneof(", "true", "false", "# c\n", "#", "\n", "\t", " ", " ",
                   " ", "\r\n", "\u2028", ";", "\x00", "é", "Relu(", "[a=", "as a", "as x", "Add{", "Relu?(",
                   '"SAME"', '"\\q"', "1", "[1, 2]", "Conv2D[padding=", "*)", "*, *)", ")) as y", "$y"]


def _string_token(r: _Bytes) -> str:
    body = "".join(r.pick(_STRING_CHARS) for _ in range(r.next(6)))
    return '"' + body + ("" if r.next(8) == 1 else '"')


def _number_token(r: _Bytes) -> str:
    if r.next(3):
        return r.pick(_NUMBERS)
    digits = "".join(str(r.next(10)) for _ in range(1 + r.next(5)))
    return r.pick(["", "-", "+"]) + digits + r.pick(["", ".", ".25", "e7", "e-3", "E+400", ".5e-400"])


_PREFIXES = ["", "", "Relu[a=", "Conv2D[padding=", "Relu(*, Conv2D[s=[", "Relu(", "Add{Relu(* as a), "]


def _pattern_soup(data: bytes) -> str:
    """Text made of the language's own tokens, strings with random escapes, and numbers;
    often after the start of an attribute test, where strings and numbers are read."""
    r = _Bytes(data)
    out = [r.pick(_PREFIXES)]
    while r.more():
        out.append(_pattern_token(r))
    return "".join(out)


def _pattern_token(r: _Bytes) -> str:
    k = r.next(len(_PATTERN_TOKENS) + 24)
    return (_PATTERN_TOKENS[k] if k < len(_PATTERN_TOKENS)
            else _string_token(r) if k % 2 else _number_token(r))


_OPENERS = [("Relu(", ")"), ("Relu{", "}"), ("oneof(", ")"), ("Relu?(", ")"), ("Add(*, ", ")"), ("[", "]"),
            ("Relu[a=[", "]]"), ("Relu[a=", "]"), ("(", ")")]


def _nesting(data: bytes) -> str:
    """Nesting near and past the limit: patterns, one-ofs, attribute lists, mixed."""
    r = _Bytes(data)
    opener, closer = r.pick(_OPENERS)
    n = r.pick([r.next(4), MAX_DEPTH - 2 + r.next(5), r.next(256)])  # (deeper: in the tests below)
    closed = r.pick([n, n, n - 1, n + 1, 0, r.next(256)])
    tail = r.pick(["", " as a", ")", "\n", "]"])
    return opener * n + r.pick(["*", "Relu", "1", "$a", "", "Relu(*) as a, $a"]) + closer * closed + tail


# real pattern text: the built-ins (references, optional nodes, one-ofs, attributes) and examples
_CORPUS = [to_text(p) for p in BUILTIN.values()] + [
    'AddV2{ Relu?(Conv2D[padding="SAME", strides!=[1, 2, 2, 1]](*, *) as c) as r, $c }',
    "oneof(Relu, Relu6) as act", "Relu|Relu6(AddV2(Mul(Conv2D(*, *) as layer, *), *))",
    "oneof(Relu($x), Conv2D) as x", 'Mul[T="float32", n=-1.5e-3, b=true, l=[]](*, $m) as m',
]


def _mutated(data: bytes) -> str:
    """Real pattern text with a few edits: spans deleted, tokens inserted."""
    r = _Bytes(data)
    text = r.pick(_CORPUS)
    while r.more():
        i = r.next(256) * len(text) // 256
        if r.next(2):
            text = text[:i] + text[i + 1 + r.next(6):]
        else:
            text = text[:i] + _pattern_token(r) + text[i:]
    return text


_pattern_texts = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=40).map(_pattern_soup),
    st.binary(max_size=40).map(_pattern_soup),
    st.binary(min_size=5, max_size=6).map(_nesting),
    st.binary(max_size=8).map(_mutated),
)


@FUZZ
@given(_pattern_texts)
def test_fuzz_parse_returns_a_pattern_or_one_line_error(text):
    check_parse(text)


def _error(text):
    with pytest.raises(PatternSyntaxError) as info:
        parse(text)
    err = info.value
    assert type(err) is PatternSyntaxError and _one_line(str(err)), repr(str(err))
    return err


@pytest.mark.parametrize("levels", [331, 400, 2000])
def test_deep_nesting_is_refused_where_the_limit_is_crossed(levels):
    err = _error("Relu(" * levels + "*" + ")" * levels)
    assert (err.line, err.column) == (1, 5 * MAX_DEPTH + 5)  # the 101st '('
    assert "nested too deeply" in str(err)
    err = _error("Relu[a=" + "[" * levels + "]" * levels + "]")
    assert (err.line, err.column) == (1, 8 + MAX_DEPTH - 1)  # '[' of the tests is level 1
    err = _error("oneof(\n" * levels)
    assert (err.line, err.column) == (MAX_DEPTH + 1, 6)


def _at_depth(frames, f):
    """``f()`` called with ``frames`` more frames on the stack (a Dash callback, a test runner)."""
    return f() if frames == 0 else _at_depth(frames - 1, f)


def _chain_graph(n, op="Relu"):
    nodes = [Node("x", "Placeholder")] + [Node(f"r{i}", op, ["x" if i == 0 else f"r{i - 1}"]) for i in range(n)]
    return Graph(nodes, inputs=["x"], outputs=[f"r{n - 1}"])


_DEEPEST = {
    "inputs": "Relu(" * MAX_DEPTH + "*" + ")" * MAX_DEPTH,
    "optional": "Relu?(" * MAX_DEPTH + "*" + ")" * MAX_DEPTH,
    "oneof": "oneof(" * MAX_DEPTH + "Relu" + ")" * MAX_DEPTH,
    "lists": "Identity[a=" + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "](*)",
    # through references: 9 nested one-ofs whose 8 alternatives lead back to them, exactly at the
    # limit (each match takes 8 Relus; on longer chains the search takes 8! tries per node)
    "references": "oneof(" * 9 + "Placeholder, " + ", ".join(["Relu($o)"] * 8) + ")" * 9 + " as o",
}


@pytest.mark.parametrize("kind", list(_DEEPEST))
def test_the_deepest_accepted_patterns_are_safe_everywhere_from_a_deep_stack(kind):
    depth = 8 if kind == "references" else MAX_DEPTH + 5
    g = _chain_graph(depth)

    def everything():
        p = parse(_DEEPEST[kind])
        again = parse(to_text(p))
        assert to_text(again) == to_text(p)
        compile_pattern(p)
        assert bool(list(GraphMatcher(p).match_graph(g))) == (kind != "lists")
        explain(p, g, f"r{depth - 1}")

    _at_depth(400, everything)


def test_reference_chains_count_towards_the_depth():
    # 60 branches 30 deep, each ending in a reference to the next: text 31 deep (and under the
    # 20,000-character cap), chains 1,800 long
    branches = [("Relu(" * 30 + (f"$b{i + 1}" if i < 59 else "*") + ")" * 30 + f" as b{i}") for i in range(60)]
    err = _error("Add(" + ", ".join(branches) + ")")
    assert "following inputs and $references" in str(err) and err.line == 1
    # one-ofs that lead back to themselves through one input each: walks revisit them
    err = _error("oneof(" * 30 + "Placeholder, " + ", ".join(["Relu($o)"] * 30) + ")" * 30 + " as o")
    assert (err.line, err.column) == (1, 1)
    # a few references are fine
    p = parse("Add(Relu(Relu($b)) as a, Relu(Relu(*)) as b)")
    assert len(list(iter_patterns(p))) == 6


@pytest.mark.parametrize("text,line,col,words", [
    ('Relu[a="\\q"]', 1, 9, "invalid escape in a string: a backslash followed by 'q'"),
    ('Relu[a="ok",\n     b="a\tb"]', 2, 10, "control character '\\t' in a string"),
    ('Relu[a="\x01"]', 1, 9, "control character '\\x01'"),
    ('Relu[a="\\u12"]', 1, 9, "\\u must be followed by four hex digits"),
    ('Relu[a="abc]', 1, 8, "unterminated string"),
    ('Relu[a="abc\\\n"]', 1, 8, "unterminated string"),
    ("Relu[a=" + "1" * 4301 + "]", 1, 8, f"number too long: 4301 characters, at most {MAX_NUMBER_LENGTH}"),
    ("Relu[a=-" + "1" * MAX_NUMBER_LENGTH + "]", 1, 8, "number too long"),
    ("Relu[a=1e99999]", 1, 8, "number out of range: '1e99999'"),
    ("Relu[a=[1, -1e309]]", 1, 12, "number out of range"),
    ("Relu[a=inf]", 1, 8, "expected a value"),
    ("Relu[a=nan]", 1, 8, "expected a value"),
    ("Relu[a=٣]", 1, 8, "unexpected character '٣'"),
    ("Relu(" + "x" * 5000 + "(", 1, 5007, "found end of text"),
    ('Relu("' + "x" * 5000 + '")', 1, 6, "found '\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'…"),
], ids=lambda v: v[:30] if isinstance(v, str) else None)
def test_bad_strings_and_numbers(text, line, col, words):
    err = _error(text)
    assert (err.line, err.column) == (line, col), str(err)
    assert words in str(err)
    assert len(str(err)) < 200


def test_numbers_that_parse():
    assert parse("Relu[a=1e-99999]").attrs[0].value == 0.0  # too small: rounds to zero, as float() does
    big = int("9" * (MAX_NUMBER_LENGTH - 1))
    p = parse(f"Relu[a=-{big}, b=1.7976931348623157e308]")
    assert p.attrs[0].value == -big and to_text(p) == f"Relu[a=-{big}, b=1.7976931348623157e+308]"
    assert parse('Relu[a="\\ud800\\u2028"]').attrs[0].value == "\ud800\u2028"


def test_to_text_refuses_numbers_parse_would_refuse():
    from qviz.matcher import AttrTest, OpTypePattern
    for value in (float("inf"), float("nan"), 10 ** MAX_NUMBER_LENGTH, -(10 ** 5000)):
        with pytest.raises(ValueError, match="has no text form"):
            to_text(OpTypePattern("Relu", attrs=[AttrTest("a", value)]))


# -- the recipe ------------------------------------------------------------------------

def check_recipe(text):
    """``Recipe.from_json``: a recipe that round-trips, or a RecipeError of one line."""
    try:
        r = Recipe.from_json(text)
    except RecipeError as exc:
        message = str(exc)
        assert _one_line(message), repr(message)
        assert len(message) < 1000, message[:200]
        return exc
    assert Recipe.from_json(r.to_json()) == r
    return r


class _Huge:
    """Stands for an integer too long for json.dumps (and Python's int → str)."""

    def __init__(self, text):
        self.text = text


def _dumps(value) -> str:
    huge = []

    def mark(v):
        if isinstance(v, _Huge):
            huge.append(v.text)
            return f"\x00HUGE{len(huge) - 1}\x00"
        if isinstance(v, list):
            return [mark(x) for x in v]
        if isinstance(v, dict):
            return {k: mark(x) for k, x in v.items()}
        return v

    text = json.dumps(mark(value))  # NaN, Infinity and -Infinity included
    for i, digits in enumerate(huge):
        text = text.replace(f'"\\u0000HUGE{i}\\u0000"', digits)
    return text


_NAMES = ["conv1", "fc", "", " x", "a\nb", "a.b", "'q'", "é\u2028\x00", "\ud800", "n" * 300, "n" * 2000,
          "\n" * 400, "default", "layers", "weight_bits", "activation_bits", "fold", "quantize", "options",
          "ema_decay", "narrow_range", "symmetric", "per_channel", "conv2", "logits", "x" * 301]
_SCALARS = [None, True, False, 0, 1, 2, 8, 16, 17, -1, 2 ** 63, -(2 ** 100), 10 ** 299, 0.5, 0.0, -0.0, 0.999,
            1.0, 1e308, 1e-320, float("nan"), float("inf"), float("-inf"), "", "8", "true", "\n", "\x00\t\u2028",
            "y" * 3000, "NaN", "[[[", '"', "\\"]


def _json_value(r: _Bytes, depth: int = 0):
    """Any JSON value (and NaN, Infinity, integers past Python's 4,300 digits)."""
    k = r.next(9 if depth < 5 else 5)
    if k <= 1:
        return r.pick(_SCALARS)
    if k == 2:
        return r.next(64) - 32
    if k == 3:
        return _Huge(r.pick(["", "-"]) + "9" * (250 + 23 * r.next(256)))
    if k == 4:
        return "".join(r.pick(_STRING_CHARS) for _ in range(r.next(8)))
    if k <= 6:
        return [_json_value(r, depth + 1) for _ in range(r.next(4))]
    return {r.pick(_NAMES): _json_value(r, depth + 1) for _ in range(r.next(4))}


def _valid_bits(r: _Bytes):
    if r.next(5) == 1:
        return None
    return {k: r.pick([8, None, 2, 4, 16, 3]) for k in ("weight_bits", "activation_bits") if r.next(3) != 1}


def _valid_recipe(r: _Bytes) -> dict:
    """A valid recipe; every part present when the bytes run out (choice 0)."""
    d = {}
    if r.next(4) != 1:
        fold = d["fold"] = {}
        if r.next(3) != 1:
            fold["default"] = bool(r.next(2))
        if r.next(3) != 1:
            fold["layers"] = {r.pick(_NAMES): bool(r.next(2)) for _ in range(1 + r.next(3))}
    if r.next(4) != 1:
        quant = d["quantize"] = {}
        if r.next(3) != 1:
            quant["default"] = _valid_bits(r)
        if r.next(3) != 1:
            quant["layers"] = {r.pick(_NAMES): _valid_bits(r) for _ in range(1 + r.next(3))}
    if r.next(3) != 1:
        d["options"] = {k: r.pick([True, False]) for k in ("narrow_range", "symmetric", "per_channel")
                        if r.next(3) != 1}
        if r.next(3) != 1:
            d["options"]["ema_decay"] = r.pick([None, 0, 0.0, 0.5, 0.999, 0.9999999999999999])
    return d


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,))


def _mutated_recipe(data: bytes) -> str:
    """A valid recipe with one field (or a key at a new place) given a random JSON value."""
    r = _Bytes(data)
    recipe = _valid_recipe(r)
    paths = list(_paths(recipe))
    path = r.pick(paths[1:] if r.next(8) != 1 and len(paths) > 1 else paths)  # the whole recipe now and then
    if r.next(2) == 0:  # (the bytes run out, or lean, to 0: then the deepest field)
        path = max(paths, key=len) if path == paths[min(1, len(paths) - 1)] else path
    new = _json_value(r)
    if not path:
        return _dumps(new)
    parent = recipe
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1] if r.next(4) != 1 else r.pick(_NAMES)] = new
    return _dumps(recipe)


_JSON_TOKENS = ['{', '}', '[', ']', ',', ':', '"fold"', '"quantize"', '"layers"', '"default"', '"weight_bits"',
                '"options"', '"ema_decay"', '"a\\q"', 'NaN', 'Infinity', '-Infinity', 'true', 'false', 'null',
                '1e999', '9' * 5000, '"\n"', ' ', '\n', '\ufeff', '8', '-0', '0.5', '"conv1"', '"\\ud800"', '\\',
                '"', "'", "01", "1.", "-", "tru", '"\\u12"', '"\t"', "/*", "]]]]", "[[[[[[[[", '{"fold": ' * 20]


def _json_soup(data: bytes) -> str:
    r = _Bytes(data)
    return "".join(r.pick(_JSON_TOKENS) for _ in range(len(data)))


_recipe_texts = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=30).map(_json_soup),
    st.binary(max_size=30).map(lambda b: _dumps(_json_value(_Bytes(b)))),
    st.binary(max_size=30).map(lambda b: json.dumps(_valid_recipe(_Bytes(b)))),
    st.binary(max_size=40).map(_mutated_recipe),
    st.binary(max_size=40).map(_mutated_recipe),
    st.integers(MAX_NESTING - 2, 3000).map(lambda n: '{"fold": ' * n + "1" + "}" * n),
)


@FUZZ
@given(_recipe_texts)
def test_fuzz_recipe_returns_a_recipe_or_one_line_error(text):
    check_recipe(text)


def _recipe_error(text) -> str:
    with pytest.raises(RecipeError) as info:
        Recipe.from_json(text)
    message = str(info.value)
    assert type(info.value) is RecipeError and _one_line(message), repr(message)
    return message


def test_deep_json_is_refused_before_json_recurses():
    assert _recipe_error("[" * 100000) == (f"recipe is not valid JSON: arrays and objects nested more than "
                                           f"{MAX_NESTING} levels deep (line 1, column {MAX_NESTING + 1})")
    assert "(line 3, column 568)" in _recipe_error("{\n\n" + '{"fold": ' * 3000)
    assert "Expecting value" in _recipe_error("[" * MAX_NESTING)  # at the limit: ordinary JSON errors
    assert "nested" not in _recipe_error('{"fold": "' + "[" * 5000)  # brackets in a string do not count


def test_huge_integers_name_the_field():
    text = '{"quantize": {"default": {"weight_bits": 1' + "0" * 5000 + "}}}"
    assert _recipe_error(text) == ("quantize.default.weight_bits: must be between 2 and 16, "
                                   "got an integer of 5001 digits")
    assert _recipe_error('{"options": {"ema_decay": -' + "9" * 400 + "}}") == (
        "options.ema_decay: must be null or a number in [0, 1), not an integer of 400 digits")
    with pytest.raises(RecipeError, match=r"^fold.default: must be true or false, not an integer of about 5001"):
        Recipe.from_dict({"fold": {"default": 10 ** 5000}})


def test_non_text_input():
    assert Recipe.from_json(b'\xef\xbb\xbf{"fold": {"default": false}}') == Recipe(fold_default=False)
    assert Recipe.from_json(bytearray(b"{}")) == Recipe()
    assert _recipe_error(b'{"fold": "\xff"}') == "recipe is not valid UTF-8: invalid start byte at byte 10"
    assert _recipe_error(None) == "recipe must be JSON text (str or bytes), not NoneType"
    assert _recipe_error(12) == "recipe must be JSON text (str or bytes), not int"


@pytest.mark.parametrize("constant,column", [("NaN", 27), ("Infinity", 27), ("-Infinity", 27)])
def test_nan_and_infinity_are_not_json(constant, column):
    assert _recipe_error('{"options": {"ema_decay": ' + constant + "}}") == (
        f"recipe is not valid JSON: {constant} is not a JSON number (line 1, column {column})")
    assert "NaN" not in _recipe_error('{"fold": "NaN", "x": 1}')  # inside a string it is just text


def test_duplicate_keys_last_wins():
    r = Recipe.from_json('{"fold": {"layers": {"conv1": true, "conv1": false}, "default": true, "default": false}}')
    assert r.fold_layers == {"conv1": False} and r.fold_default is False


@pytest.mark.parametrize("name,shown", [
    ("conv\n1", "'conv\\n1'"),
    ("a\u2028b\x00", "'a\\u2028b\\x00'"),
    ("", "''"),
    (" padded ", "' padded '"),
    ("block1/conv.1", "block1/conv.1"),
    ("x" * 5000, "x" * 300 + "…"),
    ("\n" * 5000, repr("\n" * 300 + "…")),
], ids=lambda v: v[:20])
def test_layer_names_are_quoted_and_cut(name, shown):
    message = _recipe_error(json.dumps({"quantize": {"layers": {name: {"weight_bits": 1}}}}))
    assert message == f"quantize.layers.{shown}.weight_bits: must be between 2 and 16, got 1"
    message = _recipe_error(json.dumps({"fold": {name: True}}))
    assert message == f"fold.{shown}: unknown key; expected one of default, layers"


def test_long_and_odd_values_are_shortened():
    message = _recipe_error(json.dumps({"fold": {"default": "y\n" * 10000}}))
    assert message.startswith("fold.default: must be true or false, not 'y\\ny\\n") and len(message) < 200
    message = _recipe_error('{"fold": {"default": ' + "[" * 60 + "]" * 60 + "}}")
    assert message == "fold.default: must be true or false, not [[[[...]]]]"
    assert _recipe_error("[]") == "recipe: must be an object, not list"


def test_pattern_text_over_the_length_limit_is_refused_at_once():
    from qviz.patterns.language import MAX_TEXT_LENGTH

    with pytest.raises(PatternSyntaxError) as info:
        parse("Relu|" * (MAX_TEXT_LENGTH // 5 + 1) + "Relu")
    assert "over 20,000 characters" in str(info.value) and "\n" not in str(info.value)

