"""Decoding TensorFlow ``AttrValue`` protos to plain Python values, and back.

The IR keeps each node's original protos so that a GraphDef round trip is exact,
and decodes them on demand into values people and passes can use:

==============  =========================================
AttrValue       Python value
==============  =========================================
``s``           ``str`` (``bytes`` if not UTF-8)
``i`` / ``f``   ``int`` / ``float``
``b``           ``bool``
``type``        :class:`~qviz.ir.dtypes.DType`
``shape``       :class:`Shape` (``None`` for unknown dims)
``tensor``      read-only ``numpy.ndarray``
``func``        :class:`FuncRef`
``list``        ``list`` of the above
==============  =========================================

>>> encoded = encode_attr([1, 2, 2, 1])
>>> decode_attr(encoded)
[1, 2, 2, 1]
>>> decode_attr(encode_attr(Shape((None, 8))))
Shape((None, 8))
"""

from __future__ import annotations

import numpy as np

from .dtypes import DType, dtype_from_enum, dtype_from_numpy
from .proto import pb

__all__ = [
    "Shape",
    "FuncRef",
    "decode_attr",
    "encode_attr",
    "tensor_to_numpy",
    "numpy_to_tensor",
]


class Shape(tuple):
    """A tensor shape; ``None`` marks an unknown dimension.

    ``Shape.unknown()`` (unknown rank) has ``rank`` ``None``.

    >>> Shape((None, 3)).rank, Shape.unknown().rank
    (2, None)
    """

    __slots__ = ()

    @classmethod
    def unknown(cls) -> "Shape":
        s = cls(())
        return _UnknownRankShape(s)

    @property
    def rank(self):
        return len(self)

    @property
    def is_fully_defined(self) -> bool:
        return all(d is not None for d in self)

    def __repr__(self) -> str:
        return f"Shape({tuple(self)!r})"


