"""The selected node's panel (its layer's controls, attributes, constant
histograms, quantization grids) and the verification panel (output error,
accuracy, per-layer SQNR), both polling worker jobs they wait on."""

from __future__ import annotations

import logging
import math
import time

import numpy as np
from dash import ALL, MATCH, Input, Output, State, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from ...analysis.quant_grid import error_split, grids_of_layer, quant_levels
from ...choices import bits_label, bits_menu
from ...layout import ViewKey
from ...passes import Recipe, fold_candidates, quantizable_layers
from ...passes.constants import constant_value
from ...patterns import PatternSyntaxError
from ...render import histogram_figure, layer_error_figure
from ...render.figure import WORST_LAYERS
from .. import ids, navigation, services
from ..errors import failure_of
from ..layout import NO_FIGURE
from ..glossary import term
from ..services import current
from ..redraw import fates_of, pattern_of, view_choice

log = logging.getLogger(__name__)

#: What the node panel's store says while it shows "click a node" (else the shown node's key).
HINT = "hint"


def register(app, store) -> None:
    @app.callback(Output({"type": ids.GRID_VIEW, "layer": MATCH, "tensor": MATCH}, "children"),
                  Input({"type": ids.GRID_BITS, "layer": MATCH, "tensor": MATCH}, "value"),
                  State(ids.RECIPE, "data"), State(ids.SESSION, "data"), prevent_initial_call=True)
    def grid_at_width(bits, history, session):
        # the grid's values are at hand (weights, or the samples already drawn): numpy only
        s = store.require(session)
        where = ctx.outputs_list["id"]
        found = services.grid_values(s, current(history), where["layer"], where["tensor"]) if s and history else None
        if found is None or not isinstance(bits, int) or not 2 <= bits <= 16:
            return no_update
        return grid_parts(*found, bits)

    @app.callback(
        output=dict(body=Output(ids.NODE_PANEL, "children"), why=Output(ids.EXPLAIN, "children"),
                    stop_polling=Output(ids.NODE_PANEL_POLL, "disabled"), shows=Output(ids.NODE_PANEL_SHOWS, "data")),
        inputs=dict(selected=Input(ids.SELECTED, "data"), history=Input(ids.RECIPE, "data"),
                    _tick=Input(ids.NODE_PANEL_POLL, "n_intervals")),
        state=dict(builtin=State(ids.PATTERN_BUILTIN, "value"), text=State(ids.PATTERN_TEXT, "value"),
                   session=State(ids.SESSION, "data"), show=State(ids.SHOW, "value"),
                   view_state=State(ids.VIEW, "data"), shown=State(ids.NODE_PANEL_SHOWS, "data")),
    )
    def node_panel(selected, history, _tick, builtin, text, session, show, view_state, shown):
        s = store.require(session)
        key = ViewKey.parse(selected.get("key")) if selected else None
        if s is None or key is None or not history:
            # What the panel shows decides, not what fired: Dash drops a request still in
            # flight when the same callback fires again, so the one that cleared the
            # selection can be lost to a later edit's (a model opened: the selection is
            # cleared as the answer arrives, its recipe a moment later).
            if shown == HINT:   # the hint is up already: no update (each is work for Dash's renderer)
                ticked = f"{ids.NODE_PANEL_POLL}.n_intervals" in ctx.triggered_prop_ids
                return dict(body=no_update, why=no_update, stop_polling=True if ticked else no_update,
                            shows=no_update)
            return dict(body=html.Div("click a node to see it here"), why="", stop_polling=True, shows=HINT)
        # A tick re-renders: the page keeps the newest render and its poll flag, and
        # stops polling when that render has everything (state kept here could lag
        # behind it when two renders finish out of order).
        started = time.monotonic()
        view_state = view_state or {}
        body, why, waiting = _node_panel(s, key, current(history), builtin, text, show,
                                         opened=set(view_state.get("opened", ())) if view_state.get("blocks") else None)
        log.debug("session %s: node panel of %s in %.2f s", session["sid"][:8], selected["key"],
                  time.monotonic() - started)
        return dict(body=body, why=why, stop_polling=not waiting, shows=selected["key"])

    @app.callback(Output(ids.EXPLAIN, "children", allow_duplicate=True),
                  Input(ids.PATTERN_BUILTIN, "value"), Input(ids.PATTERN_TEXT, "value"),
                  State(ids.SELECTED, "data"), State(ids.RECIPE, "data"), State(ids.SESSION, "data"),
                  State(ids.SHOW, "value"), prevent_initial_call=True)
    def explain_for_pattern(builtin, text, selected, history, session, show):
        """Another pattern: what it says of the selected node (it kept the last pattern's words)."""
        s = store.require(session)
        key = ViewKey.parse(selected.get("key")) if selected else None
        if s is None or key is None or not history or not s.result_ready(current(history)):
            return ""
        recipe = current(history)
        graph, _ = services.shown(s, recipe, view_choice(None, show, None, None))
        return _why(s, graph, key, recipe, builtin, text)

    @app.callback(Output({"type": ids.BLOCK_TOGGLE, "block": ALL}, "children"),
                  Input(ids.VIEW, "data"), State({"type": ids.BLOCK_TOGGLE, "block": ALL}, "id"))
    def block_toggle_words(view_state, toggles):
        """Each block button in the panel says what it will do: open, or close."""
        opened = set((view_state or {}).get("opened", ())) if (view_state or {}).get("blocks") else set()
        return ["close this block" if t["block"] in opened else "open this block" for t in toggles]

    @app.callback(Output({"type": ids.BLOCK_LINE, "block": ALL}, "hidden"),
                  Input(ids.VIEW, "data"), State({"type": ids.BLOCK_LINE, "block": ALL}, "id"))
    def block_line_shown(view_state, lines):
        """A layer's "in block …" line is for a view drawn in blocks: ungrouped, it goes."""
        return [not (view_state or {}).get("blocks")] * len(lines)

    @app.callback(
        output=dict(panel=Output(ids.VERIFY_PANEL, "children"), errors=Output(ids.LAYER_ERRORS, "figure"),
                    status=Output(ids.LAYER_ERRORS_STATUS, "children"),
                    stop_polling=Output(ids.VERIFY_POLL, "disabled"),
                    stale=Output(ids.LAYER_ERRORS_FRAME, "className")),
        inputs=dict(drawn=Input(ids.DRAWN, "data"), _tick=Input(ids.VERIFY_POLL, "n_intervals"),
                    show_all=Input(ids.LAYER_ERRORS_ALL, "value"), mode=Input(ids.LAYER_ERRORS_MODE, "value")),
        state=dict(session=State(ids.SESSION, "data"), shown=State(ids.LAYER_ERRORS, "figure")),
    )
    def verification(drawn, _tick, show_all, mode, session, shown):
        answer = _verification(drawn, _tick, show_all, mode, session)
        # The last recipe's bars greyed while the new one is verified (they stood as if
        # current): by the recipe the chart will be of against the one drawn, so that each
        # answer says what is so whichever comes last (the page drops a request in flight
        # when the same callback fires again).
        of = chart_recipe(shown) if answer["errors"] is no_update else None   # (a new chart is of the drawn one)
        return {**answer, "stale": "stale" if of is not None and of != drawn else ""}

    def _verification(drawn, _tick, show_all, mode, session):
        # Follows DRAWN (not the recipe), so the redraw comes first; the report
        # runs both graphs in TensorFlow in the worker, and this callback only
        # polls it, so no request is held open while it runs.
        s = store.require(session)
        if s is None or not drawn or not s.latest:
            return dict(panel="", errors=NO_FIGURE, status="", stop_polling=True)
        latest = s.latest   # (read once: another draw may change it meanwhile)
        recipe = Recipe.from_json(latest)
        future = s.report_future(recipe)
        if not future.done():
            if set(ctx.triggered_prop_ids) == {f"{ids.VERIFY_POLL}.n_intervals"}:
                # still running, as the page says already: an answer would only re-render
                # it (each poll's update cost the page ~40 ms of its main thread on MobileNetV2)
                raise PreventUpdate
            return dict(panel=html.Div("verifying: running the original and rewritten graphs…",
                                       className="verify-running"), errors=no_update, status="", stop_polling=False)
        failure = failure_of(future, "the verification")
        if failure is not None:   # (e.g. an op TensorFlow cannot run)
            return dict(panel=html.Div(f"verification failed: {failure}", className="error"), errors=NO_FIGURE,
                        status="", stop_polling=True)
        rep = future.result()
        quantized = set(recipe.quantize_config(s.graph).layers)
        if quantized:
            s.samples_future(recipe)   # the grids' activation samples next, so a selected layer draws at once
        panel, limit = _report_view(rep, s.data.origin), None if show_all else WORST_LAYERS
        errors, status = rep.layers, ""
        if mode == "local":   # a second job: the cut graph costs seconds on a big model
            local = s.report_future(recipe, local=True)
            if not local.done():
                return dict(panel=panel, errors=no_update, stop_polling=False,
                            status="measuring each layer's own error (the float model's values at its inputs)…")
            failure = failure_of(local, "the local per-layer error")
            if failure is not None:
                return dict(panel=panel, errors=NO_FIGURE, stop_polling=True, status=f"local error failed: {failure}")
            errors = local.result().local_layers
        figure = layer_error_figure([e.layer for e in errors], [e.sqnr_db for e in errors],
                                    quantized=quantized, limit=limit, mode=mode or "accumulated",
                                    examples=rep.layer_examples)
        figure.update_layout(meta={"recipe": latest})   # what the chart is of (chart_recipe)
        return dict(panel=panel, errors=figure, status=status, stop_polling=True)


