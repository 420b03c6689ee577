"""LP+EM (ConstOPT, Imola et al. UAI 2022, as the PAnDA authors reimplement it; spec 000 §3.4).

An LP optimises the columns of a *candidate set* of outputs (those where the exponential mechanism loses most
utility); the exponential mechanism (ε/2 exponent) keeps its columns for every other output. As in the authors'
artifact, only the r secrets nearest to a candidate output get LP variables for it (every ordered pair among them
is an mDP row); all other entries keep their EM values, which turns each free–fixed pair into an exact bound on
the free entry. Each secret's free entries keep EM's total on them, so rows stay distributions.

Scaling at paper distances: a neighbourhood of 38 secrets spans up to 20 km of Rome, so e^{ε·d} reaches e^{100}
and EM's entries 1e-20. Capping such a coefficient (as an explicit LP must, HiGHS refuses values above 1e15)
*tightens* the row, and then EM itself, which the LP must contain, is cut off: the LP was infeasible. Instead each
free entry is written relative to its EM value, z = em·u, so EM is u = 1, and a pair row reads
u_i ≤ e^{ε·d_ij + ln em_j − ln em_i}·u_j. Capping that coefficient at ``COEF_CAP`` still tightens the row, but u = 1
satisfies it (the capped coefficient is ≥ 1), so the LP stays feasible and every LP point is ε-mDP. Leaving such
rows out instead (a relaxation) lets the LP move mass across a pair by factors above 1e9, which the exact repair
then pays for in loss. Two more tightenings, both satisfied by EM, keep HiGHS's numbers in range: an entry whose
EM value is below ``TINY_EM`` stays at it, and no entry grows beyond ``U_MAX`` × EM. HiGHS's simplex is the
default (its interior point method ended "imprecise" on some Rome samples); if one method fails the other is
tried. The LP solution is checked and repaired exactly (Lipschitz repair of each column, then a cone-preserving
fix of the row sums), which only solver tolerances make necessary; the breach found before the repair is reported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ..contract import Mechanism, Param, Progress, Result, epsilon_param, register
from ..deadline import OutOfTime, check_deadline, deadline_of, time_left
from ..lp.cone import RepairFacts, repair_into_cone
from ..lp.highs import COEF_CAP, INF, LPOutcome, solve_lp
from ..problem import Problem
from .em import em_matrix

LOG_CAP = float(np.log(COEF_CAP))
TINY_EM = 1e-12  # EM entries below this stay fixed (u = 1): they carry no loss worth optimising
U_MAX = 1e6  # a free entry may grow to at most U_MAX × its EM value (EM satisfies it; keeps the LP well scaled)
METHODS = ("simplex", "ipm")


class LpEmDiagnostics(RepairFacts, total=False):
    """What an LP-EM result reports: the candidate LP (its outputs per secret, neighbours, pairs, free entries) and
    the exact repair of its point (``breach_before_repair``: the largest log-ratio above ε·d before it, 0: none)."""

    candidates: NDArray[np.int64]
    candidate_count: int
    neighbours: int
    local_pairs: int
    pairs_capped: int
    free_entries: int


def _solve_lp_em(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None) -> Result:
    deadline = deadline_of(time_limit)
    timings: dict[str, float] = {}
    try:
        return _lp_em(problem, params, progress, time_limit, deadline, timings)
    except OutOfTime as e:  # no LP point has been checked: no Z
        return Result("lp-em", params, None, "time limit", params["eps"], timings=timings,
                      message=f"Time limit ({time_limit:g} s) while {e}: no mechanism is returned, since an LP point "
                              "is released only after its exact ε-mDP check and repair. Raise the time limit, or "
                              "lower `candidates`, `neighbours` or K.")


@dataclass(frozen=True)
class _CandidateLP:
    """The LP over the free entries of the candidate outputs, z[sec[j], col[j]] = e_free[j]·u_j (EM is u = 1): bounds
    on u, the pair rows u_i ≤ coef·u_j followed by the row sums, and the cost per unit of u."""

    cand: NDArray[np.int64]  # candidate outputs (indices in Y), sorted
    r: int  # secrets per candidate whose entries are free
    sec: NDArray[np.int64]  # secret of each free entry
    col: NDArray[np.int64]  # output of each free entry
    e_free: NDArray[np.float64]  # EM value of each free entry (the scale of its u)
    u_lo: NDArray[np.float64]  # exact bounds from the fixed entries, and the scaling limits
    u_hi: NDArray[np.float64]
    A: sp.csc_matrix
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    cost: NDArray[np.float64]  # expected loss per unit of u
    n_pairs: int
    n_capped: int  # pair rows whose coefficient was capped at COEF_CAP


def _lp_em(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None,
           deadline: float | None, timings: dict[str, float]) -> Result:
    """LP+EM (module docstring); ``OutOfTime`` once ``deadline`` passes outside the LP."""
    eps = params["eps"]
    t0 = time.perf_counter()
    W = problem.p[:, None] * problem.c
    em = em_matrix(problem, eps, "half")
    Es = eps * problem.d
    lp = _candidate_lp(problem, W, em, Es, params, deadline)
    timings["build_s"] = time.perf_counter() - t0
    scaled = lp.cost / max(float(lp.cost.max()), 1e-300)
    check_deadline(deadline, "building the candidate LP")
    out, notes = _solve_or_switch_method(lp, scaled, params["method"], deadline, progress)
    timings["solve_s"] = out.solve_s
    diag: LpEmDiagnostics = {"candidates": lp.cand, "candidate_count": len(lp.cand), "neighbours": lp.r,
                            "local_pairs": lp.n_pairs, "pairs_capped": lp.n_capped, "free_entries": len(lp.sec)}
    if out.x is None:
        return _no_lp_solution(out, notes, params, time_limit, deadline, timings, diag)
    t0 = time.perf_counter()
    progress("check and repair", None)
    Z = em.copy()
    # within the exact bounds (u_lo > 0): a solver's 0 under a positive neighbour would be an infinite breach
    Z[lp.sec, lp.col] = lp.e_free * np.clip(out.x, lp.u_lo, lp.u_hi)
    Z, facts = repair_into_cone(Z, Es, W, report_breach=True, deadline=deadline)
    # (mypy) every RepairFacts is an LpEmDiagnostics (a subclass whose added keys are all optional)
    diag.update(cast(LpEmDiagnostics, facts))
    timings["repair_s"] = time.perf_counter() - t0
    objective = float(np.sum(W * Z))
    if facts["entries_raised"]:
        notes.append(f"within solver tolerances the LP solution broke ε-mDP by a log-ratio of "
                     f"{facts['breach_before_repair']:.3g}; it was repaired exactly ({facts['entries_raised']} "
                     "entries raised)")
    msg = "; ".join(notes)
    return Result("lp-em", params, Z, out.status, eps, timings=timings, lp_size=out.size, objective_m=objective,
                  message=msg, diagnostics=diag)


def _candidate_lp(problem: Problem, W: NDArray[np.float64], em: NDArray[np.float64], Es: NDArray[np.float64],
                  params: dict[str, Any], deadline: float | None) -> _CandidateLP:
    """Build the LP over the candidate outputs (``_CandidateLP``): which entries are free, their exact bounds from
    the fixed ones, the pair rows and the row sums; ``OutOfTime`` once ``deadline`` passes."""
    # utility sensitivity: each output's share of EM's expected loss; the largest form the candidate set
    share = (W * em).sum(axis=0)
    n_cand = min(params["candidates"], problem.m)
    cand = np.sort(np.argsort(-share, kind="stable")[:n_cand])
    r = min(params["neighbours"], problem.k)
    # free LP entries: z[x, y] for y in the candidate set and x among the r secrets nearest to y; every other
    # entry keeps its EM value. Pairs of free entries are LP rows; a pair of a free and a fixed entry is a bound
    # on the free one (max/min over every fixed secret, exact); fixed pairs hold because EM columns are ε-mDP.
    near = np.sort(np.argsort(problem.d[problem.y_index[cand]], axis=1, kind="stable")[:, :r], axis=1)  # (C, r)
    log_e, u_lo, u_hi = _free_entry_bounds(em, cand, near, Es, deadline)
    A_pairs, n_capped = _pair_rows(near, log_e, Es)
    # row sums: for each secret x in some neighbourhood, its free entries keep EM's total on them; written
    # relative to that total so every coefficient is a share ≤ 1
    sec = near.ravel()
    e_free = np.exp(log_e.ravel())
    nv = len(sec)
    used, row_of = np.unique(sec, return_inverse=True)
    target = np.bincount(row_of, weights=e_free, minlength=len(used))
    S = sp.csr_matrix((e_free / target[row_of], (row_of, np.arange(nv))), shape=(len(used), nv))
    n_pairs = A_pairs.shape[0]
    col = cand[np.repeat(np.arange(n_cand), r)]
    return _CandidateLP(
        cand=cand, r=int(r), sec=sec, col=col, e_free=e_free, u_lo=u_lo.ravel(), u_hi=u_hi.ravel(),
        A=sp.vstack([A_pairs, S]).tocsc(), lower=np.concatenate([np.full(n_pairs, -INF), np.ones(len(used))]),
        upper=np.concatenate([np.zeros(n_pairs), np.ones(len(used))]), cost=W[sec, col] * e_free,
        n_pairs=int(n_pairs), n_capped=n_capped)


def _free_entry_bounds(em: NDArray[np.float64], cand: NDArray[np.int64], near: NDArray[np.int64],
                       Es: NDArray[np.float64], deadline: float | None
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per free entry (C, r): ln of its EM value, and the bounds on u = z / EM that the fixed entries impose
    exactly, tightened by z ≤ 1 and u ≤ ``U_MAX`` (u fixed at 1 below ``TINY_EM``); returns (ln EM, u_lo, u_hi)."""
    C, n = len(cand), len(em)
    free = np.zeros((C, n), dtype=bool)
    free[np.arange(C)[:, None], near] = True
    with np.errstate(divide="ignore"):
        log_em = np.log(em[:, cand].T)  # (C, n): ln EM of candidate column c at secret x
    log_fixed = np.where(free, -np.inf, log_em)  # −inf on free entries
    log_lo = np.empty(near.shape)
    log_hi = np.empty(near.shape)
    for c in range(C):  # one vectorised (r × n) step per candidate output (≤ |Y|)
        check_deadline(deadline, f"building the bounds of candidate output {c + 1} of {C}")
        log_lo[c] = np.max(log_fixed[c][None, :] - Es[:, near[c]].T, axis=1)  # z_i ≥ e^{−E_ji} z_j
        log_hi[c] = np.min(np.where(free[c], np.inf, log_fixed[c])[None, :] + Es[near[c]], axis=1)  # ≤ e^{E_ij} z_j
    log_e = np.take_along_axis(log_em, near, axis=1)  # (C, r): ln EM of each free entry, the scale of its u
    # an entry whose EM value is below TINY_EM carries no loss worth optimising and would only spread the LP's
    # coefficients over many orders of magnitude: it stays at its EM value (u fixed at 1)
    active = log_e >= np.log(TINY_EM)
    # z ≤ 1, and growth limited to U_MAX × EM (a tightening that EM satisfies: keeps the LP well scaled)
    u_hi = np.exp(np.minimum(np.minimum(log_hi, 0.0) - log_e, np.log(U_MAX)))
    u_lo = np.minimum(np.exp(log_lo - log_e), u_hi)
    return log_e, np.where(active, u_lo, 1.0), np.where(active, u_hi, 1.0)


