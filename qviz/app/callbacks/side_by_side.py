"""Side by side: pane B (the float model or a pinned recipe) beside the graph, the
selection and the view kept in step through the change record
(:mod:`qviz.app.side_by_side`)."""

from __future__ import annotations

import logging

from dash import Input, Output, Patch, State, ctx, no_update
from dash.exceptions import PreventUpdate

from ...passes import Recipe
from ...passes.recipe import FLOAT_RECIPE
from ...render import graph_figure, sent_once
from ...render.image import recipe_badges
from .. import ids, navigation, services
from ..colour_by import SUGGESTED_BITS, other_pane_metric
from ..layout import PANE_B_EMPTY
from ..services import current
from ..side_by_side import counterparts, folded_pairs, pane_caption, pane_views, synced_range
from ..redraw import SWEEP_INPUTS, center_on, view_choice

log = logging.getLogger(__name__)

#: What pane A is called while pane B is shown (and while it shows the original graph).
PANE_A = "A: this recipe (edit it here)"
PANE_A_ORIGINAL = "A: the float model (original is picked: pick rewritten to see this recipe)"


def _pinned(data) -> Recipe | None:
    return Recipe.from_json(data) if data else None


def register(app, store) -> None:
    @app.callback(
        output=dict(caption_a=Output(ids.PANE_A_CAPTION, "children"),
                    caption_a_hidden=Output(ids.PANE_A_CAPTION, "hidden")),
        inputs=dict(toggle=Input(ids.SIDE_BY_SIDE, "value"), show=Input(ids.SHOW, "value")),
        prevent_initial_call=True,   # the page opens with pane B hidden: nothing to add to its first load
    )
    def show_pane(toggle, show):
        on = bool(toggle)
        caption = PANE_A_ORIGINAL if show == "original" else PANE_A
        return dict(caption_a=caption if on else "", caption_a_hidden=not on)

    @app.callback(
        Output(ids.PINNED, "data"),
        Input(ids.PIN_RECIPE, "n_clicks"), Input(ids.UNPIN_RECIPE, "n_clicks"),
        State(ids.RECIPE, "data"), prevent_initial_call=True,
    )
    def pin(_pin, _unpin, history):
        if ctx.triggered_id == ids.UNPIN_RECIPE or not history:
            return None
        return current(history).to_json(indent=None)

    @app.callback(
        # pane B is shown by the response that draws it, so plotly sizes it as shown
        output=dict(figure=Output(ids.GRAPH_B, "figure"), caption=Output(ids.PANE_B_CAPTION, "children"),
                    hidden=Output(ids.PANE_B, "hidden")),
        inputs=dict(toggle=Input(ids.SIDE_BY_SIDE, "value"), pinned=Input(ids.PINNED, "data"),
                    history=Input(ids.RECIPE, "data"), view_state=Input(ids.VIEW, "data"),
                    mode=Input(ids.VIEW_MODE, "value"), show=Input(ids.SHOW, "value"),
                    direction=Input(ids.DIRECTION, "value"), selected=Input(ids.SELECTED, "data"),
                    color_by=Input(ids.COLOR_BY, "value"), target=Input(ids.SWEEP_TARGET, "value"),
                    _sweep_done=Input(ids.SWEEP_DONE, "data")),
        state=dict(session=State(ids.SESSION, "data"), window=State(ids.VIEW_WINDOW, "data")),
        prevent_initial_call=True,
    )
    def draw_b(toggle, pinned, history, view_state, mode, show, direction, selected, color_by, target, _sweep_done,
               session, window):
        # drawn only while shown: a hidden pane costs nothing
        s = store.require(session)
        if not toggle:   # hidden: emptied once, when it is hidden, and left alone after (an edit
            # then costs the page no update: each is work for Dash's renderer, a toggle's redraw).
            # (Among the inputs that fired, not the first: turned off right after an edit, it hides.)
            if f"{ids.SIDE_BY_SIDE}.value" not in ctx.triggered_prop_ids:
                return dict(figure=no_update, caption=no_update, hidden=no_update)
            return dict(figure=PANE_B_EMPTY, caption="", hidden=True)
        if s is None or not history:
            return dict(figure=no_update, caption="", hidden=False)
        recipe, other = current(history), _pinned(pinned)
        if ctx.triggered_id in SWEEP_INPUTS:
            # the sweep's suggestion (pane B's one job-backed colour) is in, or its target moved
            if color_by != SUGGESTED_BITS:
                raise PreventUpdate
            s.aim_sweep(target)
        choice = view_choice(mode, show, direction, view_state)
        a, b = pane_views(s, recipe, other, choice)
        key, pairs = (selected or {}).get("key"), folded_pairs(s, recipe, other)
        chosen = counterparts(key, a, b, pairs) if key else []
        graph = s.graph if other is None else s.result(other).graph
        # (the float model's hover says it folds and quantizes nothing: it said pane A's recipe)
        hover = services.hover_lines(s, graph, b.graph, other or FLOAT_RECIPE, services.hover_shapes(s.graph, graph))
        # (no empty badge slots: the page previews an edit's badge in pane A only)
        badges = recipe_badges(s.graph, b.graph, other) if other is not None else {}
        # coloured as pane A is, for pane B's own model, and its opened blocks framed too
        metric, note = other_pane_metric(s, color_by, other)
        fill = services.metric_fill(metric, b.graph, hover) if metric is not None else None
        frames = navigation.opened_frames(s, b, choice)
        fig = graph_figure(b.graph, b.pos, routes=b.routes, selected=chosen, show_status=other is not None,
                           hover=hover, badges=badges, first_view=True, direction=direction or "LR", fill=fill,
                           frames=frames.values())
        # where pane A looks (the user panned or zoomed there), not the graph's start; not after a
        # new view (mode, direction, blocks), which pane A draws from its start too, nor a selection
        ranges = synced_range({"xaxis.range": window.get("x"), "yaxis.range": window.get("y")}, a, b, pairs) \
            if isinstance(window, dict) and ctx.triggered_id in (ids.SIDE_BY_SIDE, ids.PINNED, ids.RECIPE,
                                                                 ids.COLOR_BY, *SWEEP_INPUTS) else None
        # a block just opened (or a layer expanded): B looks at it as pane A does (A's new
        # window is not known here: A works it out in the same moment)
        opened = navigation.look_at(b, frames, s, key) if ctx.triggered_id == ids.VIEW and key else None
        if ranges is not None:
            fig.update_layout(xaxis=dict(range=ranges[0]), yaxis=dict(range=ranges[1]))
        elif opened is not None:
            center_on(fig, opened[0], direction or "LR", opened[1])
        elif chosen and ctx.triggered_id not in SWEEP_INPUTS:   # the selection's counterpart, in view
            center_on(fig, b.pos[chosen[0]], direction or "LR", zoom=window)
        caption = pane_caption(other, s)
        # (a plain dict: a go.Figure in the response sends all of it down Dash's slow JSON path, deep-copied)
        return dict(figure=sent_once(fig), caption=f"{caption} · {note}" if note else caption, hidden=False)

    @app.callback(
        Output(ids.SELECTED, "data", allow_duplicate=True),
        Input(ids.GRAPH_B, "clickData"),
        State(ids.PINNED, "data"), State(ids.RECIPE, "data"), State(ids.VIEW, "data"), State(ids.VIEW_MODE, "value"),
        State(ids.SHOW, "value"), State(ids.DIRECTION, "value"), State(ids.SESSION, "data"), prevent_initial_call=True,
    )
    def select_in_b(click, pinned, history, view_state, mode, show, direction, session):
        # a node of pane B selects what stands for it in pane A (a folded batch norm: its conv)
        s = store.require(session)
        key = ((click or {}).get("points") or [{}])[0].get("customdata")
        if s is None or not key or not history:
            return no_update
        recipe, other = current(history), _pinned(pinned)
        a, b = pane_views(s, recipe, other, view_choice(mode, show, direction, view_state))
        found = counterparts(key, b, a, folded_pairs(s, recipe, other))
        return {"key": found[0], "center": True} if found else no_update

    def _sync(relayout, from_a, pinned, history, view_state, mode, show, direction, session):
        s = store.require(session)
        if s is None or not history or not relayout:
            return no_update
        recipe, other = current(history), _pinned(pinned)
        a, b = pane_views(s, recipe, other, view_choice(mode, show, direction, view_state))
        source, target = (a, b) if from_a else (b, a)
        ranges = synced_range(relayout, source, target, folded_pairs(s, recipe, other))
        if ranges is None:
            return no_update
        patch = Patch()
        patch["layout"]["xaxis"]["range"], patch["layout"]["yaxis"]["range"] = ranges
        patch["layout"]["xaxis"]["autorange"] = patch["layout"]["yaxis"]["autorange"] = False
        return patch

    view_state = (State(ids.PINNED, "data"), State(ids.RECIPE, "data"), State(ids.VIEW, "data"),
                  State(ids.VIEW_MODE, "value"), State(ids.SHOW, "value"), State(ids.DIRECTION, "value"),
                  State(ids.SESSION, "data"))

    @app.callback(Output(ids.GRAPH_B, "figure", allow_duplicate=True), Input(ids.GRAPH, "relayoutData"),
                  State(ids.SIDE_BY_SIDE, "value"), *view_state, prevent_initial_call=True)
    def follow_a(relayout, toggle, *state):
        return _sync(relayout, True, *state) if toggle else no_update

    @app.callback(Output(ids.GRAPH, "figure", allow_duplicate=True), Input(ids.GRAPH_B, "relayoutData"),
                  State(ids.SIDE_BY_SIDE, "value"), *view_state, prevent_initial_call=True)
    def follow_b(relayout, toggle, *state):
        return _sync(relayout, False, *state) if toggle else no_update
