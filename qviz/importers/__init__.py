"""Loading models into a :class:`~qviz.ir.Graph`: :func:`load` and :class:`LoadError`.

Every format ends as a frozen TF2 GraphDef turned into the IR. TensorFlow (and
Keras) are imported here only when a model is actually loaded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..ir import Graph
from .errors import LoadError

__all__ = ["load", "LoadError"]

_FORMATS = ".keras, .h5, .pb, .pbtxt, or a SavedModel directory"


def load(source, *, input_shape: Sequence | None = None, safe_mode: bool = True) -> Graph:
    """Load a model as a :class:`~qviz.ir.Graph`.

    Args:
        source: a Keras 3 or ``tf_keras`` model object; a path to a ``.keras``
            archive, a legacy ``.h5`` file, a frozen GraphDef (``.pb`` binary or
            ``.pbtxt`` text) or a SavedModel directory; a ``GraphDef`` message;
            or a :class:`Graph` (returned as it is).
        input_shape: the shape of one example (no batch dimension), for Keras
            models whose input shape is not fully known; a list of shapes for
            several inputs.
        safe_mode: refuse ``.keras`` files whose ``Lambda`` layers would run
            arbitrary Python code.

    Raises:
        LoadError: one line naming the source and the cause.

    >>> load("no/such/model.keras")
    Traceback (most recent call last):
    ...
    qviz.importers.errors.LoadError: no/such/model.keras: no such file or directory
    """
    from .keras import freeze_keras_model, is_keras_model

    if isinstance(source, Graph):
        return source
    if is_keras_model(source):
        return freeze_keras_model(source, input_shape)
    if type(source).__name__ == "GraphDef":
        from .graphdef import graph_from_graph_def

        return graph_from_graph_def(source, "GraphDef")
    if not isinstance(source, (str, os.PathLike)):
        raise LoadError(repr(source)[:80], f"cannot load a {type(source).__name__}; expected a Keras "
                                           f"model or a path to {_FORMATS}")
    return _load_path(Path(source), input_shape=input_shape, safe_mode=safe_mode)


def _load_path(path: Path, *, input_shape, safe_mode: bool) -> Graph:
    from . import graphdef, keras, savedmodel

    if not path.exists():
        raise LoadError(str(path), "no such file or directory")
    if path.is_dir():
        return savedmodel.load_saved_model(path)
    try:
        suffix = path.suffix.lower()
        if suffix == ".keras":
            return keras.load_keras_file(path, input_shape=input_shape, safe_mode=safe_mode)
        if suffix in (".h5", ".hdf5"):
            return keras.load_h5_file(path, input_shape=input_shape, safe_mode=safe_mode)
        if suffix == ".pb":
            return graphdef.load_pb(path)
        if suffix == ".pbtxt":
            return graphdef.load_pbtxt(path)
    except PermissionError:
        raise LoadError(str(path), "permission denied") from None
    except IsADirectoryError:
        raise LoadError(str(path), "is a directory") from None
    raise LoadError(str(path), f"unknown model format {suffix or '(no extension)'!r}; expected {_FORMATS}")
