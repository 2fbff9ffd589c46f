"""What the graph view draws and how, apart from plotly: the colours of node kinds,
rewrite statuses, halos and bit widths; a layer's badge and an opened block's frame;
node labels (shortened, placed, shown only when readable) and the first view's window.

The plotly figure (:mod:`qviz.render.figure`) and the page's first SVG
(:mod:`qviz.render.svg`) both draw with these, so the first view needs no plotly:
it is drawn while ``qviz serve`` has not answered yet.

>>> Badge.of(4, 8, folded=True).text, bits_color(4) == dict(BIT_COLORS)[4]
('w4a8+bn', True)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..layout.view import BLOCK_KIND

__all__ = ["COLORS", "KIND_NAMES", "NO_VALUE_COLOR", "SELECTED_OUTLINE", "FRAME_FILL", "HALO_OPACITY", "HALO_SIZE",
           "GHOST_OPACITY", "STATUS_COLORS", "STATUS_OUTLINE_WIDTH", "PLAIN_OUTLINE", "HALO_COLORS", "MAX_LABELS", "LABELS_IN_VIEW", "LABEL_PX",
           "FIRST_VIEW_RANKS", "shows_whole", "MAX_ARROWS", "MAX_SVG_NODES", "DRAWN_IN_VIEW_ABOVE", "BIT_COLORS", "FLOAT_BADGE_COLOR", "bits_color",
           "Frame", "Badge", "MAX_LABEL_CHARS", "SHORT_WORD", "ABBREVIATIONS", "short_label", "label_position",
           "label_sides", "opposite_side", "first_view_range"]

COLORS = {"conv": "#1f77b4", "batchnorm": "#ff7f0e", "quant": "#9467bd", "activation": "#2ca02c",
          "add": "#8c564b", "pool": "#17becf", "io": "#7f7f7f", "other": "#bcbd22", BLOCK_KIND: "#5c6bc0"}
#: What each fill colour stands for, in the legend's words.
KIND_NAMES = {"conv": "conv / dense (has weights)", "batchnorm": "batch norm", "quant": "fake-quant",
              "activation": "activation", "add": "add (bypass)", "pool": "pooling", "io": "input / output",
              "other": "other", BLOCK_KIND: "block of layers (closed: select it and press expand)"}
#: The fill of a node without a value while the graph is coloured by a metric.
NO_VALUE_COLOR = "#e3e3e3"
#: The selected node's outline (colour, width); a match's halo and a removed node's opacity.
SELECTED_OUTLINE = ("#000", 4)
#: An opened block's outline (:class:`Frame`): the closed block's colour (COLORS), its fill barely there.
FRAME_FILL = "rgba(92, 107, 192, 0.06)"
HALO_OPACITY = 0.45
HALO_SIZE = 30   # px across, as a plotly marker's size
GHOST_OPACITY = 0.35
#: A node's outline: its diff status's colour (:data:`STATUS_OUTLINE_WIDTH` wide), else plain.
STATUS_COLORS = {"added": "#00a651", "modified": "#f5a623", "removed": "#d0021b"}
STATUS_OUTLINE_WIDTH = 3
PLAIN_OUTLINE = ("#fff", 1)
HALO_COLORS = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#46f0f0", "#f032e6",
               "#bcf60c", "#fabebe", "#008080", "#e6beff", "#9a6324"]
#: Above this many nodes, labels are left to hover (text on that many nodes is slow to draw).
#: Below it every node carries its label, and the page (assets/graph_view.js) shows the
#: labels only while they can be read: neighbouring ranks at least :data:`LABEL_PX` pixels
#: apart and at most :data:`LABELS_IN_VIEW` nodes in view. Zoom in to read them.
MAX_LABELS = 2000    # = MAX_SVG_NODES: names on WebGL's thousands of points cost seconds to build and draw
LABELS_IN_VIEW = 250
LABEL_PX = 45
#: How many ranks the first view shows of a longer graph: its start, at a zoom where the
#: nodes' names can be read (about 100 px a rank on a laptop); the minimap shows the rest.
FIRST_VIEW_RANKS = 10
#: Above this many edges, arrow heads are dropped (ranks already read left to right).
MAX_ARROWS = 2000
#: Up to this many nodes the graph is SVG; above, WebGL. SVG is on screen sooner (a WebGL
#: context costs ~0.6 s in a browser without a GPU) and its text is crisper; WebGL pans
#: tens of thousands of points smoothly.
MAX_SVG_NODES = 2000
#: Above this many points an SVG trace draws only those in view (plotly's
#: ``marker.maxdisplayed`` set to them all: it then keeps the points inside the axes'
#: ranges, and draws again after each pan or zoom). Plotly styles every point it draws,
#: in view or not: NASNetMobile's op view (1,126 nodes, 1,281 arrow heads) was ~1 s of
#: plotly a click, ~0.35 s drawing only what is in view. The price: while a drag is under
#: way, the nodes it brings into view are drawn when the mouse is released, and a node whose
#: centre is just out of view is not drawn at all (not clipped at the edge). Plotly then binds
#: the trace's texts to the points drawn by position, so names and badges stay right only
#: because each drawing starts without text groups (``dropTextGroups``, assets/graph_view.js).
#: Arrow heads and match halos are drawn only in view on an SVG graph of any size (figure._in_view_only).
DRAWN_IN_VIEW_ABOVE = 300


#: A badge's colour: the narrowest bit width it names (at least this many bits → this colour).
#: Wide is calm, narrow is loud: a 4-bit layer stands out from its 8-bit neighbours.
BIT_COLORS = ((16, "#1b5e20"), (8, "#2e7d32"), (6, "#9e9d24"), (4, "#ef6c00"), (3, "#d84315"), (2, "#b71c1c"))
FLOAT_BADGE_COLOR = "#555"


def bits_color(bits: int | None) -> str:
    """The colour of a badge whose narrowest width is ``bits`` (None: float).

    >>> bits_color(8), bits_color(5), bits_color(None)
    ('#2e7d32', '#ef6c00', '#555')
    """
    if bits is None:
        return FLOAT_BADGE_COLOR
    return next((color for least, color in BIT_COLORS if bits >= least), BIT_COLORS[-1][1])


@dataclass(frozen=True)
class Frame:
    """An opened block drawn as a dashed outline around its nodes, its name on top: the
    box says which layers were one node, and selecting a node in it offers to close it.

    >>> f = Frame("block_1", ("layer:a", "layer:b"))
    >>> f.box({"layer:a": (0.0, 0.0), "layer:b": (2.0, 1.0), "layer:c": (5.0, 5.0)})
    (-0.45, -0.45, 2.45, 1.45)
    """

    label: str
    keys: tuple[str, ...]     # the nodes drawn for the block's layers (or their ops)

    #: How far the box reaches past the outermost nodes' centres (layout units: 1 = a rank).
    PAD = 0.45

    def box(self, pos: Mapping) -> tuple[float, float, float, float] | None:
        """``(x0, y0, x1, y1)`` around the frame's nodes that ``pos`` places; None if none."""
        at = [pos[k] for k in self.keys if k in pos]
        if not at:
            return None
        xs, ys = [p[0] for p in at], [p[1] for p in at]
        return (min(xs) - self.PAD, min(ys) - self.PAD, max(xs) + self.PAD, max(ys) + self.PAD)

    def outline(self, pos: Mapping, direction: str = "LR") -> str | None:
        """An SVG path around the frame's nodes, rank by rank: each rank's nodes from the
        first to the last across it, so a neighbouring block that the layout placed
        beside a narrow rank stays outside (a bounding box held it); None if none placed.

        >>> f = Frame("b", ("layer:a", "layer:b", "layer:c"))
        >>> f.outline({"layer:a": (0.0, 0.0), "layer:b": (1.0, 0.0), "layer:c": (1.0, 3.0), "layer:x": (0.0, 3.0)})
        'M-0.45,-0.45 L0.5,-0.45 L1.45,-0.45 L1.45,3.45 L0.5,3.45 L0.5,0.45 L-0.45,0.45 Z'

        (``layer:x``, at the first rank across from ``layer:a``, is outside it.) Ranks
        whose nodes do not face each other are outlined apart (one path, two shapes):

        >>> f.outline({"layer:a": (0.0, 0.0), "layer:b": (1.0, 3.0), "layer:c": (1.0, 4.0)})
        'M-0.45,-0.45 L0.45,-0.45 L0.45,0.45 L-0.45,0.45 Z M0.55,2.55 L1.45,2.55 L1.45,4.45 L0.55,4.45 Z'
        """
        along = 0 if direction != "TB" else 1   # the rank axis
        spans = self._spans(pos, along)
        if not spans:
            return None
        runs: list[list[float]] = []
        for r in sorted(spans):
            last = runs[-1][-1] if runs else None
            if last is not None and spans[r][0] <= spans[last][1] + 2 * self.PAD \
                    and spans[last][0] <= spans[r][1] + 2 * self.PAD:
                runs[-1].append(r)
            else:
                runs.append([r])
        # within a run each rank reaches halfway to the next, so their boxes join into one outline
        between = {a: (a + b) / 2 for a, b in zip(sorted(spans), sorted(spans)[1:])}
        paths = []
        for ranks in runs:
            edges = [ranks[0] - self.PAD if len(runs) == 1 or ranks is runs[0] else max(ranks[0] - self.PAD,
                                                                                           _after(between, ranks[0])),
                     *((a + b) / 2 for a, b in zip(ranks, ranks[1:])),
                     ranks[-1] + self.PAD if ranks is runs[-1] else min(ranks[-1] + self.PAD, between[ranks[-1]])]
            low = [(e, spans[r][0] - self.PAD) for i, r in enumerate(ranks) for e in (edges[i], edges[i + 1])]
            high = [(e, spans[r][1] + self.PAD) for i, r in enumerate(ranks) for e in (edges[i], edges[i + 1])]
            points = low + high[::-1]
            points = [p for i, p in enumerate(points) if i == 0 or p != points[i - 1]]
            xy = [(a, b) if along == 0 else (b, a) for a, b in points]
            paths.append("M" + " L".join(f"{_coordinate(x)},{_coordinate(y)}" for x, y in xy) + " Z")
        return " ".join(paths)

    def name_at(self, pos: Mapping, direction: str = "LR") -> tuple[float, float] | None:
        """Where the frame's name goes: over its first rank (left to right) or its top
        one (top to bottom), at the outline's corner, so it labels this frame, not a
        neighbour the layout put beside it.

        >>> Frame("b", ("layer:a", "layer:c")).name_at({"layer:a": (0.0, 0.0), "layer:c": (1.0, 3.0)})
        (-0.45, 0.45)
        """
        along = 0 if direction != "TB" else 1
        spans = self._spans(pos, along)
        if not spans:
            return None
        if along == 0:
            first = min(spans)
            return first - self.PAD, spans[first][1] + self.PAD
        top = max(spans)   # ranks go down the page: y = -rank
        return spans[top][0] - self.PAD, top + self.PAD

    def _spans(self, pos: Mapping, along: int) -> dict[float, list[float]]:
        """Rank (rounded: one rank whatever float noise) → [lowest, highest] across it of the frame's nodes."""
        spans: dict[float, list[float]] = {}
        for k in self.keys:
            if k in pos:
                rank, across = round(pos[k][along], 6), pos[k][1 - along]
                lo_hi = spans.setdefault(rank, [across, across])
                lo_hi[0], lo_hi[1] = min(lo_hi[0], across), max(lo_hi[1], across)
        return spans


