"""Editing the recipe: the layer table, bulk actions, side-panel controls, undo/redo, files."""

from __future__ import annotations

import logging

import base64
from dataclasses import replace

from dash import ALL, Input, Output, State, ctx, dcc, no_update

from ...choices import bits_label, parse_bits_label
from ...passes import LayerBits, Recipe, RecipeError, fold_candidates, quantizable_layers, quantizable_units
from .. import ids


log = logging.getLogger(__name__)



def on_tflite(layer: str, fates) -> tuple[str, str]:
    """(short, full) of what TFLite runs for this layer: its fates in the deployability check."""
    if not fates:
        return "float", f"{layer} stays float"
    worst = next((f for f in fates if f.status == "refused"), None) or \
        next((f for f in fates if f.status != "honoured"), None)
    if worst is None:
        return " + ".join(f.runs_as for f in fates) + " ✓", "; ".join(f.message for f in fates)
    if worst.status == "refused":
        return "✗ refused", worst.message
    if worst.status in ("float", "implicit", "dynamic"):
        return f"⚠ {worst.status}", worst.message
    return f"⚠ {worst.part} {worst.status}", worst.message


def layer_rows(graph, recipe: Recipe, check=None) -> list[dict]:
    """One row per foldable-or-quantizable layer, for the table; ``check``: the
    recipe's :class:`~qviz.analysis.deployability.DeployCheck` for the *on TFLite* column."""
    fates_of: dict = {}
    for f in (check.fates if check is not None else ()):
        fates_of.setdefault(f.layer, []).append(f)
    folds = {}
    for c in fold_candidates(graph):
        if c.layer is not None:
            folds[c.layer] = c
    with_weights = set(quantizable_layers(graph))
    quantizable = set(quantizable_units(graph))   # and bypass Adds: activations only
    rows = []
    for layer in graph.layers:
        if layer not in folds and layer not in quantizable:
            continue
        c = folds.get(layer)
        bits = recipe.bits(layer) if layer in quantizable else None
        short, full = on_tflite(layer, fates_of.get(layer))
        rows.append({
            "layer": layer, "batch_norm": c.bn_layer if c else "",
            "foldable": "yes" if c and c.foldable else ("no" if c else "—"),
            "fold": bool(c and c.foldable and recipe.folds(layer)),
            "weight_bits": bits_label(bits.weight_bits if bits else None) if layer in with_weights else "—",
            "activation_bits": bits_label(bits.activation_bits if bits else None),
            "tflite": short, "tflite_why": full,
            "why": (c.reason or "") if c else "",
        })
    return rows


def shows(recipe: Recipe, layer: str, field: str, value) -> bool:
    """Whether a control of ``layer`` showing ``value`` agrees with the recipe already.

    >>> r = Recipe(fold_default=True, quantize_default=LayerBits(8, 8))
    >>> shows(r, "conv1", "fold", True), shows(r, "conv1", "weight_bits", "8"), shows(r, "conv1", "weight_bits", "4")
    (True, True, False)
    """
    if field == "fold":
        return recipe.folds(layer) == bool(value)
    bits = recipe.bits(layer)
    return bits_label(getattr(bits, field) if bits else None) == value


def set_layer(recipe: Recipe, layer: str, field: str, value) -> Recipe:
    """The recipe with one table cell changed."""
    if field == "fold":
        return recipe.with_fold(layer, bool(value))
    old = recipe.bits(layer) or LayerBits(None, None)
    new = {"weight_bits": old.weight_bits, "activation_bits": old.activation_bits}
    new[field] = parse_bits_label(value)
    bits = None if new["weight_bits"] is None and new["activation_bits"] is None else LayerBits(**new)
    return recipe.with_bits(layer, bits)


def bulk(graph, recipe: Recipe, action: str) -> Recipe:
    layers = list(quantizable_layers(graph))
    if action == ids.BULK_8:
        return replace(recipe, quantize_default=LayerBits(8, 8), quantize_layers={})
    if action == ids.BULK_FIRST_LAST:
        edge = {layers[0], layers[-1]} if layers else set()
        return replace(recipe, quantize_layers={
            name: LayerBits(8, 8) if name in edge else LayerBits(4, 4) for name in layers})
    if action == ids.BULK_FOLD:
        return replace(recipe, fold_default=True, fold_layers={})
    return Recipe(fold_default=False, quantize_default=None)


def current(data) -> Recipe:
    return Recipe.from_dict(data["history"][data["pos"]])


