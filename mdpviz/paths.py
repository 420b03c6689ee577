"""Where mdpviz reads bundled data and keeps its on-disk cache, and how it writes files safely."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
STALE_TMP_S = 3600.0  # a temporary file this old belongs to a write that was killed
LOCK_HEARTBEAT_S = 5.0  # a lock holder refreshes its lock file this often
LOCK_STALE_S = 60.0  # a lock file not refreshed for this long belongs to a process that died


def cache_dir() -> Path:
    """The per-user cache folder: ``$MDPVIZ_CACHE_DIR``, else ``$XDG_CACHE_HOME/mdpviz``, else ``~/.cache/mdpviz``."""
    if env := os.environ.get("MDPVIZ_CACHE_DIR"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mdpviz"


def atomic_write(path: Path, write: Callable[[Path], None], *, make_parents: bool = True) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it over ``path``.

    A crash or an exception leaves either the old file or no file, never a half-written one (a process killed
    mid-write leaves a ``.NAME.*.tmp`` file, which :func:`remove_stale_tmp` deletes later). With
    ``make_parents=False`` a missing folder is an error (``FileNotFoundError``) instead of being created.
    """
    if make_parents:
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


def remove_stale_tmp(folder: Path, older_than_s: float = STALE_TMP_S) -> int:
    """Delete the ``.*.tmp`` files of :func:`atomic_write` older than ``older_than_s`` in ``folder``; returns how many.

    Younger ones may belong to a write in progress in another process and are kept.
    """
    now, removed = time.time(), 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        if not (entry.name.startswith(".") and entry.name.endswith(".tmp")):
            continue
        with contextlib.suppress(OSError):  # gone already, or not ours to delete
            if now - entry.stat(follow_symlinks=False).st_mtime > older_than_s and entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed += 1
    return removed


def _lock_is_stale(path: Path, stale_s: float) -> bool:
    """True when the lock's holder is gone: its process has died (same host), or it stopped refreshing the file."""
    try:
        age = time.time() - path.stat().st_mtime
    except OSError:
        return False  # released meanwhile: not stale, just free
    if age > stale_s:
        return True
    try:
        owner = json.loads(path.read_text())
    except (OSError, ValueError):
        return False  # released, or still being written by a holder that is starting: its age decides later
    if not isinstance(owner, dict):
        return False
    if owner.get("host") == socket.gethostname() and isinstance(owner.get("pid"), int):
        try:
            os.kill(owner["pid"], 0)
        except ProcessLookupError:
            return True
        except OSError:  # e.g. another user's process: alive
            return False
    return False


@contextlib.contextmanager
def file_lock(path: Path, wait_s: float, *, poll_s: float = 0.1, stale_s: float = LOCK_STALE_S,
              on_wait: Callable[[float], None] | None = None) -> Iterator[bool]:
    """Hold the lock file ``path`` while the block runs; yields True once held, False when not held.

    Another holder is waited for up to ``wait_s`` seconds (``on_wait(waited_s)`` is called while waiting). A lock
    whose holder died (process gone, or its file not refreshed for ``stale_s`` s) is broken, so a killed process
    never blocks others for long. The holder refreshes the file every few seconds from a background thread.
    Yields False when the wait ran out or the lock cannot be created (read-only folder, full disk): the caller
    then goes on without it. At worst two processes then do the same work; neither sees a half-written file.
    """
    t0 = time.monotonic()
    fd = None
    while fd is None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _lock_is_stale(path, stale_s):
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            waited = time.monotonic() - t0
            if waited >= wait_s:
                yield False
                return
            if on_wait is not None:
                on_wait(waited)
            time.sleep(min(poll_s, max(wait_s - waited, 0.0)))
        except OSError:
            yield False
            return
    try:
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}).encode())
    finally:
        os.close(fd)
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(min(LOCK_HEARTBEAT_S, stale_s / 4)):
            with contextlib.suppress(OSError):
                os.utime(path)

    beat = threading.Thread(target=heartbeat, name=f"lock {path.name}", daemon=True)
    beat.start()
    try:
        yield True
    finally:
        stop.set()
        beat.join()
        with contextlib.suppress(OSError):
            path.unlink()