class _UnknownRankShape(Shape):
    __slots__ = ()

    @property
    def rank(self):
        return None

    @property
    def is_fully_defined(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "Shape.unknown()"


class FuncRef(str):
    """The name of a function referenced by a ``func`` attribute."""

    __slots__ = ()


def _decode_shape(proto) -> Shape:
    if proto.unknown_rank:
        return Shape.unknown()
    return Shape(None if d.size < 0 else int(d.size) for d in proto.dim)


def _encode_shape(shape, proto) -> None:
    if shape is None or (isinstance(shape, Shape) and shape.rank is None):
        proto.unknown_rank = True
        return
    for d in shape:
        proto.dim.add().size = -1 if d is None else int(d)


def _decode_str(raw: bytes):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


# Which repeated TensorProto field holds the values of each dtype when
# ``tensor_content`` is empty.
_VALUE_FIELD = {
    "float32": "float_val", "float64": "double_val", "int64": "int64_val",
    "bool": "bool_val", "string": "string_val", "float16": "half_val",
    "bfloat16": "half_val", "complex64": "scomplex_val", "complex128": "dcomplex_val",
    "uint32": "uint32_val", "uint64": "uint64_val",
}


def tensor_to_numpy(proto) -> np.ndarray:
    """Decode a ``TensorProto`` into a read-only numpy array (no TensorFlow needed).

    >>> t = numpy_to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    >>> tensor_to_numpy(t)
    array([[0., 1., 2.],
           [3., 4., 5.]], dtype=float32)
    """
    dtype = dtype_from_enum(proto.dtype)
    np_dtype = dtype.numpy
    shape = tuple(int(d.size) for d in proto.tensor_shape.dim)
    size = int(np.prod(shape, dtype=np.int64))
    if proto.tensor_content:
        arr = np.frombuffer(proto.tensor_content, dtype=np_dtype).reshape(shape)
    else:
        field = _VALUE_FIELD.get(str(dtype), "int_val")
        values = getattr(proto, field)
        if dtype == "string":
            flat = np.array(list(values), dtype=object)  # bytes, as TensorFlow gives them
        elif dtype in ("float16", "bfloat16"):
            flat = np.array(values, dtype=np.uint16).view(np_dtype)
        elif dtype in ("complex64", "complex128"):
            pairs = np.array(values, dtype=np.float64).reshape(-1, 2)
            flat = (pairs[:, 0] + 1j * pairs[:, 1]).astype(np_dtype)
        else:
            flat = np.array(values).astype(np_dtype)
        if flat.size == size:
            arr = flat.reshape(shape)
        elif flat.size == 0:
            arr = np.zeros(shape, dtype=np_dtype)
        else:
            # TF's convention: missing trailing values repeat the last one given.
            pad = np.full(size - flat.size, flat[-1], dtype=np_dtype)
            arr = np.concatenate([flat, pad]).reshape(shape)
    arr.flags.writeable = False
    return arr


def numpy_to_tensor(array) -> "object":
    """Encode a numpy array (or scalar) as a ``TensorProto``."""
    arr = np.asarray(array)
    proto = pb().TensorProto()
    dtype = dtype_from_numpy(arr.dtype)
    proto.dtype = dtype.enum
    for d in arr.shape:
        proto.tensor_shape.dim.add().size = int(d)
    if dtype == "string":
        proto.string_val.extend(
            v if isinstance(v, bytes) else str(v).encode("utf-8") for v in arr.ravel()
        )
    else:
        proto.tensor_content = np.ascontiguousarray(arr).tobytes()
    return proto


def decode_attr(value):
    """Decode one ``AttrValue`` proto to a plain Python value."""
    kind = value.WhichOneof("value")
    if kind == "s":
        return _decode_str(value.s)
    if kind == "i":
        return int(value.i)
    if kind == "f":
        return float(value.f)
    if kind == "b":
        return bool(value.b)
    if kind == "type":
        return dtype_from_enum(value.type)
    if kind == "shape":
        return _decode_shape(value.shape)
    if kind == "tensor":
        return tensor_to_numpy(value.tensor)
    if kind == "func":
        return FuncRef(value.func.name)
    if kind == "placeholder":
        return value.placeholder
    if kind == "list":
        lst = value.list
        for field, conv in (("s", _decode_str), ("i", int), ("f", float), ("b", bool),
                            ("type", dtype_from_enum), ("shape", _decode_shape),
                            ("tensor", tensor_to_numpy)):
            items = getattr(lst, field)
            if len(items):
                return [conv(v) for v in items]
        if len(lst.func):
            return [FuncRef(f.name) for f in lst.func]
        return []
    return None  # an AttrValue with nothing set


def encode_attr(value):
    """Encode a Python value as an ``AttrValue`` proto (the inverse of :func:`decode_attr`).

    An ``AttrValue`` passed in is returned as it is. Lists must be homogeneous.
    """
    AttrValue = pb().AttrValue
    if isinstance(value, AttrValue):
        return value
    out = AttrValue()
    if isinstance(value, bool):
        out.b = value
    elif isinstance(value, DType):
        out.type = value.enum
    elif isinstance(value, FuncRef):
        out.func.name = str(value)
    elif isinstance(value, str):
        out.s = value.encode("utf-8")
    elif isinstance(value, bytes):
        out.s = value
    elif isinstance(value, (int, np.integer)):
        out.i = int(value)
    elif isinstance(value, (float, np.floating)):
        out.f = float(value)
    elif isinstance(value, Shape):
        out.shape.SetInParent()  # a scalar shape has no dims but is still a shape
        _encode_shape(value, out.shape)
    elif isinstance(value, np.ndarray):
        out.tensor.CopyFrom(numpy_to_tensor(value))
    elif isinstance(value, np.dtype):
        out.type = dtype_from_numpy(value).enum
    elif isinstance(value, (list, tuple)):
        out.list.SetInParent()  # an empty list is still a list
        _encode_list(list(value), out.list)
    else:
        raise TypeError(f"cannot encode attribute value {value!r} of type {type(value).__name__}")
    return out


def _encode_list(items, lst) -> None:
    if not items:
        return
    first = items[0]
    if isinstance(first, bool):
        lst.b.extend(items)
    elif isinstance(first, DType):
        lst.type.extend(t.enum for t in items)
    elif isinstance(first, (str, bytes)):
        lst.s.extend(v.encode("utf-8") if isinstance(v, str) else v for v in items)
    elif isinstance(first, (int, np.integer)):
        lst.i.extend(int(v) for v in items)
    elif isinstance(first, (float, np.floating)):
        lst.f.extend(float(v) for v in items)
    elif isinstance(first, Shape):
        for s in items:
            _encode_shape(s, lst.shape.add())
    elif isinstance(first, np.ndarray):
        for a in items:
            lst.tensor.add().CopyFrom(numpy_to_tensor(a))
    else:
        raise TypeError(f"cannot encode attribute list of {type(first).__name__}")

