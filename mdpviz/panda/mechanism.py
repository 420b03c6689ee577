"""PAnDA-e, PAnDA-p and PAnDA-l (Liu & Qiu, CCS 2025): anchor-based mDP optimisation with (ε, δ)-PmDP.

Phase I: N users (secrets drawn from the prior) each sample an anchor set; ε̄ for every pair in closed form; safety
margins ξ̂ for anchor pairs; one AnPO LP over the union A of the anchor sets. Phase II: each user reports y drawn
from the row of their surrogate (the nearest anchor of their own set). See ``mdpviz.panda`` for each step.

Result.Z covers all of X by a display convention: each secret gets the row of its nearest anchor in the union A.
A real user uses the nearest anchor of their own A_n; those rows are in ``diagnostics["users"]["rows"]``.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np

from ..contract import Mechanism, PairCheck, Param, Preset, Progress, Result, epsilon_param, register
from ..deadline import KEPT_AT, OutOfTime, check_deadline
from ..errors import ParameterError
from ..problem import Problem
from .anpo import SOLVERS, AnpoOutcome, anpo_exponents, solve_anpo
from .budget import EPS_BAR_RULES, ball_lists, empty_probability, phase1_cost, phase1_cost_last_factor
from .diagnostics import AnpoFacts, PandaDiagnostics, PandaUsers, PandaUtility, PandaViolations, RelaxedBound
from .evaluate import (
    budget_split,
    claim_refuted,
    counterfactual_violations,
    histogram,
    sample_reports,
    user_pair_violations,
)
from .margins import PS_RULES, S_RULES, MarginReport, safety_margins
from .selection import (
    EMPTY_RULES,
    FLOORS,
    VARIANT_NAMES,
    Selection,
    make_selection,
    nearest_member,
    sample_anchor_sets,
    sample_users,
)

PAPER = ("Liu, Qiu: PAnDA: Rethinking Metric Differential Privacy Optimization at Scale with Anchor-Based "
         "Approximation (ACM CCS 2025)")
CLAIM = ("(ε, δ)-PmDP between users' true secrets via their surrogates (paper Prop. 8), with Phase I charged ε̄; "
         "only the LP's own anchor-pair constraints are enforced exactly. Z's row for a secret is the row of its "
         "nearest anchor in the union A (display convention; a user uses the nearest anchor of their own set), so "
         "the all-pairs ε-mDP check on Z is not claimed: see diagnostics V_pair, V_cf, V_pure")

_PARAMS = (
    epsilon_param(),
    Param("delta", float, 1e-7, "allowed per-pair probability that ε-mDP fails (PmDP δ)", low=1e-7, high=0.15,
          log=True, label="δ"),
    Param("alpha", float, 0.95, "selection probability of one's own record, h(0) = α; must be < 1 (Prop. 5)",
          low=0.01, high=1.0, open_high=True, label="α"),
    Param("lam", float, 0.5, "decay rate of the selection probability h", low=0.01, high=50.0, log=True,
          unit="km⁻¹ (p: exponent)", label="λ"),
    Param("gamma_div", float, 50.0, "γ = d_max / c: beyond γ the selection probability is the floor",
          low=1.0, high=1000.0, log=True, label="γ divisor c"),
    Param("floor", str, "w_min", "selection probability beyond γ: 'w_min' (authors' code, small anchor sets) or "
          "'h_gamma' (paper Eq. 15; with d in km most of X becomes an anchor)", choices=FLOORS,
          label="floor beyond γ",
          choice_labels=(("w_min", "small floor wₘᵢₙ (authors' code)"), ("h_gamma", "h(γ) (paper, Eq. 15)"))),
    Param("w_min", float, 1e-4, "the floor when floor = w_min (must not exceed h(γ))", low=1e-12, high=0.5,
          log=True, label="floor value wₘᵢₙ"),
    Param("big_gamma", int, 10, "records in each neighbourhood S_x used to estimate ξ̂ (Eq. 29)", low=1, high=50,
          label="Γ"),
    Param("n_users", int, 50, "number of users; each true secret is drawn from the prior", low=1, high=1000,
          label="users N"),
    Param("seed", int, 0, "seed of users, anchor draws, reports and V_cf samples", low=0, high=2**31 - 1),
    Param("empty", str, "no output", "a user whose anchor set is empty: reports nothing (exact for ε̄), or "
          "redraws the set (conditions Phase I on A ≠ ∅)", choices=EMPTY_RULES, label="empty anchor set"),
    Param("ps_rule", str, "one", "P_S in Eq. 30: 'one' (authors' code; target 1 − δ) or 'eq30' (P_S from Eq. 93; "
          "pairs with P_S ≤ 1 − δ fall back to the worst case)", choices=PS_RULES, label="P_S rule"),
    Param("anpo_solver", str, "colgen", "AnPO solver (all exact): 'colgen' = the structured column-generation "
          "solver (certified bound), 'monolithic' = every non-implied pair in one HiGHS LP, 'cuts' = cutting "
          "planes from nearest pairs", choices=SOLVERS, label="AnPO solver"),
    Param("method", str, "ipm", "HiGHS algorithm", choices=("ipm", "simplex"), label="LP method"),
    Param("max_lp_rows", int, 150, "refuse AnPO LPs with more rows than this after merging equal rows (LP time "
          "grows fast: about 5 s at 60 rows × 100 outputs)", low=1, high=100_000, label="max AnPO rows"),
    Param("relaxed_max_rows", int, 400, "solve the relaxed AnPO (lower bound, ratio) only up to this many anchors; "
          "0 skips it", low=0, high=100_000, label="max relaxed-AnPO rows"),
    Param("relaxed_time_limit", float, 10.0, "seconds for the relaxed AnPO; with colgen a stopped solve still "
          "gives a certified lower bound (the ratio is then an upper bound on the true ratio)", low=0.1,
          high=36_000.0, log=True, unit="s", label="relaxed-AnPO time limit"),
    Param("pair_radius_km", float, 0.0, "constrain only anchor pairs closer than this: 0 = every anchor pair "
          "(paper Eq. 31); 0.8 = the authors' code (NEIGHBOR_THRESHOLD). A radius trades the guarantee for speed: "
          "check V_pair", low=0.0, high=1000.0, unit="km", label="constraint radius"),
    Param("eps_bar", str, "paper", "Phase I cost ε̄: 'paper' = Prop. 3 (the worst anchor set, exact); "
          "'authors-code' = as the authors' get_epsilon_nmw.m computes it (its loop keeps only the last factor of "
          "each product, so it under-counts Phase I; privacy is still measured with Prop. 3)",
          choices=EPS_BAR_RULES, label="ε̄ formula"),
    Param("s_rule", str, "nearest", "neighbourhood S_x of an anchor for ξ̂ (Eq. 29): 'nearest' = the Γ nearest "
          "records (paper); 'half-gamma' = the records within γ/2 (authors' code)", choices=S_RULES,
          label="S_x rule"),
    Param("cf_samples", int, 200, "alternative secrets per user for V_cf (0 = all of X)", low=0, high=100_000,
          label="V_cf samples per user"),
)


def _solve(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None,
           variant: str) -> Result:
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    kept: PandaDiagnostics = {"variant": variant}
    try:
        return _panda(problem, params, progress, time_limit, variant, t_start, timings, kept)
    except OutOfTime as e:
        aside = ("" if "feasible_Z" not in kept else f"; {KEPT_AT} the solved AnPO's rows over X "
                 "(its own pairs checked), without the bound and measurements that did not finish")
        return Result(variant_name(variant), params, None, "time limit", params["eps"], claim=CLAIM, timings=timings,
                      message=f"Time limit ({time_limit:g} s) while {e}: no mechanism is returned{aside}. Raise the "
                              "time limit, or lower K or the number of users.",
                      degenerate=f"No mechanism: the time limit came while {e}", diagnostics=kept)


class _Users(NamedTuple):
    """Phase I-1: the users' secrets, selection probabilities and anchor sets, their surrogates, and the union A."""

    secrets: np.ndarray
    w_users: np.ndarray  # (N, K): w_{x_n, x}
    member: np.ndarray  # (N, K): record x is in user n's anchor set
    redraws: int
    anchors: np.ndarray  # the union A of the anchor sets
    surrogate: np.ndarray  # nearest anchor of the user's own set, −1 for an empty set
    has: np.ndarray  # the user has a surrogate


