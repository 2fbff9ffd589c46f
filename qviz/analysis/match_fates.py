"""What a rewrite did to each match of a pattern: the float graph's matches
carried through the change record, each with its fate.

A pattern is matched on the float graph once; the rewrite's change record
then says, for every match, whether its ops were folded away, quantized,
otherwise rewritten, or kept (and, when a pass skipped them, why). Matches
keep their float-graph number, so a match is the same match, with the same
colour, however the recipe changes. Matches the rewrite creates (a pattern of
FakeQuants, say) come after them, as ``new``.

Rules:

- ``folded``: the fold pass removed some of the match's ops (its batch norm).
- ``quantized``: the quantize pass changed some of its ops (FakeQuants in front
  of them), none removed.
- ``rewritten``: ops removed or changed by anything else.
- ``kept``: none of its ops changed; ``reason`` says why: the batch norm in it
  cannot be folded (the fold's own reason), or the recipe does not fold it, or
  the recipe leaves these ops alone.
- ``survivors`` are the match's ops still in the rewritten graph: where its
  highlight goes in the rewritten view.

>>> import qviz
>>> from qviz.patterns import BUILTIN
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> result = qviz.apply(g, qviz.Recipe(fold_default=False, fold_layers={"conv1": True}), report=False)
>>> fates = match_fates(BUILTIN["conv_bn"], g, result)
>>> for m in fates:
...     print(m.number, " + ".join(m.layers), m.fate, "-", m.reason)
1 conv1 + bn1 folded - bn1 folded into conv1
2 conv2 + bn2 kept - the recipe does not fold bn2 into conv2
3 fc1 + bn3 kept - the recipe does not fold bn3 into fc1
>>> {g.node(n).layer for n in fates[0].survivors}       # bn1 is gone; conv1 carries the match
{'conv1'}
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph
from ..matcher import GraphMatcher, Pattern, find_matches
from ..passes import fold_candidates

__all__ = ["MatchFate", "match_fates", "summary", "FATES"]

#: Every fate, in the order a summary lists them.
FATES = ("folded", "quantized", "rewritten", "kept", "new")


@dataclass(frozen=True)
class MatchFate:
    """One match of a pattern, followed through a rewrite."""

    number: int                 # 1-based; the float graph's matches first, in their order there
    root: str                   # root op (the float graph's name; the rewritten graph's for ``new``)
    layer: str                  # the root's layer
    layers: tuple[str, ...]     # every layer it touches, in the model's order
    op: str                     # the root's op type
    body: tuple[str, ...]       # the ops it binds, sorted
    fate: str                   # one of FATES
    reason: str                 # the fate in a user's words
    survivors: tuple[str, ...]  # ops of ``body`` still in the rewritten graph


def match_fates(pattern: Pattern | GraphMatcher, original: Graph, result) -> list[MatchFate]:
    """The matches of ``pattern`` on ``original``, followed through ``result``
    (a :class:`qviz.pipeline.Result`), then the rewrite's new matches. ``pattern`` may be
    a :class:`~qviz.matcher.GraphMatcher` (compiled once for many calls).

    The float graph is never changed, so a match's ``number`` depends only on
    the pattern and the model: the same match keeps its number across edits.
    """
    rewritten = result.graph
    changes = result.changes
    removed, modified = set(changes.removed), set(changes.modified)
    removed_by_fold = set(result.folded.changes.removed)
    changed_by_quantize = set(result.quantized.changes.modified) | set(result.quantized.changes.removed)
    why_kept = {}         # layer → why its ops may be untouched
    for c in fold_candidates(original):
        why_kept[c.bn_layer] = (f"{c.bn_layer} cannot be folded: {c.reason}" if not c.foldable
                                else f"the recipe does not fold {c.bn_layer} into {c.layer}")
    for s in result.skipped:
        why_kept[s.layer] = s.reason
    out = []
    order = {name: i for i, name in enumerate(original.layers)}
    matcher = pattern if isinstance(pattern, GraphMatcher) else GraphMatcher(pattern)   # (compiled once)
    for i, m in enumerate(find_matches(matcher, original)):
        body = tuple(sorted(m.body()))
        gone = [n for n in body if n in removed]
        touched = [n for n in body if n in modified]
        layers = sorted({original.node(n).layer for n in body}, key=lambda name: order.get(name, -1))
        if gone and set(gone) <= removed_by_fold:
            absorbed = sorted({original.node(n).layer for n in gone})
            into = sorted({original.node(n).layer for n in body if n not in removed}) or [m.root.layer]
            fate, reason = "folded", f"{', '.join(absorbed)} folded into {', '.join(into)}"
        elif gone or (touched and not set(touched) <= changed_by_quantize):
            fate = "rewritten"
            reason = f"{len(gone)} of its {len(body)} ops removed, {len(touched)} changed"
        elif touched:
            fate, reason = "quantized", f"fake-quantized ({', '.join(layers)})"
        else:
            why = next((why_kept[layer] for layer in layers if layer in why_kept), None)
            fate, reason = "kept", why or "the recipe leaves these ops as they are"
        survivors = tuple(n for n in body if n in rewritten)
        out.append(MatchFate(i + 1, m.root.name, m.root.layer, tuple(layers), m.root.op, body, fate, reason,
                             survivors))
    if rewritten is original:
        return out
    carried = {n for f in out for n in f.survivors}
    order = {name: i for i, name in enumerate(rewritten.layers)}
    for m in find_matches(matcher, rewritten):
        if m.root.name in carried:
            continue           # the float graph's match, still there
        body = tuple(sorted(m.body()))
        layers = sorted({rewritten.node(n).layer for n in body}, key=lambda name: order.get(name, -1))
        out.append(MatchFate(len(out) + 1, m.root.name, m.root.layer, tuple(layers), m.root.op, body, "new",
                             "made by the rewrite", body))
    return out


def summary(fates: list[MatchFate], why_none: str | None = None) -> str:
    """One line: how many matches the float graph has and what became of them (``why_none``:
    why there is none, :func:`qviz.matcher.nowhere`).

    >>> from dataclasses import replace
    >>> f = MatchFate(1, "r", "bn1", ("conv1", "bn1"), "AddV2", ("r",), "folded", "", ())
    >>> summary([f, replace(f, number=2, fate="kept"), replace(f, number=3, fate="new")])
    '2 matches in the float graph: 1 folded, 1 kept; 1 more made by the rewrite'
    >>> summary([]), summary([], "no op of type Conv2d in this model")
    ('no match in the float graph', 'no match in the float graph: no op of type Conv2d in this model')
    """
    carried = [f for f in fates if f.fate != "new"]
    counts = [f"{sum(f.fate == fate for f in carried)} {fate}" for fate in FATES
              if fate != "new" and any(f.fate == fate for f in carried)]
    text = (f"{len(carried)} match{'es' if len(carried) != 1 else ''} in the float graph: " + ", ".join(counts)
            if carried else "no match in the float graph" + (f": {why_none}" if why_none else ""))
    new = len(fates) - len(carried)
    return text + (f"; {new} more made by the rewrite" if new else "")
