"""SavedModel directories, frozen through their ``serving_default`` signature."""

from __future__ import annotations

from pathlib import Path

from ..ir import Graph
from .errors import LoadError, first_line
from .graphdef import graph_from_graph_def

__all__ = ["load_saved_model", "is_saved_model_dir"]

SIGNATURE = "serving_default"


def is_saved_model_dir(path: Path) -> bool:
    return (path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file()


def load_saved_model(path: Path) -> Graph:
    if not is_saved_model_dir(path):
        raise LoadError(str(path), "a directory, but not a SavedModel (no saved_model.pb inside)")
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    try:
        loaded = tf.saved_model.load(str(path))
    except Exception as exc:  # corrupt protobuf, missing variables, unknown ops...
        first = first_line(exc)
        raise LoadError(str(path), f"TensorFlow could not load the SavedModel: {first}") from None
    signatures = dict(getattr(loaded, "signatures", {}) or {})
    if SIGNATURE not in signatures:
        have = ", ".join(sorted(signatures)) or "none"
        raise LoadError(str(path), f"the SavedModel has no {SIGNATURE!r} signature (it has: {have})")
    try:
        frozen = convert_variables_to_constants_v2(signatures[SIGNATURE])
    except Exception as exc:
        first = first_line(exc)
        raise LoadError(str(path), f"freezing the {SIGNATURE!r} signature failed: {first}") from None
    graph_def = frozen.graph.as_graph_def()
    return graph_from_graph_def(
        graph_def, str(path),
        inputs=[t.name for t in frozen.inputs],
        outputs=[t.name for t in frozen.outputs],
    )