def _after(between: Mapping[float, float], rank: float) -> float:
    """The edge halfway between ``rank`` and the rank before it."""
    return max((edge for r, edge in between.items() if r < rank), default=rank)


def _coordinate(v: float) -> str:
    return f"{v:.4f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Badge:
    """The short text beside a node saying what the recipe does to its layer:
    ``w4a8`` (weights at 4 bits, activations at 8), ``+bn`` (its batch norm folded in).

    >>> Badge.of(4, 8, folded=True)
    Badge(text='w4a8+bn', bits=4)
    >>> Badge.of(None, 8), Badge.of(None, None, folded=True), Badge.of(None, None)
    (Badge(text='a8', bits=8), Badge(text='+bn', bits=None), None)
    """

    text: str
    bits: int | None    # the narrowest width named (the badge's colour); None: float

    @classmethod
    def of(cls, weight_bits: int | None, activation_bits: int | None, folded: bool = False) -> "Badge | None":
        # (LayerBits.short's text, not imported: the first view imports no pass)
        text = (f"w{weight_bits}" if weight_bits else "") + (f"a{activation_bits}" if activation_bits else "")
        text += "+bn" if folded else ""
        widths = [b for b in (weight_bits, activation_bits) if b]
        return cls(text, min(widths) if widths else None) if text else None

    @classmethod
    def span(cls, weight_bits, activation_bits, folded: bool = False) -> "Badge | None":
        """The badge of a closed block: the range of its layers' widths (``w4–8a8+bn``).

        >>> Badge.span([8, 4, None], [8, 8], folded=True), Badge.span([], [])
        (Badge(text='w4–8a8+bn', bits=4), None)
        """
        def words(prefix, values):
            values = sorted({v for v in values if v})
            if not values:
                return ""
            return f"{prefix}{values[0]}" + (f"–{values[-1]}" if len(values) > 1 else "")

        text = words("w", weight_bits) + words("a", activation_bits) + ("+bn" if folded else "")
        widths = [b for b in (*weight_bits, *activation_bits) if b]
        return cls(text, min(widths) if widths else None) if text else None

    @property
    def color(self) -> str:
        return bits_color(self.bits)


