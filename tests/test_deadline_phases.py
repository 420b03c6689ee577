"""The deadline inside the phases of a solve (issue 29, item 2), with no clock involved: deadlines already passed,
or a solver step replaced by one that ends the way a deadline would end it.

``test_solve_deadlines.py`` runs every mechanism against a CPU clock; these pin the pieces it cannot reach in a
short run: the exact repair and the LP hand-over stop at a passed deadline, blocked loops give the same values as
one pass, and a phase cut by the deadline after the main LP is reported as a time limit (no Z) in words.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from mdpviz.deadline import OutOfTime, check_deadline, deadline_of, time_left
from mdpviz.lp.cone import repair_into_cone
from mdpviz.lp.highs import LPOutcome, solve_lp
from mdpviz.problem import Problem, build_problem
from mdpviz.solve import solve

PAST = -1.0  # seconds: a deadline this far before now has passed


@pytest.fixture(scope="module")
def rome() -> Problem:
    return build_problem("rome", 120, cost="distance", seed=0)


def _passed() -> float:
    return time.perf_counter() + PAST


def test_the_helpers() -> None:
    assert deadline_of(None) is None and time_left(None) is None
    check_deadline(None, "anything")  # no deadline: never raises
    check_deadline(time.perf_counter() + 60, "anything")
    with pytest.raises(OutOfTime, match="integrating") as e:
        check_deadline(_passed(), "integrating")
    assert e.value.what == "integrating" and str(e.value) == "integrating"
    left = time_left(deadline_of(10.0))
    assert left is not None and 9.0 < left <= 10.0


def test_the_exact_repair_stops_at_a_passed_deadline_and_is_unchanged_without_one(rome: Problem) -> None:
    from mdpviz.mechanisms.em import em_matrix

    Z = em_matrix(rome, 5.0) * np.exp(np.random.default_rng(0).normal(0.0, 0.3, (rome.k, rome.m)))
    W = rome.p[:, None] * rome.c
    with pytest.raises(OutOfTime, match="ε-mDP cone"):
        repair_into_cone(Z, 5.0 * rome.d, W, deadline=_passed())
    a, fa = repair_into_cone(Z, 5.0 * rome.d, W)
    b, fb = repair_into_cone(Z, 5.0 * rome.d, W, deadline=time.perf_counter() + 600)
    np.testing.assert_array_equal(a, b)
    assert fa == fb


def test_the_exact_repair_gives_up_once_its_pace_shows_it_would_end_past_the_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake clock that moves one second per reading: the deadline is 30 s away, the repair of 100 columns would
    take about 200 s at that pace, so it raises within the first few blocks, never at the deadline itself; with
    the deadline 1,000 s away it finishes with the same result as without one."""
    from mdpviz.lp import cone

    rng = np.random.default_rng(0)
    n, b = 40, 100
    pts = rng.uniform(0.0, 5.0, (n, 2))
    Es = np.linalg.norm(pts[:, None] - pts[None], axis=2)
    logv = rng.normal(0.0, 3.0, (n, b))
    clock = iter(np.arange(0.0, 1e6, 1.0))
    monkeypatch.setattr(cone.time, "perf_counter", lambda: float(next(clock)))
    with pytest.raises(OutOfTime, match="would end after the deadline") as e:
        cone.lipschitz_repair(logv, Es, chunk=1, deadline=30.0)
    assert "column 1 of" not in e.value.what  # judged on its pace, after some work
    assert int(e.value.what.split("column ")[1].split(" ")[0]) <= 10  # long before the deadline passed
    far = float(next(clock)) + 1_000.0
    u, arg = cone.lipschitz_repair(logv, Es, chunk=1, deadline=far)
    u0, arg0 = cone.lipschitz_repair(logv, Es, chunk=1)
    np.testing.assert_array_equal(u, u0)
    np.testing.assert_array_equal(arg, arg0)


def test_an_lp_is_not_started_when_its_hand_over_used_the_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import highspy

    runs: list[int] = []

    class Spy(highspy.Highs):  # type: ignore[misc]
        def run(self) -> Any:
            runs.append(1)
            return super().run()

    monkeypatch.setattr(highspy, "Highs", Spy)
    A = sp.csr_matrix(np.array([[1.0, 1.0]]))
    out = solve_lp(np.array([1.0, 2.0]), A, np.array([1.0]), np.array([1.0]), time_limit=1e-9)
    assert out.status == "time limit" and out.x is None and "before it ran" in out.message and not runs
    ok = solve_lp(np.array([1.0, 2.0]), A, np.array([1.0]), np.array([1.0]), time_limit=60.0)
    assert ok.status == "optimal" and runs


