"""Frozen GraphDefs from ``.pb`` (binary) and ``.pbtxt`` (text) files."""

from __future__ import annotations

from pathlib import Path

from ..ir import Graph, GraphError, parse_tensor_name
from ..ir.ops import LOOP_BACK_OPS
from ..ir.proto import pb
from .errors import LoadError, first_line
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
        graph = Graph.from_graph_def(graph_def, copy=False, source=source, **kwargs)
    except GraphError as exc:
        raise LoadError(source, str(exc)) from None
    looped = _node_on_cycle(graph)
    if looped is not None:
        raise LoadError(source, f"the graph has a cycle through node {looped!r}; a frozen graph must be "
                                "acyclic (only TF1 loops close through NextIteration)")
    return graph



def _node_on_cycle(graph: Graph) -> str | None:
    """A node on a cycle not closed by a TF1 loop, or ``None`` (Kahn's algorithm, no recursion).

    TensorFlow cannot import such a graph, and everything that sorts it would fail later.
    """
    nodes = graph.nodes
    ops = {n.name: n.op for n in nodes}
    preds: dict[str, set[str]] = {}
    consumers: dict[str, list[str]] = {n.name: [] for n in nodes}
    for n in nodes:
        srcs = {parse_tensor_name(t)[0] for t in n.inputs} | set(n.control_inputs)
        srcs = {s for s in srcs if ops.get(s) not in LOOP_BACK_OPS}
        preds[n.name] = srcs
        for s in srcs:
            consumers[s].append(n.name)
    waiting = {name: len(srcs) for name, srcs in preds.items()}
    ready = [name for name, k in waiting.items() if k == 0]
    while ready:
        name = ready.pop()
        for c in consumers[name]:
            waiting[c] -= 1
            if waiting[c] == 0:
                ready.append(c)
    left = {name for name, k in waiting.items() if k > 0}
    if not left:
        return None
    name = next(n.name for n in nodes if n.name in left)   # on a cycle, or downstream of one
    seen = []
    while name not in seen:   # walk back inside the unsorted part until a node repeats
        seen.append(name)
        name = min(s for s in preds[name] if s in left)
    return name


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
        raise LoadError(str(path), f"malformed text GraphDef: {first_line(exc)}") from None
    except RecursionError:
        raise LoadError(str(path), "malformed text GraphDef: nested too deeply") from None
    return graph_from_graph_def(graph_def, str(path), safe_mode=safe_mode)