#: Longest label drawn on the graph; longer names are shortened (short_label; hover has them whole).
MAX_LABEL_CHARS = 26


#: A word shortened to fit keeps this many letters (``separable`` → ``sep``).
SHORT_WORD = 3
#: Words of layer names shortened the way people write them (``concat`` → ``cat``: cut to
#: ``con`` it read as a conv); any other word keeps its first :data:`SHORT_WORD` letters.
ABBREVIATIONS = {"separable": "sep", "reduction": "red", "normal": "norm", "concat": "cat", "concatenate": "cat",
                 "depthwise": "dw", "pointwise": "pw", "activation": "act", "expand": "exp", "project": "proj",
                 "average": "avg", "maximum": "max", "global": "glob", "pooling": "pool", "padding": "pad",
                 "squeeze": "sq", "excite": "ex", "dropout": "drop", "flatten": "flat", "reshape": "resh",
                 "convolution": "conv",
                 # op types qviz names its quantizers after (``…/act_quant/FakeQuantWithMinMaxVars``)
                 "FakeQuantWithMinMaxVars": "FakeQuant", "FakeQuantWithMinMaxVarsPerChannel": "FakeQuantPerCh"}


def short_label(name: str, limit: int = MAX_LABEL_CHARS) -> str:
    """``name``, shortened if it is longer than ``limit``: its longest words are shortened
    first (``separable`` → ``sep``, :data:`ABBREVIATIONS`), so every word is still there and what tells a
    conv from its batch norm (``_bn_``) or one branch from the next survives; only a name
    that still does not fit loses its middle. Hover shows names whole.

    >>> short_label("separable_conv_1_normal_left1_8"), short_label("separable_conv_1_bn_normal_left1_8")
    ('sep_conv_1_normal_left1_8', 'sep_conv_1_bn_norm_left1_8')
    >>> short_label("normal_left4_10_normal_concat_10")
    'norm_left4_10_norm_cat_10'

    >>> short_label("separable_conv_1_pad_reduction_right1_stem_1")
    'sep…pad_red_right1_stem_1'

    An op's label (``layer/op``, :func:`qviz.layout.view.op_label`) keeps what the op is:

    >>> short_label("reduction_conv_1_stem_1/convolution"), short_label("separable_conv_1_bn_normal_left1_8/mul_1")
    ('red_conv_1_stem_1/conv', 'sep…bn_norm_left1_8/mul_1')
    >>> short_label("block_1_expand_relu/FakeQuantWithMinMaxVars")   # (it read …/Fa…ithMinMaxVars)
    'block_1_exp_relu/FakeQuant'
    >>> short_label("Conv1")
    'Conv1'
    >>> short_label("x" * 40)
    'xxxxxxxxxxxx…xxxxxxxxxxxxx'

    A block's label (``word_*_scope``, :func:`qviz.layout.blocks.find_blocks`) keeps its
    scope, which tells blocks apart, and loses whole words at its start:

    >>> short_label("separable_*_reduction_left1_stem_1 (1/2)")
    '…_left1_stem_1 (1/2)'
    """
    if len(name) <= limit:
        return name
    head, slash, last = name.rpartition("/")
    if head and "_*_" not in name and not name.startswith("…_"):   # an op (layer/op), not a block:
        # what the op does is kept whole, its layer shortened
        last = ABBREVIATIONS.get(last, last)
        if len(last) <= limit // 2:
            label = _shortened(head, limit - len(last) - 1) + slash + last
            if len(label) <= limit:
                return label
    return _shortened(name, limit)


