"""What the app's callbacks ask for, without Dash: plain functions from a
session and the page's state (recipe history, view choices) to data.

Callbacks map component properties to one of these and the answer back to
properties (and components); everything here can be unit-tested with no
browser and no Dash (``tests/app/unit/``). What needs TensorFlow is a job the
session starts (:mod:`qviz.app.jobs`); the passes here read the job's
calibration ranges, so a recipe's rewrite is only graph surgery.

>>> import qviz
>>> from qviz.samples import sample_path
>>> from qviz.app.session import Session
>>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
>>> page = new_history(qviz.Recipe.default(s.graph))
>>> page = edit_layer(page, "conv2", "weight_bits", "4")
>>> current(page).bits("conv2").weight_bits, page["pos"]
(4, 1)
>>> current(undo(page)).bits("conv2").weight_bits
8
>>> sorted(draw_view(s, current(page), ViewChoice()).graph)[:2]
['layer:bn1', 'layer:bn2']
"""

from __future__ import annotations

import base64
import binascii
import threading
import weakref
from dataclasses import dataclass, field, replace

from ..choices import bits_label, parse_bits_label
from ..layout import DiGraph, ViewKey, around, default_cache, diff_status, key_showing, routes_in_place, view_graph
from ..layout.blocks import closed_blocks
from ..layout.view import block_showing
from ..analysis.budget import budget
from ..analysis.channel_ranges import ChannelRanges, channel_ranges
from ..analysis.node_data import MAX_NODE_DATA_BYTES, NodeData, NodeDataError, on_layers
from ..matcher import explain, explain_layer
from ..passes import (LayerBits, Recipe, RecipeError, apply_rules, fold_candidates, quantizable_layers, recorded_edit,
                      quantizable_units, quantized_in_graph)
from ..passes.recipe import FLOAT_RECIPE, MAX_RULES
from ..render.marks import Badge
from ..render.metric import metric_fill
from ..render.image import recipe_badges
from ..render.svg import graph_svg

__all__ = ["HISTORY_LIMIT", "START_RECIPE", "new_history", "current", "push", "undo", "redo", "edit_layer",
           "EDITED_FIELDS", "NOT_APPLICABLE", "apply_edits", "shows", "set_layer", "recipe_from_upload", "with_rule",
           "rules_line", "preset_note", "layer_rows", "on_tflite", "ViewChoice", "DrawnView", "shown", "draw_view",
           "match_marks", "MatchItem", "why", "hover_lines", "hover_shapes",
           "warm_up", "device_flags", "bit_badges", "change_line", "cost_line", "painted", "metric_fill",
           "node_data_from_upload", "layer_of_key", "channel_bits", "channel_ranges_for",
           "graph_svg_file", "report_explains", "fold_layer_of", "grid_values", "drawn_key"]

#: Undo steps kept per page.
HISTORY_LIMIT = 50

#: The recipe a freshly opened model starts with: nothing folded or quantized.
START_RECIPE = FLOAT_RECIPE


# -- the recipe history the page holds ----------------------------------------------------

def new_history(recipe: Recipe) -> dict:
    """The page's recipe store for a freshly opened model."""
    return {"history": [recipe.to_dict()], "pos": 0}


def current(history: dict) -> Recipe:
    return Recipe.from_dict(history["history"][history["pos"]])


def push(history: dict, recipe: Recipe) -> dict:
    """The history with ``recipe`` as the newest step (redo steps dropped)."""
    steps = history["history"][: history["pos"] + 1] + [recipe.to_dict()]
    return {**history, "history": steps[-HISTORY_LIMIT:], "pos": min(len(steps), HISTORY_LIMIT) - 1}


def undo(history: dict) -> dict:
    return {**history, "pos": max(0, history["pos"] - 1)}


def redo(history: dict) -> dict:
    return {**history, "pos": min(len(history["history"]) - 1, history["pos"] + 1)}


def edit_layer(history: dict, layer: str, field_name: str, value) -> dict:
    """The history after one control of ``layer`` was set to ``value`` (unchanged
    when the control only shows what the recipe says: a redraw, not an edit)."""
    recipe = current(history)
    if shows(recipe, layer, field_name, value):
        return history
    return push(history, set_layer(recipe, layer, field_name, value))


