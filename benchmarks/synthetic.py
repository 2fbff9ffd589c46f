"""Synthetic graphs of any size: repeated conv → BN (Keras 3 unfused) → ReLU blocks with bypass Adds.

Built directly in the IR (no TensorFlow), ~24 ops a block, so benchmarks can
reach 1M ops. The structure is what the built-in patterns look for.
"""

from __future__ import annotations

from qviz.ir import Graph, Node


def _block(i: int, x: str, skip: str | None) -> tuple[list[Node], str]:
    s = f"block{i}"
    n = []

    def const(name):
        n.append(Node(f"{s}/{name}/resource", "Const"))
        n.append(Node(f"{s}/{name}", "Identity", [f"{s}/{name}/resource"]))
        return f"{s}/{name}"

    w, b = const("kernel"), const("bias")
    n.append(Node(f"{s}/conv", "Conv2D", [x, w], layer=f"conv{i}"))
    n.append(Node(f"{s}/bias_add", "BiasAdd", [f"{s}/conv", b], layer=f"conv{i}"))
    var, gamma, mean, beta = const("var"), const("gamma"), const("mean"), const("beta")
    bn = f"{s}/bn"
    n += [Node(f"{bn}/eps", "Const", layer=f"bn{i}"),
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


def synthetic_graph(num_ops: int) -> Graph:
    """A graph of about ``num_ops`` ops; every other block has a bypass Add."""
    nodes = [Node("input", "Placeholder")]
    x, skip, i = "input", None, 0
    while len(nodes) < num_ops:
        block, out = _block(i, x, skip if i % 2 else None)
        nodes += block
        skip, x, i = x, out, i + 1
    return Graph(nodes, inputs=["input"], outputs=[x])
