"""Choosing a sample or uploading a model."""

from __future__ import annotations

import base64
import binascii
import tempfile
import zipfile
from pathlib import Path

from dash import Input, Output, State, ctx, no_update

from ...importers import LoadError, load
from ...passes import Recipe
from ...samples import sample_path
from .. import ids
from ..session import Session

#: The recipe a freshly opened model starts with: nothing folded or quantized.
START_RECIPE = Recipe(fold_default=False, quantize_default=None)
UPLOAD_SUFFIXES = (".keras", ".h5", ".hdf5", ".pb", ".pbtxt", ".zip")


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 2**10:.1f} KB"


def load_upload(contents: str, filename: str, max_bytes: int):
    """Decode a ``dcc.Upload`` payload and load it; raises LoadError with a one-line cause."""
    name = Path(filename or "upload").name
    suffix = Path(name).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise LoadError(name, f"unsupported file type {suffix or '(none)'!r}; upload "
                              ".keras, .h5, .pb, .pbtxt or a zipped SavedModel")
    try:
        data = base64.b64decode(contents.split(",", 1)[1], validate=False)
    except (IndexError, binascii.Error):
        raise LoadError(name, "the upload could not be decoded") from None
    if len(data) > max_bytes:
        raise LoadError(name, f"is {_size(len(data))}, over the {_size(max_bytes)} upload limit")
    tmp = Path(tempfile.mkdtemp(prefix="qviz-upload-"))
    path = tmp / name
    path.write_bytes(data)
    if suffix == ".zip":
        try:
            with zipfile.ZipFile(path) as z:
                bad = [m for m in z.namelist() if m.startswith("/") or ".." in Path(m).parts]
                if bad:
                    raise LoadError(name, f"unsafe path in the archive: {bad[0]!r}")
                z.extractall(tmp / "unzipped")
        except zipfile.BadZipFile:
            raise LoadError(name, "not a valid zip archive") from None
        found = sorted(p.parent for p in (tmp / "unzipped").rglob("saved_model.pb"))
        if not found:
            raise LoadError(name, "the zip holds no SavedModel (no saved_model.pb inside)")
        path = found[0]
    try:
        return load(path)
    except LoadError as exc:  # name the file as the user knows it, not our temp path
        raise LoadError(name, exc.cause) from None


def register(app, store, options) -> None:
    @app.callback(
        Output(ids.MODEL_STATUS, "children"), Output(ids.MODEL_VERSION, "data"),
        Output(ids.RECIPE, "data", allow_duplicate=True), Output(ids.VIEW, "data", allow_duplicate=True),
        Input(ids.MODEL_PICKER, "value"), Input(ids.UPLOAD, "contents"),
        State(ids.UPLOAD, "filename"), State(ids.SESSION, "data"), State(ids.VIEW, "data"),
        prevent_initial_call="initial_duplicate",
    )
    def open_model(sample, contents, filename, session, view):
        sid = session["sid"]
        try:
            if ctx.triggered_id == ids.UPLOAD and contents:
                graph, name = load_upload(contents, filename, options["max_upload_bytes"]), Path(filename).name
            elif options.get("model") is not None and ctx.triggered_id != ids.MODEL_PICKER:
                graph, name = options["model"], options["model_name"]
            else:
                sample = sample or options["default_sample"]
                graph, name = load(sample_path(sample)), sample
        except LoadError as exc:
            keep = store.get(sid)
            msg = f"error: {exc}" + (f" — still showing {keep.name}" if keep else "")
            return msg, no_update, no_update, no_update
        store.put(sid, Session(graph, name, worker=options["worker"]))
        status = f"{name}: {len(graph)} ops, {len(graph.layers)} layers"
        recipe = {"history": [START_RECIPE.to_dict()], "pos": 0}
        return status, {"name": name, "sid": sid, "n": len(graph)}, recipe, {**view, "expanded": []}
