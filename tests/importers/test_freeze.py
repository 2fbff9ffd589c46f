"""qviz's freeze gives the GraphDef TensorFlow's public ``convert_variables_to_constants_v2``
gives, node for node, without its costly re-import (qviz/importers/freeze.py)."""

import numpy as np
import pytest

import qviz
from qviz import runtime
from qviz.importers import freeze as freeze_module
from qviz.importers.freeze import freeze

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _concrete(model, shape):
    import tensorflow as tf

    fn = tf.function(lambda x: model(x, training=False))
    return fn.get_concrete_function(tf.TensorSpec((None, *shape), tf.float32))


def _without_marks(graph_def):
    for nd in graph_def.node:        # a mark the public function's re-import adds
        nd.attr.pop("_has_manual_control_dependencies", None)
    return graph_def


def _public(concrete):
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    frozen = convert_variables_to_constants_v2(concrete)
    return _without_marks(frozen.graph.as_graph_def()), [t.name for t in frozen.inputs], [t.name for t in frozen.outputs]


@pytest.fixture
def fast_only(monkeypatch):
    """:func:`freeze` on its own path: the public function, were it used, fails the test."""
    def refuse(concrete):
        raise AssertionError("frozen by the public function, not the fast path")

    monkeypatch.setattr(freeze_module, "_freeze_public", refuse)


@pytest.fixture
def public_calls(monkeypatch):
    """How many times :func:`freeze` went to the public function."""
    calls = []
    public = freeze_module._freeze_public
    monkeypatch.setattr(freeze_module, "_freeze_public", lambda concrete: calls.append(1) or public(concrete))
    return calls


def _assert_same(got, want, want_inputs, want_outputs):
    assert list(got.inputs) == want_inputs and list(got.outputs) == want_outputs
    # in the same order: it is the order of the graph's layers and matches
    assert [nd.name for nd in got.graph_def.node] == [nd.name for nd in want.node]
    by_name = {nd.name: nd for nd in _without_marks(got.graph_def).node}
    assert all(by_name[nd.name] == nd for nd in want.node)


@pytest.mark.parametrize("which", ["keras", "tf_keras", "resnet_block"])
def test_the_frozen_graph_is_the_public_functions_node_for_node(which, keras_model, tf_keras_model, samples,
                                                                fast_only):
    if which == "resnet_block":     # branches and joins: the order is the walk's, not the trace's
        import keras

        model = keras.saving.load_model(samples["resnet_block"])
    else:
        model = keras_model if which == "keras" else tf_keras_model
    concrete = _concrete(model, model.inputs[0].shape[1:])
    got = freeze(concrete)
    _assert_same(got, *_public(concrete))
    if which == "keras":   # the depthwise conv's unused Shape and dilation_rate were traced, and dropped
        assert any(nd.name.endswith("depthwise/Shape") for nd in concrete.graph.as_graph_def().node)
        assert not any(nd.name.endswith("depthwise/Shape") for nd in got.graph_def.node)


def test_a_saved_models_signature_is_the_public_functions_node_for_node(keras_model, tmp_path, fast_only):
    import tensorflow as tf

    keras_model.export(str(tmp_path / "sm"), verbose=False)
    loaded = tf.saved_model.load(str(tmp_path / "sm"))
    signature = loaded.signatures["serving_default"]
    _assert_same(freeze(signature), *_public(signature))


def test_two_inputs_and_two_outputs_are_the_public_functions_in_their_order(fast_only):
    import keras
    import tensorflow as tf

    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    joined = keras.layers.Concatenate(name="cat")([keras.layers.Dense(3, name="da")(a), b])
    model = keras.Model([a, b], [keras.layers.Dense(2, name="out1")(joined), keras.layers.Dense(1, name="out2")(b)])
    fn = tf.function(lambda x, y: model([x, y], training=False))
    concrete = fn.get_concrete_function(tf.TensorSpec((None, 4), tf.float32), tf.TensorSpec((None, 4), tf.float32))
    got = freeze(concrete)
    _assert_same(got, *_public(concrete))
    assert len(got.inputs) == 2 and len(got.outputs) == 2


def test_a_tensorflow_without_the_private_steps_freezes_through_the_public_function(monkeypatch, keras_model,
                                                                                  public_calls):
    concrete = _concrete(keras_model, (8, 8, 1))
    fast = freeze(concrete)
    monkeypatch.setattr(freeze_module, "_PRIVATE_STEPS", ("_FunctionConverterDataInEager", "_moved_elsewhere"))
    slow = freeze(concrete)
    assert len(public_calls) == 1
    assert [nd.name for nd in slow.graph_def.node] == [nd.name for nd in fast.graph_def.node]
    assert (slow.inputs, slow.outputs) == (fast.inputs, fast.outputs)


def test_a_model_loaded_through_the_fast_freeze_computes_what_keras_computes(keras_model, fast_only):
    x = np.random.default_rng(0).normal(size=(2, 8, 8, 1)).astype(np.float32)
    got = runtime.run(qviz.load(keras_model), x)[0]
    np.testing.assert_allclose(got, keras_model(x, training=False).numpy(), rtol=1e-5, atol=1e-6)


def test_a_model_with_a_loop_keeps_every_node_and_computes_what_keras_computes(public_calls):
    """A Keras LSTM freezes to a TF1 while loop. The walk that orders the nodes cannot pass
    through a loop, and once dropped its nodes, so the graph did not load; such a graph is
    left to the public function."""
    import keras

    inp = keras.Input((5, 3), name="seq")
    model = keras.Model(inp, keras.layers.Dense(2, name="fc")(keras.layers.LSTM(4, name="lstm")(inp)))
    graph = qviz.load(model)
    assert public_calls and graph.op_counts()["NextIteration"] > 0
    x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype(np.float32)
    np.testing.assert_allclose(runtime.run(graph, x)[0], model(x, training=False).numpy(), rtol=1e-5, atol=1e-6)
