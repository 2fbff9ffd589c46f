"""The graph's redraw: from a session, a recipe and what the page shows (the view, the
pattern, the selection, the colouring) to what the graph and its toolbar show.

Two callbacks send it. The graph's own draw (:mod:`.callbacks.graph`) redraws when the
view, selection, pattern or colouring changes, or the recipe changes by any other way;
a recipe edit (:mod:`.callbacks.recipe`) sends its redraw in its own answer. An edit
redrawn by the graph's callback took two requests one after the other (the edit's, whose
new recipe then started the draw's and four others), ~90 ms of MobileNetV2's fold
toggle before plotly could start; the draw then sees its recipe drawn and stops
(:func:`already_drawn`).
"""

from __future__ import annotations

import math
from html import escape

from dash import Output, State, dcc, html, no_update

from ..analysis.match_fates import summary as summarize_matches
from ..matcher import nowhere
from ..patterns import BUILTIN, PatternSyntaxError, parse
from ..layout.view import BLOCK_KIND
from ..render import graph_figure, names_near_view, sent_once
from ..render.marks import FIRST_VIEW_RANKS
from . import ids, navigation, services
from .colour_by import metric_and_waiting
from .legend import metric_legend
from .services import ViewChoice
from .wire import plain

__all__ = ["DRAWN_NOTHING", "NOT_REDRAWN", "PAGE", "already_drawn", "outputs", "page_of", "redraw",
           "MAX_LISTED", "SAME_VIEW", "SWEEP_INPUTS", "view_choice", "pattern_of", "fates_of", "match_list",
           "node_count", "center_on", "kept_window"]

#: What the page shows that a redraw reads, besides the recipe: the graph's draw has them
#: as inputs, an edit as state (``page_of(Input)``, ``page_of(State)``).
PAGE = dict(view_state=(ids.VIEW, "data"), mode=(ids.VIEW_MODE, "value"), show=(ids.SHOW, "value"),
            direction=(ids.DIRECTION, "value"), builtin=(ids.PATTERN_BUILTIN, "value"),
            text=(ids.PATTERN_TEXT, "value"), selected=(ids.SELECTED, "data"), color_by=(ids.COLOR_BY, "value"),
            target=(ids.SWEEP_TARGET, "value"), window=(ids.VIEW_WINDOW, "data"))
#: What a redraw reads but never redraws for: the window a pan or zoom made.
_READ_ONLY = ("window",)


def page_of(kind) -> dict:
    """The page's properties a redraw reads, as ``kind`` (``Input`` or ``State``) dependencies;
    the window the user panned to is always state (a pan is no reason to redraw)."""
    return {name: (State if name in _READ_ONLY else kind)(*prop) for name, prop in PAGE.items()}


def outputs(duplicate: bool = False) -> dict:
    """What a redraw sets; ``duplicate`` for a callback other than the graph's own draw."""
    props = dict(figure=(ids.GRAPH, "figure"), nodes=(ids.NODE_COUNT, "children"),
                 blocks_hint=(ids.BLOCKS_BUTTON, "className"), match_count=(ids.MATCH_COUNT, "children"),
                 matches=(ids.MATCH_LIST, "children"), pattern_error=(ids.PATTERN_ERROR, "children"),
                 diff=(ids.DIFF_SUMMARY, "children"), drawn=(ids.DRAWN, "data"),
                 metric_legend=(ids.METRIC_LEGEND, "children"), metric_poll=(ids.METRIC_POLL, "disabled"),
                 window=(ids.VIEW_WINDOW, "data"))
    # (the window is the relayout's too: always a duplicate)
    return {name: Output(*prop, allow_duplicate=duplicate or name == "window") for name, prop in props.items()}


#: Matches listed by name (all are highlighted); thousands of buttons would slow the page.
MAX_LISTED = 200


def view_choice(mode, show, direction, view_state) -> ViewChoice:
    """How the page asks to see the graph, from its controls and view store: any JSON (a
    request may be forged); what is not one of their values reads as the default.

    >>> view_choice("op", None, "sideways", {"expanded": ["b", "a", 3], "blocks": 1})
    ViewChoice(mode='op', show='rewritten', direction='LR', expanded=('a', 'b'), blocks=True, opened=())
    """
    view_state = view_state if isinstance(view_state, dict) else {}

    def names(key):
        given = view_state.get(key)
        return tuple(sorted(x for x in given if isinstance(x, str))) if isinstance(given, list) else ()

    return ViewChoice(mode if mode in ("layer", "op") else "layer", show if show == "original" else "rewritten",
                      direction if direction in ("LR", "TB") else "LR", names("expanded"),
                      bool(view_state.get("blocks")), names("opened"))