def chart_recipe(figure) -> str | None:
    """The recipe (JSON) a per-layer chart in the page was made for, or None (no chart).

    >>> chart_recipe({"layout": {"meta": {"recipe": "{}"}}}), chart_recipe({"data": []}), chart_recipe(None)
    ('{}', None, None)
    """
    meta = ((figure or {}).get("layout") or {}).get("meta") if isinstance(figure, dict) else None
    recipe = meta.get("recipe") if isinstance(meta, dict) else None
    return recipe if isinstance(recipe, str) else None


def _node_panel(s, key: ViewKey, recipe: Recipe, builtin, text, show, opened: set | None = None):
    """(panel content, explanation, still waiting for the worker). ``opened``: the ids of
    the blocks opened when the view draws blocks (None: it does not), so a layer's panel
    names its block and offers to close it."""
    if key.is_block:
        return _block_panel(s, key, recipe, opened or set()), "", False
    panel, why, waiting = _item_panel(s, key, recipe, builtin, text, show)
    block = navigation.block_of_layer(s, key.layer_in(s.graph)) if opened is not None else None
    if block is not None:
        panel = html.Div([panel, html.Div(["in block ", html.B(block.label), " ",
                                           _block_toggle(block.id, block.id in opened)], className="block-line",
                                          id={"type": ids.BLOCK_LINE, "block": block.id})])
    return panel, why, waiting


