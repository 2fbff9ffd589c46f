"""What ``qviz info`` reports about a graph, as data."""

from __future__ import annotations

from dataclasses import dataclass

from .ir import Graph, Shape
from .ir.ops import BATCH_NORM_OPS
from .passes.fold_batch_norms import batch_norm_nodes
from .passes.quant_points import quantized_note

__all__ = ["Summary", "summarize", "format_summary"]


@dataclass(frozen=True)
class Summary:
    inputs: tuple[tuple[str, Shape | None, str], ...]   # (tensor, shape, dtype)
    outputs: tuple[tuple[str, Shape | None, str], ...]
    op_counts: dict
    layers: tuple[str, ...]
    num_nodes: int
    num_batch_norms: int
    num_fused_batch_norms: int
    quantized: str | None = None    # which layers the graph fake-quantizes already


def summarize(graph: Graph, shapes: dict | None = None) -> Summary:
    """Collect the facts ``qviz info`` prints. ``shapes`` maps tensor → Shape (optional)."""
    shapes = shapes or {}

    def describe(tensor):
        node = graph.producer(tensor)
        shape = shapes.get(tensor)
        if shape is None and node.op == "Placeholder":
            shape = node.attrs.get("shape")
        dtype = node.attrs.get("dtype") or node.attrs.get("T") or "?"
        return tensor, shape, str(dtype)

    bns = batch_norm_nodes(graph)
    return Summary(
        inputs=tuple(describe(t) for t in graph.inputs),
        outputs=tuple(describe(t) for t in graph.outputs),
        op_counts=graph.op_counts(),
        layers=graph.layers,
        num_nodes=len(graph),
        num_batch_norms=len(bns),
        num_fused_batch_norms=sum(n.op in BATCH_NORM_OPS for n in bns),
        quantized=quantized_note(graph),
    )


def _fmt_shape(shape) -> str:
    if shape is None:
        return "?"
    if isinstance(shape, Shape) and shape.rank is None:
        return "(unknown rank)"
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ")"


def format_summary(s: Summary, title: str = "") -> str:
    """The text ``qviz info`` prints."""
    lines = [title] if title else []
    lines.append(f"nodes: {s.num_nodes}   layers: {len(s.layers)}   "
                 f"batch norms: {s.num_batch_norms} "
                 f"({s.num_fused_batch_norms} fused, {s.num_batch_norms - s.num_fused_batch_norms} unfused)")
    if s.quantized:
        lines.append(s.quantized)
    for label, items in (("inputs", s.inputs), ("outputs", s.outputs)):
        lines.append(f"{label}:")
        lines.extend(f"  {t}  {_fmt_shape(shape)}  {dt}" for t, shape, dt in items)
    lines.append("ops by type:")
    lines.extend(f"  {op:<28} {n}" for op, n in s.op_counts.items())
    lines.append("layers:")
    lines.extend(f"  {layer}" for layer in s.layers)
    return "\n".join(lines)


