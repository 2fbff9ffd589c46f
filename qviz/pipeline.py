"""``qviz.apply``: the whole rewrite a recipe asks for, as one pure function.

Fold first, then quantize, always starting from the original graph: a
result depends only on (graph, recipe), which is what makes live apply, undo
and redo simple in the app.

What the graph is calibrated and verified on is the caller's choice; here,
the sample's own digits (with no data given, fixed-seed noise is used). The
activation ranges are measured on the graph as loaded, batch norms and all, and
carried to the folded graph (:func:`qviz.passes.refold.calibrate_folds`): folding
is exact in float, so they are the folded graph's own, up to float32 round-off,
and one calibration serves every fold selection — the app's, ``qviz apply``'s
and a sweep's numbers are the same.

>>> import qviz
>>> from qviz.samples import data_for, sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> recipe = qviz.Recipe(quantize_layers={"conv1": qviz.LayerBits(4, 8)})
>>> data = data_for(g)
>>> result = qviz.apply(g, recipe, **data.apply_kwargs())
>>> sorted({n.op for n in result.graph.nodes} - {n.op for n in g.nodes})
['FakeQuantWithMinMaxVars']
>>> result.report.accuracy >= 0.97
True

In a notebook a result shows itself as a short summary:

>>> html = result._repr_html_()
>>> html.startswith('<div class="qviz-result">'), "ops added" in html, "test accuracy: 99.78%" in html
(True, True, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .ir import Graph, GraphError
from .ir.ops import FAKE_QUANT_OPS
from .metrics import Report, verify
from .passes import fold_batch_norms, folded_into, quantize
from .passes.calibration import as_input_list, noise_inputs
from .passes.refold import calibrate_folds
from .passes.recipe import Recipe, RecipeError
from .passes.result import Changes, PassResult, Skipped

__all__ = ["apply", "Result", "report_for"]


@dataclass(frozen=True)
class Result:
    """The rewritten graph, what changed against the original, and how much outputs moved."""

    graph: Graph
    changes: Changes
    report: Report | None
    folded: PassResult
    quantized: PassResult
    original: Graph = field(repr=False, compare=False)

    @property
    def skipped(self) -> tuple[Skipped, ...]:
        return self.folded.skipped + self.quantized.skipped

    def change_summary(self) -> str:
        """What the rewrite changed, in the ops a drawing shows (:meth:`qviz.passes.Changes.seen`):
        the app's line under the graph, the CLI's, the HTML report's and a notebook's say the same.
        The weights' quantizers are ops on constants, not drawn (a layer's badge shows its
        weight bits), and counted apart: they are in the rewritten graph."""
        weights = sum(1 for name in self.changes.added if name in self.graph
                      and self.graph.node(name).op in FAKE_QUANT_OPS and self.graph.is_constant(name))
        apart = f", and {weights} weight quantizer{'s' * (weights != 1)} added" if weights else ""
        return f"{self.changes.seen(self.original, self.graph).summary()} (not counting constants){apart}"

    def _repr_html_(self) -> str:
        """A notebook's view of the result: what changed, how far outputs moved, what was skipped."""
        from html import escape

        lines = [f"{self.change_summary()}; {len(self.graph)} ops now"]
        if self.report is not None:
            lines += self.report.format().splitlines()
        lines += [f"skipped {s}" for s in self.skipped]
        items = "".join(f"<li>{escape(line)}</li>" for line in lines)
        return f'<div class="qviz-result"><b>qviz.apply</b><ul style="margin:2px 0">{items}</ul></div>'


def apply(graph: Graph, recipe: Recipe, *, calibration: Sequence[np.ndarray] | None = None,
          verification: Sequence[np.ndarray] | None = None, labels: np.ndarray | None = None,
          report: bool = True, ranges: Mapping[str, tuple[float, float]] | None = None) -> Result:
    """Apply ``recipe`` to ``graph``: fold the chosen batch norms, then quantize.

    Args:
        graph: the original graph (never modified).
        recipe: the user's choices; checked against the graph first.
        calibration: inputs for activation ranges, run through ``graph``
            (one array per graph input, or a function making them, called only
            if ``ranges`` is not given); default: fixed-seed noise.
        verification, labels: inputs (and labels) for the report, as
            ``calibration`` takes them; default: the calibration arrays if
            given as arrays, else fixed-seed noise, no labels.
        report: compute the verification report (runs both graphs).
        ranges: activation ranges measured already (``{tensor: (min, max)}``
            of the folded graph: :func:`~qviz.passes.refold.calibrate_folds`);
            tensors not in it are calibrated on the folded graph.

    Raises:
        RecipeError: the recipe names layers the graph does not have, or asks
            for something a layer cannot do.
    """
    if not isinstance(graph, Graph):
        raise GraphError(f"apply takes a qviz.Graph (qviz.load(path) first), not a {type(graph).__name__}")
    if not isinstance(recipe, Recipe):
        raise RecipeError(f"a recipe is a qviz.Recipe (Recipe.from_dict or Recipe.from_json for "
                          f"{'a dict' if isinstance(recipe, dict) else 'text'}), not a {type(recipe).__name__}")
    recipe.validate(graph)
    # Skipped folds the user did not ask for would be noise: report only explicit asks (a
    # fold asked by name that cannot be done is given to the pass, which says why).
    asked = {k for k, v in recipe.fold_layers.items() if v}
    selection = recipe.fold_selection(graph)
    folds = selection + sorted(asked - set(selection))
    folded = fold_batch_norms(graph, layers=folds)
    folded = PassResult(folded.graph, folded.changes,
                        tuple(s for s in folded.skipped if recipe.fold_default or s.layer in asked))
    config = recipe.quantize_config(folded.graph)
    if ranges is None and config.layers:
        inputs = calibration() if callable(calibration) else calibration
        inputs = noise_inputs(graph) if inputs is None else as_input_list(graph, inputs)
        ranges = calibrate_folds(graph, folds, inputs, ema_decay=config.ema_decay)
    quantized = quantize(folded.graph, config, calibration=calibration, ranges=ranges)
    out = quantized.graph
    changes = folded.changes.then(quantized.changes)
    result = Result(out, changes, None, folded, quantized, graph)
    if report:
        if verification is None and calibration is not None and not callable(calibration):
            verification = calibration   # (noise would give a user's model figures that are not its own)
        result = replace(result, report=report_for(graph, recipe, result, verification, labels))
    return result


def report_for(graph: Graph, recipe: Recipe, result: Result,
               verification: Sequence[np.ndarray] | None = None, labels: np.ndarray | None = None, *,
               local: bool = False) -> Report:
    """The verification report of ``result`` (``apply(graph, recipe, report=False)``).

    Kept apart so an interactive caller can show the rewritten graph first and
    the (slower: it runs both graphs) report when it is ready. ``local``: each
    layer's own error too (:mod:`qviz.metrics.local`).
    """
    return verify(graph, result.graph, None if verification is None else as_input_list(graph, verification),
                  labels=labels, layer_map=folded_into(graph, recipe.fold_selection(graph)), local=local)
