"""Analysis above the pipeline: the sensitivity sweep, what TensorFlow Lite
will run of a recipe, the fold explainers, match fates, the quantization grid.
(The verification report lives below the pipeline, in :mod:`qviz.metrics`.)"""

from .deployability import DeployCheck, Fate, deployability
from .sensitivity import Sensitivity, sensitivity

__all__ = ["sensitivity", "Sensitivity", "deployability", "DeployCheck", "Fate"]
