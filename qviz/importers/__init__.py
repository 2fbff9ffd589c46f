"""Loading models into a :class:`~qviz.ir.Graph`: :func:`load` and :class:`LoadError`.

Every format ends as a frozen TF2 GraphDef turned into the IR. TensorFlow (and
Keras) are imported here only when a model is actually loaded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..choices import KERAS_SUFFIXES, MODEL_FORMATS
from .errors import LoadError
from .safety import DEFAULT_LIMITS, Limits, check_model_path, os_error

if TYPE_CHECKING:
    from ..ir import Graph

__all__ = ["load", "LoadError", "Limits", "DEFAULT_LIMITS"]

_FORMATS = MODEL_FORMATS


def load(source, *, input_shape: Sequence | None = None, safe_mode: bool = True,
         max_bytes: int | None = None) -> Graph:
    """Load a model as a :class:`~qviz.ir.Graph`.

    Args:
        source: a Keras 3 or ``tf_keras`` model object; a path to a ``.keras``
            archive, a legacy ``.h5`` file, a frozen GraphDef (``.pb`` binary or
            ``.pbtxt`` text) or a SavedModel directory; a ``GraphDef`` message;
            or a :class:`Graph` (returned as it is).
        input_shape: the shape of one example (no batch dimension), for Keras
            models whose input shape is not fully known; a list of shapes for
            several inputs.
        safe_mode: refuse, before any of it is deserialized, a model that
            would run code from the file: Keras ``Lambda`` layers or objects
            from non-Keras modules (``.keras``, ``.h5``), and graph ops that
            touch files, the network or Python (``WriteFile``, ``PyFunc``, …,
            see :data:`qviz.importers.safety.UNSAFE_OPS`) in any format; and
            HDF5 weights kept in other files (external storage, external
            links, virtual datasets), which would read any file or block on a FIFO.
        max_bytes: the largest file (or archive, unpacked) read; default
            :data:`DEFAULT_LIMITS` (2 GiB). FIFOs, devices and sockets are
            always refused.

    Raises:
        LoadError: one line naming the source and the cause.

    >>> load("no/such/model.keras")
    Traceback (most recent call last):
    ...
    qviz.importers.errors.LoadError: no/such/model.keras: no such file or directory
    """
    from .keras import freeze_keras_model, is_keras_model

    from ..ir import Graph   # (not at the top: checking a path before serving needs no numpy)

    if isinstance(source, Graph):
        return source
    if input_shape is not None and not _is_shape(input_shape):
        raise LoadError(str(source)[:80], f"input_shape {input_shape!r:.40} is not a shape: give a tuple of "
                                          "positive integers, e.g. (28, 28, 1), or a list of them")
    if is_keras_model(source):
        return freeze_keras_model(source, input_shape)
    if type(source).__name__ == "GraphDef":
        from .graphdef import graph_from_graph_def

        return graph_from_graph_def(source, "GraphDef")
    if not isinstance(source, (str, os.PathLike)):
        raise LoadError(repr(source)[:80], f"cannot load a {type(source).__name__}; expected a Keras "
                                           f"model or a path to {_FORMATS}")
    limits = DEFAULT_LIMITS if max_bytes is None else Limits(max_bytes=int(max_bytes))
    return _load_path(Path(source), input_shape=input_shape, safe_mode=safe_mode, limits=limits)


def _is_shape(value) -> bool:
    """A tuple of positive ints, or a non-empty list of those (several inputs)."""
    def one(s):
        return isinstance(s, (tuple, list)) and len(s) > 0 and all(
            isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in s)

    return one(value) or (isinstance(value, (tuple, list)) and len(value) > 0 and all(one(s) for s in value))


def _load_path(path: Path, *, input_shape, safe_mode: bool, limits: Limits) -> Graph:
    import stat

    from . import graphdef, savedmodel

    label = str(path)
    st = check_model_path(path, label, limits)   # before anything opens it: no FIFO, no device, no giant
    if input_shape is not None and (stat.S_ISDIR(st.st_mode) or path.suffix.lower() in (".pb", ".pbtxt")):
        # (it was ignored: the graph kept the shapes it was frozen with)
        raise LoadError(label, "an input shape applies to Keras models only; a frozen graph's or a "
                               "SavedModel's input shapes are the ones it was saved with")
    if stat.S_ISDIR(st.st_mode):
        return savedmodel.load_saved_model(path, safe_mode=safe_mode, limits=limits)
    suffix = path.suffix.lower()
    try:
        if suffix == ".keras" or suffix in KERAS_SUFFIXES:   # (.h5 / .hdf5)
            return _keras_file(path, input_shape=input_shape, safe_mode=safe_mode, limits=limits)
        if suffix == ".pb":
            return graphdef.load_pb(path, safe_mode=safe_mode, limits=limits)
        if suffix == ".pbtxt":
            return graphdef.load_pbtxt(path, safe_mode=safe_mode, limits=limits)
    except (PermissionError, IsADirectoryError) as exc:
        raise os_error(label, exc) from None
    except RecursionError:
        raise LoadError(label, "the model is nested too deeply to read") from None
    except MemoryError:
        raise LoadError(label, "the model does not fit in memory") from None
    raise LoadError(label, f"unknown model format {suffix or '(no extension)'!r}; expected {_FORMATS}")


def _keras_file(path: Path, *, input_shape, safe_mode: bool, limits: Limits) -> Graph:
    """A Keras file frozen, or read back from the frozen-graph cache when these very bytes
    were frozen with these options before (:mod:`qviz.importers.frozen_cache`)."""
    import logging
    import time

    from . import keras
    from .frozen_cache import FrozenCache, file_key

    started = time.monotonic()
    cache = FrozenCache()
    key = file_key(path, limits, input_shape=input_shape, safe_mode=safe_mode)
    graph = cache.get(key, source=str(path))
    if graph is not None:
        logging.getLogger(__name__).info("%s: read frozen from the cache in %.2f s", path.name,
                                         time.monotonic() - started)
        return graph
    loader = keras.load_keras_file if path.suffix.lower() == ".keras" else keras.load_h5_file
    graph = loader(path, input_shape=input_shape, safe_mode=safe_mode, limits=limits)
    cache.put(key, graph)
    return graph
