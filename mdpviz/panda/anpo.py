"""The AnPO linear program over PAnDA's anchors (paper Eqs. 31–36), reduced exactly and solved with HiGHS.

Constraints are ``z_i,y ≤ e^{E_ij} z_j,y`` for ordered anchor pairs, with E_ij = max(0, (ε − ε̄_ij)·d_ij − ξ̂_ij)
(tightened AnPO; negative exponents clipped to 0, paper §3.2 patch) or E_ij = ε·d_ij (relaxed AnPO, the lower bound
of Prop. 10). Two exact reductions come before the solver:

1. **Equal rows merge.** E_ij = E_ji = 0 forces z_i = z_j, so the connected components of the zero-exponent
   graph become single rows (weight = summed prior, cost = prior-weighted mean), and the exponent between two
   components is the smallest exponent between their members.
2. **Implied pairs drop.** A pair (i, j) with E_ik + E_kj ≤ E_ij for some k is implied by chaining through k
   (exponents between distinct components are positive, so the chain argument terminates).

Solvers (``how``): ``colgen`` (default) is the project's exact structured solver
(``mdpviz.lp.structured.solve_structured``: column generation over the cone of each output, with a certified
Lagrangian lower bound; on a time limit it returns a feasible, private, non-optimal Z and the bound);
``monolithic`` hands every non-implied pair to HiGHS at once (``mdpviz.lp.mdp_lp.solve_mdp_lp``); ``cuts`` starts
from each row's nearest pairs, solves, adds the most violated pairs and repeats until none is violated.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from ..contract import PairCheck
from ..deadline import OutOfTime, check_deadline
from ..errors import ParameterError, SolverError
from ..lp.cone import exponent_closure, repair_into_cone
from ..lp.mdp_lp import implied_free_pairs, solve_mdp_lp
from ..lp.structured import solve_structured
from ..metrics import TOLERANCE, cone_breaches
from ..progress import Progress, no_progress

SOLVERS = ("colgen", "monolithic", "cuts")


@dataclass
class AnpoOutcome:
    """A solved AnPO: anchor rows, status, objective and what the solve cost.

    Attributes:
        Z: (n_anchors, M) rows, or None when the LP did not finish.
        status: HiGHS status of the last solve (``optimal``, ``time limit``...) or ``cut limit``.
        objective_m: Σ_x weight_x Σ_y c_xy z_xy at the optimum, metres (weights as given).
        rows: LP rows after merging equal rows; pairs: constrained pairs in the last LP.
        size: variables, constraints, nonzeros of the last LP. rounds: cutting-plane rounds.
        build_s, solve_s: seconds building matrices / inside HiGHS (summed over rounds).
        repair_mass: largest row-sum excess added by the final repair (solver round-off).
        enforced: violations of the LP's own constraints on the returned rows (should be 0 of n).
        bound_m: a certified lower bound on the optimum (colgen's Lagrangian bound; the objective when a
            monolithic or cutting-plane solve is optimal), metres.
    """

    Z: NDArray[np.float64] | None
    status: str
    objective_m: float | None
    rows: int
    pairs: int = 0
    size: dict[str, int] = field(default_factory=dict)
    rounds: int = 0
    build_s: float = 0.0
    solve_s: float = 0.0
    repair_mass: float = 0.0
    enforced: PairCheck = field(default_factory=lambda: PairCheck(violated_pairs=0, checked_pairs=0))
    message: str = ""
    bound_m: float | None = None


def anpo_exponents(d_a: NDArray[np.float64], cost_a: NDArray[np.float64], xi_a: NDArray[np.float64],
                   eps: float) -> tuple[NDArray[np.float64], int]:
    """Tightened exponents E = max(0, (ε − ε̄)·d − ξ̂) over anchors (nats) and how many off-diagonal were clipped.

    ``xi_a`` may be NaN where ε̄ ≥ ε (no room: the exponent is 0 whatever ξ̂ is).
    """
    xi_a = np.where(np.isinf(xi_a), np.nan, xi_a)
    raw = eps * d_a - cost_a - np.nan_to_num(xi_a, nan=0.0)
    off = ~np.eye(len(d_a), dtype=bool)
    clipped = int(((raw < 0) | ((eps * d_a - cost_a) <= 0))[off].sum())
    E = np.maximum(raw, 0.0)
    E[(eps * d_a - cost_a) <= 0] = 0.0
    np.fill_diagonal(E, 0.0)
    return E, clipped


def merge_equal_rows(E: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Components of the zero-exponent graph and the exponent matrix between components (min over members)."""
    n = len(E)
    zero = (E <= 0) & ~np.eye(n, dtype=bool)
    # only a zero exponent in both directions forces equality (one direction gives z_i ≤ z_j only)
    _, label = connected_components(csr_matrix(zero & zero.T), directed=False)
    order = np.argsort(label, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(label[order]) != 0])
    Fc = np.minimum.reduceat(np.minimum.reduceat(E[np.ix_(order, order)], starts, axis=1), starts, axis=0)
    np.fill_diagonal(Fc, 0.0)
    return label.astype(np.int64), Fc


