"""The solve cache: data not code, keyed by the code's own version, checked on load, written atomically, shared.

Faults (corrupt entries, full disks, failing solvers) are in ``test_faults.py``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mdpviz
import mdpviz.solve as solve_mod
from mdpviz import contract as reg
from mdpviz.aipo.lattice import AnchorInterpolant, Lattice
from mdpviz.mechanisms import Result, get_mechanism
from mdpviz.paths import file_lock, remove_stale_tmp
from mdpviz.problem import Problem, build_problem
from mdpviz.result_store import StoreError, decode, encode, read
from mdpviz.solve import cache_key, cached_result, solve


@pytest.fixture(scope="module")
def small() -> Problem:
    return build_problem("kotka", 20, n_outputs=10, seed=1)


def entry(problem: Problem, mech: str, params: dict[str, Any] | None = None) -> Path:
    key = cache_key(problem, mech, get_mechanism(mech).validate(params))
    return Path(os.environ["MDPVIZ_CACHE_DIR"]) / "results" / f"{key}.npz"


def same(a: Any, b: Any) -> bool:
    """Deep equality that also compares types (a tuple must come back a tuple, an np.int64 an np.int64)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and np.isnan(a):
        return bool(np.isnan(b))
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return bool(a == b)


def test_every_kind_of_value_round_trips_as_data() -> None:
    lattice = Lattice(41.9, 12.5, -3.0, -2.0, 0.5, 4, 3)
    rows = AnchorInterpolant(lattice, np.log(np.full((12, 5), 0.2)))
    diag = {"tuple": (1, "a", None), "nested": {"x": [np.arange(3), {"y": np.float32(2.5)}]},
            "__dunder": 1, 7: "int key", "inf": float("inf"), "nan": float("nan"), "flag": np.bool_(True),
            "i64": np.int64(3), "f64": np.float64(0.1), "strs": np.array(["a", "bc"]), "empty": np.zeros((0, 2)),
            "bools": np.array([True, False]), "list_of_tuples": [(1, 2), (3, 4)], "big": 2**70}
    r = Result("aipo", {"eps": 5.0, "p": 1, "name": "x"}, np.full((3, 5), 0.2), "optimal", 5.0,
               timings={"a_s": 0.1}, lp_size={"variables": 10}, objective_m=1.5, bound_m=None,
               diagnostics=diag, message="m", degenerate="", check_metric="l1-planar", rows=rows)
    blob = encode(r, {"key": "k", "code": "c"})
    path = Path(os.environ["MDPVIZ_CACHE_DIR"]) / "x.npz"
    path.parent.mkdir(parents=True)
    path.write_bytes(blob)
    meta, back = read(path)
    assert meta["key"] == "k" and meta["code"] == "c"
    assert same(back, r)
    xy = np.array([[0.1, 0.2], [5.0, 9.0]])
    np.testing.assert_array_equal(back.rows.rows_xy(xy), r.rows.rows_xy(xy))


def test_real_results_round_trip_through_the_cache(small: Problem) -> None:
    for name in ("em-br", "aipo-e", "lp"):
        first = solve(small, name)
        hit = cached_result(small, name)
        assert hit is not None and hit is not first
        assert same(hit, first), name
    pts = (small.x_lat[:3] + 1e-4, small.x_lon[:3])  # AIPO's rows for points of the plane outside X
    np.testing.assert_array_equal(cached_result(small, "aipo-e").rows(*pts),
                                  solve(small, "aipo-e", use_cache=False).rows(*pts))


class Unsupported:
    pass


def test_what_is_not_data_is_refused_on_write_and_never_built_on_read(tmp_path: Path) -> None:
    r = Result("em", {}, np.eye(2), "closed form", 1.0, diagnostics={"obj": Unsupported()})
    with pytest.raises(StoreError, match="Unsupported cannot be stored"):
        encode(r, {})
    with pytest.raises(StoreError, match="dtype object"):
        encode(dataclasses.replace(r, diagnostics={"a": np.array([None, 1])}), {})
    # an entry naming a class outside the allowlist: refused, nothing imported or called
    good = json.loads(json.dumps({"__object__": "Popen", "fields": {"args": ["touch", str(tmp_path / "pwned")]}}))
    with pytest.raises(StoreError, match="not allowed"):
        decode(good, {})
    with pytest.raises(StoreError, match="not allowed"):
        decode({"__object__": "subprocess.Popen", "fields": {}}, {})
    assert not (tmp_path / "pwned").exists()


