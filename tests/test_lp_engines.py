"""LP engines: the structured exact solver, Benders (lp-bd) and ConstOPT (lp-em) against monolithic HiGHS."""

from __future__ import annotations

import numpy as np
import pytest

from mdpviz.errors import ParameterError
from mdpviz.lp.cone import cone_violation, exponent_closure, lipschitz_repair, make_row_stochastic
from mdpviz.lp.mdp_lp import all_pairs, solve_mdp_lp
from mdpviz.lp.structured import solve_structured
from mdpviz.mechanisms import get_mechanism
from mdpviz.metrics import violations
from mdpviz.problem import build_problem
from mdpviz.progress import no_progress
from mdpviz.solve import solve

QUIET = lambda phase, frac: None  # noqa: E731

CASES = [  # (city, K, |Y|, metric, ε km⁻¹, seed)
    ("helsinki", 30, 10, "haversine", 5.0, 0),
    ("kotka", 25, 12, "road", 2.0, 1),
    ("west-oakland", 20, 8, "haversine", 10.0, 2),
    ("helsinki", 24, 24, "road", 1.0, 3),
]


def _mono(problem, eps):
    pi, pj = all_pairs(problem.k)
    Z, out = solve_mdp_lp(problem.p, problem.c, pi, pj, eps * problem.d[pi, pj], method="ipm")
    assert out.status == "optimal"
    return out.objective


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[3]}-eps{c[4]:g}")
def case(request):
    city, k, m, metric, eps, seed = request.param
    problem = build_problem(city, k, n_outputs=m, metric=metric, seed=seed)
    return problem, eps, _mono(problem, eps)


def test_structured_matches_monolithic(case):
    problem, eps, ref = case
    res = solve(problem, "lp", {"eps": eps, "gap_tol": 1e-8}, use_cache=False)
    assert res.status == "optimal", res.message
    assert abs(res.objective_m - ref) <= 1e-6 * ref
    assert res.bound_m is not None and res.bound_m <= ref * (1 + 1e-9) and res.bound_m >= ref * (1 - 1e-6)
    v = violations(problem, res.Z, eps)
    assert v.violated_pairs == 0
    assert np.allclose(res.Z.sum(axis=1), 1.0, atol=1e-12) and res.Z.min() >= 0.0
    assert res.lp_size["variables"] == problem.k * problem.m
    assert res.diagnostics["engine"] == "conic" and "pricing_s" in res.timings  # these small cities are dense


def test_row_engine_on_a_dense_instance(case):
    """The row-and-column engine (the default on sparse instances) is exact on these dense ones too."""
    problem, eps, ref = case
    W = problem.p[:, None] * problem.c
    out = solve_structured(W, eps * problem.d, closed=True, tol=1e-8, out_rows=problem.y_index, engine="rows")
    assert out.status == "optimal" and out.diagnostics["engine"] == "rows", out.message
    assert abs(out.objective - ref) <= 1e-6 * ref and out.bound <= ref * (1 + 1e-9)
    assert violations(problem, out.Z, eps).violated_pairs == 0


def test_monolithic_engine_is_repaired_and_private(case):
    problem, eps, ref = case
    res = solve(problem, "lp", {"eps": eps, "solver": "monolithic", "pairs": "all"}, use_cache=False)
    assert res.status == "optimal"
    assert abs(res.objective_m - ref) <= 1e-6 * ref
    assert violations(problem, res.Z, eps).violated_pairs == 0


def test_benders_matches_monolithic(case):
    problem, eps, ref = case
    res = solve(problem, "lp-bd", {"eps": eps, "gap_m": 1e-9, "floor": 0.0, "subsets": 3, "max_iter": 500,
                                   "scope": "all-pairs"}, use_cache=False)
    assert res.status == "optimal", res.message
    assert abs(res.objective_m - ref) <= 1e-6 * ref
    assert res.bound_m <= ref * (1 + 1e-7)
    assert violations(problem, res.Z, eps).violated_pairs == 0
    hist = res.diagnostics["history"]
    lows = [h["lower"] for h in hist]
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(lows, lows[1:]))  # LB never decreases
    assert sum(res.diagnostics["subset_sizes"]) == problem.k


