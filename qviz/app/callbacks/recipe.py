"""Editing the recipe: the layer table, presets, rules, side-panel controls, undo/redo, files.

The edit logic is :mod:`qviz.app.services` (the history, one control's edit,
an uploaded recipe) and :meth:`qviz.Recipe.with_preset`; here, which button
or cell asked for it.
"""

from __future__ import annotations

import json
import logging
import time

from dash import ALL, Input, Output, State, ctx, dcc, no_update, set_props

from ..._text import quote_name
from ...passes import Recipe, RecipeError
from ...render.marks import (BIT_COLORS, FLOAT_BADGE_COLOR, GHOST_OPACITY, HALO_OPACITY, PLAIN_OUTLINE, SELECTED_OUTLINE,
                             STATUS_COLORS, STATUS_OUTLINE_WIDTH)
from .. import ids, redraw, services
from ..errors import USER_ERRORS
from ..services import current

log = logging.getLogger(__name__)

#: Bulk buttons → :data:`qviz.passes.recipe.PRESETS`.
PRESET_OF_BUTTON = {ids.BULK_8: "all-8", ids.BULK_FIRST_LAST: "first-last-8-rest-4", ids.BULK_FOLD: "fold-all",
                    ids.BULK_RESET: "float"}
#: Side-panel controls (pattern-matching id types) → the recipe field they set.
FIELD_OF_CONTROL = {ids.LAYER_FOLD: "fold", ids.LAYER_WBITS: "weight_bits", ids.LAYER_ABITS: "activation_bits"}


#: Numbers each table edit in the browser, where two edits cannot race (the grid's
#: listener, :data:`ON_TABLE_EDIT`, reads the log it writes: Dash's ``set_props`` puts it
#: in the layout at once), stamped with the model it was made on; the server applies
#: what its history has not (services.apply_edits).
LOG_EDITS = """
function (changed, log, version) {
    const fields = %s;
    const before = (log && log.seq) || 0;
    const edits = (log && log.edits) ? log.edits.slice() : [];
    let seq = before;
    for (const c of (Array.isArray(changed) ? changed : [changed])) {
        if (!c || !c.data || fields.indexOf(c.colId) < 0) continue;
        seq += 1;
        edits.push({seq: seq, model: version ? version.t : null, layer: c.data.layer, field: c.colId,
                    value: c.value});
    }
    return seq === before ? dash_clientside.no_update : {seq: seq, edits: edits.slice(-%d)};
}
""" % (list(services.EDITED_FIELDS), services.HISTORY_LIMIT)


