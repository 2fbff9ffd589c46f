"""The page's state in its URL (:mod:`qviz.app.url_state`): written after every
change, read when a link is opened and when the browser goes back or forward."""

from __future__ import annotations

import logging

from dash import Input, Output, State, ctx, no_update

from ...layout.blocks import default_grouping
from ...passes import RecipeError
from .. import ids
from ..layout import SERVED_MODEL
from ..colour_by import MENU as COLOR_MENU
from ..legend import OP_KIND
from ..services import START_RECIPE, current, new_history
from ..url_state import PageState, PageStateError, history_following, page_location, parse_page_hash

log = logging.getLogger(__name__)


def _model_of(s) -> str | None:
    """The model as the link names it: a sample, the served model, or None (an upload)."""
    origin = s.origin
    if origin is None:
        return None
    return {"sample": origin.name, "served": SERVED_MODEL}.get(origin.kind)


def register(app, store, options) -> None:
    # One callback reads and writes the URL: Dash drops callbacks that feed each
    # other in a circle (URL → recipe → URL), but a callback may take its own outputs.
    # The model is not switched from here: that would close a circle through the model's
    # opening (picker → open → recipe → here → picker); the server reads the link's
    # model (?m=) when it builds the page instead (create_app's layout).
    nothing = dict(url=no_update, query=no_update, history=no_update, mode=no_update, show=no_update,
                   direction=no_update, selected=no_update, view=no_update, color=no_update, restored=no_update,
                   alert=no_update)

    @app.callback(
        output=dict(url=Output(ids.URL, "hash"), query=Output(ids.URL, "search"),
                    history=Output(ids.RECIPE, "data", allow_duplicate=True),
                    mode=Output(ids.VIEW_MODE, "value", allow_duplicate=True),
                    show=Output(ids.SHOW, "value", allow_duplicate=True),
                    direction=Output(ids.DIRECTION, "value", allow_duplicate=True),
                    selected=Output(ids.SELECTED, "data", allow_duplicate=True),
                    view=Output(ids.VIEW, "data", allow_duplicate=True),
                    color=Output(ids.COLOR_BY, "value", allow_duplicate=True),
                    restored=Output(ids.URL_RESTORED, "data"),
                    alert=Output(ids.ALERT, "children", allow_duplicate=True)),
        inputs=dict(fragment=Input(ids.URL, "hash"), _version=Input(ids.MODEL_VERSION, "data"),
                    history=Input(ids.RECIPE, "data"), mode=Input(ids.VIEW_MODE, "value"),
                    show=Input(ids.SHOW, "value"), direction=Input(ids.DIRECTION, "value"),
                    selected=Input(ids.SELECTED, "data"), view=Input(ids.VIEW, "data"),
                    color=Input(ids.COLOR_BY, "value")),
        state=dict(query=State(ids.URL, "search"), restored=State(ids.URL_RESTORED, "data"),
                   session=State(ids.SESSION, "data")),
        prevent_initial_call=True,
    )
    def sync_url(fragment, _version, history, mode, show, direction, selected, view, color, query, restored,
                 session):
        # (a model opened sets its recipe and clears the selection in the same answer: all fire at once)
        fired = {prop.split(".")[0] for prop in ctx.triggered_prop_ids}
        if ids.URL in fired or (ids.MODEL_VERSION in fired and not restored):
            return _read(fragment, query, history, mode, show, direction, selected, view, color, restored, session)
        return _write(fragment, query, history, mode, show, direction, selected, view, color, restored, session)

    def _write(fragment, query, history, mode, show, direction, selected, view, color, restored, session):
        # not before a link's own state is read: it would be overwritten
        s = store.require(session)
        if not restored or s is None or not history:
            return nothing
        recipe = current(history)
        view = view or {}
        blocks = bool(view.get("blocks"))
        where = page_location(PageState(_model_of(s), mode or "layer", show or "rewritten", direction or "LR",
                                        (selected or {}).get("key"), None if recipe == START_RECIPE else recipe,
                                        tuple(view.get("expanded", ())),
                                        None if blocks == default_grouping(len(s.graph.layers)) else blocks,
                                        tuple(view.get("opened", ())), color or None))
        if where == ((query or ""), (fragment or "")):
            return nothing
        return dict(nothing, query=where[0] if where[0] != (query or "") else no_update,
                    url=where[1] if where[1] != (fragment or "") else no_update)

    def _read(fragment, query, history, mode, show, direction, selected, view, color, restored, session):
        try:
            state = parse_page_hash(fragment, query)
        except PageStateError as exc:
            return {**nothing, "restored": True, "alert": f"the link: {exc}"}
        if state is None:
            return nothing if restored else {**nothing, "restored": True}
        s = store.require(session)
        if s is None or not history or (state.model is not None and _model_of(s) != state.model):
            # that model is not open yet (or, going back, another one is: the page keeps it)
            if not restored and s is not None and history and state.model is not None:
                return {**nothing, "restored": True,
                        "alert": f"the link names a model this server does not have: {state.model[:80]}"}
            return nothing
        recipe = state.recipe or START_RECIPE
        try:
            recipe.validate(s.graph)
        except RecipeError as exc:
            return {**nothing, "restored": True, "alert": f"the link's recipe does not fit {s.name}: {exc}"}
        out = dict(nothing, restored=True)
        followed = history_following(history, recipe) if restored else new_history(recipe)
        out["history"] = no_update if followed is history else followed
        for name, want, have in (("mode", state.mode, mode), ("show", state.show, show),
                                 ("direction", state.direction, direction)):
            out[name] = want if want != have else no_update
        # no c= is op kind, unless a file the user painted is shown (the link cannot carry it)
        painted = bool(color) and color not in COLOR_MENU
        want_color = state.color or (color if painted else OP_KIND)
        out["color"] = want_color if want_color != (color or OP_KIND) else no_update   # (re-sent, it draws again)
        if state.selected != (selected or {}).get("key"):
            out["selected"] = {"key": state.selected, "center": True} if state.selected else None
        expanded = sorted(set(state.expanded) & set(s.graph.layers))    # layers the model has
        blocks = default_grouping(len(s.graph.layers)) if state.blocks is None else state.blocks
        opened = sorted(set(state.opened) & {b.id for b in s.blocks}) if blocks else []
        wanted = {"expanded": expanded, "blocks": blocks, "opened": opened}
        if view is not None and any(want != (sorted(view.get(k, [])) if k != "blocks" else bool(view.get(k)))
                                    for k, want in wanted.items()):
            out["view"] = {**view, **wanted}
        log.info("session %s: state from the URL applied", session["sid"][:8])
        return out
