"""No wait without an end (issue 29, items 1 and 5): locks that nobody can clear, a cache path that is not a folder,
and cache entries that belong to another sample of the same size.

A test that could hang if the fix regressed runs its solve in a thread and gives it a generous ceiling; the
ceiling only turns a hang into a failure, no assertion rests on how long anything took.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import mdpviz.solve as solve_mod
from mdpviz.cli import main
from mdpviz.errors import CacheError
from mdpviz.mechanisms import Result, get_mechanism
from mdpviz.paths import file_lock
from mdpviz.problem import Problem, build_problem
from mdpviz.solve import cache_key, cached_result, solve

HANG_GUARD_S = 120.0  # far beyond any honest run here; reaching it means a wait without an end


@pytest.fixture(scope="module")
def small() -> Problem:
    return build_problem("kotka", 20, n_outputs=10, seed=1)


def results_dir() -> Path:
    return Path(os.environ["MDPVIZ_CACHE_DIR"]) / "results"


def entry(problem: Problem, mech: str) -> Path:
    key = cache_key(problem, mech, get_mechanism(mech).validate({}))
    return results_dir() / f"{key}.npz"


def solve_guarded(*args: Any, **kwargs: Any) -> Result:
    """``solve`` in a thread; fails the test instead of hanging it."""
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(_catch(solve, *args, **kwargs)), daemon=True)
    worker.start()
    worker.join(HANG_GUARD_S)
    assert not worker.is_alive(), f"solve still waiting after {HANG_GUARD_S:g} s: a wait without an end"
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]  # type: ignore[no-any-return]


def _catch(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001 - handed to the test thread
        return e


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


@pytest.mark.parametrize("age_s", [5 * 60.0, 0.0], ids=["stale", "fresh"])
def test_a_folder_where_the_lock_belongs_is_reported_and_bypassed(small: Problem, age_s: float) -> None:
    """The tester's case: ``mkdir KEY.lock; touch -d '-5 min' KEY.lock`` made `solve --time-limit 5` spin forever."""
    lock = entry(small, "em").with_suffix(".lock")
    lock.mkdir(parents=True)
    _age(lock, age_s)
    r = solve_guarded(small, "em", time_limit=5)
    assert r.status == "closed form" and r.Z is not None
    assert "Not cached" in r.message and str(lock) in r.message and "not a lock file of mdpviz" in r.message
    assert not entry(small, "em").exists(), "a bypassed lock must leave the cache alone"
    assert lock.is_dir(), "someone else's folder is reported, never deleted"


def test_a_stale_lock_that_cannot_be_deleted_is_reported_and_bypassed(small: Problem,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only or sticky results folder (as root every unlink succeeds, so the refusal is simulated)."""
    lock = entry(small, "em").with_suffix(".lock")
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"pid": 1, "host": "elsewhere", "since": 0}))
    _age(lock, 3600)
    real_unlink = Path.unlink

    def refuse(self: Path, missing_ok: bool = False) -> None:
        if self == lock:
            raise PermissionError(13, "Permission denied", str(self))
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", refuse)
    for limit in (5.0, None):  # with a limit and without: neither may spin
        r = solve_guarded(small, "em", time_limit=limit)
        assert r.status == "closed form" and "cannot be deleted" in r.message and "PermissionError" in r.message


def test_a_foreign_lock_file_is_reported_and_bypassed(small: Problem) -> None:
    lock = entry(small, "em").with_suffix(".lock")
    lock.parent.mkdir(parents=True)
    lock.write_text("not the JSON of an mdpviz lock")
    r = solve_guarded(small, "em", time_limit=5)
    assert r.status == "closed form" and "not a lock file of mdpviz" in r.message
    assert lock.read_text() == "not the JSON of an mdpviz lock"


def test_no_wait_outlasts_the_ceiling_even_without_a_time_limit(small: Problem,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A live holder keeps the lock; a solve with no time limit waits at most LOCK_WAIT_S, then solves anyway."""
    monkeypatch.setattr(solve_mod, "LOCK_WAIT_S", 0.3)
    lock = entry(small, "em").with_suffix(".lock")
    with file_lock(lock, 1.0) as held:
        assert held
        r = solve_guarded(small, "em")
    assert r.status == "closed form" and r.Z is not None


def test_a_live_lock_is_waited_for_and_a_dead_one_broken(small: Problem) -> None:
    """The lock states the bypass must not swallow: a live holder is waited for (then given up honestly)."""
    lock = entry(small, "em").with_suffix(".lock")
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}))
    with file_lock(lock, 0.0) as state:
        assert not state and state.problem == ""  # busy, not broken
    r = solve_guarded(small, "em", time_limit=0.2)
    assert r.status == "time limit" and "another solve" in r.message and lock.exists()
    lock.unlink()


