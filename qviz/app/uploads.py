"""Uploaded model files: decoded, size-checked and unpacked into a private
temporary directory that lives exactly as long as the session showing the model.

The directory is removed when the upload is refused, when its load fails, when
the session opens another model or is evicted, and at exit
(:meth:`qviz.app.session.SessionStore.close_all`). Archives are unpacked with
:func:`qviz.importers.safety.extract_zip`: member count, total size, ratio and
paths are checked before anything is inflated.
"""

from __future__ import annotations

import base64
import binascii
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..choices import MODEL_SUFFIXES
from .._text import hide_temp_paths
from ..importers import LoadError, load
from ..importers.safety import Limits, extract_zip
from .session import remove_dir

__all__ = ["UPLOAD_SUFFIXES", "Upload", "save_upload", "open_file", "load_upload", "size_text"]

UPLOAD_SUFFIXES = MODEL_SUFFIXES + (".zip",)   # a zipped SavedModel directory


def size_text(n: int) -> str:
    """A size for a message.

    >>> size_text(3 * 2**20), size_text(1536)
    ('3.0 MB', '1.5 KB')
    """
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 2**10:.1f} KB"


@dataclass(frozen=True)
class Upload:
    """A saved upload: the path to load, the name the user knows, its directory."""

    path: Path
    name: str
    directory: Path

    def discard(self) -> None:
        remove_dir(self.directory)


def _safe_name(filename) -> str:
    """The upload's base name, as the user knows it (for messages)."""
    name = Path(str(filename or "upload")).name
    return name if name not in ("", ".", "..") else "upload"


def _disk_name(name: str) -> str:
    """A name safe to create: no control characters, at most 100 bytes, the suffix kept."""
    suffix = Path(name).suffix.lower()
    stem = "".join(c if c.isprintable() and c not in "/\\" else "_" for c in Path(name).stem)
    while len(stem.encode("utf-8")) > 100 - len(suffix):
        stem = stem[:-1]
    return (stem or "upload") + suffix


def save_upload(contents, filename, max_bytes: int) -> Upload:
    """Decode a ``dcc.Upload`` payload to a file in a new temporary directory (a
    zipped SavedModel unpacked). Raises LoadError naming the file, and then
    leaves nothing behind."""
    name = _safe_name(filename)
    suffix = Path(name).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise LoadError(name, f"unsupported file type {suffix or '(none)'!r}; upload "
                              ".keras, .h5, .pb, .pbtxt or a zipped SavedModel")
    if not isinstance(contents, str) or "," not in contents:
        raise LoadError(name, "the upload could not be decoded")
    encoded = contents.split(",", 1)[1]
    if len(encoded) * 3 // 4 > max_bytes + 3:   # refuse before decoding a giant payload
        raise LoadError(name, f"is {size_text(len(encoded) * 3 // 4)}, over the {size_text(max_bytes)} upload limit")
    try:
        data = base64.b64decode(encoded, validate=False)
    except (binascii.Error, ValueError):
        raise LoadError(name, "the upload could not be decoded") from None
    if len(data) > max_bytes:
        raise LoadError(name, f"is {size_text(len(data))}, over the {size_text(max_bytes)} upload limit")
    directory = Path(tempfile.mkdtemp(prefix="qviz-upload-"))
    upload = Upload(directory / _disk_name(name), name, directory)
    try:
        try:
            upload.path.write_bytes(data)
        except OSError as exc:
            raise LoadError(name, f"the upload could not be stored ({exc.strerror or type(exc).__name__})") from None
        if suffix == ".zip":
            # An archive may unpack to at most 4x the upload limit (SavedModels compress little).
            extract_zip(upload.path, directory / "unzipped", name, Limits(max_bytes=4 * max_bytes))
            found = sorted(p.parent for p in (directory / "unzipped").rglob("saved_model.pb"))
            if not found:
                raise LoadError(name, "the zip holds no SavedModel (no saved_model.pb inside)")
            upload = Upload(found[0], name, directory)
    except BaseException:
        upload.discard()
        raise
    return upload


def _hide_paths(text: str, directory: Path | None) -> str:
    """A message without server paths: the upload's own directory, then any temp path."""
    if directory is not None:
        text = text.replace(str(directory) + "/", "").replace(str(directory), "")
    return hide_temp_paths(text)


def open_file(path, name: str, directory: Path | None = None, **load_options):
    """Load ``path`` (``load_options``: :func:`qviz.load`'s); a LoadError names the
    file as the user knows it (``name``), with no server path in its cause."""
    try:
        return load(path, **load_options)
    except LoadError as exc:
        raise LoadError(name, _hide_paths(exc.cause, directory)) from None


def load_upload(contents, filename, max_bytes: int):
    """Save and load an upload, synchronously (the app loads in the background);
    the directory is removed if the load fails."""
    upload = save_upload(contents, filename, max_bytes)
    try:
        return open_file(upload.path, upload.name, upload.directory)
    except BaseException:
        upload.discard()
        raise
