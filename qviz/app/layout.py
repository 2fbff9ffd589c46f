"""The page: model bar, graph, and the side panels (patterns, layers, node, verification)."""

from __future__ import annotations

from pathlib import Path

import dash_ag_grid as dag
from dash import dcc, html

from ..analysis.node_data import MAX_NODE_DATA_BYTES
from ..choices import BIT_MENU, SWEEP_BITS, bits_label
from ..passes.rules import MAX_RULE_CHARS
from ..patterns import BUILTIN
from ..samples import list_samples
from . import ids
from .legend import color_options, graph_legend
from .services import NOT_APPLICABLE

BITS = [bits_label(b) for b in BIT_MENU]
#: The one sentence that tells the two per-layer error modes apart.
ERROR_MODES_HELP = ("Accumulated: each layer's output as the quantized model runs, every earlier layer's error "
                    "carried in. Local: each layer fed the float model's values, so only its own quantizers' error "
                    "shows — low accumulated but high local means the error is inherited.")
#: The rule box's tooltip: the grammar of qviz.passes.rules, in one breath.
RULE_HELP = ("SELECTORS: ACTIONS — selectors (& joins them): name~REGEX, op=TYPE, pattern=NAME ("
             + ", ".join(BUILTIN) + "), between=FIRST..LAST (every layer on a path between two layers), *; "
             "actions (, joins them): fold, nofold, wN, aM, wNaM, float. Rules apply in order, a later one "
             "winning; a table or panel edit after them wins too; a preset drops the actions it overwrites.")
#: An empty plot without axes (instead of plotly's default empty grid).
NO_FIGURE = {"data": [], "layout": {"xaxis": {"visible": False}, "yaxis": {"visible": False},
                                    "height": 60, "margin": {"l": 0, "r": 0, "t": 0, "b": 0}}}
#: Pane B while hidden: empty, of no fixed height. A figure drawn after one of 60 px kept
#: that height while plotly fitted its ranges (in axes of equal scale), so the pane opened
#: zoomed out, a 4-rank window widened to 28.
PANE_B_EMPTY = {"data": [], "layout": {"xaxis": {"visible": False}, "yaxis": {"visible": False}}}


def _panel(title, *children, className=""):
    return html.Div([html.H4(title, className="panel-title"), *children], className=f"panel {className}".strip())


#: The model picker's value for the model given to ``qviz serve FILE``.
SERVED_MODEL = "served:"
#: ...and for the model last uploaded (shown, not pickable: its file went with its session).
UPLOADED_MODEL = "uploaded:"


def model_options(served_name: str | None, uploaded: str | None = None) -> list[dict]:
    """The model picker's entries: the served model first, the samples, the upload shown.

    >>> [o["value"] for o in model_options("m.keras", "mine.pb")][:1], model_options(None, "mine.pb")[-1]["label"]
    (['served:'], 'mine.pb (uploaded)')
    """
    options = [{"label": name, "value": name} for name in list_samples()]
    if served_name is not None:
        options.insert(0, {"label": f"{Path(served_name).name} (served)", "value": SERVED_MODEL})
    if uploaded is not None:
        options.append({"label": f"{uploaded} (uploaded)", "value": UPLOADED_MODEL, "disabled": True})
    return options


