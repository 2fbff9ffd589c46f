"""A recipe carried into the tools people already use: a tfmot training
script, or an AI Edge Quantizer recipe with the float model it is for.

``qviz export-code MODEL --recipe R.json --tool tfmot -o qat_tfmot.py`` (or
:func:`export_code`) writes the files and returns what each tool does
differently from the recipe (:attr:`CodeExport.notes`), which the CLI prints.

- ``tfmot``: ``qat_tfmot.py`` (:mod:`.tfmot_code`), and the model it reads
  beside it, ``qat_tfmot_tf_keras.h5`` (a Keras 3 model rebuilt, :mod:`.keras2`).
- ``ai-edge-quantizer``: ``recipe.json`` (:mod:`.aeq_recipe`) and the float
  model it names ops of, ``recipe_float.tflite``.

- ``qkeras``: ``qat_qkeras.py`` (:mod:`.qkeras_code`), the same tf_keras
  rebuild beside it.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..choices import is_keras_file
from ..errors import QvizError
from ..passes.quant_points import quantized_in_graph
from ..passes.recipe import Recipe

__all__ = ["CODE_TOOLS", "CodeExport", "CodeExportError", "export_code"]

#: tool → the suffix of the file it is written to.
CODE_TOOLS = {"tfmot": ".py", "qkeras": ".py", "ai-edge-quantizer": ".json"}


class CodeExportError(QvizError, ValueError):
    """The recipe cannot be written for the tool asked for; the message says why."""


@dataclass(frozen=True)
class CodeExport:
    """What :func:`export_code` wrote."""

    tool: str
    files: tuple[Path, ...]        # the script or recipe first, then the model file it reads
    notes: tuple[str, ...]         # where the tool does something other than the recipe


def _keras_model(path: str, safe_mode: bool):
    """The Keras model object of a ``.keras``/``.h5`` file (tf_keras first for ``.h5``, as qviz loads it)."""
    from .._text import first_line
    from ..importers.errors import LoadError

    errors = []
    loaders = []
    if Path(path).suffix.lower() != ".keras":
        def tf_keras_load():
            import tf_keras
            return tf_keras.models.load_model(path, compile=False, safe_mode=safe_mode)
        loaders.append(tf_keras_load)

    def keras_load():
        import keras
        return keras.models.load_model(path, compile=False, safe_mode=safe_mode)
    loaders.append(keras_load)
    for loader in loaders:
        try:
            return loader()
        except Exception as exc:   # Keras raises many types for unreadable files
            errors.append(first_line(exc, 160))
    raise LoadError(path, f"Keras cannot read it: {errors[-1]}")


def export_code(model, recipe: Recipe, tool: str, out, *, calibration=None, safe_mode: bool = True,
                load_options: dict | None = None) -> CodeExport:
    """Write ``recipe`` for ``tool`` (one of :data:`CODE_TOOLS`) to ``out``.

    Args:
        model: the path of the model file (a Keras file for ``tfmot``; any
            model qviz reads for ``ai-edge-quantizer``).
        recipe: a :class:`qviz.Recipe`.
        out: the script (``.py``) or recipe (``.json``) to write.
        calibration: what the recipe's activation ranges are measured on
            (the tfmot script's starting point is read off ``qviz.apply``).
        safe_mode: refuse a file that would run code when read (see :func:`qviz.load`).
        load_options: more keywords of :func:`qviz.load` (``input_shape``, ``limits``).

    Raises:
        CodeExportError, RecipeError, LoadError, ExportError: with the cause in one line.
    """
    from ..importers import load
    from . import ExportError

    if tool not in CODE_TOOLS:
        raise CodeExportError(f"unknown tool {tool!r}; qviz writes code for {', '.join(CODE_TOOLS)}")
    out = Path(out)
    if out.suffix.lower() != CODE_TOOLS[tool]:
        raise CodeExportError(f"{out}: {tool} is written as a {CODE_TOOLS[tool]} file")
    if not out.parent.is_dir():
        raise ExportError(f"{out}: cannot write: {out.parent} is not a directory")
    if tool in ("tfmot", "qkeras") and not is_keras_file(str(model)):
        raise CodeExportError(f"{model}: {tool} trains Keras models; a frozen graph has no layers to rebuild")
    # qviz's safety checks run before any Keras reads the file
    graph = load(model, **{**(load_options or {}), "safe_mode": safe_mode})
    recipe.validate(graph)
    done = quantized_in_graph(graph)
    if done:   # (the AI Edge Quantizer's float model failed to prepare in TFLite's interpreter)
        raise CodeExportError(f"{model}: fake-quantized already ({len(done)} layers); {tool} quantizes a float "
                              "model: export the model it came from")
    files: list[tuple[Path, bytes | None]] = []
    from .keras2 import Keras2Error
    from .tflite import TFLiteError

    try:
        if tool in ("tfmot", "qkeras"):
            code = _keras_tool(tool, model, graph, recipe, out, calibration, safe_mode, files)
        else:
            from .aeq_recipe import aeq_recipe, float_tflite

            tflite_path = out.with_name(out.stem + "_float.tflite")
            tflite = float_tflite(graph)
            code = aeq_recipe(graph, recipe, tflite)
            files.append((tflite_path, tflite))
    except (Keras2Error, TFLiteError) as exc:      # name the file: their messages name the model inside
        raise type(exc)(f"{model}: {exc}") from None
    files.insert(0, (out, code.text.encode()))
    for path, data in files:
        if data is None:      # written already (the tf_keras rebuild)
            continue
        try:
            path.write_bytes(data)
        except OSError as exc:
            raise ExportError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return CodeExport(tool, tuple(p for p, _ in files), code.notes)


def _keras_tool(tool, model, graph, recipe, out: Path, calibration, safe_mode, files):
    from ..qat.plan import qat_plan
    from . import ExportError
    from .keras2 import is_tf_keras_model, to_tf_keras
    from .qkeras_code import qkeras_script
    from .tfmot_code import tfmot_script

    path = str(model)
    keras_model = _keras_model(path, safe_mode)
    # the script reads a tf_keras .h5 beside it: the model rebuilt (Keras 3), or saved again (tf_keras),
    # so the files travel together (a zip from the app, a folder moved elsewhere)
    twin = keras_model if is_tf_keras_model(keras_model) else to_tf_keras(keras_model)
    rebuilt = out.with_name(out.stem + "_tf_keras.h5")
    tf_log = logging.getLogger("tensorflow")
    level = tf_log.level
    tf_log.setLevel(logging.ERROR)    # "compiled metrics not built yet": the twin is not compiled
    try:
        with warnings.catch_warnings():   # "HDF5 is legacy": it is the format tf_keras and tfmot read
            warnings.simplefilter("ignore")
            twin.save(rebuilt)
    except OSError as exc:
        raise ExportError(f"{rebuilt}: cannot write: {exc.strerror or exc}") from None
    finally:
        tf_log.setLevel(level)
    files.append((rebuilt, None))
    model_file = rebuilt.name
    if callable(calibration):
        calibration = calibration(graph)
    plan = qat_plan(graph, recipe, calibration=calibration)
    classes = {layer.name: type(layer).__name__ for layer in keras_model.layers}
    script = tfmot_script if tool == "tfmot" else qkeras_script
    return script(plan, classes, model_file, source=f"{Path(path).name} and its recipe", script=out.name)