class _Phase1Cost(NamedTuple):
    """Phase I-2 (a): ε̄·d for every pair of secrets, and the γ-balls."""

    true: np.ndarray  # Prop. 3: what Phase I really leaks; every measure uses it
    charged: np.ndarray  # what the LP charges (``eps_bar`` rule)
    nbr: np.ndarray
    mask: np.ndarray


class _AnchorPairs(NamedTuple):
    """Distances and Phase I costs between the anchors, and the pairs left unconstrained."""

    d_a: np.ndarray
    cost_a: np.ndarray  # as the LP charges it
    true_a: np.ndarray  # Prop. 3's
    far: np.ndarray  # at least ``pair_radius_km`` apart: no constraint, no ξ̂


def _panda(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None, variant: str,
           t_start: float, timings: dict[str, float], kept: PandaDiagnostics) -> Result:
    """PAnDA (module docstring); ``OutOfTime`` when the deadline passes outside an LP (``kept`` then holds the
    solved AnPO's rows over X, once there are some)."""
    deadline = None if time_limit is None else t_start + time_limit
    eps, delta = params["eps"], params["delta"]
    d, p = problem.d, problem.p
    d_max = float(d.max())
    if d_max <= 0:
        raise ParameterError("All secrets are at distance 0 from each other; PAnDA needs distinct locations.")
    sel = make_selection(variant, params["alpha"], params["lam"], d_max / params["gamma_div"], params["floor"],
                         params["w_min"])
    r_users, r_anchor, r_report, r_cf = (np.random.default_rng(s) for s in
                                         np.random.SeedSequence(params["seed"]).spawn(4))

    # Phase I-1: users, selection probabilities, anchor sets
    progress("anchor sampling", None)
    t0 = time.perf_counter()
    users = _draw_users(d, p, sel, params, r_users, r_anchor)
    anchors = users.anchors
    timings["anchors_s"] = time.perf_counter() - t0
    if len(anchors) == 0:
        return Result(variant_name(variant), params, None, "infeasible", eps, claim=CLAIM, timings=timings,
                      message="No user selected any anchor; raise α or N, or choose a larger floor.")

    # Phase I-2 (a): ε̄ for every pair, in closed form
    progress("Phase I cost ε̄", None)
    check_deadline(deadline, "sampling the anchor sets")
    t0 = time.perf_counter()
    costs = _phase1_costs(d, sel, params["eps_bar"], deadline)
    timings["eps_bar_s"] = time.perf_counter() - t0

    # (b, c): safety margins for anchor pairs
    t0 = time.perf_counter()
    pairs = _anchor_pairs(d, costs, anchors, params["pair_radius_km"])
    check_deadline(deadline, "listing the γ-balls")
    margins = safety_margins(d, costs.charged, p, anchors, sel, eps, delta, params["big_gamma"], params["ps_rule"],
                             progress, costs.nbr, costs.mask, params["s_rule"], deadline, used=~pairs.far)
    timings["xi_s"] = time.perf_counter() - t0
    if margins.timed_out:
        return _margins_time_limit(margins, anchors, params, variant, time_limit, timings)

    # (d): AnPO, tightened exponents, clipped at 0
    check_deadline(deadline, "computing the safety margins ξ̂")
    E, clipped = _tightened_exponents(pairs, margins.xi_hat, eps)
    weights = p[anchors] / p[anchors].sum()
    c_a = problem.c[anchors]
    check_deadline(deadline, "setting up the AnPO LP")
    out, fallback = _solve_anpo_or_fall_back(E, weights, c_a, params, _time_left(time_limit, t_start), progress)
    timings.update(lp_build_s=out.build_s, lp_solve_s=out.solve_s)
    lp_info = _lp_info(out, fallback, params, len(anchors), clipped, pairs.far)
    diagnostics = _solve_diagnostics(problem, params, variant, sel, users, margins, pairs, lp_info, deadline)
    if out.Z is None:
        return _no_anpo_solution(out, params, variant, time_limit, timings, diagnostics)
    z_a = out.Z

    # Z over all of X: each secret takes the row of its nearest anchor in the union A
    Z = z_a[np.argmin(d[:, anchors], axis=1)]
    # set aside in case a later step meets the deadline
    kept["feasible_Z"], kept["feasible_objective_m"] = Z, out.objective_m

    # relaxed AnPO: plain ε·d exponents over the same anchors, the lower bound of Prop. 10
    check_deadline(deadline, "summarising the AnPO solve")
    t0 = time.perf_counter()
    relaxed = _relaxed_bound(pairs.d_a, pairs.far, weights, c_a, out.objective_m, params,
                             _time_left(time_limit, t_start), progress)
    check_deadline(deadline, "solving the relaxed AnPO (lower bound)")
    timings["relaxed_s"] = time.perf_counter() - t0
    diagnostics["relaxed"] = relaxed

    # Phase II: each user reports from their surrogate's row
    t0 = time.perf_counter()
    user_rows, report = _phase2_reports(z_a, users, problem.k, r_report)
    timings["reports_s"] = time.perf_counter() - t0

    # measured: V_pair, V_cf and V_pure, and the losses
    t0 = time.perf_counter()
    diagnostics["violations"], diagnostics["utility"] = _measure(problem, users, user_rows, z_a, c_a, costs.true, out,
                                                                 params, r_cf, deadline)
    timings["evaluate_s"] = time.perf_counter() - t0
    diagnostics["users"] = _users_diagnostics(problem, users, user_rows, report)
    check_deadline(deadline, "measuring V_cf")
    message, degenerate = _verdict(params, len(anchors), out.rows, lp_info, diagnostics, users.secrets[users.has], d,
                                   costs.true, eps, delta)
    return Result(variant_name(variant), params, Z, out.status, eps, claim=CLAIM, timings=timings,
                  lp_size=out.size, objective_m=out.objective_m, bound_m=relaxed.get("bound_m"),
                  diagnostics=diagnostics, message=message, degenerate=degenerate)