def test_a_results_path_that_is_a_file_is_an_error_naming_it(small: Problem, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    results = results_dir()
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text("a file where the cache's folder belongs")
    with pytest.raises(CacheError, match=f"`{results}` is not a folder"):
        solve_guarded(small, "em", time_limit=5)
    assert solve(small, "em", use_cache=False).status == "closed form"  # without the cache it still solves
    code = main(["solve", "--city", "kotka", "--k", "20", "--outputs", "10", "--seed", "1", "--mechanism", "em",
                 "--time-limit", "5"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and str(results) in err and err.count("\n") == 1
    assert results.read_text() == "a file where the cache's folder belongs"


# ---- item 5: an entry of another sample of the same size is a miss


def test_the_cache_key_depends_on_the_sample_not_only_its_size(small: Problem) -> None:
    other = build_problem("kotka", 20, n_outputs=10, seed=2)
    assert (other.k, other.m) == (small.k, small.m) and other.fingerprint != small.fingerprint
    assert cache_key(small, "em", {"eps": 5.0}) != cache_key(other, "em", {"eps": 5.0})


def test_a_stored_entry_is_checked_against_the_problem_fingerprint(small: Problem,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Even with a key that forgot the problem, an entry of another sample of the same size is never served."""
    other = build_problem("kotka", 20, n_outputs=10, seed=2)
    real_key = solve_mod.cache_key

    def key_without_problem(problem: Problem, mechanism: str, params: dict[str, Any]) -> str:
        return real_key(small, mechanism, params)  # the same key for every problem

    monkeypatch.setattr(solve_mod, "cache_key", key_without_problem)
    first = solve(small, "em")
    assert cached_result(small, "em") is not None
    assert cached_result(other, "em") is None
    again = solve(other, "em")
    assert "written for another problem" in again.message
    assert not (again.Z == first.Z).all()


def test_an_entry_copied_under_another_samples_key_is_a_miss(small: Problem) -> None:
    other = build_problem("kotka", 20, n_outputs=10, seed=2)
    solve(small, "em")
    shutil.copy(entry(small, "em"), entry(other, "em"))
    assert cached_result(other, "em") is None


def test_an_unreadable_lock_is_waited_for_without_spinning(small: Problem, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another user's private lock (unreadable) is a live holder: waited for with sleeps between looks, not
    re-read in a tight loop."""
    lock = entry(small, "em").with_suffix(".lock")
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"pid": 1, "host": "elsewhere", "since": time.time()}))
    real_read = Path.read_text
    reads = []

    def private(self: Path, *args: Any, **kwargs: Any) -> str:
        if self == lock:
            reads.append(1)
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", private)
    with file_lock(lock, 0.5, poll_s=0.1) as state:
        assert not state and state.problem == ""  # busy: the wait ran out, nothing was broken
    assert len(reads) <= 10  # about one look per poll (0.5 s / 0.1 s), not thousands


def test_a_solve_stopped_through_its_progress_callback_keeps_nothing(small: Problem) -> None:
    """The dashboard's Stop button: the progress callback raises Stopped at the solver's next step; the result is
    'stopped', with no Z, nothing cached, and the lock released."""
    from mdpviz.progress import Stopped
    from mdpviz.verdict import verdict

    def stop_now(phase: str, fraction: float | None) -> None:
        raise Stopped(phase)

    r = solve_guarded(small, "lp", {"eps": 3.0}, progress=stop_now)
    assert r.status == "stopped" and r.Z is None and "Stopped at your request" in r.message
    assert cached_result(small, "lp", {"eps": 3.0}) is None
    assert not entry(small, "lp").with_suffix(".lock").exists()
    assert "you stopped it" in verdict(r, label="LP").plain
    assert solve(small, "lp", {"eps": 3.0}).status == "optimal"  # and the next solve runs normally


def test_the_stop_button_asks_the_running_solve_to_stop() -> None:
    import streamlit as st

    from mdpviz.ui import solving

    cancel = threading.Event()
    ss: dict[str, Any] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(st, "session_state", ss)
        solving.stop(cancel, "Optimal LP")
    assert cancel.is_set() and ss["_stopped"] == "Optimal LP"


def test_two_waiters_breaking_one_stale_lock_do_not_both_hold_it(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    """B judges a dead holder's lock stale; before B deletes it, A deletes it and takes the lock. B must not then
    delete A's live lock and take it too (the break is re-checked under a lock of its own)."""
    import subprocess
    import sys

    import mdpviz.paths as paths

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = tmp_path / "key.lock"
    lock.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "since": time.time()}))
    real_owner = paths._lock_owner
    b_judged, a_holds, b_done = threading.Event(), threading.Event(), threading.Event()
    first = [True]

    def owner(path: Path, stale_s: float) -> str:
        seen = real_owner(path, stale_s)
        if threading.current_thread().name == "B" and first[0]:
            first[0] = False
            b_judged.set()
            a_holds.wait(HANG_GUARD_S)  # B acts on what it saw only once A holds the lock
        return seen

    monkeypatch.setattr(paths, "_lock_owner", owner)
    held: dict[str, bool] = {}

    def contend(name: str) -> None:
        with file_lock(lock, 1.0, poll_s=0.05) as state:
            held[name] = bool(state)
            if name == "A":
                a_holds.set()
                b_done.wait(HANG_GUARD_S)  # A keeps the lock until B has tried
            else:
                b_done.set()

    b = threading.Thread(target=contend, args=("B",), name="B", daemon=True)
    b.start()
    assert b_judged.wait(HANG_GUARD_S)
    a = threading.Thread(target=contend, args=("A",), name="A", daemon=True)
    a.start()
    a.join(HANG_GUARD_S)
    b.join(HANG_GUARD_S)
    assert held == {"A": True, "B": False}, f"both held the lock at once: {held}"


def test_a_guard_that_cannot_be_opened_still_lets_a_stale_lock_be_broken(tmp_path: Path) -> None:
    """Another account's guard file in a shared folder (here: a folder where the guard file belongs, which no
    process can open as a file) must not turn a dead holder's lock into one nobody can clear."""
    import subprocess
    import sys

    from mdpviz.paths import BREAK_GUARD

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = tmp_path / "key.lock"
    lock.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "since": time.time()}))
    (tmp_path / BREAK_GUARD).mkdir()
    with file_lock(lock, 1.0) as state:
        assert state and state.problem == ""
