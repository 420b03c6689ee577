"""The exact LP (`lp`, structured engine) at the papers' scale: Rome samples 40+ km wide, long distances, solver
trouble.

Each case checks the claim itself (0 violated ordered pairs with `metrics.violations`, rows are distributions) and
the certificate (status ``optimal`` only with bound ≤ objective ≤ bound·(1 + gap_tol)).
"""

from __future__ import annotations

import dataclasses

import highspy
import numpy as np
import pandas as pd
import pytest

import mdpviz.lp.pricing as pricing
import mdpviz.lp.restricted as restricted
import mdpviz.lp.structured as structured
from mdpviz.dista.cells import cell_choice
from mdpviz.lp.mdp_lp import all_pairs, solve_mdp_lp
from mdpviz.lp.optimal import optimal_rows
from mdpviz.lp.structured import solve_structured
from mdpviz.mechanisms import get_mechanism
from mdpviz.metrics import violations
from mdpviz.problem import build_problem, problem_from_points
from mdpviz.solve import solve

QUIET = lambda phase, frac: None  # noqa: E731


def _assert_exact(problem, res, eps, gap_tol=1e-4):
    assert res.status == "optimal", res.message
    assert not res.degenerate
    assert np.allclose(res.Z.sum(axis=1), 1.0, atol=1e-12) and res.Z.min() >= 0.0
    assert violations(problem, res.Z, eps).violated_pairs == 0
    assert res.bound_m <= res.objective_m <= res.bound_m * (1 + gap_tol)
    assert "certified gap" in res.message


def test_kotka_reproducer():
    """Kotka, K = 60, ε = 10 km⁻¹ ended in 'A pricing LP failed (Unknown)' after 0.4 s."""
    problem = build_problem("kotka", 60, seed=0)
    _assert_exact(problem, solve(problem, "lp", {"eps": 10.0}, use_cache=False), 10.0)


@pytest.mark.parametrize(("eps", "k", "m"), [(1.0, 150, 25), (5.0, 200, 100), (15.0, 200, 100)])
def test_rome_sample_is_exact(eps, k, m):
    """K nodes over the whole of Rome (distances above 40 km: at ε = 15, e^{−ε·d} underflows float64)."""
    problem = build_problem("rome", k, n_outputs=m, cost="distance", seed=1)
    assert problem.d.max() > 40.0
    _assert_exact(problem, solve(problem, "lp", {"eps": eps}, use_cache=False), eps)


@pytest.mark.parametrize("eps", [1.0, 5.0, 15.0])
def test_rome_matches_monolithic_highs(eps):
    """Asked for a gap of 1e-9, the structured engine meets monolithic HiGHS (all pairs, interior point)."""
    problem = build_problem("rome", 50, n_outputs=8, cost="distance", seed=1)
    res = solve(problem, "lp", {"eps": eps, "gap_tol": 1e-9}, use_cache=False)
    _assert_exact(problem, res, eps, gap_tol=1e-9)
    pi, pj = all_pairs(problem.k)
    _, mono = solve_mdp_lp(problem.p, problem.c, pi, pj, eps * problem.d[pi, pj], method="ipm")
    assert mono.status == "optimal"
    # monolithic caps its coefficients at 1e9 (a tightening) and meets its rows to 1e-7: at or a little above
    assert abs(res.objective_m - mono.objective) <= 1e-6 * mono.objective
    assert res.bound_m <= mono.objective * (1 + 1e-9)


@pytest.mark.parametrize("eps", [5.0, 15.0])
def test_uniform_points_in_a_45km_box(eps):
    """200 uniform points in a 45 km box: 'optimal' with 70 / 39,800 pairs violated before the exact floor (an
    entry of 1.3e-12 against 1.3e-64); at ε = 15 the former engine left zeros under positive entries."""
    rng = np.random.default_rng(0)
    pts = pd.DataFrame({"lat": 41.7 + rng.uniform(0, 45 / 111.2, 200),
                        "lon": 12.3 + rng.uniform(0, 45 / (111.2 * np.cos(np.radians(41.9))), 200)})
    problem = problem_from_points(pts)
    assert problem.k == 200 and problem.d.max() > 45.0
    _assert_exact(problem, solve(problem, "lp", {"eps": eps}, use_cache=False), eps)