@pytest.mark.parametrize("partitioner", ["kmeans-rec", "kmeans-adj", "spectral"])
def test_benders_partitioners(partitioner):
    problem = build_problem("kotka", 24, n_outputs=6, metric="road", seed=4)
    ref = _mono(problem, 3.0)
    res = solve(problem, "lp-bd", {"eps": 3.0, "gap_m": 1e-9, "floor": 0.0, "subsets": 4, "partitioner": partitioner,
                                   "scope": "all-pairs"}, use_cache=False)
    assert abs(res.objective_m - ref) <= 1e-6 * ref


def test_lp_em_rows_are_private_distributions():
    problem = build_problem("helsinki", 40, n_outputs=15, seed=5)
    res = solve(problem, "lp-em", {"eps": 4.0, "candidates": 5, "neighbours": 10}, use_cache=False)
    assert res.ok and res.status == "optimal"
    assert np.allclose(res.Z.sum(axis=1), 1.0, atol=1e-12) and res.Z.min() >= 0.0
    assert violations(problem, res.Z, 4.0).violated_pairs == 0
    em = solve(problem, "em", {"eps": 4.0}, use_cache=False)
    # the LP part can only lower the expected loss below EM's (up to what the repair costs back)
    assert res.objective_m < float(problem.p @ (problem.c * em.Z).sum(axis=1))


def test_time_limit_status():
    problem = build_problem("helsinki", 40, n_outputs=30, seed=6)
    res = get_mechanism("lp").solve(problem, get_mechanism("lp").validate({"eps": 5.0}), QUIET, 1e-4)
    assert res.status == "time limit" and res.Z is None
    feasible = res.diagnostics.get("feasible_Z")
    if feasible is not None:  # a labelled feasible point: private, not claimed optimal
        assert violations(problem, feasible, 5.0).violated_pairs == 0
        assert "not the optimum" in res.message
    mono = get_mechanism("lp").validate({"eps": 5.0, "solver": "monolithic", "pairs": "all"})
    res = get_mechanism("lp").solve(problem, mono, QUIET, 1e-3)
    assert res.status == "time limit" and res.Z is None


@pytest.mark.parametrize("eps_d", [0.1, 1.0, 3.0])
def test_two_point_closed_form(eps_d):
    """Two secrets D apart, each its own output, cost 1 for the wrong one: optimum e^{εD}/(1+e^{εD}) truthful."""
    W = 0.5 * (1.0 - np.eye(2))
    E = np.array([[0.0, eps_d], [eps_d, 0.0]])
    out = solve_structured(W, E)
    truth = np.exp(eps_d) / (1 + np.exp(eps_d))
    assert out.status == "optimal"
    assert np.allclose(np.diag(out.Z), truth, atol=1e-12)
    assert abs(out.objective - (1 - truth)) <= 1e-12 and abs(out.bound - (1 - truth)) <= 1e-9


def test_general_exponents_use_the_closure():
    """An asymmetric exponent matrix that breaks the triangle inequality: the solver works on its closure."""
    rng = np.random.default_rng(7)
    n, m = 12, 4
    E = rng.uniform(0.2, 3.0, size=(n, n))
    np.fill_diagonal(E, 0.0)
    Es = exponent_closure(E)
    assert np.all(Es <= E + 1e-15) and np.any(Es < E - 1e-9)
    W = rng.uniform(0, 1, size=(n, m))
    out = solve_structured(W, E)
    pi, pj = all_pairs(n)
    Zm, ref = solve_mdp_lp(np.ones(n), W, pi, pj, E[pi, pj])
    assert abs(out.objective - ref.objective) <= 1e-6 * ref.objective
    assert cone_violation(out.Z, E) <= 1e-12  # every pair of the original E holds
    with pytest.raises(ParameterError):
        exponent_closure(-E)


