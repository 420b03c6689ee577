"""The cached solver layer: ``solve(problem, mechanism, params)`` returns a Result, from disk when it can.

Cache entries are data, not code (``mdpviz.result_store``): one ``.npz`` per key under ``<cache>/results/``, keyed
by the problem's fingerprint, the mechanism, its validated parameters and :func:`mdpviz.code_version` (so a code
change never serves an older result), checked against the problem on every load (its fingerprint, stored in the
entry, and the shape of Z), written atomically. A solve of a key that another thread or process is already solving
waits for it (a lock file beside the entry; never longer than the time limit, nor than ``LOCK_WAIT_S``) instead of
repeating the work; a lock that nobody can clear (undeletable, or not mdpviz's) is named in the result's message
and bypassed: the solve runs without the cache. A failed write costs the cache entry, never the result: it becomes a
``CacheWarning`` and a sentence in ``Result.message``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
import warnings
from pathlib import Path
from typing import Any

from . import code_version
from .contract import Mechanism, Result
from .errors import CacheError, CacheWarning, MdpvizError, ParameterError, SolverError
from .mechanisms import get_mechanism
from .paths import atomic_write, cache_dir, file_lock, remove_stale_tmp
from .problem import Problem
from .progress import Progress, Stopped, no_progress
from .result_store import CACHEABLE, StoreError, encode, problems, read

__all__ = ["CACHEABLE", "cache_key", "cached_result", "check_time_limit", "entry_path", "solve"]

LOCK_WAIT_S = 900.0  # the ceiling of any wait for another solve of the same key (the time limit, if shorter, wins)
_TIDIED: set[Path] = set()  # results folders already cleared of stale temporary files by this process


def cache_key(problem: Problem, mechanism: str, params: dict[str, Any]) -> str:
    """Hash of (problem fingerprint, mechanism, validated parameters, code version)."""
    blob = json.dumps([problem.fingerprint, mechanism, params, code_version()], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:40]


def _path(key: str) -> Path:
    return cache_dir() / "results" / f"{key}.npz"


def _load(path: Path, key: str, problem: Problem, mechanism: str, params: dict[str, Any]) -> tuple[Result | None, str]:
    """(the cached Result, "") when a valid entry exists; (None, why) otherwise (why = "" when simply absent).

    An entry that is truncated, corrupt, from other code or wrong for this problem is a miss, never an error.
    """
    try:
        meta, result = read(path)
    except FileNotFoundError:
        return None, ""
    except StoreError as e:
        return None, str(e)
    if meta.get("key") != key or meta.get("code") != code_version():
        return None, "it was written for other inputs or by other code"
    if meta.get("problem") != problem.fingerprint:
        return None, "it was written for another problem (its fingerprint differs)"
    if why := problems(result, problem.k, problem.m, mechanism, params):
        return None, "; ".join(why)
    return result, ""


def check_time_limit(time_limit: Any) -> None:
    """Raise ParameterError unless ``time_limit`` is None or a finite number of seconds > 0."""
    number = isinstance(time_limit, (int, float)) and not isinstance(time_limit, bool)
    if time_limit is not None and not (number and math.isfinite(time_limit) and time_limit > 0):
        raise ParameterError(f"`time_limit` = {time_limit!r} is invalid: it must be a number of seconds > 0 "
                             "(or no limit at all).")


def entry_path(problem: Problem, mechanism: str, params: dict[str, Any] | None = None) -> Path:
    """Where the cache entry of these inputs is, or would be (its modification time tells a page when it changed)."""
    mech = get_mechanism(mechanism)
    return _path(cache_key(problem, mech.name, mech.validate(params)))


def cached_result(problem: Problem, mechanism: str, params: dict[str, Any] | None = None) -> Result | None:
    """The cached Result for these inputs, without solving (None on a miss or an invalid entry)."""
    mech = get_mechanism(mechanism)
    clean = mech.validate(params)
    key = cache_key(problem, mech.name, clean)
    return _load(_path(key), key, problem, mech.name, clean)[0]


def _with_note(result: Result, note: str) -> Result:
    return dataclasses.replace(result, message=f"{result.message} {note}".strip() if result.message else note)


def _run(mech: Mechanism, problem: Problem, params: dict[str, Any], progress: Progress,
         time_limit: float | None) -> Result:
    """Call the mechanism; an unexpected exception becomes a SolverError naming the mechanism (cause kept)."""
    t0 = time.perf_counter()
    try:
        result = mech.solve(problem, params, progress, time_limit)
    except MdpvizError:
        raise
    except Stopped as e:  # the person stopped it (through the progress callback): nothing to keep or cache
        took = time.perf_counter() - t0
        return Result(mech.name, params, None, "stopped", float(params.get("eps", math.nan)),
                      message=f"Stopped at your request after {took:.1f} s, during {e}; nothing was kept.",
                      timings={"total_s": took})
    except Exception as e:  # a bug or a solver crash: a message for the person, the cause chained for the log
        msg = (f"Mechanism `{mech.name}` failed with {type(e).__name__}: {e}. Nothing was cached; this is a bug in "
               "mdpviz or its solver, not in your input.")
        raise SolverError(msg) from e
    if "total_s" in result.timings:
        return result
    return dataclasses.replace(result, timings={**result.timings, "total_s": time.perf_counter() - t0})


def _write_bytes(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def _store(path: Path, key: str, problem: Problem, result: Result) -> Result:
    """Write ``result`` to the cache; on failure, return it with a note (and warn) instead of losing it."""
    folder = path.parent
    try:
        data = encode(result, {"key": key, "code": code_version(), "problem": problem.fingerprint,
                               "mechanism": result.mechanism})
        if folder not in _TIDIED:
            folder.mkdir(parents=True, exist_ok=True)
            remove_stale_tmp(folder)
            for old in folder.glob("*.pkl"):  # entries of older versions (pickle): never read, never kept
                old.unlink(missing_ok=True)
            _TIDIED.add(folder)
        atomic_write(path, lambda p: _write_bytes(p, data))
    except (OSError, StoreError) as e:
        note = (f"Not cached: writing {path} failed ({type(e).__name__}: {e}); this result is complete, "
                "but the same inputs will be solved again next time.")
        warnings.warn(note, CacheWarning, stacklevel=3)
        return _with_note(result, note)
    return result


def solve(problem: Problem, mechanism: str, params: dict[str, Any] | None = None, *,
          progress: Progress | None = None, time_limit: float | None = None, use_cache: bool = True) -> Result:
    """Solve ``mechanism`` on ``problem`` with ``params`` (validated; defaults filled in).

    Parameters
    ----------
    problem
        The instance (:func:`mdpviz.build_problem`).
    mechanism
        A registered mechanism's name (``python -m mdpviz mechanisms`` lists them).
    params
        Its parameters by name (ε in km⁻¹, ...); missing ones take their defaults.
    progress
        ``progress(phase, fraction)`` callback for long work.
    time_limit
        Seconds for the whole call, waiting included; a solver that runs out ends with status ``time limit`` and
        no Z.
    use_cache
        Read and write the on-disk cache (``$MDPVIZ_CACHE_DIR`` or ``~/.cache/mdpviz``). While another thread or
        process solves the same inputs, this call waits for its result (at most ``time_limit``).

    Returns
    -------
    Result
        The mechanism Z (or None), its status, claim, degenerate verdict, message, timings and diagnostics.

    Raises
    ------
    ParameterError
        Unknown mechanism, unknown parameter, a value out of range, or a bad time limit.
    CacheError
        With ``use_cache``, the cache's ``results`` path exists but is not a folder.
    SolverError
        The mechanism failed unexpectedly (the message names it; the cause is chained).
    """
    mech = get_mechanism(mechanism)
    clean = mech.validate(params)
    check_time_limit(time_limit)
    progress = progress or no_progress
    if not use_cache:
        return _run(mech, problem, clean, progress, time_limit)
    key = cache_key(problem, mech.name, clean)
    path = _path(key)
    if path.parent.exists() and not path.parent.is_dir():
        raise CacheError(f"The result cache `{path.parent}` is not a folder, so nothing can be cached there; move "
                         "that file away, set MDPVIZ_CACHE_DIR to another folder, or solve without the cache.")
    hit, bad = _load(path, key, problem, mech.name, clean)
    if hit is not None:
        return hit
    t0 = time.monotonic()
    wait_s = LOCK_WAIT_S if time_limit is None else min(time_limit, LOCK_WAIT_S)

    def waiting(waited: float) -> None:
        progress(f"waiting for another solve of the same inputs ({waited:.0f} s)", None)

    with file_lock(path.with_suffix(".lock"), wait_s, on_wait=waiting) as held:
        waited = time.monotonic() - t0
        if held.problem:  # a lock nobody can clear: solve here, and leave the cache alone
            left = None if time_limit is None else max(time_limit - waited, 0.01)
            result = _run(mech, problem, clean, progress, left)
            return _with_note(result, f"Not cached: {held.problem}; solved without the cache. Delete it to cache "
                                      "these inputs again.")
        hit, _ = _load(path, key, problem, mech.name, clean)  # another solve may have finished meanwhile
        if hit is not None:
            return hit
        left = None if time_limit is None else time_limit - waited
        if left is not None and left <= 0 and not held:
            msg = (f"Time limit: waited {waited:.1f} s (the whole time limit) for another solve of the same inputs, "
                   "which had not finished; nothing was solved here. Try again when it is done.")
            return Result(mech.name, clean, None, "time limit", float(clean.get("eps", math.nan)), message=msg,
                          timings={"wait_s": waited, "total_s": waited})
        result = _run(mech, problem, clean, progress, None if left is None else max(left, 0.01))
        if waited > 0.05:
            result = dataclasses.replace(result, timings={**result.timings, "wait_s": waited})
        if result.status in CACHEABLE:
            result = _store(path, key, problem, result)
        if bad:
            result = _with_note(result, f"(A cache entry for these inputs was unusable and was recomputed: {bad}.)")
        return result
