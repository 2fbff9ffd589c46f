"""A recipe's rewrite as one HTML file that opens from disk with no server and no network.

:func:`html_report` lays out what qviz knows of a rewrite — the graph with its
changes and bits, the cost, the verification and the per-layer error, what
TFLite will run differently, the sensitivity heatmap if one was swept, and the
batch-norm fold explained on the model's own numbers — with plotly.js inlined
once, so the figures stay interactive (zoom, hover) offline. It runs nothing:
:func:`make_report` runs the rewrite, the checks and the explanations
(TensorFlow) and hands them over.

>>> import qviz
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> recipe = qviz.Recipe(fold_default=True, quantize_default=None)
>>> page = html_report(g, recipe, qviz.apply(g, recipe), name="lenet <digits>")
>>> page.startswith("<!doctype html>"), "lenet &lt;digits&gt;" in page, '<script src="http' in page
(True, True, False)
"""

from __future__ import annotations

import datetime
import math
from html import escape

import plotly.io as pio
from plotly.offline import get_plotlyjs

from ..analysis.budget import budget
from ..analysis.channel_ranges import SCHEMES, STAGES, channel_ranges_of
from ..analysis.deployability import deployability
from ..analysis.node_data import SQNR_GRADIENT, layer_sqnr
from ..ir import Graph
from ..passes import Recipe, fold_candidates, quantizable_layers
from .explainer import channel_ranges_figure, fold_channels_figure, fold_orders_figure
from .metric import metric_fill
from .figure import graph_figure, layer_error_figure, sensitivity_figure
from .marks import STATUS_COLORS
from .image import recipe_badges, rewrite_view

__all__ = ["html_report", "make_report"]

_STYLE = """
body { font-family: sans-serif; margin: 16px 24px; color: #222; max-width: 1400px; }
h1 { font-size: 22px; } h2 { font-size: 18px; border-top: 1px solid #ddd; padding-top: 10px; margin-top: 24px; }
h3 { font-size: 15px; } .muted { color: #666; } .warn { color: #b35900; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: right; } th:first-child, td:first-child { text-align: left; }
.formula { font-family: serif; font-size: 16px; margin: 6px 0 6px 16px; }
.scroll { max-height: 320px; overflow: auto; display: inline-block; }
pre { background: #f6f6f6; padding: 8px; overflow: auto; max-height: 300px; }
"""


def _figure(fig, div_id: str, height: int | None = None) -> str:
    if height:
        fig.update_layout(height=height)
    return pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False, "scrollZoom": True})


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _db(x: float) -> str:
    return "∞ (exact)" if math.isinf(x) and x > 0 else f"{x:.1f} dB"


def _recipe_section(original: Graph, recipe: Recipe) -> str:
    config = recipe.quantize_config(original)
    folded = [c.layer for c in fold_candidates(original) if c.foldable and recipe.folds(c.layer)]
    weighted = set(quantizable_layers(original))   # a bypass Add has activations only: no weight bits
    rows = "".join(f"<tr><td>{escape(layer)}</td><td>{(b.weight_bits or 'float') if layer in weighted else '—'}</td>"
                   f"<td>{b.activation_bits or 'float'}</td><td>{'yes' if layer in folded else ''}</td></tr>"
                   for layer, b in config.layers.items())
    rules = "".join(f"<li><code>{escape(r)}</code></li>" for r in recipe.rules)
    return (f"<h2>Recipe</h2><p>{len(folded)} batch norm(s) folded; {len(config.layers)} layer(s) quantized; "
            f"{'narrow' if recipe.narrow_range else 'full'} range, weights "
            f"{'per-channel' if recipe.per_channel else 'per-tensor'}, "
            f"{'symmetric' if recipe.symmetric_weights else 'asymmetric'}.</p>"
            + (f"<p>Chosen by the rules (later ones win):</p><ol>{rules}</ol>" if rules else "")
            + (f'<div class="scroll"><table><tr><th>layer</th><th>weight bits</th><th>activation bits</th>'
               f"<th>batch norm folded</th></tr>{rows}</table></div>" if rows else "")
            + f"<details><summary>recipe JSON</summary><pre>{escape(recipe.to_json())}</pre></details>")


