"""The "colour by" menu's metrics: what each paints per layer, and why one paints
nothing yet. No Dash here.

Data-free ones are at once (weight |max| and kurtosis, fold status); the others
read a job: the recipe's verification report (per-layer SQNR, accumulated or
local, and each layer's share of the error), its calibration (activation range),
or the sensitivity sweep (the bits it suggests). Until the job is done the graph
keeps its op-kind colours and the legend says what it waits for.

>>> import qviz
>>> from qviz.samples import sample_path
>>> from qviz.app.session import Session
>>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
>>> metric_of(s, FOLD_STATUS, qviz.Recipe.default(s.graph)).values["conv1"]   # 3: folded
3.0
>>> metric_waiting(s, SUGGESTED_BITS, qviz.Recipe.default(s.graph))
'run the sensitivity sweep first (its panel, below); op kinds until then'
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import replace

from .._text import one_line
from ..analysis.layer_metrics import activation_range, error_share, fold_status, suggested_bits
from ..analysis.node_data import SQNR_GRADIENT, NodeData, layer_sqnr
from ..analysis.weight_stats import WEIGHT_METRICS, weight_metrics
from ..passes import Recipe
from ..passes.recipe import FLOAT_RECIPE
from ..render.marks import BIT_COLORS
from .jobs import JobStopped

__all__ = ["RECIPE_SQNR", "LOCAL_SQNR", "ERROR_SHARE", "FOLD_STATUS", "ACTIVATION_RANGE", "SUGGESTED_BITS",
           "MENU", "metric_of", "metric_and_waiting", "recipe_sqnr", "metric_waiting", "SQNR_GRADIENT", "PER_RECIPE", "other_pane_metric"]

RECIPE_SQNR = "per-layer SQNR (this recipe)"
LOCAL_SQNR = "per-layer SQNR, local (each layer's own error)"
ERROR_SHARE = "share of the summed own error (local)"
FOLD_STATUS = "fold status"
ACTIVATION_RANGE = "activation range (calibration)"
SUGGESTED_BITS = "suggested weight bits (sweep)"
#: The built-in entries after op kind, in the menu's order.
MENU = (*WEIGHT_METRICS, FOLD_STATUS, RECIPE_SQNR, LOCAL_SQNR, ERROR_SHARE, ACTIVATION_RANGE, SUGGESTED_BITS)

#: What each job-backed metric waits for, in the legend's words.
_WAITS_FOR = {RECIPE_SQNR: "this recipe's verification report", LOCAL_SQNR: "each layer's own error",
              ERROR_SHARE: "each layer's own error", ACTIVATION_RANGE: "the calibration"}


def _job(session, name: str, recipe: Recipe) -> Future | None:
    """The job a metric reads, started if it is not running (None: the sweep, not run)."""
    if name in (RECIPE_SQNR, LOCAL_SQNR, ERROR_SHARE):
        return session.report_future(recipe, local=name != RECIPE_SQNR)
    if name == ACTIVATION_RANGE:
        return session.ranges_future(recipe)
    sweep = session.jobs.get("sweep")
    return sweep.handle if sweep is not None else None


def _ready(future: Future | None) -> bool:
    return future is not None and future.done() and not future.cancelled() and future.exception() is None


def metric_of(session, name: str, recipe: Recipe | None = None) -> NodeData | None:
    """The metric ``name`` for ``recipe``, keyed by layer, or a node-data file the user
    painted; None for the op-kind fill (``name`` empty, or a file this session no
    longer holds) and while its job runs (:func:`metric_waiting` says so)."""
    if not name:
        return None
    if name in WEIGHT_METRICS:
        return _weights(session, name, recipe)
    if name == FOLD_STATUS:
        return fold_status(session.graph, recipe) if recipe is not None else None
    if name in (*_WAITS_FOR, SUGGESTED_BITS):
        if recipe is None:
            return None
        job = _job(session, name, recipe)
        if not _ready(job):
            return None
        if name == ACTIVATION_RANGE:
            return activation_range(session.result(recipe).folded.graph, session.folded_ranges(recipe) or {})
        if name == SUGGESTED_BITS:
            return suggested_bits(job.result(), session.sweep_target, BIT_COLORS)
        report = job.result()
        if name == ERROR_SHARE:
            return error_share(report.local_layers)
        return layer_sqnr(report.local_layers, local=True) if name == LOCAL_SQNR else layer_sqnr(report.layers)
    return session.node_data.get(name)


def _weights(session, name: str, recipe: Recipe | None) -> NodeData:
    """A weight metric of the weights as the recipe quantizes them: a folded conv's have its
    batch norm's scale in (lenet's conv1: |max| 0.22 raw, 1.95 folded), and the legend says so.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.app.session import Session
    >>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
    >>> raw, folded = (metric_of(s, "weight |max|", r) for r in (FLOAT_RECIPE, qviz.Recipe.default(s.graph)))
    >>> folded.name, round(raw.values["conv1"], 2), round(folded.values["conv1"], 2)
    ('weight |max| (batch norms folded in)', 0.22, 1.95)
    """
    if recipe is None or not recipe.fold_selection(session.graph):
        return weight_metrics(session.graph)[name]
    data = weight_metrics(session.folded(recipe))[name]   # (memoized on it: once per fold selection)
    return replace(data, name=f"{name} (batch norms folded in)")


#: Metrics of one recipe's run (its verification, its calibration): pane B, the float
#: model or a pinned recipe, is not painted with pane A's.
PER_RECIPE = (RECIPE_SQNR, LOCAL_SQNR, ERROR_SHARE, ACTIVATION_RANGE)


def other_pane_metric(session, name: str, recipe: Recipe | None) -> tuple[NodeData | None, str]:
    """``(metric, note)`` for side by side's pane B, which shows ``recipe`` (None: the float
    model): what does not depend on a recipe's run (weights, a painted file, the sweep's
    suggestion) or is read off the recipe (fold status); a per-recipe run's metric is not
    started for pane B, and ``note`` says it paints pane A only.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.app.session import Session
    >>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
    >>> other_pane_metric(s, FOLD_STATUS, None)[0].values["conv1"]   # 2: foldable, left unfolded
    2.0
    >>> other_pane_metric(s, RECIPE_SQNR, None)
    (None, "op kinds here: per-layer SQNR (this recipe) comes from pane A's run")
    """
    if name in PER_RECIPE:
        return None, f"op kinds here: {name} comes from pane A's run"
    metric, waiting = metric_and_waiting(session, name, recipe if recipe is not None else FLOAT_RECIPE)
    if metric is None and name == SUGGESTED_BITS and waiting:   # the sweep: not run yet, or running
        return None, f"colour: {waiting}"
    return metric, ""


def metric_and_waiting(session, name: str, recipe: Recipe) -> tuple[NodeData | None, str]:
    """``(metric_of(...), metric_waiting(...))`` read consistently: a job that ends between
    the two reads is read again (drawn as op kinds with its poll stopped, it never came)."""
    metric = metric_of(session, name, recipe)
    if metric is not None:
        return metric, ""
    waiting = metric_waiting(session, name, recipe)
    return (metric_of(session, name, recipe), "") if not waiting else (None, waiting)


def recipe_sqnr(session, recipe: Recipe, local: bool = False) -> NodeData | None:
    """Each layer's output SQNR (dB) under ``recipe`` (``local``: its own error alone),
    from the verification report; None while it runs or if it failed. A layer left
    exact gets no value: it is drawn grey, "exact (no error)"."""
    return metric_of(session, LOCAL_SQNR if local else RECIPE_SQNR, recipe)


def metric_waiting(session, name: str, recipe: Recipe) -> str:
    """Why the metric ``name`` colours nothing yet ("" when it does, or never will):
    its job is running ("waiting for …", the page polls), failed, or was never run."""
    if name not in (*_WAITS_FOR, SUGGESTED_BITS):
        return ""
    job = _job(session, name, recipe)
    if job is None:
        return "run the sensitivity sweep first (its panel, below); op kinds until then"
    what = _WAITS_FOR.get(name, "the sensitivity sweep")
    if not job.done():
        return f"waiting for {what}; op kinds until then"
    if job.cancelled() or isinstance(job.exception(), JobStopped):
        return f"{what} was stopped; op kinds instead"
    if job.exception() is not None:
        why = one_line(str(job.exception()))[:200]
        return f"{what} failed ({why}); op kinds instead"
    return ""