def _pair_rows(near: NDArray[np.int64], log_e: NDArray[np.float64],
               Es: NDArray[np.float64]) -> tuple[sp.csr_matrix, int]:
    """The mDP rows u_i − coef·u_j ≤ 0 between the free entries of each candidate column, the coefficient capped at
    ``COEF_CAP``; returns the rows (over all C·r free entries) and how many were capped."""
    C, r = near.shape
    var = (np.arange(C)[:, None] * r + np.arange(r)[None, :])  # variable index of (c, slot)
    a_, b_ = np.nonzero(~np.eye(r, dtype=bool))
    pi, pj = near[:, a_].ravel(), near[:, b_].ravel()
    log_coef = (Es[pi, pj] + log_e[:, b_].ravel() - log_e[:, a_].ravel())  # u_i ≤ e^{log_coef}·u_j
    capped = log_coef > LOG_CAP  # tightened to COEF_CAP ≥ 1: u = 1 (EM) still satisfies the row
    vi, vj = var[:, a_].ravel(), var[:, b_].ravel()
    coef = np.exp(np.minimum(log_coef, LOG_CAP))
    n_pairs = len(vi)
    rows = np.arange(n_pairs)
    A_pairs = sp.csr_matrix((np.concatenate([np.ones(n_pairs), -coef]),
                             (np.concatenate([rows, rows]), np.concatenate([vi, vj]))), shape=(n_pairs, C * r))
    return A_pairs, int(capped.sum())


