"""Frozen GraphDefs from ``.pb`` (binary) and ``.pbtxt`` (text) files."""

from __future__ import annotations

from pathlib import Path

from ..ir import Graph, GraphError
from ..ir.proto import pb
from .errors import LoadError
from .safety import DEFAULT_LIMITS, Limits, read_bounded, refuse_unsafe_ops, unsafe_ops_in_graph_def

__all__ = ["load_pb", "load_pbtxt", "graph_from_graph_def"]


def graph_from_graph_def(graph_def, source: str, *, safe_mode: bool = True, **kwargs) -> Graph:
    """Validate a parsed GraphDef and build the IR; problems become :class:`LoadError`.

    In ``safe_mode``, a graph with ops that touch files, the network or Python
    (:data:`~qviz.importers.safety.UNSAFE_OPS`) is refused: qviz runs the graphs
    it loads (calibration, verification).
    """
    if safe_mode:
        refuse_unsafe_ops(unsafe_ops_in_graph_def(graph_def), source)
    if len(graph_def.node) == 0:
        raise LoadError(source, "the GraphDef has no nodes")
    for i, nd in enumerate(graph_def.node):
        if not nd.name or not nd.op:
            what = "name" if not nd.name else "op type"
            raise LoadError(source, f"not a valid GraphDef: node #{i} has no {what}")
    try:
        return Graph.from_graph_def(graph_def, copy=False, source=source, **kwargs)
    except GraphError as exc:
        raise LoadError(source, str(exc)) from None


def _read(path: Path, limits: Limits) -> bytes:
    data = read_bounded(path, str(path), limits)
    if not data:
        raise LoadError(str(path), "the file is empty")
    return data


def load_pb(path: Path, *, safe_mode: bool = True, limits: Limits = DEFAULT_LIMITS) -> Graph:
    from google.protobuf.message import DecodeError

    data = _read(path, limits)
    graph_def = pb().GraphDef()
    try:
        graph_def.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError):
        hint = (" (a saved_model.pb belongs to a SavedModel: load its directory)"
                if path.name == "saved_model.pb" else "")
        raise LoadError(str(path), f"not a binary GraphDef: the protobuf could not be parsed{hint}") from None
    return graph_from_graph_def(graph_def, str(path), safe_mode=safe_mode)


def load_pbtxt(path: Path, *, safe_mode: bool = True, limits: Limits = DEFAULT_LIMITS) -> Graph:
    from google.protobuf import text_format

    data = _read(path, limits)
    graph_def = pb().GraphDef()
    try:
        text_format.Parse(data.decode("utf-8", errors="replace"), graph_def)
    except text_format.ParseError as exc:
        raise LoadError(str(path), f"malformed text GraphDef: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise LoadError(str(path), "malformed text GraphDef: nested too deeply") from None
    return graph_from_graph_def(graph_def, str(path), safe_mode=safe_mode)
