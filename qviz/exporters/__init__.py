"""Writing graphs back out: a frozen ``.pb``/``.pbtxt``, a SavedModel, or a
``.tflite`` model checked against the simulation (:mod:`.tflite`).

TensorFlow is imported only by :func:`save_saved_model` and the TFLite functions.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import QvizError
from ..ir import Graph

__all__ = ["save_graph_def", "save_saved_model", "ExportError", "export_tflite", "TFLiteError"]


class ExportError(QvizError, OSError):
    """The graph could not be written to the given place."""


def save_graph_def(graph: Graph, path) -> Path:
    """Write ``graph`` as a binary (``.pb``) or text (``.pbtxt``) GraphDef; returns the path.

    Any other suffix is refused: a TensorFlow graph named ``model.onnx`` or
    ``model.tflite`` would only mislead whoever opens it next. Each node keeps its
    layer (:data:`qviz.ir.graphdef.LAYER_ATTR`): the file opens with the same layers.
    """
    path = Path(path)
    if path.suffix.lower() not in (".pb", ".pbtxt"):
        raise ExportError(f"{path}: qviz writes TensorFlow GraphDefs; name the file .pb or .pbtxt")
    gd = graph.to_graph_def(layers=True)
    try:
        if path.suffix.lower() == ".pbtxt":
            from google.protobuf import text_format

            path.write_text(text_format.MessageToString(gd))
        else:
            path.write_bytes(gd.SerializeToString())
    except OSError as exc:
        raise ExportError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path


def save_saved_model(graph: Graph, directory) -> Path:
    """Write ``graph`` as a SavedModel with a ``serving_default`` signature.

    The signature takes the graph's inputs (named after their placeholders) and
    returns ``output_0``, ``output_1``… in the order of ``graph.outputs``.
    """
    import tensorflow as tf

    from ..runtime import compiled

    directory = Path(directory)
    if directory.exists() and any(directory.iterdir()):
        raise ExportError(f"{directory}: exists and is not empty")
    fn = compiled(graph)
    specs = [tf.TensorSpec(s.shape, s.dtype, name=t.split(":")[0].replace("/", "_"))
             for s, t in zip(fn.inputs, graph.inputs)]

    def serve(*xs):
        out = fn(*xs)
        out = out if isinstance(out, (list, tuple)) else [out]
        return {f"output_{i}": t for i, t in enumerate(out)}

    module = tf.Module()
    module.serve = tf.function(serve, input_signature=specs)
    try:
        tf.saved_model.save(module, os.fspath(directory), signatures={"serving_default": module.serve})
    except OSError as exc:
        raise ExportError(f"{directory}: cannot write the SavedModel: {exc}") from None
    return directory


from .tflite import TFLiteError, export_tflite  # noqa: E402  (it uses save_saved_model and ExportError)