#: The layer-table columns that edit the recipe (the others only show it).
EDITED_FIELDS = ("fold", "weight_bits", "activation_bits")


def apply_edits(history: dict, log: dict, model, layers) -> dict:
    """The history with the page's table edits it does not have yet, in the order made.

    The page logs every cell edit in the browser, numbered (``log["edits"]``, each
    ``{"seq", "model", "layer", "field", "value"}``), and the history says which
    edit it took last (``history["applied"]``). A request for the second of two
    quick edits can carry a history from before the first (Dash drops the first
    request's answer when the second is sent); it carries the log with both, so
    both are applied. Edits made on another model than ``model`` (the page's
    model version), or naming a layer not in ``layers``, are skipped.

    >>> page = new_history(Recipe(fold_default=False, quantize_default=None))
    >>> log = {"seq": 2, "edits": [
    ...     {"seq": 1, "model": 7, "layer": "conv1", "field": "weight_bits", "value": "4"},
    ...     {"seq": 2, "model": 7, "layer": "conv2", "field": "fold", "value": True}]}
    >>> page = apply_edits(page, log, 7, {"conv1", "conv2"})
    >>> current(page).bits("conv1").weight_bits, current(page).folds("conv2"), page["applied"], page["pos"]
    (4, True, 2, 2)
    >>> apply_edits(page, log, 7, {"conv1", "conv2"}) is page      # nothing new
    True
    """
    applied = history.get("applied", 0)
    edits = [e for e in (log or {}).get("edits", ())
             if isinstance(e, dict) and isinstance(e.get("seq"), int) and e["seq"] > applied]
    if not edits:
        return history
    out = history
    for e in sorted(edits, key=lambda e: e["seq"]):
        if e.get("model") == model and e.get("layer") in layers and e.get("field") in EDITED_FIELDS:
            out = edit_layer(out, e["layer"], e["field"], e.get("value"))
    return {**out, "applied": max(e["seq"] for e in edits)}


def shows(recipe: Recipe, layer: str, field_name: str, value) -> bool:
    """Whether a control of ``layer`` showing ``value`` agrees with the recipe already.

    >>> r = Recipe(fold_default=True, quantize_default=LayerBits(8, 8))
    >>> shows(r, "conv1", "fold", True), shows(r, "conv1", "weight_bits", "8"), shows(r, "conv1", "weight_bits", "4")
    (True, True, False)
    """
    if field_name == "fold":
        return recipe.folds(layer) == bool(value)
    bits = recipe.bits(layer)
    return bits_label(getattr(bits, field_name) if bits else None) == value


def set_layer(recipe: Recipe, layer: str, field_name: str, value) -> Recipe:
    """The recipe with one table cell (or side-panel control) changed; a recipe made by
    rules records the change as rules too (:func:`qviz.passes.rules.recorded_edit`)."""
    if field_name == "fold":
        return recorded_edit(recipe, layer, recipe.with_fold(layer, bool(value)))
    old = recipe.bits(layer) or LayerBits(None, None)
    new = {"weight_bits": old.weight_bits, "activation_bits": old.activation_bits}
    new[field_name] = parse_bits_label(value)
    bits = None if new["weight_bits"] is None and new["activation_bits"] is None else LayerBits(**new)
    return recorded_edit(recipe, layer, recipe.with_bits(layer, bits))


def preset_note(graph, changed: bool) -> str:
    """What the page says after a preset: nothing, unless it changed nothing (``changed``:
    the recipe is different, which may still change no layer of ``graph``).

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> preset_note(g, changed=True), preset_note(g, changed=False)
    ('', 'nothing changed: the recipe does that already')
    """
    if quantizable_units(graph) or any(c.foldable for c in fold_candidates(graph)):
        return "" if changed else "nothing changed: the recipe does that already"
    return ("nothing changed: no layer here to fold or quantize" +
            (" (its conv/dense layers are fake-quantized already)" if quantized_in_graph(graph) else ""))


