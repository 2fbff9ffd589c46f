"""The quantization grid of a fake-quantized tensor: its levels and clipping range.

TensorFlow's FakeQuant ops first *nudge* ``[min, max]`` so that zero is exactly
representable, then round to ``2^bits`` levels (``2^bits − 1`` with
``narrow_range``, which drops the lowest).

>>> lv = quant_levels(-1.0, 1.0, 2, narrow_range=True)
>>> [round(float(x), 3) for x in lv]
[-1.0, 0.0, 1.0]
>>> len(quant_levels(0.0, 6.0, 4))
16
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph
from ..ir.ops import FAKE_QUANT_OPS
from ..passes.constants import constant_value

__all__ = ["quant_levels", "QuantGrid", "quant_grids", "grids_of_layer", "activation_tensors", "subsample"]


def quant_levels(lo: float, hi: float, bits: int, narrow_range: bool = False) -> np.ndarray:
    """The values a FakeQuant with this range can output (TF's nudging included)."""
    qmin = 1 if narrow_range else 0
    qmax = 2 ** bits - 1
    scale = (hi - lo) / (qmax - qmin)
    zero = qmin - lo / scale
    zero = float(np.clip(np.round(zero), qmin, qmax))
    nudged_lo = (qmin - zero) * scale
    return nudged_lo + scale * np.arange(qmax - qmin + 1)


@dataclass(frozen=True)
class QuantGrid:
    node: str            # the FakeQuant op
    kind: str            # "weights" | "activation"
    tensor: str          # the tensor it quantizes
    bits: int
    narrow_range: bool
    per_channel: bool
    lo: np.ndarray       # clipping range (per channel: one per output channel)
    hi: np.ndarray
    values: np.ndarray | None   # the weights (activations are sampled by the caller)

    def levels(self, channel: int = 0) -> np.ndarray:
        lo = float(np.ravel(self.lo)[channel if self.per_channel else 0])
        hi = float(np.ravel(self.hi)[channel if self.per_channel else 0])
        return quant_levels(lo, hi, self.bits, self.narrow_range)


def quant_grids(graph: Graph, layers: set[str]) -> list[QuantGrid]:
    """The FakeQuant ops of a rewritten graph that belong to ``layers``."""
    out = []
    for node in graph.nodes:
        if node.op not in FAKE_QUANT_OPS or node.layer not in layers:
            continue
        source = node.inputs[0]
        kind = "weights" if graph.is_constant(source) else "activation"
        lo, hi = (constant_value(graph, t) for t in node.inputs[1:3])
        out.append(QuantGrid(node.name, kind, source, int(node.attrs["num_bits"]),
                             bool(node.attrs.get("narrow_range", False)),
                             node.op.endswith("PerChannel"), lo, hi,
                             constant_value(graph, source) if kind == "weights" else None))
    return out


def grids_of_layer(graph: Graph, layer: str, reach: int = 3, limit: int = 3) -> list[QuantGrid]:
    """The quantization grids a user selecting ``layer`` wants to see: its own
    weights' grid, and the activation grids within ``reach`` ops downstream of
    its output (a conv's activation is quantized after its BiasAdd and ReLU,
    which may be layers of their own); at most ``limit``, in graph order.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> r = qviz.apply(g, qviz.Recipe.default(g), report=False)
    >>> [grid.kind for grid in grids_of_layer(r.graph, "conv1")]
    ['weights', 'activation']
    """
    from ..metrics import layer_outputs

    if layer not in graph.layers:
        return []
    near, frontier = {layer}, [layer_outputs(graph).get(layer)]
    for _ in range(reach):
        nxt = []
        for t in filter(None, frontier):
            for c in graph.consumers(t):
                near.add(c.layer)
                nxt.append(c.output(0))
        frontier = nxt
    grids = [g for g in quant_grids(graph, near)
             if (graph.node(g.node).layer == layer if g.kind == "weights"
                 else graph.producer(g.tensor).layer in near)]
    return grids[:limit]


def activation_tensors(graph: Graph) -> list[str]:
    """The tensors the activation quantizers of a rewritten graph read (not weights)."""
    return list(dict.fromkeys(n.inputs[0] for n in graph.nodes
                              if n.op in FAKE_QUANT_OPS and not graph.is_constant(n.inputs[0])))


def subsample(values: np.ndarray, keep: int = 16384, seed: int = 0) -> np.ndarray:
    """At most ``keep`` of ``values`` (flattened), picked at random with a fixed seed:
    enough for a histogram, and a whole network's activations stay a few MB.

    >>> subsample(np.arange(10.0), keep=4).shape, subsample(np.arange(3.0)).tolist()
    ((4,), [0.0, 1.0, 2.0])
    """
    flat = np.asarray(values).ravel()
    if flat.size <= keep:
        return flat
    return flat[np.random.default_rng(seed).choice(flat.size, keep, replace=False)]