def test_repair_and_row_fix_are_exact():
    rng = np.random.default_rng(8)
    n, m = 30, 5
    pts = rng.uniform(0, 2, size=(n, 2))
    Es = 3.0 * np.linalg.norm(pts[:, None] - pts[None], axis=2)
    Z = rng.dirichlet(np.ones(m), size=n)
    assert cone_violation(Z, Es) > 0.1
    u, _ = lipschitz_repair(np.log(Z), Es)
    Zr = np.exp(u)
    assert np.all(Zr >= np.minimum(Z, 1.0) - 1e-15) and cone_violation(Zr, Es) <= 1e-12
    Zf, facts = make_row_stochastic(Zr, Es, rng.uniform(size=(n, m)))
    assert np.allclose(Zf.sum(axis=1), 1.0, atol=1e-13) and cone_violation(Zf, Es) <= 1e-12
    assert facts["row_sum_max_before"] > 1.0


def test_balanced_rows_stay_in_the_cone_and_cost_less_than_the_plain_row_fix() -> None:
    """Balancing (row normalisation, then the Lipschitz raise, repeated) keeps every column exactly in the cone and the
    rows at sums ≥ 1; the row fix that follows is exact, and on a whole-city Rome sample at ε = 1 km⁻¹ far cheaper than
    the plain fix. A balance whose time has already passed makes no pass: the plain point."""
    import time

    from mdpviz.lp.cone import BALANCE_PASSES, balance_rows, fix_rows
    from mdpviz.lp.structured import _cells, _setup

    problem = build_problem("rome", 150, n_outputs=40, cost="distance", seed=4)
    W = problem.p[:, None] * problem.c
    Es, Wn, _ = _setup(W, 1.0 * problem.d, closed=True)
    reach, _ = _cells(Wn, Es, None)
    V = np.exp(-1.5 * reach)
    u, _ = lipschitz_repair(np.log(V / V.sum(axis=1, keepdims=True)), Es)
    Zr = np.exp(u)
    assert Zr.sum(axis=1).max() > 1.05  # the rows spread: what the plain fix pays for
    Zb, passes = balance_rows(Zr, Es, np.inf)
    assert 0 < passes <= BALANCE_PASSES and cone_violation(Zb, Es) <= 1e-12
    assert Zb.sum(axis=1).min() >= 1.0 - 1e-12 and Zb.sum(axis=1).max() - 1.0 < 1e-3
    plain, plain_facts = make_row_stochastic(Zr, Es, Wn)
    fixed, facts = fix_rows(Zr, Es, Wn, None, np.inf)
    assert facts["balance_passes"] == passes and "balance_passes" not in plain_facts
    assert np.allclose(fixed.sum(axis=1), 1.0, atol=1e-12) and violations(problem, fixed, 1.0).violated_pairs == 0
    assert float(np.sum(Wn * fixed)) < 0.8 * float(np.sum(Wn * plain))
    late, late_facts = fix_rows(Zr, Es, Wn, None, time.perf_counter() - 1.0)
    assert np.array_equal(late, plain) and "balance_passes" not in late_facts


def test_a_stop_with_a_point_already_within_the_tolerance_is_optimal() -> None:
    """Issue 28: a run stopped by its time limit while certifying the next round, whose best point is already
    within the gap tolerance of its certified bound, returns that point as optimal at once."""
    from types import SimpleNamespace

    from mdpviz.lp.structured import _finish

    W = np.array([[1.0, 2.0], [2.0, 1.0]])
    Z = np.eye(2)
    run = SimpleNamespace(best=(Z, {}, 2.0), lb=2.0 - 1e-6, tol=1e-4, rounds=4, priced_rounds=4, history=[],
                          cap=15.0, cold_rounds=0, trust_radius=np.inf, trust_lifted=0, tightened=0,
                          pricer=SimpleNamespace(failures=[], lp_calls=8, pairs_max=2, retries=0),
                          lp=SimpleNamespace(n_vars=4, n_pairs=2, retries=0, n_held=0, rebuilt=False, pooled=0,
                                             returned=0, n_rows_solved=0, tolerance=1e-7),
                          lp_rounds=[],
                          t_lp=0.0, t_repair=0.0, t_price=0.0,
                          bound_from="pricing at LP round 4's duals", point_from="the repaired solution of LP round 4")
    out = _finish(run, "time limit", "time limit while certifying round 5", W, 1.0, {}, 0.0)
    assert out.status == "optimal" and out.Z is Z and "already within the tolerance" in out.message
    run.lb = 1.0  # far from the point: the stop stays a stop
    assert _finish(run, "time limit", "time limit while certifying round 5", W, 1.0, {}, 0.0).status == "time limit"