def recipe_from_upload(contents: str, graph) -> Recipe:
    """The recipe in an uploaded file (a ``data:…;base64,`` URL), checked against ``graph``;
    one with rules and no layers (:attr:`Recipe.rules_only`) has its rules run on ``graph``.

    Raises:
        RecipeError: not base64, not UTF-8, not a recipe, or not one for this graph.
    """
    try:
        text = base64.b64decode(contents.split(",", 1)[1], validate=True).decode("utf-8")
    except (IndexError, binascii.Error, UnicodeDecodeError) as exc:
        raise RecipeError(f"the file is not a UTF-8 text file ({type(exc).__name__})") from None
    recipe = Recipe.from_json(text)
    if recipe.rules_only:   # rules written by hand: the page runs them, as its rule box would
        recipe = apply_rules(replace(recipe, rules=()), recipe.rules, graph)
    return recipe.validate(graph)


def with_rule(recipe: Recipe, text: str | None, graph) -> Recipe:
    """``recipe`` with the rule ``text`` applied (an empty box: ``recipe`` itself).

    Raises:
        RecipeError: the rule does not parse, reaches no layer it can act on, or the
            recipe holds as many rules as a recipe may (one line, naming it).

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> r = with_rule(qviz.Recipe.default(g), "name~^conv: w4a6", g)
    >>> r.bits("conv2"), rules_line(r)
    (LayerBits(weight_bits=4, activation_bits=6), 'rules applied, in order: 1) name~^conv: w4a6')
    >>> with_rule(r, "  ", g) is r
    True
    """
    text = (text or "").strip()
    if not text:
        return recipe
    if len(recipe.rules) >= MAX_RULES:
        raise RecipeError(f"rule {text[:60]!r}: the recipe holds {MAX_RULES} rules already; reset to start again")
    return apply_rules(recipe, [text], graph)


#: How :func:`rules_line` starts and joins the rules (the page writes the line itself from these).
RULES_LINE = {"start": "rules applied, in order: ", "join": " · "}


def rules_line(recipe: Recipe) -> str:
    """The recipe's rules, numbered in the order they applied ('' if it has none)."""
    if not recipe.rules:
        return ""
    return RULES_LINE["start"] + RULES_LINE["join"].join(f"{i}) {rule}" for i, rule in enumerate(recipe.rules, 1))


def on_tflite(layer: str, fates) -> tuple[str, str]:
    """(short, full) of what TFLite runs for this layer: its fates in the deployability check."""
    if not fates:
        return "float", f"{layer} stays float"
    worst = next((f for f in fates if f.status == "refused"), None) or \
        next((f for f in fates if f.status != "honoured"), None)
    if worst is None:
        return " + ".join(f.runs_as for f in fates) + " ✓", "; ".join(f.message for f in fates)
    if worst.status == "refused":
        return "✗ refused", worst.message
    if worst.status in ("float", "implicit", "dynamic"):
        return f"⚠ {worst.status}", worst.message
    return f"⚠ {worst.part} {worst.status}", worst.message


#: A layer-table cell that does not apply to the layer (no batch norm to fold, no weights).
NOT_APPLICABLE = "—"


def layer_rows(graph, recipe: Recipe, check=None) -> list[dict]:
    """The layer table: one row per foldable or quantizable layer."""
    fates_of: dict = {}
    for f in (check.fates if check is not None else ()):
        fates_of.setdefault(f.layer, []).append(f)
    folds = {c.layer: c for c in fold_candidates(graph) if c.layer is not None}
    with_weights = set(quantizable_layers(graph))
    quantizable = set(quantizable_units(graph))   # and bypass Adds: activations only
    outputs = graph.layer_outputs()
    rows = []
    for layer in graph.layers:
        if layer not in folds and layer not in quantizable:
            continue
        c = folds.get(layer)
        bits = recipe.bits(layer) if layer in quantizable else None
        short, full = on_tflite(layer, fates_of.get(layer))
        rows.append({
            "layer": layer, "batch_norm": c.bn_layer if c else "",
            # (the layers a fold rewires: the page outlines them as changed at once, as the redraw will)
            "after_batch_norm": _readers(graph, outputs.get(c.bn_layer)) if c and c.foldable else [],
            "foldable": "yes" if c and c.foldable else ("no" if c else NOT_APPLICABLE),
            "fold": bool(c and c.foldable and recipe.folds(layer)),
            "weight_bits": bits_label(bits.weight_bits if bits else None) if layer in with_weights
            else NOT_APPLICABLE,
            "activation_bits": bits_label(bits.activation_bits if bits else None),
            "tflite": short, "tflite_why": full,
            "why": (c.reason or "") if c else "",
        })
    return rows