def _draw_users(d: np.ndarray, p: np.ndarray, sel: Selection, params: dict[str, Any], r_users: np.random.Generator,
                r_anchor: np.random.Generator) -> _Users:
    """Phase I-1: the users' secrets drawn from the prior, their anchor sets and surrogates (``_Users``)."""
    secrets = sample_users(p, params["n_users"], r_users)
    w_users = sel.weights(d[secrets])
    member, redraws = sample_anchor_sets(w_users, r_anchor, params["empty"])
    anchors = np.flatnonzero(member.any(axis=0)).astype(np.int64)
    surrogate = nearest_member(d[secrets], member)
    return _Users(secrets, w_users, member, redraws, anchors, surrogate, surrogate >= 0)


def _phase1_costs(d: np.ndarray, sel: Selection, rule: str, deadline: float | None) -> _Phase1Cost:
    """Phase I-2 (a): ε̄·d in closed form, as Prop. 3 gives it and as the LP charges it under ``rule``, and the
    γ-balls (``_Phase1Cost``)."""
    true_cost = phase1_cost(d, sel, deadline=deadline)
    check_deadline(deadline, "computing the Phase I cost ε̄")
    cost = true_cost if rule == "paper" else phase1_cost_last_factor(d, sel, deadline=deadline)
    check_deadline(deadline, "computing the Phase I cost ε̄")
    nbr, mask = ball_lists(d, sel.gamma_km, deadline)
    return _Phase1Cost(true_cost, cost, nbr, mask)


