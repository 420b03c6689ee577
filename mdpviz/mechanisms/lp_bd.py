"""LP+BD: the mDP LP over neighbour pairs solved by Benders decomposition over a partition of X (Qiu, IJCAI 2024).

As the paper writes it (default): ε-mDP constraints only between neighbours d ≤ η (Definition 2.2; η = 2 km),
X split into 25 subsets by k-means on the rows of the distance matrix, the initial cuts of Eq. 14, and stop when
the certified gap UB − LB is below ξ = 0.01 m. ``scope = all-pairs`` solves the exact ε-mDP LP instead (every
pair not implied by a chain through another secret). The result claims only what its LP enforces, and its message
states how many pairs of X break ε-mDP outside that claim.
"""

from __future__ import annotations

import time
from typing import Any, cast

import numpy as np

from ..contract import Mechanism, PairCheck, Param, Preset, Progress, Result, epsilon_param, register
from ..deadline import KEPT_AT, OutOfTime, check_deadline, deadline_of, time_left, with_grace
from ..lp.benders import (
    CUT_RULES,
    PARTITIONERS,
    PULL,
    BendersDiagnostics,
    BendersOutcome,
    partition,
    solve_benders,
)
from ..lp.cone import RepairFacts, repair_into_cone
from ..lp.mdp_lp import implied_free_pairs
from ..lp.neighbours import neighbour_pairs, neighbour_path_km
from ..metrics import TOLERANCE, cone_breaches
from ..problem import Problem
from .em import em_matrix
from .neighbour_scope import all_pairs_verdict, neighbour_claim

SCOPES = ("neighbours", "all-pairs")
# Benders stops at UB − LB ≤ ξ/2: the exact repair of HiGHS's tolerances afterwards costs part of the gap (on
# Rome, K = 1,000, it once pushed a gap of 0.008 m past ξ = 0.01 m), and the result must still be certified within ξ;
# with the authors' slack (never re-checked against ξ after the repair) there is nothing to keep it for
REPAIR_RESERVE = 0.5
STABILISED_LAMBDA = 0.3  # λ of the 'stabilised' preset (with row-sum cuts): `bench benders` measures it


class LpBdDiagnostics(BendersDiagnostics, total=False):
    """What an LP+BD result reports: the Benders run's own diagnostics, the LP's pairs and scope, the exact repair
    of the point, the LP's own pairs checked on it and, for the neighbour scope, the point over all pairs of X."""

    pairs: int
    scope: str
    eta_km: float | None
    cone_repair: RepairFacts
    enforced: PairCheck
    all_pairs: dict[str, Any]
    feasible_Z: np.ndarray  # a stop: the best feasible point found (repaired), not the optimum
    feasible_objective_m: float | None


PAPER = ("Qiu: Enhancing scalability of metric differential privacy via secret dataset partitioning and Benders "
         "decomposition (IJCAI 2024)")


def _solve_lp_bd(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None) -> Result:
    deadline = deadline_of(time_limit)
    timings: dict[str, float] = {}
    diag = LpBdDiagnostics()
    try:
        return _lp_bd(problem, params, progress, deadline, timings, diag)
    except OutOfTime as e:
        kept = ""
        if "feasible_Z" in diag:
            kept = (f"; {KEPT_AT} the solved and repaired point "
                    f"({diag['feasible_objective_m']:.2f} m, private for the LP's pairs), but its all-pairs "
                    "measurement did not finish")
        return Result("lp-bd", params, None, "time limit", params["eps"], claim=_claim(params["scope"], params["eta"]),
                      timings=timings, diagnostics=diag,
                      message=f"Time limit ({time_limit:g} s) while {e}: no mechanism is returned{kept}. Raise the "
                              "time limit, or lower K.",
                      degenerate="No mechanism: the time limit came before a checked solution")