def _shortened(name: str, limit: int) -> str:
    """:func:`short_label` of a name that is not an op's ``layer/op``."""
    if len(name) <= limit:
        return name
    if "_*_" in name or name.startswith("…_"):
        words = name.split("_*_", 1)[-1].removeprefix("…_").split("_")
        while len(words) > 1 and len("…_" + "_".join(words)) > limit:
            words.pop(0)
        if len("…_" + "_".join(words)) <= limit:
            return "…_" + "_".join(words)
    # words, each with the separator before it (op names have scopes: model/conv/BiasAdd)
    words = re.findall(r"[_/.:\-]?[^_/.:\-]*", name)[:-1]
    if len(words) > 1:
        for i in sorted(range(len(words)), key=lambda i: -len(words[i])):
            if len("".join(words)) <= limit:
                return "".join(words)
            sep, word = words[i][:1] if i else "", words[i][1:] if i else words[i]
            if word in ABBREVIATIONS:
                words[i] = sep + ABBREVIATIONS[word]
            elif word.isalpha() and word.islower() and len(word) > SHORT_WORD + 1:
                # the same cut for every word (sep, sep…), unless that leaves far less than fits
                total = len("".join(words))
                keep = SHORT_WORD if total - len(word) + SHORT_WORD >= limit // 2 else len(word) - (total - limit)
                words[i] = sep + word[:keep]
        # then whole words from the middle: the first word and as many of the last as fit
        kept = 1
        while kept < len(words) and len(words[0] + "…" + "".join(words[-kept:]).lstrip("_/.:-")) <= limit:
            kept += 1
        tail = "".join(words[-(kept - 1):]).lstrip("_/.:-") if kept > 1 else ""
        if tail and len("".join(words)) > limit and len(f"{words[0]}…{tail}") >= limit // 2:
            return f"{words[0]}…{tail}"
        if len("".join(words)) <= limit:
            return "".join(words)
    head = (limit - 1) // 2
    return name[:head] + "…" + name[-(limit - 1 - head):]