def _anchor_pairs(d: np.ndarray, costs: _Phase1Cost, anchors: np.ndarray, radius: float) -> _AnchorPairs:
    """Distances and both Phase I costs between anchors, and the pairs at least ``radius`` km apart (none when
    ``radius`` is 0), which the LP leaves unconstrained (``_AnchorPairs``)."""
    ix = np.ix_(anchors, anchors)
    d_a = d[ix]
    far = (d_a >= radius) if radius > 0 else np.zeros_like(d_a, dtype=bool)
    np.fill_diagonal(far, False)
    return _AnchorPairs(d_a, costs.charged[ix], costs.true[ix], far)


def _margins_time_limit(margins: MarginReport, anchors: np.ndarray, params: dict[str, Any], variant: str,
                        time_limit: float | None, timings: dict[str, float]) -> Result:
    """The result when the deadline came while ξ̂ was computed: no mechanism, and how many true pairs were done."""
    c = margins.counts
    msg = (f"Time limit ({time_limit:g} s) while computing the safety margins ξ̂: "
           f"{c['true_pairs_evaluated']:,} of {c['true_pairs_needed']:,} true pairs evaluated, so no LP was "
           "solved; raise the time limit or lower K.")
    return Result(variant_name(variant), params, None, "time limit", params["eps"], claim=CLAIM, timings=timings,
                  message=msg, degenerate="No mechanism: the time limit came before the safety margins were done",
                  diagnostics=PandaDiagnostics(variant=variant, anchors=anchors, margins=dict(c)))


def _tightened_exponents(pairs: _AnchorPairs, xi_hat: np.ndarray, eps: float) -> tuple[np.ndarray, int]:
    """AnPO's exponents max(0, (ε − ε̄)·d − ξ̂), infinite (no constraint) on far pairs; returns them and how many
    ordered pairs the LP constrains with an exponent clipped to 0."""
    # anpo_exponents' own count includes the far pairs, which carry no constraint: count on the final E instead
    E, _ = anpo_exponents(pairs.d_a, pairs.cost_a, xi_hat, eps)
    E[pairs.far] = np.inf  # no constraint between anchors at least `radius` apart (their ξ̂ was not computed)
    clipped = int(((E == 0) & ~np.eye(len(E), dtype=bool)).sum())
    return E, clipped


def _lp_info(out: AnpoOutcome, fallback: str, params: dict[str, Any], n_anchors: int, clipped: int,
             far: np.ndarray) -> AnpoFacts:
    """``diagnostics["lp"]``: the AnPO solve (size, solver, status) and its clipped and unconstrained pairs."""
    return {"anchors": n_anchors, "rows_after_merge": out.rows, "pairs": out.pairs, "rounds": out.rounds,
            "size": out.size, "status": out.status,
            "solver": params["anpo_solver"] if not fallback else f"monolithic (colgen failed: {fallback})",
            "method": params["method"],
            "repair_mass_added": out.repair_mass, "clipped_pairs": clipped, "pair_radius_km": params["pair_radius_km"],
            "unconstrained_pairs": int(far.sum()),
            "clipped_fraction": clipped / max(1, n_anchors * (n_anchors - 1)), "message": out.message}


