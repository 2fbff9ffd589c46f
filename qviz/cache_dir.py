"""Where qviz keeps what it can compute again (layouts, first views): one directory.

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

import os
from pathlib import Path

__all__ = ["cache_directory"]


def cache_directory() -> Path:
    """The cache directory (not created here: a cache that cannot write only loses the saving)."""
    if os.environ.get("QVIZ_CACHE_DIR"):
        return Path(os.environ["QVIZ_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "qviz" / "layouts"
