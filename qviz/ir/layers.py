"""Grouping ops into the layers users see.

Two sources of layer names:

* a Keras model: the importer records the name scope each layer call opened
  while tracing and maps every op to the *longest* recorded scope that
  contains it (:func:`layers_from_scopes`) — so ops of a nested model's inner
  layers belong to the inner layer, and TensorFlow's uniquified scopes
  (``functional_1/conv2d_1_2`` for the layer ``conv2d_1``) map back exactly;
* a bare GraphDef: the op's name scope (:func:`layers_from_names`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

__all__ = ["layers_from_names", "layers_from_scopes"]


def layers_from_names(names: Iterable[str]) -> dict[str, str]:
    """Layer of each op of a bare GraphDef: its name scope, at the graph's layer depth.

    Ops are grouped by their first scope component, or by the first two when
    nearly all of the graph lives under one root scope (as in a frozen Keras
    model: ``model/conv1/Conv2D`` → ``model/conv1``). An op with no scope is a
    layer of its own.

    >>> layers_from_names(["x", "conv1/weights", "conv1/Conv2D", "bn1/FusedBatchNorm"])
    {'x': 'x', 'conv1/weights': 'conv1', 'conv1/Conv2D': 'conv1', 'bn1/FusedBatchNorm': 'bn1'}
    >>> layers_from_names(["m/c1/Conv2D", "m/c1/w", "m/c2/Conv2D", "Identity"])["m/c1/w"]
    'm/c1'
    """
    names = list(names)
    split = {n: n.split("/") for n in names}
    scoped = [parts for parts in split.values() if len(parts) > 1]
    depth = 1
    if scoped:
        root, count = Counter(p[0] for p in scoped).most_common(1)[0]
        children = {p[1] for p in scoped if p[0] == root and len(p) > 2}
        if count > 0.8 * len(scoped) and len(children) > 1:
            depth = 2
    out = {}
    for name, parts in split.items():
        keep = min(depth, len(parts) - 1)
        out[name] = "/".join(parts[:keep]) if keep else name
    return out


def layers_from_scopes(names: Iterable[str], scope_to_layer: Mapping[str, str],
                       unscoped: set | None = None) -> dict[str, str]:
    """Layer of each op given the name scopes recorded for each layer call.

    An op belongs to the layer whose scope is the longest one containing it
    (whole path components only). Ops outside every recorded scope get their
    first name component, and are added to ``unscoped`` when it is given.

    >>> scopes = {"f/conv1_1": "conv1", "f/inner_1": "inner", "f/inner_1/d1_1": "d1"}
    >>> layers_from_scopes(["f/conv1_1/Conv2D", "f/inner_1/d1_1/MatMul", "f/inner_1/x", "image"], scopes)
    {'f/conv1_1/Conv2D': 'conv1', 'f/inner_1/d1_1/MatMul': 'd1', 'f/inner_1/x': 'inner', 'image': 'image'}
    """
    out = {}
    for name in names:
        prefix = name
        layer = None
        while True:
            if prefix in scope_to_layer:
                layer = scope_to_layer[prefix]
                break
            prefix, sep, _ = prefix.rpartition("/")
            if not sep:
                break
        if layer is None:
            layer = name.split("/")[0]
            if unscoped is not None:
                unscoped.add(name)
        out[name] = layer
    return out