def _solve_diagnostics(problem: Problem, params: dict[str, Any], variant: str, sel: Selection, users: _Users,
                       margins: MarginReport, pairs: _AnchorPairs, lp_info: AnpoFacts,
                       deadline: float | None) -> PandaDiagnostics:
    """The diagnostics known once AnPO is solved: selection, anchor sets, margins, the LP, ε̄, ξ̂ and the budget
    split (``OutOfTime`` when the deadline has passed before the resample cost)."""
    n_anchors = len(users.anchors)
    diagnostics: PandaDiagnostics = {
        "variant": variant, "decay": VARIANT_NAMES[variant], "gamma_km": sel.gamma_km,
        "d_max_km": float(problem.d.max()), "floor": sel.floor, "floor_value": sel.floor_value,
        "anchors": users.anchors, "anchor_fraction": n_anchors / problem.k,
        "expected_anchor_set_size": float(users.w_users.sum(axis=1).mean()),
        "mean_anchor_set_size": float(users.member.sum(axis=1).mean()), "empty_rule": params["empty"],
        "empty_redraws": users.redraws, "margins": {**margins.counts, "p_s": margins.ps}, "lp": lp_info,
    }
    if params["empty"] == "resample":
        check_deadline(deadline, "summarising the AnPO solve")
        p_empty = empty_probability(problem.d, sel)
        diagnostics["resample_extra_cost_nats"] = float(np.log((1 - p_empty.min()) / (1 - p_empty.max())))
    off = ~np.eye(n_anchors, dtype=bool)
    diagnostics["eps_bar"] = _eps_bar_summary(pairs.d_a, pairs.cost_a, pairs.true_a, params["eps"], params["eps_bar"])
    diagnostics["xi_hat"] = {"hist": histogram(margins.xi_hat[off]), "unit": "nats (subtracted from ε·d)",
                             "computed_pairs": int(np.isfinite(margins.xi_hat[off]).sum()),
                             "fallback_pairs": int(margins.fallback_pair.sum())}
    diagnostics["budget_split"] = budget_split(pairs.d_a, pairs.cost_a, margins.xi_hat, params["eps"],
                                               used=~pairs.far)
    return diagnostics


def _no_anpo_solution(out: AnpoOutcome, params: dict[str, Any], variant: str, time_limit: float | None,
                      timings: dict[str, float], diagnostics: PandaDiagnostics) -> Result:
    """The result when the AnPO LP gave no rows: no mechanism, with the solver's reason (a time limit in words)."""
    message = out.message
    if out.status == "time limit":
        where = (out.message.removeprefix("time limit while ") if out.message.startswith("time limit while ")
                 else f"solving the AnPO LP ({out.message or 'HiGHS stopped'})")
        message = (f"Time limit ({time_limit:g} s) while {where}: no mechanism is returned. Raise the time limit, "
                   "or lower K or the number of users.")
    return Result(variant_name(variant), params, None, out.status, params["eps"], claim=CLAIM, timings=timings,
                  lp_size=out.size, diagnostics=diagnostics, message=message,
                  degenerate=f"No mechanism: the AnPO LP ended with status '{out.status}'")


def _phase2_reports(z_a: np.ndarray, users: _Users, k: int,
                    r_report: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Phase II: each user's reporting row (its surrogate's row of AnPO) and the output index it draws (−1: none)."""
    user_rows = _user_rows(z_a, users.anchors, users.surrogate, users.has, k)
    report = np.full(len(users.secrets), -1)
    if users.has.any():
        report[users.has] = sample_reports(user_rows[users.has], r_report)
    return user_rows, report


def _measure(problem: Problem, users: _Users, user_rows: np.ndarray, z_a: np.ndarray, c_a: np.ndarray,
             true_cost: np.ndarray, out: AnpoOutcome, params: dict[str, Any], r_cf: np.random.Generator,
             deadline: float | None) -> tuple[PandaViolations, PandaUtility]:
    """The release measured: V_pair and V_pure between users, V_cf against alternative secrets, and the losses;
    returns ``diagnostics["violations"]`` and ``diagnostics["utility"]``."""
    d, eps, has = problem.d, params["eps"], users.has
    check_deadline(deadline, "sampling the users' reports (Phase II)")
    v_pair, v_pure = user_pair_violations(user_rows, users.secrets, has, d, true_cost, eps)
    check_deadline(deadline, "measuring V_pair between users")
    v_cf = counterfactual_violations(z_a, users.anchors, users.member, users.secrets, d, true_cost, eps,
                                     params["cf_samples"], r_cf, deadline)
    c_users = problem.c[users.secrets]
    user_loss = float(np.einsum("ij,ij->i", c_users[has], user_rows[has]).mean()) if has.any() else None
    anchor_loss = float(np.einsum("ij,ij->i", c_a, z_a).mean())
    enforced: PairCheck = {**out.enforced, "exponent": "AnPO's own, max(0, (ε − ε̄)·d − ξ̂), on ordered anchor pairs"}
    violations: PandaViolations = {"V_pair": v_pair, "V_cf": v_cf, "V_pure": v_pure, "enforced": enforced}
    return violations, _utility(user_loss, anchor_loss, out.objective_m)


def _users_diagnostics(problem: Problem, users: _Users, user_rows: np.ndarray, report: np.ndarray) -> PandaUsers:
    """``diagnostics["users"]``: each user's secret, anchor set, surrogate, report and reporting row."""
    d, surrogate, has = problem.d, users.surrogate, users.has
    return {
        "secret": users.secrets, "anchor_sets": [np.flatnonzero(row) for row in users.member],
        "surrogate": surrogate, "surrogate_km": np.where(has, d[users.secrets, np.maximum(surrogate, 0)], -1.0),
        "report_y": report, "report_x": np.where(report >= 0, problem.y_index[np.maximum(report, 0)], -1),
        "rows": user_rows, "note": "surrogate/report −1: empty anchor set (no output); report_y indexes Y"}


