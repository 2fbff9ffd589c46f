"""The sensitivity sweep and the QAT export: long jobs in the worker, polled by intervals."""

from __future__ import annotations

import time

from dash import Input, Output, State, ctx, dcc, html, no_update

from ..._text import duration
from ...choices import is_keras_file
from ...render import pareto_figure, sensitivity_figure
from .. import ids, services
from ..errors import failure_of
from ..jobs import JobState, poll
from ..services import current, push



def _suggestion_view(sweep, target):
    recipe = sweep.suggest(float(target))
    parts = []
    for layer in sweep.layers:
        b = recipe.bits(layer)
        parts.append(f"{layer} {b.weight_bits}/{b.activation_bits}")
    if sweep.warning:
        return [html.Div(f"⚠ {sweep.warning} — no suggestion from these figures; the widest bits swept: "
                         + ", ".join(parts), id=ids.SWEEP_SUGGESTED, className="warning")]
    short = sweep.shortfalls(float(target))
    if short:
        return [html.Div([html.Div(f"⚠ the widths swept cannot reach {target:g} dB overall (each quantizer needs "
                                   f"{sweep.need_db(target):.1f} dB); these fall short even at the widest bits:"),
                          html.Ul([html.Li(line) for line in short]),
                          html.Div("the widest bits swept there, the fewest that reach it elsewhere: "
                                   + ", ".join(parts))], id=ids.SWEEP_SUGGESTED, className="warning")]
    return [html.Div(f"suggested bits (weights/activations) for ≥ {target:g} dB overall, each quantizer "
                     f"≥ {sweep.need_db(target):.1f} dB: " + ", ".join(parts), id=ids.SWEEP_SUGGESTED)]


_HIDDEN, _SHOWN = {"display": "none"}, {"display": "block"}


def _heatmap(sweep, target):
    """The sweep's table as the panel's heatmap (bold: what the target needs)."""
    return sensitivity_figure(sweep.layers, sweep.bits, sweep.weight_sqnr, sweep.activation_sqnr,
                              need_db=sweep.need_db(30.0 if target is None else float(target)),
                              weight_accuracy=sweep.weight_accuracy, activation_accuracy=sweep.activation_accuracy)


def _sweep_props(*, polling=False, done=0, total=1, bar=_HIDDEN, status="", heatmap=no_update, heatmap_style=None,
                 suggestion="", can_apply=False, can_stop=None) -> dict:
    """The sweep panel's properties (idle by default; a sweep polled can be stopped)."""
    can_stop = polling if can_stop is None else can_stop
    return dict(stop_polling=not polling, cannot_stop=not can_stop, done=str(done), total=str(total), bar=bar,
                status=status,
                heatmap=heatmap, heatmap_style=_HIDDEN if heatmap_style is None else heatmap_style,
                suggestion=suggestion, cannot_apply=not can_apply, cannot_search=not can_apply)