def pattern_of(builtin, text):
    """The typed pattern, else the chosen built-in one. Raises PatternSyntaxError."""
    if text and text.strip():
        return parse(text)
    return BUILTIN.get(builtin or "conv_bn")


def fates_of(s, recipe, builtin, text):
    """The pattern's float-graph matches followed through the recipe (cached on the session).

    Raises:
        PatternSyntaxError: the typed pattern does not parse.
    """
    source = text.strip() if text and text.strip() else f"builtin:{builtin or 'conv_bn'}"
    return s.match_fates(source, pattern_of(builtin, text), recipe)


def match_list(items: list[services.MatchItem], more: int = 0) -> dcc.Markdown:
    """The Patterns box's list of matches, as one component holding the buttons' HTML
    (every name escaped: they are the model file's). A button per Dash component cost
    every later update of the page (a poll, a redraw) a pass over each of them: ~0.5 s
    of NASNetMobile's ops view after the click. A click is picked up by the page
    (assets/graph_view.js: MATCH_PICK, the button's ``data-key``).

    >>> m = match_list([services.MatchItem(1, ("<b>x", "bn"), "kept", 'why "not"', "layer:<b>x")], more=2)
    >>> print(m.children)
    <div class="match-items"><button class="match-item" data-key="layer:&lt;b&gt;x" title="why &quot;not&quot;">1. &lt;b&gt;x + bn <span class="fate fate-kept">kept</span></button><div>… and 2 more (all highlighted)</div></div>
    """
    buttons = "".join(
        f'<button class="{ids.MATCH_ITEM}" data-key="{escape(item.key)}" title="{escape(item.reason)}">'
        f'{item.number}. {escape(" + ".join(item.layers))} '
        f'<span class="fate fate-{escape(item.fate)}">{escape(item.fate)}</span></button>' for item in items)
    tail = f"<div>… and {more} more (all highlighted)</div>" if more > 0 else ""
    # one line, no blank one: one HTML block to Markdown, passed through as it is
    return dcc.Markdown(f'<div class="match-items">{buttons}{tail}</div>', dangerously_allow_html=True)


def node_count(vg, mode: str) -> tuple:
    """The toolbar's node count, and the class of the *ungroup blocks* button. In the op view
    they say when closed blocks hide ops (the click on *ops* changes nothing a user can see
    while every node is a closed block), and the button that shows them is marked."""
    closed = sum(1 for _, d in vg.nodes(data=True) if d.get("kind") == BLOCK_KIND)
    count = f"{vg.number_of_nodes():,} nodes"
    if mode != "op" or not closed:
        return count, ""
    return html.Span(f"{count}: {closed:,} closed blocks hide their ops", className="hint",
                     title="select a block and press expand to see its ops, or ungroup blocks to see every op"), "hint"


def center_on(fig, point, direction: str = "LR", span: tuple[float, float] = (0.0, 0.0), zoom=None):
    """Look at ``point`` at the zoom of the window ``zoom`` (``{"x": [lo, hi], "y": [lo, hi]}``:
    where the user looks) if it is near enough for names, else at the first view's zoom (as
    many ranks along, names readable); wider if ``span`` (x, y extents: an opened block's
    frame) needs it to be whole. (A click in pane B centred pane A at the first view's zoom:
    a user zoomed in to 5 ranks was zoomed out to 10, the names gone.)

    >>> import plotly.graph_objects as go
    >>> fig = go.Figure()
    >>> center_on(fig, (50.0, 0.0), zoom={"x": [10.0, 14.0], "y": [-1.0, 1.0]}); fig.layout.xaxis.range
    (48.0, 52.0)
    >>> center_on(fig, (50.0, 0.0), zoom={"x": [0.0, 100.0], "y": [-9.0, 9.0]}); fig.layout.xaxis.range
    (45.0, 55.0)
    """
    x, y = point
    along, across = FIRST_VIEW_RANKS / 2, 0.2 * FIRST_VIEW_RANKS
    dx, dy = (along, across) if direction != "TB" else (across, along)
    kept = _extents(zoom)
    if kept is not None and (kept[0] if direction != "TB" else kept[1]) <= 1.5 * FIRST_VIEW_RANKS:
        dx, dy = kept[0] / 2, kept[1] / 2
    grow = max(1.0, (span[0] / 2 + 0.5) / dx, (span[1] / 2 + 0.8) / dy)    # (room for the frame's name)
    dx, dy = dx * grow, dy * grow
    fig.update_layout(xaxis=dict(range=[x - dx, x + dx]), yaxis=dict(range=[y - dy, y + dy]))