def _readers(graph, tensor: str | None) -> list[str]:
    """The layers reading ``tensor`` (none for None)."""
    return sorted({n.layer for n in graph.consumers(tensor)}) if tensor else []


# -- the graph view ------------------------------------------------------------------------

@dataclass(frozen=True)
class ViewChoice:
    """How the page asks to see the graph."""

    mode: str = "layer"                    # "layer" or "op"
    show: str = "rewritten"                # or "original"
    direction: str = "LR"                  # or "TB"
    expanded: tuple[str, ...] = ()         # layers drawn as their ops
    blocks: bool = False                   # runs of layers drawn as closed blocks (qviz.layout.blocks)
    opened: tuple[str, ...] = ()           # ids of the blocks opened into their layers

    @property
    def original(self) -> bool:
        return self.show == "original"


@dataclass(frozen=True)
class DrawnView:
    """A laid-out view of one graph: the view graph, node positions, edge bends."""

    graph: DiGraph
    pos: dict = field(repr=False)
    routes: dict = field(repr=False)


def drawn_key(view: DrawnView, graph, key: str | None) -> str | None:
    """The node drawn for a selected ``key``: itself, else the closed block holding its
    layer (a layer selected from a chart, a link or before grouping), else None.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.app.session import Session
    >>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
    >>> view = draw_view(s, START_RECIPE, ViewChoice(blocks=True))
    >>> drawn_key(view, s.graph, "layer:conv2") == f"block:{s.blocks[0].id}", drawn_key(view, s.graph, "layer:nope")
    (True, None)
    """
    if key is None or key in view.pos:
        return key
    layer = layer_of_key(graph, key)
    block = block_showing(view.graph, layer) if layer is not None else None
    return block if block in view.pos else None


def shown(session, recipe: Recipe, choice: ViewChoice):
    """``(graph drawn, the recipe's result)``: the rewritten graph unless the original is asked."""
    result = session.result(recipe)
    return (session.graph if choice.original else result.graph), result


def draw_view(session, recipe: Recipe, choice: ViewChoice) -> DrawnView:
    """The laid-out view, cached on the session per (graph, choice): a toggle
    back to a recipe seen before redraws without laying out again."""
    graph, result = shown(session, recipe, choice)
    # blocks the model has, and none when not grouped: a forged or stale id costs no new layout
    choice = replace(choice, opened=tuple(sorted(set(choice.opened) & {b.id for b in session.blocks}))
                     if choice.blocks else ())
    key = (id(graph), choice)
    cached = session.layouts.get(key)
    if cached is None:
        status, removed = diff_status(result) if not choice.original else ({}, [])
        closed = closed_blocks(session.blocks, choice.opened) if choice.blocks else ()
        vg = view_graph(graph, choice.mode, choice.expanded, removed=removed, status=status, blocks=closed,
                        original=session.graph)
        cached = DrawnView(vg, *_laid_out(session, recipe, choice, vg))
        if len(session.layouts) > 16:
            session.layouts.clear()
        session.layouts[key] = cached
    return cached


def _laid_out(session, recipe: Recipe, choice: ViewChoice, vg: DiGraph) -> tuple[dict, dict]:
    """``(positions, routes)`` of ``vg``, drawn as ``choice`` asks: a rewritten view where the
    float graph's view has each node, so an edit moves nothing (:func:`qviz.layout.routes_in_place`)."""
    if choice.original:
        return default_cache().routes(vg, choice.direction)
    before = draw_view(session, recipe, replace(choice, show="original")).graph
    return routes_in_place(vg, before, choice.direction, default_cache().routes)