def _lp_bd(problem: Problem, params: dict[str, Any], progress: Progress, deadline: float | None,
           timings: dict[str, float], diag: LpBdDiagnostics) -> Result:
    """LP+BD (module docstring); ``OutOfTime`` when ``deadline`` passes outside the Benders loop (``diag`` then
    holds what is known)."""
    eps, eta = params["eps"], params["eta"]
    t0 = time.perf_counter()
    progress("constraint pairs", None)
    d = problem.d
    pi, pj, closure, claim = _constraint_pairs(d, params["scope"], eps, eta)
    expo = eps * d[pi, pj]
    timings["pairs_s"] = time.perf_counter() - t0
    check_deadline(deadline, "listing the constrained pairs")
    t0 = time.perf_counter()
    progress("partition", None)
    labels = partition(params["partitioner"], params["subsets"], d, problem.xy_km, pi, pj, seed=params["seed"])
    timings["partition_s"] = time.perf_counter() - t0
    W = problem.p[:, None] * problem.c
    check_deadline(deadline, "partitioning the secrets")
    left = time_left(deadline)
    out = solve_benders(W, pi, pj, expo, labels, gap_m=params["gap_m"], max_iter=params["max_iter"],
                        cuts=params["cuts"], slack=params["slack"], time_limit=left, progress=progress,
                        floor=params["floor"], stabilise=params["stabilise"], core=em_matrix(problem, eps),
                        row_cuts=params["row_cuts"], reserve=REPAIR_RESERVE if params["slack"] == 0 else 0.0,
                        threads=params["threads"])
    timings.update(out.timings)
    # (mypy) every BendersDiagnostics is an LpBdDiagnostics (a subclass whose added keys are all optional)
    diag.update(cast(LpBdDiagnostics, out.diagnostics))
    diag.update({"pairs": len(pi), "scope": params["scope"],
                 "eta_km": eta if params["scope"] == "neighbours" else None})
    notes = [out.message] if out.message else []
    if params["slack"] > 0:
        notes.append(f"code-only slack δ = {params['slack']:g} on every pair row (the authors' MATLAB code, not the "
                     "paper's LP): the LP's rows may be broken by up to δ before the repair")
    # the pairs it claims: all of them, or the neighbour pairs (the chains between them follow, Property 3.2)
    claimed = None if params["scope"] == "all-pairs" else (pi, pj)
    Z, objective, status = _repair_point(out, closure, claimed, W, params["gap_m"], deadline, timings, diag, notes)
    degenerate = ""
    if Z is not None and params["scope"] == "neighbours":
        degenerate = _all_pairs_check(Z, objective, eps, d, eta, deadline, timings, diag, notes)
    everyone = out.diagnostics.get("boundary_count") == len(W)
    if everyone:
        why = ("every pair is constrained" if params["scope"] == "all-pairs"
               else f"η = {eta:g} km reaches across the subsets")
        notes.append(f"all {len(W):,} records are on a subset boundary ({why}): the master is the whole LP and "
                     f"Benders splits nothing off; `lp` with the constraint set '{params['scope']}' solves the same "
                     "LP directly")
    if Z is None:
        degenerate = f"No mechanism: Benders ended with status '{out.status}' before the gap closed"
        if (not everyone and out.status in ("time limit", "iteration limit") and params["stabilise"] >= 1.0
                and not params["row_cuts"] and out.diagnostics.get("iterations", 0) > 0):
            notes.append("plain Benders, as in the paper, converges slowly on large domains; the 'stabilised' preset "
                         f"(ours: in-out λ = {STABILISED_LAMBDA:g} and row-sum cuts) solves the same LP in fewer "
                         "iterations (`python -m mdpviz bench benders`)")
        elif not everyone and params["scope"] == "neighbours":
            notes.append("`lp` with the constraint set 'neighbours' solves the same LP exactly, one connected "
                         "component of the neighbour graph at a time (`python -m mdpviz bench benders` compares "
                         "the two)")
    return Result("lp-bd", params, Z, status, eps, claim=claim, timings=timings, lp_size=out.size,
                  objective_m=objective, bound_m=out.lower, message="; ".join(notes), degenerate=degenerate,
                  diagnostics=diag)


