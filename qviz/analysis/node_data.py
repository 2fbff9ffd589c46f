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
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from ..errors import QvizError
from ..ir import Graph, parse_tensor_name

__all__ = ["NodeData", "NodeDataError", "DEFAULT_GRADIENT", "SQNR_GRADIENT", "layer_sqnr", "on_layers", "on_ops",
           "MAX_NODE_DATA_BYTES"]

#: Blue (smallest) → yellow → red (largest), as Model Explorer's examples colour error.
DEFAULT_GRADIENT = ((0.0, "#2c7bb6"), (0.5, "#ffffbf"), (1.0, "#d7191c"))
#: Low SQNR (much error) red, high blue: the opposite of the default ramp, where high is red.
SQNR_GRADIENT = ((0.0, "#d7191c"), (0.5, "#ffffbf"), (1.0, "#2c7bb6"))
#: A node-data file larger than this is refused before it is parsed.
MAX_NODE_DATA_BYTES = 32 * 2**20
#: …and one naming more nodes than this (no model qviz draws has that many).
MAX_NODE_DATA_KEYS = 500_000
#: The colours a file may give: hex, rgb()/rgba() of numbers, or a plain name. Anything
#: else is refused: colours reach the page's CSS (the legend's gradient), where a string
#: such as ``red),url(//elsewhere)`` would make the browser fetch from another site.
_COLOR = re.compile(r"#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})"
                    r"|rgba?\(\s*[0-9.]+%?\s*(?:,\s*[0-9.]+%?\s*){2,3}\)|[a-zA-Z]{1,30}")


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
    no_value: str = "no value"   # what an unpainted node means here (the legend's words)
    #: words for each threshold's colour, when the values are categories (fold status)
    labels: tuple[str, ...] = ()

    @cached_property
    def span(self) -> tuple[float, float] | None:
        """The smallest and largest finite value (computed once: colouring asks per node)."""
        finite = [v for v in self.values.values() if math.isfinite(v)]
        return (min(finite), max(finite)) if finite else None

    def color_of(self, key: str) -> str | None:
        """The colour ``key`` is painted (None: no value, drawn as it would be without data)."""
        if key in self.colors:
            return self.colors[key]
        return self.color_of_value(self.values.get(key))

    def color_of_value(self, value: float | None) -> str | None:
        """The colour a node of ``value`` is painted (None: no value)."""
        if value is None or not math.isfinite(value):
            return None
        if self.thresholds:
            return next((c for bound, c in self.thresholds if value <= bound), None)
        lo, hi = self.span
        # halved first: hi - lo of values near ±1e308 would overflow to infinity
        return _interpolate(self.gradient, 0.5 if hi == lo else (value / 2 - lo / 2) / (hi / 2 - lo / 2))

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
                raise NodeDataError(f"{source}: node data for {len(data)} graphs "
                                    f"({', '.join(_short(k) for k in list(data)[:5])}); "
                                    "qviz shows one graph: save that graph's data alone")
            data = next(iter(data.values()))
        if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
            raise NodeDataError(f"{source}: no \"results\" object; Model Explorer node data looks like "
                                '{"results": {"node": {"value": 1.0}}, "gradient": [...]}')
        if len(data["results"]) > MAX_NODE_DATA_KEYS:
            raise NodeDataError(f"{source}: {len(data['results'])} nodes, over the {MAX_NODE_DATA_KEYS} "
                                "a node-data file may name")
        values, colors = {}, {}
        for key, result in data["results"].items():
            if not isinstance(result, dict):
                raise NodeDataError(f"{source}: node {_short(key)} is {_short(result)}, not an object "
                                    'with a "value"')
            value = _number(result.get("value"), source, f"node {_short(key)} has value")
            values[key] = value
            if result.get("bgColor") is not None:
                colors[key] = _color(result["bgColor"], source, f"node {_short(key)}")
        gradient = _stops(data.get("gradient"), "stop", source)
        thresholds = _stops(data.get("thresholds"), "value", source)
        return cls(name or source, values, gradient or DEFAULT_GRADIENT, thresholds, colors)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


def _number(value, source: str, what: str) -> float:
    """A finite number from the file, else one line saying which and why."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NodeDataError(f"{source}: {what} {_short(value)}, not a number")
    try:
        number = float(value)
    except OverflowError:   # an integer of hundreds of digits
        raise NodeDataError(f"{source}: {what} an integer too large for a number") from None
    if not math.isfinite(number):
        raise NodeDataError(f"{source}: {what} {_short(value)}, not a finite number")
    return number


def _color(value, source: str, what: str) -> str:
    if not isinstance(value, str) or not _COLOR.fullmatch(value.strip()):
        raise NodeDataError(f"{source}: {what} has colour {_short(value)}; qviz takes #hex, rgb(…) "
                            "or a colour name")
    return value.strip()


def _stops(items, key: str, source: str) -> tuple[tuple[float, str], ...]:
    which = "gradient" if key == "stop" else "thresholds"
    if not items:
        return ()
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items) or len(items) > 1000:
        raise NodeDataError(f"{source}: its {which} must be a list of (at most 1000) objects, each with a "
                            f'numeric "{key}" and a "bgColor"')
    return tuple(sorted((_number(i.get(key), source, f"a {which} entry's {key}"),
                         _color(i.get("bgColor"), source, f"a {which} entry")) for i in items))


def _interpolate(stops, t: float) -> str:
    t = min(1.0, max(0.0, t))
    if t <= stops[0][0]:
        return stops[0][1]
    for (s0, c0), (s1, c1) in zip(stops, stops[1:]):
        if t <= s1:
            f = 0.0 if s1 == s0 else min(1.0, max(0.0, (t - s0) / (s1 - s0)))
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


def layer_sqnr(layers, local: bool = False) -> NodeData:
    """Each layer's output SQNR (dB) as node data, from a verification report's
    ``layers`` (records with ``.layer`` and ``.sqnr_db``; ``local``: its
    ``local_layers``, each layer's own error, and the legend says so). A layer left
    exact (infinite SQNR) gets no value: it is drawn grey, "exact (no error)".

    >>> from types import SimpleNamespace as L
    >>> d = layer_sqnr([L(layer="conv1", sqnr_db=20.0), L(layer="image", sqnr_db=float("inf"))])
    >>> dict(d.values), d.color_of("conv1"), d.color_of("image")
    ({'conv1': 20.0}, '#ffffbf', None)
    >>> layer_sqnr([], local=True).name
    "per-layer SQNR, local: each layer's own error (dB)"
    """
    values = {e.layer: e.sqnr_db for e in layers if math.isfinite(e.sqnr_db)}
    name = "per-layer SQNR, local: each layer's own error (dB)" if local else "per-layer SQNR (dB)"
    return NodeData(name, values, gradient=SQNR_GRADIENT, no_value="exact (no error)")


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
    for key in [*data.values, *(k for k in data.colors if k not in data.values)]:   # in the file's order
        layer = _layer_of(key, graph, layers)
        if layer is None:
            missing += 1
            continue
        if key in data.values and not math.isnan(data.values[key]):
            values[layer] = max(data.values[key], values.get(layer, -math.inf))
        if key in data.colors:
            colors[layer] = data.colors[key]
    return NodeData(data.name, values, data.gradient, data.thresholds, colors, missing, data.no_value), missing


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