#: A fold toggled in the table, drawn on the graph at once as the server's redraw draws it
#: (qviz.render.figure): the layer view keeps every node where it was (an edit is laid out
#: in place: qviz.layout.routes_in_place), so its batch norm fades where it is (removed:
#: ghost opacity, red outline, no match halo), and its conv and the layers after the batch
#: norm (the row's ``after_batch_norm``) get the modified outline; unfolded, all come back as
#: they were before the fold (the batch norm plain, with the halo the redraw drew clear, if
#: the page never saw it unfolded). The redraw then brings what the page cannot know (hover,
#: TFLite marks, the arrowhead into the batch norm). A selected node keeps its black outline. Changed in the plot's SVG,
#: the figure's data and plotly's calcdata (a pan redraws from it). Returns what it faded.
FADE_FOLDED = """
function (gd, edits) {
    const ghost = %s, removed = %s, modified = %s, statusWidth = %s, plain = %s, selected = %s, haloOpacity = %s;
    if (!gd.layout.meta || !gd.layout.meta.diff) return [];   // the original graph: a fold changes nothing there
    const at = gd.data.findIndex(d => d.name === 'nodes');
    const nodes = gd.data[at];
    // (above MAX_SVG_NODES the plot is WebGL: no SVG to restyle, the redraw shows it)
    if (at < 0 || gd._fullData[at].type !== 'scatter' || !nodes.marker || !Array.isArray(nodes.marker.opacity)) return [];
    const line = nodes.marker.line;
    const unfolded = gd.__qvizUnfolded = gd.__qvizUnfolded || {};   // layer → looks before its fold
    const styles = [];
    const restyle = (j, opacity, outline) => {
        if (line.color[j] === selected[0] && line.width[j] === selected[1]) outline = selected;
        styles.push({j: j, opacity: opacity, outline: outline});
    };
    // a folded batch norm's match halo goes (the redraw halos what is left of a match, and
    // draws the rest clear: services.match_marks)
    const halos = gd.data.findIndex(d => d.name === 'matches');
    const haloAt = key => (halos < 0 ? -1 : gd.data[halos].customdata.indexOf(key));
    const haloShown = [];   // {j: halo point, opacity}
    for (const c of edits) {
        if (c.colId !== 'fold' || c.data.foldable !== 'yes' || !c.data.batch_norm) continue;
        const bn = nodes.customdata.indexOf('layer:' + c.data.batch_norm);
        const conv = nodes.customdata.indexOf('layer:' + c.data.layer);
        if (bn < 0) continue;   // not drawn as a layer (op view, a closed block): the redraw shows it
        // the layers after the batch norm now read the conv: changed
        const after = (c.data.after_batch_norm || []).map(l => nodes.customdata.indexOf('layer:' + l)).filter(j => j >= 0);
        const looks = j => (j < 0 ? null : [nodes.marker.opacity[j], [line.color[j], line.width[j]]]);
        const mine = nodes.customdata.length + ':' + c.data.layer;   // (another model's layer of that name is not it)
        const halo = haloAt('layer:' + c.data.batch_norm);
        if (c.value === true) {
            if (nodes.marker.opacity[bn] !== ghost) {
                unfolded[mine] = {bn: looks(bn), conv: looks(conv), after: after.map(looks)};
            }
            restyle(bn, ghost, [removed, statusWidth]);
            if (conv >= 0) restyle(conv, nodes.marker.opacity[conv], [modified, statusWidth]);
            for (const j of after) restyle(j, nodes.marker.opacity[j], [modified, statusWidth]);
            if (halo >= 0) haloShown.push({j: halo, opacity: 0});
        } else {
            // (folded when the page was drawn: how it looked before is not known here; the redraw says)
            const was = unfolded[mine] || {bn: [1, plain], conv: null, after: []};
            restyle(bn, was.bn[0], was.bn[1]);
            if (conv >= 0 && was.conv) restyle(conv, was.conv[0], was.conv[1]);
            after.forEach((j, i) => { if (was.after[i]) restyle(j, was.after[i][0], was.after[i][1]); });
            if (halo >= 0) haloShown.push({j: halo, opacity: haloOpacity});   // (drawn clear while folded)
        }
    }
    if (!styles.length) return [];
    // each point's new looks into the figure's data, plotly's calcdata and the SVG drawn
    const paint = (t, looks) => {
        const marker = gd.data[t].marker, calc = (gd.calcdata && gd.calcdata[t]) || [], points = {};
        const svg = gd.querySelector('.scatterlayer .trace' + gd._fullData[t].uid);
        if (svg) for (const p of svg.querySelectorAll('path.point')) if (p.__data__) points[p.__data__.i] = p;
        for (const s of looks) {
            const c = calc[s.j], p = points[s.j];
            marker.opacity[s.j] = s.opacity;
            if (c) c.mo = s.opacity;
            if (p) p.style.opacity = s.opacity;
            if (!s.outline) continue;
            marker.line.color[s.j] = s.outline[0];
            marker.line.width[s.j] = s.outline[1];
            if (c) { c.mlc = s.outline[0]; c.mlw = s.outline[1]; }
            if (p) { p.style.stroke = s.outline[0]; p.style.strokeWidth = s.outline[1] + 'px'; }
        }
    };
    paint(at, styles);
    if (haloShown.length) paint(halos, haloShown);
    return styles.map(s => ({key: nodes.customdata[s.j], opacity: s.opacity, outline: s.outline}));
}
""" % (json.dumps(GHOST_OPACITY), json.dumps(STATUS_COLORS["removed"]), json.dumps(STATUS_COLORS["modified"]),
       json.dumps(STATUS_OUTLINE_WIDTH), json.dumps(PLAIN_OUTLINE), json.dumps(SELECTED_OUTLINE), json.dumps(HALO_OPACITY))