def page(default_sample: str | None, session_id: str, max_upload_bytes: int = 200 * 2**20,
         served_name: str | None = None, figure=None, status: str = "", linked: str | None = None,
         grouped: bool = False):
    """The page; ``served_name``: the served model's name, listed first and picked
    (``default_sample`` is then ignored). ``figure``: the graph drawn in the page
    itself (the first model's layer view, before any callback), with ``status``;
    ``grouped``: drawn with its blocks closed.
    ``linked``: the model the page's link names (``?m=``), picked instead, if it is one."""
    samples = model_options(served_name)
    if served_name is not None:
        default_sample = SERVED_MODEL
    if linked is not None and linked != default_sample and any(o["value"] == linked for o in samples):
        default_sample, figure, status = linked, None, f"loading {linked}…"   # the drawing was the other model
    return html.Div([
        dcc.Store(id=ids.SESSION, data={"sid": session_id}),
        dcc.Location(id=ids.URL, refresh=False),
        dcc.Store(id=ids.URL_RESTORED, data=False),
        dcc.Store(id=ids.RECIPE),
        dcc.Store(id=ids.EDIT_LOG, data={"seq": 0, "edits": []}),
        dcc.Store(id=ids.VIEW_WINDOW, data=None),
        dcc.Store(id=ids.VIEW, data={"mode": "layer", "expanded": [], "direction": "LR", "blocks": grouped,
                                          "opened": []}),
        dcc.Store(id=ids.SELECTED),
        dcc.Store(id=ids.PINNED),
        dcc.Store(id=ids.MODEL_VERSION),
        dcc.Store(id=ids.DRAWN),
        dcc.Store(id=ids.SWEEP_DONE),
        dcc.Interval(id=ids.METRIC_POLL, interval=500, disabled=True),
        dcc.Download(id=ids.DOWNLOAD_RECIPE),
        dcc.Download(id=ids.DOWNLOAD_MODEL),
        html.Div([
            html.B("qviz", className="brand"),
            dcc.Dropdown(id=ids.MODEL_PICKER, options=samples, value=default_sample, clearable=False,
                         className="model-picker"),
            dcc.Upload(id=ids.UPLOAD, children=html.Div(["drop or ", html.A("choose a model"),
                                                         " (.keras .h5 .pb .pbtxt, zipped SavedModel)"]),
                       className="upload"),
            html.Span(status, id=ids.MODEL_STATUS, className="status"),
            html.Button("Learn BN folding", id=ids.LEARN_BUTTON, className="learn",
                        title="new here? start with the model's first batch-norm fold, explained step by step "
                              "with its own numbers"),
            dcc.Interval(id=ids.MODEL_POLL, interval=250, disabled=True),
            # read by assets/upload_limit.js: a file over the limit is refused before it is sent
            html.Div(id=ids.UPLOAD_LIMIT, hidden=True, **{"data-bytes": str(max_upload_bytes)}),
        ], className="topbar"),
        html.Div(id=ids.ALERT, className="alert alert-empty", title="click to dismiss", n_clicks=0),
        html.Div([
            html.Div([
                html.Div([
                    dcc.RadioItems(id=ids.VIEW_MODE, options=[{"label": "layers", "value": "layer"},
                                                              {"label": "ops", "value": "op"}],
                                   value="layer", inline=True),
                    dcc.RadioItems(id=ids.SHOW, options=[{"label": "rewritten", "value": "rewritten"},
                                                         {"label": "original", "value": "original"}],
                                   value="rewritten", inline=True),
                    dcc.RadioItems(id=ids.DIRECTION, options=[{"label": "→", "value": "LR"},
                                                              {"label": "↓", "value": "TB"}],
                                   value="LR", inline=True),
                    dcc.Input(id=ids.SEARCH, placeholder="find node or layer…", debounce=True),
                    html.Span(id=ids.SEARCH_STATUS, className="status"),
                    dcc.Checklist(id=ids.SIDE_BY_SIDE, options=[{"label": " side by side", "value": "on"}],
                                  value=[], inline=True, className="side-toggle"),
                    # the graph's actions wrap as one (at 1600 px "expand" ended a line, "collapse all" began the next)
                    html.Span([
                        html.Button("expand", id=ids.EXPAND,
                                    title="draw the selected layer as its ops, or the selected block as its layers"),
                        html.Button("collapse all", id=ids.COLLAPSE_ALL,
                                    title="every layer drawn whole again, every block closed"),
                        html.Button("group into blocks", id=ids.BLOCKS_BUTTON,
                                    title="draw runs of layers (MobileNetV2's block_N, a NASNet cell) as one node "
                                          "each; a model of more than 400 layers opens grouped"),
                        html.Button("save SVG", id=ids.SAVE_SVG_BUTTON,
                                    title="the whole graph as drawn (view, changes, bits) as an SVG file; the camera "
                                          "above the graph saves what is in view as PNG"),
                        html.Button("save selection SVG", id=ids.SAVE_AROUND_SVG_BUTTON,
                                    title="the selected layer and its neighbours two steps either way, laid out "
                                          "on their own, as an SVG file: a sub-graph for a slide"),
                        dcc.Download(id=ids.SAVE_SVG),
                    ], className="graph-actions"),
                    html.Span(id=ids.SAVE_SVG_STATUS, className="status"),   # (wraps apart from the buttons)
                    html.Span([
                        html.Label("colour by", htmlFor=ids.COLOR_BY),
                        dcc.Dropdown(id=ids.COLOR_BY, options=color_options(), value="", clearable=False,
                                     searchable=False, className="color-by"),
                        dcc.Upload(html.Span("paint node data (.json)", className="linkish",
                                             title="Model Explorer node-data JSON, e.g. AI Edge Quantizer's "
                                                   "per-tensor error"),
                                   id=ids.NODE_DATA_UPLOAD, max_size=MAX_NODE_DATA_BYTES),
                    ], className="color-by-bar"),
                    # last on the line: its length changes with the view, and nothing moves for it
                    html.Span(id=ids.NODE_COUNT, className="status"),
                ], className="toolbar"),
                html.Div([
                    html.Div([
                        html.Div(id=ids.PANE_A_CAPTION, className="pane-caption", hidden=True),
                        html.Div([
                            dcc.Loading(dcc.Graph(id=ids.GRAPH, config={"scrollZoom": True, "displaylogo": False,
                                                                          "toImageButtonOptions": {
                                                                              "filename": "qviz_graph", "scale": 2}},
                                                  style={"height": "62vh"}, **({"figure": figure} if figure else {})),
                                        # a redraw keeps the graph on screen (the edit's badge is already
                                        # drawn on it) and shows the spinner only if it takes a while
                                        overlay_style={"visibility": "visible", "opacity": 0.75},
                                        delay_show=400),
                            html.Div(html.Button("–", className=ids.MINIMAP_FOLD, n_clicks=0,
                                                 title="fold the minimap away (it covers the nodes under it)"),
                                     id=ids.MINIMAP, className="minimap", title="the whole graph: click to look there"),
                        ], className="graph-wrap"),
                    ], className="pane"),
                    html.Div([
                        html.Div([html.Span(id=ids.PANE_B_CAPTION),
                                  html.Button("pin this recipe here", id=ids.PIN_RECIPE,
                                              title="compare recipes: keep the current one in this pane while you "
                                                    "edit on the left"),
                                  html.Button("float model here", id=ids.UNPIN_RECIPE)], className="pane-caption"),
                        dcc.Graph(id=ids.GRAPH_B, figure=PANE_B_EMPTY, style={"height": "62vh"},
                                  config={"scrollZoom": True, "displaylogo": False}),
                    ], id=ids.PANE_B, className="pane", hidden=True),
                ], className="panes"),
                html.Div(id=ids.METRIC_LEGEND, className="metric-legend"),
                graph_legend(),
                html.Div(id=ids.DIFF_SUMMARY, className="diff"),
            ], className="main"),
            html.Div([
                _panel("Patterns",
                       dcc.Dropdown(id=ids.PATTERN_BUILTIN, value="conv_bn",
                                    options=[{"label": k, "value": k} for k in BUILTIN]),
                       dcc.Textarea(id=ids.PATTERN_TEXT, placeholder="or type a pattern, e.g. Relu(Conv2D(*, *))",
                                    style={"width": "100%", "height": "3em"}),
                       html.Div(id=ids.PATTERN_ERROR, className="error"),
                       html.Div(id=ids.MATCH_COUNT),
                       html.Div(id=ids.MATCH_LIST, className="match-list"), dcc.Store(id=ids.MATCH_PICK),
                       html.Div(id=ids.EXPLAIN, className="explain")),
                _panel("Selected", html.Div(id=ids.NODE_PANEL),
                       dcc.Interval(id=ids.NODE_PANEL_POLL, interval=500, disabled=True),
                       dcc.Store(id=ids.NODE_PANEL_SHOWS)),
            ], className="side"),
        ], className="row"),
        # Full width: the formulas, the per-channel table and the fold graphs need it.
        html.Div(html.Div([
            html.Div([html.H4("Fold explainer", className="panel-title"),
                      html.Button("close", id=ids.FOLD_EXPLAINER_CLOSE)], className="panel-head"),
            html.Div(id=ids.FOLD_EXPLAINER),
            dcc.Interval(id=ids.FOLD_EXPLAIN_POLL, interval=300, disabled=True),
        ], className="panel"), id=ids.FOLD_EXPLAINER_PANEL, className="row explainer-row", hidden=True),
        html.Div([
            _panel("Layers: fold and quantize",
                   html.Div([
                       html.Button("all 8-bit", id=ids.BULK_8),
                       html.Button("first & last 8-bit, rest w4a8", id=ids.BULK_FIRST_LAST),
                       html.Button("fold all", id=ids.BULK_FOLD),
                       html.Button("reset", id=ids.BULK_RESET),
                       html.Button("undo", id=ids.UNDO), html.Button("redo", id=ids.REDO),
                       html.Button("download recipe", id=ids.DOWNLOAD_RECIPE_BUTTON),
                       html.Button("download model (.pb)", id=ids.DOWNLOAD_MODEL_BUTTON),
                       html.Button("download report (.html)", id=ids.REPORT_BUTTON,
                                   title="one HTML file that opens anywhere with no server: the graph with the "
                                         "recipe's changes, verification, TFLite check, the sweep if run, and the "
                                         "fold of the selected layer (else the first folded) explained"),
                       html.Span(id=ids.REPORT_STATUS, className="status"),
                       dcc.Interval(id=ids.REPORT_POLL, interval=400, disabled=True),
                       dcc.Download(id=ids.REPORT_DOWNLOAD),
                       dcc.Upload(id=ids.RECIPE_UPLOAD, children=html.Span("upload recipe", className="linkish"),
                                  className="inline-upload"),
                       html.Span(id=ids.RECIPE_ERROR, className="error"),
                   ], className="toolbar"),
                   html.Div([
                       dcc.Input(id=ids.RULE_INPUT, type="text", debounce=False, maxLength=MAX_RULE_CHARS,
                                 placeholder="rule, e.g. op=DepthwiseConv2dNative: w4a8 (Enter applies)",
                                 className="rule-input"),
                       html.Button("apply rule", id=ids.RULE_APPLY),
                       html.Span(id=ids.RULES_APPLIED, className="rules-applied"),
                   ], className="toolbar rules", title=RULE_HELP),
                   # the table fills the panel, as tall as the verification beside it, ~9 rows at
                   # least: at 260 px it showed 4½ of MobileNetV2's 63, above an empty half-panel
                   html.Div(dag.AgGrid(id=ids.GRID, columnDefs=[   # minimum widths: below them the table scrolls sideways
                       # what is chosen first (at 1280 px the bits and "on TFLite" were off the panel's edge,
                       # behind the batch norm's columns), what explains it after
                       {"field": "layer", "pinned": "left", "minWidth": 110},
                       # a fold only where it can fold; weight bits only where there are weights
                       {"field": "fold", "editable": {"function": "params.data.foldable === 'yes'"},
                        "cellDataType": "boolean", "minWidth": 50},
                       {"field": "weight_bits", "headerName": "weight bits", "minWidth": 70,
                        "editable": {"function": f"params.data.weight_bits !== '{NOT_APPLICABLE}'"},
                        "cellEditor": "agSelectCellEditor", "cellEditorParams": {"values": BITS}},
                       {"field": "activation_bits", "headerName": "activation bits", "editable": True,
                        "minWidth": 90, "cellEditor": "agSelectCellEditor", "cellEditorParams": {"values": BITS}},
                       {"field": "tflite", "headerName": "on TFLite", "tooltipField": "tflite_why", "minWidth": 100},
                       # its batch norm, and why it cannot fold if it cannot (three columns once: at
                       # 1280 and 1600 px the table scrolled sideways to a column mostly empty)
                       {"field": "batch_norm", "headerName": "batch norm", "tooltipField": "why", "flex": 2,
                        "minWidth": 120, "valueFormatter": {"function": (
                            "params.data.foldable === 'no' ? params.value + ' ✗ not foldable'"
                            " + (params.data.why ? ': ' + params.data.why : '') : params.value")}},
                   ], rowData=[], getRowId="params.data.layer",
                       defaultColDef={"resizable": True, "flex": 1, "wrapHeaderText": True, "autoHeaderHeight": True},
                       # (the form of AG Grid 32.2+, dash-ag-grid 32.3+: the string "single" is deprecated and warns)
                       dashGridOptions={"rowSelection": {"mode": "singleRow", "checkboxes": False,
                                                         "enableClickSelection": True},
                                        "singleClickEdit": True,
                                        # (a model quantized already, or one without conv/dense layers)
                                        "localeText": {"noRowsToShow": "no layer here to fold or quantize: none "
                                                       "has a batch norm to fold, and none is a conv, dense or "
                                                       "bypass Add left float"}},
                       style={"position": "absolute", "inset": "0", "height": "auto"}), className="layer-grid-box"),
                   className="layers-panel"),
            _panel("Verification", html.Div(id=ids.VERIFY_PANEL),
                   dcc.Interval(id=ids.VERIFY_POLL, interval=300, disabled=True),
                   html.Div([
                       html.Span("per-layer error:"),
                       dcc.RadioItems(id=ids.LAYER_ERRORS_MODE, value="accumulated", inline=True, options=[
                           {"label": "accumulated", "value": "accumulated"},
                           {"label": "local", "value": "local"}]),
                       html.Span(id=ids.LAYER_ERRORS_STATUS, className="status"),
                   ], className="toolbar"),
                   html.Div(ERROR_MODES_HELP, className="hint error-modes-help"),
                   # (greyed by its frame: dcc.Graph re-renders for no class change after it is drawn)
                   html.Div(dcc.Graph(id=ids.LAYER_ERRORS, figure=NO_FIGURE, config={"displayModeBar": False}),
                            id=ids.LAYER_ERRORS_FRAME),
                   dcc.Checklist(id=ids.LAYER_ERRORS_ALL, options=[{"label": " show every layer", "value": "all"}],
                                 value=[], inline=True),
                   *_device_check()),
        ], className="row bottom"),
        html.Div([_sweep_panel(), _qat_panel()], className="row bottom"),
    ], className="qviz")