def test_a_stopped_component_reports_the_whole_problems_bound() -> None:
    """Issue 28: when one component of the neighbour graph stops, the bound printed is the whole problem's (the
    certified bounds so far, the stopped component's, and the floor of the components not reached), never the
    stopped component's alone."""
    from mdpviz.lp.neighbours import solve_by_components
    from mdpviz.lp.outcome import RowsFacts

    d = np.full((5, 5), np.inf)
    np.fill_diagonal(d, 0.0)
    d[0, 1] = d[1, 0] = d[2, 3] = d[3, 2] = 1.0  # components {0, 1}, {2, 3} and the lone {4}
    w = np.full(5, 0.2)
    c = np.array([[0.0, 4.0], [4.0, 0.0], [1.0, 3.0], [3.0, 1.0], [2.0, 5.0]])

    def first_fails(dp, wp, cp, left):  # the first (largest, {0, 1}) stops with a bound of its own
        return None, RowsFacts("time limit", bound=0.3, message="stopped")

    Z, facts = solve_by_components(d, w, c, first_fails, None)
    floor_rest = 0.2 * (1.0 + 1.0 + 2.0)  # rows 2, 3 and 4 at their cheapest output
    assert Z is None and facts.bound == pytest.approx(0.3 + floor_rest)
    assert "the whole problem's" in facts.message


