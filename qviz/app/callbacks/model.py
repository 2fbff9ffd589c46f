"""Choosing a sample or uploading a model; reopening a session the server dropped."""

from __future__ import annotations

import logging
import time

from dash import Input, Output, State, ctx, no_update, set_props
from dash.exceptions import PreventUpdate

from ...importers import LoadError
from ...layout.blocks import default_grouping
from ...passes import quantized_note
from ...samples import SAMPLES, sample_path
from .. import ids, services
from ..errors import user_message
from ..first_view import FirstView, failed_future, sketch_of
from ..layout import SERVED_MODEL, UPLOADED_MODEL, model_options
from ..session import Origin, PendingOpen, Session
from ..uploads import Upload, save_upload

log = logging.getLogger(__name__)



def start_open(store, sid: str, origin: Origin, options, *, upload: Upload | None = None,
               keep_recipe: bool = False) -> tuple[str, FirstView | None]:
    """Queue the opening of ``origin`` for session ``sid`` (a bounded pool: no
    request waits for a model, and no burst of opens starves the server).
    Returns the status line to show, and the layer view drawn from the file
    (:class:`~qviz.app.first_view.FirstView`), if any."""
    queued = time.monotonic()
    first = None
    if upload is not None:
        fut = store.loads.submit("open", upload.path, upload.name, upload.directory, queued)
        first = sketch_of(upload.path)
    elif origin.kind == "served":
        fut = options["served"].future()   # opening since the server started (or open)
        first = options["served"].first
    else:
        first = sketch_of(sample_path(origin.name))
        # Graphs are immutable: a sample is frozen once and shared by every page that shows it
        # (each new page opens the default sample; freezing it again per page cost a second each).
        with store.lock:
            fut = store.samples.get(origin.name)
            if fut is None or failed_future(fut):
                fut = store.samples[origin.name] = store.loads.submit(
                    "open", sample_path(origin.name), origin.name, None, queued)
    previous = store.loading.get(sid)
    if previous is not None and previous.upload is not None and previous.future.cancel():
        previous.upload.discard()   # a newer choice replaced a queued upload: its file goes too
    store.loading[sid] = PendingOpen(fut, origin, queued, upload, keep_recipe, first=first)
    return (first.status(origin.name) if first else f"loading {origin.name}…"), first


def reopen_message(store, gone, options) -> tuple[str, bool]:
    """What to tell a page whose session the server dropped, and whether its
    model is being reopened (samples and the served model reopen by themselves;
    an upload's file went with the session)."""
    cap = store.capacity
    if gone.origin is None:
        return ("this page's session is not on the server (it was restarted?): reload the page", False)
    if gone.origin.reopenable:
        start_open(store, gone.sid, gone.origin, options, keep_recipe=True)   # the page keeps its drawing
        return (f"the server dropped this page's session to make room (it keeps {cap}); "
                f"reopening {gone.origin.name} with your recipe…", True)
    return (f"the server dropped this page's session to make room (it keeps {cap}); "
            f"upload {gone.origin.name} again to go on", False)


