"""A Keras model's layer graph read from its file, without Keras or TensorFlow.

A ``.keras`` archive holds its architecture in ``config.json``; a legacy
``.h5`` file in its ``model_config`` attribute. Both name every layer, its
class, its configuration and the layers feeding it — enough to draw the layer
view in milliseconds, while TensorFlow takes seconds to load, trace and freeze
the same model. The sketch has the same layers and connections as the frozen
graph's layer view (checked on ``keras.applications`` networks in the tests),
so the drawing does not move when the frozen graph replaces it.

Nothing in the file is executed: the JSON is only read (size-bounded, the
archive checked as :func:`qviz.importers.safety.check_zip` does).

>>> import json
>>> config = {"class_name": "Functional", "config": {"name": "m", "layers": [
...     {"class_name": "InputLayer", "name": "x", "config": {"batch_shape": [None, 8, 8, 3]}, "inbound_nodes": []},
...     {"class_name": "Conv2D", "name": "c", "config": {"filters": 4, "kernel_size": [3, 3], "use_bias": True},
...      "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
...                                   "config": {"shape": [None, 8, 8, 3], "keras_history": ["x", 0, 0]}}]}]}]}}
>>> sketch = sketch_from_config(config, "m.keras")
>>> [(layer.name, layer.class_name, layer.inputs, layer.params) for layer in sketch.layers]
[('x', 'InputLayer', (), 0), ('c', 'Conv2D', ('x',), 112)]
>>> sketch.layers[1].input_shapes
((None, 8, 8, 3),)
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .errors import LoadError, first_line
from .safety import DEFAULT_LIMITS, Limits, check_zip

__all__ = ["LayerSketch", "ModelSketch", "read_sketch", "sketch_from_config", "read_keras_config"]

@dataclass(frozen=True)
class LayerSketch:
    """One layer as the file describes it.

    ``inputs``: the layers feeding it, in order (repeated for a layer called on
    two outputs of one layer); ``input_shapes``: its inputs' shapes where the
    file records them (Keras 3 does, per call; Keras 2 only for input layers);
    ``params``: its parameter count where the configuration alone gives it
    (convolutions, dense, batch norm, and layers without weights), else None.
    """

    name: str
    class_name: str
    inputs: tuple[str, ...]
    input_shapes: tuple[tuple, ...]
    params: int | None
    config: dict


@dataclass(frozen=True)
class ModelSketch:
    """The layer graph of a Keras model file: ``layers`` in the file's order."""

    source: str
    name: str
    layers: tuple[LayerSketch, ...]

    def __len__(self) -> int:
        return len(self.layers)