@dataclass(frozen=True)
class MatchItem:
    """One line of the match list: the match's number, layers and fate, and the view key to jump to."""

    number: int
    layers: tuple[str, ...]
    fate: str
    reason: str
    key: str


def match_marks(fates, view: DrawnView, graph, original: bool,
                limit: int) -> tuple[dict[str, int], dict[str, int], list[MatchItem]]:
    """``(halo colour index per view key, halos drawn clear, the first ``limit`` matches listed)``.

    In the original view a match halos the float graph's ops; in the rewritten
    one, what is left of them. A match keeps its float-graph number (a stable colour).
    The layers the rewrite removed of a match (a folded batch norm, drawn faded where
    it was) get a clear halo: the page shows it at once when an unfold brings them back.
    """
    highlights: dict[str, int] = {}
    clear: dict[str, int] = {}
    items: list[MatchItem] = []
    for f in fates:
        if original and f.fate == "new":
            continue
        keys = [k for k in dict.fromkeys(key_showing(view.graph, graph, n)
                                         for n in (f.body if original else f.survivors)) if k]
        for k in keys:
            highlights.setdefault(k, f.number - 1)
        if not original:
            for k in (ViewKey.layer(layer) for layer in f.layers):
                if k in view.graph and view.graph.nodes[k].get("ghost_of"):
                    clear.setdefault(k, f.number - 1)
        if len(items) < limit:
            root = key_showing(view.graph, graph, f.root) or (keys[0] if keys else "")
            items.append(MatchItem(f.number, tuple(f.layers), f.fate, f.reason, str(root)))
    return highlights, {k: v for k, v in clear.items() if k not in highlights}, items


def why(fates, graph, pattern, layer: str, node: str | None = None) -> str:
    """The Patterns box's explanation for the selection: its match and fate if it is in
    one (so it agrees with the halos), else why it does not match."""
    for f in fates:
        if (node in f.body or node in f.survivors) if node else layer in f.layers:
            return f"{'op ' + node if node else 'layer ' + layer} is in match {f.number} " \
                   f"({' + '.join(f.layers)}): {f.fate}, {f.reason}."
    return explain(pattern, graph, node) if node else explain_layer(pattern, graph, layer)


def layer_of_key(graph, key: str) -> str | None:
    """The layer a selected view key shows in ``graph`` (None if the rewrite removed
    it, or the page sent something that is not a key)."""
    parsed = ViewKey.parse(key)
    return parsed.layer_in(graph) if parsed is not None else None


def warm_up(session) -> None:
    """Once the model's first view is drawn, calibrate its unfolded graph in the background
    (once per model: sessions share calibrations): the first bit width the user picks
    then draws at once instead of waiting seconds for it. Not before the first draw,
    which it would slow down."""
    if not session.warmed:
        session.warmed = True
        session.ranges_future(START_RECIPE)


def hover_shapes(original, shown) -> dict:
    """The tensor shapes the hover shows for ``shown`` (a rewrite of ``original``) —
    if ``original``'s are known by now. If not (a graph handed to ``create_app``; a
    model file's open works them out first), ``{}`` while a background thread works
    them out in TensorFlow: a draw never waits seconds for hover text."""
    from ..runtime import rewritten_shapes, shapes_known

    if shapes_known(original):
        return rewritten_shapes(original, shown)
    with _SHAPES_LOCK:
        if original not in _SHAPES_STARTED:
            _SHAPES_STARTED[original] = True
            threading.Thread(target=_work_out_shapes, args=(original,), daemon=True,
                             name="qviz-shapes").start()
    return {}


def _work_out_shapes(graph) -> None:
    from ..runtime import tensor_shapes

    tensor_shapes(graph)   # memoized on the graph; {} (and a logged reason) if TensorFlow cannot


_SHAPES_LOCK = threading.Lock()
_SHAPES_STARTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # graph → True once asked for


