"""What a pass returns: :class:`PassResult` (the new graph, the diff against
the graph it was given, what it left alone and why), in the shape of torch.fx's
``PassResult(graph, modified)``.

>>> from qviz.ir import Graph, Node
>>> before = Graph([Node("x", "Placeholder"), Node("y", "Relu", ["x"], layer="act")])
>>> after = before.with_nodes([Node("x", "Placeholder"), Node("y", "Relu6", ["x"], layer="act")])
>>> d = diff(before, after)
>>> d.modified, d.by_layer()["act"].modified, bool(PassResult(after, d))
(('y',), ('y',), True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..ir import Graph
from ..ir.ops import NO_OP

__all__ = ["Changes", "LayerChanges", "Skipped", "PassResult", "diff"]


@dataclass(frozen=True)
class LayerChanges:
    """What a rewrite did to one layer: node names added, removed, modified."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()


@dataclass(frozen=True)
class Changes:
    """The diff between a graph and its rewrite, by node name.

    ``layer_of`` maps every named node (added, removed or modified) to its layer,
    so the diff can be drawn per layer (:meth:`by_layer`).
    """

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    layer_of: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.modified)

    def by_layer(self) -> dict[str, LayerChanges]:
        """``{layer: LayerChanges}`` for every layer something happened to."""
        out: dict[str, dict[str, list[str]]] = {}
        for kind in ("added", "removed", "modified"):
            for name in getattr(self, kind):
                layer = self.layer_of.get(name, name)
                out.setdefault(layer, {"added": [], "removed": [], "modified": []})[kind].append(name)
        return {layer: LayerChanges(**{k: tuple(v) for k, v in d.items()}) for layer, d in out.items()}

    def then(self, later: "Changes") -> "Changes":
        """The diff of two rewrites in a row (``self`` first), against the first graph.

        >>> a = Changes(added=("n",), removed=("x",), modified=("m",))
        >>> b = Changes(added=("q",), removed=("n",), modified=("m", "r"))
        >>> c = a.then(b)
        >>> c.added, c.removed, c.modified
        (('q',), ('x',), ('m', 'r'))
        """
        added = [n for n in self.added if n not in set(later.removed)]
        removed = list(self.removed)
        re_added = set(later.added) & set(self.removed)  # removed, then a new node of that name
        added += [n for n in later.added if n not in re_added]
        removed = [n for n in removed if n not in re_added]
        mine = set(self.added)
        removed += [n for n in later.removed if n not in mine]
        gone = set(added) | set(removed)
        modified = list(dict.fromkeys(
            [n for n in self.modified if n not in gone]
            + [n for n in later.modified if n not in gone] + sorted(re_added)))
        return Changes(tuple(added), tuple(removed), tuple(modified),
                       {**self.layer_of, **later.layer_of})

    def seen(self, before: Graph, after: Graph) -> "Changes":
        """The changes a reader can see, as the op view draws them: no constant ops (folded
        weights, a bias's reshape, a quantizer's range) and no NoOp, whose control edges
        freezing points at every op, so a fold that removes ops rewires it.

        >>> import qviz
        >>> from qviz.samples import sample_path
        >>> g = qviz.load(sample_path("lenet_digits"))
        >>> r = qviz.apply(g, qviz.Recipe(fold_default=False, quantize_default=None, fold_layers={"conv1": True}),
        ...                report=False)
        >>> r.changes.summary()                     # the folded kernel and bias, bn1's constants…
        '2 ops added, 23 removed, 4 modified'
        >>> r.changes.seen(g, r.graph).summary()    # bn1's Mul and AddV2; conv1's conv and BiasAdd, relu1 rewired
        '0 ops added, 2 removed, 3 modified'
        """
        def noop(name: str) -> bool:
            return name in before and before.node(name).op == NO_OP

        return Changes(tuple(n for n in self.added if not after.is_constant(n)),
                       tuple(n for n in self.removed if not before.is_constant(n)),
                       tuple(n for n in self.modified if not noop(n) and not after.is_constant(n)),
                       self.layer_of)

    def summary(self) -> str:
        """``"N ops added, M removed, K modified"``."""
        ops = len(self.added)
        return f"{ops} op{'' if ops == 1 else 's'} added, {len(self.removed)} removed, {len(self.modified)} modified"

    def to_dict(self) -> dict:
        """JSON-ready: ``{"added": [...], "removed": [...], "modified": [...], "layers": {...}}``."""
        layers = {layer: {"added": list(c.added), "removed": list(c.removed), "modified": list(c.modified)}
                  for layer, c in self.by_layer().items()}
        return {"added": list(self.added), "removed": list(self.removed),
                "modified": list(self.modified), "layers": layers}


@dataclass(frozen=True)
class Skipped:
    """Something a pass was asked to (or could) rewrite but left alone, and why."""

    layer: str
    node: str
    reason: str

    def __str__(self) -> str:
        return f"{self.layer}: {self.reason}"


@dataclass(frozen=True)
class PassResult:
    """What a pass returns: the new graph, the diff, and what it left alone."""

    graph: Graph
    changes: Changes
    skipped: tuple[Skipped, ...] = ()

    @property
    def modified(self) -> bool:
        return bool(self.changes)


def diff(before: Graph, after: Graph) -> Changes:
    """The changes from ``before`` to ``after``, by node name (a node is modified
    when its op, inputs or attributes differ)."""
    added, modified, layer_of = [], [], {}
    for node in after.nodes:
        if node.name not in before:
            added.append(node.name)
            layer_of[node.name] = node.layer
        else:
            old = before.node(node.name)
            if old is not node and old != node:
                modified.append(node.name)
                layer_of[node.name] = node.layer
    removed = []
    for node in before.nodes:
        if node.name not in after:
            removed.append(node.name)
            layer_of[node.name] = node.layer
    return Changes(tuple(added), tuple(removed), tuple(modified), layer_of)