def _block_toggle(block_id: str, is_open: bool):
    """Opens or closes one block; its words follow the view (``block_toggle_words``)."""
    return html.Button("close this block" if is_open else "open this block",
                       id={"type": ids.BLOCK_TOGGLE, "block": block_id}, className="block-toggle")


def _why(s, graph, key: ViewKey, recipe: Recipe, builtin, text) -> str:
    """What the Patterns box says of the selected layer or op in the shown ``graph``: in which
    match, and what became of it, or why it matches nowhere ('' for a pattern that does not parse)."""
    try:
        pattern, fates = pattern_of(builtin, text), fates_of(s, recipe, builtin, text)
    except PatternSyntaxError:
        return ""
    if key.is_layer:
        return services.why(fates, graph, pattern, key.name) if key.name in graph.layers else ""
    return services.why(fates, graph, pattern, graph.node(key.name).layer, node=key.name) if key.name in graph else ""


def _item_panel(s, key: ViewKey, recipe: Recipe, builtin, text, show):
    """A layer's or an op's panel: (content, explanation, still waiting for the worker)."""
    if not s.result_ready(recipe):
        # the recipe's calibration is running in the worker: its controls now, the rest when ready
        layer = key.layer_in(s.graph)
        if layer is None:
            return html.Div(f"{key.name}: applying the recipe…"), "", True
        return html.Div([html.B(f"layer {layer}"), _controls(s.graph, recipe, layer),
                         html.Div("applying the recipe (calibrating in the worker)…",
                                  className="verify-running")]), "", True
    graph, _ = services.shown(s, recipe, view_choice(None, show, None, None))
    why = _why(s, graph, key, recipe, builtin, text)
    if key.is_layer:
        layer = key.name
        if layer not in graph.layers:
            return html.Div(f"layer {layer} (removed by the rewrite)"), "", False
        nodes = graph.layer_nodes(layer)
        ops = [n for n in nodes if not graph.is_constant(n)]    # counted as the graph's hover counts them
        body = [html.B(f"layer {layer}"), _controls(s.graph, recipe, layer),
                html.Div(f"{len(ops)} ops: " + ", ".join(sorted({n.op for n in ops}))
                         + f"; {len(nodes) - len(ops)} constants (weights and their reads, not drawn)")]
    else:
        if key.name not in graph:
            return html.Div(f"{key.name} (removed by the rewrite)"), "", False
        node = graph.node(key.name)
        layer = node.layer
        # the layer's controls first: attributes and histograms can be long
        body = [html.B(node.name), html.Div(f"op {node.op}, layer {layer}"), _controls(s.graph, recipe, layer)]
        body += [html.Div(f"{k} = {_short(v)}") for k, v in node.attrs.items() if k != "value"]
        body += [_constant_histogram(graph, t) for t in node.inputs if graph.is_constant(t)]
    grids, waiting = _grids(s, graph, layer, recipe)
    return html.Div([b for b in body if b is not None] + grids), why, waiting


