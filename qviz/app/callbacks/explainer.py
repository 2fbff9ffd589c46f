"""The fold explainer: the inference fold with this model's numbers, and the
training-mode fold (QAT) beside it, with the formulas of each mode."""

from __future__ import annotations

from dash import ALL, MATCH, Input, Output, State, ctx, dcc, html, no_update

from ...ir.ops import DEPTHWISE
from ...layout import ViewKey
from ...choices import SWEEP_BITS, bits_label
from ...render import (channel_ranges_figure, fold_channels_figure, fold_orders_figure,
                       layer_neighbourhood_figure)
from .. import ids, services
from ..glossary import glossary_view, term
from ..jobs import poll
from ..services import current

PHASES = {"before": "before the freeze (batch statistics)", "after": "after the freeze (moving statistics)"}


def _layer_of(s, selected):
    key = ViewKey.parse(selected.get("key"))
    return key.layer_in(s.graph) if key is not None else None


#: Opens the explainer panel (and brings it into view) on *explain this fold* (a
#: pattern-matching button in the side panel: there only while a fold's layer is
#: selected) or *Learn BN folding*; closes it on *close* or when another model is opened.
SHOW_PANEL = """function (_explain, _learn, _close, _model) {
    const trig = dash_clientside.callback_context.triggered_id;
    const opening = trig === '%s' || (trig && trig.type === '%s');
    if (opening && !dash_clientside.callback_context.triggered[0].value) {   // a button drawn, not clicked
        return dash_clientside.no_update;
    }
    if (opening) {
        requestAnimationFrame(() => document.getElementById('%s').scrollIntoView({block: 'start'}));
    }
    return !opening;
}""" % (ids.LEARN_BUTTON, ids.FOLD_EXPLAIN_BUTTON, ids.FOLD_EXPLAINER_PANEL)

#: The side panel's *explain this fold* buttons (one at most: the selected layer's).
EXPLAIN_BUTTONS = Input({"type": ids.FOLD_EXPLAIN_BUTTON, "layer": ALL}, "n_clicks")


