"""A number per node, and the colours it paints: qviz's own metrics and Model
Explorer's node-data JSON, both ways.

Model Explorer (Google AI Edge) paints a graph from a *node data* file: per node
key a ``value``, and either ``thresholds`` (value ≤ threshold → that colour, the
first that fits) or a ``gradient`` (stops 0…1 between the smallest and largest
value). AI Edge Quantizer writes its per-tensor error in that format. qviz reads
it to paint its own graph, and writes its metrics in it for Model Explorer.

Keys name ops (``model/conv1/Conv2D``), their output tensors (``…/Conv2D:0``) or
layers (``conv1``); :func:`on_layers` maps any of them to layers.

>>> data = NodeData("weight |max|", {"conv1": 0.5, "conv2": 2.0, "fc1": 1.25})
>>> data.color_of("conv1"), data.color_of("conv2"), data.color_of("relu1")
('#2c7bb6', '#d7191c', None)
>>> back = NodeData.from_model_explorer(data.to_model_explorer(), "d.json")
>>> back.values == data.values, back.gradient == data.gradient
(True, True)
>>> NodeData.from_model_explorer('{"results": {"conv1": {"value": "high"}}}', "d.json")
Traceback (most recent call last):
...
qviz.analysis.node_data.NodeDataError: d.json: node 'conv1' has value 'high', not a number
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import QvizError
from ..ir import Graph, parse_tensor_name

__all__ = ["NodeData", "NodeDataError", "DEFAULT_GRADIENT", "on_layers", "on_ops", "MAX_NODE_DATA_BYTES"]

#: Blue (smallest) → yellow → red (largest), as Model Explorer's examples colour error.
DEFAULT_GRADIENT = ((0.0, "#2c7bb6"), (0.5, "#ffffbf"), (1.0, "#d7191c"))
#: A node-data file larger than this is refused before it is parsed.
MAX_NODE_DATA_BYTES = 32 * 2**20


class NodeDataError(QvizError):
    """A node-data file qviz cannot read (the message names the file and the cause)."""


@dataclass(frozen=True)
class NodeData:
    """``values``: key → number; coloured by ``thresholds`` (``((upper bound, colour), …)``,
    ascending) if given, else by ``gradient`` (``((stop 0…1, colour), …)``)."""

    name: str
    values: Mapping[str, float]
    gradient: tuple[tuple[float, str], ...] = DEFAULT_GRADIENT
    thresholds: tuple[tuple[float, str], ...] = ()
    colors: Mapping[str, str] = field(default_factory=dict)   # per-key colours the file fixed
    unmatched: int = 0   # keys of the file that name nothing in the model (:func:`on_layers`)

    @property
    def span(self) -> tuple[float, float] | None:
        finite = [v for v in self.values.values() if math.isfinite(v)]
        return (min(finite), max(finite)) if finite else None

    def color_of(self, key: str) -> str | None:
        """The colour ``key`` is painted (None: no value, drawn as it would be without data)."""
        if key in self.colors:
            return self.colors[key]
        value = self.values.get(key)
        if value is None or not math.isfinite(value):
            return None
        if self.thresholds:
            return next((c for bound, c in self.thresholds if value <= bound), None)
        lo, hi = self.span
        return _interpolate(self.gradient, 0.5 if hi == lo else (value - lo) / (hi - lo))

    def to_model_explorer(self, indent: int | None = 2) -> str:
        """This data as Model Explorer's node-data JSON (one graph's: ``GraphNodeData``)."""
        results = {k: {"value": v} for k, v in self.values.items() if math.isfinite(v)}
        for k, c in self.colors.items():
            results.setdefault(k, {"value": 0})["bgColor"] = c
        out: dict = {"results": results}
        if self.thresholds:
            out["thresholds"] = [{"value": b, "bgColor": c} for b, c in self.thresholds]
        else:
            out["gradient"] = [{"stop": s, "bgColor": c} for s, c in self.gradient]
        return json.dumps(out, indent=indent)

    @classmethod
    def from_model_explorer(cls, text: str | bytes, source: str, name: str = "") -> "NodeData":
        """Read Model Explorer's node-data JSON (``GraphNodeData``, or ``ModelNodeData``
        with one graph). Raises :class:`NodeDataError` naming ``source`` and the cause."""
        if len(text) > MAX_NODE_DATA_BYTES:
            raise NodeDataError(f"{source}: {len(text)} bytes, over the {MAX_NODE_DATA_BYTES // 2**20} MB "
                                "a node-data file may have")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise NodeDataError(f"{source}: not JSON ({str(exc).splitlines()[0][:120]})") from None
        if isinstance(data, dict) and "results" not in data and data and all(
                isinstance(v, dict) and "results" in v for v in data.values()):
            if len(data) != 1:
                raise NodeDataError(f"{source}: node data for {len(data)} graphs ({', '.join(list(data)[:5])}); "
                                    "qviz shows one graph: save that graph's data alone")
            data = next(iter(data.values()))
        if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
            raise NodeDataError(f"{source}: no \"results\" object; Model Explorer node data looks like "
                                '{"results": {"node": {"value": 1.0}}, "gradient": [...]}')
        values, colors = {}, {}
        for key, result in data["results"].items():
            value = result.get("value") if isinstance(result, dict) else None
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise NodeDataError(f"{source}: node {key!r} has value {value!r}, not a number")
            values[str(key)] = float(value)
            if isinstance(result.get("bgColor"), str):
                colors[str(key)] = result["bgColor"][:40]
        gradient = _stops(data.get("gradient"), "stop", source)
        thresholds = _stops(data.get("thresholds"), "value", source)
        return cls(name or source, values, gradient or DEFAULT_GRADIENT, thresholds, colors)


def _stops(items, key: str, source: str) -> tuple[tuple[float, str], ...]:
    if not items:
        return ()
    if not isinstance(items, list) or not all(
            isinstance(i, dict) and isinstance(i.get(key), (int, float)) and isinstance(i.get("bgColor"), str)
            for i in items):
        raise NodeDataError(f"{source}: each entry of its {'gradient' if key == 'stop' else 'thresholds'} "
                            f"needs a numeric \"{key}\" and a \"bgColor\"")
    return tuple(sorted((float(i[key]), i["bgColor"][:40]) for i in items))


def _interpolate(stops, t: float) -> str:
    t = min(1.0, max(0.0, t))
    for (s0, c0), (s1, c1) in zip(stops, stops[1:]):
        if t <= s1:
            f = 0.0 if s1 == s0 else (t - s0) / (s1 - s0)
            a, b = _rgb(c0), _rgb(c1)
            if a is None or b is None:   # a colour name: no blending, the nearer stop
                return c0 if f < 0.5 else c1
            return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b))
    return stops[-1][1]


def _rgb(color: str):
    if len(color) == 7 and color.startswith("#"):
        try:
            return tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))
        except ValueError:
            return None
    return None


def on_layers(data: NodeData, graph: Graph) -> tuple[NodeData, int]:
    """``(data keyed by layer, how many keys are not in graph)``: each key taken as a
    layer name, an op name or a tensor name; a layer several keys fall in takes the
    largest value (the worst, for an error) and the last fixed colour.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> conv = next(n for n in g.nodes if n.op == "Conv2D" and n.layer == "conv1")
    >>> d = NodeData("err", {conv.name: 0.5, f"{conv.name}:0": 0.7, "relu1": 0.1, "nowhere/op": 9.0})
    >>> layered, missing = on_layers(d, g)
    >>> dict(layered.values), missing
    ({'conv1': 0.7, 'relu1': 0.1}, 1)
    """
    layers = set(graph.layers)
    values: dict[str, float] = {}
    colors: dict[str, str] = {}
    missing = 0
    for key in data.values.keys() | data.colors.keys():
        layer = _layer_of(key, graph, layers)
        if layer is None:
            missing += 1
            continue
        if key in data.values:
            values[layer] = max(data.values[key], values.get(layer, -math.inf))
        if key in data.colors:
            colors[layer] = data.colors[key]
    return NodeData(data.name, values, data.gradient, data.thresholds, colors, missing), missing


def _layer_of(key: str, graph: Graph, layers) -> str | None:
    if key in layers:
        return key
    try:
        name = parse_tensor_name(key)[0]
    except ValueError:   # not a tensor name either ("a:b:c")
        return None
    return graph.node(name).layer if name in graph else None


def on_ops(data: NodeData, graph: Graph) -> NodeData:
    """``data`` keyed by layer, re-keyed by op name: each layer's value on every op of
    the layer that computes (constants left out) — Model Explorer's node ids for a
    TensorFlow graph are its op names.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> ops = on_ops(NodeData("err", {"conv1": 2.0}), g)
    >>> sorted({g.node(k).layer for k in ops.values}), any(g.node(k).op == "Conv2D" for k in ops.values)
    (['conv1'], True)
    """
    values = {n.name: data.values[n.layer] for n in graph.nodes
              if n.layer in data.values and not graph.is_constant(n)}
    colors = {n.name: data.colors[n.layer] for n in graph.nodes
              if n.layer in data.colors and not graph.is_constant(n)}
    return NodeData(data.name, values, data.gradient, data.thresholds, colors)