def opposite_side(position: str) -> str:
    """The other side of a node from ``position`` (where its badge goes)."""
    return {"bottom center": "top center", "top center": "bottom center",
            "middle right": "middle left", "middle left": "middle right"}.get(position, "top center")


def label_position(xy, d, direction: str = "LR") -> str:
    """Where a node's label goes: in a left-to-right layout, below the nodes of even
    ranks and above those of odd ones, so neighbours' long names do not run into
    each other (a rank is ~100 px wide at the first view's zoom); a ghost's label
    beside it.

    >>> label_position((0.0, 0.0), {}), label_position((1.0, 0.0), {}), label_position((1.0, 0.0), {}, "TB")
    ('bottom center', 'top center', 'middle right')
    """
    if d.get("ghost_of"):
        return "top right"
    if direction == "TB":
        return "middle right"
    return "bottom center" if round(xy[0]) % 2 == 0 else "top center"


#: What label placement assumes of the screen: a layout unit's pixels — the first view's zoom is
#: ~110 (:data:`FIRST_VIEW_RANKS` ranks across a ~1,100-px plot), where alternating sides keeps
#: every name apart on MobileNetV2 and NASNetMobile; placing them for 80 keeps them apart a
#: little further out too (NASNetMobile's layers at 70 px: 128 pairs run together, not 221) —,
#: a 10-px label's mean character width and line height, and how far it sits off its node.
UNIT_PX, CHAR_PX, LINE_PX, LABEL_GAP_PX = 80.0, 6.0, 12.0, 8.0
#: How near two labels may come and still read as two: nearer, side by side, they read as one name.
CLEAR_PX = (6.0, 8.0)   # (across, up and down)


