"""Long jobs split over many workers: a sensitivity sweep by layers, a mixed-precision
search by recipes. A :class:`Plan` says which tasks to send (an optional first one,
then parts that can run at once on any worker) and how to join their results; the
:class:`~qviz.app.celery_worker.CeleryRunner` carries it out over every Celery
worker, so adding workers (on more machines) shortens the job. No TensorFlow here:
the plan is made in the web process.

Each part of a sweep calibrates again (the same ranges: the same graph and data),
so the parts' rows are exactly what one sweep measures.

>>> import qviz
>>> from qviz.samples import sample_path
>>> g = qviz.load(sample_path("lenet_digits"))
>>> p = plan("sweep", ("key", g, (8, 4)), chunks=3)
>>> [args[3] for kind, args, total in p.parts(None)], [total for *_, total in p.parts(None)]
([['conv1', 'logits'], ['conv2'], ['fc1']], [8, 4, 4])
>>> plan("report", ("key", g, "{}", None), chunks=3) is None       # not worth splitting
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..passes import quantizable_layers

__all__ = ["Plan", "plan", "FAN_OUT_KINDS"]

#: The job kinds that are split; every other kind is one task.
FAN_OUT_KINDS = ("sweep", "pareto")


@dataclass(frozen=True)
class Plan:
    """``first``: a task to run before the parts (``(kind, args)``), or None.
    ``parts(first's result)``: the tasks to run at once, each ``(kind, args, expected
    progress total)``. ``merge(first's result, the parts' results in order)``: the job's."""

    first: tuple[str, tuple] | None
    parts: Callable[[object], list[tuple[str, tuple, int]]]
    merge: Callable[[object, list], object]


def _chunks(items: Sequence, n: int) -> list[list]:
    """``items`` dealt round-robin into at most ``n`` non-empty lists (a layer's cost
    varies along a network: dealing mixes early and late layers in every part)."""
    n = max(1, min(n, len(items)))
    return [list(items[i::n]) for i in range(n)]


def _sweep(args: tuple, chunks: int) -> Plan:
    from ..analysis.sensitivity import Sensitivity

    key, graph, bits = args[:3]   # (not the web process's checkpoint: the parts run on other machines)
    order = quantizable_layers(graph)
    per_layer = 2 * len(bits)

    def parts(_):
        return [("sweep_part", (key, graph, bits, chunk), per_layer * len(chunk)) for chunk in _chunks(order, chunks)]

    return Plan(None, parts, lambda _, results: Sensitivity.merge(results, order))


def _pareto(args: tuple, chunks: int) -> Plan:
    key, graph = args[:2]

    def parts(first):
        chain, shapes = first
        n = max(1, min(chunks, len(chain.points)))
        size = -(-len(chain.points) // n)
        # contiguous slices: each part's recipes, in the chain's order
        return [("pareto_measure", (key, graph, replace(chain, points=chain.points[i:i + size]), shapes),
                 len(chain.points[i:i + size])) for i in range(0, len(chain.points), size)]

    def merge(first, results):
        chain, _ = first
        counted = next((r.float_bops for r in results if r.float_bops is not None), chain.float_bops)
        return replace(chain, points=tuple(p for r in results for p in r.points), float_bops=counted)

    return Plan(("pareto_chain", args), parts, merge)


def plan(kind: str, args: tuple, chunks: int) -> Plan | None:
    """How to split job ``kind`` with ``args`` into at most ``chunks`` parts; None for a
    kind that runs as one task."""
    if kind == "sweep":
        return _sweep(args, chunks)
    if kind == "pareto":
        return _pareto(args, chunks)
    return None