class _Sick:
    """A HiGHS instance whose every solve ends in the given status (everything else is the real instance)."""

    def __init__(self, h, status):
        self._h, self._status = h, status

    def __getattr__(self, name):
        return getattr(self._h, name)

    def getModelStatus(self):  # noqa: N802 (HiGHS's name)
        return self._status

    def modelStatusToString(self, status):  # noqa: N802
        return self._h.modelStatusToString(status)


def _sick(status):
    real = pricing.new_highs
    return lambda: _Sick(real(), status)


@pytest.mark.parametrize("status", [highspy.HighsModelStatus.kUnknown, highspy.HighsModelStatus.kUnbounded])
def test_failing_pricing_lps_are_bounded_honestly(monkeypatch, status):
    """Every pricing LP in trouble: retried, then bounded by the greedy flow; the result says how many failed.
    The LP's own duals are switched off here (they certify this instance unpriced), so pricing has to certify."""
    monkeypatch.setattr(pricing, "new_highs", _sick(status))
    monkeypatch.setattr(restricted.RestrictedLP, "dual_bound", lambda self: -np.inf)
    problem = build_problem("rome", 120, n_outputs=30, cost="distance", seed=2)
    res = solve(problem, "lp", {"eps": 5.0}, use_cache=False)
    assert "pricing LPs failed" in res.message
    if res.status == "optimal":  # the greedy flows alone may certify the gap
        _assert_exact(problem, res, 5.0)
    else:
        assert res.Z is None and res.status == "stalled"
        assert violations(problem, res.diagnostics["feasible_Z"], 5.0).violated_pairs == 0


@pytest.mark.parametrize("status", [highspy.HighsModelStatus.kUnknown, highspy.HighsModelStatus.kUnbounded])
def test_failing_restricted_lp_is_reported(monkeypatch, status):
    """The main LP in trouble whatever the strategy: an honest status and message, no mechanism, no exception."""
    real = restricted.new_highs
    monkeypatch.setattr(restricted, "new_highs", lambda: _Sick(real(), status))
    problem = build_problem("rome", 80, n_outputs=20, cost="distance", seed=2)
    res = solve(problem, "lp", {"eps": 5.0}, use_cache=False)
    assert res.Z is None and res.status.startswith("solver error")
    assert "failed in round 1" in res.message and res.objective_m is None


def test_infeasible_restricted_lp_gets_a_whole_column(monkeypatch):
    """An LP reported infeasible is made feasible by one whole column (every row reporting one output)."""
    calls = {"n": 0}
    real_solve = restricted.RestrictedLP.solve

    def solve_once_infeasible(self, deadline, cold_ipm=False):
        calls["n"] += 1
        return "Infeasible" if calls["n"] == 1 else real_solve(self, deadline, cold_ipm)

    monkeypatch.setattr(restricted.RestrictedLP, "solve", solve_once_infeasible)
    problem = build_problem("rome", 80, n_outputs=20, cost="distance", seed=2)
    W = problem.p[:, None] * problem.c
    out = solve_structured(W, 5.0 * problem.d, closed=True, tol=1e-6, out_rows=problem.y_index)
    assert out.status == "optimal" and out.gap <= 1e-6
    assert out.size["lp_variables"] >= problem.k


