"""Keras models (Keras 3 and ``tf_keras``) traced in inference mode and frozen.

A model is traced with ``training=False`` in a ``tf.function``, its variables
are folded into constants (:func:`qviz.importers.freeze.freeze`), and the
resulting GraphDef becomes the IR. While tracing, every layer's ``call`` is
wrapped (temporarily, on the instance) to record the name scope TensorFlow
opened for it; that is how ops map back to the Keras layer names users know.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import re
import zipfile
from collections.abc import Sequence
from pathlib import Path

from ..ir import Graph
from ..ir.layers import layers_from_scopes
from .errors import LoadError, first_line
from .freeze import freeze
from .graphdef import graph_from_graph_def
from .keras_config import read_keras_config
from .keras_sizes import oversized, stored_weights
from .safety import DEFAULT_LIMITS, Limits, code_in_keras_config, h5_data_outside

__all__ = ["freeze_keras_model", "load_keras_file", "load_h5_file", "is_keras_model"]

_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"


def is_keras_model(obj) -> bool:
    """True for a Keras 3 or tf_keras model object (checked without importing either)."""
    for cls in type(obj).__mro__:
        mod = cls.__module__ or ""
        if cls.__name__ in ("Model", "Functional", "Sequential") and (
            mod.startswith("keras") or mod.startswith("tf_keras")
        ):
            return True
    return False


def _label(model) -> str:
    return f"model {getattr(model, 'name', type(model).__name__)!r}"


def _op_name(name: str, i: int) -> str:
    clean = re.sub(r"[^A-Za-z0-9_.\-]", "_", name or "")
    return clean if clean and clean[0].isalnum() else f"input_{i}"


def _input_specs(model, input_shape, label: str):
    import tensorflow as tf

    try:
        inputs = list(model.inputs or [])
    except (AttributeError, ValueError):
        inputs = []
    if input_shape is not None:
        shapes = [input_shape] if input_shape and not isinstance(input_shape[0], (list, tuple)) else list(input_shape)
        if inputs and len(shapes) != len(inputs):
            raise LoadError(label, f"input_shape gives {len(shapes)} shape(s) but the model has {len(inputs)} input(s)")
        shapes = [(None, *tuple(s)) for s in shapes]
    elif inputs:
        shapes = [tuple(t.shape) for t in inputs]
    else:
        raise LoadError(label, "the model's input shape is unknown (it was never built); "
                               "give input_shape, e.g. input_shape=(28, 28, 1) or --input-shape 28,28,1")
    specs = []
    for i, shape in enumerate(shapes):
        t = inputs[i] if i < len(inputs) else None
        name = _op_name(getattr(t, "name", "") if t is not None else "", i)
        if any(d is None for d in shape[1:]):
            raise LoadError(label, f"input {name!r} has unknown dimensions {tuple(shape)}; give input_shape "
                                   "(--input-shape on the command line) with every dimension but the batch")
        dtype = getattr(t, "dtype", None) or "float32"
        dtype = getattr(dtype, "name", dtype)
        specs.append(tf.TensorSpec([None, *shape[1:]], tf.as_dtype(dtype), name=name))
    if len({s.name for s in specs}) != len(specs):
        specs = [tf.TensorSpec(s.shape, s.dtype, name=f"{s.name}_{i}") for i, s in enumerate(specs)]
    return specs


def _all_layers(model) -> list:
    return list(model._flatten_layers(include_self=False, recursive=True))


def freeze_keras_model(model, input_shape: Sequence | None = None, *, source: str | None = None) -> Graph:
    """Trace ``model`` with ``training=False``, freeze it, and build the IR.

    Works for Keras 3 (the BatchNorm becomes an unfused ``Rsqrt``/``Mul`` chain)
    and for ``tf_keras`` (``FusedBatchNormV3``). The model is not modified.
    """
    import tensorflow as tf

    label = source or _label(model)
    specs = _input_specs(model, input_shape, label)
    recorded: list[tuple[str, str]] = []
    layers = _all_layers(model)
    for layer in layers:
        original = layer.call

        def recording_call(*args, __layer=layer, __call=original, **kwargs):
            recorded.append((tf.get_current_name_scope(), __layer.name))
            return __call(*args, **kwargs)

        object.__setattr__(layer, "call", recording_call)
    try:
        multi = len(specs) > 1
        fn = tf.function(lambda *xs: model(list(xs) if multi else xs[0], training=False))
        concrete = fn.get_concrete_function(*specs)
        frozen = freeze(concrete)
    except LoadError:
        raise
    except Exception as exc:  # tracing runs arbitrary model code
        first = first_line(exc)
        raise LoadError(label, f"tracing the model failed: {first}") from exc
    finally:
        for layer in layers:
            layer.__dict__.pop("call", None)
    graph_def = frozen.graph_def
    scope_to_layer: dict[str, str] = {}
    layer_scopes: dict[str, str] = {}
    for scope, name in recorded:
        scope_to_layer.setdefault(scope, name)
        layer_scopes.setdefault(name, scope)
    unscoped: set[str] = set()
    layer_of = layers_from_scopes((nd.name for nd in graph_def.node), scope_to_layer, unscoped)
    _attach_unscoped(graph_def, layer_of, unscoped - {s.name for s in specs})
    return graph_from_graph_def(
        graph_def, label,
        inputs=list(frozen.inputs), outputs=list(frozen.outputs), layer_of=layer_of, layer_scopes=layer_scopes,
    )


def _attach_unscoped(graph_def, layer_of: dict, unscoped: set) -> None:
    """Give ops outside every layer scope (the output ``Identity``, the ``NoOp``) a real layer.

    An op with data inputs joins the layer of its first input; a control-only op
    joins the layer of whoever depends on it.
    """
    pending = []
    for nd in graph_def.node:
        if nd.name not in unscoped:
            continue
        data = [t for t in nd.input if not t.startswith("^")]
        if data:
            layer_of[nd.name] = layer_of.get(data[0].split(":")[0], layer_of[nd.name])
        else:
            pending.append(nd.name)
    if pending:
        waiting = set(pending)
        for nd in graph_def.node:
            for t in nd.input:
                if t.startswith("^") and t[1:] in waiting:
                    layer_of[t[1:]] = layer_of[nd.name]
                    waiting.discard(t[1:])


def _check_file(path: Path) -> None:
    if path.stat().st_size == 0:
        raise LoadError(str(path), "the file is empty")


_UNSAFE_HINT = ("refused in safe mode — if you trust this file, load it with safe_mode=False "
                "(--unsafe on the command line)")


def _check_config(raw: bytes | str, path: Path, safe_mode: bool, limits: Limits, where: str) -> dict:
    """Parse a Keras model config with qviz's own JSON reader and, in safe mode,
    refuse it if deserializing it would run code from the file. This happens
    before Keras sees the file: Keras' own safe-mode check does not cover every
    format (tf_keras' legacy ``.h5`` path runs ``Lambda`` bytecode regardless)."""
    if len(raw) > limits.max_config_bytes:
        raise LoadError(str(path), f"its {where} is over {limits.max_config_bytes // 2**20} MB")
    try:
        config = json.loads(raw)
    except (ValueError, RecursionError):
        raise LoadError(str(path), f"its {where} is not valid JSON") from None
    if not isinstance(config, dict):
        raise LoadError(str(path), f"its {where} is not a model config")
    if safe_mode:
        why = code_in_keras_config(config, limits)
        if why:
            raise LoadError(str(path), f"{why}; {_UNSAFE_HINT}")
    return config


@contextlib.contextmanager
def keras_safe_mode(module_path: str, safe_mode: bool):
    """Keras' own safe-mode scope as well, for whatever our check does not know."""
    try:
        scope = importlib.import_module(module_path).SafeModeScope(safe_mode)
    except (ImportError, AttributeError):
        scope = contextlib.nullcontext()
    with scope:
        yield


def load_keras_file(path: Path, *, input_shape=None, safe_mode: bool = True,
                    limits: Limits = DEFAULT_LIMITS) -> Graph:
    """Load a Keras 3 ``.keras`` archive and freeze it.

    The archive's directory is checked (member count, sizes, compression ratio,
    paths) and its ``config.json`` read and checked for code before Keras opens it.
    """
    _check_file(path)
    raw = read_keras_config(path, limits)
    try:
        with zipfile.ZipFile(path) as zf:
            bad = zf.testzip()
            members = set(zf.namelist())
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
        raise LoadError(str(path), f"not a Keras archive: the zip is damaged ({first_line(exc)})") from None
    if bad is not None:
        raise LoadError(str(path), f"not a Keras archive: member {bad!r} is damaged (truncated file?)")
    config = _check_config(raw, path, safe_mode, limits, "config.json")
    _check_weights_member(path, config, safe_mode, limits, "model.weights.h5" in members)
    import keras

    from .. import keras_layers  # noqa: F401  (registers qviz's QAT layers with Keras)

    try:
        model = keras.saving.load_model(path, compile=False, safe_mode=safe_mode)
    except Exception as exc:  # Keras raises a zoo of types for bad files
        raise _keras_error(path, exc) from None
    return freeze_keras_model(model, input_shape, source=str(path))


def _keras_error(path: Path, exc: Exception) -> LoadError:
    msg = str(exc)
    if "safe_mode" in msg or ("Lambda" in msg and "unsafe" in msg.lower()):
        return LoadError(str(path), f"contains a Lambda layer (arbitrary Python code); {_UNSAFE_HINT}")
    return LoadError(str(path), f"Keras could not load the model: {first_line(exc)}")


def _check_weights_member(path: Path, config: dict, safe_mode: bool, limits: Limits, present: bool) -> None:
    """A ``.keras`` archive's ``model.weights.h5`` must keep its data inside itself (safe
    mode), hold at most ``limits.max_bytes`` once read, and as many weights as the config's
    layers declare: Keras allocates those before it reads any (:mod:`.keras_sizes`)."""
    import io

    import h5py

    stored, nbytes, why = 0, 0, None
    if present:
        try:
            with zipfile.ZipFile(path) as zf:
                data = io.BytesIO(zf.read("model.weights.h5"))   # size checked by check_zip
            with h5py.File(data, "r") as f:
                why = h5_data_outside(f) if safe_mode else None
                stored, nbytes = stored_weights(f)
        except (OSError, ValueError, KeyError, RuntimeError, TypeError, NotImplementedError, zipfile.BadZipFile,
                EOFError):
            return   # not readable as HDF5: Keras reports it
    if why:
        raise LoadError(str(path), f"model.weights.h5: {why}; {_UNSAFE_HINT}")
    _check_sizes(path, config, stored if present else limits.max_bytes // 4, nbytes, limits)


def _check_sizes(path: Path, config: dict, stored: int, nbytes: int, limits: Limits) -> None:
    """Refuse weights over the size limit once read, and layers declaring more weights than
    stored: Keras allocates those before it reads any (:mod:`.keras_sizes`)."""
    if nbytes > limits.max_bytes:
        raise LoadError(str(path), f"its weights take {nbytes / 2**30:.1f} GB once read, over the limit of "
                                   f"{limits.max_bytes / 2**30:.1f} GB")
    why = oversized(config, stored)
    if why:
        raise LoadError(str(path), f"not a model this file holds: {why}")


def _h5_model_config(path: Path, safe_mode: bool = True) -> bytes | str:
    import h5py

    why = None
    try:
        with h5py.File(path, "r") as f:
            raw = f.attrs.get("model_config")
            if safe_mode:
                why = h5_data_outside(f)
    except (OSError, ValueError, KeyError, RuntimeError, TypeError) as exc:
        raise LoadError(str(path), f"HDF5 file could not be read: {first_line(exc)}") from None
    if why:
        raise LoadError(str(path), f"{why}; {_UNSAFE_HINT}")
    if raw is None:
        raise LoadError(str(path), "an HDF5 file with no model in it (only weights?); save the whole model")
    if hasattr(raw, "tobytes") and not isinstance(raw, (bytes, str)):
        raw = raw.tobytes()
    if not isinstance(raw, (bytes, str)):
        raise LoadError(str(path), "its model_config is not text")
    return raw


def load_h5_file(path: Path, *, input_shape=None, safe_mode: bool = True,
                 limits: Limits = DEFAULT_LIMITS) -> Graph:
    """Load a legacy HDF5 model, with ``tf_keras`` (Keras 2) first, then Keras 3.

    The file's ``model_config`` is read and checked for code first, and both
    loaders run inside their library's safe-mode scope.
    """
    _check_file(path)
    with open(path, "rb") as fh:
        head = fh.read(8)
    if head != _HDF5_MAGIC:
        raise LoadError(str(path), "not an HDF5 file (bad signature)")
    config = _check_config(_h5_model_config(path, safe_mode), path, safe_mode, limits, "model_config")
    import h5py

    with h5py.File(path, "r") as f:   # (read once above: it opens)
        stored, nbytes = stored_weights(f)
    _check_sizes(path, config, stored, nbytes, limits)
    errors = []
    try:
        import tf_keras

        with keras_safe_mode("tf_keras.src.saving.serialization_lib", safe_mode):
            model = tf_keras.models.load_model(path, compile=False, safe_mode=safe_mode)
    except Exception as exc:  # fall back to Keras 3's legacy loader
        errors.append(exc)
        try:
            import keras

            with keras_safe_mode("keras.src.saving.serialization_lib", safe_mode):
                model = keras.saving.load_model(path, compile=False, safe_mode=safe_mode)
        except Exception as exc3:
            errors.append(exc3)
            raise _keras_error(path, errors[0]) from None
    return freeze_keras_model(model, input_shape, source=str(path))