def _graph_section(original: Graph, recipe: Recipe, result, shapes) -> str:
    vg, pos, routes = rewrite_view(original, result)
    fig = graph_figure(vg, pos, routes=routes, show_status=True, badges=recipe_badges(original, vg, recipe),
                       first_view=True)
    # as tall as the drawing needs at the page's width (the axes keep one scale), within reason
    if fig.layout.xaxis.range is not None:
        (x0, x1), (y0, y1) = fig.layout.xaxis.range, fig.layout.yaxis.range
    else:       # the whole graph is shown
        xs, ys = [p[0] for p in pos.values()] or [0.0], [p[1] for p in pos.values()] or [0.0]
        (x0, x1), (y0, y1) = (min(xs) - 0.6, max(xs) + 0.6), (min(ys) - 1.0, max(ys) + 1.0)
    height = int(min(560, max(240, 1300 * (y1 - y0) / max(x1 - x0, 1e-6) + 60)))
    legend = (f'<span style="color:{STATUS_COLORS["modified"]}">orange outline: changed</span> · '
              f'<span style="color:{STATUS_COLORS["added"]}">green: added</span> · '
              f'<span style="color:{STATUS_COLORS["removed"]}">faded red: removed, drawn where it was</span> · '
              "badges: weight/activation bits, +bn a folded batch norm. Drag to pan, scroll to zoom.")
    out = (f"<h2>Graph (layer view, rewritten)</h2><p>{result.change_summary()}. "
           f"{escape(_sentence(budget(original, result.graph, shapes).summary()))}</p>"
           f'<p class="muted">{legend}</p>{_figure(fig, "graph", height)}')
    if result.report is None or not result.report.layers:
        return out
    # the same drawing, each layer filled by its output SQNR under the recipe (the verification's)
    sqnr = layer_sqnr(result.report.layers)
    hover = {}
    fill = metric_fill(sqnr, vg, hover)
    painted = graph_figure(vg, pos, routes=routes, show_status=True, badges=recipe_badges(original, vg, recipe),
                           first_view=True, fill=fill, hover=hover)
    if sqnr.span is None:
        return out
    lo, hi = sqnr.span
    red, _, blue = (color for _, color in SQNR_GRADIENT)
    scale = (f'fill: each layer\'s output SQNR under the recipe — <span style="color:{red}">red</span> the lowest '
             f'({lo:.1f} dB), <span style="color:#b59f00">yellow</span> between, <span style="color:{blue}">blue</span>'
             f" the highest ({hi:.1f} dB); grey: exact (no error). Hover for the numbers.")
    return (out + "<h3>Where the error is: layers coloured by their SQNR</h3>"
            f'<p class="muted">{scale}</p>{_figure(painted, "graph-sqnr", height)}')


def _verification_section(result, quantized: set[str], data_origin: str) -> str:
    rep = result.report
    if rep is None:
        return "<h2>Verification</h2><p>not run</p>"
    lines = [f"On {rep.examples} inputs{' (' + escape(data_origin) + ')' if data_origin else ''}: "
             f"output max |Δ| {rep.max_abs:.3g}, relative error {rep.rel_err:.3g}, SQNR {_db(rep.sqnr_db)}."]
    if rep.accuracy is not None:
        lines.append(f"Accuracy {rep.accuracy_before:.2%} → {rep.accuracy:.2%}.")
    if rep.warning:
        lines.append(f'<span class="warn">{escape(rep.warning)}</span>')
    out = f"<h2>Verification: the rewrite against the float model</h2><p>{' '.join(lines)}</p>"
    if rep.layers:
        fig = layer_error_figure([e.layer for e in rep.layers], [e.sqnr_db for e in rep.layers],
                                 quantized=quantized, limit=None, examples=rep.layer_examples)
        out += ('<p class="muted">Each layer\'s output SQNR (higher: closer to float; ◆ quantized), '
                "the error accumulated up to it.</p>" + _figure(fig, "layer-error"))
    return out


def _device_section(check) -> str:
    """What TFLite runs of the recipe (:func:`qviz.analysis.deployability`: a static check)."""
    out = ("<h2>On the device (TFLite)</h2><p class=\"muted\">What TFLite's kernels run of each choice, by "
           "qviz's rules for them; <code>qviz export-tflite</code> converts the model and checks it in TFLite's "
           "interpreter.</p>")
    if check.warnings:
        out += '<p class="warn">TFLite will run this differently:</p><ul>' + "".join(
            f"<li>{escape(w)}</li>" for w in check.grouped_warnings(names=12)) + "</ul>"
    if check.fates:
        out += ('<div class="scroll"><table><tr><th>layer</th><th>part</th><th>bits</th><th>on TFLite</th>'
                "<th>as simulated?</th></tr>" + "".join(
                    f"<tr><td>{escape(f.layer)}</td><td>{f.part}</td><td>{f.bits}</td><td>{escape(f.runs_as)}</td>"
                    f"<td>{'yes' if f.status == 'honoured' else escape(f.status)}</td></tr>" for f in check.fates)
                + "</table></div>")
    else:
        out += "<p>Nothing is quantized: TFLite runs the float model.</p>"
    return out