def hover_lines(session, graph, vg: DiGraph, recipe: Recipe, shapes: dict) -> dict[str, str]:
    """Extra hover lines per view key: output shape, and the layer's fold/bit state."""
    from ..metrics import layer_outputs

    outputs = layer_outputs(graph)
    foldable = {c.layer for c in fold_candidates(session.graph) if c.foldable}
    quantizable = set(quantizable_layers(session.graph))
    out = {}
    for key, d in vg.nodes(data=True):
        k = ViewKey.parse(key)
        if k is None or k.is_block:   # a block's layers: its badge and its panel
            continue
        tensor = outputs.get(k.name) if k.is_layer else f"{k.name}:0"
        lines = []
        if tensor in shapes:
            lines.append(f"shape {tuple(shapes[tensor])}")
        layer = d["layer"]
        if layer in foldable:
            lines.append("BN fold: " + ("on" if recipe.folds(layer) else "off"))
        if layer in quantizable:
            b = recipe.bits(layer)
            lines.append("bits: float" if b is None else
                         f"bits: w {bits_label(b.weight_bits)} / a {bits_label(b.activation_bits)}")
        if lines:
            out[key] = "<br>" + "<br>".join(lines)
    return out


def bit_badges(session, vg: DiGraph, recipe: Recipe) -> dict[str, Badge]:
    """View key → the badge saying what ``recipe`` does to the layer drawn there
    (:func:`qviz.render.image.recipe_badges` on the session's float graph).

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.app.session import Session
    >>> s = Session(qviz.load(sample_path("resnet_block")), "resnet")
    >>> r = qviz.Recipe.default(s.graph)
    >>> bit_badges(s, draw_view(s, r, ViewChoice(mode="op")).graph, r)["op:resnet_block_1/add1_1/Add"].text
    'a8'

    Every layer the recipe could mark has one, empty where it marks nothing (the page
    writes an edit's badge there itself: :data:`qviz.app.callbacks.recipe.PREVIEW_EDIT`).
    """
    return recipe_badges(session.graph, vg, recipe, slots=True)


def graph_svg_file(session, recipe: Recipe, choice: ViewChoice, around_layer: str | None = None,
                   hops: int = 2) -> tuple[str, str]:
    """``(file name, SVG)`` of the graph as the page draws it: the same view, layout,
    changes and badges (:func:`qviz.render.svg.graph_svg`, standalone); with
    ``around_layer``, only that layer and what lies within ``hops`` edges of it
    (laid out anew: a sub-graph for a slide).

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.app.session import Session
    >>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet_digits.keras")
    >>> name, svg = graph_svg_file(s, START_RECIPE, ViewChoice(mode="op"))
    >>> name, svg.count("<circle") == len(draw_view(s, START_RECIPE, ViewChoice(mode="op")).graph)
    ('lenet_digits_op_rewritten.svg', True)
    >>> name, svg = graph_svg_file(s, START_RECIPE, ViewChoice(), around_layer="conv2", hops=1)
    >>> name, svg.count("<circle")
    ('lenet_digits_layer_rewritten_around_conv2.svg', 3)
    """
    view = draw_view(session, recipe, choice)
    vg, pos, routes = view.graph, view.pos, view.routes
    stem = f"{session.file_stem}_{choice.mode}_{choice.show}"
    title = f"{session.name}: {choice.mode} view, {'float' if choice.original else 'rewritten by the recipe'}"
    if around_layer is not None:
        vg = around(vg, [around_layer], hops)
        pos, routes = _laid_out(session, recipe, choice, vg)
        stem += f"_around_{around_layer}"
        title += f", around {around_layer} ({hops} step{'s' if hops != 1 else ''})"
    badges = None if choice.original else recipe_badges(session.graph, vg, recipe)   # no empty slots in a file
    svg = graph_svg(vg, pos, routes, direction=choice.direction, badges=badges,
                    show_status=not choice.original, standalone=True, title=title)
    return f"{stem}.svg", svg