def label_sides(g, pos: Mapping, direction: str = "LR") -> dict:
    """Where each node's label goes (see :func:`label_position`); a badge goes on the other side.

    Left to right, the ranks' alternation (below, above) keeps neighbours at one height apart;
    where a label would still run into (or come within :data:`CLEAR_PX` of) another label or
    a node — a neighbour a row higher or lower, a long name reaching two ranks on — it goes on
    the node's other side if that overlaps less. Nodes are placed rank by rank, measured at
    :data:`UNIT_PX`. Badges are not weighed: an edit of bits must not move names about (nor
    the first view, drawn before there are badges, differ from the graph that replaces it).

    >>> from qviz.layout import DiGraph
    >>> g = DiGraph()
    >>> g.add_nodes_from([("a", {"label": "a_rather_long_layer_name"}), ("b", {"label": "b_rather_long_layer_name"}),
    ...                   ("c", {"label": "c"})])
    >>> pos = {"a": (0.0, 0.0), "b": (1.0, -0.3), "c": (2.0, 0.0)}
    >>> [label_position(pos[k], g.nodes[k]) for k in "abc"]   # a's name below runs into b
    ['bottom center', 'top center', 'bottom center']
    >>> label_sides(g, pos)                                   # a's above, b's below: apart
    {'a': 'top center', 'b': 'bottom center', 'c': 'bottom center'}
    """
    # A ghost's label goes beside it only where a node of the rewrite is drawn over it (an op
    # replaced by one of another name): a folded batch norm's ghost, alone in its place, is
    # named as its float node was, so the rest are placed as in the float graph: beside, it
    # moved 23 of MobileNetV2's names to their other side when Conv1 was folded.
    drawn = {(round(x, 3), round(y, 3)) for k, (x, y) in pos.items() if not g.nodes[k].get("ghost_of")}
    covered = {k for k, (x, y) in pos.items() if g.nodes[k].get("ghost_of") and (round(x, 3), round(y, 3)) in drawn}
    # (cached: every draw asks, and most edits move no node and rename none)
    nodes = tuple((k, *pos[k], str(g.nodes[k].get("label", k)), k in covered) for k in pos)
    return dict(_label_sides(nodes, direction))