#: A table edit shown on the graph at once, before the server has redrawn it (~300 ms on
#: MobileNetV2: the edit's request, the draw's, then plotly): the edited layer's badge
#: (:class:`qviz.render.marks.Badge`, by the same rule and colours) is changed in place.
#: Every layer that could carry a badge has one drawn (empty where it says nothing:
#: ``recipe_badges(slots=True)``), and a fold fades its batch norm (:data:`FADE_FOLDED`);
#: the redraw then brings everything else. The badge is written into the plot's SVG itself, placed as plotly places
#: text off a marker's edge (``Plotly.restyle`` redraws the whole plot, ~70 ms on
#: MobileNetV2, time the edit's own request waited for), and into the figure's data;
#: badges hidden at this zoom (the page shows them with the names) are in the data
#: only. The plot then emits ``qviz_preview`` with ``{badges, folds}``, what was drawn
#: (also returned). Called by the grid itself (:data:`ON_TABLE_EDIT`), with the
#: ``cellValueChanged`` entries Dash would get: ``{colId, data, value, oldValue}``.
PREVIEW_EDIT = """
function (changed) {
    const none = dash_clientside.no_update;
    const fields = %s, colors = %s, floatColor = %s, notApplicable = %s;
    const gd = document.querySelector('#graph .js-plotly-plot');
    if (!gd || !gd.data) return none;
    const edits = (Array.isArray(changed) ? changed : [changed]).filter(c => c && c.data);
    const faded = (%s)(gd, edits);
    const at = gd.data.findIndex(d => d.name === 'bits');
    if (at < 0) {
        if (faded.length) gd.emit('qviz_preview', {badges: [], folds: faded});
        return faded.length ? {badges: [], folds: faded} : none;
    }
    const trace = gd.data[at];
    const text = trace.text.slice(), color = trace.textfont.color.slice();
    const width = v => (/^[0-9]+$/.test(String(v)) ? parseInt(v, 10) : null);
    // a badge is drawn with its node's name (assets/graph_view.js thins them together): one
    // whose name is left out at this zoom is only noted, for when it is drawn
    const nodes = gd.data.find(d => d.name === 'nodes');
    const named = key => {
        const j = nodes && nodes.text ? nodes.customdata.indexOf(key) : -1;
        return j < 0 || !!nodes.text[j];
    };
    const drawn = [];
    for (const c of edits) {
        if (fields.indexOf(c.colId) < 0) continue;
        // an edit the server will not take (weights where there are none) is left to it
        if (c.colId === 'weight_bits' && c.oldValue === notApplicable) continue;
        const i = trace.customdata.indexOf('layer:' + c.data.layer);
        if (i < 0) continue;   // no badge drawn there (or inside a closed block): the redraw adds it
        const w = width(c.data.weight_bits), a = width(c.data.activation_bits);
        const folded = c.data.fold === true && c.data.foldable === 'yes';
        const badge = (w ? 'w' + w : '') + (a ? 'a' + a : '') + (folded ? '+bn' : '');
        const narrowest = [w, a].filter(x => x).reduce((m, x) => Math.min(m, x), Infinity);
        const pick = colors.find(([least, _]) => narrowest >= least);
        // (all the badges, which the page thins as the view moves: assets/graph_view.js marksOf)
        if (trace.meta && Array.isArray(trace.meta.texts)) trace.meta.texts[i] = badge;
        if (!named('layer:' + c.data.layer)) continue;
        text[i] = badge;
        color[i] = narrowest === Infinity ? floatColor : (pick ? pick[1] : colors[colors.length - 1][1]);
        drawn.push({layer: c.data.layer, badge: badge, i: i});
    }
    if (!drawn.length && !faded.length) return none;
    const uid = gd._fullData && gd._fullData[at] ? gd._fullData[at].uid : null;
    const svg = uid ? gd.querySelector('.scatterlayer .trace' + uid) : null;
    const group = svg ? svg.querySelector('g.text') : null;
    if (group) {
        const full = gd._fullData[at], xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
        const one = (v, i) => (Array.isArray(v) ? v[i] : v);
        // plotly's text of point i is the g.textpoint bound (d3) to its point; after a redraw a
        // point with no text has none, so the page makes one (plotly's next draw rebinds or drops it)
        const points = {};
        for (const g of group.querySelectorAll('g.textpoint')) {
            const i = g.__data__ && typeof g.__data__.i === 'number' ? g.__data__.i : g.dataset.qvizPoint;
            if (i !== undefined) points[i] = g;
        }
        for (const d of drawn) {
            let point = points[d.i];
            if (!point) {
                point = document.createElementNS('http://www.w3.org/2000/svg', 'g');
                point.setAttribute('class', 'textpoint');
                point.dataset.qvizPoint = d.i;
                group.appendChild(point);
            }
            let el = point.querySelector('text');
            if (!el) {   // an empty slot: placed as plotly places a text off its marker's edge
                const where = String(one(full.textposition, d.i)), size = one(full.textfont.size, d.i);
                const r = one(full.marker.size, d.i) / 2 / 0.8 + 1;
                const h = where.includes('left') ? -1 : where.includes('right') ? 1 : 0;
                const v = where.includes('top') ? -1 : where.includes('bottom') ? 1 : 0;
                el = document.createElementNS('http://www.w3.org/2000/svg', 'text');
                el.setAttribute('x', xa.c2p(trace.x[d.i]));
                el.setAttribute('y', ya.c2p(trace.y[d.i]));
                el.setAttribute('text-anchor', h < 0 ? 'end' : h > 0 ? 'start' : 'middle');
                el.style.fontFamily = one(full.textfont.family, d.i);
                el.style.fontSize = size + 'px';
                point.setAttribute('transform', 'translate(' + h * r + ',' + (size * 0.75 + v * r + (v - 1) * size / 2) + ')');
                point.appendChild(el);
            }
            el.textContent = text[d.i];
            el.style.fill = color[d.i];
        }
    }
    // the figure's data (and plotly's own copy, which a pan redraws from) say the same
    const calc = gd.calcdata && gd.calcdata[at];
    for (const d of drawn) {
        trace.text[d.i] = text[d.i];
        trace.textfont.color[d.i] = color[d.i];
        if (calc && calc[d.i]) { calc[d.i].tx = text[d.i]; calc[d.i].tc = color[d.i]; }
    }
    gd.emit('qviz_preview', {badges: drawn, folds: faded});
    return {badges: drawn, folds: faded};
}
""" % (json.dumps(list(services.EDITED_FIELDS)), json.dumps([list(c) for c in BIT_COLORS]),
       json.dumps(FLOAT_BADGE_COLOR), json.dumps(services.NOT_APPLICABLE), FADE_FOLDED)