def _constant_histogram(graph, tensor):
    """The histogram of a float constant input (weights, a bias), or None (numpy
    only: a constant TensorFlow would have to evaluate gets none on a request)."""
    try:
        v = constant_value(graph, tensor, tensorflow=False)
    except Exception:  # not evaluable without TensorFlow, or at all: no histogram
        return None
    if v.size > 1 and np.issubdtype(v.dtype, np.floating):
        return dcc.Graph(figure=histogram_figure(v, f"{tensor} {list(v.shape)}"), config={"displayModeBar": False})
    return None


def _grids(s, graph, layer, recipe):
    """(quantization grids of the selected layer: weights and its activation, levels
    drawn over; whether activation samples are still being computed in the worker)."""
    if graph is s.graph:
        return [], False
    grids = grids_of_layer(graph, layer)
    out = []
    activations = [g.tensor for g in grids if g.kind != "weights"]
    samples = s.samples_future(recipe) if activations else None
    # read once: a job that ends between two reads left the panel saying "sampling…" with
    # its poll stopped, and the activation grid never came (a test waited 120 s for it)
    pending = samples is not None and not samples.done()
    if pending:
        grids = [g for g in grids if g.kind == "weights"]
        out.append(html.Div("sampling the activations in the worker…", className="verify-running",
                            id=ids.GRID_WAITING))
    elif samples is not None and samples.exception() is not None:
        grids = [g for g in grids if g.kind == "weights"]
        out.append(html.Div(f"activation samples failed: {failure_of(samples, 'the activation samples')}",
                            className="error"))
    for g in grids:
        values = g.values if g.kind == "weights" else samples.result().get(g.tensor)
        if values is None:   # should not happen: the job samples every activation quantizer
            out.append(html.Div(f"no activation samples of {g.tensor}", className="error"))
            continue
        where = {"layer": layer, "tensor": g.tensor}
        out.append(html.Div(grid_parts(g, values, g.bits), id={"type": ids.GRID_VIEW, **where}))
        # other widths on the same range: the levels and the error redrawn (numpy, no job)
        out.append(html.Div([html.Span("try another width: ", className="muted"), dcc.Slider(
            id={"type": ids.GRID_BITS, **where}, min=2, max=max(8, g.bits), step=1, value=g.bits,
            marks={b: str(b) for b in range(2, max(8, g.bits) + 1)})], className="grid-bits"))
    return out, pending