def _extents(window) -> tuple[float, float] | None:
    """A page's window's (width, height) in layout units, or None (none, or not numbers)."""
    try:
        (x0, x1), (y0, y1) = window["x"], window["y"]
        width, height = abs(float(x1) - float(x0)), abs(float(y1) - float(y0))
    except (TypeError, KeyError, ValueError):
        return None
    return (width, height) if math.isfinite(width + height) and width > 0 and height > 0 else None


def _unbroken_parts(line: str) -> list:
    """A line of parts joined by " · ", each part kept whole where it wraps ("57.6 G bit-" /
    "ops" was split at its hyphen)."""
    parts = line.split(" · ")
    return [x for i, part in enumerate(parts)
            for x in ([" · "] if i else []) + [html.Span(part, className="whole")]]


#: A redraw's answer when there is nothing to draw (no session, no recipe yet).
DRAWN_NOTHING = dict(figure=no_update, nodes="", blocks_hint="", match_count="", matches="", pattern_error="", diff="",
                      drawn=no_update, metric_legend=[], metric_poll=True, window=no_update)


#: Draws that keep the window the user looks at: the same view, other marks on it. Any other
#: input (the view's mode, direction, blocks, a model opened) draws a new view from its start.
SAME_VIEW = {ids.RECIPE, ids.SELECTED, ids.COLOR_BY, ids.PATTERN_BUILTIN, ids.PATTERN_TEXT, ids.METRIC_POLL,
             ids.SWEEP_TARGET, ids.SWEEP_DONE}
#: Inputs that change only the sweep's suggestion: a redraw only if the graph is coloured by it.
SWEEP_INPUTS = {ids.SWEEP_TARGET, ids.SWEEP_DONE}


def kept_window(triggered: list[str], window) -> dict | None:
    """The window to keep (``{"x": [lo, hi], "y": [lo, hi]}``) if every input that fired
    leaves the view as it was and the page has one; else None.

    >>> w = {"x": [1.0, 9.0], "y": [-2.0, 2.0]}
    >>> kept_window(["selected-store.data"], w) == w, kept_window(["view-mode.value", "recipe-store.data"], w)
    (True, None)
    >>> kept_window(["selected-store.data"], {"x": [1, "a"], "y": [0, 1]}) is None
    True
    """
    if not triggered or any(t.rsplit(".", 1)[0] not in SAME_VIEW for t in triggered):
        return None
    try:
        x, y = [float(v) for v in window["x"]], [float(v) for v in window["y"]]
    except (TypeError, KeyError, ValueError):
        return None
    return {"x": x, "y": y} if len(x) == len(y) == 2 and all(map(math.isfinite, x + y)) else None