#: The rules line (services.rules_line) written in the page: an edit costs no request for
#: it, and no update when the rules stayed the same (each is work for Dash's renderer).
RULES_APPLIED = """
function (history, shown) {
    const rules = history ? (history.history[history.pos].rules || []) : [];
    const line = rules.length ? %s + rules.map((r, i) => (i + 1) + ") " + r).join(%s) : "";
    return line === (shown || "") ? dash_clientside.no_update : line;
}
""" % (json.dumps(services.RULES_LINE["start"]), json.dumps(services.RULES_LINE["join"]))


#: Each table edit, as the grid makes it: logged (:data:`LOG_EDITS`, into the log store,
#: which starts the edit's request), then previewed (:data:`PREVIEW_EDIT`). A listener on
#: the grid itself (attached once its rows are in, again if a new grid comes), not a
#: callback of its ``cellValueChanged`` property: Dash's renderer ran those ~20-30 ms after
#: the edit (the grid's debounce, then a task each, frames painted between them), and the
#: request left ~40 ms after the click. The log and the model's version are read from
#: Dash's layout (``dash_component_api.getLayout``, Dash 3), as a callback's state would be.
#: An edit that could not be logged says so in the alert bar (it would look made in the
#: table and never reach the recipe).
ON_TABLE_EDIT = """
function (rows) {
    const attach = tries => {
        let api = null;
        try { api = dash_ag_grid.getApi(%(grid)s); } catch (e) { api = null; }
        if (!api) {
            if (tries > 0) setTimeout(() => attach(tries - 1), 100);
            else console.warn('qviz: the layer table is not ready; its edits wait for its next rows');
            return;
        }
        if (api.__qvizEdits) return;
        api.__qvizEdits = true;
        const preview = (%(preview)s), logEdits = (%(log)s);
        const data = id => { const c = window.dash_component_api.getLayout(id); return c && c.props ? c.props.data : null; };
        api.addEventListener('cellValueChanged', e => {
            const changed = [{colId: e.column.getColId(), data: e.data, value: e.value, oldValue: e.oldValue}];
            try {
                const logged = logEdits(changed, data(%(edits)s), data(%(version)s));
                if (logged !== dash_clientside.no_update) dash_clientside.set_props(%(edits)s, {data: logged});
            } catch (err) {
                console.error('qviz: a table edit was not sent', err);
                dash_clientside.set_props(%(alert)s, {children: 'error: the edit of ' + changed[0].data.layer +
                    ' was not sent to the server (' + err + '); reload the page', className: 'alert'});
                return;
            }
            try { preview(changed); } catch (err) { console.error('qviz: the edit was not previewed', err); }
        });
    };
    attach(50);
}
""" % {"grid": json.dumps(ids.GRID), "edits": json.dumps(ids.EDIT_LOG), "version": json.dumps(ids.MODEL_VERSION),
       "alert": json.dumps(ids.ALERT), "preview": PREVIEW_EDIT.strip(), "log": LOG_EDITS.strip()}