def _sweep_panel():
    return _panel(
        "Sensitivity: output SQNR with one layer quantized at a time",
        html.Div([
            dcc.Checklist(id=ids.SWEEP_BITS, options=[{"label": f"{b}", "value": b} for b in SWEEP_BITS],
                          value=list(SWEEP_BITS), inline=True),
            html.Span("bits; target SQNR"),
            dcc.Input(id=ids.SWEEP_TARGET, type="number", value=30, min=0, max=120, step=1,
                      style={"width": "4em"}),
            html.Span("dB"),
            html.Button("run sweep", id=ids.SWEEP_RUN),
            html.Button("stop", id=ids.SWEEP_STOP, disabled=True,
                        title="stop after the measurement under way (what was measured is dropped)"),
            html.Progress(id=ids.SWEEP_PROGRESS, value="0", max="1", style={"display": "none"}),
            html.Span(id=ids.SWEEP_STATUS, className="status"),
        ], className="toolbar"),
        dcc.Interval(id=ids.SWEEP_POLL, interval=400, disabled=True),
        dcc.Graph(id=ids.SWEEP_HEATMAP, config={"displayModeBar": False}, style={"display": "none"}),
        html.Div(id=ids.SWEEP_SUGGESTION),
        html.Div([
            html.Button("apply suggestion", id=ids.SWEEP_APPLY, disabled=True),
            html.Button("search mixed precision", id=ids.PARETO_RUN, disabled=True,
                        title="narrow layers' weights one step at a time, the least added noise per bit saved "
                              "first; each recipe measured; click a point to load its recipe (undo takes it back)"),
            html.Span("saving", title="what each narrowing step is chosen to save"),
            dcc.RadioItems(id=ids.PARETO_TRADE, value="size", inline=True, options=[
                {"label": "size", "value": "size", "title": "weight bits: the model file"},
                {"label": "bit-ops", "value": "bops",
                 "title": "MACs × weight bits × input bits: compute (a conv used at many positions goes first)"}]),
            html.Span(id=ids.PARETO_STATUS, className="status"),
        ], className="toolbar"),
        dcc.Interval(id=ids.PARETO_POLL, interval=400, disabled=True),
        dcc.Graph(id=ids.PARETO_GRAPH, config={"displayModeBar": False}, style={"display": "none"}))


