"""What gets drawn: a graph's layer view or op view as a small :class:`~qviz.layout.digraph.DiGraph`.

Constants (``Const`` and constant subgraphs such as weight reads) are not drawn:
they show in the side panel of the op that reads them. In the **layer view**
each layer is one node unless it is in ``expanded``, in which case its ops are
drawn instead. Nodes removed by a rewrite can be drawn as ghosts: without
edges, so the topology drawn is the new one; ``ghost_of`` names the node upstream
of them that took over their output (a folded batch norm's conv). Laid out with the
float graph (:func:`qviz.layout.routes_in_place`) a ghost keeps its own place,
the new edge drawn through it; laid out alone it sits just behind that node.

>>> from qviz.ir import Graph, Node
>>> g = Graph([Node("x", "Placeholder"), Node("c/w", "Const"), Node("c/conv", "Conv2D", ["x", "c/w"]),
...            Node("r/relu", "Relu", ["c/conv"])], outputs=["r/relu"])
>>> sorted(view_graph(g).edges)
[('layer:c', 'layer:r'), ('layer:x', 'layer:c')]
>>> sorted(view_graph(g, expanded={"c"}).nodes)
['layer:r', 'layer:x', 'op:c/conv']
"""

from __future__ import annotations

from collections.abc import Iterable

from .digraph import DiGraph, reachable_within
from ..ir import Graph, Node, parse_tensor_name
from ..ir.ops import ACTIVATION_OPS, ADD_OPS, BATCH_NORM_OPS, CONV_LIKE_OPS, FAKE_QUANT_OPS, NO_OP

__all__ = ["view_graph", "op_label", "sketch_view",
           "kind_of_op", "kind_of_keras_class", "layer_kind", "KINDS", "ViewKey",
           "diff_status", "key_showing", "block_showing", "close_blocks", "around", "BLOCK_KIND"]


class ViewKey(str):
    """A node of the view graph: a whole layer, one op, or a closed block of layers
    (:mod:`qviz.layout.blocks`), spelled ``"layer:<name>"``, ``"op:<name>"`` or
    ``"block:<id>"``.

    A ``str`` so it can be a graph's node, a plotly ``customdata`` and a value
    in the browser's stores as it is; built and read only through this class.

    >>> k = ViewKey.layer("conv1")
    >>> k, k.kind, k.name, k.is_layer, ViewKey("op:conv1/Conv2D").name
    ('layer:conv1', 'layer', 'conv1', True, 'conv1/Conv2D')
    >>> ViewKey.block("3").is_block, ViewKey.block("3").layer_in(None)
    (True, None)
    >>> ViewKey("conv1")
    Traceback (most recent call last):
    ValueError: a view key is 'layer:<name>', 'op:<name>' or 'block:<id>', not 'conv1'
    """

    __slots__ = ()

    def __new__(cls, text: str):
        kind, sep, name = str(text).partition(":")
        if not sep or kind not in ("layer", "op", "block") or not name:
            raise ValueError(f"a view key is 'layer:<name>', 'op:<name>' or 'block:<id>', not {text!r}")
        return super().__new__(cls, text)

    @classmethod
    def parse(cls, text) -> "ViewKey | None":
        """The key ``text`` spells, or None (what a page sends is not trusted).

        >>> ViewKey.parse("layer:conv1").name, ViewKey.parse("conv1"), ViewKey.parse(None)
        ('conv1', None, None)
        """
        try:
            return cls(text) if isinstance(text, str) else None
        except ValueError:
            return None

    @classmethod
    def layer(cls, name: str) -> "ViewKey":
        return cls._spelled("layer", name)

    @classmethod
    def op(cls, name: str) -> "ViewKey":
        return cls._spelled("op", name)

    @classmethod
    def block(cls, block_id: str) -> "ViewKey":
        return cls._spelled("block", block_id)

    @classmethod
    def _spelled(cls, kind: str, name: str) -> "ViewKey":
        # (the kind is known, so only the name is checked: a third of the time of parsing
        # the whole key, made for each of NASNetMobile's 4,588 ops at each op-view draw)
        if not name:
            raise ValueError(f"a view key is 'layer:<name>', 'op:<name>' or 'block:<id>', not '{kind}:'")
        return str.__new__(cls, f"{kind}:{name}")

    @property
    def kind(self) -> str:
        return self.partition(":")[0]

    @property
    def name(self) -> str:
        return self.partition(":")[2]

    @property
    def is_layer(self) -> bool:
        return self.kind == "layer"

    @property
    def is_block(self) -> bool:
        return self.kind == "block"

    def layer_in(self, graph: Graph) -> str | None:
        """The layer this key shows in ``graph`` (its own, or its op's); None if gone,
        and for a block (many layers)."""
        if self.is_block:
            return None
        if self.is_layer:
            return self.name if self.name in graph.layers else None
        return graph.node(self.name).layer if self.name in graph else None