@pytest.mark.parametrize("engine", ["rows", "conic"])
def test_every_stop_returns_a_certified_bound_and_an_exactly_private_point(engine: str,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28: a stop before the first LP (a deadline already passed) still returns the no-privacy floor as the
    certified bound and the cheapest cells' point, checked over all pairs, each labelled. (The grace for the cells'
    points is made long, so that a loaded machine cannot turn them into the constant mechanism.)"""
    import mdpviz.lp.stop_points as stop_points

    monkeypatch.setattr(stop_points, "POINT_GRACE_S", 600.0)
    problem = build_problem("rome", 120, n_outputs=30, cost="distance", seed=4)
    eps = 1.0
    W = problem.p[:, None] * problem.c
    out = solve_structured(W, eps * problem.d, closed=True, tol=1e-4, time_limit=0.0, engine=engine)
    assert out.status == "time limit"
    floor = float(W.min(axis=1).sum())
    assert out.bound == pytest.approx(floor, rel=1e-12)
    assert out.Z is not None and np.allclose(out.Z.sum(axis=1), 1.0)
    assert violations(problem, out.Z, eps).violated_pairs == 0
    assert out.objective == pytest.approx(float(np.sum(W * out.Z))) and out.objective >= out.bound
    assert out.diagnostics["bound_from"] == "the no-privacy floor"
    assert out.diagnostics["point_from"].startswith("the cells' point at share ")
    if engine == "rows":
        assert "bound from the no-privacy floor, point from the cells' point at share " in out.message


def test_the_lp_mechanism_stopped_gives_its_bound_and_kept_point_in_the_verdict() -> None:
    """Issue 28: the LP mechanism stopped by its time limit returns no mechanism, but its certified bound (the floor at
    the least) and its best feasible point, labelled, which the verdict states."""
    from mdpviz.verdict import verdict

    problem = build_problem("rome", 120, n_outputs=30, cost="distance", seed=4)
    r = solve(problem, "lp", {"eps": 1.0}, time_limit=1e-9, use_cache=False)
    assert r.Z is None and r.status == "time limit"
    assert r.bound_m == pytest.approx(float(problem.c.min(axis=1) @ problem.p), rel=1e-9)
    kept = r.diagnostics["feasible_Z"]
    assert violations(problem, kept, 1.0).violated_pairs == 0
    v = verdict(r, label="LP")
    assert "best certified lower bound" in v.headline and "best feasible point found costs" in v.headline


def test_a_stopped_lp_says_in_plain_words_what_it_found() -> None:
    """Issue 28: the page's sentence for a stop names the best point found and the certified bound, instead of
    claiming that nothing was found."""
    from mdpviz.contract import Result
    from mdpviz.verdict import verdict

    r = Result("lp", {}, None, "time limit", 1.0, timings={"total_s": 3.0}, bound_m=880.6,
               diagnostics={"feasible_objective_m": 6340.0})
    assert verdict(r, label="Optimal LP").plain == (
        "Optimal LP gave no mechanism: it reached its time limit after 3.0 s before proving one optimal: the best it "
        "found costs 6.34 km a report, and the optimum costs at least 881 m (that point is kept aside, not shown as "
        "the result).")
    bare = Result("lp", {}, None, "time limit", 1.0, timings={"total_s": 3.0})
    assert verdict(bare, label="Optimal LP").plain.endswith("before finding one.")


def test_a_stop_whose_starting_point_would_outlast_its_grace_returns_the_best_constant_mechanism(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A cells' point costs O(n²·|Y|) (3.6 CPU s at K = 1,500); a stop may spend only POINT_GRACE_S on them
    past its deadline, then returns the best constant mechanism instead, exactly private and labelled. With the grace
    at 0 the deadline has passed before the first block: no clock is read for the outcome."""
    import mdpviz.lp.stop_points as stop_points

    problem = build_problem("rome", 120, n_outputs=30, cost="distance", seed=4)
    W = problem.p[:, None] * problem.c
    monkeypatch.setattr(stop_points, "POINT_GRACE_S", -1.0)
    out = solve_structured(W, 1.0 * problem.d, closed=True, tol=1e-4, time_limit=0.0, engine="rows")
    assert out.status == "time limit" and out.Z is not None
    best = int(np.argmin(W.sum(axis=0)))
    assert np.array_equal(out.Z[:, best], np.ones(problem.k)) and out.Z.sum() == problem.k
    assert violations(problem, out.Z, 1.0).violated_pairs == 0
    assert out.diagnostics["point_from"].startswith(f"the best constant mechanism (every secret reports output {best}")
    assert "the cells' points needed more than" in out.message


def test_lazy_pricing_certifies_the_same_optimum_with_fewer_pricing_rounds() -> None:
    """Pricing a round's duals is skipped while the repaired point is above the restricted LP's value by more than
    the tolerance, and where the LP's own duals certify the gap; the certified optimum is the eager engine's."""
    problem = build_problem("rome", 150, n_outputs=40, cost="distance", seed=4)
    W = problem.p[:, None] * problem.c
    outs = {lazy: solve_structured(W, 2.0 * problem.d, closed=True, tol=1e-6, out_rows=problem.y_index,
                                   engine="rows", lazy=lazy) for lazy in (True, False)}
    for out in outs.values():
        assert out.status == "optimal", out.message
        assert out.bound <= min(o.objective for o in outs.values()) * (1 + 1e-12)
        assert violations(problem, out.Z, 2.0).violated_pairs == 0
    assert abs(outs[True].objective - outs[False].objective) <= 1e-6 * outs[False].objective
    eager, lazy = outs[False].diagnostics, outs[True].diagnostics
    assert eager["priced_rounds"] >= eager["iterations"] - 1 >= 1  # all but a round the LP's duals certified
    assert lazy["priced_rounds"] < lazy["iterations"]
    assert outs[True].bound >= outs[False].bound * (1 - 1e-6)  # the LP's duals bound as tightly as pricing



