"""Quantization-aware training: a recipe carried over to a trainable Keras model.

``qviz export-qat MODEL --recipe R.json -o model_qat.keras`` (or
:func:`export_qat`) writes a Keras model whose folded layers keep their batch
norm trainable (QKeras' ``ema_stats_folding`` / ``batch_stats_folding``) and
fake-quantize their weights and activations at the recipe's bits with a
straight-through estimator; ``model.fit`` it, and load it back with
:func:`qviz.load` to see the FakeQuant ops.

:mod:`.plan` needs no TensorFlow; :mod:`.build` and :mod:`qviz.keras_layers`
import Keras when first used.
"""

from __future__ import annotations

from ..choices import is_keras_file
from .plan import LayerPlan, OutputQuant, QATPlan, QATPlanError, qat_plan

__all__ = ["QATPlan", "LayerPlan", "OutputQuant", "QATPlanError", "qat_plan", "export_qat"]


def export_qat(model, recipe, out=None, *, folding_mode: str = "ema_stats_folding",
               freeze_bn_delay: int | None = None, ema_decay: float = 0.99, calibration=None,
               safe_mode: bool = True):
    """Build (and with ``out``, save as .keras) the QAT model of a Keras ``model``.

    Args:
        model: a ``keras.Model``, the path of a ``.keras`` / ``.h5`` file, or a graph
            :func:`qviz.load` read from one (its file is used).
        recipe: a :class:`qviz.Recipe`.
        out: where to write the ``.keras`` file (optional).
        calibration: what the activation quantizers' initial ranges are
            measured on: arrays (one per model input), or a function of the
            frozen graph returning them (the CLI passes the model's own data);
            default: fixed-seed noise.
        safe_mode: refuse a file that would run code when read (see :func:`qviz.load`).

    Returns:
        The QAT ``keras.Model`` (compiled like the original, if it was).

    Raises:
        QATPlanError, RecipeError, LoadError: with the cause in one line.
    """
    from .._text import first_line
    from ..importers import load
    from ..importers.errors import LoadError
    from .build import build_qat_model, save_qat_model

    from ..ir import Graph

    if isinstance(model, Graph):   # (it has .layers too: it was taken for a Keras model)
        if not (model.source and is_keras_file(str(model.source))):
            raise QATPlanError("export-qat needs a Keras model or its file, not a frozen graph: a graph "
                               "has no trainable layers to rebuild (a graph loaded from a .keras file: "
                               "pass that file)")
        model = model.source   # the file it was loaded from
    keras_model = model
    if not hasattr(model, "layers"):
        import keras

        path = str(model)
        if not is_keras_file(path):
            raise QATPlanError(f"{path}: export-qat needs a Keras model (.keras, .h5 or .hdf5); a frozen graph "
                               "has no trainable layers to rebuild")
        # qviz's loader first: its safety checks (no code from the file) run before Keras reads it.
        graph = load(model, safe_mode=safe_mode)
        try:
            keras_model = keras.models.load_model(path, compile=True, safe_mode=safe_mode)
        except Exception as exc:  # Keras raises many types for unreadable files
            raise LoadError(path, "export-qat rebuilds Keras 3 models, and Keras 3 cannot read this one "
                                  f"(a tf_keras / Keras 2 file?): {first_line(exc, 160)}") from None
    else:
        graph = load(model)
    if callable(calibration):
        calibration = calibration(graph)
    plan = qat_plan(graph, recipe, calibration=calibration)
    from ..importers.keras import keras_safe_mode

    # (the model is rebuilt through its config: a Lambda layer let in by safe_mode=False
    # is deserialized again, in Keras' safe-mode scope as asked)
    with keras_safe_mode("keras.src.saving.serialization_lib", safe_mode):
        qat = build_qat_model(keras_model, plan, folding_mode=folding_mode, freeze_bn_delay=freeze_bn_delay,
                              ema_decay=ema_decay)
    if out is not None:
        save_qat_model(qat, out)
    return qat