def register(app, store) -> None:
    app.clientside_callback(SHOW_PANEL, Output(ids.FOLD_EXPLAINER_PANEL, "hidden"),
                            EXPLAIN_BUTTONS, Input(ids.LEARN_BUTTON, "n_clicks"),
                            Input(ids.FOLD_EXPLAINER_CLOSE, "n_clicks"),
                            Input(ids.MODEL_VERSION, "data"), prevent_initial_call=True)

    @app.callback(
        output=dict(view=Output(ids.FOLD_EXPLAINER, "children"), stop_polling=Output(ids.FOLD_EXPLAIN_POLL, "disabled")),
        inputs=dict(_n=EXPLAIN_BUTTONS, _learn=Input(ids.LEARN_BUTTON, "n_clicks"),
                    _tick=Input(ids.FOLD_EXPLAIN_POLL, "n_intervals")),
        state=dict(session=State(ids.SESSION, "data"), history=State(ids.RECIPE, "data")),
        prevent_initial_call=True)
    def explain_fold_panel(_n, _learn, _tick, session, history):
        # The fold is checked by running the graph: a job, polled (no TensorFlow on a request).
        s = store.require(session)
        trig = ctx.triggered_id
        if s is None:
            return dict(view=no_update, stop_polling=True)
        if trig != ids.FOLD_EXPLAIN_POLL:
            if not ctx.triggered[0]["value"]:      # a button drawn with the panel, not clicked
                return dict(view=no_update, stop_polling=no_update)
            # the layer whose button it is (a conv, or named for its batch norm); "learn": the first fold
            layer = services.fold_layer_of(s.graph, trig["layer"] if isinstance(trig, dict) else None)
            if layer is None:
                return dict(view=html.Div(f"{s.name} has no batch norm that folds: nothing to explain here "
                                          "(try the lenet_digits sample)", className="error"), stop_polling=True)
            s.start("explain", "explain_fold", s.key, s.graph, layer, key=layer)
        answer = poll(s.jobs.get("explain"),
                      running=dict(view=html.Div("explaining the fold: running the layer and its batch norm…",
                                                 className="verify-running"), stop_polling=False),
                      done=lambda e: dict(view=[*_fold_off_note(e, history), *_explainer_view(e),
                                                _channel_controls(e.layer, history),
                                                *_orders_view(e.orders, history), _training_controls()],
                                          stop_polling=True),
                      failed=lambda exc: dict(view=html.Div(str(exc), className="error"), stop_polling=True))
        return answer or dict(view=no_update, stop_polling=True)

    @app.callback(Output(ids.SELECTED, "data", allow_duplicate=True), Input(ids.LEARN_BUTTON, "n_clicks"),
                  State(ids.SESSION, "data"), prevent_initial_call=True)
    def learn_selects_the_first_fold(_n, session):
        s = store.require(session)
        layer = services.fold_layer_of(s.graph, None) if s is not None else None
        return {"key": str(ViewKey.layer(layer)), "center": True} if layer else no_update

    @app.callback(Output({"type": ids.CHANNEL_RANGES, "layer": MATCH}, "children"),
                  Input({"type": ids.CHANNEL_BITS, "layer": MATCH}, "value"),
                  State(ids.SESSION, "data"), State(ids.RECIPE, "data"))
    def channel_ranges_view(bits, session, history):
        # weight constants only (no TensorFlow): ~1 ms a layer, fine on a request
        s = store.require(session)
        if s is None or not history:
            return no_update
        try:
            r = services.channel_ranges_for(s, ctx.outputs_list["id"]["layer"], bits, current(history))
        except ValueError as exc:
            return html.Div(str(exc), className="error")
        return [html.P(r.summary(), className="fold-note channel-summary"),
                _scheme_table(r),
                dcc.Graph(figure=channel_ranges_figure(r), config={"displayModeBar": False})]

    @app.callback(
        output=dict(view=Output(ids.TRAIN_FOLD_VIEW, "children"), stop_polling=Output(ids.TRAIN_FOLD_POLL, "disabled")),
        inputs=dict(mode=Input(ids.TRAIN_FOLD_MODE, "value"), phase=Input(ids.TRAIN_FOLD_PHASE, "value"),
                    _tick=Input(ids.TRAIN_FOLD_POLL, "n_intervals")),
        state=dict(selected=State(ids.SELECTED, "data"), session=State(ids.SESSION, "data")))
    def training_fold(mode, phase, _tick, selected, session):
        s = store.require(session)
        if s is None or mode is None:
            return dict(view=no_update, stop_polling=True)
        if ctx.triggered_id != ids.TRAIN_FOLD_POLL:
            # the layer the explainer above explains (the selection may have moved on since)
            explained = s.jobs.get("explain")
            layer = explained.key if explained is not None else services.fold_layer_of(
                s.graph, _layer_of(s, selected) if selected else None)
            s.start("training", "explain_training", s.key, s.graph, layer, mode, phase == "after",
                    key=(layer, mode, phase))
        job = s.jobs.get("training")
        answer = poll(job, running=dict(view=html.Div("building the training-mode fold and running it…",
                                                      className="verify-running"), stop_polling=False),
                      done=lambda e: dict(view=_training_view(e, *job.key), stop_polling=True),
                      failed=lambda exc: dict(view=html.Div(str(exc), className="error"), stop_polling=True))
        return answer or dict(view=no_update, stop_polling=True)


def _training_view(e, layer, mode, phase):
    from ...analysis.training_fold import TRAINING_FORMULAS

    return [dcc.Markdown(TRAINING_FORMULAS[mode], mathjax=True),
            html.P(f"Check on {e.examples} inputs, {PHASES[phase]}: max |Δ| between the training fold "
                   f"and {e.reference} = {e.max_abs_diff:.3g}.", id=ids.TRAIN_FOLD_CHECK),
            html.Div([_layer_figure(e.inference, layer, "inference fold"),
                      _layer_figure(e.graph, layer, f"training fold: {mode}")], className="fold-graphs")]