def register(app, store) -> None:
    app.clientside_callback(ON_TABLE_EDIT, Input(ids.GRID, "rowData"))

    # The table follows the drawn recipe, not the recipe store: on a big model the
    # graph is what the user waits for, so it is drawn first and the table after.
    @app.callback(Output(ids.GRID, "rowData"), Input(ids.DRAWN, "data"), State(ids.SESSION, "data"))
    def rows(drawn, session):
        s = store.require(session)
        if s is None or not drawn:
            return []
        recipe = Recipe.from_json(drawn)
        # the check the drawing made (cached; it runs no TensorFlow)
        return services.layer_rows(s.graph, recipe, s.check(recipe))

    @app.callback(
        output=dict(history=Output(ids.RECIPE, "data"), error=Output(ids.RECIPE_ERROR, "children"),
                    redrawn=redraw.outputs(duplicate=True)),
        inputs=dict(edit_log=Input(ids.EDIT_LOG, "data"),
                    presets={button: Input(button, "n_clicks") for button in PRESET_OF_BUTTON},
                    _undo=Input(ids.UNDO, "n_clicks"), _redo=Input(ids.REDO, "n_clicks"),
                    _controls=[Input({"type": kind, "layer": ALL}, "value") for kind in FIELD_OF_CONTROL],
                    upload=Input(ids.RECIPE_UPLOAD, "contents"),
                    _rule_button=Input(ids.RULE_APPLY, "n_clicks"), _rule_enter=Input(ids.RULE_INPUT, "n_submit")),
        state=dict(history=State(ids.RECIPE, "data"), session=State(ids.SESSION, "data"),
                   rule=State(ids.RULE_INPUT, "value"), upload_name=State(ids.RECIPE_UPLOAD, "filename"),
                   version=State(ids.MODEL_VERSION, "data"), page=redraw.page_of(State),
                   drawn=State(ids.DRAWN, "data")),
        prevent_initial_call=True,
    )
    def edit(edit_log, presets, _undo, _redo, _controls, upload, _rule_button, _rule_enter, history, session, rule,
             upload_name, version, page, drawn):
        s = store.require(session)
        if s is None or not history or ctx.triggered_id is None:
            return dict(history=no_update, error=no_update, redrawn=redraw.NOT_REDRAWN)
        answer = _edited(s, history, session, edit_log, rule, upload, upload_name, version)
        answer["redrawn"] = redraw.NOT_REDRAWN
        # (an undo with nothing before it changes the history, not the recipe drawn)
        if answer["history"] is not no_update and not redraw.already_drawn(s, current(answer["history"]), drawn):
            answer["redrawn"] = _redrawn(s, current(answer["history"]), page, session)
        return answer

    def _redrawn(s, recipe, page, session) -> dict:
        """The edit's redraw, in the edit's own answer (see qviz.app.redraw); if it fails, the
        edit still lands and the graph's own draw, which its new recipe starts, redraws it
        (and says what failed, as any failed draw does)."""
        started = time.monotonic()
        try:
            drawn = redraw.redraw(s, recipe, page, [f"{ids.RECIPE}.data"])
        except Exception as exc:   # (the draw callback redraws and says what failed, as any draw does)
            s.latest = ""
            if isinstance(exc, USER_ERRORS):   # (the user's doing, e.g. a typed pattern: said on the page)
                log.info("session %s: the edit's redraw stopped: %s", session["sid"][:8], exc)
            else:
                log.exception("session %s: the edit's redraw failed; the graph's draw redraws it", session["sid"][:8])
            return redraw.NOT_REDRAWN
        log.info("session %s: drew %s with the edit in %.1f ms", session["sid"][:8], s.name,
                 1e3 * (time.monotonic() - started))
        return drawn

    def _edited(s, history, session, edit_log, rule, upload, upload_name, version) -> dict:
        """``{history, error}``: the recipe history after the edit that fired, and what to say."""
        trig = ctx.triggered_id
        if trig == ids.UNDO:
            return dict(history=services.undo(history), error="")
        if trig == ids.REDO:
            return dict(history=services.redo(history), error="")
        edited, note = history, ""     # (note: what a preset with nothing to change says)
        if trig == ids.EDIT_LOG:
            # each edit is its own undo step; the history says which it has (see apply_edits)
            edited = services.apply_edits(history, edit_log, (version or {}).get("t"), s.graph.layers)
            if edited is history:
                return dict(history=no_update, error="")
            log.info("session %s: table edits up to #%d applied", session["sid"][:8], edited["applied"])
            return dict(history=edited, error="")
        if isinstance(trig, dict):   # a side-panel control (a pattern-matching id: not hashable)
            # the panel's controls were (re)drawn showing the recipe: a selection, not an edit
            value = ctx.triggered[0]["value"]
            field = FIELD_OF_CONTROL[trig["type"]]
            edited = services.edit_layer(history, trig["layer"], field, bool(value) if field == "fold" else value)
        elif trig in PRESET_OF_BUTTON:
            edited = services.push(history, current(history).with_preset(PRESET_OF_BUTTON[trig], s.graph))
            note = services.preset_note(s.graph, changed=current(edited) != current(history))
        elif trig == ids.RECIPE_UPLOAD:
            if not upload:
                return dict(history=no_update, error=no_update)   # (emptied below)
            set_props(ids.RECIPE_UPLOAD, {"contents": None})    # the same file again is a change (as a model's)
            try:
                edited = services.push(history, services.recipe_from_upload(upload, s.graph))
            except RecipeError as exc:
                name = quote_name(upload_name) if isinstance(upload_name, str) else "the file"
                return dict(history=no_update, error=f"recipe not loaded: {name}: {exc}")
        elif trig in (ids.RULE_APPLY, ids.RULE_INPUT):
            try:
                edited = services.push(history, services.with_rule(current(history), rule, s.graph))
            except RecipeError as exc:
                return dict(history=no_update, error=f"not applied: {exc}")
        if current(edited) == current(history):
            return dict(history=no_update, error=note)
        log.info("session %s: recipe edited (%s)", session["sid"][:8], trig)
        return dict(history=services.push(history, current(edited)), error=note)

    app.clientside_callback(RULES_APPLIED, Output(ids.RULES_APPLIED, "children"), Input(ids.RECIPE, "data"),
                            State(ids.RULES_APPLIED, "children"))

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
        return dcc.send_bytes(graph.to_graph_def().SerializeToString(), f"{s.file_stem}_qviz.pb")