def diff_status(result) -> tuple[dict[str, str], list[Node]]:
    """``(status, removed)`` for :func:`view_graph` from a rewrite's result
    (:class:`qviz.pipeline.Result`): the ops it added and modified, and the ops of the
    original it removed, as a reader sees them (:meth:`qviz.passes.Changes.seen`: no
    constants, and no NoOp, whose control edges a fold rewires)."""
    seen = result.changes.seen(result.original, result.graph)
    status = {**{n: "added" for n in seen.added}, **{n: "modified" for n in seen.modified}}
    return status, [result.original.node(n) for n in seen.removed]


def key_showing(vg: DiGraph, graph: Graph, name: str) -> ViewKey | None:
    """The view key that shows node ``name`` of ``graph``: its op, else its layer,
    else the closed block its layer is in."""
    if ViewKey.op(name) in vg:
        return ViewKey.op(name)
    if name not in graph:
        return None
    layer = graph.node(name).layer
    if ViewKey.layer(layer) in vg:
        return ViewKey.layer(layer)
    return block_showing(vg, layer)


def block_showing(vg: DiGraph, layer: str) -> ViewKey | None:
    """The closed block drawn in ``vg`` that holds ``layer`` (None: not in one)."""
    block_id = vg.graph.get("block_of", {}).get(layer)
    return ViewKey.block(block_id) if block_id is not None else None

#: Colour groups, in priority order for naming a layer after its main op. A fake-quant
#: comes last: a quantized ReLU is still an activation (its badge says it is quantized).
KINDS = {
    "conv": CONV_LIKE_OPS,
    "batchnorm": BATCH_NORM_OPS | {"Rsqrt"},
    "activation": ACTIVATION_OPS | {"Swish"},
    "add": ADD_OPS | {"ConcatV2", "Mul"},
    "pool": {"MaxPool", "AvgPool", "Mean"},
    "io": {"Placeholder", "Identity"},
    "quant": FAKE_QUANT_OPS,
}
#: The colour group of a closed block (never a layer's or an op's).
BLOCK_KIND = "block"


def _batch_norm_layers(nodes: Iterable[Node], constant_ops: dict) -> set:
    """The layers whose ops make a batch norm (an unfused one's Rsqrt reads only constants)."""
    ops: dict[str, list[str]] = {}
    for n in nodes:
        ops.setdefault(n.layer, []).append(n.op)
    return {layer for layer, found in ops.items()
            if layer_kind(found + constant_ops.get(layer, []))[0] == "batchnorm"}


def kind_of_op(op: str) -> str:
    for kind, ops in KINDS.items():
        if op in ops:
            return kind
    return "other"


def layer_kind(ops: Iterable[str]) -> tuple[str, str]:
    """(kind, main op) of a layer from its op types."""
    ops = list(ops)
    for kind, members in KINDS.items():
        for op in ops:
            if op in members:
                return kind, op
    return "other", (ops[0] if ops else "")


#: Keras layer classes by the colour group of the op their frozen graph is named after, so
#: a layer view drawn from the file (:func:`sketch_view`) has the colours it keeps once frozen.
KERAS_KINDS = {
    "conv": {"Conv1D", "Conv2D", "Conv3D", "DepthwiseConv2D", "SeparableConv2D", "Conv2DTranspose", "Dense",
             "QConv2DBatchnorm", "QDepthwiseConv2DBatchnorm", "QDenseBatchnorm"},
    "batchnorm": {"BatchNormalization", "LayerNormalization", "Normalization"},
    "activation": {"ReLU", "Activation", "Softmax", "LeakyReLU", "PReLU", "ELU"},
    "add": {"Add", "Concatenate", "Multiply", "Subtract", "Average", "Rescaling"},
    "pool": {"MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "GlobalMaxPooling2D", "MaxPooling1D",
             "AveragePooling1D"},
    "io": {"InputLayer", "Dropout", "SpatialDropout2D", "GaussianNoise"},
}