def test_a_pickle_in_the_cache_is_never_loaded(small: Problem, tmp_path: Path) -> None:
    """A pickle whose loading would run code, planted under the entry's name: a miss, and nothing runs."""
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, (f"touch {marker}",))

    import pickle

    path = entry(small, "em")
    path.parent.mkdir(parents=True)
    path.write_bytes(pickle.dumps(Evil()))
    assert cached_result(small, "em") is None
    r = solve(small, "em")
    assert r.status == "closed form" and "unusable" in r.message
    assert not marker.exists()
    # a valid .npz holding a pickled object array: numpy refuses it (allow_pickle=False)
    buf = tmp_path / "obj.npz"
    np.savez(buf, __meta__=np.array([Evil()], dtype=object))
    path.write_bytes(buf.read_bytes())
    assert cached_result(small, "em") is None and not marker.exists()


def test_key_follows_the_code_version(small: Problem, monkeypatch: pytest.MonkeyPatch) -> None:
    solve(small, "em")
    assert cached_result(small, "em") is not None
    monkeypatch.setattr(solve_mod, "code_version", lambda: "0.1.0+other-code")
    assert cached_result(small, "em") is None  # an entry of other code is never served


def test_code_version_hashes_every_library_source_but_the_dashboard(tmp_path: Path) -> None:
    src = Path(mdpviz.__file__).parent
    copy = tmp_path / "mdpviz"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("__pycache__"))
    base = mdpviz.source_hash(copy)
    assert base == mdpviz.source_hash(src)
    (copy / "ui" / "maps.py").write_text((copy / "ui" / "maps.py").read_text() + "\n# view only\n")
    assert mdpviz.source_hash(copy) == base
    em = copy / "mechanisms" / "em.py"
    em.write_text(em.read_text().replace("factor = 0.5", "factor = 0.25"))
    assert mdpviz.source_hash(copy) != base
    assert mdpviz.code_version().startswith(mdpviz.__version__ + "+")


def test_stale_temporary_files_are_removed_and_fresh_ones_kept(small: Problem) -> None:
    folder = entry(small, "em").parent
    folder.mkdir(parents=True)
    old, fresh = folder / ".abc.npz.x1.tmp", folder / ".def.npz.x2.tmp"
    legacy = folder / "0123.pkl"
    for f in (old, fresh, legacy):
        f.write_bytes(b"partial")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    solve_mod._TIDIED.discard(folder)
    solve(small, "em")
    assert not old.exists() and fresh.exists() and not legacy.exists()
    assert remove_stale_tmp(folder, older_than_s=-1) == 1 and not fresh.exists()


def _counting(monkeypatch: pytest.MonkeyPatch, name: str, delay: float) -> list[int]:
    """Replace a mechanism's solve by a slow wrapper that counts its calls."""
    mech = get_mechanism(name)
    calls: list[int] = []

    def slow(problem: Problem, params: dict[str, Any], progress: Any, time_limit: float | None) -> Result:
        calls.append(1)
        time.sleep(delay)
        return mech.solve(problem, params, progress, time_limit)

    monkeypatch.setitem(reg._REGISTRY, name, dataclasses.replace(mech, solve=slow))
    return calls


def test_concurrent_solves_of_one_key_wait_for_the_first(small: Problem, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch, "em", 0.6)
    results: list[Result] = []
    threads = [threading.Thread(target=lambda: results.append(solve(small, "em"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(results) == 4
    assert all(np.array_equal(r.Z, results[0].Z) for r in results)
    assert not entry(small, "em").with_suffix(".lock").exists()


def test_a_lock_left_by_a_killed_process_does_not_block(small: Problem) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = entry(small, "em").with_suffix(".lock")
    lock.parent.mkdir(parents=True)
    import socket

    lock.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "since": time.time()}))
    r = solve(small, "em", time_limit=30)
    assert r.status == "closed form" and not lock.exists()
    # a lock from another machine that stopped refreshing (older than LOCK_STALE_S) is broken too
    lock.write_text(json.dumps({"pid": 1, "host": "elsewhere", "since": 0}))
    os.utime(lock, (time.time() - 3600, time.time() - 3600))
    assert solve(small, "em-br", time_limit=30).status == "closed form"


def test_waiting_never_outlasts_the_time_limit(small: Problem) -> None:
    """While a live holder keeps the lock, a solve with a time limit gives up honestly at its limit."""
    lock = entry(small, "em").with_suffix(".lock")
    with file_lock(lock, 1.0) as held:
        assert held
        r = solve(small, "em", time_limit=0.3)
    assert r.status == "time limit" and r.Z is None and "another solve of the same inputs" in r.message
    assert solve(small, "em", time_limit=5).status == "closed form"  # released: solved normally


def test_time_limit_is_validated(small: Problem) -> None:
    from mdpviz.errors import ParameterError

    for bad in (0, -1.0, float("nan"), float("inf"), "5", True):
        with pytest.raises(ParameterError, match="`time_limit`"):
            solve(small, "em", time_limit=bad)  # type: ignore[arg-type]