def _user_rows(z_a: np.ndarray, anchors: np.ndarray, surrogate: np.ndarray, has: np.ndarray, k: int) -> np.ndarray:
    """Each user's reporting row: its surrogate anchor's row of AnPO (zeros for a user without anchors)."""
    pos = np.full(k, -1)
    pos[anchors] = np.arange(len(anchors))
    rows = np.zeros((len(surrogate), z_a.shape[1]))
    rows[has] = z_a[pos[surrogate[has]]]
    return rows


def _utility(user_loss: float | None, anchor_loss: float, anpo_objective: float | None) -> PandaUtility:
    """The three losses PAnDA can be scored by (metres), each with what it measures."""
    return {"user_level_m": user_loss, "anchor_level_m": anchor_loss, "anpo_objective_m": anpo_objective,
            "labels": {"user_level_m": "(1/N) Σ_n Σ_y c(x_n, y) z(x̂_n, y): what users experience",
                       "anchor_level_m": "uniform over anchors Σ_y c(a, y) z(a, y): what the authors' code reports",
                       "anpo_objective_m": "prior-weighted over anchors: the AnPO objective (Eq. 32)"}}


def _time_left(time_limit: float | None, t_start: float) -> float | None:
    """Seconds left of ``time_limit`` since ``t_start`` (at least 0.01), None without a limit."""
    return None if time_limit is None else max(0.01, time_limit - (time.perf_counter() - t_start))


def _solve_anpo_or_fall_back(E: np.ndarray, weights: np.ndarray, c_a: np.ndarray, params: dict[str, Any],
                             left: float | None, progress: Progress) -> tuple[Any, str]:
    """AnPO with the chosen solver; when the structured solver fails, stalls or breaks the LP's own pairs, the
    same LP solved monolithically. Returns the outcome and why the fallback ran ('' when it did not)."""
    t_start = time.perf_counter()
    out = solve_anpo(E, weights, c_a, how=params["anpo_solver"], method=params["method"], time_limit=left,
                     progress=progress, max_rows=params["max_lp_rows"])
    if out.status == "time limit":  # the time is up: no fallback, and an unfinished point is no mechanism
        out.Z = None
        return out, ""
    broken = out.Z is None and out.status == "error"
    broken |= out.Z is not None and (out.status != "optimal" or out.enforced.get("violated_pairs", 0) > 0)
    if not (broken and params["anpo_solver"] == "colgen"):
        return out, ""
    fallback = f"status {out.status}, {out.enforced.get('violated_pairs', 0)} enforced pairs broken; {out.message}"
    first = out
    out = solve_anpo(E, weights, c_a, how="monolithic", method=params["method"],
                     time_limit=None if left is None else max(0.01, left - (time.perf_counter() - t_start)),
                     progress=progress, max_rows=params["max_lp_rows"])
    out.build_s += first.build_s
    out.solve_s += first.solve_s
    return out, fallback


def _eps_bar_summary(d_a: np.ndarray, cost_a: np.ndarray, true_a: np.ndarray, eps: float, rule: str) -> dict[str, Any]:
    """ε̄ over ordered anchor pairs as the LP charged it (``rule``) and as Prop. 3 gives it, relative to ε."""
    pos_d = ~np.eye(len(d_a), dtype=bool) & (d_a > 0)
    ratio = (cost_a / np.where(d_a > 0, d_a, 1.0) / eps)[pos_d]
    true_ratio = (true_a / np.where(d_a > 0, d_a, 1.0) / eps)[pos_d]
    out = {"hist_ratio_to_eps": histogram(ratio, log=True),
           "median_km_inv": float(np.median(ratio) * eps) if len(ratio) else None,
           "fraction_at_least_eps": float((ratio >= 1).mean()) if len(ratio) else None,
           "rule": rule,
           "paper_fraction_at_least_eps": float((true_ratio >= 1).mean()) if len(ratio) else None,
           "pairs": "ordered anchor pairs; ε̄ as charged by the LP (rule), and Prop. 3's"}
    if rule != "paper" and len(ratio):
        under = true_ratio > 0
        out["median_charged_over_paper"] = float(np.median(ratio[under] / true_ratio[under]))
    return out