def kind_of_keras_class(class_name: str) -> str:
    """The colour group of a Keras layer class (``"other"`` for one qviz does not know)."""
    for kind, classes in KERAS_KINDS.items():
        if class_name in classes:
            return kind
    return "other"


def sketch_view(sketch) -> DiGraph:
    """The layer view of a Keras model file's layer graph
    (:class:`qviz.importers.keras_config.ModelSketch`), drawn before TensorFlow
    has frozen the model: the nodes and edges the frozen graph's layer view will
    have, so the layout does not move when it arrives. Node data as
    :func:`view_graph`'s, plus ``sketch=True``, ``params`` and ``input_shapes``.

    >>> from qviz.importers.keras_config import LayerSketch, ModelSketch
    >>> s = ModelSketch("m.keras", "m", (LayerSketch("x", "InputLayer", (), (), 0, {}),
    ...                                  LayerSketch("c", "Conv2D", ("x",), (), None, {})))
    >>> vg = sketch_view(s)
    >>> sorted(vg.edges), vg.nodes["layer:c"]["kind"]
    ([('layer:x', 'layer:c')], 'conv')
    """
    out = DiGraph()
    for layer in sketch.layers:
        out.add_node(ViewKey.layer(layer.name), kind=kind_of_keras_class(layer.class_name), op=layer.class_name,
                     label=layer.name, layer=layer.name, ops=0, constants=0, status=None, members=[],
                     sketch=True, params=layer.params, input_shapes=layer.input_shapes)
    for layer in sketch.layers:
        for src in layer.inputs:
            if ViewKey.layer(src) in out and src != layer.name:
                out.add_edge(ViewKey.layer(src), ViewKey.layer(layer.name))
    return out


def around(vg: DiGraph, layers: Iterable[str], hops: int = 2) -> DiGraph:
    """The part of a view graph within ``hops`` edges (either way) of the nodes
    showing ``layers``: a sub-graph to put on a slide. A removed node (``ghost_of``)
    comes along with the kept one that took over its work; a layer the rewrite removed
    (a folded batch norm) is centred on that node.

    >>> vg = DiGraph([("layer:a", "layer:b"), ("layer:b", "layer:c"), ("layer:c", "layer:d")])
    >>> for k in vg:
    ...     vg.nodes[k]["layer"] = k.split(":")[1]
    >>> sorted(around(vg, ["b"], hops=1))
    ['layer:a', 'layer:b', 'layer:c']
    >>> around(vg, ["nope"])
    Traceback (most recent call last):
    ...
    ValueError: no layer named 'nope' in the graph drawn
    """
    wanted = set(layers)
    # a layer in a closed block is shown by the block
    showing = [(k, d) for k, d in vg.nodes(data=True)
               if d.get("layer") in wanted or wanted.intersection(d.get("layers") or ())]
    centres = [d.get("ghost_of") or k for k, d in showing]
    missing = wanted - {d.get("layer") for _, d in showing} - {m for _, d in showing for m in d.get("layers") or ()}
    if missing:
        raise ValueError(f"no layer named {sorted(missing)[0]!r} in the graph drawn")
    keep = set()
    for c in centres:
        keep.update(reachable_within(vg, c, hops))
    keep.update(k for k, d in vg.nodes(data=True) if d.get("ghost_of") in keep)
    return vg.subgraph(keep).copy()


def op_label(name: str, layer: str) -> str:
    """An op's label: its own last name after its layer's name. Op names repeat from layer to
    layer (every Keras conv is ``convolution``, every batch norm ``mul_1`` and ``add_1``), so
    the last name alone cannot tell one layer's op from the next one's.

    >>> op_label("functional/stem_bn1/mul_1", "stem_bn1"), op_label("input_1", "input_1")
    ('stem_bn1/mul_1', 'input_1')
    """
    last = name.rsplit("/", 1)[-1]
    return last if not layer or last == layer else f"{layer}/{last}"