def register(app, store) -> None:
    @app.callback(
        output=dict(stop_polling=Output(ids.SWEEP_POLL, "disabled"), cannot_stop=Output(ids.SWEEP_STOP, "disabled"),
                    done=Output(ids.SWEEP_PROGRESS, "value"),
                    total=Output(ids.SWEEP_PROGRESS, "max"), bar=Output(ids.SWEEP_PROGRESS, "style"),
                    status=Output(ids.SWEEP_STATUS, "children"), heatmap=Output(ids.SWEEP_HEATMAP, "figure"),
                    heatmap_style=Output(ids.SWEEP_HEATMAP, "style"),
                    suggestion=Output(ids.SWEEP_SUGGESTION, "children"),
                    cannot_apply=Output(ids.SWEEP_APPLY, "disabled"),
                    cannot_search=Output(ids.PARETO_RUN, "disabled"), finished=Output(ids.SWEEP_DONE, "data")),
        inputs=dict(_run=Input(ids.SWEEP_RUN, "n_clicks"), _stop=Input(ids.SWEEP_STOP, "n_clicks"),
                    _tick=Input(ids.SWEEP_POLL, "n_intervals"),
                    target=Input(ids.SWEEP_TARGET, "value"), _model=Input(ids.MODEL_VERSION, "data"),
                    bits=Input(ids.SWEEP_BITS, "value")),
        state=dict(session=State(ids.SESSION, "data")),
        prevent_initial_call=True,
    )
    def sweep(_run, _stop, _tick, target, _model, bits, session):
        answer = _sweep(target, bits, store.require(session))
        # the panes coloured by the suggestion repaint when the sweep is found done (a
        # new target repaints them by itself)
        just_done = ctx.triggered_id in (ids.SWEEP_POLL, ids.SWEEP_RUN) and answer["cannot_apply"] is False
        return dict(answer, finished=time.time() if just_done else no_update)

    def _sweep(target, bits, s) -> dict:
        if s is None:
            return _sweep_props()
        if ctx.triggered_id == ids.MODEL_VERSION:
            return _sweep_props(status=services.sweep_plan(s, bits))
        if ctx.triggered_id == ids.SWEEP_RUN:
            if not bits:
                return _sweep_props(status="choose at least one bit width")
            s.start_sweep(sorted(bits, reverse=True))
        job = s.jobs.get("sweep")
        if job is not None and ctx.triggered_id == ids.SWEEP_STOP:
            job.stop()
        if job is None:
            return _sweep_props(status=services.sweep_plan(s, bits))
        if job.state is JobState.CANCELLED:
            done, total = job.progress() or (0, 0)
            stopped = f"stopped after {done:,} of {total:,} measurements" if total else ""
            made = services.stopped_sweep(s, job.key)
            if made is None:
                return _sweep_props(status=(stopped and stopped + " · run again: ") + services.sweep_plan(s, bits))
            # what it measured stays on screen (blank: not measured); no suggestion from half a table
            same = tuple(sorted((int(b) for b in bits or ()), reverse=True)) == job.key
            return _sweep_props(status=f"{stopped or 'stopped'}: the cells measured are shown, the blank ones "
                                       f"were not · run again{' to finish' if same else ''}: "
                                       f"{services.sweep_plan(s, bits)}",
                                heatmap=_heatmap(made, target), heatmap_style=_SHOWN)
        if job.state in (JobState.QUEUED, JobState.RUNNING):
            done, total = job.progress() or (0, 1)
            left = job.time_left()
            pace = f", about {duration(left)} left" if left is not None else ""
            status = (f"{done:,} of {total:,} measurements{pace}…" if job.progress() is not None
                      else "starting: the model's activation ranges first…")
            stopping = getattr(job.handle, "stop_requested", False)
            if stopping:
                made = f" ({done:,} of {total:,} made)" if job.progress() is not None else ""
                status = f"stopping after the measurement under way{made}…"
            return _sweep_props(polling=True, done=done, total=total, bar=_SHOWN, status=status,
                                heatmap_style=no_update, suggestion=no_update, can_stop=not stopping)
        if job.state is JobState.FAILED:  # the sweep failed in TF: say why, keep the app
            return _sweep_props(status=f"sweep failed: {failure_of(job.handle, 'the sweep')}")
        result = job.handle.result()
        target = 30.0 if target is None else float(target)
        s.aim_sweep(target)   # "colour by: suggested weight bits" paints this suggestion
        n = 2 * len(result.layers) * len(result.bits)
        status = f"done: {n:,} measurements"
        if ctx.triggered_id == ids.SWEEP_BITS:   # the widths of a next sweep: this one's figures stay
            status += f" · run again: {services.sweep_plan(s, bits)}"
        return _sweep_props(done=n, total=n, status=status, heatmap=_heatmap(result, target), heatmap_style=_SHOWN,
                            suggestion=_suggestion_view(result, target), can_apply=True)

    @app.callback(
        output=dict(figure=Output(ids.PARETO_GRAPH, "figure"), style=Output(ids.PARETO_GRAPH, "style"),
                    status=Output(ids.PARETO_STATUS, "children"), stop_polling=Output(ids.PARETO_POLL, "disabled")),
        inputs=dict(_run=Input(ids.PARETO_RUN, "n_clicks"), _tick=Input(ids.PARETO_POLL, "n_intervals"),
                    _model=Input(ids.MODEL_VERSION, "data")),
        state=dict(session=State(ids.SESSION, "data"), trade=State(ids.PARETO_TRADE, "value")),
        prevent_initial_call=True,
    )
    def mixed_precision(_run, _tick, _model, session, trade):
        # every recipe of the search is run and verified in the worker: a job, polled
        s = store.require(session)
        idle = dict(figure=no_update, style=_HIDDEN, status="", stop_polling=True)
        if s is None or ctx.triggered_id == ids.MODEL_VERSION:
            return idle
        if ctx.triggered_id == ids.PARETO_RUN:
            sweep = s.jobs.get("sweep")
            if sweep is None or sweep.state is not JobState.DONE:
                return dict(idle, status="run the sweep first: the search narrows what it measured")
            s.start_pareto(sweep.handle.result(), "bops" if trade == "bops" else "size")
        job = s.jobs.get("pareto")

        def running():
            done, total = job.progress() or (0, 1)
            return dict(figure=no_update, style=no_update, status=f"measuring recipe {done} of {total}…",
                        stop_polling=False)

        def done(front):
            best = len(front.front())
            return dict(figure=pareto_figure(front), style=_SHOWN, stop_polling=True,
                        status=f"{len(front.points)} recipes measured, {best} on the front: click one to load it")

        answer = poll(job, running=running(), done=done,
                      failed=lambda exc: dict(idle, status=f"the search failed: {exc}")) if job else None
        return idle if answer is None else answer

    @app.callback(Output(ids.RECIPE, "data", allow_duplicate=True), Input(ids.PARETO_GRAPH, "clickData"),
                  State(ids.RECIPE, "data"), State(ids.SESSION, "data"), prevent_initial_call=True)
    def load_pareto_point(click, data, session):
        s = store.require(session)
        job = s.jobs.get("pareto") if s is not None else None
        if job is None or job.state is not JobState.DONE or not data or not click or not click.get("points"):
            return no_update
        index = click["points"][0].get("customdata")
        points = job.handle.result().points
        if not isinstance(index, int) or not 0 <= index < len(points) or points[index].recipe == current(data):
            return no_update
        return push(data, points[index].recipe)

    @app.callback(Output(ids.RECIPE, "data", allow_duplicate=True), Input(ids.SWEEP_APPLY, "n_clicks"),
                  State(ids.SWEEP_TARGET, "value"), State(ids.RECIPE, "data"), State(ids.SESSION, "data"),
                  prevent_initial_call=True)
    def apply_suggestion(_n, target, data, session):
        s = store.require(session)
        job = s.jobs.get("sweep") if s is not None else None
        if job is None or job.state is not JobState.DONE or not data:
            return no_update
        suggested = job.handle.result().suggest(30.0 if target is None else float(target))
        if suggested == current(data):
            return no_update
        return push(data, suggested)

    @app.callback(
        output=dict(file=Output(ids.QAT_DOWNLOAD, "data"), stop_polling=Output(ids.QAT_POLL, "disabled"),
                    status=Output(ids.QAT_STATUS, "children")),
        inputs=dict(_n=Input(ids.QAT_BUTTON, "n_clicks"), _tick=Input(ids.QAT_POLL, "n_intervals")),
        state=dict(mode=State(ids.QAT_MODE, "value"), history=State(ids.RECIPE, "data"),
                   session=State(ids.SESSION, "data")),
        prevent_initial_call=True,
    )
    def export_qat(_n, _tick, mode, history, session):
        s = store.require(session)
        idle = dict(file=no_update, stop_polling=True, status="")
        if s is None or not history:
            return idle
        if ctx.triggered_id == ids.QAT_BUTTON:
            if not is_keras_file(s.graph.source or ""):
                return dict(idle, status=f"{s.name} was not opened from a .keras/.h5 file: a frozen graph "
                                         "has no trainable layers to rebuild")
            s.start_qat(current(history), mode)
        name = f"{s.file_stem}_qat.keras"
        answer = poll(
            s.jobs.get("qat"), running=dict(file=no_update, stop_polling=False, status="building the QAT model…"),
            done=lambda blob: dict(file=dcc.send_bytes(blob, name), stop_polling=True,
                                   status=f"downloaded {name} ({len(blob) / 1024:.0f} KB)"),
            failed=lambda exc: dict(file=no_update, stop_polling=True, status=f"QAT export failed: {exc}"))
        return idle if answer is None else answer

    @app.callback(
        output=dict(file=Output(ids.CODE_DOWNLOAD, "data"), stop_polling=Output(ids.CODE_POLL, "disabled"),
                    status=Output(ids.CODE_STATUS, "children"), notes=Output(ids.CODE_NOTES, "children")),
        inputs=dict(_n=Input(ids.CODE_BUTTON, "n_clicks"), _tick=Input(ids.CODE_POLL, "n_intervals")),
        state=dict(tool=State(ids.CODE_TOOL, "value"), history=State(ids.RECIPE, "data"),
                   session=State(ids.SESSION, "data")),
        prevent_initial_call=True,
    )
    def export_code(_n, _tick, tool, history, session):
        # the model is read and the recipe calibrated in the worker: a job, polled
        s = store.require(session)
        idle = dict(file=no_update, stop_polling=True, status="", notes=no_update)
        if s is None or not history:
            return idle
        stem = s.file_stem
        if ctx.triggered_id == ids.CODE_BUTTON:
            if not s.graph.source:
                return dict(idle, status=f"{s.name} was not opened from a file: there is nothing to write code for")
            if tool != "ai-edge-quantizer" and not is_keras_file(s.graph.source):
                return dict(idle, status=f"{s.name} was not opened from a .keras/.h5 file: {tool} trains Keras "
                                         "models (AI Edge Quantizer takes any model)")
            s.start_code(current(history), tool, f"{stem}_{tool.replace('-', '_')}")
        job = s.jobs.get("code")
        name = f"{stem}_{(job.key[0] if job else tool).replace('-', '_')}.zip"
        answer = poll(
            job, running=dict(file=no_update, stop_polling=False, status="writing the code…", notes=[]),
            done=lambda r: dict(file=dcc.send_bytes(r[0], name), stop_polling=True,
                                status=f"downloaded {name} ({len(r[0]) / 1024:.0f} KB)",
                                notes=[html.Li(n) for n in r[1]]),
            failed=lambda exc: dict(file=no_update, stop_polling=True, status=f"code export failed: {exc}",
                                    notes=[]))
        return idle if answer is None else answer

    @app.callback(
        output=dict(file=Output(ids.REPORT_DOWNLOAD, "data"), stop_polling=Output(ids.REPORT_POLL, "disabled"),
                    status=Output(ids.REPORT_STATUS, "children")),
        inputs=dict(_n=Input(ids.REPORT_BUTTON, "n_clicks"), _tick=Input(ids.REPORT_POLL, "n_intervals")),
        state=dict(history=State(ids.RECIPE, "data"), selected=State(ids.SELECTED, "data"),
                   target=State(ids.SWEEP_TARGET, "value"), session=State(ids.SESSION, "data")),
        prevent_initial_call=True,
    )
    def html_report(_n, _tick, history, selected, target, session):
        # the rewrite is run, verified and explained in the worker: a job, polled
        s = store.require(session)
        idle = dict(file=no_update, stop_polling=True, status="")
        if s is None or not history:
            return idle
        if ctx.triggered_id == ids.REPORT_BUTTON:
            recipe = current(history)
            sweep = s.jobs.get("sweep")
            done = sweep.handle.result() if sweep is not None and sweep.state is JobState.DONE else None
            s.start_report(recipe, services.report_explains(s, (selected or {}).get("key"), recipe), done,
                           30.0 if target is None else float(target))
        name = f"{s.file_stem}_report.html"
        answer = poll(
            s.jobs.get("html_report"),
            running=dict(file=no_update, stop_polling=False, status="making the report: running the recipe…"),
            done=lambda page: dict(file=dcc.send_string(page, name, type="text/html"), stop_polling=True,
                                   status=f"downloaded {name} ({len(page) / 2**20:.1f} MB)"),
            failed=lambda exc: dict(file=no_update, stop_polling=True, status=f"report failed: {exc}"))
        return idle if answer is None else answer
