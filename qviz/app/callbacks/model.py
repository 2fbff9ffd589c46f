"""Choosing a sample or uploading a model."""

from __future__ import annotations

import base64
import binascii
import tempfile
import time
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


def save_upload(contents: str, filename: str, max_bytes: int) -> Path:
    """Decode a ``dcc.Upload`` payload to a file (a zipped SavedModel unpacked);
    its path. Raises LoadError (naming the file) for what is wrong before loading."""
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
    return path


def open_file(path, name: str):
    """Load ``path``; a LoadError names the file as the user knows it (``name``),
    not our temporary path."""
    try:
        return load(path)
    except LoadError as exc:
        raise LoadError(name, exc.cause) from None


def load_upload(contents: str, filename: str, max_bytes: int):
    """Save and load an upload, synchronously (the app does the load in the background)."""
    return open_file(save_upload(contents, filename, max_bytes), Path(filename).name)


def _start_load(path, name: str):
    """Load in a background thread of this process: freezing a big Keras model
    takes seconds, and no request should wait for it. Not in the worker: a load
    must not queue behind another user's sensitivity sweep."""
    from ..worker import in_thread

    return in_thread(open_file, path, name)


def register(app, store, options) -> None:
    # Opening a model is two steps: the picker/upload starts the load in a
    # background thread and says "loading…"; an interval polls it and, when the
    # graph is ready, makes the session. No request blocks on a big model.
    @app.callback(
        Output(ids.MODEL_STATUS, "children"), Output(ids.MODEL_VERSION, "data"),
        Output(ids.RECIPE, "data", allow_duplicate=True), Output(ids.VIEW, "data", allow_duplicate=True),
        Output(ids.MODEL_POLL, "disabled"),
        Input(ids.MODEL_PICKER, "value"), Input(ids.UPLOAD, "contents"), Input(ids.MODEL_POLL, "n_intervals"),
        State(ids.UPLOAD, "filename"), State(ids.SESSION, "data"), State(ids.VIEW, "data"),
        prevent_initial_call="initial_duplicate",
    )
    def open_model(sample, contents, _tick, filename, session, view):
        sid = session["sid"]
        trig = ctx.triggered_id

        def failed(exc):
            keep = store.get(sid)
            msg = f"error: {exc}" + (f" — still showing {keep.name}" if keep else "")
            return msg, no_update, no_update, no_update, True

        if trig == ids.MODEL_POLL:
            pending = store.loading.get(sid)
            if pending is None:
                return no_update, no_update, no_update, no_update, True
            if pending[0] == "done":
                # A tick sent while the one that finished was in flight: the page
                # drops that older answer, so this one must carry it again.
                return pending[1]
            future, name, started = pending
            if not future.done():
                return f"loading {name}… {time.monotonic() - started:.0f} s", no_update, no_update, no_update, False
            try:
                answer = _opened(future.result(), name, sid, view)
            except LoadError as exc:
                answer = failed(exc)
            except Exception as exc:  # a loader bug: still one line, and the app goes on
                answer = failed(LoadError(name, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
            store.loading[sid] = ("done", answer)
            return answer
        try:
            if trig == ids.UPLOAD and contents:
                path, name = save_upload(contents, filename, options["max_upload_bytes"]), Path(filename).name
            elif options.get("model") is not None and trig != ids.MODEL_PICKER:
                return _opened(options["model"], options["model_name"], sid, view)
            else:
                name = sample or options["default_sample"]
                path = sample_path(name)
        except LoadError as exc:
            return failed(exc)
        store.loading[sid] = (_start_load(path, name), name, time.monotonic())
        return f"loading {name}…", no_update, no_update, no_update, False

    def _opened(graph, name, sid, view):
        store.put(sid, Session(graph, name, worker=options["worker"]))
        status = f"{name}: {len(graph)} ops, {len(graph.layers)} layers"
        recipe = {"history": [START_RECIPE.to_dict()], "pos": 0}
        return status, {"name": name, "sid": sid, "n": len(graph)}, recipe, {**view, "expanded": []}, True
