"""The graph IR: an immutable, ordered set of :class:`~qviz.ir.node.Node`.

A :class:`Graph` is what every other part of qviz works on. It is built from a
TensorFlow ``GraphDef`` (:meth:`Graph.from_graph_def`), turned back into one
losslessly (:meth:`Graph.to_graph_def`), and never changed in place: rewrites
build new graphs (:meth:`Graph.with_nodes`).

>>> import numpy as np
>>> from qviz.ir import Graph, Node
>>> g = Graph(
...     [Node("x", "Placeholder", attrs={"dtype": np.dtype("float32")}),
...      Node("w", "Const", attrs={"value": np.float32(2.0), "dtype": np.dtype("float32")}),
...      Node("y", "Mul", ["x", "w"], attrs={"T": np.dtype("float32")})],
...     inputs=["x:0"], outputs=["y:0"])
>>> [n.name for n in g.consumers("x:0")], g.layers
(['y'], ('x', 'w', 'y'))
>>> Graph.from_graph_def(g.to_graph_def()).node("y").inputs
('x:0', 'w:0')
"""

from __future__ import annotations

import heapq
import weakref
from types import MappingProxyType
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from .errors import GraphError
from .graphdef import graph_def_from_nodes, nodes_from_graph_def
from .layers import layers_from_names
from .node import Node, canonical_tensor_name, parse_tensor_name, tensor_name
from .proto import pb
from .structure import consumer_indices, constant_nodes, dataflow_digraph, inferred_outputs, is_sorted, layer_order

if TYPE_CHECKING:   # (networkx is imported when a pass asks for the graph as one)
    import networkx

T = TypeVar("T")

__all__ = ["Graph", "graphs_containing"]

# Every live graph, so a node can be traced back to its graph (GraphMatcher.match_op(node)).
_LIVE: "weakref.WeakSet[Graph]" = weakref.WeakSet()


def graphs_containing(node: Node) -> list["Graph"]:
    """The live graphs that hold this very node object (a rewrite shares the
    nodes it did not change with the graph it came from)."""
    return [g for g in list(_LIVE) if g._nodes.get(node.name) is node]


