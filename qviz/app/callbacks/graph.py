"""The graph view: drawing, pattern highlights and the match list, selection
(click, search, a match, an error bar), expanding a layer.

Each callback maps component properties to a :mod:`qviz.app.services` call and
its answer back to properties; the node panel and verification are in
:mod:`.panels`.
"""

from __future__ import annotations

import logging
import math
import time
from html import escape

from dash import ALL, Input, Output, State, ctx, dcc, html, no_update, set_props
from dash.exceptions import PreventUpdate

from ...analysis.match_fates import summary as summarize_matches
from ...matcher import nowhere
from ...patterns import BUILTIN, PatternSyntaxError, parse
from ...layout import ViewKey
from ...layout.view import BLOCK_KIND
from ...render import graph_figure, names_near_view, sent_once
from ...render.marks import FIRST_VIEW_RANKS
from .. import ids, navigation, services
from ..colour_by import SUGGESTED_BITS, metric_and_waiting, metric_waiting
from ..legend import OP_KIND, color_options, metric_legend
from ..services import ViewChoice, current
from ..wire import plain

#: Matches listed by name (all are highlighted); thousands of buttons would slow the page.
MAX_LISTED = 200

log = logging.getLogger(__name__)


def view_choice(mode, show, direction, view_state) -> ViewChoice:
    view_state = view_state or {}
    return ViewChoice(mode or "layer", show or "rewritten", direction or "LR",
                      tuple(sorted(view_state.get("expanded", []))), bool(view_state.get("blocks")),
                      tuple(sorted(view_state.get("opened", []))))


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


_DRAWN_NOTHING = dict(figure=no_update, nodes="", blocks_hint="", match_count="", matches="", pattern_error="", diff="",
                      drawn=no_update, metric_legend=[], metric_poll=True, window=no_update)

#: What the user panned or zoomed to, kept from the graph's relayout events; a double-click
#: home (autorange) forgets it. A drag reports ``xaxis.range[0]`` and ``[1]``; the minimap's
#: jump (assets/graph_view.js) reports ``xaxis.range``, both ends at once.
KEEP_WINDOW = """function (relayout) {
    if (!relayout) { return window.dash_clientside.no_update; }
    if (relayout['xaxis.autorange'] || relayout['autosize']) { return relayout['xaxis.autorange'] ? null : window.dash_clientside.no_update; }
    const xs = relayout['xaxis.range'] || [relayout['xaxis.range[0]'], relayout['xaxis.range[1]']];
    const ys = relayout['yaxis.range'] || [relayout['yaxis.range[0]'], relayout['yaxis.range[1]']];
    const x0 = xs[0], x1 = xs[1], y0 = ys[0], y1 = ys[1];
    if ([x0, x1, y0, y1].some(v => typeof v !== 'number')) { return window.dash_clientside.no_update; }
    return {x: [x0, x1], y: [y0, y1]};
}"""

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