def violated_pairs(Z: NDArray[np.float64], E: NDArray[np.float64],
                   tolerance: float = TOLERANCE) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """Ordered pairs (i, j) with some y: ln Z[i,y] − ln Z[j,y] > E_ij + ln(1+τ), and the number of such triples."""
    b = cone_breaches(Z, E, tolerance)
    return b.i, b.j, b.triples


def _nearest_pairs(F: NDArray[np.float64], k: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Both directions of each row's k smallest-exponent partners (the start of the cutting-plane loop)."""
    n = len(F)
    if n < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    k = min(k, n - 1)
    G = F + np.diag(np.full(n, np.inf))
    nb = np.argpartition(G, k - 1, axis=1)[:, :k]
    i = np.repeat(np.arange(n), k)
    j = nb.ravel()
    keys = np.unique(np.concatenate([i * n + j, j * n + i]))
    return (keys // n).astype(np.int64), (keys % n).astype(np.int64)


def _worst_violations(Z: NDArray[np.float64], E: NDArray[np.float64], per_row: int, chunk: int = 64,
                      deadline: float | None = None) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Up to ``per_row`` most violated partners j of each row i (largest max_y ln(z_iy/z_jy) − E_ij, if violated)."""
    n = len(Z)
    bi, bj = [], []
    with np.errstate(divide="ignore", invalid="ignore"):
        logz = np.log(Z)
        for s in range(0, n, chunk):
            check_deadline(deadline, "AnPO: finding the violated pairs for the next cuts")
            e = slice(s, min(s + chunk, n))
            lr = logz[e, None, :] - logz[None, :, :]
            lr = np.where(np.isnan(lr), -np.inf, lr).max(axis=2) - E[e]  # excess over the exponent (nats)
            over = lr > np.log1p(TOLERANCE)  # the check of ``metrics.cone_breaches``
            over[np.arange(e.stop - s), np.arange(s, e.stop)] = False
            score = np.where(over, lr, -np.inf)
            k = min(per_row, n)
            top = np.argpartition(-score, k - 1, axis=1)[:, :k]
            keep = np.isfinite(np.take_along_axis(score, top, axis=1)) | \
                (np.take_along_axis(score, top, axis=1) == np.inf)
            keep &= np.take_along_axis(over, top, axis=1)
            i, col = np.nonzero(keep)
            bi.append(i + s)
            bj.append(top[i, col])
    return np.concatenate(bi).astype(np.int64), np.concatenate(bj).astype(np.int64)


def solve_anpo(E: NDArray[np.float64], weights: NDArray[np.float64], c: NDArray[np.float64], *,
               how: str = "cuts", method: str = "ipm", time_limit: float | None = None,
               progress: Progress = no_progress, start_k: int = 8, max_rounds: int = 40, cut_per_row: int = 4,
               phase: str = "AnPO", max_rows: int | None = None) -> AnpoOutcome:
    """Minimise Σ_x weights_x Σ_y c_xy z_xy subject to z_i,y ≤ e^{E_ij} z_j,y (all ordered pairs) and rows summing to 1.

    Args:
        E: (n, n) exponents, nats, ≥ 0, symmetric or not; the diagonal is ignored; +inf = unconstrained pair.
        weights: objective weight per row (e.g. the prior of each anchor). c: (n, M) cost, metres.
        how: ``cuts`` or ``monolithic`` (module docstring). method: HiGHS ``ipm`` or ``simplex``.
        time_limit: seconds for all solves together; on expiry Z is None.
        max_rows: refuse (ParameterError) when more rows than this remain after merging equal rows.
    """
    if how not in SOLVERS:
        raise ParameterError(f"`anpo_solver` = {how!r} is not one of {', '.join(SOLVERS)}.")
    t0 = time.perf_counter()
    try:
        return _solve_anpo(E, weights, c, how, method, time_limit, progress, start_k, max_rounds, cut_per_row, phase,
                           max_rows, t0)
    except OutOfTime as e:  # the repair or the check of the LP's rows did not finish: no usable point
        return AnpoOutcome(None, "time limit", None, 0, solve_s=time.perf_counter() - t0,
                           message=f"time limit while {e}")


def _solve_anpo(E: NDArray[np.float64], weights: NDArray[np.float64], c: NDArray[np.float64], how: str, method: str,
                time_limit: float | None, progress: Progress, start_k: int, max_rounds: int, cut_per_row: int,
                phase: str, max_rows: int | None, t0: float) -> AnpoOutcome:
    """:func:`solve_anpo`; ``OutOfTime`` when its deadline passes outside an LP."""
    deadline = None if time_limit is None else t0 + time_limit
    label, Fc = merge_equal_rows(E)
    check_deadline(deadline, f"{phase}: merging equal rows")
    n_c = len(Fc)
    if max_rows is not None and n_c > max_rows:
        raise ParameterError(
            f"{phase} would have {n_c} LP rows after merging equal rows ({len(E)} anchors), above the limit of "
            f"{max_rows} (`max_lp_rows`). Lower N or α, raise λ, use floor = w_min, or raise max_lp_rows "
            "together with a time limit.")
    onehot = np.zeros((n_c, len(E)))
    onehot[label, np.arange(len(E))] = weights
    wc = onehot.sum(axis=1)
    cc = (onehot @ c) / np.where(wc > 0, wc, 1.0)[:, None]
    if how == "colgen":
        return _solve_colgen(E, label, Fc, wc, cc, weights, c, t0, time_limit, progress, phase)
    if how == "monolithic":
        pi, pj = implied_free_pairs(Fc)
    else:
        pi, pj = _nearest_pairs(Fc, start_k)
    finite = np.isfinite(Fc[pi, pj])  # an infinite exponent is no constraint (pairs beyond a radius)
    pi, pj = pi[finite], pj[finite]
    build_s = time.perf_counter() - t0
    solve_s, rounds = 0.0, 0
    out = None
    Zc = None
    while True:
        rounds += 1
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            return AnpoOutcome(None, "time limit", None, n_c, len(pi), rounds=rounds, build_s=build_s,
                               solve_s=solve_s, message="time limit reached between cutting-plane rounds")
        progress(f"{phase}: LP round {rounds} ({len(pi):,} pairs)", None)
        Zc, out = solve_mdp_lp(wc, cc, pi, pj, Fc[pi, pj], method=method, time_limit=left, progress=progress)
        solve_s += out.solve_s
        if Zc is None:
            return AnpoOutcome(None, out.status, None, n_c, len(pi), out.size, rounds, build_s, solve_s,
                               message=out.message)
        if how == "monolithic":
            break
        tb = time.perf_counter()
        vi, vj = _worst_violations(Zc, Fc, cut_per_row, deadline=deadline)
        build_s += time.perf_counter() - tb
        if len(vi) == 0:
            break
        if rounds >= max_rounds:
            return AnpoOutcome(None, "cut limit", None, n_c, len(pi), out.size, rounds, build_s, solve_s,
                               message=f"{len(vi)} pairs still violated after {rounds} cutting-plane rounds")
        old = pi * n_c + pj
        keys = np.unique(np.concatenate([old, vi * n_c + vj, vj * n_c + vi]))
        if len(keys) == len(old):  # every violated pair is already enforced: solver round-off, left to the repair
            break
        pi, pj = (keys // n_c).astype(np.int64), (keys % n_c).astype(np.int64)
    tb = time.perf_counter()
    check_deadline(deadline, f"{phase}: closing the exponents for the repair")
    Zc, facts = repair_into_cone(Zc, exponent_closure(Fc), wc[:, None] * cc, deadline=deadline)
    added = facts["repair_mass_added"]
    Z = Zc[label]
    check_deadline(deadline, f"{phase}: checking the LP's own pairs")
    enforced = _check(Z, E, c.shape[1])
    build_s += time.perf_counter() - tb
    objective = float(weights @ np.einsum("ij,ij->i", c, Z))
    assert out is not None
    return AnpoOutcome(Z, out.status, objective, n_c, len(pi), out.size, rounds, build_s, solve_s, added, enforced,
                       bound_m=objective if out.status == "optimal" else None)


def _check(Z: NDArray[np.float64], E: NDArray[np.float64], m: int) -> PairCheck:
    """The LP's own pairs checked on ``Z`` (exponents ``E``, ``m`` outputs)."""
    vi, _, triples = violated_pairs(Z, E)
    n = len(E)
    return {"violated_pairs": len(vi), "checked_pairs": n * (n - 1), "violated_triples": triples,
            "checked_triples": n * (n - 1) * m, "tolerance": TOLERANCE}


def _solve_colgen(E: NDArray[np.float64], label: NDArray[np.int64], Fc: NDArray[np.float64],
                  wc: NDArray[np.float64], cc: NDArray[np.float64], weights: NDArray[np.float64],
                  c: NDArray[np.float64], t0: float, time_limit: float | None, progress: Progress,
                  phase: str = "AnPO") -> AnpoOutcome:
    """AnPO through the structured column-generation solver on the merged rows."""
    build_s = time.perf_counter() - t0
    deadline = None if time_limit is None else t0 + time_limit
    t1 = time.perf_counter()
    W = wc[:, None] * cc
    # rows joined by no finite exponent (pairs beyond a radius) are independent LPs: solve each component alone
    # (a row alone takes its cheapest output), so the structured solver never sees an infinite exponent
    n_comp, comp = connected_components(csr_matrix(np.isfinite(Fc) & ~np.eye(len(Fc), dtype=bool)), directed=False)
    Zc = np.zeros_like(W)
    status, bound, iters, messages = "optimal", 0.0, 0, []
    size: dict[str, int] = {}
    for part in range(n_comp):  # one solve per component, vectorised inside
        check_deadline(deadline, f"{phase}: solving component {part + 1} of {n_comp}")
        rows = np.flatnonzero(comp == part)
        if len(rows) == 1 and n_comp > 1:
            Zc[rows[0], np.argmin(W[rows[0]])] = 1.0
            bound += float(W[rows[0]].min())
            continue
        left = None if deadline is None else max(0.01, deadline - time.perf_counter())
        try:
            res = solve_structured(W[rows], Fc[np.ix_(rows, rows)], time_limit=left, progress=progress)
        except SolverError as e:  # e.g. a pricing LP stopped by the time limit: no usable point
            return AnpoOutcome(None, "error", None, len(Fc), build_s=build_s, solve_s=time.perf_counter() - t1,
                               message=f"colgen: {e}")
        if res.Z is None:
            return AnpoOutcome(None, res.status, None, len(Fc), size=res.size, build_s=build_s,
                               solve_s=time.perf_counter() - t1, message=res.message)
        Zc[rows] = np.clip(res.Z, 0.0, None)
        status = status if res.status == "optimal" else res.status
        bound = bound + res.bound if res.bound is not None else bound
        iters += int(res.diagnostics.get("iterations", 0))
        size = {k: size.get(k, 0) + v for k, v in res.size.items()}
        if res.message:
            messages.append(res.message)
    solve_s = time.perf_counter() - t1
    if n_comp > 1:
        messages.insert(0, f"{n_comp} independent components of the constraint graph solved separately")
    Z = Zc[label]
    tb = time.perf_counter()
    check_deadline(deadline, f"{phase}: checking the LP's own pairs")
    enforced = _check(Z, E, c.shape[1])
    build_s += time.perf_counter() - tb
    objective = float(weights @ np.einsum("ij,ij->i", c, Z))
    return AnpoOutcome(Z, status, objective, len(Fc), 0, size, iters, build_s, solve_s, 0.0, enforced,
                       "; ".join(messages), bound_m=bound)