def view_graph(graph: Graph, mode: str = "layer", expanded: Iterable[str] = (),
               removed: Iterable[Node] = (), status: dict | None = None, blocks: Iterable = (),
               original: Graph | None = None) -> DiGraph:
    """The drawable graph.

    Args:
        mode: ``"layer"`` or ``"op"``.
        expanded: layers drawn as their ops in the layer view.
        removed: non-constant nodes of the original graph that a rewrite
            removed. Each view node made only of them is a ghost: no edges, and
            ``ghost_of`` names the view node that took over its work (the nearest
            one upstream still in ``graph``; none found: drawn with its old edges).
        status: node name → ``"added"`` / ``"modified"`` (from a change record).
        original: the graph ``removed`` came from; its constants tell what a layer
            removed whole was (a folded unfused batch norm's Rsqrt reads only
            constants: without them its ghost would be filled as an Add).
        blocks: :class:`qviz.layout.blocks.Block` s drawn closed, each as one node
            (:func:`close_blocks`), in either mode.

    Node keys are ``"layer:<name>"`` or ``"op:<name>"``; node data: ``kind``,
    ``label``, ``layer``, ``op``, ``ops`` (member count), ``constants`` (the
    layer's constant ops, not drawn; 0 for an op), ``status``, ``members``, and
    ``ghost_of`` for a ghost.

    >>> from qviz.ir import Graph, Node
    >>> before = [Node("x", "Placeholder"), Node("c/conv", "Conv2D", ["x", "w"]), Node("bn/mul", "Mul", ["c/conv", "s"]),
    ...           Node("r/relu", "Relu", ["bn/mul"])]
    >>> after = Graph([Node("x", "Placeholder"), Node("w", "Const"), Node("c/conv", "Conv2D", ["x", "w"]),
    ...                Node("r/relu", "Relu", ["c/conv"])], outputs=["r/relu"])
    >>> vg = view_graph(after, removed=[before[2]])
    >>> vg.nodes["layer:bn"]["ghost_of"], sorted(vg.edges)
    ('layer:c', [('layer:c', 'layer:r'), ('layer:x', 'layer:c')])
    """
    if mode not in ("layer", "op"):
        raise ValueError(f"mode must be 'layer' or 'op', not {mode!r}")
    expanded = set(expanded)
    status = dict(status or {})
    removed = list(removed)
    for n in removed:
        status[n.name] = "removed"
    nodes, constants, constant_ops = [], {}, {}
    for n in graph.nodes:
        if graph.is_constant(n):
            constants[n.layer] = constants.get(n.layer, 0) + 1
            if n.op in KINDS["batchnorm"]:   # (an unfused batch norm's Rsqrt; no other constant names a kind)
                constant_ops.setdefault(n.layer, []).append(n.op)
        else:
            nodes.append(n)
    nodes += removed
    if original is not None:
        for layer in {n.layer for n in removed} - constant_ops.keys():
            constant_ops[layer] = [n.op for n in original.layer_nodes(layer)
                                   if n.op in KINDS["batchnorm"] and original.is_constant(n)]

    def key(node: Node) -> ViewKey:
        if mode == "op" or node.layer in expanded:
            return ViewKey.op(node.name)
        return ViewKey.layer(node.layer)

    out = DiGraph()
    members: dict[str, list[Node]] = {}
    # a NoOp drawn as an op would stand alone (its edges are control edges): it computes nothing
    nodes = [n for n in nodes if n.op != NO_OP or key(n).is_layer]
    present = {n.name for n in nodes}
    index = {n.name: key(n) for n in nodes}
    for n in nodes:
        members.setdefault(index[n.name], []).append(n)
    batch_norm_layers = _batch_norm_layers(nodes, constant_ops) if mode == "op" or expanded else set()
    for k, ns in members.items():
        states = {status.get(n.name) for n in ns} - {None}
        if not k.is_layer:
            n = ns[0]
            kind, op, label = kind_of_op(n.op), n.op, op_label(n.name, n.layer)
            if n.layer in batch_norm_layers and kind in ("add", "other"):
                kind = "batchnorm"   # an unfused batch norm's Mul/AddV2/Sub: its arithmetic, not a bypass
        else:
            # with its constant ops: an unfused batch norm's Rsqrt reads only constants
            kind, op = layer_kind([n.op for n in ns] + constant_ops.get(ns[0].layer, []))
            label = ns[0].layer
        if states == {"removed"}:
            st = "removed"
        elif "added" in states and all(status.get(n.name) == "added" for n in ns):
            st = "added"
        elif states:
            st = "modified"
        else:
            st = None
        out.add_node(k, kind=kind, op=op, label=label, layer=ns[0].layer, ops=len(ns),
                     constants=constants.get(ns[0].layer, 0) if k.is_layer else 0,
                     status=st, members=[n.name for n in ns])
    ghosts = _anchors(graph, removed, key, {k for k, d in out.nodes(data=True) if d["status"] == "removed"})
    for k, anchor in ghosts.items():
        out.nodes[k]["ghost_of"] = anchor
    for n in nodes:
        for t in n.inputs:
            src = parse_tensor_name(t)[0]
            if src in present and index[src] != index[n.name] and not {index[src], index[n.name]} & ghosts.keys():
                out.add_edge(index[src], index[n.name])
    return close_blocks(out, blocks)


