"""Graph rewrites: batch-norm folding and fake quantization, as pure functions.

Each pass takes a :class:`~qviz.ir.Graph` and returns a
:class:`~qviz.passes.rewrite.PassResult` (the new graph, the change record, and
what it left alone, with reasons); the graph it was given is never modified.
"""

from .fold_batch_norms import FoldCandidate, fold_batch_norms, fold_candidates, fold_values, folded_into
from .fold_training import fold_batch_norms_training
from .quantize import (LayerBits, QuantizeConfig, quant_points, quantizable_layers, quantizable_units, quantize,
                       quantized_in_graph, quantized_note)
from .recipe import Recipe, RecipeError
from .result import Changes, PassResult, Skipped
from .rules import apply_rules, parse_rule, recorded_edit
from .rewrite import GraphEditor

__all__ = ["Recipe", "RecipeError", "apply_rules", "parse_rule", "recorded_edit",
           "quantize", "QuantizeConfig", "LayerBits", "quant_points", "quantizable_layers",
           "quantizable_units", "quantized_in_graph", "quantized_note",
           "fold_batch_norms", "fold_batch_norms_training", "fold_candidates", "folded_into", "fold_values", "FoldCandidate",
           "Changes", "GraphEditor", "PassResult", "Skipped"]