def node_data_from_upload(session, contents: str, filename: str) -> tuple[str, int]:
    """Read an uploaded Model Explorer node-data file onto ``session`` (keyed by layer).

    Returns ``(the name it is listed under in the colour menu, keys not in the model)``.
    Raises :class:`~qviz.analysis.node_data.NodeDataError` naming the file and the cause.
    """
    name = f"file: {filename or 'node data'}"[:80]
    encoded = contents.split(",", 1)[1] if "," in contents else ""
    if len(encoded) * 3 // 4 > MAX_NODE_DATA_BYTES:   # before decoding: the page's limit is not a guarantee
        raise NodeDataError(f"{filename}: over the {MAX_NODE_DATA_BYTES // 2**20} MB a node-data file may have")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (ValueError, binascii.Error):
        raise NodeDataError(f"{filename}: the upload did not arrive whole; try again") from None
    data, missing = on_layers(NodeData.from_model_explorer(raw, filename, name), session.graph)
    if not data.values and not data.colors:
        raise NodeDataError(f"{filename}: none of its {missing} node keys is a layer, op or tensor of this model")
    with _NODE_DATA_LOCK:
        session.node_data.pop(name, None)
        session.node_data[name] = data
        while len(session.node_data) > MAX_PAINTED:   # the oldest file leaves the menu
            session.node_data.pop(next(iter(session.node_data)))
    return name, missing


#: Node-data files a session keeps (the colour menu lists them).
MAX_PAINTED = 8
_NODE_DATA_LOCK = threading.Lock()


def painted(session) -> list[str]:
    """The names of the node-data files ``session`` holds, oldest first."""
    with _NODE_DATA_LOCK:
        return list(session.node_data)


def sweep_plan(session, bits) -> str:
    """What a sensitivity sweep of ``bits`` will measure, said before it is run: on a big model
    it is hundreds of measurements (NASNetMobile: 788 at two widths), each a run of the model.

    A sweep measures each quantizable layer at each width, its weights and its activations apart;
    those made already by this page's sweeps (one stopped, or of other widths) are not made again.
    """
    from ..analysis.sensitivity import measured_already

    if session.graph is None:
        return ""
    layers = quantizable_layers(session.graph)
    widths = len(bits or ())
    if not layers or not widths:
        return "" if layers else "no layer with weights to sweep"
    try:
        made = measured_already(session.sweep_checkpoint, layers, bits) if session.work_dir is not None else 0
    except (TypeError, ValueError):   # (widths the page's checklist does not offer: no count)
        made = 0
    return (f"{2 * len(layers) * widths:,} measurements{f' ({made:,} made already)' if made else ''}: "
            f"{len(layers):,} layers × {widths} width{'s' * (widths > 1)}, "
            "weights and activations apart (fewer widths: a shorter sweep)")


def stopped_sweep(session, bits):
    """What a sweep of ``bits`` had measured when it was stopped (and any earlier sweep of
    this page at those widths), NaN where it had not: a
    :class:`~qviz.analysis.sensitivity.Sensitivity`, or None when nothing was measured or
    the runner keeps no checkpoint (Celery's workers may be on other machines)."""
    from ..analysis.sensitivity import measured_so_far

    if (session.graph is None or session.work_dir is None or not bits
            or not getattr(session.runner, "shares_files", False)):   # (as Session.start_sweep decides)
        return None
    return measured_so_far(session.sweep_checkpoint, quantizable_layers(session.graph), bits)


def change_line(session, result) -> str:
    """The line under the graph: what the rewrite changed, in the ops the graph draws
    (:meth:`qviz.pipeline.Result.change_summary`), then :func:`cost_line`."""
    changed = f"rewrite: {result.change_summary()}" if result.changes else \
        "no rewrite: the recipe changes nothing"
    return f"{changed} · {cost_line(session, result.graph)}"


def cost_line(session, rewritten) -> str:
    """The recipe's weight size at its bits and bit-operations, next to the float
    model's (:mod:`qviz.analysis.budget`); bit-operations once TensorFlow has worked
    out the output shapes (in the background: a draw never waits for them)."""
    from ..runtime import shapes_known, tensor_shapes

    shapes = tensor_shapes(session.graph) if shapes_known(session.graph) else None
    return budget(session.graph, rewritten, shapes).summary()


