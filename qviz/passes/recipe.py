"""The recipe: every choice a user makes about folding and quantization, as JSON.

>>> r = Recipe.from_dict({"fold": {"default": True, "layers": {"conv2": False}},
...                       "quantize": {"default": {"weight_bits": 8, "activation_bits": 8},
...                                    "layers": {"conv1": {"weight_bits": 4, "activation_bits": 8},
...                                               "logits": None}}})
>>> r.folds("conv1"), r.folds("conv2"), r.bits("conv1"), r.bits("logits"), r.bits("fc1")
(True, False, LayerBits(weight_bits=4, activation_bits=8), None, LayerBits(weight_bits=8, activation_bits=8))
>>> Recipe.from_json(r.to_json()) == r
True
>>> Recipe.from_dict({"quantize": {"default": {"weight_bits": 17}}})
Traceback (most recent call last):
...
qviz.passes.recipe.RecipeError: quantize.default.weight_bits: must be between 2 and 16, got 17

Any text gets a recipe or one :class:`RecipeError` of one line: a layer name
that is not plain printable text is quoted with escapes (and cut after 300
characters), a value shown in a message is shortened, an integer too long
to print is described by its length:

>>> Recipe.from_json('{"quantize": {"layers": {"conv\\\\n1": {"weight_bits": 1' + '0' * 5000 + '}}}}')
Traceback (most recent call last):
...
qviz.passes.recipe.RecipeError: quantize.layers.'conv\\n1'.weight_bits: must be between 2 and 16, got an integer of 5001 digits

The JSON is standard (RFC 8259), read with limits: arrays and objects nest at
most :data:`MAX_NESTING` levels (a recipe needs 4); ``NaN`` and ``Infinity``,
which Python's ``json`` would accept, are refused; bytes are read as UTF-8; of
keys repeated in one object the last wins, as in JavaScript and Python:

>>> Recipe.from_json("[" * 100000)
Traceback (most recent call last):
...
qviz.passes.recipe.RecipeError: recipe is not valid JSON: arrays and objects nested more than 64 levels deep (line 1, column 65)
>>> Recipe.from_json('{"options": {"ema_decay": NaN}}')
Traceback (most recent call last):
...
qviz.passes.recipe.RecipeError: recipe is not valid JSON: NaN is not a JSON number (line 1, column 27)
"""

from __future__ import annotations

import json
import math
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ..errors import QvizError
from ..ir import Graph
from .fold_batch_norms import fold_candidates
from .._text import one_line
from .quantize import (MAX_BITS, MIN_BITS, LayerBits, QuantizeConfig, quantizable_layers, quantizable_units,
                       quantized_in_graph)

__all__ = ["Recipe", "RecipeError", "MAX_NESTING", "PRESETS", "FLOAT_RECIPE"]

#: The one-click recipes, by name: what each does to the recipe it is applied to.
PRESETS = {
    "all-8": "every layer at 8-bit weights and activations, every batch norm folded that was not unfolded by name "
             "or rule",
    "first-last-8-rest-4": "the first and last layers at 8 bits, the rest at 4-bit weights and 8-bit activations, "
                           "every batch norm folded that was not unfolded by name or rule",
    "fold-all": "every batch norm folded (bits kept)",
    "float": "nothing folded, nothing quantized",
}

#: The deepest nesting of JSON arrays and objects read (a recipe needs 4).
MAX_NESTING = 64
#: The most rules a recipe records.
MAX_RULES = 1000
_NAME_LIMIT = 300   # characters of a layer name or key shown in a message

_OPTION_DEFAULTS = {"narrow_range": True, "symmetric_weights": True, "symmetric_activations": False,
                    "per_channel": False, "ema_decay": None, "int32_bias": True}
# Read, never written: older recipes had one "symmetric" option for weights and activations.
_LEGACY_OPTIONS = ("symmetric",)


class RecipeError(QvizError, ValueError):
    """A recipe that is malformed or does not fit the graph; the message names the field."""


def _fail(path: str, cause: str):
    raise RecipeError(one_line(f"{path or 'recipe'}: {cause}"))


