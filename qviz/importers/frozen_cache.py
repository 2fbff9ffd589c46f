"""Frozen Keras models kept on disk, so a file opened again skips TensorFlow's
load, trace and freeze.

Opening a ``.keras`` or ``.h5`` file costs Keras' loader, a trace and a freeze:
~6 s for MobileNetV2, ~24 s for NASNetMobile. The graph that comes out is a
function of the file's bytes, of how it was loaded (input shape, safe mode) and
of the code that froze it, so the key is a hash of exactly those: the file's
content, the options, the versions of TensorFlow, Keras and tf_keras, and the
source of qviz's importers and IR. The same file opened again — a reload, a
second user, ``qviz serve`` started again — is read back in a fraction of a
second (MobileNetV2 ~0.1 s).

Rules:

- Only what the loader returned is kept, after every check of the file passed;
  a file refused is never written. The entry is read only when the options
  match, so a file loaded with ``safe_mode=False`` is not opened from its entry
  by a load in safe mode (that one refuses, as it would have).
- Nothing read is executed. An entry is a JSON header line (inputs, outputs,
  layers, scopes) and the GraphDef's bytes, parsed and checked for unsafe ops
  like any ``.pb`` file, read only as :func:`qviz.cache_dir.read_entry` reads an
  entry (this user's, a regular file, bounded: a FIFO, a giant or another user's
  file in its place is refused, never read); an entry that cannot be read is
  deleted and the file loaded again.
- The directory is :func:`qviz.cache_dir.cache_directory`, made private to its
  user. It never holds more than :data:`MAX_FILES` entries or
  :data:`MAX_BYTES` (the least recently used go first), and graphs over
  :data:`MAX_ENTRY_BYTES` are not written. A directory that cannot be written
  only costs the saving.

>>> import tempfile
>>> from qviz.ir import Graph, Node
>>> g = Graph([Node("x", "Placeholder"), Node("y", "Relu", ["x"], layer="act")], source="m.keras")
>>> cache = FrozenCache(tempfile.mkdtemp())
>>> cache.put("k1", g)
>>> again = cache.get("k1", source="copy.keras")
>>> [(n.name, n.layer) for n in again.nodes][1], again.source
(('y', 'act'), 'copy.keras')
>>> cache.get("k2", source="m.keras") is None
True
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from importlib import metadata
from pathlib import Path

from ..cache_dir import cache_directory, mark_used, prune, read_entry, save_bytes
from .safety import DEFAULT_LIMITS, Limits, read_bounded

__all__ = ["FrozenCache", "file_key", "MAX_FILES", "MAX_BYTES", "MAX_ENTRY_BYTES"]

log = logging.getLogger(__name__)

#: Entries kept at most.
MAX_FILES = 16
#: Bytes kept at most (ResNet50's frozen graph is ~100 MB).
MAX_BYTES = 1 << 30
#: A graph bigger than this is not written (it would push out every other entry).
MAX_ENTRY_BYTES = 256 << 20
#: Entries are named ``frozen-<key>.graph``: nothing else in the directory is touched.
PREFIX, SUFFIX = "frozen-", ".graph"

#: The biggest entry read: a graph written here, its header beside it.
_ENTRY_MAX_BYTES = MAX_ENTRY_BYTES + (64 << 20)


@functools.cache
def _code_version() -> str:
    """What the frozen graph depends on besides the file: the libraries that load and
    freeze it, and qviz's own importers and IR (a changed importer makes new entries)."""
    h = hashlib.sha256()
    for dist in ("tensorflow", "keras", "tf_keras"):
        try:
            h.update(f"{dist} {metadata.version(dist)}\n".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{dist} -\n".encode())
    here = Path(__file__).resolve().parent
    for path in sorted([*here.glob("*.py"), *(here.parent / "ir").glob("*.py")]):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def file_key(path: Path, limits: Limits = DEFAULT_LIMITS, **options) -> str:
    """The key of ``path`` loaded with ``limits`` and ``options`` (JSON-able values): a
    hash of the file's bytes, the options and :func:`_code_version`. The file is read as
    every loader reads one (:func:`~qviz.importers.safety.read_bounded`: a regular file,
    within ``limits``, never blocking on a FIFO swapped in)."""
    h = hashlib.sha256(f"qviz-frozen {_code_version()} {path.suffix.lower()}\n".encode())
    h.update(json.dumps({**options, "limits": limits}, sort_keys=True, default=repr).encode() + b"\n")
    h.update(read_bounded(path, str(path), limits))
    return h.hexdigest()


class FrozenCache:
    """Graphs kept under ``directory`` by key (``hits``: how many were read back)."""

    def __init__(self, directory=None):
        self.directory = Path(directory) if directory is not None else cache_directory()
        self.hits = 0

    def _path(self, key: str) -> Path:
        return self.directory / f"{PREFIX}{key}{SUFFIX}"

    def get(self, key: str, *, source: str):
        """The graph kept under ``key``, its source set to ``source`` (where the file is
        now); None when there is none or it cannot be read (then it is deleted)."""
        from .graphdef import graph_from_graph_def
        from ..ir.proto import pb

        path = self._path(key)
        try:
            data = read_entry(path, _ENTRY_MAX_BYTES)   # (not read: a FIFO, a giant, another user's file)
            head, _, body = data.partition(b"\n")
            meta = json.loads(head)
            graph_def = pb().GraphDef()
            graph_def.ParseFromString(body)
            graph = graph_from_graph_def(graph_def, source, inputs=meta["inputs"], outputs=meta["outputs"],
                                         layer_of=meta["layer_of"], layer_scopes=meta["layer_scopes"])
        except FileNotFoundError:
            return None
        except Exception as exc:   # damaged or foreign: LoadError, JSON, protobuf's DecodeError, a missing key
            log.warning("frozen graph %s in the cache could not be read (%s); loading the file again",
                        path.name, exc)
            try:
                path.unlink(missing_ok=True)
            except OSError:   # (a directory not this user's: left as it is)
                pass
            return None
        mark_used(path)
        self.hits += 1
        return graph

    def put(self, key: str, graph) -> None:
        """Keep ``graph`` under ``key`` (unless it is over :data:`MAX_ENTRY_BYTES`)."""
        body = graph.to_graph_def().SerializeToString()
        if len(body) > MAX_ENTRY_BYTES:
            log.info("frozen graph of %s not cached: %d MB", graph.source, len(body) >> 20)
            return
        meta = {"inputs": list(graph.inputs), "outputs": list(graph.outputs),
                "layer_of": {n.name: n.layer for n in graph.nodes},
                "layer_scopes": dict(graph.layer_scopes)}
        save_bytes(self._path(key), json.dumps(meta, separators=(",", ":")).encode() + b"\n" + body,
                   what="frozen graph")
        prune(self.directory, PREFIX, MAX_FILES, MAX_BYTES, suffix=SUFFIX)