def test_a_held_form_that_highs_fails_on_is_rebuilt_with_every_pair_row_a_row(monkeypatch):
    """Should HiGHS fail on the LP with held entries, the LP is rebuilt unheld and solved again: the same optimum,
    exactly private, and the message and diagnostics say so."""
    real_run = restricted.RestrictedLP._run

    def fail_while_held(self, attempts, deadline):
        return "Unknown" if self.n_held else real_run(self, attempts, deadline)

    problem = build_problem("rome", 80, n_outputs=20, cost="distance", seed=2)
    W = problem.p[:, None] * problem.c
    held = solve_structured(W, 2.0 * problem.d, closed=True, tol=1e-6, out_rows=problem.y_index, engine="rows")
    monkeypatch.setattr(restricted.RestrictedLP, "_run", fail_while_held)
    out = solve_structured(W, 2.0 * problem.d, closed=True, tol=1e-6, out_rows=problem.y_index, engine="rows")
    assert held.diagnostics["held_entries"] > 0 and not held.diagnostics["lp_rebuilt"]
    assert out.status == "optimal" and out.diagnostics["lp_rebuilt"] and out.diagnostics["held_entries"] == 0
    assert "rebuilt with every pair row a row" in out.message
    assert out.objective == pytest.approx(held.objective, rel=2e-6)
    assert violations(problem, out.Z, 2.0).violated_pairs == 0


def test_time_limit_returns_no_mechanism():
    """A deadline already passed (no wall clock: a 0.01 s limit let a quiet machine solve round 1, and the stop's
    balanced point was then within the tolerance, which is an optimum, rightly)."""
    problem = build_problem("rome", 300, cost="distance", seed=3)
    lp = get_mechanism("lp")
    res = lp.solve(problem, lp.validate({"eps": 5.0}), QUIET, 1e-9)
    assert res.status == "time limit" and res.Z is None and "time limit" in res.message
    if res.diagnostics.get("feasible_Z") is not None:
        assert violations(problem, res.diagnostics["feasible_Z"], 5.0).violated_pairs == 0


def test_free_pairs_and_closure():
    """A general exponent matrix with +inf (pairs left free), as the neighbours-within-η constraint set: the solver
    works on its closure and matches monolithic HiGHS over the finite pairs."""
    problem = build_problem("rome", 40, n_outputs=6, cost="distance", seed=4)
    E = np.where(problem.d <= 15.0, 5.0 * problem.d, np.inf)
    W = problem.p[:, None] * problem.c
    out = solve_structured(W, E, tol=1e-9)
    assert out.status == "optimal"
    pi, pj = np.nonzero(np.isfinite(E) & ~np.eye(len(E), dtype=bool))
    _, mono = solve_mdp_lp(problem.p, problem.c, pi, pj, E[pi, pj], method="ipm")
    assert abs(out.objective - mono.objective) <= 1e-6 * mono.objective
    finite = np.where(np.isfinite(E), E, np.inf)
    from mdpviz.metrics import cone_breaches
    assert len(cone_breaches(out.Z, finite).i) == 0


def test_collapse_is_called_degenerate():
    """At a tiny ε the optimal mechanism is one distribution for every secret: a genuine optimum, but degenerate."""
    problem = build_problem("kotka", 30, n_outputs=5, seed=5)
    res = solve(problem, "lp", {"eps": 0.01}, use_cache=False)
    assert res.status == "optimal" and res.degenerate.startswith("Collapsed")
    assert "Collapsed" in res.message
    assert not solve(problem, "lp", {"eps": 20.0}, use_cache=False).degenerate


def test_dense_instance_falls_back_to_rows_when_conic_pricing_fails(monkeypatch):
    """The conic engine goes first on a dense instance; a pricing LP in trouble there hands over to the row engine."""
    import mdpviz.lp.conic as conic

    problem = build_problem("helsinki", 30, n_outputs=10, seed=0)
    monkeypatch.setattr(conic._Pricer, "price", lambda self, y, g, t: (np.zeros(self.n), 0.0, "Unknown"))
    res = solve(problem, "lp", {"eps": 5.0}, use_cache=False)
    _assert_exact(problem, res, 5.0)
    assert res.diagnostics["engine"] == "rows"
    assert "conic engine failed (11 pricing LPs failed (Unknown).)" in res.message