def _sensitivity_section(sens, target_db: float) -> str:
    fig = sensitivity_figure(sens.layers, sens.bits, sens.weight_sqnr, sens.activation_sqnr,
                             sens.need_db(target_db), sens.weight_accuracy, sens.activation_accuracy)
    return ("<h2>Sensitivity: output SQNR with one layer quantized</h2>"
            f"<p class=\"muted\">Bold: at or above what each quantizer needs for {target_db:g} dB overall.</p>"
            + _figure(fig, "sensitivity"))


def _fold_section(e, bits: int, recipe: Recipe, n: int) -> str:
    v = e.values
    worked = "<br>".join(escape(line) for line in e.worked(0))
    head = "".join(f"<th>{h}</th>" for h in ("channel", "γ", "β", "μ", "σ²", "s", "t", "b", "b′"))
    rows = "".join("<tr>" + "".join(f"<td>{x:.4g}</td>" if not isinstance(x, int) else f"<td>{x}</td>" for x in (
        ch, v.gamma[ch], v.beta[ch], v.mean[ch], v.variance[ch], v.multiplier.ravel()[ch], v.offset.ravel()[ch],
        v.bias[ch], v.folded_bias[ch])) + "</tr>" for ch in range(len(v.gamma)))
    r = channel_ranges_of(v, e.op, e.layer, e.bn_layer, bits, narrow_range=recipe.narrow_range,
                          symmetric=recipe.symmetric_weights)
    schemes = "".join(f"<tr><th>{s}</th>" + "".join(f"<td>{_db(r.error(s, k).sqnr_db)}</td>" for k in SCHEMES)
                      + "</tr>" for s in STAGES)
    off = ("" if recipe.folds(e.layer) else
           f'<p class="warn">This recipe leaves this fold off: below is what folding {escape(e.layer)} would do.</p>')
    return (f"<h3>{escape(e.layer)} absorbs {escape(e.bn_layer)}</h3>{off}"
            f"<p>{escape(e.layer)} ({e.op}, weights {list(e.weights_shape)}) is followed by a batch norm "
            f"({e.kind}), ε = {v.epsilon:g}. Per output channel c the batch norm computes</p>"
            '<p class="formula">y<sub>c</sub> = γ<sub>c</sub> (x<sub>c</sub> − μ<sub>c</sub>) / '
            "√(σ²<sub>c</sub> + ε) + β<sub>c</sub> = s<sub>c</sub> x<sub>c</sub> + t<sub>c</sub></p>"
            "<p>and x<sub>c</sub> is linear in channel c's weights, so the scale moves into them: "
            "w′<sub>c</sub> = s<sub>c</sub> w<sub>c</sub>, b′<sub>c</sub> = s<sub>c</sub> b<sub>c</sub> + "
            "t<sub>c</sub>. For channel 0 of this model:</p>"
            f'<p class="formula">{worked}</p>'
            f"<p>Checked on {e.examples} inputs: the folded layer against layer → batch norm, "
            f"max |Δ| = {e.max_abs_diff:.3g}.</p>"
            f'<div class="scroll"><table><tr>{head}</tr>{rows}</table></div>'
            + _figure(fold_channels_figure(e), f"fold-{n}", 280)
            + f"<p>{escape(r.summary())}</p><table><tr><th>whole kernel at {bits} bits</th>"
            + "".join(f"<th>{k}</th>" for k in SCHEMES) + f"</tr>{schemes}</table>"
            + _figure(channel_ranges_figure(r), f"channels-{n}") + _orders_section(e.orders, bits, recipe, n))