def test_blocked_trajectories_and_slots_equal_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The generator and ``to_slots`` work in blocks (a deadline check between them): any block size gives the
    same corpus, value for value."""
    from mdpviz.cities import load_city
    from mdpviz.cmdp import corpus

    pb = build_problem("rome", 12, cost="distance", seed=0, all_outputs=True)
    net = load_city("rome")
    g = corpus.station_graph(net, pb.x_node)

    def run() -> tuple[Any, Any]:
        tr = corpus.generate_trajectories(net, pb.x_node, n_vehicles=40, n_steps=12, graph=g, seed=4)
        return tr, corpus.to_slots(tr, g.cell, 3)

    one_tr, one_sl = run()
    monkeypatch.setattr(corpus, "FIX_BLOCK", 97)  # many blocks of a few vehicles (and of 97 fixes)
    tr, sl = run()
    for a, b in ((one_tr, tr), (one_sl, sl)):
        for k, v in vars(a).items():
            if isinstance(v, np.ndarray):
                np.testing.assert_array_equal(v, vars(b)[k], err_msg=k)
    with pytest.raises(OutOfTime, match="routing the generated trips"):
        corpus.generate_trajectories(net, pb.x_node, n_vehicles=40, n_steps=12, graph=g, seed=4, deadline=_passed())
    with pytest.raises(OutOfTime, match="station slots"):
        corpus.to_slots(tr, g.cell, 3, deadline=_passed())


def test_lp_em_says_time_limit_not_numerical_trouble(monkeypatch: pytest.MonkeyPatch, rome: Problem) -> None:
    import mdpviz.mechanisms.lp_em as lp_em

    def stopped(*a: Any, **k: Any) -> LPOutcome:
        return LPOutcome(None, "time limit", None, 0.4, {"variables": 1}, message="Time limit reached")

    monkeypatch.setattr(lp_em, "solve_lp", stopped)
    r = solve(rome, "lp-em", {"eps": 5.0, "candidates": 10}, time_limit=60.0, use_cache=False)
    assert r.status == "time limit" and r.Z is None
    assert r.message.startswith("Time limit") and "numerical trouble" not in r.message


def test_lp_em_stops_in_its_repair_with_no_z(monkeypatch: pytest.MonkeyPatch, rome: Problem) -> None:
    import mdpviz.mechanisms.lp_em as lp_em

    real = lp_em.repair_into_cone
    monkeypatch.setattr(lp_em, "repair_into_cone", lambda *a, **k: real(*a, **{**k, "deadline": _passed()}))
    r = solve(rome, "lp-em", {"eps": 5.0, "candidates": 10}, time_limit=60.0, use_cache=False)
    assert r.status == "time limit" and r.Z is None and "repairing column 1" in r.message


def test_laplace_stops_in_its_quadrature_with_no_z(monkeypatch: pytest.MonkeyPatch, rome: Problem) -> None:
    import mdpviz.mechanisms.laplace as laplace

    real = laplace.laplace_log_matrix
    calls: list[int] = []

    def second_pass_late(*a: Any, **k: Any) -> Any:  # the error estimate (second pass) meets a passed deadline
        calls.append(1)
        return real(*a, **({**k, "deadline": _passed()} if len(calls) == 2 else k))

    monkeypatch.setattr(laplace, "laplace_log_matrix", second_pass_late)
    r = solve(rome, "laplace", {"eps": 5.0, "n_sub": 2}, time_limit=60.0, use_cache=False)
    assert r.status == "time limit" and r.Z is None
    assert "integration error at half resolution (0 of 120 secrets done)" in r.message


def test_aipo_keeps_a_complete_search_aside_when_the_bound_meets_the_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget search finished but the universal lower bound's LP stopped at the deadline: not a result to cache
    for good, so a time limit with the search's best split in the diagnostics."""
    import mdpviz.aipo.mechanism as aipo

    pb = build_problem("rome", 60, cost="distance", seed=0)
    monkeypatch.setattr(aipo, "universal_lower_bound", lambda *a, **k: (None, "simplex: time limit"))
    r = solve(pb, "aipo", {"eps": 5.0, "cells": 4, "budget_steps": 3, "lb_grid": 4}, time_limit=600.0,
              use_cache=False)
    assert r.status == "time limit" and r.Z is None and "lower bound" in r.message
    Zf = r.diagnostics["feasible_Z"]
    assert Zf.shape == (pb.k, pb.m) and np.allclose(Zf.sum(axis=1), 1.0)


def test_panda_relaxed_bound_cut_by_the_deadline_is_a_time_limit(monkeypatch: pytest.MonkeyPatch,
                                                                  rome: Problem) -> None:
    """The relaxed AnPO (a lower bound) stopped by the solve's deadline, not by its own relaxed_time_limit: the
    result says time limit rather than keeping, for good, a result whose bound did not finish."""
    import mdpviz.panda.mechanism as panda

    real = panda.solve_anpo

    def relaxed_stops(*a: Any, **k: Any) -> Any:
        out = real(*a, **k)
        if k.get("phase") == "relaxed AnPO":
            out.status, out.bound_m = "time limit", None
        return out

    monkeypatch.setattr(panda, "solve_anpo", relaxed_stops)
    r = solve(rome, "panda-e", {"eps": 5.0, "relaxed_time_limit": 3600.0}, time_limit=600.0, use_cache=False)
    assert r.status == "time limit" and r.Z is None and "relaxed AnPO" in r.message
    assert r.diagnostics["feasible_Z"].shape == (rome.k, rome.m)  # the solved AnPO, set aside
    r = solve(rome, "panda-e", {"eps": 5.0, "relaxed_time_limit": 1.0}, time_limit=600.0, use_cache=False)
    assert r.status == "optimal" and r.Z is not None  # its own limit, as documented: no bound, still a result


def test_lp_bd_set_up_stops_before_the_first_iteration() -> None:
    from mdpviz.lp.benders import partition, solve_benders
    from mdpviz.lp.neighbours import neighbour_pairs

    pb = build_problem("rome", 60, cost="distance", seed=0)
    pi, pj = neighbour_pairs(pb.d, 2.0)
    labels = partition("kmeans-dv", 5, pb.d, pb.xy_km, pi, pj, seed=0)
    out = solve_benders(pb.p[:, None] * pb.c, pi, pj, 5.0 * pb.d[pi, pj], labels, time_limit=1e-9)
    assert out.status == "time limit" and out.Z is None and "before the first iteration" in out.message