def read_keras_config(path: Path, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The raw ``config.json`` of a ``.keras`` archive, after checking the archive
    (a zip bomb, too many members, a damaged member are refused with LoadError)."""
    if not zipfile.is_zipfile(path):
        raise LoadError(str(path), "not a Keras archive: it is not a valid zip file (truncated or corrupt?)")
    infos = {i.filename: i for i in check_zip(path, str(path), limits)}
    if "config.json" not in infos:
        raise LoadError(str(path), "a zip archive, but not a Keras model: it has no config.json")
    if infos["config.json"].file_size > limits.max_config_bytes:
        raise LoadError(str(path), f"its config.json is over {limits.max_config_bytes // 2**20} MB")
    try:
        with zipfile.ZipFile(path) as zf:
            return zf.read("config.json")
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
        raise LoadError(str(path), f"not a Keras archive: the zip is damaged ({first_line(exc)})") from None


def read_sketch(path, limits: Limits = DEFAULT_LIMITS) -> ModelSketch:
    """The layer graph of a ``.keras`` or ``.h5`` file (milliseconds; no TensorFlow).

    Raises:
        LoadError: the file is not a Keras model file, is damaged, or its
            config has no layer graph qviz can read (a subclassed model).
    """
    path = Path(path)
    if path.suffix.lower() in (".h5", ".hdf5"):
        from .keras import _h5_model_config   # h5py only; no Keras

        raw = _h5_model_config(path, safe_mode=False)
    else:
        raw = read_keras_config(path, limits)
    if len(raw) > limits.max_config_bytes:
        raise LoadError(str(path), f"its model config is over {limits.max_config_bytes // 2**20} MB")
    try:
        config = json.loads(raw)
    except (ValueError, RecursionError):
        raise LoadError(str(path), "its model config is not valid JSON") from None
    return sketch_from_config(config, str(path))


def sketch_from_config(config, source: str) -> ModelSketch:
    """The :class:`ModelSketch` of a parsed Keras model config (Keras 3 or 2,
    functional or sequential). Raises LoadError when it has no layer list."""
    body = config.get("config") if isinstance(config, dict) else None
    layers = body.get("layers") if isinstance(body, dict) else None
    if not isinstance(layers, list) or not all(isinstance(layer, dict) for layer in layers):
        raise LoadError(source, "its model config has no layer list (a subclassed model?)")
    name = str(body.get("name") or Path(source).stem)
    sequential = config.get("class_name") == "Sequential" or not any("inbound_nodes" in x for x in layers)
    out: list[LayerSketch] = []
    for i, layer in enumerate(layers):
        cfg = layer.get("config") if isinstance(layer.get("config"), dict) else {}
        lname = str(layer.get("name") or cfg.get("name") or f"layer_{i}")
        cls = str(layer.get("class_name") or "Layer")
        if sequential:
            inputs = (out[-1].name,) if out else ()
            shapes = (tuple(_shape_of(cfg)),) if not out and _shape_of(cfg) else ()
        else:
            inputs, shapes = _inbound(layer.get("inbound_nodes"))
            if not inputs and _shape_of(cfg):
                shapes = (tuple(_shape_of(cfg)),)
        out.append(LayerSketch(lname, cls, inputs, shapes, _params(cls, cfg, shapes), cfg))
    return ModelSketch(source, name, tuple(out))


def _shape_of(cfg: dict) -> list | None:
    shape = cfg.get("batch_shape") or cfg.get("batch_input_shape")
    return shape if isinstance(shape, list) else None


def _inbound(nodes) -> tuple[tuple[str, ...], tuple[tuple, ...]]:
    """(source layer names, their shapes where recorded) of a layer's inbound calls,
    in either Keras format: Keras 3 nests ``__keras_tensor__`` records in each
    call's args and kwargs; Keras 2 lists ``[layer, node, tensor, kwargs]``."""
    names: list[str] = []
    shapes: list[tuple] = []
    stack = [nodes]
    visited = 0
    while stack:    # iterative: a config's nesting is the file's choice, not ours
        item = stack.pop()
        visited += 1
        if visited > 100_000:
            break
        if isinstance(item, dict):
            if item.get("class_name") == "__keras_tensor__" and isinstance(item.get("config"), dict):
                history = item["config"].get("keras_history")
                if isinstance(history, list) and history and isinstance(history[0], str):
                    names.append(history[0])
                    shape = item["config"].get("shape")
                    if isinstance(shape, list):
                        shapes.append(tuple(shape))
                continue
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            if len(item) >= 3 and isinstance(item[0], str) and isinstance(item[1], int):
                names.append(item[0])        # Keras 2: [layer, node index, tensor index, kwargs]
                continue
            stack.extend(reversed(item))
    return tuple(names), tuple(shapes)


#: Largest count or size believed from a config (a file's numbers are not trusted arithmetic).
_MAX_DIM = 10**7


def _count(value) -> int | None:
    """``value`` if it is a plausible size (a positive int, not a bool, at most _MAX_DIM)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= _MAX_DIM else None


def _channels(shapes) -> int | None:
    if shapes and shapes[0]:
        return _count(shapes[0][-1])
    return None


def _params(cls: str, cfg: dict, shapes) -> int | None:
    """Parameters of a layer from its configuration and input shape, where they follow
    from them alone; None where they do not (or for a class qviz does not know)."""
    if cls in ("InputLayer", "ReLU", "Activation", "Add", "Concatenate", "Multiply", "Subtract", "Average",
               "Maximum", "Minimum", "ZeroPadding2D", "Dropout", "Flatten", "Reshape", "Softmax", "LeakyReLU",
               "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "GlobalMaxPooling2D", "Cropping2D",
               "Rescaling", "Permute", "UpSampling2D", "MaxPooling1D", "AveragePooling1D", "ELU", "ReLU6"):
        return 0
    cin = _channels(shapes)
    bias = 1 if cfg.get("use_bias", True) else 0
    kernel = cfg.get("kernel_size")
    sizes = [_count(k) for k in kernel] if isinstance(kernel, list) and 1 <= len(kernel) <= 3 else [None]
    area = None if None in sizes else 1
    for k in sizes if area else ():
        area *= k
    filters, mult = _count(cfg.get("filters")), _count(cfg.get("depth_multiplier", 1))
    if cls in ("Conv2D", "Conv1D", "Conv3D") and cin and area and filters:
        groups = _count(cfg.get("groups", 1)) or 1
        return area * (cin // groups) * filters + bias * filters
    if cls == "DepthwiseConv2D" and cin and area and mult:
        return area * cin * mult + bias * cin * mult
    if cls == "SeparableConv2D" and cin and area and mult and filters:
        return area * cin * mult + cin * mult * filters + bias * filters
    units = _count(cfg.get("units"))
    if cls == "Dense" and cin and units:
        return cin * units + bias * units
    if cls == "BatchNormalization" and cin:
        return cin * (2 + bool(cfg.get("center", True)) + bool(cfg.get("scale", True)))
    return None
