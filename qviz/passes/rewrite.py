"""Rewrite primitives: a :class:`GraphEditor` over an immutable graph, ``reroute``,
and ``finish``, which builds the new graph and its change record
(:mod:`qviz.passes.result`).

A pass never touches the graph it is given. It opens an editor on it, adds,
replaces and reroutes nodes, and :meth:`GraphEditor.finish` builds the new
graph, drops the nodes that became dead, and records what changed:

>>> import numpy as np
>>> from qviz.ir import Graph, Node
>>> g = Graph([Node("a", "Placeholder"), Node("b", "Placeholder"), Node("c", "Placeholder"),
...            Node("ac", "AddV2", ["a", "c"]), Node("ad", "AddV2", ["a", "c"])],
...           outputs=["ac", "ad"])
>>> ed = GraphEditor(g)
>>> ed.reroute("b:0", "a:0", can_modify=["ac"])
1
>>> result = ed.finish()
>>> result.graph.node("ac").inputs, result.graph.node("ad").inputs, result.changes.modified
(('b:0', 'c:0'), ('a:0', 'c:0'), ('ac',))
>>> g.node("ac").inputs     # the original is untouched
('a:0', 'c:0')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from ..ir import Graph, GraphError, Node, canonical_tensor_name, parse_tensor_name
from .result import Changes, PassResult, Skipped, diff

__all__ = ["GraphEditor", "const_node"]


def const_node(name: str, value, layer: str) -> Node:
    """A ``Const`` node holding ``value`` (a numpy array; its dtype is kept)."""
    arr = np.array(value, order="C")  # (ascontiguousarray would make a scalar 1-D)
    return Node(name, "Const", attrs={"value": arr, "dtype": arr.dtype}, layer=layer)


class GraphEditor:
    """A mutable working copy of a graph's node list; :meth:`finish` makes the new graph.

    Nodes added with ``after=`` are placed right after that node in graph order
    (otherwise at the end); if the order is not topological in the end, the
    result is sorted (stably).
    """

    def __init__(self, graph: Graph):
        self.original = graph
        self._nodes: dict[str, Node] = {n.name: n for n in graph.nodes}
        self._after: dict[str | None, list[str]] = {}
        self._added: list[str] = []
        self._outputs = list(graph.outputs)
        self._consumers: dict[str, list[str]] | None = None
        self._edited = False   # nothing edited: finish() hands back the original graph

    # -- lookup ----------------------------------------------------------------

    def node(self, name: str) -> Node:
        return self._nodes[parse_tensor_name(name)[0]]

    def __contains__(self, name: str) -> bool:
        return name in self._nodes

    def consumers(self, tensor: str) -> list[Node]:
        """Current consumers of a tensor, each once."""
        return [self._nodes[n] for n in self._index().get(canonical_tensor_name(tensor), ())]

    def unique_name(self, base: str) -> str:
        """``base``, or ``base_1``, ``base_2``… if taken."""
        if base not in self._nodes:
            return base
        i = 1
        while f"{base}_{i}" in self._nodes:
            i += 1
        return f"{base}_{i}"

    # -- edits -------------------------------------------------------------------

    def add(self, node: Node, *, after: str | None = None) -> Node:
        """Add a new node (its name must be free), placed after node ``after``."""
        if node.name in self._nodes:
            raise GraphError(f"cannot add node {node.name!r}: the name is taken")
        if after is not None:
            after = parse_tensor_name(after)[0]
            if after not in self._nodes:
                raise GraphError(f"cannot place {node.name!r} after {after!r}: no such node")
        self._nodes[node.name] = node
        self._edited = True
        self._after.setdefault(after, []).append(node.name)
        self._added.append(node.name)
        self._index_inputs(node, +1)
        return node

    def replace(self, node: Node) -> Node:
        """Replace the node of the same name (e.g. ``node.replace(inputs=...)``)."""
        old = self._nodes.get(node.name)
        if old is None:
            raise GraphError(f"cannot replace node {node.name!r}: no such node")
        self._index_inputs(old, -1)
        self._nodes[node.name] = node
        self._edited = True
        self._index_inputs(node, +1)
        return node

    def update(self, name: str, **changes) -> Node:
        """Change fields of the *current* version of a node (``Node.replace`` arguments).

        Prefer this to ``replace(old_node.replace(...))`` with a node from the
        original graph: an earlier edit (a reroute) may have changed it since.
        """
        return self.replace(self.node(name).replace(**changes))

    def remove(self, name: str) -> None:
        """Remove a node; fails while other nodes still read it."""
        if self.consumers_of_node(name):
            users = ", ".join(n.name for n in self.consumers_of_node(name))
            raise GraphError(f"cannot remove {name!r}: it still feeds {users}")
        self._index_inputs(self._nodes.pop(name), -1)
        self._edited = True

    def consumers_of_node(self, name: str) -> list[Node]:
        index = self._index()
        prefix = name + ":"
        return [self._nodes[c] for t, cs in index.items() if t.startswith(prefix) for c in cs]

    def reroute(self, new_tensor: str, old_tensor: str, can_modify: Iterable[str] | None = None) -> int:
        """Make consumers of ``old_tensor`` read ``new_tensor`` instead.

        Only nodes named in ``can_modify`` change (default: every consumer).
        Graph outputs are not consumers; see :meth:`replace_output`.

        Returns:
            How many consumer inputs changed; callers that expected a change
            treat 0 as an error.
        """
        new_tensor, old_tensor = canonical_tensor_name(new_tensor), canonical_tensor_name(old_tensor)
        allowed = None if can_modify is None else set(can_modify)
        count = 0
        for consumer in list(self.consumers(old_tensor)):
            if allowed is not None and consumer.name not in allowed:
                continue
            inputs = tuple(new_tensor if t == old_tensor else t for t in consumer.inputs)
            count += sum(t == old_tensor for t in consumer.inputs)
            self.replace(consumer.replace(inputs=inputs))
        return count

    def replace_output(self, old_tensor: str, new_tensor: str) -> bool:
        """Point a graph output at another tensor; False if ``old_tensor`` is no output."""
        old_tensor, new_tensor = canonical_tensor_name(old_tensor), canonical_tensor_name(new_tensor)
        if old_tensor not in self._outputs:
            return False
        self._outputs = [new_tensor if t == old_tensor else t for t in self._outputs]
        self._edited = True
        return True

    # -- result ------------------------------------------------------------------

    def finish(self, skipped: Iterable[Skipped] = (), *, drop_dead: bool = True):
        """Build the new graph and its change record (a :class:`PassResult`).

        With ``drop_dead``, nodes that no output depends on any more are dropped —
        only those the rewrite made dead; nodes already dead in the original stay.
        A control dependency on a constant (frozen graphs keep ``NoOp`` ← ``^read``
        edges from the variables they replaced) does not keep it alive; such
        edges to dropped nodes are removed.
        """
        if not self._edited:
            return PassResult(self.original, Changes(), tuple(skipped))
        order = []
        pending_end = self._after.get(None, [])
        for name in _emit(self.original.nodes, self._after):
            if name in self._nodes:
                order.append(name)
        order += [n for n in pending_end if n in self._nodes]
        nodes = [self._nodes[n] for n in order]
        if drop_dead:
            live = _live(nodes, self._outputs, self.original.inputs)
            was_dead = _originally_dead(self.original)
            nodes = [n for n in nodes if n.name in live or n.name in was_dead]
            kept = {n.name for n in nodes}
            nodes = [n if all(c in kept for c in n.control_inputs)
                     else n.replace(control_inputs=[c for c in n.control_inputs if c in kept])
                     for n in nodes]
        graph = self.original.with_nodes(nodes, outputs=self._outputs)
        if not graph.is_sorted():
            graph = graph.toposort()
        return PassResult(graph, diff(self.original, graph), tuple(skipped))

    # -- internals ---------------------------------------------------------------

    def _index(self) -> dict[str, list[str]]:
        if self._consumers is None:
            # Start from the original graph's index (usually built already), then
            # replay the edits made before the first lookup.
            self._consumers = {t: [n.name for n in users]
                               for t, users in self.original.consumer_index().items()}
            for name, node in self._nodes.items():
                if name not in self.original or self.original.node(name) is not node:
                    if name in self.original:
                        self._index_inputs(self.original.node(name), -1)
                    self._index_inputs(node, +1)
        return self._consumers

    def _index_inputs(self, node: Node, sign: int) -> None:
        if self._consumers is None:
            return
        for t in dict.fromkeys(node.inputs):
            users = self._consumers.setdefault(t, [])
            if sign > 0:
                users.append(node.name)
            elif node.name in users:
                users.remove(node.name)


def _emit(original: Iterable[Node], after: Mapping[str | None, list[str]]):
    """Original order, with each added node right after its anchor (recursively)."""
    def chain(name):
        yield name
        for child in after.get(name, ()):
            yield from chain(child)

    for node in original:
        yield from chain(node.name)


def _constants(nodes: list[Node]) -> set[str]:
    constant: set[str] = set()
    for node in nodes:
        if node.op == "Const" or (node.op == "Identity" and node.inputs
                                  and parse_tensor_name(node.inputs[0])[0] in constant):
            constant.add(node.name)
    return constant


def _live(nodes: list[Node], outputs, inputs) -> set[str]:
    """Names of the nodes the outputs depend on (control dependencies on constants do not count)."""
    by_name = {n.name: n for n in nodes}
    constant = _constants(nodes)
    keep: set[str] = set()
    stack = [parse_tensor_name(t)[0] for t in (*outputs, *inputs)]
    while stack:
        name = stack.pop()
        if name in keep:
            continue
        keep.add(name)
        node = by_name[name]
        stack.extend(parse_tensor_name(t)[0] for t in node.inputs)
        stack.extend(c for c in node.control_inputs if c not in constant)
    return keep


def _originally_dead(graph: Graph) -> frozenset[str]:
    def dead() -> frozenset[str]:
        live = _live(list(graph.nodes), graph.outputs, graph.inputs)
        return frozenset(n.name for n in graph.nodes if n.name not in live)

    return graph.memo("rewrite.dead", dead)
