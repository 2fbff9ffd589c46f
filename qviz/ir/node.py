"""One operation of a graph, as an immutable value."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType


__all__ = ["Node", "parse_tensor_name", "tensor_name", "canonical_tensor_name"]


def parse_tensor_name(name: str) -> tuple[str, int]:
    """Split a tensor name into (producer node, output index).

    A bare node name means output 0, as in TensorFlow.

    >>> parse_tensor_name("split:1"), parse_tensor_name("conv")
    (('split', 1), ('conv', 0))
    """
    node, sep, index = name.rpartition(":")
    if sep and index.isdigit():
        return node, int(index)
    return name, 0


def tensor_name(node: str, index: int = 0) -> str:
    """The canonical tensor name ``"node:index"``.

    >>> tensor_name("conv")
    'conv:0'
    """
    return f"{node}:{index}"


def canonical_tensor_name(name: str) -> str:
    """The one spelling of a tensor name that qviz compares and stores.

    >>> canonical_tensor_name("conv"), canonical_tensor_name("split:1")
    ('conv:0', 'split:1')
    """
    return tensor_name(*parse_tensor_name(name))


class Node:
    """An operation: its name, TF op type, inputs, attributes and layer.

    Nodes are immutable; :meth:`replace` returns a changed copy.

    Attributes:
        name: unique name within its graph.
        op: the TensorFlow op type (``"Conv2D"``).
        inputs: data inputs as canonical tensor names ``"producer:index"``, in order.
        control_inputs: names of nodes this one has a control dependency on.
        layer: the user-facing layer this node belongs to (default: its name scope,
            or its own name when it has none).
        device: the device string from the GraphDef (usually empty).

    >>> import numpy as np
    >>> n = Node("w", "Const", attrs={"value": np.ones((2, 2), np.float32), "dtype": np.dtype("float32")})
    >>> n.value.shape, n.attrs["dtype"]
    ((2, 2), 'float32')
    >>> m = n.replace(layer="conv1")
    >>> (n.layer, m.layer)
    ('w', 'conv1')
    """

    __slots__ = ("name", "op", "inputs", "control_inputs", "layer", "device", "_raw", "_attrs")

    def __init__(
        self,
        name: str,
        op: str,
        inputs: Iterable[str] = (),
        attrs: Mapping | None = None,
        *,
        control_inputs: Iterable[str] = (),
        layer: str | None = None,
        device: str = "",
        raw_attrs: Mapping | None = None,
    ):
        if not name:
            raise ValueError("a node needs a non-empty name")
        if not op:
            raise ValueError(f"node {name!r} needs an op type")
        if raw_attrs is None:
            raw_attrs = _encoded(attrs)
        elif attrs:
            raise ValueError("give either attrs or raw_attrs, not both")
        setter = object.__setattr__
        setter(self, "name", name)
        setter(self, "op", op)
        setter(self, "inputs", tuple(_canonical(t) for t in inputs))
        setter(self, "control_inputs", tuple(control_inputs))
        setter(self, "layer", layer if layer is not None else (name.rpartition("/")[0] or name))
        setter(self, "device", device)
        setter(self, "_raw", MappingProxyType(dict(raw_attrs)))
        setter(self, "_attrs", None)

    def __setattr__(self, key, value):
        raise AttributeError(f"Node is immutable; use node.replace({key}=...)")

    __delattr__ = __setattr__

    @property
    def attrs(self) -> Mapping:
        """Attributes decoded to plain Python values (read-only, decoded on first use)."""
        if self._attrs is None:
            from .attrs import decode_attr   # (numpy: not needed to read a graph's structure)

            decoded = {k: decode_attr(v) for k, v in self._raw.items()}
            object.__setattr__(self, "_attrs", MappingProxyType(decoded))
        return self._attrs

    @property
    def raw_attrs(self) -> Mapping:
        """The original ``AttrValue`` protos (treat as read-only)."""
        return self._raw

    @property
    def value(self):
        """The value of a ``Const`` node as a read-only numpy array."""
        if self.op != "Const":
            raise TypeError(f"node {self.name!r} is a {self.op}, not a Const: it has no value")
        return self.attrs["value"]

    def output(self, index: int = 0) -> str:
        """The name of this node's output tensor ``index`` (``"name:index"``)."""
        return tensor_name(self.name, index)

    def replace(self, **changes) -> "Node":
        """A copy with some fields changed; ``attrs=`` replaces all, ``update_attrs=`` merges."""
        fields = {
            "name": self.name, "op": self.op, "inputs": self.inputs,
            "control_inputs": self.control_inputs, "layer": self.layer, "device": self.device,
        }
        raw = dict(self._raw)
        if "attrs" in changes:
            raw = _encoded(changes.pop("attrs"))
        raw.update(_encoded(changes.pop("update_attrs", {})))
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"Node.replace() got unknown fields {sorted(unknown)}")
        fields.update(changes)
        return Node(raw_attrs=raw, **fields)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        return (
            (self.name, self.op, self.inputs, self.control_inputs, self.layer, self.device)
            == (other.name, other.op, other.inputs, other.control_inputs, other.layer, other.device)
            and self._raw.keys() == other._raw.keys()
            and all(self._raw[k] == other._raw[k] for k in self._raw)
        )

    def __hash__(self) -> int:
        return hash((self.name, self.op, self.inputs))

    def __repr__(self) -> str:
        ins = ", ".join(self.inputs)
        return f"<Node {self.name!r} {self.op}({ins}) layer={self.layer!r}>"


def _encoded(attrs: Mapping | None) -> dict:
    """Attribute values as ``AttrValue`` protos (numpy and the protos are imported only for a
    node that has attributes: a graph's structure is read, and drawn, without them)."""
    if not attrs:
        return {}
    from .attrs import encode_attr

    return {k: encode_attr(v) for k, v in attrs.items()}


def _canonical(tensor: str) -> str:
    if tensor.startswith("^"):
        raise ValueError(f"control input {tensor!r} belongs in control_inputs")
    return canonical_tensor_name(tensor)