@functools.lru_cache(maxsize=8)
def _label_sides(nodes: tuple, direction: str) -> tuple:
    pos = {k: (x, y) for k, x, y, _, _ in nodes}
    labels = {k: label for k, _, _, label, _ in nodes}
    sides = {k: label_position((x, y), {"ghost_of": ghost}, direction) for k, x, y, _, ghost in nodes}
    if direction != "LR":
        return tuple(sides.items())
    # boxes (left, right, bottom, top; px, y up) by (rank, band of height LINE_PX): a label is
    # weighed against those of two ranks either side and its own and the next bands only
    placed: dict[tuple[int, int], list[tuple[float, float, float, float]]] = {}

    def bands(b):
        return range(int((b[2] - CLEAR_PX[1]) // LINE_PX), int((b[3] + CLEAR_PX[1]) // LINE_PX) + 1)

    def put(rank, b):
        for band in bands(b):
            placed.setdefault((rank, band), []).append(b)

    def box(k, side, chars):
        x, y = pos[k][0] * UNIT_PX, pos[k][1] * UNIT_PX
        half = chars * CHAR_PX / 2
        if side == "top center":
            return x - half, x + half, y + LABEL_GAP_PX, y + LABEL_GAP_PX + LINE_PX
        if side == "bottom center":
            return x - half, x + half, y - LABEL_GAP_PX - LINE_PX, y - LABEL_GAP_PX
        return x + LABEL_GAP_PX, x + LABEL_GAP_PX + 2 * half, y + 2, y + 2 + LINE_PX   # top right

    def overlap(b, rank, own):
        seen, total = {own}, 0.0   # (not the node the label names)
        for near in range(rank - 2, rank + 3):
            for band in bands(b):
                for o in placed.get((near, band), ()):
                    if o in seen:   # (a box spans two bands)
                        continue
                    seen.add(o)
                    w = min(b[1], o[1]) - max(b[0], o[0]) + CLEAR_PX[0]
                    h = min(b[3], o[3]) - max(b[2], o[2]) + CLEAR_PX[1]
                    if w > 0 and h > 0:
                        total += w * h
        return total

    r, dots = LINE_PX / 2, {}
    for k, (x, y) in pos.items():   # the nodes themselves are in the way of every label
        dots[k] = (x * UNIT_PX - r, x * UNIT_PX + r, y * UNIT_PX - r, y * UNIT_PX + r)
        put(round(x), dots[k])
    for k in sorted(pos, key=lambda k: (pos[k][0], -pos[k][1])):
        rank, chars = round(pos[k][0]), len(short_label(labels[k]))
        if sides[k] in ("top center", "bottom center"):
            other = opposite_side(sides[k])
            crowded = overlap(box(k, sides[k], chars), rank, dots[k])
            if crowded and crowded > overlap(box(k, other, chars), rank, dots[k]):
                sides[k] = other
        put(rank, box(k, sides[k], chars))
    return tuple(sides.items())


def shows_whole(span: float, direction: str = "LR", ranks: int = FIRST_VIEW_RANKS) -> bool:
    """Whether a layered layout ``span`` ranks long opens whole: left to right, at up to half
    as many ranks again as the first view's (names still clear at ~70 px a rank); top to
    bottom, where the plot is shorter than wide, only as many.

    >>> shows_whole(12), shows_whole(16), shows_whole(12, "TB")
    (True, False, False)
    """
    return span < (ranks * 1.5 + 1 if direction == "LR" else ranks + 2)


def first_view_range(pos: Mapping, direction: str = "LR", ranks: int = FIRST_VIEW_RANKS):
    """``(x range, y range)`` showing the first ``ranks`` ranks of a layered layout,
    centred across on the nodes there; None when the graph opens whole (:func:`shows_whole`:
    a 13-layer model had opened with its last three layers off the screen).

    >>> pos = {f"n{i}": (float(i), 0.0) for i in range(30)}
    >>> first_view_range(pos)
    ([-0.6, 9.4], [-2.0, 2.0])
    >>> first_view_range({f"n{i}": (float(i), 0.0) for i in range(13)}) is None   # a 13-layer model: whole
    True
    """
    if not pos:
        return None
    along, across = (0, 1) if direction == "LR" else (1, 0)
    values = [p[along] for p in pos.values()]
    # TB layouts grow downwards (rank r at y = -r): the start is the top
    start = min(values) if direction == "LR" else max(values)
    if shows_whole(max(values) - min(values), direction, ranks):
        return None
    step = 1 if direction == "LR" else -1
    near = sorted(p[across] for p in pos.values() if 0 <= (p[along] - start) * step < ranks)
    centre = near[len(near) // 2] if near else 0.0
    lo, hi = sorted((start - 0.6 * step, start + (ranks - 0.6) * step))
    half = 0.2 * ranks
    span_along, span_across = [round(lo, 6), round(hi, 6)], [round(centre - half, 6), round(centre + half, 6)]
    return (span_along, span_across) if direction == "LR" else (span_across, span_along)
