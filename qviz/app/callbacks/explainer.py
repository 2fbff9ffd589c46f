"""The fold explainer: the inference fold with this model's numbers, and the
training-mode fold (QAT) beside it, with the formulas of each mode."""

from __future__ import annotations

from dash import Input, Output, State, dcc, html, no_update

from ...ir.ops import DEPTHWISE
from ...layout import ViewKey
from ...render import fold_channels_figure, layer_neighbourhood_figure
from .. import ids

PHASES = {"before": "before the freeze (batch statistics)", "after": "after the freeze (moving statistics)"}


def _layer_of(s, selected):
    return ViewKey(selected["key"]).layer_in(s.graph)


#: Opens the explainer panel (and brings it into view) on *explain this fold*,
#: closes it on *close* or when another model is opened.
SHOW_PANEL = """function (_explain, _close, _model) {
    const opening = dash_clientside.callback_context.triggered_id === '%s';
    if (opening && !_explain) {        // the button was redrawn, not clicked
        return dash_clientside.no_update;
    }
    if (opening) {
        requestAnimationFrame(() => document.getElementById('%s').scrollIntoView({block: 'start'}));
    }
    return !opening;
}""" % (ids.FOLD_EXPLAIN_BUTTON, ids.FOLD_EXPLAINER_PANEL)


def register(app, store) -> None:
    app.clientside_callback(SHOW_PANEL, Output(ids.FOLD_EXPLAINER_PANEL, "hidden"),
                            Input(ids.FOLD_EXPLAIN_BUTTON, "n_clicks"), Input(ids.FOLD_EXPLAINER_CLOSE, "n_clicks"),
                            Input(ids.MODEL_VERSION, "data"), prevent_initial_call=True)

    @app.callback(Output(ids.FOLD_EXPLAINER, "children"), Input(ids.FOLD_EXPLAIN_BUTTON, "n_clicks"),
                  State(ids.SELECTED, "data"), State(ids.SESSION, "data"), prevent_initial_call=True)
    def explain_fold_panel(_n, selected, session):
        from ...analysis.fold_explainer import explain_fold

        s = store.require(session)
        if s is None or not selected:
            return no_update
        try:
            explained = explain_fold(s.graph, _layer_of(s, selected), s.data.calibration)
            return [*_explainer_view(explained), _training_controls()]
        except ValueError as exc:
            return html.Div(str(exc), className="error")

    @app.callback(Output(ids.TRAIN_FOLD_VIEW, "children"), Input(ids.TRAIN_FOLD_MODE, "value"),
                  Input(ids.TRAIN_FOLD_PHASE, "value"), State(ids.SELECTED, "data"), State(ids.SESSION, "data"))
    def training_fold(mode, phase, selected, session):
        from ...analysis.training_fold import TRAINING_FORMULAS, explain_training_fold

        s = store.require(session)
        if s is None or not selected or mode is None:
            return no_update
        layer = _layer_of(s, selected)
        try:
            e = explain_training_fold(s.graph, layer, mode, frozen=phase == "after",
                                      inputs=s.data.calibration)
        except ValueError as exc:
            return html.Div(str(exc), className="error")
        return [dcc.Markdown(TRAINING_FORMULAS[mode], mathjax=True),
                html.P(f"Check on {e.examples} inputs, {PHASES[phase]}: max |Δ| between the training fold "
                       f"and {e.reference} = {e.max_abs_diff:.3g}.", id=ids.TRAIN_FOLD_CHECK),
                html.Div([_layer_figure(e.inference, layer, "inference fold"),
                          _layer_figure(e.graph, layer, f"training fold: {mode}")], className="fold-graphs")]


def _training_controls():
    return html.Div([
        html.H5("Training-mode fold (quantization-aware training)"),
        dcc.RadioItems(id=ids.TRAIN_FOLD_MODE, value="tf_contrib", inline=True,
                       options=[{"label": "TF contrib / TFLite", "value": "tf_contrib"},
                                {"label": "QKeras ema_stats_folding", "value": "ema_stats_folding"},
                                {"label": "QKeras batch_stats_folding", "value": "batch_stats_folding"}]),
        dcc.RadioItems(id=ids.TRAIN_FOLD_PHASE, value="before", inline=True,
                       options=[{"label": v, "value": k} for k, v in PHASES.items()]),
        dcc.Loading(html.Div(id=ids.TRAIN_FOLD_VIEW)),
    ], className="train-fold")


def _layer_figure(graph, layer, title):
    return dcc.Graph(figure=layer_neighbourhood_figure(graph, layer, title), config={"displayModeBar": False},
                     className="fold-graph")


def _explainer_view(e):
    """The fold explainer panel: formulas, this model's numbers, the check."""
    from ...analysis.fold_explainer import FORMULAS

    v = e.values
    ch = list(range(len(v.multiplier)))
    fig = fold_channels_figure(e)
    head = ["channel", "γ", "β", "μ", "σ²", "s = γ/√(σ²+ε)", "t = β − μ·s", "b", "b'"]
    rows = [html.Tr([html.Th(h) for h in head])]
    for c in ch[:8]:
        cells = [c, v.gamma[c], v.beta[c], v.mean[c], v.variance[c], v.multiplier[c], v.offset[c],
                 v.bias[c], v.folded_bias[c]]
        rows.append(html.Tr([html.Td(f"{x:.4g}" if isinstance(x, float) or hasattr(x, "dtype") else x)
                             for x in cells]))
    notes = [f"{e.layer} ({e.op}, weights {list(e.weights_shape)}) absorbs {e.bn_layer} "
             f"({e.kind} batch norm), ε = {v.epsilon:g}."]
    if e.op == DEPTHWISE:
        notes.append(f"Depthwise: s is laid out as [in, multiplier] = {list(e.weights_shape[2:])} "
                     "to scale the kernel [h, w, in, multiplier].")
    notes.append(f"Check on {e.examples} inputs: max |Δ| between the folded layer and "
                 f"layer → batch norm = {e.max_abs_diff:.3g}.")
    return [html.Div([
        html.Div([dcc.Markdown(FORMULAS, mathjax=True), *[html.P(n, className="fold-note") for n in notes]]),
        html.Div([html.Div(html.Table(rows, className="fold-table"), className="table-scroll"),
                  html.Div(f"(first {min(8, len(ch))} of {len(ch)} channels)"),
                  dcc.Graph(figure=fig, config={"displayModeBar": False})]),
    ], id=ids.FOLD_EXPLAINER_BODY, className="explainer-columns")]