def _name(key) -> str:
    """A key or layer name as a part of a field path: as it is when it is plain
    printable text, else quoted with escapes; cut after ``_NAME_LIMIT`` characters."""
    name = key if isinstance(key, str) else _show(key)
    cut = name if len(name) <= _NAME_LIMIT else name[:_NAME_LIMIT] + "…"
    plain = cut and cut.isprintable() and cut.strip() == cut and not cut.startswith(("'", '"'))
    return cut if plain or not isinstance(key, str) else repr(cut)


class _Short(reprlib.Repr):
    """``repr`` for messages: short, one line, never failing on a huge integer."""

    def __init__(self):
        super().__init__()
        self.maxlevel, self.maxstring, self.maxother = 3, 80, 80
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = 6

    def repr_int(self, x, level):
        if x.bit_length() > 1000:  # printing it may be slow, or refused (sys.set_int_max_str_digits)
            return f"an integer of about {int(x.bit_length() * math.log10(2)) + 1} digits"
        return super().repr_int(x, level)


def _show(value) -> str:
    if isinstance(value, _LongInt):
        return f"an integer of {value.digits} digits"
    try:
        return one_line(_Short().repr(value))
    except Exception:  # a hostile object's __repr__, from from_dict()
        return f"a {type(value).__name__}"


class _LongInt(int):
    """An integer in the JSON too long to convert (Python refuses beyond 4,300
    digits) or to be meaningful: it keeps its sign and length, and fails
    every range check with a message that says how long it was."""

    def __new__(cls, text: str):
        digits = len(text.lstrip("-"))
        self = super().__new__(cls, -(10 ** 300) if text.startswith("-") else 10 ** 300)
        self.digits = digits
        return self

    def __repr__(self):
        return f"<an integer of {self.digits} digits>"


def _type(value) -> str:
    return "int" if isinstance(value, _LongInt) else type(value).__name__


def _parse_int(text: str) -> int:
    return int(text) if len(text) <= 300 else _LongInt(text)


class _Constant(Exception):
    """NaN/Infinity met while parsing (json reports no position: we find it)."""


def _no_constant(name: str):
    raise _Constant(name)


# JSON strings (unterminated ones run to the end), brackets, and the non-JSON constants
_SCAN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]|-?Infinity|NaN', re.DOTALL)


def _json_error(text: str, pos: int, what: str) -> RecipeError:
    line = text.count("\n", 0, pos) + 1
    column = pos - text.rfind("\n", 0, pos)
    return RecipeError(one_line(f"recipe is not valid JSON: {what} (line {line}, column {column})"))


def _check_nesting(text: str) -> None:
    """Refuse deep nesting before ``json`` recurses into it (it would raise RecursionError)."""
    depth = 0
    for m in _SCAN.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > MAX_NESTING:
                raise _json_error(text, m.start(), f"arrays and objects nested more than {MAX_NESTING} levels deep")
        elif c in "]}":
            depth -= 1