def _solve_or_switch_method(lp: _CandidateLP, scaled: NDArray[np.float64], method: str, deadline: float | None,
                            progress: Progress) -> tuple[LPOutcome, list[str]]:
    """Solve the candidate LP with ``method``; on numerical trouble, with the other method in the time left.
    Returns the outcome and the notes for the message (why the other method ran)."""
    out = solve_lp(scaled, lp.A, lp.lower, lp.upper, lp.u_lo, lp.u_hi, method=method,
                   time_limit=time_left(deadline), progress=progress, phase="LP over candidate outputs")
    notes = []
    left = time_left(deadline)
    if out.status in ("error", "unbounded", "infeasible") and (left is None or left > 0):
        # numerical trouble: EM (u = 1) is always feasible; the other method gets what is left of the time
        other = METHODS[1 - METHODS.index(method)]
        first = out
        out = solve_lp(scaled, lp.A, lp.lower, lp.upper, lp.u_lo, lp.u_hi, method=other, time_limit=left,
                       progress=progress, phase=f"LP over candidate outputs ({other})")
        out.solve_s += first.solve_s
        notes.append(f"HiGHS {method} ended with status {first.status} ({first.message}); solved again with {other}")
    return out, notes


def _no_lp_solution(out: LPOutcome, notes: list[str], params: dict[str, Any], time_limit: float | None,
                    deadline: float | None, timings: dict[str, float], diag: LpEmDiagnostics) -> Result:
    """The result when the candidate LP gave no point: a time limit when the time is up (whatever HiGHS said),
    otherwise the solver's status as numerical trouble."""
    left = time_left(deadline)
    if out.status == "time limit" or (left is not None and left <= 0):  # the time is up, whatever HiGHS said
        said = "" if out.status == "time limit" else f" (HiGHS: {out.status}, {out.message})"
        msg = "; ".join([*notes, f"Time limit ({time_limit:g} s) in the candidate LP{said}, after "
                         f"{out.solve_s:.2f} s in HiGHS: no mechanism is returned. Raise the time limit, or "
                         "lower `candidates` or `neighbours`."])
        return Result("lp-em", params, None, "time limit", params["eps"], timings=timings, lp_size=out.size,
                      message=msg, diagnostics=diag)
    msg = "; ".join([*notes, f"the candidate LP ended with status {out.status} ({out.message}). EM (u = 1) "
                     "is feasible for it, so this is numerical trouble in the solver: try fewer neighbours or "
                     "candidates, or use `em`."])
    return Result("lp-em", params, None, out.status, params["eps"], timings=timings, lp_size=out.size, message=msg,
                  diagnostics=diag)


LP_EM = register(Mechanism(
    name="lp-em", label="LP + EM (ConstOPT)", family="lp",
    paper="Imola, Kasiviswanathan, White, Chaudhuri: Balancing utility and scalability in metric differential "
          "privacy (UAI 2022); as reimplemented in PAnDA (CCS 2025) §4.3",
    info="An LP optimises the outputs where the exponential mechanism loses most, on the r secrets nearest to "
         "each; EM (ε/2) keeps every other entry. The result is checked and repaired to be exactly ε-mDP.",
    params=(epsilon_param(),
            Param("candidates", int, 20, "number of outputs the LP optimises (largest share of EM's loss); the "
                  "authors' artifact optimises every output (set it ≥ |Y|: lower loss, several times slower)", low=1,
                  high=10000, label="candidate outputs"),
            Param("neighbours", int, 38, "r: mDP rows of a candidate output link its r nearest secrets pairwise "
                  "(artifact: 38)", low=2, high=10000, label="neighbours r"),
            Param("method", str, "simplex", "HiGHS algorithm (the other one is tried if it fails)",
                  choices=METHODS, label="LP method")),
    solve=_solve_lp_em, max_k=2000, diagnostics=LpEmDiagnostics))
