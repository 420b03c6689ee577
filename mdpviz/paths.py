"""Where mdpviz reads bundled data and keeps its on-disk cache, and how it writes files safely."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
STALE_TMP_S = 3600.0  # a temporary file this old belongs to a write that was killed
LOCK_HEARTBEAT_S = 5.0  # a lock holder refreshes its lock file this often
LOCK_STALE_S = 60.0  # a lock file not refreshed for this long belongs to a process that died
BREAK_GUARD = ".break.lock"  # per folder: who breaks a stale lock there holds this OS lock (filelock) meanwhile


def cache_dir() -> Path:
    """The per-user cache folder: ``$MDPVIZ_CACHE_DIR``, else ``$XDG_CACHE_HOME/mdpviz``, else ``~/.cache/mdpviz``."""
    if env := os.environ.get("MDPVIZ_CACHE_DIR"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mdpviz"


def read_only(path: Path) -> bool:
    """True when this user may not write ``path``: by ``os.access``, or by its mode bits (no write bit for anyone),
    which root's ``os.access`` ignores but which say the file or folder is meant to be left alone."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not os.access(path, os.W_OK) or not mode & 0o222


def atomic_write(path: Path, write: Callable[[Path], object], *, make_parents: bool = True) -> None:
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


@dataclass(frozen=True)
class LockState:
    """What :func:`file_lock` got: the lock (``held``), or why not (``problem``; empty when another holder merely
    kept it for the whole wait). Truthy exactly when held."""

    held: bool
    problem: str = ""

    def __bool__(self) -> bool:
        return self.held


def _lock_owner(path: Path, stale_s: float) -> str:
    """Who holds the lock file ``path``: ``live``, ``stale`` (its holder died or stopped refreshing it),
    ``foreign`` (not a lock file of mdpviz: a folder, a link, or a file that is not its JSON), or ``free``."""
    try:
        info = path.lstat()
    except OSError:
        return "free"  # released meanwhile
    if not stat.S_ISREG(info.st_mode):
        return "foreign"
    if time.time() - info.st_mtime > stale_s:
        return "stale"
    try:
        text = path.read_text()
        owner = json.loads(text) if text else None
    except FileNotFoundError:
        return "free"  # released meanwhile
    except OSError:
        return "live"  # e.g. another user's private lock: wait for it (its age decides when it is stale)
    except ValueError:
        return "foreign"
    if owner is None:
        return "live"  # created by a holder that has not written its name yet: its age decides later
    if not isinstance(owner, dict) or not {"pid", "host"} <= owner.keys():
        return "foreign"
    if owner["host"] == socket.gethostname() and isinstance(owner["pid"], int):
        try:
            os.kill(owner["pid"], 0)
        except ProcessLookupError:
            return "stale"
        except OSError:  # e.g. another user's process: alive
            return "live"
    return "live"


def _break_stale(path: Path, stale_s: float, wait_s: float) -> None:
    """Delete the lock file ``path``, judged stale, unless it changed hands since: the judgement is made again and
    the file deleted under an OS lock on the folder's :data:`BREAK_GUARD` (``filelock``), so two processes that
    both judged the same dead holder's lock stale cannot delete each other's fresh one. Waits at most ``wait_s``
    for that OS lock (then leaves the file to the caller's next look). A guard that cannot be opened (another
    account's, in a shared folder; a read-only folder) is done without: the file is judged again and deleted
    unguarded, as before the guard. ``OSError`` when the lock file cannot be deleted."""
    guard: contextlib.AbstractContextManager[object]
    try:
        guard = FileLock(path.parent / BREAK_GUARD).acquire(timeout=wait_s)  # releases when its block ends
    except Timeout:  # another waiter is breaking it: the caller looks again (Timeout is an OSError: caught first)
        return
    except OSError:
        guard = contextlib.nullcontext()
    with guard:
        if _lock_owner(path, stale_s) == "stale":
            path.unlink(missing_ok=True)


@contextlib.contextmanager
def file_lock(path: Path, wait_s: float, *, poll_s: float = 0.1, stale_s: float = LOCK_STALE_S,
              on_wait: Callable[[float], None] | None = None) -> Iterator[LockState]:
    """Hold the lock file ``path`` while the block runs; yields a :class:`LockState` (truthy once held).

    Another holder is waited for up to ``wait_s`` seconds (``on_wait(waited_s)`` is called while waiting); no wait
    lasts longer, whatever happens meanwhile. A lock whose holder died (process gone, or its file not refreshed
    for ``stale_s`` s) is broken, so a killed process never blocks others for long; the break is judged again under
    an OS lock (:func:`_break_stale`), so two processes never both take a dead holder's place. The holder refreshes
    the file every few seconds from a background thread. The lock is not held, and the caller goes on without it,
    when the wait ran out (``problem`` empty), or at once, with ``problem`` saying why, when the lock cannot be used: a
    stale lock that cannot be deleted (read-only or sticky folder), a ``path`` that is not a lock file of mdpviz
    (a folder, a link, another program's file), or a lock that cannot be created (no such folder, full disk).
    """
    t0 = time.monotonic()
    fd = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # e.g. a file where the folder belongs
        yield LockState(False, f"the folder of the lock `{path}` cannot be made ({type(e).__name__}: {e})")
        return
    while fd is None:
        waited = time.monotonic() - t0
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            owner = _lock_owner(path, stale_s)
            if owner == "foreign":
                yield LockState(False, f"`{path}` is not a lock file of mdpviz (a folder, a link or another "
                                       "program's file)")
                return
            if owner == "stale":
                try:
                    _break_stale(path, stale_s, max(wait_s - waited, 0.0))
                except OSError as e:
                    yield LockState(False, f"the stale lock `{path}` cannot be deleted ({type(e).__name__}: {e})")
                    return
            if owner in ("stale", "free") and waited < wait_s:
                continue
            if waited >= wait_s:
                yield LockState(False)
                return
            if on_wait is not None:
                on_wait(waited)
            time.sleep(min(poll_s, max(wait_s - waited, 0.0)))
        except OSError as e:
            yield LockState(False, f"the lock `{path}` cannot be created ({type(e).__name__}: {e})")
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
        yield LockState(True)
    finally:
        stop.set()
        beat.join()
        with contextlib.suppress(OSError):
            path.unlink()
