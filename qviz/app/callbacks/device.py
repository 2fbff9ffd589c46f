"""The TensorFlow Lite check in the verification panel: convert the recipe, run it
in TFLite's interpreter next to qviz's simulation, show both, offer the file.

The work is a job (:mod:`qviz.app.jobs`; TensorFlow never runs on a request
thread), polled by an interval like the QAT export.
"""

from __future__ import annotations

import math
from pathlib import Path

from dash import Input, Output, State, ctx, dcc, html, no_update

from .. import ids
from ..jobs import poll
from ..services import current


def _db(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value:.2f} dB"


def device_view(check, device) -> list:
    """What TFLite runs and how close qviz's simulation is, as page content."""
    rows = [("SQNR vs float", _db(device.sqnr_qviz_db), _db(device.sqnr_device_db))]
    if device.max_lsb is not None:
        rows.append(("outputs within 1 LSB of qviz", "", f"{100 * device.within_1_lsb:.1f} % "
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
    if check.warnings:
        parts.append(html.Div([html.Div("⚠ TFLite will not run all of this recipe as simulated:"),
                               html.Ul([html.Li(w) for w in check.warnings])], className="warning"))
    if device.float_ops:
        parts.append(html.Div("runs in float on the device: " + ", ".join(device.float_ops), className="warning"))
    worst = sorted(device.layers, key=lambda t: t.within_1_lsb)[:5]
    if worst:
        parts.append(html.Div(f"each of the {len(device.layers)} integer ops given the device's own inputs — the "
                              "least faithful: " + ", ".join(f"{t.layer} {100 * t.within_1_lsb:.1f} % within 1 LSB"
                                                             for t in worst), className="device-layers"))
    return parts


def register(app, store) -> None:
    @app.callback(
        Output(ids.TFLITE_FIGURES, "children", allow_duplicate=True),
        Output(ids.TFLITE_STATUS, "children", allow_duplicate=True),
        Input(ids.RECIPE, "data"), State(ids.SESSION, "data"), prevent_initial_call=True,
    )
    def forget(_data, session):
        """Device figures belong to the recipe they were made for: a new recipe clears them."""
        s = store.require(session)
        job = s.jobs.get("tflite") if s is not None else None
        if job is not None and job.answer is not None:
            del s.jobs["tflite"]
        return [], ""

    @app.callback(
        Output(ids.TFLITE_DOWNLOAD, "data"), Output(ids.TFLITE_POLL, "disabled"),
        Output(ids.TFLITE_STATUS, "children"), Output(ids.TFLITE_FIGURES, "children"),
        Input(ids.TFLITE_BUTTON, "n_clicks"), Input(ids.TFLITE_POLL, "n_intervals"),
        State(ids.TFLITE_INT8_IO, "value"), State(ids.RECIPE, "data"), State(ids.SESSION, "data"),
        prevent_initial_call=True,
    )
    def export_tflite(_n, _tick, int8_io, data, session):
        s = store.require(session)
        if s is None or not data:
            return no_update, True, "", no_update
        if ctx.triggered_id == ids.TFLITE_BUTTON:
            s.start_tflite(current(data), bool(int8_io))
        name = f"{Path(s.name).stem}.tflite"

        def done(answer):
            blob, check, device = answer
            return dcc.send_bytes(blob, name), True, f"downloaded {name}", device_view(check, device)

        running = (no_update, False, "converting with TFLite and running it…", no_update)
        answer = poll(s.jobs.get("tflite"), running=running, done=done,
                          failed=lambda exc: (no_update, True, f"TFLite export failed: {exc}", []))
        return (no_update, True, "", no_update) if answer is None else answer