def device_flags(session, vg: DiGraph, recipe: Recipe, hover: dict) -> dict[str, str]:
    """View key → ⚠/✗ where TFLite will not run the layer as simulated; the reason
    is appended to ``hover``."""
    if not recipe.quantize_config(session.graph).layers:
        return {}
    worst = {}
    for f in session.check(recipe).fates:
        if f.status != "honoured" and (f.layer not in worst or f.status == "refused"):
            worst[f.layer] = f
    flags = {}
    for key, d in vg.nodes(data=True):
        # a closed block: its worst layer's
        found = [worst[layer] for layer in (d.get("layers") or [d["layer"]]) if layer in worst]
        f = next((f for f in found if f.status == "refused"), found[0] if found else None)
        if f is not None:
            flags[key] = "✗" if f.status == "refused" else "⚠"
            hover[key] = hover.get(key, "") + f"<br>on TFLite: {f.message}"
    return flags


# -- per-channel weight ranges (the fold explainer) ------------------------------------------------

def channel_bits(recipe: Recipe, layer: str) -> int:
    """The width the explainer's channel view opens at: the recipe's weight bits for
    ``layer``, or 8 when it leaves the weights float."""
    bits = recipe.bits(layer)
    return bits.weight_bits if bits is not None and bits.weight_bits else 8


def channel_ranges_for(session, layer: str, bits, recipe: Recipe) -> ChannelRanges:
    """Each output channel's weight range before and after the fold of ``layer``, and
    each scheme's error at ``bits`` with the recipe's own range options (narrow
    range, symmetric). Reads constants only: no TensorFlow.

    Raises:
        ValueError: no foldable batch norm after ``layer``, or ``bits`` not a width.
    """
    width = parse_bits_label(bits)
    if width is None:
        raise ValueError(f"bits must be a width, not {bits!r}")
    return channel_ranges(session.graph, layer, width, narrow_range=recipe.narrow_range,
                          symmetric=recipe.symmetric_weights)


def report_explains(session, selected_key: str | None, recipe: Recipe) -> list[str]:
    """The folds the HTML report explains: the selected layer's, if its batch norm
    folds; else the first one the recipe folds; else none.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.app.session import Session
    >>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
    >>> folded = qviz.Recipe(fold_default=True, quantize_default=None)
    >>> report_explains(s, "layer:conv2", START_RECIPE), report_explains(s, "layer:relu1", folded)
    (['conv2'], ['conv1'])
    """
    key = ViewKey.parse(selected_key) if selected_key else None
    selected = key.layer_in(session.graph) if key is not None else None
    layer = fold_layer_of(session.graph, selected) if selected is not None else None   # None: "the first"
    if layer is not None:
        return [layer]
    return [c.layer for c in fold_candidates(session.graph) if c.foldable and recipe.folds(c.layer)][:1]


def fold_layer_of(graph, layer: str | None) -> str | None:
    """The layer whose batch-norm fold ``layer`` takes part in: itself if its batch
    norm folds, the layer before it if it is that batch norm; else None. ``None``
    asks for the first fold of the graph (where a newcomer starts).

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> fold_layer_of(g, "conv2"), fold_layer_of(g, "bn2"), fold_layer_of(g, "relu2"), fold_layer_of(g, None)
    ('conv2', 'conv2', None, 'conv1')
    """
    cands = [c for c in fold_candidates(graph) if c.foldable]
    if layer is None:
        return cands[0].layer if cands else None
    return next((c.layer for c in cands if layer in (c.layer, c.bn_layer)), None)


def grid_values(session, recipe: Recipe, layer: str, tensor: str):
    """``(the quantization grid of tensor in the recipe's rewrite, its values)``, or
    None when the rewrite or its activation samples are not ready (or it is gone)."""
    from ..analysis.quant_grid import grids_of_layer

    if not session.result_ready(recipe):
        return None
    grid = next((g for g in grids_of_layer(session.result(recipe).graph, layer) if g.tensor == tensor), None)
    if grid is None:
        return None
    if grid.kind == "weights":
        return grid, grid.values
    samples = session.samples_future(recipe)
    values = samples.result().get(tensor) if samples.done() and samples.exception() is None else None
    return (grid, values) if values is not None else None
