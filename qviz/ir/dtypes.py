"""TensorFlow data types as plain values, and their numpy equivalents.

A :class:`DType` is a ``str`` (``"float32"``), so attribute values compare
naturally (``node.attrs["T"] == "float32"``) and print readably, while still
knowing TensorFlow's enum number for the round trip back to a GraphDef.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DType", "dtype_from_enum", "dtype_from_numpy"]

# TensorFlow's DataType enum (tensorflow/core/framework/types.proto).
_ENUM_TO_NAME = {
    0: "invalid", 1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16",
    6: "int8", 7: "string", 8: "complex64", 9: "int64", 10: "bool", 11: "qint8",
    12: "quint8", 13: "qint32", 14: "bfloat16", 15: "qint16", 16: "quint16",
    17: "uint16", 18: "complex128", 19: "float16", 20: "resource", 21: "variant",
    22: "uint32", 23: "uint64",
}
_NAME_TO_ENUM = {name: num for num, name in _ENUM_TO_NAME.items()}
_REF_OFFSET = 100  # TF encodes reference types as enum + 100.


def _bfloat16():
    import ml_dtypes  # shipped with TensorFlow

    return np.dtype(ml_dtypes.bfloat16)


_NUMPY = {
    "float32": np.float32, "float64": np.float64, "int32": np.int32, "uint8": np.uint8,
    "int16": np.int16, "int8": np.int8, "string": object, "complex64": np.complex64,
    "int64": np.int64, "bool": np.bool_, "qint8": np.int8, "quint8": np.uint8,
    "qint32": np.int32, "qint16": np.int16, "quint16": np.uint16, "uint16": np.uint16,
    "complex128": np.complex128, "float16": np.float16, "uint32": np.uint32,
    "uint64": np.uint64,
}


class DType(str):
    """A TensorFlow dtype by name, e.g. ``DType("float32")``.

    >>> t = dtype_from_enum(1)
    >>> t, t == "float32", t.enum, t.numpy
    ('float32', True, 1, dtype('float32'))
    >>> dtype_from_enum(101).is_ref
    True
    """

    __slots__ = ()

    def __new__(cls, name: str):
        base = name[:-4] if name.endswith("_ref") else name
        if base not in _NAME_TO_ENUM:
            raise ValueError(f"unknown TensorFlow dtype {name!r}")
        return super().__new__(cls, name)

    @property
    def is_ref(self) -> bool:
        return self.endswith("_ref")

    @property
    def enum(self) -> int:
        base = self[:-4] if self.is_ref else str(self)
        return _NAME_TO_ENUM[base] + (_REF_OFFSET if self.is_ref else 0)

    @property
    def numpy(self) -> np.dtype:
        base = self[:-4] if self.is_ref else str(self)
        if base == "bfloat16":
            return _bfloat16()
        if base not in _NUMPY:
            raise TypeError(f"TensorFlow dtype {base!r} has no numpy equivalent")
        return np.dtype(_NUMPY[base])


def dtype_from_enum(num: int) -> DType:
    if num > _REF_OFFSET:
        return DType(_ENUM_TO_NAME.get(num - _REF_OFFSET, "invalid") + "_ref")
    if num not in _ENUM_TO_NAME:
        raise ValueError(f"unknown TensorFlow DataType enum {num}")
    return DType(_ENUM_TO_NAME[num])


def dtype_from_numpy(dtype) -> DType:
    """The TF dtype for a numpy dtype.

    >>> dtype_from_numpy(np.float32), dtype_from_numpy("int64")
    ('float32', 'int64')
    """
    dtype = np.dtype(dtype)
    if dtype.name == "bfloat16":
        return DType("bfloat16")
    if dtype.kind in "OUS":
        return DType("string")
    for name in ("float32", "float64", "int32", "uint8", "int16", "int8", "complex64",
                 "int64", "bool", "uint16", "complex128", "float16", "uint32", "uint64"):
        if np.dtype(_NUMPY[name]) == dtype:
            return DType(name)
    raise TypeError(f"numpy dtype {dtype} has no TensorFlow equivalent")
