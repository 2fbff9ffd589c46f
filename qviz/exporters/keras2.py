"""A Keras 3 model rebuilt as a Keras 2 (``tf_keras``) model, for the tools
that only read Keras 2: TensorFlow Model Optimization and QKeras.

tf_keras cannot read a Keras 3 ``.keras`` file (``Could not deserialize class
'Functional'``). :func:`to_tf_keras` rebuilds the functional graph layer by
layer from the Keras 3 config, keeping of each layer's settings those the
tf_keras class takes, copies the weights by layer name, and then *checks*
the rebuild: both models run on the same fixed-seed input and must agree to
float32 rounding. A setting dropped that mattered shows up there, and the
model is refused with the largest difference, never handed on silently.

Keras is imported inside the functions only.
"""

from __future__ import annotations

import inspect
import logging

import numpy as np

from ..errors import QvizError

__all__ = ["Keras2Error", "to_tf_keras", "is_tf_keras_model"]

log = logging.getLogger(__name__)

#: The keyword arguments every tf_keras layer takes (``Layer.__init__``'s ``**kwargs``).
_BASE_LAYER_ARGS = frozenset({"name", "trainable", "dtype", "batch_input_shape", "input_shape", "batch_size",
                              "activity_regularizer", "autocast", "dynamic", "sparse", "ragged"})
#: The most the rebuilt model's outputs may differ from the original's, relative to the output's scale.
_TOLERANCE = 1e-4


class Keras2Error(QvizError, ValueError):
    """The model cannot be rebuilt as a tf_keras model; the message says which layer and why."""


def is_tf_keras_model(model) -> bool:
    """Whether ``model`` is a tf_keras (Keras 2) model object."""
    return type(model).__module__.startswith("tf_keras")


def _arguments(cls) -> set[str]:
    """The keyword arguments ``cls.__init__`` names (its own and its bases' up to ``**kwargs``)."""
    names = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters
        names |= {n for n, p in params.items() if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
            break
    return names


def _nested_object(value: dict):
    """A serialized initializer / regularizer / constraint in tf_keras' form, or None if it is none of those."""
    import tf_keras

    for module in (tf_keras.initializers, tf_keras.regularizers, tf_keras.constraints):
        cls = getattr(module, value["class_name"], None)
        if isinstance(cls, type):
            allowed = _arguments(cls)
            return {"class_name": value["class_name"],
                    "config": {k: v for k, v in value["config"].items() if k in allowed}}
    return None


def _settings(value):
    """A Keras 3 config value in tf_keras' form: dtype policies become their name,
    serialized objects lose Keras 3's ``module``/``registered_name`` keys."""
    if isinstance(value, list):
        return [_settings(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "class_name" in value and isinstance(value.get("config"), dict):
        if value["class_name"].endswith("DTypePolicy"):
            return value["config"].get("name", "float32")
        nested = _nested_object(value)
        if nested is not None:
            return nested
    return {k: _settings(v) for k, v in value.items() if k not in ("module", "registered_name", "build_config")}


def _inbound(nodes: list) -> list:
    """Keras 3's inbound nodes (``args`` holding ``__keras_tensor__`` records) as tf_keras'
    ``[[layer, node, tensor, {}], …]`` lists."""
    out = []
    for node in nodes:
        refs = []

        def walk(value):
            if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
                layer, node_index, tensor_index = value["config"]["keras_history"]
                refs.append([layer, node_index, tensor_index, {}])
            elif isinstance(value, dict):
                for v in value.values():
                    walk(v)
            elif isinstance(value, (list, tuple)):
                for v in value:
                    walk(v)

        walk(node.get("args", []) if isinstance(node, dict) else node)
        out.append(refs)
    return out


def _layer_config(layer: dict) -> dict:
    import tf_keras

    cls = getattr(tf_keras.layers, layer["class_name"], None)
    if not isinstance(cls, type):
        raise Keras2Error(f"layer {layer.get('name')!r}: tf_keras has no {layer['class_name']!r} layer")
    config = _settings(layer["config"])
    if layer["class_name"] == "InputLayer":
        config["batch_input_shape"] = config.pop("batch_shape", config.get("batch_input_shape"))
    allowed = _arguments(cls) | _BASE_LAYER_ARGS
    dropped = sorted(k for k in config if k not in allowed)
    if dropped:
        log.debug("tf_keras rebuild of %s drops %s", layer.get("name"), dropped)
    return {"class_name": layer["class_name"], "name": layer["name"],
            "config": {k: v for k, v in config.items() if k in allowed},
            "inbound_nodes": _inbound(layer.get("inbound_nodes", []))}


def _refs(value) -> list:
    return [list(r) for r in (value if value and isinstance(value[0], list) else [value])]


def to_tf_keras(model):
    """``model`` (Keras 3 or tf_keras) as a tf_keras model with the same weights and outputs.

    A tf_keras model is returned as it is. A Keras 3 model must be functional
    (or sequential) and built of Keras' own layers.

    Raises:
        Keras2Error: a layer tf_keras does not have, a subclassed model, or a
            rebuild whose outputs differ from the original's.
    """
    if is_tf_keras_model(model):
        return model
    import tf_keras

    if type(model).__name__ == "Sequential":
        import keras

        model = keras.Model(model.inputs, model.outputs, name=model.name)   # same layers, functional config
    config = model.get_config()
    if "layers" not in config or "input_layers" not in config:
        raise Keras2Error(f"model {model.name!r}: only functional and sequential Keras models can be rebuilt "
                          "for tf_keras (this one is subclassed)")
    rebuilt = {"name": config["name"], "layers": [_layer_config(layer) for layer in config["layers"]],
               "input_layers": _refs(config["input_layers"]), "output_layers": _refs(config["output_layers"])}
    try:
        twin = tf_keras.Model.from_config(rebuilt)
        for layer in model.layers:
            twin.get_layer(layer.name).set_weights(layer.get_weights())
    except (TypeError, ValueError, KeyError) as exc:
        raise Keras2Error(f"model {model.name!r}: tf_keras cannot rebuild it: {str(exc).splitlines()[0][:200]}") \
            from None
    try:
        _check_same_outputs(model, twin)
    except Keras2Error:
        raise
    except Exception as exc:   # TensorFlow's own errors running either model: one line, not a traceback
        raise Keras2Error(f"model {model.name!r}: its tf_keras rebuild does not run: "
                          f"{(str(exc).splitlines() or [type(exc).__name__])[0][:200]}") from None
    return twin


def _check_same_outputs(model, twin) -> None:
    rng = np.random.default_rng(0)
    inputs = [rng.normal(size=(2, *[d or 1 for d in t.shape[1:]])).astype(np.float32) for t in model.inputs]
    ours = model(inputs if len(inputs) > 1 else inputs[0], training=False)
    theirs = twin(inputs if len(inputs) > 1 else inputs[0], training=False)
    ours = ours if isinstance(ours, (list, tuple)) else [ours]
    theirs = theirs if isinstance(theirs, (list, tuple)) else [theirs]
    for i, (a, b) in enumerate(zip(ours, theirs)):
        a, b = np.asarray(a), np.asarray(b)
        scale = max(float(np.abs(a).max()), 1e-6)
        diff = float(np.abs(a - b).max()) if a.shape == b.shape else float("inf")
        if diff > _TOLERANCE * scale:
            raise Keras2Error(f"model {model.name!r}: its tf_keras rebuild computes something else (output {i} "
                              f"differs by {diff:.3g} on a test input); a layer setting tf_keras lacks matters here")
