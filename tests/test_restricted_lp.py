"""The restricted LP of the structured engine (``mdpviz.lp.restricted``): its duals' bound, held entries, rounds
solved cold, and the pool of slack pair rows."""

from __future__ import annotations

import numpy as np
import pytest

from mdpviz.lp.cone import cone_violation
from mdpviz.lp.mdp_lp import all_pairs, solve_mdp_lp
from mdpviz.lp.structured import solve_structured
from mdpviz.problem import build_problem


def _small_lp() -> tuple[np.ndarray, np.ndarray, float, float]:
    """A small whole-city Rome instance at ε = 1 km⁻¹: its closed exponents, costs in the engine's unit, that unit,
    and the whole LP's optimum (monolithic HiGHS over all ordered pairs)."""
    from mdpviz.lp.structured import _setup

    problem = build_problem("rome", 40, n_outputs=12, cost="distance", seed=3)
    pi, pj = all_pairs(problem.k)
    _, exact = solve_mdp_lp(problem.p, problem.c, pi, pj, 1.0 * problem.d[pi, pj])
    Es, Wn, scale = _setup(problem.p[:, None] * problem.c, 1.0 * problem.d, closed=True)
    return Es, Wn, scale, float(exact.objective)


def test_the_lp_dual_bound_is_a_lower_bound_for_any_duals() -> None:
    """Weak duality by hand: with the restricted LP's duals the bound equals its value where no entry outside it
    prices negative, and with any other duals (pair duals of either sign: positive ones are clipped) it stays at or
    below the whole LP's optimum, here solved monolithically over all ordered pairs."""
    from mdpviz.lp.restricted import RestrictedLP

    Es, Wn, scale, exact = _small_lp()
    lp = RestrictedLP(Wn, Es)
    k, m = Wn.shape
    xs, ys = np.nonzero(Wn <= np.quantile(Wn, 0.5))
    lp.add_vars(xs, ys)
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, k, 300), rng.integers(0, k, 300)
    lp.add_pairs(i, j, rng.integers(0, m, 300))
    assert lp.solve(None) == "optimal"
    assert lp.dual_bound() * scale <= exact * (1 + 1e-6)
    if np.all(Wn - lp.mu[:, None] >= 0.0):  # nothing outside prices negative: the bound is the LP's value
        assert lp.dual_bound() == pytest.approx(lp.objective, rel=1e-9)
    for _ in range(20):
        lp.mu = lp.mu + rng.normal(0.0, 0.05, k)
        lp.pair_duals = rng.normal(0.0, 0.05, len(lp.pair_duals))
        assert lp.dual_bound() * scale <= exact * (1 + 1e-6)


def test_held_entries_solve_the_same_lp_and_give_valid_duals() -> None:
    """Solving entries as held by a nearer one (their pair row a bound) is a change of variables: the same optimum,
    a solution that meets every pair row of S, and pair duals (the bound rows' read from the reduced costs) whose
    hand-computed bound equals the LP's value and stays below the whole LP's optimum."""
    from mdpviz.lp.restricted import RestrictedLP
    from mdpviz.lp.structured import _cells

    Es, Wn, scale, exact = _small_lp()
    reach, holder = _cells(Wn, Es, None)
    xs, ys = np.nonzero(reach <= 6.0)
    hi = holder[xs, ys]
    rng = np.random.default_rng(1)
    extra = rng.integers(0, len(xs), 150), rng.integers(0, len(xs), 150)
    lps = {}
    for held in (False, True):
        lp = RestrictedLP(Wn, Es)
        lp.add_vars(xs, ys)
        (lp.hold_by if held else lp.add_pairs)(hi, xs, ys)
        same = ys[extra[0]] == ys[extra[1]]
        lp.add_pairs(xs[extra[0]][same], xs[extra[1]][same], ys[extra[0]][same])
        assert lp.solve(None) == "optimal"
        lps[held] = lp
    assert lps[True].n_held > 0.5 * len(xs) and lps[False].n_held == 0
    assert lps[True].objective == pytest.approx(lps[False].objective, rel=1e-7)
    lp = lps[True]
    z = lp.z
    assert np.all(z[lp.row_hi] <= lp.row_coef * z[lp.row_lo] + 1e-7)  # bound rows included
    Z = lp.solution()
    assert np.abs(Z.sum(axis=1) - 1.0).max() < 1e-7
    assert lp.dual_bound() * scale <= exact * (1 + 1e-6)
    # here no entry outside the LP prices negative, so the bound is the LP's value (with the bound rows' duals set to
    # 0 it falls 3.5 % short)
    assert lp.dual_bound() == pytest.approx(lp.objective, rel=1e-9)
    lp.pair_duals[lp.row_at < 0] = 0.0
    assert lp.dual_bound() < lp.objective * (1 - 1e-2)


