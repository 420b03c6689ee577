"""Where mdpviz reads bundled data and keeps its on-disk cache, and how it writes files safely."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "data"


def cache_dir() -> Path:
    """The per-user cache folder: ``$MDPVIZ_CACHE_DIR``, else ``$XDG_CACHE_HOME/mdpviz``, else ``~/.cache/mdpviz``."""
    if env := os.environ.get("MDPVIZ_CACHE_DIR"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mdpviz"


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it over ``path``.

    A crash or an exception leaves either the old file or no file, never a half-written one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes files private; a data or cache file is for everyone
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