def _load_json(text) -> object:
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise RecipeError(f"recipe is not valid UTF-8: {exc.reason} at byte {exc.start}") from None
    if not isinstance(text, str):
        raise RecipeError(f"recipe must be JSON text (str or bytes), not {type(text).__name__}")
    _check_nesting(text)
    try:
        return json.loads(text, parse_int=_parse_int, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise _json_error(text, exc.pos, exc.msg) from None
    except _Constant as exc:
        # json reads left to right: the first such word outside strings is the one
        first = next((m.start() for m in _SCAN.finditer(text) if m.group() in ("NaN", "Infinity", "-Infinity")), 0)
        raise _json_error(text, first, f"{exc.args[0]} is not a JSON number") from None
    except RecursionError:  # only when called with the stack nearly full already
        raise RecipeError("recipe is not valid JSON: nested too deeply for the stack left") from None


def _keys(d, path: str, allowed: tuple[str, ...]) -> dict:
    if not isinstance(d, Mapping):
        _fail(path, f"must be an object, not {_type(d)}")
    extra = [k for k in d if k not in allowed]
    if extra:
        _fail(f"{path}.{_name(extra[0])}" if path else _name(extra[0]),
              f"unknown key; expected one of {', '.join(allowed)}")
    return dict(d)


def _mapping(d, path: str) -> dict:
    if not isinstance(d, Mapping):
        _fail(path, f"must be an object mapping layer names, not {_type(d)}")
    return dict(d)


def _bool(v, path: str) -> bool:
    if not isinstance(v, bool):
        _fail(path, f"must be true or false, not {_show(v)}")
    return v


def _bits(v, path: str) -> LayerBits | None:
    if v is None:
        return None
    d = _keys(v, path, ("weight_bits", "activation_bits"))
    out = {}
    for k in ("weight_bits", "activation_bits"):
        b = d.get(k, 8)
        if b is not None and (isinstance(b, bool) or not isinstance(b, int)):
            _fail(f"{path}.{k}", f"must be an integer or null, not {_show(b)}")
        if b is not None and not MIN_BITS <= b <= MAX_BITS:
            _fail(f"{path}.{k}", f"must be between {MIN_BITS} and {MAX_BITS}, got {_show(b)}")
        out[k] = b
    return LayerBits(**out)


def _freeze(d: Mapping) -> Mapping:
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class Recipe:
    """Which batch norms to fold and which layers to quantize at what bits.

    Layers not listed take the default. ``quantize_default=None`` quantizes
    nothing unless listed; a layer mapped to ``None`` stays float. The layers
    are conv/dense layers and bypass ``Add`` layers (an Add counts only its
    ``activation_bits``): :func:`~qviz.passes.quant_points.quantizable_units`.
    Weights are symmetric and activations asymmetric by default, as TFLite's
    integer kernels need.
    """

    fold_default: bool = True
    fold_layers: Mapping[str, bool] = field(default_factory=dict)
    quantize_default: LayerBits | None = None
    quantize_layers: Mapping[str, LayerBits | None] = field(default_factory=dict)
    narrow_range: bool = True
    symmetric_weights: bool = True
    symmetric_activations: bool = False
    per_channel: bool = False
    ema_decay: float | None = None
    int32_bias: bool = True
    #: The rules (:mod:`qviz.passes.rules`) the layers above were resolved from, in order,
    #: as written: a record of how they were chosen; the layers are what applies.
    rules: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "rules", tuple(self.rules))
        object.__setattr__(self, "fold_layers", _freeze(self.fold_layers))
        object.__setattr__(self, "quantize_layers", _freeze(self.quantize_layers))

    def __eq__(self, other):
        return isinstance(other, Recipe) and self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash(self.to_json())

    def __reduce__(self):
        # pickled as its JSON (its mappings are read-only views, which pickle refuses): a recipe
        # travels to and from worker processes inside results such as a mixed-precision front
        return (Recipe.from_json, (self.to_json(indent=None),))

    # -- queries -------------------------------------------------------------------

    def folds(self, layer: str) -> bool:
        return self.fold_layers.get(layer, self.fold_default)

    def bits(self, layer: str) -> LayerBits | None:
        return self.quantize_layers.get(layer, self.quantize_default)

    def fold_selection(self, graph: Graph) -> list[str]:
        """The absorbing layers whose batch norms this recipe folds in ``graph``."""
        if not self.fold_default and not any(self.fold_layers.values()):
            return []  # nothing to fold: no need to look for batch norms at all
        return [c.layer for c in fold_candidates(graph) if c.foldable and self.folds(c.layer)]

    def quantize_config(self, graph: Graph) -> QuantizeConfig:
        """The :class:`QuantizeConfig` for ``graph`` (only layers that quantize)."""
        layers = {name: self.bits(name) for name in quantizable_units(graph)}
        return QuantizeConfig({k: v for k, v in layers.items() if v is not None},
                              narrow_range=self.narrow_range, weight_symmetric=self.symmetric_weights,
                              activation_symmetric=self.symmetric_activations,
                              per_channel=self.per_channel, ema_decay=self.ema_decay, int32_bias=self.int32_bias)

    @property
    def rules_only(self) -> bool:
        """Rules and no layers: written by hand, expecting the rules to run (a rule always sets
        some layer, so a recipe qviz made from rules lists them)."""
        return bool(self.rules) and not self.fold_layers and not self.quantize_layers

    def validate(self, graph: Graph) -> "Recipe":
        """Check every layer named exists and can do what is asked; returns ``self``."""
        if self.rules_only:
            _fail("rules", "the recipe has rules but no layers: qviz applies a recipe's layers and keeps its "
                           "rules as the record of how they were chosen; make the layers from the rules with "
                           "`qviz recipe MODEL --rules-from RECIPE.json` (or qviz.passes.apply_rules)")
        foldable = {c.layer for c in fold_candidates(graph) if c.layer is not None} if self.fold_layers else set()
        for name in self.fold_layers:
            if name not in graph.layers:
                _fail(f"fold.layers.{_name(name)}", "no such layer in the graph")
            if name not in foldable:
                _fail(f"fold.layers.{_name(name)}", "this layer has no batch norm after it to fold")
        quantizable = set(quantizable_units(graph)) if self.quantize_layers else set()
        done = quantized_in_graph(graph) if self.quantize_layers else {}
        for name in self.quantize_layers:
            if name not in graph.layers:
                _fail(f"quantize.layers.{_name(name)}", "no such layer in the graph")
            if name in done:
                _fail(f"quantize.layers.{_name(name)}", f"fake-quantized in the graph already "
                                                        f"({done[name].short}): qviz quantizes a tensor once")
            if name not in quantizable:
                _fail(f"quantize.layers.{_name(name)}", "not a Conv2D/DepthwiseConv2dNative/MatMul layer "
                                                        "or a bypass Add")
        return self

    # -- building ----------------------------------------------------------------------

    @classmethod
    def default(cls, graph: Graph, bits: LayerBits | None = LayerBits(8, 8)) -> "Recipe":
        """A recipe listing every foldable layer (folded) and every quantizable layer (at ``bits``)."""
        fold = {c.layer: True for c in fold_candidates(graph) if c.foldable}
        return cls(fold_default=True, fold_layers=fold, quantize_default=bits,
                   quantize_layers={name: bits for name in quantizable_layers(graph)})

    def with_preset(self, name: str, graph: Graph) -> "Recipe":
        """This recipe with one of the :data:`PRESETS` applied for ``graph``; of its
        :attr:`rules`, the actions the preset did not overwrite.

        >>> import qviz
        >>> from qviz.samples import sample_path
        >>> g = qviz.load(sample_path("lenet_digits"))
        >>> r = Recipe().with_preset("first-last-8-rest-4", g)
        >>> {name: b.weight_bits for name, b in r.quantize_layers.items()}
        {'conv1': 8, 'conv2': 4, 'fc1': 4, 'logits': 8}
        >>> r.folds("conv1"), r.with_fold("conv1", False).with_preset("all-8", g).folds("conv1")   # a fold turned off stays off
        (True, False)
        >>> Recipe().with_preset("int3", g)
        Traceback (most recent call last):
        ...
        qviz.passes.recipe.RecipeError: preset: 'int3' is not one of all-8, first-last-8-rest-4, fold-all, float
        """
        from .rules import surviving_rules   # the rules module builds on this one

        # A preset overwrites what rules chose for every layer's bits or folds: those actions go.
        # The quantizing ones fold by default (TFLite runs a conv whose batch norm is not folded
        # in float: a one-click recipe the device runs in float is a trap); a fold the user
        # turned off, by name or by rule, stays off.
        if name == "all-8":
            return replace(self, quantize_default=LayerBits(8, 8), quantize_layers={}, fold_default=True,
                           rules=surviving_rules(self.rules, bits=True, folds=False))
        if name == "first-last-8-rest-4":
            layers = list(quantizable_layers(graph))
            edge = {layers[0], layers[-1]} if layers else set()
            # (the default: the layers without weights, a bypass Add, at 8-bit activations, as
            # all-8 has them; left float, the device converts to float and back around each)
            return replace(self, rules=surviving_rules(self.rules, bits=True, folds=False), fold_default=True,
                           quantize_default=LayerBits(8, 8), quantize_layers={
                # (4-bit activations: TFLite's converter refuses them, and a one-click recipe
                # the device cannot run is a trap; 4-bit weights it runs)
                layer: LayerBits(8, 8) if layer in edge else LayerBits(4, 8) for layer in layers})
        if name == "fold-all":
            return replace(self, fold_default=True, fold_layers={},
                           rules=surviving_rules(self.rules, bits=False, folds=True))
        if name == "float":
            return FLOAT_RECIPE
        raise RecipeError(f"preset: {name!r} is not one of {', '.join(PRESETS)}")

    def with_fold(self, layer: str, on: bool) -> "Recipe":
        return replace(self, fold_layers={**self.fold_layers, layer: on})

    def with_bits(self, layer: str, bits: LayerBits | None) -> "Recipe":
        return replace(self, quantize_layers={**self.quantize_layers, layer: bits})

    # -- JSON ----------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, d) -> "Recipe":
        d = _keys(d, "", ("fold", "quantize", "options", "rules"))
        fold = _keys(d.get("fold", {}), "fold", ("default", "layers"))
        quant = _keys(d.get("quantize", {}), "quantize", ("default", "layers"))
        options = _keys(d.get("options", {}), "options", tuple(_OPTION_DEFAULTS) + _LEGACY_OPTIONS)
        if "symmetric" in options:   # the old single option: both, unless the new ones say otherwise
            both = _bool(options.pop("symmetric"), "options.symmetric")
            options = {"symmetric_weights": both, "symmetric_activations": both, **options}
        fold_layers = {str(k): _bool(v, f"fold.layers.{_name(k)}")
                       for k, v in _mapping(fold.get("layers", {}), "fold.layers").items()}
        quant_layers_raw = _mapping(quant.get("layers", {}), "quantize.layers")
        opts = {**_OPTION_DEFAULTS, **options}
        for k in ("narrow_range", "symmetric_weights", "symmetric_activations", "per_channel", "int32_bias"):
            _bool(opts[k], f"options.{k}")
        ema = opts["ema_decay"]
        if ema is not None and (isinstance(ema, bool) or not isinstance(ema, (int, float)) or not 0 <= ema < 1):
            _fail("options.ema_decay", f"must be null or a number in [0, 1), not {_show(ema)}")
        rules = d.get("rules", [])
        if not isinstance(rules, list) or len(rules) > MAX_RULES:
            _fail("rules", f"must be a list of at most {MAX_RULES} rule texts, not {_show(rules)}")
        from .rules import parse_rule   # the rules module builds on this one

        for rule in rules:
            parse_rule(rule)   # written by hand, perhaps: said wrong here, not when used
        return cls(
            rules=tuple(rules),
            fold_default=_bool(fold.get("default", True), "fold.default"),
            fold_layers=fold_layers,
            quantize_default=_bits(quant.get("default"), "quantize.default"),
            quantize_layers={str(k): _bits(v, f"quantize.layers.{_name(k)}") for k, v in quant_layers_raw.items()},
            narrow_range=opts["narrow_range"], symmetric_weights=opts["symmetric_weights"],
            symmetric_activations=opts["symmetric_activations"], per_channel=opts["per_channel"],
            ema_decay=None if ema is None else float(ema), int32_bias=opts["int32_bias"])

    @classmethod
    def from_json(cls, text: str | bytes) -> "Recipe":
        """The recipe in JSON ``text`` (bytes: UTF-8).

        Raises:
            RecipeError: one line: the JSON's problem with its line and column,
                or the field that is wrong (see the module's examples).
        """
        return cls.from_dict(_load_json(text))

    def to_dict(self) -> dict:
        def bits(b):
            return None if b is None else {"weight_bits": b.weight_bits, "activation_bits": b.activation_bits}

        rules = {"rules": list(self.rules)} if self.rules else {}   # absent otherwise: older qviz reads it
        return {
            **rules,
            "fold": {"default": self.fold_default, "layers": dict(self.fold_layers)},
            "quantize": {"default": bits(self.quantize_default),
                         "layers": {k: bits(v) for k, v in self.quantize_layers.items()}},
            "options": self.options(),
        }

    def options(self) -> dict:
        """How this recipe quantizes, whatever the model (``{"per_channel": …, …}``, as its
        JSON's "options"): what another model's recipe made from it keeps.

        >>> Recipe(per_channel=True).options()["per_channel"]
        True
        """
        return {k: getattr(self, k) for k in _OPTION_DEFAULTS}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)


#: The float model's recipe: nothing folded, nothing quantized (the "float" preset).
FLOAT_RECIPE = Recipe(fold_default=False, quantize_default=None)