class Graph:
    """An immutable dataflow graph of TensorFlow ops, grouped into layers.

    Args:
        nodes: the nodes, in graph order (usually topological).
        inputs: tensor names fed by the user (default: every ``Placeholder``).
        outputs: tensor names the graph produces (default: the outputs no op consumes).
        layer_scopes: layer name → the name scope its ops live under; used to
            name nodes that passes add to a layer. Default: the layer name.
        versions, library: serialized ``VersionDef`` / ``FunctionDefLibrary``
            carried through the GraphDef round trip untouched.
        source: where the graph came from (a file path or a model name), as the
            loader saw it; rewrites keep it. The passes and the report never
            read it; the app and the CLI do, to find a bundled sample's own
            data (:func:`qviz.samples.data_for`) and the Keras file QAT rebuilds.

    Raises:
        GraphError: duplicate names, or an input, output or control input that
            names a node that does not exist.
    """

    def __init__(
        self,
        nodes: Iterable[Node],
        inputs: Sequence[str] | None = None,
        outputs: Sequence[str] | None = None,
        *,
        layer_scopes: Mapping[str, str] | None = None,
        versions: bytes = b"",
        library: bytes = b"",
        source: str = "",
    ):
        by_name: dict[str, Node] = {}
        for node in nodes:
            if node.name in by_name:
                raise GraphError(f"duplicate node name {node.name!r}")
            by_name[node.name] = node
        self._nodes = by_name
        self._order = tuple(by_name.values())
        for node in self._order:
            for t in node.inputs:
                if parse_tensor_name(t)[0] not in by_name:
                    raise GraphError(f"node {node.name!r} has input {t!r}, but no node "
                                     f"{parse_tensor_name(t)[0]!r} exists")
            for c in node.control_inputs:
                if c not in by_name:
                    raise GraphError(f"node {node.name!r} has control input {c!r}, but no such node exists")
        if inputs is None:
            inputs = [n.output(0) for n in self._order if n.op == "Placeholder"]
        self._inputs = tuple(self.checked_tensor(t, "input") for t in inputs)
        if outputs is None:
            outputs = inferred_outputs(self._order)
        self._outputs = tuple(self.checked_tensor(t, "output") for t in outputs)
        self._layers = layer_order(self._order)
        self._layer_scopes = dict(layer_scopes or {})
        self._versions = versions
        self._library = library
        self._source = source
        self._memo: dict = {}
        _LIVE.add(self)

    # -- construction ---------------------------------------------------

    @classmethod
    def from_graph_def(
        cls,
        graph_def,
        *,
        inputs: Sequence[str] | None = None,
        outputs: Sequence[str] | None = None,
        layer_of: Mapping[str, str] | None = None,
        layer_scopes: Mapping[str, str] | None = None,
        copy: bool = True,
        source: str = "",
    ) -> "Graph":
        """Build a graph from a ``tf.compat.v1.GraphDef``.

        Args:
            graph_def: the GraphDef (binary protobuf message).
            inputs, outputs: tensor names; inferred when not given.
            layer_of: node name → layer name; default: the name-scope rule of
                :func:`qviz.ir.layers.layers_from_names`.
            copy: copy the GraphDef first, so later changes to it by the caller
                cannot reach this graph. Importers that own a fresh GraphDef
                pass ``False``.
        """
        if copy:
            own = pb().GraphDef()
            own.CopyFrom(graph_def)
            graph_def = own
        if layer_of is None:
            layer_of = layers_from_names(nd.name for nd in graph_def.node)
        return cls(
            nodes_from_graph_def(graph_def, layer_of), inputs, outputs, layer_scopes=layer_scopes,
            versions=graph_def.versions.SerializeToString() if graph_def.HasField("versions") else b"",
            library=graph_def.library.SerializeToString() if graph_def.HasField("library") else b"",
            source=source,
        )

    def to_graph_def(self, needed_by: Iterable[str] | None = None, *, layers: bool = False):
        """A fresh ``GraphDef`` with this graph's nodes, in graph order; with ``needed_by``
        (tensor or node names), only the nodes they depend on, through data and control
        inputs; ``layers``: each node's layer written in it, as a file keeps it
        (:data:`qviz.ir.graphdef.LAYER_ATTR`).

        Output 0 is written as the bare node name, as TensorFlow itself does.

        >>> g = Graph([Node("x", "Placeholder"), Node("a", "Neg", ["x"]), Node("b", "Abs", ["x"])])
        >>> [n.name for n in g.to_graph_def().node], [n.name for n in g.to_graph_def(needed_by=["a:0"]).node]
        (['x', 'a', 'b'], ['x', 'a'])
        """
        nodes = self._order
        if needed_by is not None:
            keep: set[str] = set()
            stack = [parse_tensor_name(t)[0] for t in needed_by]
            while stack:
                name = stack.pop()
                if name not in keep and name in self._nodes:
                    keep.add(name)
                    node = self._nodes[name]
                    stack.extend(parse_tensor_name(t)[0] for t in node.inputs)
                    stack.extend(node.control_inputs)
            nodes = [n for n in self._order if n.name in keep]
        return graph_def_from_nodes(nodes, self._versions, self._library, layers=layers)

    def with_nodes(
        self,
        nodes: Iterable[Node],
        *,
        inputs: Sequence[str] | None = None,
        outputs: Sequence[str] | None = None,
        layer_scopes: Mapping[str, str] | None = None,
    ) -> "Graph":
        """A new graph with these nodes and this graph's inputs, outputs and metadata."""
        return Graph(
            nodes,
            self._inputs if inputs is None else inputs,
            self._outputs if outputs is None else outputs,
            layer_scopes={**self._layer_scopes, **(layer_scopes or {})},
            versions=self._versions,
            library=self._library,
            source=self._source,
        )

    # -- derived data ------------------------------------------------------

    @property
    def source(self) -> str:
        """Where the graph came from (a path or model name), as its loader saw it."""
        return self._source

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """Derived data about this graph, computed once and kept with it.

        A graph never changes, so anything computed from it alone (an index, a
        compiled TensorFlow function, shapes) can be kept as long as the graph
        lives. ``key`` names the datum; by convention it starts with the
        computing module's name (``"runtime.shapes"``). ``compute`` must depend
        on this graph only: the memo is not pickled, and it never holds graph
        content. Two threads asking at once may both compute; the first value
        stored wins and both get it.

        >>> g = Graph([Node("x", "Placeholder")])
        >>> calls = []
        >>> g.memo("doc.twice", lambda: calls.append(1) or len(g)), g.memo("doc.twice", lambda: 0)
        (1, 1)
        >>> len(calls)
        1
        """
        try:
            return self._memo[key]
        except KeyError:
            pass
        return self._memo.setdefault(key, compute())   # atomic: the first value stored wins

    def memoized(self, key: Hashable) -> bool:
        """Whether :meth:`memo` has ``key`` already (asking it would not compute)."""
        return key in self._memo

    # -- lookup -----------------------------------------------------------

    @property
    def nodes(self) -> tuple[Node, ...]:
        """All nodes, in graph order."""
        return self._order

    def node(self, name: str) -> Node:
        """The node called ``name`` (a tensor name ``"n:1"`` gives its producer)."""
        try:
            return self._nodes[name]
        except KeyError:
            producer = parse_tensor_name(name)[0]
            if producer in self._nodes:
                return self._nodes[producer]
            raise KeyError(f"graph has no node named {name!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._nodes

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self):
        return iter(self._order)

    def producer(self, tensor: str) -> Node:
        """The node that produces ``tensor``."""
        return self.node(parse_tensor_name(tensor)[0])

    def producer_index(self) -> Mapping[str, Node]:
        """``{tensor name: producer}`` for every tensor some node consumes (memoized;
        the matcher's hot path reads it directly: do not modify it)."""
        # Straight from the inputs (canonical "node:index" names), not via the
        # consumer lists: no container per tensor, so building it on a large
        # graph does not set off the garbage collector.
        nodes = self._nodes
        return self.memo("ir.producers", lambda: {
            t: nodes[t.rpartition(":")[0]] for node in self._order for t in node.inputs})

    def consumer_index(self) -> Mapping[str, tuple[Node, ...]]:
        """``{tensor name: the nodes that read it}`` for every tensor some node reads
        (memoized; readers once each, in graph order; control inputs do not count)."""
        return MappingProxyType(self.memo("ir.consumers", lambda: consumer_indices(self._order))[0])

    def consumers(self, tensor_or_node: str | Node) -> tuple[Node, ...]:
        """The nodes that read a tensor (``"x:0"``) or any output of a node (``"x"`` or a Node).

        Each consumer appears once, in graph order; control dependencies do not count.
        """
        if isinstance(tensor_or_node, Node):
            tensor_or_node = tensor_or_node.name
        by_tensor, by_node = self.memo("ir.consumers", lambda: consumer_indices(self._order))
        if tensor_or_node in self._nodes and ":" not in tensor_or_node:
            return by_node.get(tensor_or_node, ())
        node, index = parse_tensor_name(tensor_or_node)
        if node not in self._nodes:
            raise KeyError(f"graph has no node named {node!r}")
        return by_tensor.get(tensor_name(node, index), ())

    def tensors_consumed(self) -> frozenset[str]:
        """Every tensor name that some node reads."""
        return frozenset(self.producer_index())

    @property
    def inputs(self) -> tuple[str, ...]:
        return self._inputs

    @property
    def outputs(self) -> tuple[str, ...]:
        return self._outputs

    @property
    def layers(self) -> tuple[str, ...]:
        """Layer names, in order of their first computing (non-constant) node."""
        return self._layers

    def layer_nodes(self, layer: str) -> tuple[Node, ...]:
        """The nodes of one layer, in graph order."""
        if layer not in self._layers:
            raise KeyError(f"graph has no layer named {layer!r}")
        return tuple(n for n in self._order if n.layer == layer)

    def layer_scope(self, layer: str) -> str:
        """The name scope under which nodes of ``layer`` are named."""
        return self._layer_scopes.get(layer, layer)

    @property
    def layer_scopes(self) -> Mapping[str, str]:
        return dict(self._layer_scopes)

    def layer_outputs(self) -> Mapping[str, str]:
        """``{layer: tensor}``: for each layer, the last tensor it hands to another layer
        (or to the graph's outputs) — what the layer computes, as the next one sees it.

        >>> g = Graph([Node("x", "Placeholder", layer="in"), Node("a/m", "Neg", ["x"], layer="a"),
        ...            Node("a/r", "Relu", ["a/m"], layer="a"), Node("b", "Abs", ["a/r"], layer="b")])
        >>> dict(g.layer_outputs())
        {'in': 'x:0', 'a': 'a/r:0', 'b': 'b:0'}
        """
        def compute() -> dict[str, str]:
            outputs = set(self.outputs)
            found: dict[str, str] = {}
            for node in self._order:
                if self.is_constant(node):
                    continue
                t = node.output(0)
                if t in outputs or any(c.layer != node.layer for c in self.consumers(t)):
                    found[node.layer] = t
            return found

        return self.memo("ir.layer_outputs", compute)

    def is_constant(self, tensor_or_node: str | Node) -> bool:
        """Whether a tensor (or node) is computed from ``Const`` nodes only.

        Frozen Keras graphs read weights as ``Identity(Const)`` and often reshape
        them (``Reshape``, ``Squeeze``); all of that is constant.

        >>> import numpy as np
        >>> g = Graph([Node("c", "Const"), Node("r", "Reshape", ["c", "c"]), Node("x", "Placeholder"),
        ...            Node("y", "Mul", ["x", "r"])], inputs=["x"], outputs=["y"])
        >>> g.is_constant("r:0"), g.is_constant("y")
        (True, False)
        """
        name = tensor_or_node.name if isinstance(tensor_or_node, Node) else parse_tensor_name(tensor_or_node)[0]
        constant = self.memo("ir.constant", lambda: constant_nodes(
            self._order if self.is_sorted() else self.toposort().nodes))
        if name not in self._nodes:
            raise KeyError(f"graph has no node named {name!r}")
        return name in constant

    def op_counts(self) -> dict[str, int]:
        """Number of nodes per op type, most common first."""
        counts: dict[str, int] = {}
        for n in self._order:
            counts[n.op] = counts.get(n.op, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    # -- algorithms --------------------------------------------------------

    @property
    def nx(self) -> networkx.DiGraph:
        """A frozen ``networkx.DiGraph`` view: nodes are names, edges producer → consumer.

        Node data: ``op``, ``layer``. Edge data: ``tensors`` (the tensor names
        carried) and ``control`` (True for a pure control dependency).
        """
        return self.memo("ir.nx", lambda: dataflow_digraph(self._order))

    def is_sorted(self) -> bool:
        """Whether every node comes after the producers of its data inputs."""
        return self.memo("ir.sorted", lambda: is_sorted(self._order))

    def toposort(self) -> "Graph":
        """The same graph with its nodes in a topological order (data and control
        inputs first), stable for ties: of the nodes ready, the earliest in the current
        order comes first, so a sorted graph is returned as it is.

        Raises GraphError on a cycle.

        >>> g = Graph([Node("b", "Neg", ["a"]), Node("a", "Placeholder"), Node("c", "Neg", ["a"])],
        ...           inputs=["a"], outputs=["b", "c"])
        >>> [n.name for n in g.toposort().nodes]
        ['a', 'b', 'c']
        """
        # Kahn's algorithm with a heap of positions (networkx's lexicographical sort, without
        # building its graph: each rewrite sorts its result, ~40 ms of a fold toggle on MobileNetV2)
        index = {n.name: i for i, n in enumerate(self._order)}
        producers = [{index[p] for p in (*(parse_tensor_name(t)[0] for t in n.inputs), *n.control_inputs)
                      if p in index} for n in self._order]
        if all(p < i for i, ps in enumerate(producers) for p in ps):
            return self
        waiting = [len(ps) for ps in producers]
        consumers: list[list[int]] = [[] for _ in producers]
        for i, ps in enumerate(producers):
            for p in ps:
                consumers[p].append(i)
        ready = [i for i, w in enumerate(waiting) if w == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            i = heapq.heappop(ready)
            order.append(i)
            for c in consumers[i]:
                waiting[c] -= 1
                if waiting[c] == 0:
                    heapq.heappush(ready, c)
        if len(order) != len(producers):
            raise GraphError("graph has a cycle; it cannot be sorted")
        return self.with_nodes(self._order[i] for i in order)

    def cleanup(self) -> "Graph":
        """The same graph without nodes that no output depends on (inputs are kept)."""
        keep = set()
        stack = [parse_tensor_name(t)[0] for t in self._outputs]
        stack += [parse_tensor_name(t)[0] for t in self._inputs]
        while stack:
            name = stack.pop()
            if name in keep:
                continue
            keep.add(name)
            node = self._nodes[name]
            stack.extend(parse_tensor_name(t)[0] for t in node.inputs)
            stack.extend(node.control_inputs)
        if len(keep) == len(self._order):
            return self
        return self.with_nodes(n for n in self._order if n.name in keep)

    # -- helpers -------------------------------------------------------------

    def checked_tensor(self, tensor: str, what: str = "tensor") -> str:
        """``tensor``'s canonical name, or GraphError naming ``what`` it was
        (an input, a fetch) when no node of this graph produces it."""
        canonical = canonical_tensor_name(tensor)
        if parse_tensor_name(canonical)[0] not in self._nodes:
            raise GraphError(f"graph {what} {canonical!r} names no node in the graph")
        return canonical


    def __reduce__(self):
        """Pickle as a GraphDef plus what it does not hold (layers, inputs, outputs,
        scopes, source), so graphs can go to worker processes. Caches are not sent."""
        layer_of = {n.name: n.layer for n in self._order}
        return (_unpickle, (self.to_graph_def().SerializeToString(), self._inputs, self._outputs,
                            layer_of, self._layer_scopes, self._source))

    def __repr__(self) -> str:
        return (f"<Graph {len(self._order)} nodes, {len(self._layers)} layers, "
                f"inputs={list(self._inputs)}, outputs={list(self._outputs)}>")


def _unpickle(graph_def_bytes, inputs, outputs, layer_of, layer_scopes, source) -> Graph:
    gd = pb().GraphDef()
    gd.ParseFromString(graph_def_bytes)
    return Graph.from_graph_def(gd, inputs=inputs, outputs=outputs, layer_of=layer_of,
                                layer_scopes=layer_scopes, copy=False, source=source)