def test_a_round_that_grows_a_large_lp_by_a_tenth_is_solved_cold_to_the_same_optimum(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Rounds are warm dual simplex unless one adds at least ``COLD_GROWTH`` of the pair rows an LP of at least
    ``COLD_MIN_ROWS`` held as rows; those are interior point, cold. With the size threshold lowered so that a small
    whole-city Rome solve (ε = 1 km⁻¹) meets it, some rounds go cold, and the solve ends at the warm solve's optimum,
    certified and exactly private; at the default threshold that solve stays warm throughout."""
    import mdpviz.lp.structured as structured
    from mdpviz.lp.restricted import RestrictedLP

    problem = build_problem("rome", 120, n_outputs=30, cost="distance", seed=2)
    W = problem.p[:, None] * problem.c
    E = 1.0 * problem.d
    real, cold = RestrictedLP.solve, []

    def spy(self: RestrictedLP, deadline: float | None, cold_ipm: bool = False) -> str:
        cold.append(cold_ipm)
        return real(self, deadline, cold_ipm=cold_ipm)

    monkeypatch.setattr(RestrictedLP, "solve", spy)
    warm = solve_structured(W, E, closed=True, tol=1e-4)
    assert warm.status == "optimal" and not any(cold) and warm.diagnostics["cold_rounds"] == 0
    assert structured.COLD_GROWTH == 0.1 and structured.COLD_MIN_ROWS == 50_000
    cold.clear()
    monkeypatch.setattr(structured, "COLD_MIN_ROWS", 500)
    mixed = solve_structured(W, E, closed=True, tol=1e-4)
    assert mixed.status == "optimal" and any(cold[1:]) and not all(cold[1:])
    assert mixed.diagnostics["cold_rounds"] == sum(cold[1:])  # counted, for the profile and the technical account
    assert mixed.objective == pytest.approx(warm.objective, rel=2e-4)
    assert cone_violation(mixed.Z, E) <= 1e-9 and np.allclose(mixed.Z.sum(axis=1), 1.0)


def test_slack_rows_pooled_and_taken_back_leave_every_round_the_same_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    """From ``POOL_MIN_ROWS`` pair rows held as rows, a round's slack rows leave HiGHS for a pool and come back when a
    solution breaks them: which rows HiGHS holds changes, the LP each round solves does not. With the threshold at 0
    on a small whole-city Rome solve (ε = 1 km⁻¹), rows are pooled and some taken back, every round's LP optimum
    equals the unpooled solve's, and the result is the same certified, exactly private optimum."""
    import mdpviz.lp.structured as structured
    from mdpviz.lp.restricted import RestrictedLP

    problem = build_problem("rome", 120, n_outputs=30, cost="distance", seed=2)
    W = problem.p[:, None] * problem.c
    E = 1.0 * problem.d
    real, values = RestrictedLP.solve, []

    def spy(self: RestrictedLP, deadline: float | None, cold_ipm: bool = False) -> str:
        status = real(self, deadline, cold_ipm=cold_ipm)
        values.append(self.objective)
        return status

    monkeypatch.setattr(RestrictedLP, "solve", spy)
    assert structured.POOL_MIN_ROWS == 20_000  # this solve stays below it: nothing pooled
    plain = solve_structured(W, E, closed=True, tol=1e-4)
    assert plain.status == "optimal" and plain.diagnostics["pooled_rows"] == 0
    unpooled = values.copy()
    values.clear()
    monkeypatch.setattr(structured, "POOL_MIN_ROWS", 0)
    pooled = solve_structured(W, E, closed=True, tol=1e-4)
    assert pooled.status == "optimal"
    assert pooled.diagnostics["pooled_rows"] > 0 and pooled.diagnostics["pool_returns"] > 0
    assert pooled.size["lp_pair_rows_as_rows"] < plain.size["lp_pair_rows_as_rows"]  # HiGHS held fewer at the end
    assert pooled.size["lp_pair_rows"] == plain.size["lp_pair_rows"]  # the same rows S, some of them pooled
    assert len(values) == len(unpooled)
    np.testing.assert_allclose(values, unpooled, rtol=1e-7)
    assert pooled.objective == pytest.approx(plain.objective, rel=1e-6)
    assert pooled.bound <= plain.objective and plain.bound <= pooled.objective
    assert cone_violation(pooled.Z, E) <= 1e-9 and np.allclose(pooled.Z.sum(axis=1), 1.0)


def test_a_solve_takes_back_the_pooled_rows_its_point_breaks() -> None:
    """The pool by hand: after a solve the slack rows leave HiGHS, and once new rows move the solution, every pooled
    row it would break is back in HiGHS before the solve returns; the LP's optimum is the one with every row held."""
    from mdpviz.lp.restricted import POOLED, ROW_COEF_CAP, RestrictedLP

    problem = build_problem("rome", 60, n_outputs=12, cost="distance", seed=4)
    W = problem.p[:, None] * problem.c
    Wn, Es = W / W.max(), 1.0 * problem.d
    n, m = Wn.shape
    rng = np.random.default_rng(0)
    i, j, y = rng.integers(0, n, 12000), rng.integers(0, n, 12000), rng.integers(0, m, 12000)
    short = Es[i, j] <= 8.0  # coefficients up to e^8, as the engine's rows near a cell: an LP HiGHS solves reliably
    i, j, y = i[short][:4000], j[short][:4000], y[short][:4000]
    first, later = slice(0, 2000), slice(2000, 4000)
    lp = RestrictedLP(Wn, Es)
    lp.add_vars(np.repeat(np.arange(n), m), np.tile(np.arange(m), n))
    lp.add_pairs(i[first], j[first], y[first])
    assert lp.solve(None) == "optimal"
    moved = lp.pool_slack_rows()
    assert moved > 0 and lp.n_rows_solved == lp.n_pairs - moved
    lp.add_pairs(i[later], j[later], y[later])
    assert lp.solve(None) == "optimal"
    Z = lp.solution()
    out = np.flatnonzero(lp.row_at == POOLED)  # still pooled: none broken by the solution
    zi, zj = Z[lp.xs[lp.row_hi[out]], lp.ys[lp.row_hi[out]]], Z[lp.xs[lp.row_lo[out]], lp.ys[lp.row_hi[out]]]
    coef = np.minimum(lp.row_coef[out], ROW_COEF_CAP)  # as HiGHS holds the row
    assert len(out) and np.all(zi - coef * zj <= 1e-9 * np.maximum(zi, 1e-300))
    assert lp.returned > 0 and len(out) < moved
    whole = RestrictedLP(Wn, Es)
    whole.add_vars(np.repeat(np.arange(n), m), np.tile(np.arange(m), n))
    whole.add_pairs(i, j, y)
    assert whole.solve(None, cold_ipm=True) == "optimal"
    assert lp.objective == pytest.approx(whole.objective, rel=1e-7)


def test_without_a_basis_no_row_is_pooled() -> None:
    """Pooling keeps the basis warm; where HiGHS has no valid basis (its solver state cleared, as a retry does) there
    is no row status to read, and every row stays in place."""
    from mdpviz.lp.restricted import POOLED, RestrictedLP

    problem = build_problem("rome", 30, n_outputs=8, cost="distance", seed=5)
    W = problem.p[:, None] * problem.c
    Wn, Es = W / W.max(), 1.0 * problem.d
    n, m = Wn.shape
    lp = RestrictedLP(Wn, Es)
    lp.add_vars(np.repeat(np.arange(n), m), np.tile(np.arange(m), n))
    i, j = np.nonzero((Es > 0) & (Es <= 4.0))
    lp.add_pairs(i, j, np.arange(len(i)) % m)
    assert lp.solve(None) == "optimal"
    assert lp.h is not None
    lp.h.clearSolver()
    assert lp.pool_slack_rows() == 0 and not np.any(lp.row_at == POOLED)


def test_each_round_reports_the_lp_work_it_took(monkeypatch: pytest.MonkeyPatch) -> None:
    """``lp_rounds`` says, round by round, what the LP solves cost (so `solve --out` prints where a slow solve spends
    its time): one row per round, whose seconds add up to the profile's LP time, whose rows taken back add up to the
    pool's count, with the simplex's iterations and the pair rows HiGHS holds after the last round as the LP size
    says (a small whole-city Rome solve at ε = 1 km⁻¹, every round pooled)."""
    import mdpviz.lp.structured as structured

    problem = build_problem("rome", 120, n_outputs=30, cost="distance", seed=2)
    W = problem.p[:, None] * problem.c
    monkeypatch.setattr(structured, "POOL_MIN_ROWS", 0)
    out = solve_structured(W, 1.0 * problem.d, closed=True, tol=1e-4)
    assert out.status == "optimal"
    rounds = np.asarray(out.diagnostics["lp_rounds"], dtype=float)
    assert rounds.shape == (out.diagnostics["iterations"], 5)
    assert rounds[:, 0].sum() == pytest.approx(out.timings["lp_s"], rel=1e-9)
    assert rounds[:, 1].sum() > 0 and np.all(rounds[:, 1:4] >= 0)
    assert rounds[:, 3].sum() == out.diagnostics["pool_returns"] > 0
    assert rounds[-1, 4] == out.size["lp_pair_rows_as_rows"]


def test_a_trust_box_keeps_the_lp_near_its_centre_and_its_duals_still_bound_the_whole_lp() -> None:
    """The trust box holds every model column within its radius of the centre's value (an exactly private point, so
    the boxed LP is feasible here), it costs at least the unboxed optimum, its duals' bound stays below the whole LP's
    optimum, and lifting the box gives the unboxed optimum back."""
    from mdpviz.lp.restricted import RestrictedLP
    from mdpviz.lp.structured import _cells, starting_point

    Es, Wn, scale, exact = _small_lp()
    reach, holder = _cells(Wn, Es, None)
    centre, _ = starting_point(Wn, Es, reach)
    xs, ys = np.nonzero(reach <= 6.0)
    lp = RestrictedLP(Wn, Es)
    lp.add_vars(xs, ys)
    lp.hold_by(holder[xs, ys], xs, ys)
    assert lp.solve(None) == "optimal"
    free = lp.objective
    radius = 0.3
    lp.set_trust(centre, radius)
    assert lp.solve(None) == "optimal"
    assert lp.trust_bound > 0  # the box binds here: the free optimum lies outside it
    Z = lp.solution()
    held = lp.hold >= 0
    zc, zs = centre[lp.xs, lp.ys], Z[lp.xs, lp.ys]
    hc = np.where(held, zc[np.maximum(lp.hold, 0)], 0.0)
    hs = np.where(held, zs[np.maximum(lp.hold, 0)], 0.0)
    f = np.exp(-Es[lp.xs[np.maximum(lp.hold, 0)], lp.xs])
    v_centre = np.clip(zc - np.where(held, f * hc, 0.0), 0.0, 1.0)
    v = zs - np.where(held, f * hs, 0.0)
    assert np.all(np.abs(v - v_centre) <= radius + 1e-6)
    assert np.abs(Z.sum(axis=1) - 1.0).max() < 1e-7
    assert lp.objective >= free - 1e-9
    assert lp.dual_bound() * scale <= exact * (1 + 1e-6)
    lp.set_trust(None)
    assert lp.solve(None) == "optimal" and lp.trust_bound == 0
    assert lp.objective == pytest.approx(free, rel=1e-7)
    # a box too narrow to meet the row sums (the centre has mass off these entries) is lifted, not a failure
    lp.set_trust(centre, 0.01)
    assert lp.solve(None) == "optimal" and lp.trust is None and lp.trust_lifted and lp.n_held
    assert lp.objective == pytest.approx(free, rel=1e-7)


def test_the_engine_with_a_trust_box_reaches_the_same_certified_optimum() -> None:
    """With the box on (its default at small ε from TRUST_MIN_ROWS rows) and off, the engine ends optimal at the
    same objective within the tolerance, every point exactly private, and says whether the box was on."""
    from mdpviz.lp.structured import TRUST_RADIUS

    problem = build_problem("rome", 120, n_outputs=30, cost="distance", seed=2)
    W = problem.p[:, None] * problem.c
    out = {t: solve_structured(W, 1.0 * problem.d, closed=True, tol=1e-4, out_rows=problem.y_index, trust=t)
           for t in (True, False)}
    for t, o in out.items():
        assert o.status == "optimal" and o.Z is not None
        assert cone_violation(o.Z, 1.0 * problem.d) <= 1e-9
        assert o.diagnostics["trust_radius"] == (TRUST_RADIUS if t else 0.0)
    assert out[True].objective == pytest.approx(out[False].objective, rel=2e-4)


def test_a_stop_with_the_trust_box_keeps_the_cells_point_it_already_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """The box's centre is the cells' point, made before the rounds; a stop (here the round cap) keeps it, or a
    cheaper repaired point, without making the cells' points a second time, and its point is exactly private."""
    import mdpviz.lp.structured as structured

    def made_again(*args: object) -> None:
        raise AssertionError("the stop made the cells' points again")

    monkeypatch.setattr(structured, "stop_point", made_again)
    problem = build_problem("rome", 120, n_outputs=30, cost="distance", seed=2)
    W = problem.p[:, None] * problem.c
    out = solve_structured(W, 1.0 * problem.d, closed=True, tol=1e-4, out_rows=problem.y_index, trust=True,
                           max_iter=1)
    assert out.status == "iteration limit" and out.Z is not None
    assert cone_violation(out.Z, 1.0 * problem.d) <= 1e-9
    assert out.diagnostics["point_from"].startswith(("the cells' point", "the repaired solution of LP round 1"))
    assert out.timings["repair_s"] > 0
