"""Where qviz keeps what it can compute again (layouts, first views, frozen Keras
models): one directory.

``$QVIZ_CACHE_DIR``, else ``$XDG_CACHE_HOME/qviz/layouts``, else
``~/.cache/qviz/layouts`` (the name is older than the first views kept beside
the layouts). Each kind of entry has its own file-name prefix, and each cache
prunes only its own.

>>> import os
>>> os.environ["QVIZ_CACHE_DIR"] = "/tmp/qviz-cache-example"
>>> str(cache_directory())
'/tmp/qviz-cache-example'
>>> del os.environ["QVIZ_CACHE_DIR"]
"""

from __future__ import annotations

import json
import logging
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["cache_directory", "read_entry", "save_json", "save_bytes", "prune", "mark_used"]

log = logging.getLogger(__name__)


def cache_directory() -> Path:
    """The cache directory (not created here: a cache that cannot write only loses the saving)."""
    if os.environ.get("QVIZ_CACHE_DIR"):
        return Path(os.environ["QVIZ_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "qviz" / "layouts"


def read_entry(path: Path, max_bytes: int) -> bytes:
    """The bytes of the entry ``path``, read only if they can be this user's cache's own:
    the directory and the entry belong to this user and no one else may write them, the
    entry is a regular file (a link is refused, and a FIFO is opened without waiting for a
    writer) of at most ``max_bytes``. Raises ``FileNotFoundError`` for no entry, another
    ``OSError`` or ``ValueError`` for one not to read."""
    _private(os.stat(path.parent), "the cache directory")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    with os.fdopen(os.open(path, flags), "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        _private(st, "the entry")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"over {max_bytes} bytes")
    return data


def _private(st, what: str) -> None:
    if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
        raise ValueError(f"{what} is not this user's alone (owner {st.st_uid}, mode {st.st_mode & 0o777:o})")


def save_json(path: Path, data, *, what: str) -> None:
    """Write ``data`` to ``path`` as JSON, as :func:`save_bytes` writes."""
    save_bytes(path, json.dumps(data, separators=(",", ":")).encode("utf-8"), what=what)


def save_bytes(path: Path, data: bytes, *, what: str) -> None:
    """Write ``data`` to ``path``, whole or not at all (a temporary file in the
    same directory, renamed). The directory is made private to this user if it is
    made here. A directory that cannot be written, or a full disk, only costs the
    saving: logged as "``what`` not cached"."""
    directory = path.parent
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.stem}.", suffix=".tmp")
    except OSError as exc:
        log.info("%s not cached in %s: %s", what, directory, exc)
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as exc:   # a full disk: nothing half-written stays
        log.info("%s not cached in %s: %s", what, directory, exc)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def prune(directory: Path, prefix: str, max_files: int, max_bytes: int | None = None,
          suffix: str = ".json") -> None:
    """Remove the least recently used ``prefix*suffix`` entries of ``directory`` beyond
    ``max_files`` entries or ``max_bytes`` bytes (no other file is touched)."""
    entries = []
    for p in Path(directory).glob(f"{prefix}*{suffix}"):
        try:
            st = p.stat()
        except OSError:
            continue
        entries.append((st.st_mtime, st.st_size, p))
    entries.sort(reverse=True)   # newest first
    total = 0
    for i, (_, size, p) in enumerate(entries):
        total += size
        if i >= max_files or (max_bytes is not None and total > max_bytes):
            try:
                p.unlink()
            except OSError:
                pass


def mark_used(path: Path) -> None:
    """Mark an entry just read as recently used (:func:`prune` keeps it longest)."""
    try:
        os.utime(path)
    except OSError:
        pass