def _constraint_pairs(d: np.ndarray, scope: str, eps: float,
                      eta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """The pairs the LP constrains under ``scope``, the exponents they imply along chains, and the claim; returns
    (pi, pj, closure, claim)."""
    if scope == "all-pairs":
        pi, pj = implied_free_pairs(d)
        return pi, pj, eps * d, _claim(scope, eta)  # the kept pairs imply every pair at ε·d (d is a metric)
    pi, pj = neighbour_pairs(d, eta)
    return pi, pj, eps * neighbour_path_km(d, eta), _claim(scope, eta)


def _claim(scope: str, eta: float) -> str:
    """What the LP over ``scope``'s pairs claims (its point's claim, a stop's kept point's too)."""
    return "all pairs" if scope == "all-pairs" else neighbour_claim(eta)


def _repair_point(out: BendersOutcome, closure: np.ndarray, claimed: tuple[np.ndarray, np.ndarray] | None,
                  W: np.ndarray, gap_m: float, deadline: float | None,
                  timings: dict[str, float], diag: LpBdDiagnostics,
                  notes: list[str]) -> tuple[np.ndarray | None, float | None, str]:
    """Repair Benders' point into the cone of the LP's pairs and check it; a stopped run's best point is kept aside
    in ``diag`` instead. Returns (Z, objective, status), Z None when there is no mechanism; adds to ``notes``."""
    status = out.status
    point = out.Z if out.Z is not None else out.feasible_Z
    if point is None:
        return None, None, status
    # solver tolerances (and a nonzero slack) leave rows slightly outside the cone: repair, then fix the rows
    t0 = time.perf_counter()
    keep = deadline if out.Z is not None else with_grace(deadline)  # a stopped run's best point: a little grace
    try:
        point, facts = repair_into_cone(point, closure, W, deadline=keep)
        check_deadline(keep, "checking the repaired point against the LP's pairs")
    except OutOfTime as e:
        if out.Z is not None:  # the solved point is not checked yet: no mechanism (the caller says why)
            raise
        notes.append(f"its best feasible point is not kept: the time limit came while {e}")
        return None, None, "time limit"
    diag["cone_repair"] = facts
    enforced = cone_breaches(point, closure)
    # measured against the closure (every pair the LP binds, along chains too), counted on the pairs it claims
    if claimed is None:
        bad, checked = int(len(enforced.i)), len(W) * (len(W) - 1)
    else:
        mine = np.zeros(closure.shape, dtype=bool)
        mine[claimed] = True
        bad, checked = int(mine[enforced.i, enforced.j].sum()), int(len(claimed[0]))
    chains = ("" if claimed is None else
              f"; every pair linked by a chain of them, at ε times the path: {len(enforced.i):,} breached")
    diag["enforced"] = {"violated_pairs": bad, "checked_pairs": checked,
                        "exponent": f"the LP's own: ε·d on the pairs it claims{chains}", "tolerance": TOLERANCE}
    timings["repair_s"] = time.perf_counter() - t0
    if out.Z is None:
        diag["feasible_Z"] = point
        diag["feasible_objective_m"] = float(np.sum(W * point))
        notes.append(f"no mechanism is returned: {KEPT_AT} the best feasible point found "
                     f"({diag['feasible_objective_m']:.2f} m, private for the LP's pairs after repair), not the "
                     "optimum")
        return None, None, status
    objective = float(np.sum(W * point))
    if status == "optimal" and out.lower is not None and objective - out.lower > gap_m:
        # the exact repair of the solver's tolerances cost more than the gap allows: no longer certified
        status = "gap reached"
        notes.append(f"after the exact repair the certified gap is {objective - out.lower:.3g} > ξ")
    return point, objective, status


def _all_pairs_check(Z: np.ndarray, objective: float | None, eps: float, d: np.ndarray, eta: float,
                     deadline: float | None, timings: dict[str, float], diag: LpBdDiagnostics,
                     notes: list[str]) -> str:
    """Measure the neighbour LP's point over all pairs of X (into ``diag`` and ``notes``); returns the verdict
    (empty unless the claim leaves pairs broken). At a passed deadline the point is kept aside in ``diag``."""
    t0 = time.perf_counter()
    try:
        check_deadline(deadline, "measuring ε-mDP over all pairs of X")
    except OutOfTime:  # the point is solved and repaired: kept aside, not released unmeasured
        diag["feasible_Z"], diag["feasible_objective_m"] = Z, objective
        raise
    msg, degenerate, facts = all_pairs_verdict(Z, eps, d, eta)
    diag["all_pairs"] = facts
    notes.append(msg)
    timings["all_pairs_check_s"] = time.perf_counter() - t0
    return degenerate


PRESETS = (
    Preset("paper", "LP+BD as in the paper (road data)",
           "The paper's LP (ε-mDP between neighbours within η = 2 km) at its road-data setting ε = 10 km⁻¹, 25 subsets "
           "by k-means on distance rows, stop at a certified gap of ξ = 0.01.",
           params=(("eps", 10.0), ("scope", "neighbours"), ("eta", 2.0), ("subsets", 25),
                   ("partitioner", "kmeans-dv"), ("gap_m", 0.01))),
    Preset("stabilised", "LP+BD stabilised (ours, the paper's LP)",
           "The paper's LP and partition (k-means on distance rows, 25 subsets, η = 2 km, ε = 10 km⁻¹, ξ = 0.01) "
           f"solved by our faster path: in-out stabilisation λ = {STABILISED_LAMBDA:g} from the exponential mechanism "
           f"(near the end, the master's point moved at most {PULL:g} of the way towards it), and row-sum cuts. "
           "Neither changes the LP or its optimum, only the Benders iterations that reach it.",
           params=(("eps", 10.0), ("scope", "neighbours"), ("eta", 2.0), ("subsets", 25),
                   ("partitioner", "kmeans-dv"), ("gap_m", 0.01), ("stabilise", STABILISED_LAMBDA),
                   ("row_cuts", True))),
    Preset("authors-code", "LP+BD as in the authors' code",
           "The authors' MATLAB code (chenxiunt/MetricDP_BendersDecomposition): an additive slack δ = 0.01 on every "
           "mDP row and master entries ≥ 0.001 (with |Y| = 100 that spreads 10% of each boundary row uniformly), an "
           "absolute gap of 0.001; both change the LP, so the result is not the paper's optimum (its rows are "
           "repaired into the cone afterwards).",
           params=(("eps", 10.0), ("scope", "neighbours"), ("eta", 2.0), ("subsets", 25), ("slack", 0.01),
                   ("floor", 0.001), ("max_iter", 100), ("gap_m", 0.001))),
)

LP_BD = register(Mechanism(
    name="lp-bd", label="LP + Benders decomposition (LP+BD)", family="lp", paper=PAPER,
    info="The paper's LP: ε-mDP between neighbours (d ≤ η). X is split into subsets (k-means on distance rows); "
         "a master LP over boundary records and one subproblem per subset exchange feasibility and optimality "
         "cuts until the certified gap between the bounds is below ξ.",
    params=(epsilon_param(),
            Param("scope", str, "neighbours", "constraint set: 'neighbours' = pairs with d ≤ η (the paper's LP, "
                  "Definition 2.2); 'all-pairs' = exact ε-mDP for every pair", choices=SCOPES,
                  label="constraint set"),
            Param("eta", float, 2.0, "neighbour threshold η of the paper (2 km for road data; only with scope = "
                  "neighbours)", low=0.01, high=100.0, log=True, unit="km", label="η"),
            Param("subsets", int, 25, "number of subsets M of the partition (25 in the authors' code)", low=1,
                  high=200, label="subsets M"),
            Param("partitioner", str, "kmeans-dv", "how X is split: k-means on distance rows (the paper's k-m-DV), "
                  "on coordinates (k-m-rec), on adjacency rows (k-m-adj), or balanced spectral clustering (BSC)",
                  choices=PARTITIONERS, label="partitioner"),
            Param("gap_m", float, 0.01, "stop when the certified gap UB − LB is below ξ (the paper's ξ = 0.01, "
                  "read in the loss unit, metres)", low=1e-9, high=1000.0, log=True, unit="m", label="gap ξ"),
            Param("max_iter", int, 1000, "Benders iteration cap (the paper reports up to 650 iterations)", low=1,
                  high=100_000, label="iteration cap"),
            Param("cuts", str, "needed", "initial cuts of Eq. 14 (z_i ≤ e^{εD_ij} z_j between boundary records): "
                  "'needed' = only those not implied by other master rows (same master polytope), 'all' = every "
                  "ordered boundary pair as written, 'none'", choices=CUT_RULES, label="initial cuts"),
            Param("slack", float, 0.0, "code-only additive slack δ on every pair row (0 = the paper's LP; the "
                  "authors' MATLAB code uses 0.01, which changes the LP)", low=0.0, high=0.1,
                  label="implementation slack δ"),
            Param("floor", float, 1e-9, "lower bound τ on the master's boundary entries: keeps the subproblems' "
                  "value functions from slopes of e^{ε·path} that double precision cannot hold; it can raise the "
                  "optimum by at most τ·Σ p·c, which the reported bound subtracts (the authors' code uses 0.001, "
                  "which changes the LP; 0 = none)", low=0.0, high=0.01, label="master floor τ"),
            Param("stabilise", float, 1.0, "in-out stabilisation λ: subproblems are solved at λ·(master point) + "
                  "(1 − λ)·(a feasible core point: the exponential mechanism, then the best point found), and once "
                  f"that point repeats, at the master point moved at most {PULL:g} of the way towards the "
                  "exponential mechanism (less where that would cost more than a quarter of ξ); "
                  f"1 = plain Benders as in the paper; {STABILISED_LAMBDA:g} with row-sum cuts in the 'stabilised' "
                  "preset. Changes the path, never the optimum", low=0.05, high=1.0, label="stabilisation λ"),
            Param("row_cuts", bool, False, "row-sum cuts (ours, not the paper's): before the subproblems, cut the "
                  "master point with Σ_y z_x = 1 of each internal record bounded through its paths to boundary "
                  "records; removes the feasibility cuts; changes the path, never the LP or its optimum",
                  label="row-sum cuts"),
            Param("threads", int, 1, "subproblems solved at once, in threads (ours, not the paper's: the same cuts, "
                  "iterations and result as 1; no faster on whole-city Rome at K = 500–1,000, where the master "
                  "dominates)", low=1, high=32,
                  label="subproblem threads"),
            Param("seed", int, 0, "seed of the partitioner's k-means", low=0, high=2**31 - 1, label="seed")),
    solve=_solve_lp_bd, max_k=1000, presets=PRESETS, diagnostics=LpBdDiagnostics))