def _device_check():
    """On the device: the recipe converted by TensorFlow Lite and run next to qviz's simulation."""
    return [
        html.H5("On the device: TensorFlow Lite", className="subtitle"),
        html.Div([
            dcc.Checklist(id=ids.TFLITE_INT8_IO, options=[{"label": "int8 inputs/outputs", "value": "int8"}],
                          value=[], inline=True),
            html.Button("convert, check and download .tflite", id=ids.TFLITE_BUTTON),
            html.Span(id=ids.TFLITE_STATUS, className="status"),
        ], className="toolbar"),
        html.Div(id=ids.TFLITE_FIGURES),
        dcc.Interval(id=ids.TFLITE_POLL, interval=400, disabled=True),
        dcc.Download(id=ids.TFLITE_DOWNLOAD),
    ]


def _qat_panel():
    return _panel(
        "Quantization-aware training",
        dcc.Markdown("A Keras model of the current recipe, ready for `model.fit`: folded layers keep "
                     "their batch norm trainable, weights and activations are fake-quantized at the "
                     "recipe's bits (straight-through estimator). Needs a model opened from a "
                     "`.keras`/`.h5` file."),
        html.Div([
            dcc.Dropdown(id=ids.QAT_MODE, value="ema_stats_folding", clearable=False,
                         options=[{"label": m, "value": m} for m in ("ema_stats_folding", "batch_stats_folding")],
                         style={"width": "14em"}),
            html.Button("download QAT model (.keras)", id=ids.QAT_BUTTON),
            html.Span(id=ids.QAT_STATUS, className="status"),
        ], className="toolbar"),
        dcc.Interval(id=ids.QAT_POLL, interval=400, disabled=True),
        dcc.Download(id=ids.QAT_DOWNLOAD),
        dcc.Markdown("Or carry the recipe into the tool you train with: a **tfmot** or **QKeras** script, or "
                     "an **AI Edge Quantizer** recipe with the float `.tflite` it names ops of (one `.zip`). "
                     "What the tool does differently is listed here and in the files."),
        html.Div([
            dcc.Dropdown(id=ids.CODE_TOOL, value="tfmot", clearable=False, style={"width": "14em"},
                         options=[{"label": "tfmot (Keras 2)", "value": "tfmot"},
                                  {"label": "QKeras", "value": "qkeras"},
                                  {"label": "AI Edge Quantizer", "value": "ai-edge-quantizer"}]),
            html.Button("download code (.zip)", id=ids.CODE_BUTTON),
            html.Span(id=ids.CODE_STATUS, className="status"),
        ], className="toolbar"),
        html.Ul(id=ids.CODE_NOTES, className="code-notes"),
        dcc.Interval(id=ids.CODE_POLL, interval=400, disabled=True),
        dcc.Download(id=ids.CODE_DOWNLOAD))