def _orders_section(orders, bits: int, recipe: Recipe, n: int) -> str:
    """The three orders of folding and quantizing the layer (:mod:`qviz.analysis.fold_orders`)."""
    from ..analysis.fold_orders import ORDERS

    if orders is None:
        return ""
    bits = bits if bits in orders.widths else 8
    scheme = "per-channel" if recipe.per_channel else "per-tensor"
    rows = "".join(f"<tr><th>{escape(o)}</th><td>{escape(who)}</td><td>{escape(ref)}</td>"
                   + "".join(f"<td>{_db(orders.result(o, k, bits).sqnr_db)}</td>" for k in SCHEMES)
                   + f"<td>{escape(orders.deploys(o, scheme, bits))}</td></tr>" for o, (who, ref) in ORDERS.items())
    return ("<h4>Fold first, or quantize first?</h4>"
            f"<p>{escape(orders.summary(bits))}</p>"
            f"<table><tr><th>order (weights at {bits} bits)</th><th>who runs it</th><th>compared with</th>"
            + "".join(f"<th>{k}</th>" for k in SCHEMES) + f"<th>what TFLite stores ({scheme})</th></tr>{rows}</table>"
            + _figure(fold_orders_figure(orders), f"orders-{n}"))


def html_report(original: Graph, recipe: Recipe, result, *, name: str, explanations=(), sensitivity=None,
                target_sqnr_db: float = 30.0, data_origin: str = "", shapes: dict | None = None) -> str:
    """The report page: one self-contained HTML string.

    Args:
        original: the float graph.
        recipe: the recipe applied.
        result: :func:`qviz.apply`'s result for it (graph, changes, verification report).
        name: the model's name, as the page should show it.
        explanations: :class:`~qviz.analysis.fold_explainer.FoldExplanation` s to include.
        sensitivity: a :class:`~qviz.analysis.sensitivity.Sensitivity` sweep, or None.
        shapes: the float graph's tensor shapes (for bit-operations), or None.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        made_by = f"qviz {version('qviz')}"
    except PackageNotFoundError:    # run from a checkout that was never installed
        made_by = "qviz"
    quantized = set(recipe.quantize_config(original).layers)
    check = deployability(original, recipe, result)
    folds = ""
    for n, e in enumerate(explanations):
        bits = recipe.bits(e.layer)
        folds += _fold_section(e, bits.weight_bits if bits and bits.weight_bits else 8, recipe, n)
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    body = (f"<h1>qviz report: {escape(name)}</h1>"
            f'<p class="muted">{escape(made_by)}, {when}. One file: it opens with no server and no '
            "network (plotly.js is inside it).</p>"
            + _recipe_section(original, recipe) + _graph_section(original, recipe, result, shapes)
            + _verification_section(result, quantized, data_origin) + _device_section(check)
            + (_sensitivity_section(sensitivity, target_sqnr_db) if sensitivity is not None else "")
            + (f"<h2>The batch-norm fold, on this model's numbers</h2>{folds}" if folds else ""))
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>qviz report: {escape(name)}'
            f"</title><style>{_STYLE}</style><script>{get_plotlyjs()}</script></head><body>{body}</body></html>")


def make_report(graph: Graph, recipe: Recipe, *, name: str, explain=None, sensitivity=None,
                target_sqnr_db: float = 30.0) -> str:
    """Run ``recipe`` on ``graph`` (calibrated and verified on the model's own data,
    :func:`qviz.samples.data_for`), explain the folds of the layers in ``explain``
    (default: the first batch norm the recipe folds), and lay it all out
    (:func:`html_report`). Runs TensorFlow.

    Raises:
        ValueError: a layer in ``explain`` has no foldable batch norm (the message says why).
    """
    from dataclasses import replace

    from ..analysis.fold_explainer import explain_fold
    from ..analysis.fold_orders import fold_orders
    from ..choices import SWEEP_BITS
    from ..pipeline import apply
    from ..runtime import tensor_shapes
    from ..samples import data_for

    data = data_for(graph)
    result = apply(graph, recipe, **data.apply_kwargs())
    if explain is None:
        explain = [c.layer for c in fold_candidates(graph) if c.foldable and recipe.folds(c.layer)][:1]
    explanations = [replace(explain_fold(graph, layer, data.calibration),
                            orders=fold_orders(graph, layer, SWEEP_BITS, narrow_range=recipe.narrow_range,
                                               inputs=data.calibration))
                    for layer in explain]
    return html_report(graph, recipe, result, name=name, explanations=explanations, sensitivity=sensitivity,
                       target_sqnr_db=target_sqnr_db, data_origin=data.origin, shapes=tensor_shapes(graph))