def _draw(s, recipe, choice: ViewChoice, builtin, text, selected, color_by, window=None, newly_selected=False,
          new_view=False, opened=False) -> dict:
    graph, result = services.shown(s, recipe, choice)
    view = services.draw_view(s, recipe, choice)
    try:
        fates, error = fates_of(s, recipe, builtin, text), ""
        typed = bool(text and text.strip())   # (a typo: a built-in's op types absent are no news)
        count = summarize_matches(fates, nowhere(pattern_of(builtin, text), s.graph) if typed and not fates
                                  else None)
    except PatternSyntaxError as exc:
        fates, error, count = [], str(exc), ""
    highlights, clear_halos, items = services.match_marks(fates, view, graph, choice.original, MAX_LISTED)
    listed = match_list(items, len(fates) - MAX_LISTED)
    sel = services.drawn_key(view, graph, selected.get("key") if selected else None)
    hover = services.hover_lines(s, graph, view.graph, recipe, services.hover_shapes(s.graph, graph))
    flags = services.device_flags(s, view.graph, recipe, hover) if not choice.original else {}
    badges = services.bit_badges(s, view.graph, recipe) if not choice.original else {}
    metric, waiting = metric_and_waiting(s, color_by, recipe)
    fill = services.metric_fill(metric, view.graph, hover) if metric is not None else None
    frames = navigation.opened_frames(s, view, choice)
    fig = graph_figure(view.graph, view.pos, routes=view.routes, highlights=highlights,
                       clear_halos=clear_halos, selected=sel,
                       show_status=not choice.original, hover=hover, flags=flags, badges=badges,
                       first_view=True, direction=choice.direction, fill=fill, frames=frames.values())
    window_now = no_update if window is not None else None
    # what was just expanded or opened is looked at (a block opened: its whole frame); a
    # selection asking to be centred is centred once, when made (or in a new view), not
    # again at each edit: the user may have moved away since
    target = navigation.look_at(view, frames, s, selected.get("key")) if opened and selected else None
    if target is None and sel in view.pos and selected.get("center") and (newly_selected or new_view):
        target = view.pos[sel], (0.0, 0.0)
    if target is not None:
        point, span = target
        center_on(fig, point, choice.direction, span, zoom=window)
        window_now = {"x": list(fig.layout.xaxis.range), "y": list(fig.layout.yaxis.range)}
    elif window is not None:   # where the user panned to: a click or an edit does not move it
        fig.update_layout(xaxis=dict(range=window["x"]), yaxis=dict(range=window["y"]))
    names_near_view(fig)   # (the page draws the others as the view moves)
    drawn = recipe.to_json(indent=None)
    s.latest = drawn
    services.warm_up(s)
    nodes, blocks_hint = node_count(view.graph, choice.mode)
    # (the components as plain dicts: else the whole response, figure too, took Dash's slow JSON path)
    return dict(figure=sent_once(fig), **plain(dict(
                nodes=nodes, blocks_hint=blocks_hint, window=window_now, match_count=count, matches=listed,
                pattern_error=error, drawn=drawn,
                metric_legend=metric_legend(metric, len(fill or ()), waiting=waiting, name=color_by),
                metric_poll=not waiting.startswith("waiting"),
                diff=_unbroken_parts(services.change_line(s, result)))))


#: An answer that redraws nothing (an edit that changed no recipe).
NOT_REDRAWN = dict.fromkeys(outputs(), no_update)


def redraw(s, recipe, page: dict, triggered) -> dict:
    """What the graph and its toolbar show for ``recipe`` on the page ``page`` (:data:`PAGE`'s
    values), keyed as :func:`outputs`. ``triggered``: the properties that changed (Dash's
    ``ctx.triggered_prop_ids``): a new view starts at its beginning, a new recipe or
    selection keeps the window the user looks at. Remembers the recipe drawn
    (``s.latest``)."""
    triggered = list(triggered)
    selected = page["selected"] if isinstance(page["selected"], dict) else None   # (the page's: any JSON)
    s.aim_sweep(page["target"])
    return _draw(s, recipe, view_choice(page["mode"], page["show"], page["direction"], page["view_state"]),
                 page["builtin"], page["text"], selected, page["color_by"],
                 kept_window(triggered, page["window"]),
                 newly_selected=f"{ids.SELECTED}.data" in triggered,
                 new_view=any(t.rsplit(".", 1)[0] not in SAME_VIEW for t in triggered),
                 opened=f"{ids.VIEW}.data" in triggered)


def already_drawn(s, recipe, drawn, triggered=(f"{ids.RECIPE}.data",)) -> bool:
    """Whether the page shows ``recipe`` drawn and nothing but the recipe asks for a draw
    (``triggered``): its drawn store (``drawn``) names the recipe, and this session drew it
    last (``s.latest``: another model opened in the page has a session of its own, which has
    drawn nothing, though the store may name an equal recipe). An edit's answer carries its
    redraw (the edit's callback), so the draw its new recipe starts has nothing to do."""
    spelled = recipe.to_json(indent=None)
    return set(triggered) == {f"{ids.RECIPE}.data"} and bool(spelled) and drawn == spelled == s.latest