def test_a_stop_keeps_the_cells_starting_point_when_it_beats_the_repaired_lp_point() -> None:
    """At small ε the repaired point of an early round can cost far more than the cells' starting point (the
    exponential mechanism over the outputs' cells); a stop keeps the better of the two, labelled, exactly private."""
    problem = build_problem("rome", 150, n_outputs=40, cost="distance", seed=4)
    W = problem.p[:, None] * problem.c
    out = solve_structured(W, 1.0 * problem.d, closed=True, tol=1e-4, max_iter=1, out_rows=problem.y_index,
                           engine="rows")
    assert out.status == "iteration limit"
    repaired_round_1 = out.diagnostics["history"][0][1]  # the history is in W's unit, as the objective
    assert out.diagnostics["point_from"].startswith("the cells' point at share ")
    assert out.objective < repaired_round_1 and out.bound <= out.objective
    assert violations(problem, out.Z, 1.0).violated_pairs == 0
    assert np.allclose(out.Z.sum(axis=1), 1.0, atol=1e-12)


def test_a_stops_cells_point_is_the_cheapest_share_and_exactly_private(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cells' points at the shares of CELL_SHARES (1/2: the exponential mechanism over the outputs' cells) are
    each exactly private; a stop keeps the cheapest, which at small ε is not the exponential mechanism's share."""
    import mdpviz.lp.stop_points as stop_points
    from mdpviz.lp.structured import CELL_SHARES, _cells, _setup, cells_point, starting_point

    monkeypatch.setattr(stop_points, "CELLS_BALANCE_S", np.inf)  # balanced to the pass cap, not to a clock

    problem = build_problem("rome", 150, n_outputs=40, cost="distance", seed=4)
    W = problem.p[:, None] * problem.c
    Es, Wn, _ = _setup(W, 1.0 * problem.d, closed=True)
    reach, _ = _cells(Wn, Es, None)
    costs = {}
    for share in CELL_SHARES:
        Z, _ = starting_point(Wn, Es, reach, None, share, np.inf)  # balanced, as a stop makes it
        assert violations(problem, Z, 1.0).violated_pairs == 0 and np.allclose(Z.sum(axis=1), 1.0, atol=1e-12)
        costs[share] = float(np.sum(Wn * Z))
    Z, _, label = cells_point(Wn, Es, reach, None)
    best = min(costs, key=costs.__getitem__)
    assert float(np.sum(Wn * Z)) == pytest.approx(costs[best], rel=1e-12) and best != 0.5
    assert label.startswith(f"the cells' point at share {best:g} ")


