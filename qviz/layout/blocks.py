"""Blocks: runs of layers drawn as one node, so a graph of thousands of layers can be read.

A model of a thousand layers is built from a few dozen repeated blocks
(MobileNetV2's ``block_N``, ResNet's ``convS_blockB``, NASNet's cells), and its
reader thinks in them. :func:`find_blocks` finds them in the layer graph alone,
so it works on any model, named or not, and on a Keras file's layer graph
before TensorFlow has frozen it (the same blocks either way):

1. Lay the layers out in a topological order that finishes a branch before
   starting the next (:func:`_order`). A run of consecutive layers in that
   order drawn as one node can never make a cycle: every edge that leaves the
   run goes forwards.
2. Between layer *i* and *i+1* count the **width**: how many layers up to *i*
   feed a layer after it. Where a block ends, the width is smallest (1 after a
   chain, 2 after a NASNet cell whose two last outputs feed the next one).
3. Add a **name penalty** for cutting between two layers whose names share a
   numbered scope: ``block_1_expand | block_1_expand_BN`` share ``block_1``
   (penalty 2, its length in tokens), ``normal_add_1_0 | normal_concat_0`` end
   alike in ``0`` (penalty 1), ``block_1_project_BN | block_2_expand`` share
   nothing numbered (0).
4. Cut greedily: from the start of a block, the cheapest cut between
   :data:`MIN_LAYERS` and :data:`MAX_LAYERS` layers on, costing
   ``width + penalty`` plus :data:`SIZE_WEIGHT` × the block's relative distance
   from :data:`TARGET_LAYERS` layers (the end of the graph costs 1, as a chain's
   cut; the earliest of equals wins).

A block is named by the numbered prefix most of its layers share
(``block_1``, ``conv2_block1``; ``conv2_block5–6`` for two dense layers),
or the longer numbered suffix most share, with the first word of those names
(``separable_*_normal_left1_5``), else its first and last layer (``conv12 …
relu14``); layers Keras named by default (``activation_58``) do not count. On
the Keras applications this gives MobileNetV2's 16 ``block_N`` and ResNet50's
16 ``convS_blockB`` exactly, DenseNet121's dense layers, and NASNetMobile's
cells in two to five parts, each named by its branch.

>>> from qviz.layout import DiGraph
>>> names = ["input", "block_1_expand", "block_1_bn", "block_1_relu", "block_1_project",
...          "block_2_expand", "block_2_bn", "block_2_relu", "block_2_project", "block_2_add", "head"]
>>> chain = DiGraph(list(zip(names, names[1:])))
>>> chain.add_edge("block_1_project", "block_2_add")   # block 2's bypass
>>> [(b.label, b.layers[0], b.layers[-1]) for b in find_blocks(chain, min_layers=2)]
[('block_1', 'input', 'block_1_project'), ('block_2', 'block_2_expand', 'head')]
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .digraph import DiGraph

__all__ = ["Block", "find_blocks", "layer_graph", "closed_blocks", "default_grouping", "MIN_LAYERS", "MAX_LAYERS",
           "TARGET_LAYERS", "BLOCKS_FROM_LAYERS"]

#: Sizes of a block, in layers: never fewer than MIN (a block of two saves little),
#: never more than MAX (a block should be taken in at a glance once opened).
MIN_LAYERS = 3
MAX_LAYERS = 64
TARGET_LAYERS = 8
#: How much a block's distance from TARGET_LAYERS (relative) adds to a cut's cost.
SIZE_WEIGHT = 1.0
#: A graph of more layers than this opens with its blocks closed (NASNetMobile has
#: ~770 layers, DenseNet121 ~430; MobileNetV2's 158 and ResNet50's 177 read fine as layers).
BLOCKS_FROM_LAYERS = 400

#: Share of a block's layers whose names must agree for the block to be named after them.
MAJORITY = 0.6

_TOKEN = re.compile(r"[^_/.:\-]+")
#: A numbered scope: letters, then its number (``block5``).
_SCOPE = re.compile(r"([A-Za-z]+)(\d+)")
#: At most this many numbered scopes named together in a label (``conv2_block5–6``).
MAX_SPANNED = 4
#: Names Keras gives a layer nobody named (``activation_12``, ``add_3``, ``zero_padding2d``).
_DEFAULT_NAME = re.compile(r"(activation|add|concatenate|zero_padding2d|dropout|re_lu|multiply|reshape|flatten|"
                           r"cropping2d|average|maximum|minimum|subtract|lambda|batch_normalization|"
                           r"global_average_pooling2d|global_max_pooling2d|max_pooling2d|average_pooling2d)(_\d+)?")
#: Words that say what kind a layer is, not where it sits: they name no block (every
#: NASNet cell has separable convs and batch norms; "normal" and "reduction" tell cells apart).
_KIND_WORDS = frozenset("conv separable depthwise pointwise bn batch norm normalization activation relu pad padding "
                        "zero add concat concatenate pool pooling avg max global dense dropout reshape flatten "
                        "expand project squeeze excite se".split())


@dataclass(frozen=True)
class Block:
    """A run of consecutive layers drawn as one node: ``id`` (its view key's name,
    stable for a model: the block's number), ``label`` (what the reader sees), ``layers``."""

    id: str
    label: str
    layers: tuple[str, ...]


def layer_graph(view: DiGraph) -> DiGraph:
    """A view graph's layers as a graph of layer names (nodes of other kinds, and ghosts,
    are left out).

    >>> v = DiGraph([("layer:a", "layer:b"), ("layer:b", "op:c/Relu")])
    >>> v.nodes["layer:a"]["layer"], v.nodes["layer:b"]["layer"] = "a", "b"
    >>> list(layer_graph(v).edges)
    [('a', 'b')]
    """
    out = DiGraph()
    for k, d in view.nodes(data=True):
        if str(k).startswith("layer:") and not d.get("ghost_of"):
            out.add_node(d["layer"])
    for u, v in view.edges:
        if str(u).startswith("layer:") and str(v).startswith("layer:"):
            out.add_edge(view.nodes[u]["layer"], view.nodes[v]["layer"])
    return out


def find_blocks(layers: DiGraph, *, min_layers: int = MIN_LAYERS, max_layers: int = MAX_LAYERS,
                target: int = TARGET_LAYERS) -> tuple[Block, ...]:
    """The blocks of a layer graph (nodes: layer names; edges: data flow), in order.

    Every layer is in at most one block; a layer left between two blocks (or a
    graph with a cycle between layers, which has no order to cut) is in none.

    >>> find_blocks(DiGraph([("a", "b")]))
    ()
    """
    order = _order(layers)
    if order is None or len(order) < 2 * min_layers:
        return ()
    n = len(order)
    cost = [*_cut_costs(layers, order), 1.0]     # the graph's end: as good a place to end a block as a chain's cut
    blocks, start = [], 0
    while start < n:
        if n - start < 2 * min_layers:
            end = n
        else:
            lo, hi = start + min_layers, min(start + max_layers, n - min_layers, n)
            # cut after position i (block = order[start:i + 1]); the end of the graph is a cut too
            candidates = [*range(lo - 1, hi), *([n - 1] if n - start <= max_layers else [])]
            end = 1 + min(candidates, key=lambda i: (cost[i] + SIZE_WEIGHT * abs(i + 1 - start - target) / target, i))
        run = order[start:end]
        if len(run) >= 2:
            blocks.append(Block(str(len(blocks) + 1), _label(run), tuple(run)))
        start = end
    return _numbered_apart(blocks)


def _numbered_apart(blocks: Sequence[Block]) -> tuple[Block, ...]:
    """Blocks with their labels told apart: a label several blocks share gets
    ``(1/3)``, ``(2/3)``… (a NASNet cell cut in parts).

    >>> [b.label for b in _numbered_apart([Block("1", "…_1", ()), Block("2", "x", ()), Block("3", "…_1", ())])]
    ['…_1 (1/2)', 'x', '…_1 (2/2)']
    """
    total = Counter(b.label for b in blocks)
    seen: Counter = Counter()
    out = []
    for b in blocks:
        if total[b.label] > 1:
            seen[b.label] += 1
            b = Block(b.id, f"{b.label} ({seen[b.label]}/{total[b.label]})", b.layers)
        out.append(b)
    return tuple(out)


def _order(layers: DiGraph) -> list[str] | None:
    """A topological order of the layers that finishes a branch before it starts
    another (the layer made ready last goes next; equals by name), so a block's
    layers are consecutive. It depends on the graph alone, not on the order its
    nodes were added: a Keras file's layer graph and the frozen graph's give the
    same order, hence the same blocks. None if the layers form a cycle.

    >>> g = DiGraph([("x", "a1"), ("a1", "a2"), ("x", "b1"), ("b1", "b2"), ("a2", "y"), ("b2", "y")])
    >>> _order(g)
    ['x', 'a1', 'a2', 'b1', 'b2', 'y']
    """
    waiting = {n: d for n, d in layers.in_degree()}
    stack = sorted((n for n, d in waiting.items() if d == 0), reverse=True)
    order = []
    while stack:
        n = stack.pop()
        order.append(n)
        ready = []
        for m in layers.successors(n):
            waiting[m] -= 1
            if waiting[m] == 0:
                ready.append(m)
        stack.extend(sorted(ready, reverse=True))
    return order if len(order) == len(waiting) else None


def _cut_costs(layers: DiGraph, order: Sequence[str]) -> list[float]:
    """``cost[i]`` of cutting between ``order[i]`` and ``order[i + 1]``: width + name penalty."""
    position = {n: i for i, n in enumerate(order)}
    opens = [0] * (len(order) + 1)
    for n, i in position.items():
        last = max((position[m] for m in layers.successors(n)), default=i)
        if last > i:
            opens[i] += 1
            opens[last] -= 1
    tokens = [_TOKEN.findall(n) for n in order]
    cost, width = [], 0
    for i in range(len(order) - 1):
        width += opens[i]
        cost.append(width + _shared_scope(tokens[i], tokens[i + 1]))
    return cost


def _numbered(run: Sequence[str]) -> int:
    """How many of ``run``'s tokens to keep: up to and including its last token with a digit."""
    return max((i + 1 for i, t in enumerate(run) if any(c.isdigit() for c in t)), default=0)


def _common(a: Sequence[str], b: Sequence[str]) -> list[str]:
    out = []
    for x, y in zip(a, b):
        if x != y:
            break
        out.append(x)
    return out


def _shared_scope(a: Sequence[str], b: Sequence[str]) -> int:
    """The name penalty: tokens of a numbered scope two names share, at the start or the end."""
    head = _numbered(_common(a, b))
    tail = _numbered(_common(a[::-1], b[::-1]))
    return max(head, tail)


def _label(run: Sequence[str]) -> str:
    """The most specific numbered scope most of ``run``'s layers share: a prefix
    (``conv3_block1``; ``conv2_block5–6`` when the layers split between a few
    numbered scopes under it), else a suffix, read with the first word of the
    layers ending in it (``normal_*_0``) or a word most of them have that names no
    layer kind (``reduction…_stem_1``), else the first and last layer. Layers
    named by Keras' defaults (``activation_12``, ``add_3``) say nothing about
    the block and are not counted while others are there.

    >>> _label(["conv2_block5_0_bn", "conv2_block5_1_conv", "conv2_block6_0_bn", "conv2_block6_1_conv"])
    'conv2_block5–6'
    >>> _label(["activation_9", "reduction_conv_1_stem_1", "separable_conv_1_reduction_left1_stem_1", "activation_10"])
    'reduction…_stem_1'
    >>> _label(["activation_9", "adjust_conv_1_stem_1", "separable_conv_1_left1_stem_1", "activation_10"])
    '…_stem_1'
    >>> _label(["global_average_pooling2d", "predictions"])    # one named layer: its name
    'predictions'
    >>> _label(["separable_conv_1_pad_reduction_left1_stem_2", "separable_conv_1_reduction_left1_stem_2",
    ...         "separable_conv_1_bn_reduction_left1_stem_2"])
    'separable_*_reduction_left1_stem_2'
    """
    named = [n for n in run if not _DEFAULT_NAME.fullmatch(n)]
    tokens = [_TOKEN.findall(n) for n in (named or run)]
    head = _majority(tokens)
    tail = _majority([t[::-1] for t in tokens], numbered=0)   # ends in a number: "…_stem_1"
    if head and len(head) > len(tail):   # the longer scope says more (NASNet's start with separable_conv_1)
        return "_".join(head) + _numbered_under(tokens, len(head))
    if tail:
        ending = [t for t in tokens if t[-len(tail):] == tail[::-1] and len(t) > len(tail)]
        first = Counter(t[0] for t in ending)
        word, times = first.most_common(1)[0] if first else ("", 0)
        if times >= MAJORITY * len(tokens):
            return "_".join([word, "*", *tail[::-1]])
        # no first word most share: a word most use somewhere that names no layer kind (NASNet's cells)
        somewhere = Counter(w for t in ending for w in set(t[:-len(tail)])
                            if w.isalpha() and w.lower() not in _KIND_WORDS)
        word, times = somewhere.most_common(1)[0] if somewhere else ("", 0)
        return (f"{word}…_" if times >= MAJORITY * len(tokens) else "…_") + "_".join(tail[::-1])
    ends = named or run
    return f"{ends[0]} … {ends[-1]}" if ends[0] != ends[-1] else ends[0]


def _numbered_under(tokens: Sequence[Sequence[str]], k: int) -> str:
    """``"_block5–6"`` when most names go on, after their shared ``k`` tokens, with one
    of at most :data:`MAX_SPANNED` scopes numbered alike (``block5``, ``block6``); else "".

    >>> _numbered_under([["conv2", "block5", "0"], ["conv2", "block6", "1"], ["conv2", "block8"]], 1)
    '_block5,6,8'
    >>> _numbered_under([["conv2", "block5", "0"], ["conv2", "pool"]], 1)
    ''
    """
    found = [_SCOPE.fullmatch(t[k]) for t in tokens if len(t) > k]
    if len(found) < MAJORITY * len(tokens) or not all(found) or len({m[1] for m in found}) != 1:
        return ""
    numbers = sorted({int(m[2]) for m in found})
    if not 2 <= len(numbers) <= MAX_SPANNED:
        return ""
    run = numbers[-1] - numbers[0] + 1 == len(numbers)
    return f"_{found[0][1]}" + (f"{numbers[0]}–{numbers[-1]}" if run else ",".join(map(str, numbers)))


def _majority(tokens: Sequence[Sequence[str]], share: float = MAJORITY, numbered: int = -1) -> list[str]:
    """The longest run of leading tokens whose token at ``numbered`` (its last, or with
    0 its first) has a digit that at least ``share`` of the names start with ([] if none)."""
    best: list[str] = []
    for k in range(1, max(map(len, tokens), default=0) + 1):
        count = Counter(tuple(t[:k]) for t in tokens if len(t) >= k)
        if not count:
            break
        prefix, times = count.most_common(1)[0]
        if times < share * len(tokens):
            break
        if any(c.isdigit() for c in prefix[numbered]):
            best = list(prefix)
    return best


def closed_blocks(blocks: Sequence[Block], open_ids: Iterable[str]) -> tuple[Block, ...]:
    """The blocks drawn as one node: all but those opened.

    >>> [b.id for b in closed_blocks([Block("1", "a", ("a",)), Block("2", "b", ("b",))], ["1", "nope"])]
    ['2']
    """
    opened = set(open_ids)
    return tuple(b for b in blocks if b.id not in opened)


def default_grouping(num_layers: int) -> bool:
    """Whether a graph of ``num_layers`` layers opens with its blocks closed.

    >>> default_grouping(158), default_grouping(771)
    (False, True)
    """
    return num_layers > BLOCKS_FROM_LAYERS