def push(data, recipe: Recipe) -> dict:
    history = data["history"][: data["pos"] + 1] + [recipe.to_dict()]
    return {"history": history[-50:], "pos": min(len(history), 50) - 1}


def register(app, store) -> None:
    # The table follows the drawn recipe, not the recipe store: on a big model the
    # graph is what the user waits for, so it is drawn first and the table after.
    @app.callback(Output(ids.GRID, "rowData"), Input(ids.DRAWN, "data"), State(ids.SESSION, "data"))
    def rows(drawn, session):
        s = store.require(session)
        if s is None or not drawn:
            return []
        recipe = Recipe.from_json(drawn)
        # the check the drawing made (cached; it runs no TensorFlow)
        return layer_rows(s.graph, recipe, s.check(recipe))

    @app.callback(
        Output(ids.RECIPE, "data"), Output(ids.RECIPE_ERROR, "children"),
        Input(ids.GRID, "cellValueChanged"),
        Input(ids.BULK_8, "n_clicks"), Input(ids.BULK_FIRST_LAST, "n_clicks"),
        Input(ids.BULK_FOLD, "n_clicks"), Input(ids.BULK_RESET, "n_clicks"),
        Input(ids.UNDO, "n_clicks"), Input(ids.REDO, "n_clicks"),
        Input({"type": ids.LAYER_FOLD, "layer": ALL}, "value"),
        Input({"type": ids.LAYER_WBITS, "layer": ALL}, "value"),
        Input({"type": ids.LAYER_ABITS, "layer": ALL}, "value"),
        Input(ids.RECIPE_UPLOAD, "contents"),
        State(ids.RECIPE, "data"), State(ids.SESSION, "data"),
        prevent_initial_call=True,
    )
    def edit(changed, *args):
        data, session = args[-2], args[-1]
        upload = args[-3]
        s = store.require(session)
        trig = ctx.triggered_id
        if s is None or not data or trig is None:
            return no_update, no_update
        recipe = current(data)
        if trig == ids.UNDO:
            return ({**data, "pos": max(0, data["pos"] - 1)}, "")
        if trig == ids.REDO:
            return ({**data, "pos": min(len(data["history"]) - 1, data["pos"] + 1)}, "")
        if trig == ids.GRID:
            for change in (changed if isinstance(changed, list) else [changed]):
                if change and change.get("colId") in ("fold", "weight_bits", "activation_bits"):
                    recipe = set_layer(recipe, change["data"]["layer"], change["colId"], change["value"])
        elif trig in (ids.BULK_8, ids.BULK_FIRST_LAST, ids.BULK_FOLD, ids.BULK_RESET):
            recipe = bulk(s.graph, recipe, trig)
        elif trig == ids.RECIPE_UPLOAD:
            try:
                text = base64.b64decode(upload.split(",", 1)[1]).decode("utf-8")
                recipe = Recipe.from_json(text).validate(s.graph)
            except (RecipeError, UnicodeDecodeError, IndexError, ValueError) as exc:
                return no_update, f"recipe not loaded: {exc}"
        elif isinstance(trig, dict):
            value = ctx.triggered[0]["value"]
            field = {ids.LAYER_FOLD: "fold", ids.LAYER_WBITS: "weight_bits",
                     ids.LAYER_ABITS: "activation_bits"}[trig["type"]]
            if field == "fold":
                value = bool(value)
            if shows(recipe, trig["layer"], field, value):
                # the panel's controls were (re)drawn showing the recipe: a selection, not an edit
                return no_update, ""
            recipe = set_layer(recipe, trig["layer"], field, value)
        if recipe == current(data):
            return no_update, ""
        log.info("session %s: recipe edited (%s)", session["sid"][:8], trig)
        return push(data, recipe), ""

    @app.callback(Output(ids.DOWNLOAD_RECIPE, "data"), Input(ids.DOWNLOAD_RECIPE_BUTTON, "n_clicks"),
                  State(ids.RECIPE, "data"), prevent_initial_call=True)
    def download_recipe(_, data):
        return dcc.send_string(current(data).to_json(), "recipe.json")

    @app.callback(Output(ids.DOWNLOAD_MODEL, "data"), Input(ids.DOWNLOAD_MODEL_BUTTON, "n_clicks"),
                  State(ids.RECIPE, "data"), State(ids.SESSION, "data"), prevent_initial_call=True)
    def download_model(_, data, session):
        s = store.require(session)
        if s is None:
            return no_update
        graph = s.result(current(data)).graph
        return dcc.send_bytes(graph.to_graph_def().SerializeToString(), f"{s.name.rsplit('.', 1)[0]}_qviz.pb")