def test_one_failed_conic_pricing_lp_costs_a_column_not_the_engine(monkeypatch):
    """A pricing LP that fails (after its retry) gives no column that round and the box bound; the conic engine goes
    on to a certified optimum, with the failure counted."""
    import mdpviz.lp.conic as conic

    problem = build_problem("helsinki", 30, n_outputs=10, seed=0)
    price = conic._Pricer.price
    calls = []

    def fail_once(self, y, g, t):
        calls.append(y)
        return (np.zeros(self.n), 0.0, "Unknown") if len(calls) == 1 else price(self, y, g, t)

    monkeypatch.setattr(conic._Pricer, "price", fail_once)
    res = solve(problem, "lp", {"eps": 5.0}, use_cache=False)
    _assert_exact(problem, res, 5.0)
    assert res.status == "optimal" and res.diagnostics["engine"] == "conic"
    assert res.diagnostics["pricing_failures"] == 1 and "1 pricing LP failed twice" in res.message
    reference = solve(problem, "lp", {"eps": 5.0, "engine": "rows"}, use_cache=False)
    assert abs(res.objective_m - reference.objective_m) <= 2e-4 * reference.objective_m


def _skewed_cell():
    """A DISTA-LP private cell's LP (Rome, K = 150, cell 3 of 8 at ε_c = 1.5): the prior times each secret's chance
    of the cell, its weights over more than seven decades."""
    pb = build_problem("rome", 150, n_outputs=100, cost="travel", n_tasks=1, seed=0)
    centres, pick = cell_choice(pb, 8, 1.5, 0)
    cand = np.sort(np.argsort(pb.d_xy[centres[3]], kind="stable")[:20])
    w = pb.p * pick[:, 3]
    w = np.maximum(w, 1e-9 * w.max())
    cell = dataclasses.replace(pb, p=w / w.sum(), y_index=pb.y_index[cand], c=pb.c[:, cand], timings={})
    assert cell.p.min() < 1e-7 * cell.p.max()
    return cell


def _solve_cell(cell):
    return optimal_rows(cell.d, cell.p, cell.c, {"eps": 3.5}, QUIET, None, {}, out_rows=cell.y_index)


def test_weights_over_many_decades_tighten_highs_instead_of_stalling(monkeypatch):
    """That cell's LP stalled with nothing left to add: HiGHS's dual infeasibilities of 1e-7 over its entries cost
    the priced bound more than the gap. The engine now re-solves at a tighter tolerance before it stalls, and
    certifies."""
    cell = _skewed_cell()
    monkeypatch.setattr(structured, "TIGHTEST", 1.0)  # never tighten: the trap
    _, loose = _solve_cell(cell)
    assert loose.status == "stalled" and "nothing left to add" in loose.message
    monkeypatch.undo()
    Z, f = _solve_cell(cell)
    assert f.status == "optimal" and "tolerance tightened" in f.message
    assert f.diagnostics["lp_tolerance"] < 1e-7
    assert f.bound <= f.objective <= f.bound * (1 + 1e-4) and f.objective <= loose.diagnostics["feasible_objective_m"]
    assert np.allclose(Z.sum(axis=1), 1.0, atol=1e-12) and violations(cell, Z, 3.5).violated_pairs == 0


def test_a_tightened_re_solve_that_fails_stalls_with_its_point_and_bound(monkeypatch):
    """Should HiGHS fail on the tighter re-solve, the run stops as it did before the re-solve (stalled, with its
    private point and certified bound), saying why; not as a solver error."""
    tighten, solve_lp = restricted.RestrictedLP.tighten, restricted.RestrictedLP.solve

    def tighter(lp, tolerance):
        lp.broken = True
        tighten(lp, tolerance)

    monkeypatch.setattr(restricted.RestrictedLP, "tighten", tighter)
    monkeypatch.setattr(restricted.RestrictedLP, "solve",
                        lambda lp, *a, **k: "Unknown" if getattr(lp, "broken", False) else solve_lp(lp, *a, **k))
    cell = _skewed_cell()
    Z, f = _solve_cell(cell)
    assert Z is None and f.status == "stalled" and "re-solve at HiGHS's feasibility tolerance 1e-09 failed" in f.message
    assert f.bound <= f.diagnostics["feasible_objective_m"]
    assert violations(cell, f.diagnostics["feasible_Z"], 3.5).violated_pairs == 0
