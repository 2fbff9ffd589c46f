"""Attribute and tensor encoding: decode(encode(v)) == v, and agreement with TensorFlow."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from qviz.ir import DType, Shape, decode_attr, encode_attr, numpy_to_tensor, tensor_to_numpy

scalars = st.one_of(
    st.integers(-2**63, 2**63 - 1),
    st.floats(allow_nan=False, width=32),
    st.booleans(),
    st.text(max_size=20),
    st.sampled_from([DType("float32"), DType("int64"), DType("bool")]),
)
lists = st.one_of(
    st.lists(st.integers(-2**31, 2**31 - 1), max_size=6),
    st.lists(st.floats(allow_nan=False, width=32), min_size=1, max_size=6),
    st.lists(st.text(max_size=5), min_size=1, max_size=4),
)
shapes = st.lists(st.one_of(st.none(), st.integers(0, 1000)), max_size=5).map(lambda d: Shape(tuple(d)))


@given(st.one_of(scalars, lists, shapes))
def test_attr_round_trip(value):
    decoded = decode_attr(encode_attr(value))
    assert decoded == value
    assert type(decoded) is type(value) or isinstance(value, DType)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(
    dtype=st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8,
                           np.float16, np.bool_]),
    shape=hnp.array_shapes(min_dims=0, max_dims=4, max_side=5)))
def test_tensor_round_trip_matches_tensorflow(arr):
    import tensorflow as tf

    proto = numpy_to_tensor(arr)
    ours = tensor_to_numpy(proto)
    np.testing.assert_array_equal(ours, arr)
    np.testing.assert_array_equal(ours, tf.make_ndarray(proto))
    assert not ours.flags.writeable


@pytest.mark.parametrize("value,dtype", [
    ([1.5], np.float32), ([2.0, 3.0], np.float32), ([7], np.int32), ([9], np.int64),
    ([True], np.bool_), ([0.5], np.float16), ([b"ab", b"c"], object),
])
def test_typed_value_fields_decode_like_tensorflow(value, dtype):
    """TF writes small constants into typed fields and repeats the last value to fill the shape."""
    import tensorflow as tf

    shape = (2, 2) if len(value) == 1 else (len(value),)
    proto = tf.make_tensor_proto(np.array(value, dtype=dtype), shape=shape)
    if len(value) == 1:
        assert not proto.tensor_content or dtype is object
    np.testing.assert_array_equal(tensor_to_numpy(proto), tf.make_ndarray(proto))


def test_unknown_rank_shape_round_trips():
    assert decode_attr(encode_attr(Shape.unknown())).rank is None


def test_unencodable_value_is_a_clear_error():
    with pytest.raises(TypeError, match="cannot encode attribute value"):
        encode_attr(object())