def _fold_off_note(e, history) -> list:
    """A line above the explanation when the recipe leaves this fold off: the page explains
    what folding would do, and said "absorbs" as if it did."""
    recipe = current(history) if history else services.START_RECIPE
    if recipe.folds(e.layer):
        return []
    return [html.P(f"Your recipe leaves this fold off ({e.bn_layer} stays a batch norm after {e.layer}): "
                   "below is what folding it would do.", className="fold-note warning")]


def _channel_controls(layer, history):
    recipe = current(history) if history else services.START_RECIPE
    bits = services.channel_bits(recipe, layer)
    scheme = "per-channel" if recipe.per_channel else "per-tensor"
    return html.Div([
        html.H5("Per-channel weight ranges: why the fold can hurt per-tensor quantization"),
        html.P(["The fold multiplies each output channel's weights by its own s. A per-tensor scale is one "
                "step for all channels, set by the widest; a per-channel scale fits each channel. ",
                html.B(f"Your recipe quantizes weights {scheme}"),
                f" ({'narrow' if recipe.narrow_range else 'full'} range, "
                f"{'symmetric' if recipe.symmetric_weights else 'asymmetric'})."], className="fold-note"),
        dcc.RadioItems(id={"type": ids.CHANNEL_BITS, "layer": layer}, value=bits_label(bits), inline=True,
                       options=[{"label": f"{b} bits", "value": bits_label(b)}
                                for b in sorted({*SWEEP_BITS, bits}, reverse=True)]),
        dcc.Loading(html.Div(id={"type": ids.CHANNEL_RANGES, "layer": layer}), type="dot"),
    ], className="channel-ranges")


def _scheme_table(r):
    """SQNR of the whole kernel, per scheme, before and after the fold."""
    from ...analysis.channel_ranges import SCHEMES, STAGES

    head = html.Tr([html.Th(f"whole kernel at {r.bits} bits")] + [html.Th(s) for s in SCHEMES])
    rows = [html.Tr([html.Th(stage)] + [html.Td(_db(r.error(stage, scheme).sqnr_db)) for scheme in SCHEMES])
            for stage in STAGES]
    return html.Table([head, *rows], className="scheme-table")


def _orders_view(orders, history):
    """The three orders of folding and quantizing this layer, with each one's output error."""
    from ...analysis.fold_orders import ORDERS

    if orders is None:
        return []
    recipe = current(history) if history else services.START_RECIPE
    wanted = services.channel_bits(recipe, orders.layer)
    bits = wanted if wanted in orders.widths else 8
    scheme = "per-channel" if recipe.per_channel else "per-tensor"
    head = html.Tr([html.Th(h) for h in (f"order (weights at {bits} bits)", "who runs it", "compared with",
                                         "per-tensor", "per-channel", f"what TFLite stores ({scheme})")])
    prose = {"textAlign": "left"}
    rows = [html.Tr([html.Th(order), html.Td(who, style=prose), html.Td(ref, style=prose),
                     *[html.Td(_db(orders.result(order, s, bits).sqnr_db)) for s in ("per-tensor", "per-channel")],
                     html.Td(orders.deploys(order, scheme, bits), style=prose)]) for order, (who, ref) in ORDERS.items()]
    return [html.Div([
        html.H5("Fold first, or quantize first? Three orders on this layer"),
        html.P(["The fold and the quantizer do not commute. ", html.B("Fold, then quantize"), " puts the folded "
                "kernel s·w on the grid (what TFLite runs after post-training quantization). ",
                html.B("Quantize, then fold"), " puts the raw kernel w on the grid and folds at conversion "
                "(tfmot's QAT). The ", html.B("training-mode fold"), " quantizes the folded kernel too, but "
                "while training it rescales the output to the batch's own statistics (before "
                "freeze_batch_norm_delay; after it, it is the first order). Only the weights are quantized "
                f"here, so each error is the order's own: SQNR of the batch norm's output on {orders.examples} "
                "of the model's inputs."], className="fold-note"),
        html.P(orders.summary(bits), className="fold-note orders-summary"),
        html.Table([head, *rows], className="scheme-table", id=ids.FOLD_ORDERS_TABLE),
        dcc.Graph(figure=fold_orders_figure(orders), config={"displayModeBar": False}),
    ], className="fold-orders", id=ids.FOLD_ORDERS)]