def register(app, store) -> None:
    @app.callback(
        output=dict(figure=Output(ids.GRAPH, "figure"), nodes=Output(ids.NODE_COUNT, "children"),
                    blocks_hint=Output(ids.BLOCKS_BUTTON, "className"),
                    match_count=Output(ids.MATCH_COUNT, "children"), matches=Output(ids.MATCH_LIST, "children"),
                    pattern_error=Output(ids.PATTERN_ERROR, "children"), diff=Output(ids.DIFF_SUMMARY, "children"),
                    drawn=Output(ids.DRAWN, "data"), metric_legend=Output(ids.METRIC_LEGEND, "children"),
                    metric_poll=Output(ids.METRIC_POLL, "disabled"),
                    window=Output(ids.VIEW_WINDOW, "data", allow_duplicate=True)),
        inputs=dict(history=Input(ids.RECIPE, "data"), view_state=Input(ids.VIEW, "data"),
                    mode=Input(ids.VIEW_MODE, "value"), show=Input(ids.SHOW, "value"),
                    direction=Input(ids.DIRECTION, "value"), builtin=Input(ids.PATTERN_BUILTIN, "value"),
                    text=Input(ids.PATTERN_TEXT, "value"), selected=Input(ids.SELECTED, "data"),
                    color_by=Input(ids.COLOR_BY, "value"), _tick=Input(ids.METRIC_POLL, "n_intervals"),
                    target=Input(ids.SWEEP_TARGET, "value"), _sweep_done=Input(ids.SWEEP_DONE, "data")),
        state=dict(session=State(ids.SESSION, "data"), window=State(ids.VIEW_WINDOW, "data")),
        prevent_initial_call="initial_duplicate",
    )
    def draw(history, view_state, mode, show, direction, builtin, text, selected, color_by, _tick, target,
             _sweep_done, session, window):
        s = store.require(session)
        if s is None or not history:
            return dict(_DRAWN_NOTHING)
        if ctx.triggered_id in SWEEP_INPUTS and color_by != SUGGESTED_BITS:
            raise PreventUpdate   # the sweep only changes the suggestion's colours
        s.aim_sweep(target)
        recipe = current(history)
        if set(ctx.triggered_prop_ids) == {f"{ids.METRIC_POLL}.n_intervals"}:
            # A poll while the graph waits for a metric (the recipe's SQNR): redrawn once it is in.
            # (A poll, not a store the verification sets: that would close a loop of callbacks,
            # draw → verification → draw, which Dash's renderer may hold up.)
            if metric_waiting(s, color_by, recipe).startswith("waiting"):
                raise PreventUpdate
        started = time.monotonic()
        try:
            return _draw(s, recipe, view_choice(mode, show, direction, view_state), builtin, text,
                         selected, color_by, kept_window(ctx.triggered_prop_ids, window),
                         newly_selected=f"{ids.SELECTED}.data" in ctx.triggered_prop_ids,
                         new_view=any(t.rsplit(".", 1)[0] not in SAME_VIEW for t in ctx.triggered_prop_ids),
                         opened=f"{ids.VIEW}.data" in ctx.triggered_prop_ids)
        finally:
            log.info("session %s: drew %s in %.2f s", session["sid"][:8], s.name, time.monotonic() - started)

    def _draw(s, recipe, choice: ViewChoice, builtin, text, selected, color_by, window=None, newly_selected=False,
              new_view=False, opened=False):
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

    app.clientside_callback(KEEP_WINDOW, Output(ids.VIEW_WINDOW, "data"), Input(ids.GRAPH, "relayoutData"),
                            prevent_initial_call=True)

    @app.callback(
        output=dict(selected=Output(ids.SELECTED, "data"), status=Output(ids.SEARCH_STATUS, "children")),
        inputs=dict(click=Input(ids.GRAPH, "clickData"), needle=Input(ids.SEARCH, "value"),
                    _enter=Input(ids.SEARCH, "n_submit"), bar=Input(ids.LAYER_ERRORS, "clickData"),
                    pick=Input(ids.MATCH_PICK, "data")),
        state=dict(session=State(ids.SESSION, "data"), history=State(ids.RECIPE, "data"),
                   mode=State(ids.VIEW_MODE, "value"), show=State(ids.SHOW, "value"),
                   view_state=State(ids.VIEW, "data"), direction=State(ids.DIRECTION, "value"),
                   selected=State(ids.SELECTED, "data")),
        prevent_initial_call=True,
    )
    def select(click, needle, _enter, bar, pick, session, history, mode, show, view_state, direction, selected):
        trig = ctx.triggered_id
        nothing = dict(selected=no_update, status="")
        if trig == ids.GRAPH and click:
            key = click["points"][0].get("customdata")
            return dict(selected={"key": key, "center": False}, status="") if key else nothing
        if trig == ids.LAYER_ERRORS and bar:   # a bar of the per-layer SQNR chart: that layer, centred
            key = bar["points"][0].get("customdata")
            return dict(selected={"key": key, "center": True}, status="") if key else nothing
        if trig == ids.MATCH_PICK:   # a match of the list: its root, centred
            key = pick.get("key") if isinstance(pick, dict) else None
            return dict(selected={"key": key, "center": True}, status="") if isinstance(key, str) and key else nothing
        if trig == ids.SEARCH and needle:
            s = store.require(session)
            if s is None:
                return nothing
            view = services.draw_view(s, current(history), view_choice(mode, show, direction, view_state))
            # Enter again on the same text (n_submit alone) steps to the next hit
            again = f"{ids.SEARCH}.value" not in ctx.triggered_prop_ids
            key, status = navigation.search_step(view.graph, needle, (selected or {}).get("key") if again else None)
            return dict(selected={"key": key, "center": True} if key else no_update,
                        status=html.Span(status, title=status) if status else "")
        return nothing

    @app.callback(Output(ids.GRID, "selectedRows"), Input(ids.SELECTED, "data"), State(ids.SESSION, "data"),
                  State(ids.SHOW, "value"), State(ids.RECIPE, "data"), prevent_initial_call=True)
    def select_row(selected, session, show, history):
        s = store.require(session)
        if s is None:
            return no_update
        if not selected:   # (the table keeps rows by name: a row left selected would name another model's layer)
            return []
        graph, _ = services.shown(s, current(history), view_choice(None, show, None, None))
        layer = services.layer_of_key(graph, selected["key"])
        return {"ids": [layer]} if layer else no_update

    @app.callback(
        Output(ids.VIEW, "data"),
        Input(ids.EXPAND, "n_clicks"), Input(ids.COLLAPSE_ALL, "n_clicks"), Input(ids.BLOCKS_BUTTON, "n_clicks"),
        Input({"type": ids.BLOCK_TOGGLE, "block": ALL}, "n_clicks"),
        State(ids.SELECTED, "data"), State(ids.VIEW, "data"), State(ids.SESSION, "data"), State(ids.RECIPE, "data"),
        State(ids.VIEW_MODE, "value"), State(ids.SHOW, "value"), State(ids.DIRECTION, "value"),
        prevent_initial_call=True,
    )
    def expand(_expand, _collapse, _blocks, _toggles, selected, view_state, session, history, mode, show, direction):
        if ctx.triggered_id is None:
            # Dash calls this when a panel's block button leaves the page (an ALL input
            # shrinking), with nothing triggered: not a click on expand
            raise PreventUpdate
        view_state = view_state or {}
        if isinstance(ctx.triggered_id, dict):   # a block's own button in the panel: open it, or close it
            if not ctx.triggered[0]["value"]:
                raise PreventUpdate    # the button was drawn, not clicked
            return navigation.with_block_toggled(view_state, ctx.triggered_id["block"])
        if ctx.triggered_id == ids.COLLAPSE_ALL:
            return {**view_state, "expanded": [], "opened": []}
        if ctx.triggered_id == ids.BLOCKS_BUTTON:
            return {**view_state, "blocks": not view_state.get("blocks"), "opened": []}
        s = store.require(session)
        drawn = services.draw_view(s, current(history), view_choice(mode, show, direction, view_state)).graph \
            if s is not None and history else None   # laid out already: cached
        expanded = navigation.with_expanded(view_state, (selected or {}).get("key"), drawn)
        return no_update if expanded is None else expanded

    @app.callback(Output(ids.SELECTED, "data", allow_duplicate=True), Input(ids.VIEW, "data"),
                  State(ids.SELECTED, "data"), State(ids.SESSION, "data"), prevent_initial_call=True)
    def unselect_ungrouped_block(view_state, selected, session):
        """Blocks ungrouped: a selected block becomes its first layer (its panel offered to
        open a block no longer drawn, and its button grouped them all again)."""
        key = ViewKey.parse((selected or {}).get("key"))
        if (view_state or {}).get("blocks") or key is None or not key.is_block:
            raise PreventUpdate
        s = store.require(session)
        layer = navigation.layer_around(s, key) if s is not None else None   # (a block's first layer)
        return {"key": ViewKey.layer(layer), "center": False} if layer is not None else None

    @app.callback(Output(ids.BLOCKS_BUTTON, "children"), Input(ids.VIEW, "data"))
    def blocks_button(view_state):
        return "ungroup blocks" if (view_state or {}).get("blocks") else "group into blocks"

    @app.callback(
        output=dict(options=Output(ids.COLOR_BY, "options"), value=Output(ids.COLOR_BY, "value")),
        inputs=dict(upload=Input(ids.NODE_DATA_UPLOAD, "contents")),
        state=dict(filename=State(ids.NODE_DATA_UPLOAD, "filename"), session=State(ids.SESSION, "data")),
        prevent_initial_call=True,
    )
    def paint_node_data(upload, filename, session):
        """A Model Explorer node-data file: listed in the colour menu and painted at once
        (a file qviz cannot read is one line in the alert bar, the menu unchanged)."""
        s = store.require(session)
        if s is None or not upload:
            return dict(options=no_update, value=no_update)
        set_props(ids.NODE_DATA_UPLOAD, {"contents": None})   # the same file again is a change (as a model's)
        name, missing = services.node_data_from_upload(s, upload, filename)
        log.info("session %s: painted %s (%d keys not in the model)", session["sid"][:8], name, missing)
        return dict(options=color_options(services.painted(s)), value=name)

    @app.callback(
        output=dict(options=Output(ids.COLOR_BY, "options", allow_duplicate=True),
                    value=Output(ids.COLOR_BY, "value", allow_duplicate=True)),
        inputs=dict(_version=Input(ids.MODEL_VERSION, "data")),
        state=dict(value=State(ids.COLOR_BY, "value"), options=State(ids.COLOR_BY, "options"),
                   session=State(ids.SESSION, "data")),
        prevent_initial_call=True,
    )
    def color_menu_of_model(_version, value, options, session):
        """Another model open: the files painted on the last one leave the menu. What does
        not change is not sent: a value sent again, even the same, would draw the graph again."""
        s = store.require(session)
        menu = color_options(services.painted(s) if s is not None else ())
        kept = value if any(o["value"] == value for o in menu) else OP_KIND
        return dict(options=menu if menu != options else no_update, value=kept if kept != value else no_update)

    @app.callback(
        output=dict(file=Output(ids.SAVE_SVG, "data"), status=Output(ids.SAVE_SVG_STATUS, "children")),
        inputs=dict(_all=Input(ids.SAVE_SVG_BUTTON, "n_clicks"), _around=Input(ids.SAVE_AROUND_SVG_BUTTON, "n_clicks")),
        state=dict(history=State(ids.RECIPE, "data"), view_state=State(ids.VIEW, "data"),
                   mode=State(ids.VIEW_MODE, "value"), show=State(ids.SHOW, "value"),
                   direction=State(ids.DIRECTION, "value"), selected=State(ids.SELECTED, "data"),
                   session=State(ids.SESSION, "data")),
        prevent_initial_call=True,
    )
    def save_svg(_all, _around, history, view_state, mode, show, direction, selected, session):
        # the view drawn is cached on the session: the whole graph is laid out already
        s = store.require(session)
        if s is None or not history:
            return dict(file=no_update, status="")
        layer = None
        if ctx.triggered_id == ids.SAVE_AROUND_SVG_BUTTON:
            layer = navigation.layer_around(s, (selected or {}).get("key"))
            if layer is None:
                return dict(file=no_update, status="select a node first: the image is it and its neighbours")
        try:
            name, svg = services.graph_svg_file(s, current(history), view_choice(mode, show, direction, view_state),
                                                around_layer=layer)
        except ValueError as exc:      # the layer is not in the view drawn (another view than the selection's)
            return dict(file=no_update, status=str(exc))
        return dict(file=dcc.send_string(svg, name, type="image/svg+xml"), status=f"saved {name}")
