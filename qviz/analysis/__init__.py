"""Analysis on top of the passes: the verification report, the sensitivity sweep,
and what TensorFlow Lite will run of a recipe."""

from .deployability import DeployCheck, Fate, deployability
from .sensitivity import Sensitivity, sensitivity
from .verify import LayerError, Report, constant_output, layer_outputs, rel_err, sqnr_db, verification_data, verify

__all__ = ["verify", "Report", "LayerError", "layer_outputs", "verification_data", "rel_err", "sqnr_db",
           "constant_output", "sensitivity", "Sensitivity", "deployability", "DeployCheck", "Fate"]
