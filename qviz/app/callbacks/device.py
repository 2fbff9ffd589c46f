"""The TensorFlow Lite check in the verification panel: convert the recipe, run it
in TFLite's interpreter next to qviz's simulation, show both, offer the file.

The work is a job (:mod:`qviz.app.jobs`; TensorFlow never runs on a request
thread), polled by an interval like the QAT export.
"""

from __future__ import annotations

import math

from dash import Input, Output, State, ctx, dcc, html, no_update

from ..._text import floor_percent
from .. import ids
from ..jobs import poll
from ..services import current


def _db(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value:.2f} dB"


def device_view(check, device) -> list:
    """What TFLite runs and how close qviz's simulation is, as page content."""
    rows = [("SQNR vs float", _db(device.sqnr_qviz_db), _db(device.sqnr_device_db))]
    if device.max_lsb is not None:
        rows.append(("outputs within 1 LSB of qviz", "", f"{floor_percent(device.within_1_lsb, 1)} % "
                                                          f"(max {device.max_lsb:.0f} LSB)"))
    if device.agreement is not None:
        rows.append(("predictions agreeing with qviz", "", f"{100 * device.agreement:.1f} %"))
    rows.append(("model size", "", f"{device.size_bytes / 1024:.1f} KB"))
    rows.append(("float↔int conversions", str(check.boundaries), str(device.ops.get("QUANTIZE", 0)
                                                                      + device.ops.get("DEQUANTIZE", 0))))
    table = html.Table([html.Tr([html.Th(""), html.Th("qviz"), html.Th("TFLite")])]
                       + [html.Tr([html.Td(a), html.Td(b), html.Td(c)]) for a, b, c in rows],
                       className="device-table")
    parts = [html.Div(device.summary(), className="device-summary"), table]
    if device.warning:
        parts.insert(0, html.Div(f"⚠ {device.warning}", className="warning"))
    if check.warnings:
        parts.append(html.Div([html.Div("⚠ TFLite will not run all of this recipe as simulated:"),
                               html.Ul([html.Li(w) for w in check.grouped_warnings(names=8)])], className="warning"))
    if device.float_ops:
        parts.append(html.Div("runs in float on the device: " + ", ".join(device.float_ops), className="warning"))
    worst = device.least_faithful(5)
    if device.faithful_line():
        parts.append(html.Div(device.faithful_line(), className="device-layers"))
    elif worst:
        parts.append(html.Div(f"each of the {len(device.layers)} integer ops given the device's own inputs — the "
                              "least faithful: " + ", ".join(f"{t.layer} {floor_percent(t.within_1_lsb, 1)} % within 1 LSB{t.how}"
                                                             for t in worst), className="device-layers"))
    return parts


def register(app, store) -> None:
    @app.callback(
        Output(ids.TFLITE_FIGURES, "children", allow_duplicate=True),
        Output(ids.TFLITE_STATUS, "children", allow_duplicate=True),
        Input(ids.RECIPE, "data"), State(ids.TFLITE_FIGURES, "children"), State(ids.TFLITE_STATUS, "children"),
        State(ids.SESSION, "data"), prevent_initial_call=True,
    )
    def forget(_data, figures, status, session):
        """Device figures belong to the recipe they were made for: a new recipe (or model) clears them."""
        s = store.require(session)
        job = s.jobs.get("tflite") if s is not None else None
        if job is not None and job.answer is not None:
            del s.jobs["tflite"]
        if job is None and not figures and not status:   # nothing shown: an edit costs the page no update
            return no_update, no_update
        return [], ""

    @app.callback(
        output=dict(file=Output(ids.TFLITE_DOWNLOAD, "data"), stop_polling=Output(ids.TFLITE_POLL, "disabled"),
                    status=Output(ids.TFLITE_STATUS, "children"), figures=Output(ids.TFLITE_FIGURES, "children")),
        inputs=dict(_n=Input(ids.TFLITE_BUTTON, "n_clicks"), _tick=Input(ids.TFLITE_POLL, "n_intervals")),
        state=dict(int8_io=State(ids.TFLITE_INT8_IO, "value"), history=State(ids.RECIPE, "data"),
                   session=State(ids.SESSION, "data")),
        prevent_initial_call=True,
    )
    def export_tflite(_n, _tick, int8_io, history, session):
        s = store.require(session)
        idle = dict(file=no_update, stop_polling=True, status="", figures=no_update)
        if s is None or not history:
            return idle
        if ctx.triggered_id == ids.TFLITE_BUTTON:
            s.start_tflite(current(history), bool(int8_io))
        name = f"{s.file_stem}.tflite"

        def done(answer):
            blob, check, device = answer
            return dict(file=dcc.send_bytes(blob, name), stop_polling=True, status=f"downloaded {name}",
                        figures=device_view(check, device))

        answer = poll(s.jobs.get("tflite"), done=done,
                      running=dict(idle, stop_polling=False, status="converting with TFLite and running it…"),
                      failed=lambda exc: dict(idle, status=f"TFLite export failed: {exc}", figures=[]))
        return idle if answer is None else answer
