"""The graph view: when to redraw (the redraw itself is :mod:`qviz.app.redraw`), selection
(click, search, a match, an error bar), expanding a layer, opening a block.

Each callback maps component properties to a :mod:`qviz.app.services` call and
its answer back to properties; the node panel and verification are in
:mod:`.panels`.
"""

from __future__ import annotations

import logging
import time

from dash import ALL, Input, Output, State, ctx, dcc, html, no_update, set_props
from dash.exceptions import PreventUpdate

from ...layout import ViewKey
from .. import ids, navigation, redraw, services
from ..colour_by import SUGGESTED_BITS, metric_waiting
from ..legend import OP_KIND, color_options
from ..redraw import SWEEP_INPUTS, view_choice
from ..services import current

log = logging.getLogger(__name__)

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


def register(app, store) -> None:
    @app.callback(
        output=redraw.outputs(),
        inputs=dict(history=Input(ids.RECIPE, "data"), page=redraw.page_of(Input),
                    _tick=Input(ids.METRIC_POLL, "n_intervals"), _sweep_done=Input(ids.SWEEP_DONE, "data")),
        state=dict(session=State(ids.SESSION, "data"), drawn=State(ids.DRAWN, "data")),
        prevent_initial_call="initial_duplicate",
    )
    def draw(history, page, _tick, _sweep_done, session, drawn):
        s = store.require(session)
        if s is None or not history:
            return dict(redraw.DRAWN_NOTHING)
        if ctx.triggered_id in SWEEP_INPUTS and page["color_by"] != SUGGESTED_BITS:
            raise PreventUpdate   # the sweep only changes the suggestion's colours
        recipe = current(history)
        if set(ctx.triggered_prop_ids) == {f"{ids.METRIC_POLL}.n_intervals"}:
            # A poll while the graph waits for a metric (the recipe's SQNR): redrawn once it is in.
            # (A poll, not a store the verification sets: that would close a loop of callbacks,
            # draw → verification → draw, which Dash's renderer may hold up.)
            if metric_waiting(s, page["color_by"], recipe).startswith("waiting"):
                raise PreventUpdate
        if redraw.already_drawn(s, recipe, drawn, ctx.triggered_prop_ids):
            raise PreventUpdate   # the edit's own answer drew it
        started = time.monotonic()
        try:
            return redraw.redraw(s, recipe, page, ctx.triggered_prop_ids)
        finally:
            log.info("session %s: drew %s in %.2f s (%s)", session["sid"][:8], s.name, time.monotonic() - started,
                     ", ".join(ctx.triggered_prop_ids))

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

    @app.callback(Output(ids.SEARCH_STATUS, "children", allow_duplicate=True), Input(ids.VIEW, "data"),
                  State(ids.SELECTED, "data"), State(ids.SEARCH_STATUS, "children"), prevent_initial_call=True)
    def search_line_of_an_opened_block(view_state, selected, status):
        """A search that found a closed block says so ("in block 3 (expand opens it)") and
        selects it; the line goes once that block is opened or the blocks ungrouped (it
        stayed, naming a block no longer drawn), as does any line left while a block is
        selected. Any other change of view leaves it."""
        view_state, key = view_state or {}, ViewKey.parse((selected or {}).get("key"))
        if not status or key is None or not key.is_block:
            raise PreventUpdate
        if view_state.get("blocks") and key.name not in view_state.get("opened", ()):
            raise PreventUpdate
        return ""

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
