"""Every component id of the app, in one place."""

# stores (what the browser holds: ids, the recipe history, view state — never graphs)
SESSION = "session-store"
RECIPE = "recipe-store"
URL = "url"                      # dcc.Location: the page's state in the URL fragment (url_state.py)
URL_RESTORED = "url-restored-store"   # set once a link's state is applied (or there was none)
EDIT_LOG = "edit-log-store"      # every layer-table edit, numbered in the browser (services.apply_edits)
VIEW = "view-store"
SELECTED = "selected-store"
MODEL_VERSION = "model-version-store"
DRAWN = "drawn-store"            # set when the graph for a recipe is drawn; verification follows it
METRIC_POLL = "metric-poll"      # dcc.Interval: redraws a graph coloured by SQNR once its report is in

# model
MODEL_PICKER = "model-picker"
UPLOAD = "model-upload"
MODEL_STATUS = "model-status"
MODEL_POLL = "model-poll"        # dcc.Interval that polls a model being loaded in the worker
UPLOAD_LIMIT = "upload-limit"    # carries the upload limit (data-bytes) for the page's own size check

# what went wrong, whichever callback it was (set by the app's error handler)
ALERT = "alert"

# graph
GRAPH = "graph"
VIEW_WINDOW = "view-window-store"   # the part of the graph the user has panned or zoomed to (None: as drawn)
MINIMAP = "graph-minimap"          # drawn by assets/graph_view.js
MINIMAP_FOLD = "minimap-fold"      # (a class: the minimap's fold button, handled there)
# side by side (qviz.app.side_by_side): pane B beside the graph, the float model or a pinned recipe
SIDE_BY_SIDE = "side-by-side"      # the toggle
PANE_A_CAPTION = "pane-a-caption"
PANE_B = "pane-b"                  # its container (hidden when the toggle is off)
PANE_B_CAPTION = "pane-b-caption"
GRAPH_B = "graph-b"
PIN_RECIPE = "pin-recipe"          # pin the current recipe into pane B
UNPIN_RECIPE = "unpin-recipe"      # pane B back to the float model
PINNED = "pinned-recipe"           # store: the pinned recipe's JSON, or None
GRAPH_LEGEND = "graph-legend"
COLOR_BY = "color-by"                # fill the nodes by op kind or by a metric
NODE_DATA_UPLOAD = "node-data-upload"  # Model Explorer node-data JSON to paint
METRIC_LEGEND = "metric-legend"
VIEW_MODE = "view-mode"
DIRECTION = "direction"
SHOW = "show-graph"
SEARCH = "search"
SEARCH_STATUS = "search-status"
EXPAND = "expand-button"
COLLAPSE_ALL = "collapse-all-button"
BLOCKS_BUTTON = "blocks-button"
BLOCK_TOGGLE = "block-toggle"      # type of {"type": BLOCK_TOGGLE, "block": id}: open or close that block
BLOCK_LINE = "block-line"          # type of {"type": BLOCK_LINE, "block": id}: a layer panel's "in block …"
NODE_COUNT = "node-count"
SAVE_SVG_BUTTON = "save-svg-button"
SAVE_SVG = "save-svg"                # dcc.Download: the graph drawn as SVG
SAVE_AROUND_SVG_BUTTON = "save-around-svg-button"   # …only the selected layer and its neighbours
SAVE_SVG_STATUS = "save-svg-status"

# patterns
PATTERN_BUILTIN = "pattern-builtin"
PATTERN_TEXT = "pattern-text"
PATTERN_ERROR = "pattern-error"
MATCH_COUNT = "match-count"
MATCH_LIST = "match-list"
MATCH_ITEM = "match-item"         # class of a listed match's button (its view key in data-key)
MATCH_PICK = "match-pick"         # store: {"key": view key, "t": ms} a click in the match list (assets/graph_view.js)
EXPLAIN = "explain"

# layers and recipe
GRID = "layer-grid"
BULK_8 = "bulk-all-8"
BULK_FIRST_LAST = "bulk-first-last-8-rest-4"
BULK_FOLD = "bulk-fold-all"
BULK_RESET = "bulk-reset"
UNDO = "undo"
REDO = "redo"
DOWNLOAD_RECIPE = "download-recipe"
DOWNLOAD_RECIPE_BUTTON = "download-recipe-button"
DOWNLOAD_MODEL = "download-model"
DOWNLOAD_MODEL_BUTTON = "download-model-button"
RECIPE_UPLOAD = "recipe-upload"
RECIPE_ERROR = "recipe-error"
RULE_INPUT = "rule-input"             # one rule's text (qviz.passes.rules); Enter or the button applies it
RULE_APPLY = "rule-apply"
RULES_APPLIED = "rules-applied"       # the recipe's rules, in order

# side panel: per-layer controls use pattern-matching ids {"type": ..., "layer": name}
NODE_PANEL = "node-panel"
LAYER_FOLD = "layer-fold"          # type of {"type": LAYER_FOLD, "layer": ...}
LAYER_WBITS = "layer-weight-bits"
LAYER_ABITS = "layer-activation-bits"

