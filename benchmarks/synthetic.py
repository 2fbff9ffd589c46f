"""Synthetic graphs of any size: repeated conv → BN (Keras 3 unfused) → ReLU blocks with bypass Adds.

Built directly in the IR (no TensorFlow), ~24 ops a block, so benchmarks can
reach 1M ops. The structure is what the built-in patterns look for.
"""

from __future__ import annotations

import numpy as np

from qviz.ir import Graph, Node

_CHANNELS = 4


def _value(name: str):
    """Small real values, so passes that compute (folding) have something to compute."""
    rng = np.random.default_rng(len(name))
    if name == "kernel":
        return rng.normal(size=(1, 1, _CHANNELS, _CHANNELS)).astype(np.float32)
    if name in ("var", "gamma"):
        return rng.uniform(0.5, 1.5, _CHANNELS).astype(np.float32)
    return rng.normal(size=_CHANNELS).astype(np.float32)


def _block(i: int, x: str, skip: str | None, values: bool) -> tuple[list[Node], str]:
    s = f"block{i}"
    n = []

    def const(name):
        attrs = {"value": _value(name), "dtype": np.dtype("float32")} if values else None
        n.append(Node(f"{s}/{name}/resource", "Const", attrs=attrs))
        n.append(Node(f"{s}/{name}", "Identity", [f"{s}/{name}/resource"]))
        return f"{s}/{name}"

    w, b = const("kernel"), const("bias")
    n.append(Node(f"{s}/conv", "Conv2D", [x, w], layer=f"conv{i}"))
    n.append(Node(f"{s}/bias_add", "BiasAdd", [f"{s}/conv", b], layer=f"conv{i}"))
    var, gamma, mean, beta = const("var"), const("gamma"), const("mean"), const("beta")
    bn = f"{s}/bn"
    eps = {"value": np.array(1e-3, np.float32), "dtype": np.dtype("float32")} if values else None
    n += [Node(f"{bn}/eps", "Const", attrs=eps, layer=f"bn{i}"),
          Node(f"{bn}/add", "AddV2", [var, f"{bn}/eps"], layer=f"bn{i}"),
          Node(f"{bn}/rsqrt", "Rsqrt", [f"{bn}/add"], layer=f"bn{i}"),
          Node(f"{bn}/mul", "Mul", [f"{bn}/rsqrt", gamma], layer=f"bn{i}"),
          Node(f"{bn}/mul_1", "Mul", [f"{s}/bias_add", f"{bn}/mul"], layer=f"bn{i}"),
          Node(f"{bn}/mul_2", "Mul", [mean, f"{bn}/mul"], layer=f"bn{i}"),
          Node(f"{bn}/sub", "Sub", [beta, f"{bn}/mul_2"], layer=f"bn{i}"),
          Node(f"{bn}/add_1", "AddV2", [f"{bn}/mul_1", f"{bn}/sub"], layer=f"bn{i}")]
    out = f"{bn}/add_1"
    if skip is not None:
        n.append(Node(f"{s}/bypass", "AddV2", [out, skip], layer=f"add{i}"))
        out = f"{s}/bypass"
    n.append(Node(f"{s}/relu", "Relu", [out], layer=f"relu{i}"))
    return n, f"{s}/relu"


def synthetic_graph(num_ops: int, values: bool = False) -> Graph:
    """A graph of about ``num_ops`` ops; every other block has a bypass Add.

    With ``values``, constants hold real arrays (4 channels), so folding and
    weight quantization can run; the graph still cannot run in TensorFlow.
    """
    nodes = [Node("input", "Placeholder")]
    x, skip, i = "input", None, 0
    while len(nodes) < num_ops:
        block, out = _block(i, x, skip if i % 2 else None, values)
        nodes += block
        skip, x, i = x, out, i + 1
    return Graph(nodes, inputs=["input"], outputs=[x])
