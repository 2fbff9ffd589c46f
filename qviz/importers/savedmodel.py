"""SavedModel directories, frozen through their ``serving_default`` signature.

Before TensorFlow sees the directory, every file in it must be a regular file
within the size limit (a FIFO among the variables would hang the restore), and
in safe mode ``saved_model.pb`` is read by qviz first: a graph or function with
ops that touch files, the network or Python is refused, because TensorFlow runs
a SavedModel's initializers and restore functions while loading it.
"""

from __future__ import annotations

import os

from pathlib import Path

from ..ir import Graph
from .errors import LoadError, first_line
from .freeze import freeze
from .graphdef import graph_from_graph_def
from .safety import CHECKPOINT_OPS, DEFAULT_LIMITS, Limits, check_path, read_bounded, refuse_unsafe_ops, \
    unsafe_ops_in_graph_def

__all__ = ["load_saved_model", "is_saved_model_dir"]

SIGNATURE = "serving_default"


def is_saved_model_dir(path: Path) -> bool:
    return (path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file()


def _check_directory(path: Path, limits: Limits) -> None:
    """Every file regular, no more than ``max_members`` of them, ``max_bytes`` in all."""
    total, count = 0, 0
    for root, dirs, files in os.walk(path):
        count += len(dirs) + len(files)   # counted before any is looked at: refusing is quick
        if count > limits.max_members:
            raise LoadError(str(path), f"the SavedModel directory has over {limits.max_members} entries")
        for name in dirs + files:
            full = Path(root) / name
            if full.is_symlink():
                raise LoadError(str(path), f"the SavedModel holds a symbolic link: {str(full.relative_to(path))!r}")
            if name in files:
                st = check_path(full, f"{path}: {full.relative_to(path)}", limits)
                total += st.st_size
                if total > limits.max_bytes:
                    raise LoadError(str(path), "the SavedModel is over the model size limit "
                                               "(raise it with max_bytes= or --max-model-mb)")


def _check_ops(path: Path, limits: Limits) -> None:
    """Refuse a SavedModel whose graphs or functions hold unsafe ops (read by qviz, not TF)."""
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    binary = path / "saved_model.pb"
    try:
        if binary.is_file():
            saved.ParseFromString(read_bounded(binary, str(path), limits))
        else:
            text_format.Parse(read_bounded(path / "saved_model.pbtxt", str(path), limits).decode("utf-8", "replace"),
                              saved)
    except (DecodeError, text_format.ParseError, RuntimeError, ValueError, RecursionError):
        raise LoadError(str(path), "saved_model.pb could not be parsed (truncated or corrupt?)") from None
    for meta in saved.meta_graphs:
        refuse_unsafe_ops(unsafe_ops_in_graph_def(meta.graph_def, allowed=CHECKPOINT_OPS), str(path))


def load_saved_model(path: Path, *, safe_mode: bool = True, limits: Limits = DEFAULT_LIMITS) -> Graph:
    if not is_saved_model_dir(path):
        raise LoadError(str(path), "a directory, but not a SavedModel (no saved_model.pb inside)")
    _check_directory(path, limits)
    if safe_mode:
        _check_ops(path, limits)
    import tensorflow as tf

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
        frozen = freeze(signatures[SIGNATURE])
    except Exception as exc:
        first = first_line(exc)
        raise LoadError(str(path), f"freezing the {SIGNATURE!r} signature failed: {first}") from None
    return graph_from_graph_def(frozen.graph_def, str(path), safe_mode=safe_mode,
                                inputs=list(frozen.inputs), outputs=list(frozen.outputs))