def _db(x):
    return "∞ (exact)" if x == float("inf") else f"{x:.1f} dB"


def _training_controls():
    return html.Div([
        html.H5("Training-mode fold (quantization-aware training)"),
        dcc.RadioItems(id=ids.TRAIN_FOLD_MODE, value="tf_contrib", inline=True,
                       options=[{"label": "TF contrib / TFLite", "value": "tf_contrib"},
                                {"label": "QKeras ema_stats_folding", "value": "ema_stats_folding"},
                                {"label": "QKeras batch_stats_folding", "value": "batch_stats_folding"}]),
        dcc.RadioItems(id=ids.TRAIN_FOLD_PHASE, value="before", inline=True,
                       options=[{"label": v, "value": k} for k, v in PHASES.items()]),
        html.Div(id=ids.TRAIN_FOLD_VIEW),
        dcc.Interval(id=ids.TRAIN_FOLD_POLL, interval=300, disabled=True),
    ], className="train-fold")


def _layer_figure(graph, layer, title):
    return dcc.Graph(figure=layer_neighbourhood_figure(graph, layer, title), config={"displayModeBar": False},
                     className="fold-graph")


def _explainer_view(e):
    """The fold explainer panel, in the order a newcomer reads it: what a batch norm
    computes, why it merges, one channel worked through with this model's numbers,
    every channel, the check, and the words used (glossary)."""
    from ...analysis.fold_explainer import FORMULAS

    v = e.values
    ch = list(range(len(v.multiplier)))
    fig = fold_channels_figure(e)
    head = ["channel", "γ", "β", "μ", "σ²", "s = γ/√(σ²+ε)", "t = β − μ·s", "b", "b'"]
    rows = [html.Tr([html.Th(h) for h in head])]
    for c in ch:
        cells = [c, v.gamma[c], v.beta[c], v.mean[c], v.variance[c], v.multiplier[c], v.offset[c],
                 v.bias[c], v.folded_bias[c]]
        rows.append(html.Tr([html.Td(f"{x:.4g}" if isinstance(x, float) or hasattr(x, "dtype") else x)
                             for x in cells]))
    notes = [html.P([f"{e.layer} ({e.op}, weights {list(e.weights_shape)}) absorbs {e.bn_layer} (",
                     term("unfused", e.kind), " ", term("batch norm"), f"), ε = {v.epsilon:g}."],
                    className="fold-note")]
    if e.op == DEPTHWISE:
        notes.append(html.P(f"Depthwise: s is laid out as [in, multiplier] = {list(e.weights_shape[2:])} "
                            "to scale the kernel [h, w, in, multiplier].", className="fold-note"))
    notes.append(html.P([f"Check on {e.examples} inputs: ", term("max |Δ|"), " between the folded layer and "
                         f"layer → batch norm = {e.max_abs_diff:.3g}."], className="fold-note"))
    steps = html.Ol([html.Li("What the batch norm computes, and why it can move into the layer (the formulas)."),
                     html.Li("Channel 0 worked through with this model's own numbers."),
                     html.Li(f"Every channel's numbers (all {len(ch)}), and what the fold did to weights and "
                             "biases (the bars)."),
                     html.Li("Below: why the fold can hurt per-tensor quantization, which order of folding "
                             "and quantizing costs what, and the fold as quantization-aware training does "
                             "it.")], className="lesson-steps")
    worked = html.Div([html.B("Channel 0, with this model's numbers:"),
                       *[html.Div(line, className="worked-line") for line in e.worked(0)]],
                      className="worked", id=ids.FOLD_WORKED)
    return [html.Div([
        html.Div([steps, dcc.Markdown(FORMULAS, mathjax=True), worked, *notes]),
        html.Div([html.Div(html.Table(rows, className="fold-table"), className="table-scroll fold-table-box"),
                  html.Div(f"(all {len(ch)} channels; the table scrolls)"),
                  dcc.Graph(figure=fig, config={"displayModeBar": False})]),
    ], id=ids.FOLD_EXPLAINER_BODY, className="explainer-columns"), glossary_view()]