def close_blocks(vg: DiGraph, blocks: Iterable) -> DiGraph:
    """``vg`` with every node of each block's layers (layers, expanded ops, ghosts)
    drawn as one node ``block:<id>``: kind ``"block"``, the block's ``label`` and
    ``layers``, ``layer`` None, its members' ``ops``, ``constants`` and
    ``members``, and a status summing theirs. ``vg.graph["block_of"]`` maps each
    layer of a closed block to the block's id (:func:`block_showing`).

    >>> from qviz.layout.blocks import Block
    >>> vg = DiGraph([("layer:a", "layer:b"), ("layer:b", "layer:c"), ("layer:c", "layer:d")])
    >>> for k in vg:
    ...     vg.nodes[k].update(layer=k[6:], kind="conv", ops=2, constants=1, status=None, members=[k[6:]])
    >>> closed = close_blocks(vg, [Block("1", "bc", ("b", "c"))])
    >>> list(closed.edges), closed.nodes["block:1"]["ops"], closed.graph["block_of"]
    ([('layer:a', 'block:1'), ('block:1', 'layer:d')], 4, {'b': '1', 'c': '1'})
    """
    block_of = {layer: b for b in blocks for layer in b.layers}
    if not block_of:
        vg.graph["block_of"] = {}
        return vg
    mapping = {k: ViewKey.block(block_of[d["layer"]].id) for k, d in vg.nodes(data=True)
               if d.get("layer") in block_of}
    out = DiGraph()
    out.graph.update(vg.graph, block_of={layer: b.id for layer, b in block_of.items()})
    inside: dict[str, list[dict]] = {}
    for k, d in vg.nodes(data=True):
        if k in mapping:
            if mapping[k] not in inside:
                out.add_node(mapping[k])       # here: the block keeps its first member's place in the order
            inside.setdefault(mapping[k], []).append(d)
        else:
            out.add_node(k, **dict(d, ghost_of=mapping.get(d["ghost_of"], d["ghost_of"])) if d.get("ghost_of") else d)
    for key, ds in inside.items():
        block = block_of[ds[0]["layer"]]
        states = {d.get("status") for d in ds}
        status = next(iter(states)) if len(states) == 1 else "modified"
        out.nodes[key].update(kind=BLOCK_KIND, op="block", label=block.label, layer=None, layers=list(block.layers),
                              ops=sum(d.get("ops", 0) for d in ds), constants=sum(d.get("constants", 0) for d in ds),
                              status=status, members=[m for d in ds for m in d.get("members", ())])
    for u, v in vg.edges:
        a, b = mapping.get(u, u), mapping.get(v, v)
        if a != b:
            out.add_edge(a, b)
    return out


def _anchors(graph: Graph, removed: list[Node], key, ghost_keys: set[str]) -> dict[str, str]:
    """Ghost view key → the view key of the nearest op upstream of it still in ``graph``."""
    gone = {n.name: n for n in removed}
    anchors: dict[str, str] = {}
    for n in removed:
        k = key(n)
        if k in ghost_keys and k not in anchors:
            up = _nearest_upstream(graph, n, gone)
            if up is not None:
                anchors[k] = key(up)
    return anchors


def _nearest_upstream(graph: Graph, node: Node, gone: dict[str, Node]) -> Node | None:
    """The first non-constant op of ``graph`` found walking up from ``node`` (breadth
    first, through the other removed ops in ``gone``), or ``None``."""
    frontier, seen = [node], {node.name}
    while frontier:
        nxt = []
        for m in frontier:
            for t in m.inputs:
                src = parse_tensor_name(t)[0]
                if src in seen:
                    continue
                seen.add(src)
                if src in graph and not graph.is_constant(src):
                    return graph.node(src)
                if src in gone:
                    nxt.append(gone[src])
        frontier = nxt
    return None