def test_the_lp_rounds_leave_a_tenth_of_the_time_limit_to_a_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The restricted LP is solved, and priced, until a tenth of the time limit before the deadline: that tenth (and
    the grace past the deadline) is the stop's, for its cells' points, however long the last round. The clock is the
    start time given, not measured."""
    import time

    from mdpviz.lp.pricing import Pricer
    from mdpviz.lp.restricted import RestrictedLP
    from mdpviz.lp.structured import PAIR_CAPS, RESERVE, _cells, _first_lp, _RowAndColumnGeneration, _setup

    problem = build_problem("rome", 100, n_outputs=30, cost="distance", seed=4)
    W = problem.p[:, None] * problem.c
    Es, Wn, _ = _setup(W, 1.0 * problem.d, closed=True)
    reach, holder = _cells(Wn, Es, None)
    lp = RestrictedLP(Wn, Es)
    _first_lp(lp, reach, holder, 0, PAIR_CAPS[0])
    now = time.perf_counter()
    run = _RowAndColumnGeneration(lp, Pricer(Es), now + 1e4, 1e-4, PAIR_CAPS[0], no_progress, now)
    assert RESERVE == 0.1 and run.until == pytest.approx(now + 9e3) and run.deadline == now + 1e4
    real, deadlines = lp.solve, []

    def solve(deadline: float | None, cold_ipm: bool = False) -> str:
        deadlines.append(deadline)
        return real(deadline, cold_ipm=cold_ipm)

    monkeypatch.setattr(lp, "solve", solve)
    assert run._solve_lp(cold_ipm=False) == "optimal" and deadlines == [run.until]
    assert run._left() is not None and run._left() < 9e3
    free = _RowAndColumnGeneration(RestrictedLP(Wn, Es), Pricer(Es), None, 1e-4, PAIR_CAPS[0], no_progress, now)
    assert free.until is None and free._left() is None


def test_a_conic_stop_keeps_the_cheaper_of_its_master_point_and_the_cells_points(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The conic engine stopped with a dear master point (here the uniform mechanism, as if after one iteration):
    the cheapest cells' point replaces it, labelled, and ends the history; a master point as cheap is kept."""
    import time

    import mdpviz.lp.stop_points as stop_points
    import mdpviz.lp.structured as structured
    from mdpviz.lp.outcome import StructuredOutcome

    monkeypatch.setattr(stop_points, "CELLS_BALANCE_S", np.inf)  # both stops balance alike: to the pass cap
    problem = build_problem("rome", 100, n_outputs=30, cost="distance", seed=4)
    W = problem.p[:, None] * problem.c
    Es = 1.0 * problem.d
    reach, _ = structured._cells(W, Es, None)

    def stop_with(master: np.ndarray) -> StructuredOutcome:
        cost = float(np.sum(W * master))
        monkeypatch.setattr(structured, "solve_conic", lambda *_, **__: StructuredOutcome(
            master.copy(), "iteration limit", cost, None, diagnostics={"history": [(0.1, cost, 0.0, 300)]}))
        out, _ = structured._solve_dense(W, Es, 1e-4, None, no_progress, None, 0.5, time.perf_counter(), reach)
        assert out is not None and violations(problem, out.Z, 1.0).violated_pairs == 0
        return out

    dear = stop_with(np.full(W.shape, 1.0 / W.shape[1]))
    assert dear.diagnostics["point_from"].startswith("the cells' point at share ")
    assert dear.objective < float(np.sum(W / W.shape[1]))
    assert dear.diagnostics["history"][-1][1] == pytest.approx(dear.objective)  # the trace ends at the point kept
    cheap = stop_with(dear.Z)
    assert cheap.diagnostics["point_from"] == "the conic master's last solution"
    assert len(cheap.diagnostics["history"]) == 1


def test_the_row_engines_history_is_in_the_objectives_unit() -> None:
    """Its last round's best objective and bound are the outcome's (the dashboard draws them in metres)."""
    problem = build_problem("rome", 60, n_outputs=20, cost="distance", seed=1)
    W = problem.p[:, None] * problem.c
    out = solve_structured(W, 5.0 * problem.d, closed=True, tol=1e-4, out_rows=problem.y_index, engine="rows")
    _, best, bound, _, _ = out.diagnostics["history"][-1]
    assert out.status == "optimal" and abs(best - out.objective) <= 1e-9 * out.objective
    assert abs(bound - out.bound) <= 1e-9 * out.objective


def test_the_conic_engine_runs_on_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its loop runs under a one-thread BLAS limit (spare OpenBLAS threads only spun there, costing CPU time), and
    the limit is lifted afterwards."""
    from threadpoolctl import threadpool_info

    import mdpviz.lp.conic as conic

    seen: list[list[int]] = []
    run = conic._ColumnGeneration.run

    def recording(self, max_iter):  # type: ignore[no-untyped-def]
        seen.append([p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"])
        return run(self, max_iter)

    monkeypatch.setattr(conic._ColumnGeneration, "run", recording)
    problem = build_problem("helsinki", 30, n_outputs=10, seed=0)
    before = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    out = conic.solve_conic(problem.p[:, None] * problem.c, 5.0 * problem.d, closed=True, tol=1e-4)
    assert out.status == "optimal" and seen and seen[0] and all(n == 1 for n in seen[0])
    assert [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"] == before
