"""A model's own data as keyword arguments, for tests that measure real numbers
(accuracy, calibrated ranges) on a bundled sample: the library never looks
data up by itself (see :func:`qviz.samples.data_for`)."""

from qviz.samples import data_for


def own_data(graph) -> dict:
    """``calibration``, ``verification`` and ``labels`` for ``qviz.apply``."""
    data = data_for(graph)
    return {"calibration": data.calibration, "verification": data.verification, "labels": data.labels}


def own_sweep_data(graph) -> dict:
    """``calibration``, ``inputs`` and ``labels`` for ``qviz.analysis.sensitivity``."""
    data = data_for(graph)
    return {"calibration": data.calibration, "inputs": data.verification, "labels": data.labels}