def grid_parts(g, values, bits: int):
    """A quantization grid at ``bits`` on the grid's own range: the histogram with the
    levels over it, and the error split into rounding and clipping."""
    lo, hi = float(np.ravel(g.lo)[0]), float(np.ravel(g.hi)[0])
    title = (f"{g.kind} at {bits} bits ({'narrow' if g.narrow_range else 'full'} range, "
             f"{'per-channel, channel 0' if g.per_channel else 'per-tensor'}): [{lo:.3g}, {hi:.3g}]")
    shown = values if not g.per_channel else np.asarray(values)[..., 0]
    fig = histogram_figure(shown, title, quant_levels(lo, hi, bits, g.narrow_range))
    split = error_split(shown, lo, hi, bits, g.narrow_range)
    return [dcc.Graph(figure=fig, config={"displayModeBar": False}, className="quant-grid"),
            html.Div([term("rounding"), " and ", term("clipping"), ": " + split.summary()], className="grid-error")]


def _report_view(rep, origin: str):
    sq = "∞" if math.isinf(rep.sqnr_db) else f"{rep.sqnr_db:.1f}"
    lines = [html.Div([f"output error on {rep.examples} examples ({origin}): ", term("max |Δ|"),
                       f" {rep.max_abs:.3g}, ", term("relative"), f" {rep.rel_err:.3g}, ", term("SQNR"), f" {sq} dB"],
                      className="verify-output")]
    if rep.accuracy is not None:
        lines.append(html.Div(f"test accuracy: {rep.accuracy_before:.2%} → {rep.accuracy:.2%}",
                              id=ids.VERIFY_ACCURACY))
    if rep.warning:
        lines.insert(0, html.Div(f"⚠ {rep.warning}", className="warning", id=ids.VERIFY_WARNING))
    return lines


def _short(v) -> str:
    text = repr(v)
    return text if len(text) < 80 else text[:77] + "…"


def _block_panel(s, key: ViewKey, recipe: Recipe, opened: set):
    """A closed block: its layers in order, each with what the recipe does to it."""
    found = navigation.block_rows(s, key.name, recipe)
    if found is None:
        return html.Div(f"no block {key.name} in this model")
    block, rows = found
    return html.Div([
        html.B(f"block {block.label}"), " ", _block_toggle(block.id, block.id in opened),
        html.Div(f"{len(rows)} layers, {rows[0][0]} … {rows[-1][0]}. Closed, a block is drawn as one node; "
                 "opened, its layers are drawn in a dashed frame. Collapse all (above the graph) closes every block.",
                 className="hint"),
        html.Ol([html.Li([name, " ", html.Span(badge, className="legend-badge") if badge else ""])
                 for name, badge in rows], className="block-layers"),
    ], className="block-panel")


def _controls(graph, recipe, layer):
    """The same fold/bit controls as the table, for the selected layer (pattern-matching ids)."""
    out = []
    foldable = {c.layer for c in fold_candidates(graph) if c.foldable}
    if layer in foldable:
        out.append(dcc.Checklist(id={"type": ids.LAYER_FOLD, "layer": layer},
                                 options=[{"label": " fold batch norm", "value": "fold"}],
                                 value=["fold"] if recipe.folds(layer) else []))
    if layer in quantizable_layers(graph):
        bits = recipe.bits(layer)
        menus = []
        for type_, label, value in ((ids.LAYER_WBITS, "weight bits", bits.weight_bits if bits else None),
                                    (ids.LAYER_ABITS, "activation bits", bits.activation_bits if bits else None)):
            menus.append(html.Label([label, dcc.Dropdown(id={"type": type_, "layer": layer}, options=bits_menu(value),
                                                         value=bits_label(value), clearable=False)]))
        out.append(html.Div(menus, className="bit-menus"))
    pair = services.fold_layer_of(graph, layer)
    if pair is not None and pair != layer:     # the batch norm of a fold: the lesson starts here too
        out.append(html.Div(f"{layer} is the batch norm after {pair}: folding merges it into {pair}'s "
                            "weights and bias.", className="fold-note"))
    if pair is not None:
        # the explainer opens full width under the graph (callbacks/explainer.py)
        out.append(html.Button("explain this fold" + (f" ({pair} + {layer})" if pair != layer else ""),
                               id={"type": ids.FOLD_EXPLAIN_BUTTON, "layer": pair}, className="fold-explain-button"))
    return html.Div(out, className="layer-controls")