GRID_WAITING = "grid-waiting"         # shown while a layer's activation samples are computed
NODE_PANEL_POLL = "node-panel-poll"   # polls activation samples (for the quantization grids) from the worker
NODE_PANEL_SHOWS = "node-panel-shows"  # what the node panel shows: a node's key, or HINT (read to skip redundant updates)

# fold explainer: opened from the node panel, shown full width under the graph
FOLD_EXPLAIN_BUTTON = "fold-explain-button"
FOLD_EXPLAINER = "fold-explainer"
FOLD_EXPLAINER_PANEL = "fold-explainer-panel"   # hidden until a fold is explained
FOLD_EXPLAINER_CLOSE = "fold-explainer-close"
FOLD_EXPLAIN_POLL = "fold-explain-poll"        # polls the explainer's job
FOLD_EXPLAINER_BODY = "fold-explainer-body"     # formulas, this model's numbers, the check
FOLD_WORKED = "fold-worked"                     # one channel's fold worked through with the model's numbers
GRID_BITS = "grid-bits"      # pattern-matching {"type", "layer", "tensor"}: a quantization grid's width slider
GRID_VIEW = "grid-view"      # pattern-matching {"type", "layer", "tensor"}: the grid drawn at that width
LEARN_BUTTON = "learn-button"                   # "Learn BN folding": the first fold, explained from the top
CHANNEL_BITS = "channel-bits"                  # pattern-matching {"type", "layer"}: the width of the channel view
CHANNEL_RANGES = "channel-ranges"              # pattern-matching {"type", "layer"}: ranges and error per channel
FOLD_ORDERS = "fold-orders"                    # the three orders of folding and quantizing, with their errors
FOLD_ORDERS_TABLE = "fold-orders-table"        # …at the recipe's width for the layer

# verification
VERIFY_PANEL = "verify-panel"
VERIFY_ACCURACY = "verify-accuracy"
VERIFY_WARNING = "verify-warning"
VERIFY_POLL = "verify-poll"      # dcc.Interval that polls a running report
DIFF_SUMMARY = "diff-summary"
LAYER_ERRORS = "layer-errors"
LAYER_ERRORS_ALL = "layer-errors-all"   # show every layer's bar, not only the worst
LAYER_ERRORS_MODE = "layer-errors-mode"  # accumulated (as the model runs) or local (each layer's own error)
LAYER_ERRORS_STATUS = "layer-errors-status"
LAYER_ERRORS_FRAME = "layer-errors-frame"   # around the chart: greyed ("stale") while it is of another recipe

# training-mode fold (inside the fold explainer)
TRAIN_FOLD_MODE = "train-fold-mode"
TRAIN_FOLD_PHASE = "train-fold-phase"
TRAIN_FOLD_VIEW = "train-fold-view"
TRAIN_FOLD_CHECK = "train-fold-check"
TRAIN_FOLD_POLL = "train-fold-poll"

# sensitivity sweep (a background job in the worker; polled)
SWEEP_BITS = "sweep-bits"
SWEEP_TARGET = "sweep-target"
SWEEP_RUN = "sweep-run"
SWEEP_STOP = "sweep-stop"
SWEEP_POLL = "sweep-poll"
SWEEP_PROGRESS = "sweep-progress"
SWEEP_STATUS = "sweep-status"
SWEEP_HEATMAP = "sweep-heatmap"
SWEEP_SUGGESTION = "sweep-suggestion"
SWEEP_SUGGESTED = "sweep-suggested"   # the line under the heatmap saying what the suggestion reaches
SWEEP_APPLY = "sweep-apply"
SWEEP_DONE = "sweep-done"             # set when a sweep finishes: the panes coloured by its suggestion repaint
# the mixed-precision search over the sweep (a job in the worker; polled): size against SQNR, a click loads
PARETO_RUN = "pareto-run"
PARETO_TRADE = "pareto-trade"         # what the search saves: weight size or bit-operations
PARETO_POLL = "pareto-poll"
PARETO_STATUS = "pareto-status"
PARETO_GRAPH = "pareto-graph"

# the HTML report (a background job in the worker; polled)
REPORT_BUTTON = "report-button"
REPORT_POLL = "report-poll"
REPORT_STATUS = "report-status"
REPORT_DOWNLOAD = "report-download"

# the recipe as another tool's code: tfmot, QKeras, AI Edge Quantizer (a job in the worker; polled)
CODE_TOOL = "code-tool"
CODE_BUTTON = "code-button"
CODE_POLL = "code-poll"
CODE_STATUS = "code-status"
CODE_NOTES = "code-notes"                      # where the tool does something other than the recipe
CODE_DOWNLOAD = "code-download"

# QAT export (a background job in the worker; polled)
QAT_MODE = "qat-folding-mode"
QAT_BUTTON = "qat-export-button"
QAT_POLL = "qat-poll"
QAT_STATUS = "qat-status"
QAT_DOWNLOAD = "qat-download"

# TensorFlow Lite export and device check (a background job in the worker; polled; in the verification panel)
TFLITE_INT8_IO = "tflite-int8-io"
TFLITE_BUTTON = "tflite-export-button"
TFLITE_POLL = "tflite-poll"
TFLITE_STATUS = "tflite-status"
TFLITE_FIGURES = "tflite-figures"
TFLITE_DOWNLOAD = "tflite-download"