def _relaxed_bound(d_a: np.ndarray, far: np.ndarray, weights: np.ndarray, c_a: np.ndarray,
                   anpo_objective: float | None, params: dict[str, Any], left: float | None,
                   progress: Progress) -> RelaxedBound:
    """Relaxed AnPO (plain ε·d exponents over the same anchors and pairs): the lower bound of Prop. 10."""
    n = len(d_a)
    if not 0 < n <= params["relaxed_max_rows"]:
        return {"solved": False, "message": f"relaxed AnPO (lower bound) skipped: |A| = {n} anchors > "
                                            f"relaxed_max_rows = {params['relaxed_max_rows']}"}
    e_relaxed = params["eps"] * d_a
    e_relaxed[far] = np.inf  # same pair set as the AnPO it bounds
    overall = left is not None and left < params["relaxed_time_limit"]  # the solve's deadline comes first
    left = params["relaxed_time_limit"] if left is None else min(left, params["relaxed_time_limit"])
    r = solve_anpo(e_relaxed, weights, c_a, how=params["anpo_solver"], method=params["method"],
                   time_limit=left, progress=progress, phase="relaxed AnPO")
    if overall and r.status == "time limit":  # stopped by the solve's deadline, not by relaxed_time_limit
        raise OutOfTime("solving the relaxed AnPO (lower bound)")
    # dropping every pair constraint is also a relaxation: each anchor takes its cheapest output
    trivial = float(weights @ c_a.min(axis=1))
    lb = trivial if r.bound_m is None else max(r.bound_m, trivial)
    relaxed: RelaxedBound = {
        "solved": r.bound_m is not None, "status": r.status, "objective_m": r.objective_m,
        "bound_m": lb, "solver_bound_m": r.bound_m, "no_constraint_bound_m": trivial,
        "bound_source": "solver" if r.bound_m is not None and r.bound_m >= trivial else "no-constraint",
        "size": r.size, "solver": params["anpo_solver"],
        "ratio": (anpo_objective / lb) if lb and anpo_objective is not None and lb > 0 else None,
        "note": "bound_m: the larger of the solver's certified lower bound on the relaxed optimum and the "
                "no-constraint bound Σ p_a min_y c_ay, hence a lower bound on AnPO's optimum (Prop. 10); "
                "ratio = AnPO objective / bound_m (≥ the true ratio unless status is optimal)"}
    if r.bound_m is None:
        relaxed["message"] = (f"relaxed AnPO gave no bound (status {r.status}{': ' + r.message if r.message else ''}"
                              "); the no-constraint bound is shown")
    return relaxed


def _verdict(params: dict[str, Any], n_anchors: int, rows: int, lp_info: AnpoFacts, diag: PandaDiagnostics,
             secrets: np.ndarray, d: np.ndarray, true_cost: np.ndarray, eps: float, delta: float) -> tuple[str, str]:
    """Plain words on what happened (message) and, when the release is degenerate, a short verdict."""
    notes, verdicts = [], []
    if "colgen failed" in lp_info["solver"]:
        notes.append(f"AnPO: {lp_info['solver']}")
    eb = diag["eps_bar"]
    share = eb.get("paper_fraction_at_least_eps") or 0.0
    if params["eps_bar"] != "paper":
        ratio = eb.get("median_charged_over_paper")
        notes.append("the LP charged Phase I with ε̄ as the authors' code computes it (only the last factor of each "
                     "product)" + (f", a median {ratio:.0%} of Prop. 3's value on anchor pairs" if ratio is not None
                                   else "") + "; every privacy measure here uses Prop. 3's ε̄")
    if params["pair_radius_km"] > 0:
        notes.append(f"only anchor pairs closer than {params['pair_radius_km']:g} km are constrained "
                     f"({lp_info['unconstrained_pairs']:,} ordered anchor pairs are not)")
    if rows == 1 and n_anchors > 1:
        why = (f"Phase I alone costs ε̄ ≥ ε on {share:.0%} of anchor pairs (Prop. 3), their exponents clip to 0 and "
               "the zero-exponent pairs chain every anchor together" if share > 0 else
               "the zero-exponent pairs chain every anchor together")
        notes.append(f"all {n_anchors} anchor rows are forced equal, so every user gets the same distribution: {why}")
        verdicts.append(f"Collapsed: every user reports the same distribution (all {n_anchors} anchor rows merged)")
    elif rows < n_anchors:
        notes.append(f"{n_anchors} anchor rows merged into {rows} LP rows (zero exponents force equal rows)")
    if len(secrets) > 1:
        i, j = np.nonzero(~np.eye(len(secrets), dtype=bool))
        a, b = secrets[i], secrets[j]
        other = a != b
        over = true_cost[a[other], b[other]] >= eps * d[a[other], b[other]]
        if over.any():
            notes.append(f"Phase I alone (the uploaded anchor set) leaks at least ε·d on {int(over.sum()):,} of "
                         f"{len(over):,} ordered user pairs ({over.mean():.1%}); no Phase II can make those pairs "
                         "ε-indistinguishable, and V_pair counts them")
    vp, vc = diag["violations"]["V_pair"], diag["violations"]["V_cf"]
    if vp["checked"]:
        notes.append(f"measured: V_pair {vp['violated']:,}/{vp['checked']:,}, V_cf {vc['violated']:,}/"
                     f"{vc['checked']:,}, V_pure {diag['violations']['V_pure']['violated']:,}/"
                     f"{diag['violations']['V_pure']['checked']:,}")
        if claim_refuted(vp["violated"], vp["checked"], delta):
            verdicts.append(f"Claim not met: {vp['violated']:,} of {vp['checked']:,} user pairs "
                            f"({vp['violated'] / vp['checked']:.0%}) break their (ε, δ)-PmDP bound (δ = {delta:g})")
    notes.append(diag["relaxed"].get("message", ""))
    return "; ".join(n for n in notes if n), "; ".join(verdicts)


