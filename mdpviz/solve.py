"""The cached solver layer: ``solve(problem, mechanism, params)`` returns a Result, from disk when it can."""

from __future__ import annotations

import hashlib
import json
import pickle
import time
from pathlib import Path
from typing import Any

from . import __version__
from .mechanisms import get_mechanism
from .mechanisms.base import Progress, Result
from .paths import atomic_write, cache_dir
from .problem import Problem
from .progress import no_progress

# statuses worth keeping: a time limit or an interruption may end differently next time
CACHEABLE = ("optimal", "closed form", "sampled", "gap reached", "iteration limit")


def cache_key(problem: Problem, mechanism: str, params: dict[str, Any]) -> str:
    """Hash of (problem fingerprint, mechanism, validated parameters, library version)."""
    blob = json.dumps([problem.fingerprint, mechanism, params, __version__], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:40]


def _path(key: str) -> Path:
    return cache_dir() / "results" / f"{key}.pkl"


def _load(path: Path) -> Result | None:
    """A cached Result, or None when absent or unreadable (a corrupt entry is a miss, never an error)."""
    try:
        with path.open("rb") as f:
            result = pickle.load(f)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - truncated, corrupt or from an incompatible version: recompute
        return None
    return result if isinstance(result, Result) else None


def cached_result(problem: Problem, mechanism: str, params: dict[str, Any] | None = None) -> Result | None:
    """The cached Result for these inputs, without solving (None on a miss)."""
    mech = get_mechanism(mechanism)
    return _load(_path(cache_key(problem, mech.name, mech.validate(params))))


def solve(problem: Problem, mechanism: str, params: dict[str, Any] | None = None, *,
          progress: Progress | None = None, time_limit: float | None = None, use_cache: bool = True) -> Result:
    """Solve ``mechanism`` on ``problem`` with ``params`` (validated; defaults filled in).

    Args:
        progress: ``progress(phase, fraction)`` callback for long work.
        time_limit: seconds for the solver; an LP that runs out ends with status ``time limit`` and no Z.
        use_cache: read and write the on-disk cache (``$MDPVIZ_CACHE_DIR`` or ``~/.cache/mdpviz``).

    Raises:
        ParameterError: unknown mechanism, unknown parameter, or a value out of range.
    """
    mech = get_mechanism(mechanism)
    clean = mech.validate(params)
    path = _path(cache_key(problem, mech.name, clean))
    if use_cache and (hit := _load(path)) is not None:
        return hit
    t0 = time.perf_counter()
    result = mech.solve(problem, clean, progress or no_progress, time_limit)
    result.timings.setdefault("total_s", time.perf_counter() - t0)
    if use_cache and result.status in CACHEABLE:
        atomic_write(path, lambda p: p.write_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)))
    return result
