"""Layouts kept on disk, so a model opened again is drawn without laying it out again.

The layered layout is a function of the view graph's structure and names
(:func:`qviz.layout.layered_routes` orders nodes canonically), so the key is a
hash of exactly that: nodes, edges, ghosts and direction. A layer view drawn
from a Keras file's config and the frozen graph's layer view share their entry.

The directory is :func:`qviz.cache_dir.cache_directory`. It never holds more
than :data:`MAX_FILES` entries or :data:`MAX_BYTES` (the oldest go first); an entry that cannot be
read is recomputed, and a directory that cannot be written only costs the
saving (logged). Nothing read from it is executed: entries are JSON numbers.
Graphs under :data:`MIN_NODES` nodes are not written (laying them out is faster than
a file). The app's cache (:func:`default_cache`) also keeps the last :data:`RECENT` layouts
of any size in memory: every edit of a layer view is laid out as the same graph
(:func:`qviz.layout.routes_in_place`).

>>> import tempfile
>>> from qviz.layout import DiGraph
>>> g = DiGraph([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
>>> cache = LayoutCache(tempfile.mkdtemp())
>>> first = cache.routes(g)            # laid out, then saved
>>> cache.routes(g) == first, cache.hits
(True, 1)
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import OrderedDict
from pathlib import Path
from threading import Lock

from .digraph import DiGraph
from ..cache_dir import cache_directory, mark_used, prune, read_entry, save_json
from .layered import LAYOUT_VERSION, layered_routes

__all__ = ["LayoutCache", "default_cache", "MAX_FILES", "MAX_BYTES"]

log = logging.getLogger(__name__)

#: Entries kept at most (NASNetMobile's op view is ~1 MB; a layer view tens of kB).
MAX_FILES = 200
#: Bytes kept at most.
MAX_BYTES = 256 * 2**20
#: The biggest entry read (one is refused rather than read whole into memory).
MAX_ENTRY_BYTES = 64 * 2**20
#: Below this many nodes laying out is faster than reading a file.
MIN_NODES = 300
#: Entries are named ``layout-<hash>.json``: nothing else in the directory is touched.
PREFIX = "layout-"
#: Layouts kept in memory (by the key of their graph), whichever cache laid them out.
RECENT = 8

_recent: OrderedDict[str, tuple[dict, dict]] = OrderedDict()
_recent_lock = Lock()


def _key(g: DiGraph, direction: str) -> str:
    h = hashlib.sha256(f"qviz-layout {LAYOUT_VERSION} {direction}\n".encode())
    for n in sorted(map(str, g.nodes)):
        ghost = g.nodes[n].get("ghost_of")
        h.update(f"n {n}\t{ghost or ''}\n".encode())
    for u, v in sorted((str(u), str(v)) for u, v in g.edges):
        h.update(f"e {u}\t{v}\n".encode())
    return h.hexdigest()


class LayoutCache:
    """:func:`~qviz.layout.layered_routes`, remembered on disk under ``directory``
    (``hits``: how many answers this instance read from disk), and with ``in_memory``
    the last :data:`RECENT` layouts in memory too (shared by every such cache)."""

    def __init__(self, directory, min_nodes: int = 0, in_memory: bool = False):
        self.directory = Path(directory)
        self.min_nodes = min_nodes
        self.in_memory = in_memory
        self.hits = 0

    def routes(self, g: DiGraph, direction: str = "LR") -> tuple[dict, dict]:
        """``(positions, routes)`` of ``g`` as :func:`layered_routes` gives them."""
        if not self.in_memory:
            return self._laid_out(g, direction)
        key = _key(g, direction)
        with _recent_lock:
            found = _recent.get(key)
            if found is not None:
                _recent.move_to_end(key)
        if found is None:
            found = self._laid_out(g, direction, key)
            with _recent_lock:
                _recent[key] = found
                while len(_recent) > RECENT:
                    _recent.popitem(last=False)
        pos, routes = found
        return dict(pos), dict(routes)   # (the caller's to change)

    def _laid_out(self, g: DiGraph, direction: str, key: str | None = None) -> tuple[dict, dict]:
        if g.number_of_nodes() < self.min_nodes:
            return layered_routes(g, direction)
        path = self.directory / f"{PREFIX}{key or _key(g, direction)}.json"
        found = self._read(path, g)
        if found is not None:
            self.hits += 1
            return found
        pos, routes = layered_routes(g, direction)
        self._write(path, pos, routes)
        return pos, routes

    def _read(self, path: Path, g: DiGraph):
        try:
            data = json.loads(read_entry(path, MAX_ENTRY_BYTES).decode("utf-8"))
            names = {str(n): n for n in g.nodes}
            pos = {names[k]: (float(x), float(y)) for k, (x, y) in data["pos"].items()}
            routes = {(names[u], names[v]): [(float(x), float(y)) for x, y in pts]
                      for u, v, pts in data["routes"]}
            if len(pos) != g.number_of_nodes():
                raise ValueError("node count")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:   # whatever the file holds
            log.info("layout cache entry %s unreadable (%s): laid out again", path.name, exc)
            return None
        mark_used(path)
        return pos, routes

    def _write(self, path: Path, pos: dict, routes: dict) -> None:
        save_json(path, {"pos": {str(k): v for k, v in pos.items()},
                         "routes": [[str(u), str(v), pts] for (u, v), pts in routes.items()]}, what="layout")
        prune(self.directory, PREFIX, MAX_FILES, MAX_BYTES)


def default_cache() -> LayoutCache:
    """The cache the app uses: on disk from :data:`MIN_NODES` nodes, the last :data:`RECENT` in memory."""
    return LayoutCache(cache_directory(), min_nodes=MIN_NODES, in_memory=True)