def register(app, store, options) -> None:
    # Opening a model is two steps: the picker/upload queues the load and says
    # "loading…"; an interval polls it and, when the graph is ready, makes the
    # session. No request blocks on a big model.
    @app.callback(
        output=dict(status=Output(ids.MODEL_STATUS, "children"), version=Output(ids.MODEL_VERSION, "data"),
                    figure=Output(ids.GRAPH, "figure", allow_duplicate=True),
                    history=Output(ids.RECIPE, "data", allow_duplicate=True),
                    view_state=Output(ids.VIEW, "data", allow_duplicate=True),
                    stop_polling=Output(ids.MODEL_POLL, "disabled")),
        inputs=dict(sample=Input(ids.MODEL_PICKER, "value"), contents=Input(ids.UPLOAD, "contents"),
                    _tick=Input(ids.MODEL_POLL, "n_intervals")),
        state=dict(filename=State(ids.UPLOAD, "filename"), session=State(ids.SESSION, "data"),
                   view_state=State(ids.VIEW, "data"), alert_class=State(ids.ALERT, "className")),
        prevent_initial_call="initial_duplicate",
    )
    def open_model(sample, contents, _tick, filename, session, view_state, alert_class):
        sid = session["sid"] if isinstance(session, dict) and isinstance(session.get("sid"), str) else None
        if sid is None:
            raise LoadError("page", "the page's session id is missing; reload the page")
        trig = ctx.triggered_id
        if trig == ids.MODEL_PICKER and sample == UPLOADED_MODEL:
            raise PreventUpdate   # (the picker showing the upload just opened: not a choice)
        if trig == ids.UPLOAD:
            if not contents:
                raise PreventUpdate   # (emptied below)
            # emptied once read, so that the same file chosen again is a change (assets/upload_limit.js
            # empties the file input for the same reason): a broken file chosen twice said nothing
            set_props(ids.UPLOAD, {"contents": None})

        def failed(exc):
            keep = store.get(sid)
            # in the red bar, as every error the page shows; the status line goes on saying what
            # is open (it kept the error through every later edit)
            set_props(ids.ALERT, {"children": f"error: {user_message(exc)}", "className": f"alert {OPEN_FAILED}"})
            return _status(_open_line(keep.graph, keep.name) if keep else f"error: {exc}")

        if trig == ids.MODEL_POLL:
            return _poll(sid, view_state, failed, alert_class)
        pending = store.loading.get(sid)
        if pending is not None and pending.answer is not None:
            # The last open is answered: a late poll tick must not replay it over what the user does now.
            store.loading.pop(sid, None)
        served = options.get("served")
        try:
            if trig == ids.UPLOAD and contents:
                upload = save_upload(contents, filename, options["max_upload_bytes"])
                origin = Origin("upload", upload.name)
            elif served is not None and sample in (SERVED_MODEL, None):
                # (the page's first call too: a link naming a sample has the picker on it)
                origin, upload = Origin("served", options["model_name"]), None
                fut = served.future()
                if fut.done() and not failed_future(fut):
                    return _opened(fut.result(), origin, sid, view_state, None, alert_class=alert_class)
            else:
                name = sample or options["default_sample"]
                if not isinstance(name, str) or name not in SAMPLES:
                    raise LoadError(str(name)[:80], "no such sample; choose one from the list")
                origin, upload = Origin("sample", name), None
        except LoadError as exc:
            return failed(exc)
        status, first = start_open(store, sid, origin, options, upload=upload)
        # The page's first load already has this figure in it; a model picked later gets it now.
        figure = first.figure if first is not None and trig is not None else no_update
        return {**_status(status, polling=True), "figure": figure}

    def _poll(sid, view_state, failed, alert_class=None):
        pending = store.loading.get(sid)
        if pending is None:
            return _status(no_update)
        if pending.answer is not None:
            # A tick sent while the one that finished was in flight: the page
            # drops that older answer, so this one must carry it again.
            return pending.answer
        name, upload = pending.origin.name, pending.upload
        if not pending.future.done():
            ahead = store.loads.position(pending.future)
            if ahead:
                return _status(f"waiting to open {name}: {ahead} in line before it", polling=True)
            took = time.monotonic() - pending.started
            if pending.first is not None:
                return _status(pending.first.status(name, took), polling=True)
            return _status(f"loading {name}… {took:.0f} s", polling=True)
        try:
            answer = _opened(pending.future.result(), pending.origin, sid, view_state, upload, pending.keep_recipe,
                             alert_class=alert_class)
        except LoadError as exc:
            answer = failed(exc)
        except Exception as exc:  # a loader bug: logged with its traceback, one line on the page
            log.error("opening %s failed", name, exc_info=exc)
            answer = failed(LoadError(name, f"could not be opened ({type(exc).__name__}); see the server log"))
        if not isinstance(answer["version"], dict):
            if upload is not None:
                upload.discard()   # the load failed: nothing of it stays on disk
            if pending.first is not None:   # the layer view drawn from the file must not stay up as if it opened
                if store.get(sid) is not None:
                    answer["view_state"] = view_state    # redraws what the page still has open
                else:
                    answer["figure"] = NO_GRAPH
        pending.answer = answer
        return answer

    def _start_recipe(origin):
        """The served model opens with the recipe it was served with (``qviz.show``); others with none."""
        given = options.get("start_recipe")
        return given if given is not None and origin.kind == "served" else services.START_RECIPE

    def _opened(graph, origin, sid, view_state, upload, keep_recipe=False, alert_class=None):
        store.put(sid, Session(graph, origin.name, runner=options["runner"], origin=origin,
                               upload_dir=upload.directory if upload is not None else None,
                               ranges=store.ranges_for(graph)))
        view_state = view_state if isinstance(view_state, dict) else {"mode": "layer", "direction": "LR"}
        if not keep_recipe:   # another model: what the page said of the last one goes with it
            set_props(ids.SELECTED, {"data": None})
            set_props(ids.SEARCH, {"value": ""})   # (a name of the last model: it stayed in the box)
            if OPEN_FAILED in (alert_class or ""):   # a failed open's error is the last model's too (not a
                set_props(ids.ALERT, {"children": "", "className": "alert alert-empty"})   # link's own say)
            for line in _MODEL_LINES:
                set_props(line, {"children": ""})
        if origin.kind == "upload":   # the picker names what is open (it went on naming the last pick)
            set_props(ids.MODEL_PICKER, {"options": model_options(options.get("model_name") if options.get("served")
                                                                  else None, origin.name), "value": UPLOADED_MODEL})
        return dict(status=_open_line(graph, origin.name), figure=no_update,
                    version={"name": origin.name, "sid": sid, "n": len(graph), "t": time.monotonic()},
                    history=no_update if keep_recipe else services.new_history(_start_recipe(origin)),
                    view_state={**view_state, "expanded": [], "opened": [],
                                "blocks": default_grouping(len(graph.layers))}, stop_polling=True)


#: The red bar's class while it shows an open that failed: the next model opened clears it.
OPEN_FAILED = "alert-open-failed"


#: Status lines about the open model (a search, a saved image, a download, an uploaded
#: recipe): cleared when another model opens.
_MODEL_LINES = (ids.SEARCH_STATUS, ids.SAVE_SVG_STATUS, ids.REPORT_STATUS, ids.RECIPE_ERROR, ids.CODE_STATUS,
                ids.CODE_NOTES, ids.QAT_STATUS)


#: The graph area when a model drawn from its file then failed to open, and nothing else is open.
NO_GRAPH = {"data": [], "layout": {"xaxis": {"visible": False}, "yaxis": {"visible": False},
                                   "annotations": [{"text": "the model could not be opened (see above)",
                                                    "showarrow": False, "font": {"color": "#888"}}]}}


def _open_line(graph, name: str) -> str:
    """The status line of an open model (and which layers it fake-quantizes already)."""
    quantized = quantized_note(graph, names=2, why=False)   # (three lines at most: the table says the rest)
    return f"{name}: {len(graph)} ops, {len(graph.layers)} layers" + (f"; {quantized}" if quantized else "")


def _status(status, *, polling: bool = False) -> dict:
    """The open callback's answer that only says where the open is (the model is unchanged)."""
    return dict(status=status, version=no_update, history=no_update, view_state=no_update, stop_polling=not polling,
                figure=no_update)