def variant_name(variant: str) -> str:
    """Registry name of a variant: ``e`` -> ``panda-e``."""
    return f"panda-{variant}"


def selection_map(problem: Problem, params: dict[str, Any], secret: int, variant: str = "e") -> np.ndarray:
    """w_{x_n, x} for a user at secret index ``secret``: each record's anchor-selection probability, shape (K,).

    ``params`` are validated PAnDA parameters (``Result.params``); for the dashboard's selection map. Its sum is
    E|A_n|, the expected anchor-set size.
    """
    sel = make_selection(variant, params["alpha"], params["lam"], float(problem.d.max()) / params["gamma_div"],
                         params["floor"], params["w_min"])
    return sel.weights(problem.d[secret])


def _presets(variant: str) -> tuple[Preset, Preset]:
    """PAnDA-``variant`` as its paper writes it (the defaults) and as the authors' code ran it."""
    name = f"PAnDA-{variant}"
    paper = Preset("paper", f"{name} as in the paper (defaults)",
                   "Prop. 3's exact Phase I cost ε̄, every anchor pair constrained (Eq. 31), S_x = the Γ nearest "
                   "records (Eq. 29).")
    code = Preset(
        "authors-code", f"{name} as in the authors' code",
        "The authors' MATLAB code (paopao128/CCS-2025-PAnDA): ε̄ from get_epsilon_nmw.m, whose loop keeps only the "
        "last factor of each product (it under-counts Phase I); mDP constraints only between anchors closer than "
        "0.8 km; S_x = the records within γ/2; P_S = 1; a small floor 1e-4 beyond γ. Privacy is still measured with "
        "Prop. 3's ε̄, so V_pair shows what these choices cost. Not reproduced: the code's own decay constants (e.g. "
        "e^(−0.4λd)) and its γ = d_max/c with c from 80 to 220 depending on K.",
        params=(("eps_bar", "authors-code"), ("pair_radius_km", 0.8), ("s_rule", "half-gamma"), ("ps_rule", "one"),
                ("floor", "w_min"), ("w_min", 1e-4), ("max_lp_rows", 2000), ("anpo_solver", "monolithic")))
    return paper, code


def _make(variant: str, label: str, info: str) -> Mechanism:
    def solve(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None) -> Result:
        return _solve(problem, params, progress, time_limit, variant)

    return register(Mechanism(name=variant_name(variant), label=label, paper=PAPER, info=info, params=_PARAMS,
                              solve=solve, family="panda", exact=False, max_k=5000, diagnostics=PandaDiagnostics,
                              presets=_presets(variant)))


PANDA_E = _make("e", "PAnDA-e (exponential decay)",
                "Anchors selected with probability α·e^(−λd) within γ; strongly localised, smallest anchor sets. "
                "One AnPO LP over the anchors with exponents (ε − ε̄)·d − ξ̂; users report from their nearest anchor.")
PANDA_P = _make("p", "PAnDA-p (power-law decay)",
                "Anchors selected with probability α/(1 + d^λ) within γ; heavier tail (the paper's recommended "
                "default). One AnPO LP over the anchors; users report from their nearest anchor.")
PANDA_L = _make("l", "PAnDA-l (logistic decay)",
                "Anchors selected with probability 2α/(1 + e^(λd)) within γ; smooth decay, densest anchor sets. "
                "One AnPO LP over the anchors; users report from their nearest anchor.")
