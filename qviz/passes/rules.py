"""Rules: choose layers by what they are, not one by one — each sets fold and bits.

A rule is ``SELECTORS: ACTIONS``. Selectors, joined with ``&`` (all must hold):

* ``name~REGEX`` — the layer's name contains a match of ``REGEX`` (Python ``re``);
* ``op=TYPE`` — the layer holds an op of that type (``DepthwiseConv2dNative``);
* ``pattern=NAME`` — the layer takes part in a match of built-in pattern ``NAME``
  (:data:`qviz.patterns.BUILTIN`: ``conv_bn``, ``layer_activation``, …);
* ``between=A..B`` — the layer lies on a path from layer ``A`` to layer ``B``, both
  included (a block of a residual net: its branches and its bypass alike);
* ``*`` — every layer.

Actions, joined with ``,``: ``fold`` / ``nofold``; ``wN``, ``aM`` or ``wNaM``
(weights and/or activations at N/M bits; a width not named is kept); ``float``
(not quantized). Rules apply in order, later ones winning; a fold applies to the
selected layers that have a batch norm to fold, bits to the quantizable ones, and
a rule that reaches no such layer is an error (a typo should not pass silently).

>>> import qviz
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> r = apply_rules(Recipe(fold_default=False), ["*: w8a8", "name~^conv: w4, fold", "op=MatMul & name~logits: float"], g)
>>> [(layer, r.folds(layer), r.bits(layer)) for layer in ("conv1", "fc1", "logits")]   # doctest: +NORMALIZE_WHITESPACE
[('conv1', True, LayerBits(weight_bits=4, activation_bits=8)),
 ('fc1', False, LayerBits(weight_bits=8, activation_bits=8)), ('logits', False, None)]
>>> r.rules
('*: w8a8', 'name~^conv: w4, fold', 'op=MatMul & name~logits: float')
>>> parse_rule("name~block_1[: w4a8")
Traceback (most recent call last):
...
qviz.passes.recipe.RecipeError: rule 'name~block_1[: w4a8': name~block_1[ is not a regular expression (unterminated character set at position 8)
>>> apply_rules(Recipe(), ["name~nowhere: w4a8"], g)
Traceback (most recent call last):
...
qviz.passes.recipe.RecipeError: rule 'name~nowhere: w4a8': selects no layer of this model
>>> sorted(parse_rule("between=conv2..fc1: w4").layers(g))
['bn2', 'conv2', 'fc1', 'flatten', 'pool', 'relu2']
>>> parse_rule("between=fc1..conv2: w4").layers(g)
Traceback (most recent call last):
...
qviz.passes.recipe.RecipeError: rule 'between=fc1..conv2: w4': no path leads from layer fc1 to layer conv2
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace

import networkx as nx
import regex

from ..choices import MAX_BITS, MIN_BITS
from ..ir import Graph
from ..matcher import find_matches
from ..patterns import BUILTIN
from .fold_batch_norms import fold_candidates
from .quant_points import quantizable_units
from .quantize import LayerBits
from .recipe import MAX_RULES, Recipe, RecipeError

__all__ = ["Rule", "parse_rule", "apply_rules", "surviving_rules", "recorded_edit", "MAX_RULE_CHARS"]

#: The longest rule read (a regular expression is compiled from it).
MAX_RULE_CHARS = 500
#: Seconds a ``name~REGEX`` may take over all of a model's layer names: a pattern such
#: as ``(.*.*)*!`` backtracks for hours, and rules run while the user waits.
REGEX_SECONDS = 1.0
_BITS = re.compile(r"(?:w(\d+))?(?:a(\d+))?")


@dataclass(frozen=True)
class Rule:
    """One parsed rule: ``selectors`` (kind, argument) all hold; then ``fold`` (None:
    unchanged), ``float`` (quantize nothing), or the widths named (None: unchanged)."""

    text: str
    selectors: tuple[tuple[str, str], ...]
    fold: bool | None = None
    float: bool = False
    weight_bits: int | None = None
    activation_bits: int | None = None

    @property
    def sets_bits(self) -> bool:
        return self.float or self.weight_bits is not None or self.activation_bits is not None

    def layers(self, graph: Graph) -> set[str]:
        """The layers of ``graph`` every selector holds for."""
        chosen = set(graph.layers)
        for kind, arg in self.selectors:
            if kind == "*":
                continue
            if kind == "name":
                chosen = _named(chosen, arg, self.text)
            elif kind == "op":
                chosen &= {n.layer for n in graph.nodes if n.op == arg}
            elif kind == "between":
                chosen &= _between(graph, self.text, arg)
            else:   # pattern
                chosen &= {n.layer for m in find_matches(BUILTIN[arg], graph) for n in m.nodes()}
        return chosen


def _between(graph: Graph, text: str, arg: str) -> set[str]:
    """The layers on a path of data edges from one layer to another, ends included
    (``arg`` is ``A..B``)."""
    layers = set(graph.layers)
    # a layer name may itself hold "..": take the split whose two sides are layers
    splits = [(arg[:i], arg[i + 2:]) for i in range(len(arg)) if arg.startswith("..", i)]
    ends = next(((a, b) for a, b in splits if a in layers and b in layers), None)
    if ends is None:
        unknown = sorted({end for split in splits for end in split if end not in layers})
        _fail(text, f"between=: no layer named {unknown[0]!r} in this model" if len(splits) == 1
              else f"between={arg}: no split of it names two layers of this model")
    start, end = ends
    dag = graph.nx
    data = nx.subgraph_view(dag, filter_edge=lambda u, v: not dag[u][v].get("control"))
    after = _reach(data.successors, {n.name for n in graph.layer_nodes(start)})
    before = _reach(data.predecessors, {n.name for n in graph.layer_nodes(end)})
    on_path = {graph.node(n).layer for n in after & before}
    if not ({start, end} <= on_path):
        _fail(text, f"no path leads from layer {start} to layer {end}")
    return on_path


def _reach(step, starts: set[str]) -> set[str]:
    """``starts`` and every node ``step`` (successors or predecessors) leads to: one search."""
    seen, todo = set(starts), list(starts)
    while todo:
        for nxt in step(todo.pop()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _named(layers, pattern: str, text: str) -> set[str]:
    """The layers whose name holds a match of ``pattern``, within :data:`REGEX_SECONDS` in all."""
    compiled = regex.compile(pattern)
    deadline = time.monotonic() + REGEX_SECONDS
    try:
        return {layer for layer in layers
                if compiled.search(layer, timeout=max(deadline - time.monotonic(), 1e-3))}
    except TimeoutError:
        _fail(text, f"name~{pattern} takes over {REGEX_SECONDS:g} s to match the layer names "
                    "(nested repeats such as (.*)* backtrack without end); simplify it")


def _fail(text: str, cause: str):
    shown = text if len(text) <= 80 else text[:77] + "…"
    raise RecipeError(f"rule {shown!r}: {cause}")


def parse_rule(text) -> Rule:
    """A rule from its text (see the module's grammar). Raises RecipeError, naming the rule."""
    if not isinstance(text, str):
        raise RecipeError(f"rule: must be text such as 'name~block_1: w4a8', not a {type(text).__name__}")
    if len(text) > MAX_RULE_CHARS:
        _fail(text, f"longer than {MAX_RULE_CHARS} characters")
    if ":" not in text:
        _fail(text, "expected SELECTORS: ACTIONS, e.g. 'name~block_1[0-3]: w4a8'")
    where, what = (part.strip() for part in text.rsplit(":", 1))
    selectors = []
    for sel in (s.strip() for s in where.split("&")):
        if sel == "*":
            selectors.append(("*", ""))
        elif sel.startswith("name~"):
            try:
                regex.compile(sel[5:])
            except regex.error as exc:
                _fail(text, f"{sel} is not a regular expression ({exc})")
            selectors.append(("name", sel[5:]))
        elif sel.startswith("op="):
            selectors.append(("op", sel[3:]))
        elif sel.startswith("between="):
            if ".." not in sel:
                _fail(text, f"{sel}: between= takes two layer names, A..B")
            selectors.append(("between", sel[8:]))
        elif sel.startswith("pattern="):
            if sel[8:] not in BUILTIN:
                _fail(text, f"no built-in pattern {sel[8:]!r}; choose from {', '.join(BUILTIN)}")
            selectors.append(("pattern", sel[8:]))
        else:
            _fail(text, f"{sel!r} is not a selector: name~REGEX, op=TYPE, pattern=NAME, between=A..B or *")
    fold, floats, w, a = None, False, None, None
    for act in (s.strip() for s in what.split(",")):
        if act in ("fold", "nofold"):
            if fold is not None and fold != (act == "fold"):
                _fail(text, "fold and nofold contradict each other")
            fold = act == "fold"
        elif act == "float":
            floats = True
        elif act and (m := _BITS.fullmatch(act)) and (m.group(1) or m.group(2)):
            for digits in filter(None, m.groups()):
                if len(digits) > 3 or not MIN_BITS <= int(digits) <= MAX_BITS:
                    _fail(text, f"{act}: widths must be between {MIN_BITS} and {MAX_BITS} bits")
            for was, now, part in ((w, m.group(1), "weight"), (a, m.group(2), "activation")):
                if now and was is not None and was != int(now):
                    _fail(text, f"two {part} widths ({was} and {int(now)}) contradict each other")
            w = int(m.group(1)) if m.group(1) else w
            a = int(m.group(2)) if m.group(2) else a
        else:
            _fail(text, f"{act!r} is not an action: fold, nofold, float, wN, aM or wNaM")
    if floats and (w or a):
        _fail(text, "float and bit widths contradict each other")
    return Rule(text, tuple(selectors), fold, floats, w, a)


def surviving_rules(rules, *, bits: bool, folds: bool) -> tuple[str, ...]:
    """``rules`` after something overwrote every layer's bits (``bits``) and/or folds
    (``folds``) — a preset: each rule keeps only the actions that still apply, and a
    rule with none left is dropped, so the record says what still made the recipe.

    >>> surviving_rules(["name~^conv: w4, fold", "op=MatMul: float", "*: nofold"], bits=True, folds=False)
    ('name~^conv: fold', '*: nofold')
    """
    kept = []
    for rule in map(parse_rule, rules):
        actions = [] if folds or rule.fold is None else ["fold" if rule.fold else "nofold"]
        if not bits and rule.sets_bits:
            actions.append("float" if rule.float else "".join(
                f"{k}{v}" for k, v in (("w", rule.weight_bits), ("a", rule.activation_bits)) if v is not None))
        if actions:
            kept.append(f"{rule.text.rsplit(':', 1)[0].strip()}: {', '.join(actions)}")
    return tuple(kept)


def recorded_edit(recipe: Recipe, layer: str, edited: Recipe) -> Recipe:
    """``edited`` — ``recipe`` with ``layer``'s fold or bits changed by hand — with that
    change added to the rules ``recipe`` records, as rules naming ``layer`` alone: the
    record then still makes the layers (a hand edit had left it saying the rules chose a
    layer they no longer did). A recipe with no rules records none; one whose record is
    full (:data:`~qviz.passes.recipe.MAX_RULES`) loses it rather than keep a false one.

    >>> r = Recipe(fold_default=False, rules=("name~^conv: w4",))
    >>> recorded_edit(r, "conv2", r.with_bits("conv2", LayerBits(None, 8))).rules
    ('name~^conv: w4', 'name~^conv2$: float', 'name~^conv2$: a8')
    """
    if not recipe.rules:
        return edited
    named = f"name~^{re.escape(layer)}$"
    added = []
    if edited.folds(layer) != recipe.folds(layer):
        added.append(f"{named}: {'fold' if edited.folds(layer) else 'nofold'}")
    bits = edited.bits(layer)
    if bits != recipe.bits(layer):
        w, a = (None, None) if bits is None else (bits.weight_bits, bits.activation_bits)
        if w is None or a is None:   # (a rule keeps a width it does not name: unset both first)
            added.append(f"{named}: float")
        if w is not None or a is not None:
            added.append(f"{named}: " + "".join(f"{k}{v}" for k, v in (("w", w), ("a", a)) if v is not None))
    rules = (*recipe.rules, *added)
    return replace(edited, rules=rules if len(rules) <= MAX_RULES else ())


def apply_rules(recipe: Recipe, rules, graph: Graph) -> Recipe:
    """``recipe`` with ``rules`` (texts) resolved on ``graph`` in order into per-layer
    choices, and recorded in its :attr:`~qviz.passes.recipe.Recipe.rules`."""
    foldable = {c.layer for c in fold_candidates(graph) if c.foldable}
    units = set(quantizable_units(graph))
    texts = []
    for rule in map(parse_rule, rules):
        chosen = rule.layers(graph)
        if not chosen:
            _fail(rule.text, "selects no layer of this model")
        if rule.fold is not None:
            targets = chosen & foldable
            if not targets:
                _fail(rule.text, f"none of its {len(chosen)} layers has a batch norm to fold")
            for layer in sorted(targets):
                recipe = recipe.with_fold(layer, rule.fold)
        if rule.sets_bits:
            targets = chosen & units
            if not targets:
                _fail(rule.text, f"none of its {len(chosen)} layers can be quantized (conv, dense or bypass Add)")
            for layer in sorted(targets):
                old = recipe.bits(layer) or LayerBits(None, None)
                bits = None if rule.float else LayerBits(
                    rule.weight_bits if rule.weight_bits is not None else old.weight_bits,
                    rule.activation_bits if rule.activation_bits is not None else old.activation_bits)
                recipe = recipe.with_bits(layer, bits)
        texts.append(rule.text)
    return replace(recipe, rules=(*recipe.rules, *texts))
