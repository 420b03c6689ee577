"""The one sweep runner: a grid of points, solved in this process or on a Dask cluster, saved point by point.

A ``Point`` is plain data: the settings of its problem (the keyword arguments of ``build_problem``), a mechanism
and its parameters, a seed, and the task that measures it (``solve_point`` by default: solve, then evaluate).
Workers rebuild each problem from its settings (never from pickled matrices) and share the on-disk solve cache
where they share a disk. Every finished point is appended at once as one JSON line to the results file, so a
crash or a stop loses no finished point, and a rerun with the same file skips the points already there.

Backends: in-process (default), or Dask distributed: ``workers=N`` starts a ``LocalCluster`` of N single-threaded
processes for the run; ``scheduler="tcp://HOST:PORT"`` uses an existing cluster (its workers need this package
importable and, to share results, ``MDPVIZ_CACHE_DIR`` on a shared disk).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import importlib
import json
import math
import os
import socket
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import metrics
from .errors import MdpvizError
from .mechanisms import get_mechanism
from .paths import cache_dir
from .problem import build_problem
from .verdict import against_claim, degenerate_text, verdict

DEFAULT_TASK = "mdpviz.sweep:solve_point"
# row fields that measure time or where a row was computed: they differ between runs of the same point
VOLATILE = ("time_s", "wall_s", "build_s", "cached", "worker")
VOLATILE_PREFIXES = ("t.",)
STOP_POLL_S = 0.5  # how often a Dask run asks ``stop`` while no point finishes


@dataclass(frozen=True)
class Point:
    """One point of a grid.

    Attributes:
        problem: keyword arguments of ``build_problem`` (``city``, ``k``, ``n_outputs``, ``cost``, ``region``...).
            Its ``seed`` defaults to the point's ``seed``.
        mechanism: a registered mechanism name (may be empty for a task that solves several).
        params: the mechanism's parameters; ``seed`` defaults to the point's ``seed`` where the mechanism has one.
        seed: the repetition (seeds X, Y and tasks, and the mechanism's own randomness unless fixed above).
        task: ``module:function`` called as ``function(point, use_cache=...)`` on the worker; it returns one row
            (a dict of JSON values) or a list of rows.
        time_limit: seconds per solve, or None.
        tags: labels for the report (method label, mode...); part of the key, never passed to the solver.
    """

    problem: Mapping[str, Any]
    mechanism: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    task: str = DEFAULT_TASK
    time_limit: float | None = None
    tags: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The point as plain JSON-ready values."""
        return {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Point:
        """A point from ``as_dict``'s output (unknown keys ignored)."""
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    @functools.cached_property
    def key(self) -> str:
        """A stable hash of everything that defines the point: the name of its line in the results file."""
        blob = json.dumps(self.as_dict(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:24]


def grid(problems: Iterable[Mapping[str, Any]], mechanisms: Iterable[tuple[str, Mapping[str, Any]]],
         seeds: Iterable[int] = (0,), **common: Any) -> list[Point]:
    """The product problems × (mechanism, params) × seeds as Points (``common``: other Point fields)."""
    mechs = list(mechanisms)
    seeds = list(seeds)
    return [Point(problem=dict(pb), mechanism=name, params=dict(params), seed=s, **common)
            for pb in problems for name, params in mechs for s in seeds]


# ---------------------------------------------------------------- the results file

class ResultsFile:
    """A JSON-lines file of finished points: one record per line, appended and flushed as each point ends.

    A line torn by a crash, or one that is not UTF-8 JSON, is skipped on reading (its point is simply computed
    again); ``skipped`` counts the lines the last ``records`` call skipped.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.skipped = 0

    def records(self) -> dict[str, dict[str, Any]]:
        """Finished records by point key (the last one wins when a point appears twice).

        Raises:
            MdpvizError: the path is a folder, or the file cannot be read (permissions); a missing file is empty.
        """
        out: dict[str, dict[str, Any]] = {}
        self.skipped = 0
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return out
        except OSError as e:  # a folder, no permission...: say which file, never a traceback
            raise MdpvizError(f"The points file `{self.path}` cannot be read ({type(e).__name__}: {e}); give the "
                              "path of a JSON-lines file (it is created when missing).") from e
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                rec = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                self.skipped += 1  # a line cut short by a crash, or bytes that are not UTF-8 JSON
                continue
            if isinstance(rec, dict) and "key" in rec:
                out[rec["key"]] = rec
            else:
                self.skipped += 1
        return out

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record as one line, then flush and fsync, so it survives a crash right after."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, default=_json_default, allow_nan=True) + "\n"
        with self.path.open("a+b") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() > 0:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":  # a torn last line: start on a fresh one
                    line = "\n" + line
            f.write(line.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


# ---------------------------------------------------------------- running one point (on any worker)

@functools.lru_cache(maxsize=1)
def code_stamp() -> str:
    """A hash of the library's numerical source: records made by other code are not reused on resume, so a rerun
    after a change in a mechanism recomputes its points. Left out: this runner, the CLI, the dashboard, the
    benchmarks, the reproduce and regimes packages (reports and reasons); after changing how a point is measured (a
    task here or in reproduce/), rerun with ``fresh=True``."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if not rel.startswith(("ui/", "benchmarks/", "reproduce/", "regimes/")) and rel not in ("sweep.py", "cli.py"):
            h.update(rel.encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


_LOCAL: dict[str, Any] = {}  # problems handed over in process (``local_problem``), newest last
_LOCAL_MAX = 4


def local_problem(problem: Any) -> dict[str, str]:
    """Problem settings that stand for an already built Problem in this process (in-process backend only).

    For callers that hold a Problem without its settings (the dashboard's problems, points from a CSV); a Dask
    worker cannot resolve them and records an error saying so.
    """
    _LOCAL.pop(problem.fingerprint, None)
    _LOCAL[problem.fingerprint] = problem
    while len(_LOCAL) > _LOCAL_MAX:
        _LOCAL.pop(next(iter(_LOCAL)))
    return {"_local": problem.fingerprint}


@functools.lru_cache(maxsize=4)
def _problem(settings_json: str) -> Any:
    return build_problem(**json.loads(settings_json))


def problem_of(point: Point) -> Any:
    """The point's Problem, built from its settings (memoised per process: points often share a problem)."""
    if "_local" in point.problem:
        try:
            return _LOCAL[point.problem["_local"]]
        except KeyError:
            raise MdpvizError("This point's problem was handed over in another process (`local_problem`); run it "
                              "in process, or give the problem's settings instead.") from None
    settings = {"seed": point.seed, **point.problem}
    return _problem(json.dumps(settings, sort_keys=True))


def params_of(point: Point) -> dict[str, Any]:
    """The point's mechanism parameters, with the point's seed where the mechanism takes one and none is set."""
    params = dict(point.params)
    if point.mechanism and "seed" not in params and "seed" in get_mechanism(point.mechanism).defaults():
        params["seed"] = point.seed
    return params


def flatten(data: Mapping[str, Any], prefix: str = "", max_list: int = 64) -> dict[str, Any]:
    """Scalars of a nested dict as ``a.b.c`` keys (short lists of scalars kept; arrays and long lists dropped)."""
    out: dict[str, Any] = {}
    for name, value in data.items():
        key = f"{prefix}{name}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{key}.", max_list))
        elif isinstance(value, (bool, np.bool_)):
            out[key] = bool(value)
        elif isinstance(value, (int, float, str, np.integer, np.floating)) or value is None:
            out[key] = value.item() if isinstance(value, np.generic) else value
        elif isinstance(value, (list, tuple)) and len(value) <= max_list and all(
                isinstance(v, (int, float, str, bool)) or v is None for v in value):
            out[key] = list(value)
    return out


def result_row(problem: Any, result: Any, *, check: bool = True) -> dict[str, Any]:
    """The measurements of one Result: status, words, loss, the no-privacy floor and privacy cost (m), timings
    (s), LP size and the mechanism's scalar diagnostics (``d.`` keys); unless ``check`` is False also the
    violations of ε-mDP on all pairs in its claim's metric, the violations against its own claim (``claim_*``:
    all pairs, or the narrower check the mechanism reports), the Bayes adversary's error (m) and the verdict."""
    row: dict[str, Any] = {"status": result.status, "message": result.message,
                           "degenerate": degenerate_text(result), "claim": result.claim,
                           "eps": result.eps, "k": problem.k, "m": problem.m,
                           "objective_m": result.objective_m, "bound_m": result.bound_m,
                           "time_s": result.timings.get("total_s", sum(result.timings.values()))}
    row.update({f"t.{k}": v for k, v in result.timings.items()})
    row.update({f"lp.{k}": v for k, v in result.lp_size.items()})
    row.update(flatten(result.diagnostics, "d."))
    if result.Z is None:
        row["verdict"] = verdict(result).level
        return row
    if not check:
        loss, floor = metrics.utility_loss_m(problem, result.Z), metrics.floor_m(problem)
        row.update(loss_m=loss, floor_m=floor, privacy_cost_m=loss - floor)
        return row
    ev = metrics.evaluate(problem, result.Z, result.eps, metric=result.check_metric)
    v = ev["violations"]
    assert isinstance(v, dict)
    row.update(loss_m=ev["utility_loss_m"], floor_m=ev["floor_m"], privacy_cost_m=ev["privacy_cost_m"],
               violated_pairs=v["violated_pairs"], checked_pairs=v["checked_pairs"], violation_ratio=v["ratio"],
               worst_factor=v["worst_factor"], check_metric=result.check_metric or problem.metric,
               adversary_error_m=ev["adversary_error_m"])
    if (measured := against_claim(result, ev)) is not None:
        row.update(claim_violated=measured.violated, claim_checked=measured.checked, claim_check=measured.check,
                   claim_kept=measured.kept)
    said = verdict(result, ev)
    row.update(verdict=said.level, verdict_short=said.short)
    return row


def solve_point(point: Point, *, use_cache: bool = True) -> dict[str, Any]:
    """The default task: build the problem, ``solve`` the mechanism (through the disk cache), measure the result.

    ``point.params`` may carry ``"_check": false`` to skip the all-pairs violation check (costly at K ≥ 5,000).
    """
    # local: looked up at each call, so a test can monkeypatch mdpviz.solve.solve (tests/test_sweep.py)
    from .solve import cached_result, solve

    t0 = time.perf_counter()
    problem = problem_of(point)
    build_s = time.perf_counter() - t0
    params = params_of(point)
    check = bool(params.pop("_check", True))
    cached = use_cache and cached_result(problem, point.mechanism, params) is not None
    result = solve(problem, point.mechanism, params, time_limit=point.time_limit, use_cache=use_cache)
    return {**result_row(problem, result, check=check), "build_s": build_s, "cached": cached}


def _load1() -> float | None:
    """The machine's 1-minute load average where the point finished (None where the OS has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def resolve_task(task: str | Callable[..., Any]) -> Callable[..., Any]:
    """The function a ``module:function`` name points to."""
    if callable(task):
        return task
    module, _, name = task.partition(":")
    try:
        # (mypy) import_module returns Any; the task names a function
        return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]
    except (ImportError, AttributeError) as e:
        raise MdpvizError(f"Sweep task `{task}` cannot be imported ({e}); use 'package.module:function'.") from e


def run_point(point_data: Mapping[str, Any], use_cache: bool = True) -> dict[str, Any]:
    """Run one point (given as a dict, so that any worker can take it) and return its record; never raises."""
    point = Point.from_dict(point_data)
    t0 = time.perf_counter()
    record: dict[str, Any] = {"key": point.key, "point": point.as_dict(), "rows": [], "error": "",
                              "code": code_stamp()}
    try:
        out = resolve_task(point.task)(point, use_cache=use_cache)
        record["rows"] = list(out) if isinstance(out, (list, tuple)) else [out]
    except Exception as e:  # noqa: BLE001 - a failed point is recorded with its reason; the sweep goes on
        last = traceback.extract_tb(e.__traceback__)[-1:] if e.__traceback__ else []
        where = f" at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno}" if last else ""
        record["error"] = f"{type(e).__name__}: {e}{where}"
    record.update(wall_s=time.perf_counter() - t0, worker=f"{socket.gethostname()}:{os.getpid()}",
                  finished=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), load=_load1())
    return record


# ---------------------------------------------------------------- the runner

OnRecord = Callable[[dict[str, Any], int, int], None]


@dataclass
class SweepRun:
    """What ``run_sweep`` returns: the records known for the grid (in grid order; fewer than ``total`` when
    stopped), how many were computed now and how many reused from the results file."""

    records: list[dict[str, Any]]
    computed: int
    reused: int
    stopped: bool
    backend: str
    total: int = 0
    skipped: int = 0  # lines of the results file that could not be read (torn, not UTF-8 JSON) and were skipped


def recorded(points: Sequence[Point], results: Path | str, note: str = "--report-only") -> SweepRun:
    """The grid's records as the points file holds them, whatever code made them (none computed): for rebuilding
    reports from finished points after a change in how they are read."""
    store = ResultsFile(results)
    known = store.records()
    unique = list({p.key: p for p in points}.values())
    records = [known[p.key] for p in unique if p.key in known]
    return SweepRun(records, computed=0, reused=len(records), stopped=len(records) < len(unique),
                    backend=f"points file only ({note})", total=len(unique), skipped=store.skipped)


def run_sweep(points: Sequence[Point], results: Path | str | None = None, *, workers: int = 0,
              scheduler: str | None = None, use_cache: bool = True, retry_errors: bool = True,
              same_code: bool = True, fresh: bool = False, stop: Callable[[], bool] | None = None,
              on_record: OnRecord | None = None, redo: Callable[[dict[str, Any]], bool] | None = None) -> SweepRun:
    """Run every point not already in ``results``; append each finished record to it at once.

    Args:
        points: the grid (duplicates are run once).
        results: the JSON-lines file (None: keep records in memory only).
        workers: > 0 starts a Dask ``LocalCluster`` with this many single-threaded worker processes (spawned:
            they re-import ``__main__``, so start it from a plain Python program, not from a Streamlit page).
        scheduler: address of an existing Dask scheduler (``tcp://HOST:PORT``); wins over ``workers``.
        use_cache: workers read and write the on-disk solve cache.
        retry_errors: rerun points whose earlier record is an error (a crash, a bug since fixed).
        same_code: reuse only records made by this version of the library's source (``code_stamp``).
        fresh: reuse nothing from ``results`` (new records are still appended).
        stop: called between points (on Dask also every ``STOP_POLL_S`` while none finishes); True stops the sweep
            (finished points are kept, pending and running ones cancelled).
        on_record: ``on_record(record, done, total)`` after each newly computed point (``done`` counts the
            points reused from ``results`` too).
        redo: records of ``results`` for which ``redo(record)`` is True are computed again (e.g. points that hit
            their time limit on a busy machine); the new record is appended and wins.
    """
    if workers < 0:
        raise MdpvizError(f"`workers` = {workers} is invalid: use 0 (in-process) or a positive number of processes.")
    unique = list({p.key: p for p in points}.values())
    store = ResultsFile(results) if results is not None else None
    known = store.records() if store is not None and not fresh else {}
    if retry_errors:
        known = {k: r for k, r in known.items() if not r.get("error")}
    if redo is not None:
        known = {k: r for k, r in known.items() if not redo(r)}
    if same_code:
        known = {k: r for k, r in known.items() if r.get("code") == code_stamp()}
    records: dict[str, dict[str, Any]] = {p.key: known[p.key] for p in unique if p.key in known}
    total = len(unique)
    todo = [p for p in unique if p.key not in records]
    reused = len(records)

    backend = "in-process"
    if todo and scheduler:
        backend = f"dask scheduler {scheduler}"
    elif todo and workers:
        backend = f"dask LocalCluster ({workers} workers)"

    def finish(rec: dict[str, Any]) -> None:
        rec.setdefault("backend", backend)
        records[rec["key"]] = rec
        if store is not None:
            store.append(rec)
        if on_record:
            on_record(rec, len(records), total)

    stopped = False
    if todo and stop is not None and stop():
        stopped = True  # stopped before the start: no cluster is started for nothing
    elif todo and (scheduler or workers):
        stopped = _run_dask(todo, finish, scheduler, workers, use_cache, stop)
    else:
        for p in todo:
            if stop is not None and stop():
                stopped = True
                break
            finish(run_point(p.as_dict(), use_cache))
    ordered = [records.get(p.key) for p in unique]
    return SweepRun([r for r in ordered if r is not None], len(records) - reused, reused, stopped, backend, total,
                    store.skipped if store is not None else 0)


def _run_dask(todo: list[Point], finish: Callable[[dict[str, Any]], None], scheduler: str | None, workers: int,
              use_cache: bool, stop: Callable[[], bool] | None) -> bool:
    try:
        # local: dask.distributed loads in about 0.5 s; only the Dask backend (--workers, --scheduler) needs it
        import dask
        from dask.distributed import Client, LocalCluster, as_completed  # local: the same, Dask backend only
    except ImportError as e:  # pragma: no cover - dask is in requirements.txt
        raise MdpvizError("The Dask backend needs `dask[distributed]` (pip install -r requirements.txt).") from e
    cluster = None
    if scheduler:
        try:
            client = Client(scheduler, timeout="20s")  # type: ignore[no-untyped-call]  # distributed is unannotated
        except OSError as e:
            raise MdpvizError(f"Cannot reach the Dask scheduler `{scheduler}` ({e}); start one with "
                              "`dask scheduler` and `dask worker ADDRESS`, or use --workers N.") from e
    else:
        # the workers share this machine's disk, hence its solve cache; one thread each (numpy and HiGHS too)
        env = {"MDPVIZ_CACHE_DIR": str(cache_dir()), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1"}
        # on localhost only, with the HTTP server on a free port (dashboard_address=None still binds 8787)
        # non-daemonic workers: a task may run its solve in a child process (the benchmarks isolate each solve)
        with dask.config.set({"distributed.worker.daemon": False}):
            # distributed is unannotated
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1,  # type: ignore[no-untyped-call]
                                   processes=True, host="127.0.0.1",
                                   dashboard_address=":0", env=env, silence_logs=40)
        client = Client(cluster)  # type: ignore[no-untyped-call]  # distributed is unannotated
    stopped = False
    try:
        futures = [client.submit(run_point, p.as_dict(), use_cache, key=f"point-{p.key}-{time.time_ns()}",
                                 pure=False) for p in todo]
        by_key = {f.key: p for f, p in zip(futures, todo)}
        done = as_completed(futures)  # type: ignore[no-untyped-call]  # distributed is unannotated
        while not done.is_empty():  # type: ignore[no-untyped-call]  # distributed is unannotated
            batch = done.next_batch(block=False)  # type: ignore[no-untyped-call]  # distributed is unannotated
            for fut in batch:
                try:
                    rec = fut.result()
                except Exception as e:  # noqa: BLE001 - a worker died (memory, kill): record it, go on
                    p = by_key[fut.key]
                    hint = (" (the scheduler and every worker must import this mdpviz: start them from the same "
                            "environment with the checkout on PYTHONPATH)" if "deserializ" in str(e) else "")
                    rec = {"key": p.key, "point": p.as_dict(), "rows": [], "error": f"{type(e).__name__}: {e}{hint}",
                           "wall_s": math.nan, "worker": "", "finished": dt.datetime.now(dt.UTC).isoformat()}
                finish(rec)
            # asked every STOP_POLL_S as well, so a stop does not wait for a long point to end
            if stop is not None and stop():
                stopped = True
                # distributed is unannotated
                client.cancel([f for f in futures if not f.done()])  # type: ignore[no-untyped-call]
                break
            if not batch:
                time.sleep(STOP_POLL_S)
    finally:
        client.close()  # type: ignore[no-untyped-call]  # distributed is unannotated
        if cluster is not None:
            cluster.close()
    return stopped


def comparable(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A record's rows without the fields that measure time or place (to compare two runs of one point)."""
    return [{k: v for k, v in row.items() if k not in VOLATILE and not k.startswith(VOLATILE_PREFIXES)}
            for row in record.get("rows", [])]
