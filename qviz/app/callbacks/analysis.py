"""The sensitivity sweep and the QAT export: long jobs in the worker, polled by intervals."""

from __future__ import annotations

from pathlib import Path

from dash import Input, Output, State, ctx, dcc, html, no_update

from ...choices import is_keras_file
from ...render import sensitivity_figure
from .. import ids
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


def register(app, store) -> None:
    @app.callback(
        Output(ids.SWEEP_POLL, "disabled"), Output(ids.SWEEP_PROGRESS, "value"),
        Output(ids.SWEEP_PROGRESS, "max"), Output(ids.SWEEP_PROGRESS, "style"),
        Output(ids.SWEEP_STATUS, "children"), Output(ids.SWEEP_HEATMAP, "figure"),
        Output(ids.SWEEP_HEATMAP, "style"), Output(ids.SWEEP_SUGGESTION, "children"),
        Output(ids.SWEEP_APPLY, "disabled"),
        Input(ids.SWEEP_RUN, "n_clicks"), Input(ids.SWEEP_POLL, "n_intervals"), Input(ids.SWEEP_TARGET, "value"),
        Input(ids.MODEL_VERSION, "data"),
        State(ids.SWEEP_BITS, "value"), State(ids.SESSION, "data"), prevent_initial_call=True,
    )
    def sweep(_run, _tick, target, _model, bits, session):
        hidden, shown = {"display": "none"}, {"display": "block"}
        s = store.require(session)
        idle = (True, "0", "1", hidden, "", no_update, hidden, "", True)
        if s is None or ctx.triggered_id == ids.MODEL_VERSION:
            return idle
        if ctx.triggered_id == ids.SWEEP_RUN:
            if not bits:
                return (True, "0", "1", hidden, "choose at least one bit width", no_update, hidden, "", True)
            s.start_sweep(sorted(bits, reverse=True))
        job = s.jobs.get("sweep")
        if job is None or job.state is JobState.CANCELLED:
            return idle
        if job.state in (JobState.QUEUED, JobState.RUNNING):
            done, total = job.progress() or (0, 1)
            return (False, str(done), str(total), shown, f"{done} of {total} measurements…", no_update,
                    no_update, no_update, True)
        if job.state is JobState.FAILED:  # the sweep failed in TF: say why, keep the app
            return (True, "0", "1", hidden, f"sweep failed: {job.handle.exception()}", no_update, hidden, "", True)
        result = job.handle.result()
        target = 30.0 if target is None else float(target)
        fig = sensitivity_figure(result.layers, result.bits, result.weight_sqnr, result.activation_sqnr,
                                 need_db=result.need_db(target), weight_accuracy=result.weight_accuracy,
                                 activation_accuracy=result.activation_accuracy)
        n = 2 * len(result.layers) * len(result.bits)
        return (True, str(n), str(n), hidden, f"done: {n} measurements", fig, shown,
                _suggestion_view(result, target), False)

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
        Output(ids.QAT_DOWNLOAD, "data"), Output(ids.QAT_POLL, "disabled"), Output(ids.QAT_STATUS, "children"),
        Input(ids.QAT_BUTTON, "n_clicks"), Input(ids.QAT_POLL, "n_intervals"),
        State(ids.QAT_MODE, "value"), State(ids.RECIPE, "data"), State(ids.SESSION, "data"),
        prevent_initial_call=True,
    )
    def export_qat(_n, _tick, mode, data, session):
        s = store.require(session)
        if s is None or not data:
            return no_update, True, ""
        if ctx.triggered_id == ids.QAT_BUTTON:
            source = s.graph.source or ""
            if not is_keras_file(source):
                return (no_update, True, f"{s.name} was not opened from a .keras/.h5 file: a frozen graph "
                                         "has no trainable layers to rebuild")
            s.start_qat(current(data), mode)
        name = f"{Path(s.name).stem}_qat.keras"
        answer = poll(
            s.jobs.get("qat"), running=(no_update, False, "building the QAT model…"),
            done=lambda blob: (dcc.send_bytes(blob, name), True, f"downloaded {name} ({len(blob) / 1024:.0f} KB)"),
            failed=lambda exc: (no_update, True, f"QAT export failed: {exc}"))
        return (no_update, True, "") if answer is None else answer
