"""How far a rewritten graph's numbers moved from the original's: the
verification report (output and per-layer error, SQNR, accuracy), and each
layer's own error with the float model's values at its inputs (``local``).

Below the pipeline (``qviz.apply`` attaches a report to its result) and above
the passes; what it measures on is the caller's: pass real inputs (a model's
own data) or get fixed-seed noise.
"""

from .local import local_layer_errors
from .report import (VERIFY_EXAMPLES, LayerError, Report, constant_output, layer_outputs, rel_err, sqnr_db,
                     verify)

__all__ = ["verify", "Report", "LayerError", "layer_outputs", "rel_err", "sqnr_db", "constant_output",
           "VERIFY_EXAMPLES", "local_layer_errors"]
