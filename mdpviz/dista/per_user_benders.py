"""Step ③ of DISTA-LP on the server: the WEM+LP over all users, solved by Benders with one subproblem per user.

Per user m (server index space, i.e. the user's permuted order) the variables are z[i, k] for i in N_m and k in
Y_m, with the tightened distances d̄x, d̄y and cost c̃. The WEM split (spec §3.2, §3.4): an entry is *fixed*
(in H_m) when d̄y[i, k] > ``radius`` and then z[i, k] = w_{g(k)}·exp(−a·d̄y[i, k]), where g(k) is the output's
index in Y and a = ε_pt/2 (``exponent`` = 'half', Eq. 7, default) or a = ε_pt ('full', the H_m definition, §10.1).
Each user keeps at least one column all free (the column with the smallest largest d̄y), which makes the LP feasible
for small w. Constraints: z[i, k] ≤ e^{ε_pt·d̄x[i, j]} z[j, k] for every ordered pair of N_m and every k, and
Σ_k z[i, k] = 1.

Benders (spec §3.4): the master holds the WEM weights w (shared by all users, only outputs with a fixed entry) and
one v_m per user; constraints that involve fixed entries only are linear in w and go to the master from the start,
as does Σ_{k fixed} z[i, k] ≤ 1 for every row. Subproblem m, given ŵ, is an LP over user m's free entries; its
row duals y give the optimality cut v_m ≥ φ_m(ŵ) − yᵀB_m(w − ŵ); an infeasible subproblem is replaced by its
phase-1 (sum of slacks ψ_m) and gives the feasibility cut ψ_m(ŵ) − yᵀB_m(w − ŵ) ≤ 0. The loop stops when
UB − LB ≤ ``gap_tol``·UB. When some subproblem is infeasible at ŵ, points between ŵ and the incumbent weights
are tried for a better upper bound (the feasible set in w is convex). ``solve_direct`` solves the same LP in one
piece (a check on the decomposition).

This is DISTA-LP's own adapter: the cut algebra is generic (``Cut``, ``benders_loop`` take any per-user
subproblem of the form min cᵀz s.t. L − Bw ≤ Az ≤ U − Bw, z ≥ 0).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import highspy
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ..errors import SolverError
from ..lp.highs import INF, new_highs, pass_model, solve_lp
from ..lp.mdp_lp import all_pairs, mdp_lp_matrix
from ..progress import Progress, no_progress

EXPONENTS = ("half", "full")


@dataclass
class UserLP:
    """One user's block of the WEM+LP, split into free entries (subproblem) and WEM entries (master).

    Attributes:
        n, m: |N_m| and |Y_m|.
        cols: index in Y of each of the m columns.
        fixed: mask over the n·m entries (row-major) that follow WEM.
        decay: exp(−a·d̄y) of each entry (used on fixed entries).
        cost_free: c̃ of the free entries, km.
        A_free: rows with at least one free entry × free entries.
        B: those rows × master w (fixed part, z_H = G w).
        lower, upper: bounds of those rows before the w shift.
        static_B, static_upper: rows with fixed entries only (pair rows ``B w ≤ 0``).
        mass_B: per row, the fixed mass Σ_k decay·w (the master's row-mass cut ≤ 1).
        G: fixed entries × w, so z_H = G w.
        alpha: cost of the fixed entries per unit of w (Σ c̃·decay per output), km.
    """

    n: int
    m: int
    cols: NDArray[np.int64]
    fixed: NDArray[np.bool_]
    decay: NDArray[np.float64]
    cost_free: NDArray[np.float64]
    A_free: sp.csr_matrix
    B: sp.csr_matrix
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    static_B: sp.csr_matrix
    mass_B: sp.csr_matrix
    G: sp.csr_matrix
    alpha: NDArray[np.float64]

    @property
    def n_free(self) -> int:
        """Number of entries the LP chooses (not fixed by WEM)."""
        return int((~self.fixed).sum())

    def assemble(self, z_free: NDArray[np.float64], w: NDArray[np.float64]) -> NDArray[np.float64]:
        """The block Ẑ (n, m) from the free entries and the WEM weights."""
        z = np.zeros(self.n * self.m)
        z[~self.fixed] = z_free
        z[self.fixed] = self.G @ w
        return z.reshape(self.n, self.m)


def wem_mask(dy: NDArray[np.float64], radius: float) -> NDArray[np.bool_]:
    """Entries with d̄y > ``radius`` (km) follow WEM, except one column kept all free (smallest max d̄y)."""
    fixed = dy > radius
    fixed[:, int(np.argmin(dy.max(axis=0)))] = False
    return fixed


def build_user_lp(dx: NDArray[np.float64], dy: NDArray[np.float64], cost: NDArray[np.float64],
                  cols: NDArray[np.int64], w_index: NDArray[np.int64], n_w: int, eps_pt: float, radius: float,
                  exponent: str) -> UserLP:
    """Build user m's block (vectorised): the mDP rows from ``mdp_lp_matrix`` split by fixed/free columns.

    ``w_index`` maps an index in Y to its master weight (−1 if the output has no fixed entry anywhere).
    """
    n, m = dy.shape
    a = eps_pt / 2 if exponent == "half" else eps_pt
    fixed = wem_mask(dy, radius).ravel()
    decay = np.exp(-a * dy).ravel()
    pi, pj = all_pairs(n)
    A, lower, upper = mdp_lp_matrix(n, m, pi, pj, eps_pt * dx[pi, pj])
    A = A.tocsc()
    A_free, A_fix = A[:, ~fixed].tocsr(), A[:, fixed]
    fixed_idx = np.flatnonzero(fixed)
    widx = w_index[cols[fixed_idx % m]]
    G = sp.csr_matrix((decay[fixed_idx], (np.arange(len(fixed_idx)), widx)), shape=(len(fixed_idx), n_w))
    Bfull = (A_fix @ G).tocsr()
    has_free = np.diff(A_free.indptr) > 0
    n_pair_rows = len(pi) * m
    static = ~has_free
    static[n_pair_rows:] = False  # every row-sum row has a free entry (one column is all free)
    mass = Bfull[n_pair_rows:]
    c = cost.ravel()
    alpha = np.asarray(G.T @ c[fixed_idx]).ravel()
    return UserLP(n=n, m=m, cols=cols, fixed=fixed, decay=decay, cost_free=c[~fixed], A_free=A_free[has_free],
                  B=Bfull[has_free], lower=lower[has_free], upper=upper[has_free], static_B=Bfull[static],
                  mass_B=mass, G=G, alpha=alpha)


@dataclass
class Cut:
    """A Benders cut ``coef·w + v_coef·v_m ≤ rhs`` (optimality cuts have v_coef = −1, feasibility cuts 0)."""

    user: int
    coef: NDArray[np.float64]
    v_coef: float
    rhs: float


@dataclass
class SubOutcome:
    """A subproblem at ŵ: its value (φ, or ψ > 0 when infeasible), the cut gradient −Bᵀy, and the free entries."""

    feasible: bool
    value: float
    grad: NDArray[np.float64]
    z: NDArray[np.float64] | None
    timed_out: bool = False


TIMED_OUT = SubOutcome(False, np.inf, np.zeros(0), None, timed_out=True)


def solve_sub(u: UserLP, w: NDArray[np.float64], method: str = "simplex",
              time_limit: float | None = None) -> SubOutcome:
    """Solve user ``u``'s subproblem at ``w``; on infeasibility solve its phase-1 and return that (feasible=False).

    A subproblem (or its phase-1) stopped by ``time_limit`` returns ``TIMED_OUT``.
    """
    shift = u.B @ w
    lo, hi = u.lower - shift, u.upper - shift
    out = solve_lp(u.cost_free, u.A_free, lo, hi, method=method, time_limit=time_limit)
    if out.status == "time limit":
        return TIMED_OUT
    if out.status == "optimal":
        assert out.row_duals is not None and out.x is not None and out.objective is not None
        return SubOutcome(True, out.objective, -(u.B.T @ out.row_duals), out.x)
    if out.status != "infeasible":
        raise SolverError(f"A DISTA-LP subproblem ended with status `{out.status}` ({out.message}).")
    # phase 1: minimise the total violation, one slack per side of every row
    r = u.A_free.shape[0]
    eye = sp.identity(r, format="csr")
    A1 = sp.hstack([u.A_free, -eye, eye]).tocsr()
    cost = np.concatenate([np.zeros(u.n_free), np.ones(2 * r)])
    one = solve_lp(cost, A1, lo, hi, method=method, time_limit=time_limit)
    if one.status == "time limit":
        return TIMED_OUT
    if one.status != "optimal" or one.row_duals is None or one.objective is None:
        raise SolverError(f"The phase-1 of a DISTA-LP subproblem ended with status `{one.status}`.")
    return SubOutcome(False, one.objective, -(u.B.T @ one.row_duals), None)


def _model(cost: NDArray[np.float64], A: sp.spmatrix, lo: NDArray[np.float64],
           hi: NDArray[np.float64]) -> highspy.Highs:
    """A silent dual-simplex HiGHS model of min cost·z s.t. lo ≤ A z ≤ hi, z ≥ 0, kept for warm starts."""
    h = new_highs()
    h.setOptionValue("solver", "simplex")
    pass_model(h, cost, A, lo, hi)
    return h


class WarmSub:
    """User m's subproblem and its phase-1 as persistent HiGHS models: each Benders iteration only moves the row
    bounds (rhs = bounds − B·w), so dual simplex restarts from the previous basis. Same results as ``solve_sub``."""

    def __init__(self, u: UserLP) -> None:
        self.u = u
        r = u.A_free.shape[0]
        self.rows = np.arange(r, dtype=np.int32)
        self.lp = _model(u.cost_free, u.A_free, u.lower, u.upper)
        eye = sp.identity(r, format="csr")
        self.ph1 = _model(np.concatenate([np.zeros(u.n_free), np.ones(2 * r)]),
                          sp.hstack([u.A_free, -eye, eye]), u.lower, u.upper)

    def __call__(self, u: UserLP, w: NDArray[np.float64], time_limit: float | None = None) -> SubOutcome:
        if time_limit is not None and time_limit <= 0:
            return TIMED_OUT
        limit = INF if time_limit is None else float(time_limit)
        shift = self.u.B @ w
        lo, hi = self.u.lower - shift, self.u.upper - shift
        # (mypy) highspy's stub does not declare changeRowsBounds
        self.lp.changeRowsBounds(len(self.rows), self.rows, lo, hi)  # type: ignore[attr-defined]
        self.lp.setOptionValue("time_limit", limit)
        self.lp.run()
        st = self.lp.getModelStatus()
        if st == highspy.HighsModelStatus.kTimeLimit:
            return TIMED_OUT
        if st == highspy.HighsModelStatus.kOptimal:
            sol = self.lp.getSolution()
            value = float(self.lp.getInfo().objective_function_value)
            return SubOutcome(True, value, -(self.u.B.T @ np.array(sol.row_dual)), np.array(sol.col_value))
        if st not in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible):
            # a warm start can end in numerical trouble (HiGHS status "Unknown"): solve this one from scratch
            return solve_sub(self.u, w, time_limit=time_limit)
        # (mypy) highspy's stub does not declare changeRowsBounds
        self.ph1.changeRowsBounds(len(self.rows), self.rows, lo, hi)  # type: ignore[attr-defined]
        self.ph1.setOptionValue("time_limit", limit)
        self.ph1.run()
        if self.ph1.getModelStatus() == highspy.HighsModelStatus.kTimeLimit:
            return TIMED_OUT
        if self.ph1.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return solve_sub(self.u, w, time_limit=time_limit)  # same fallback: a cold solve and its phase-1
        sol = self.ph1.getSolution()
        value = float(self.ph1.getInfo().objective_function_value)
        return SubOutcome(False, value, -(self.u.B.T @ np.array(sol.row_dual)), None)


@dataclass
class BendersOutcome:
    """The result of the decomposition: best w and free entries, bounds and history."""

    status: str
    w: NDArray[np.float64]
    z_free: list[NDArray[np.float64]]
    upper: float
    lower: float
    history: list[dict[str, float]] = field(default_factory=list)
    cuts: int = 0
    master_size: dict[str, int] = field(default_factory=dict)


def master_static(users: list[UserLP], n_w: int) -> tuple[sp.csr_matrix, NDArray[np.float64], NDArray[np.float64]]:
    """Constraints on w known before any cut: fixed-only mDP rows (≤ 0) and row masses of fixed entries (≤ 1)."""
    blocks = [u.static_B for u in users] + [u.mass_B for u in users]
    A = sp.vstack(blocks).tocsr() if blocks else sp.csr_matrix((0, n_w))
    upper = np.concatenate([np.zeros(u.static_B.shape[0]) for u in users] + [np.ones(u.mass_B.shape[0]) for u in users])
    return A, np.full(A.shape[0], -INF), upper


def w_upper(users: list[UserLP], n_w: int) -> NDArray[np.float64]:
    """w_k ≤ 1 / max decay of its fixed entries (a fixed entry is a probability ≤ 1)."""
    top = np.zeros(n_w)
    for u in users:
        if u.G.nnz:
            np.maximum(top, u.G.max(axis=0).toarray().ravel(), out=top)
    return np.where(top > 0, 1.0 / np.where(top > 0, top, 1.0), 0.0)


def _cuts(outs: list[SubOutcome], w: NDArray[np.float64], v: NDArray[np.float64], n_w: int,
          gap_tol: float) -> tuple[list[NDArray[np.float64]], list[float]]:
    """New Benders cuts at the master point (ŵ, v): an optimality cut for each user whose subproblem value exceeds
    its v_m, a feasibility cut for each infeasible one: value(w) ≥ value(ŵ) + grad·(w − ŵ), i.e.
    grad·w − [v_m] ≤ grad·ŵ − value(ŵ)."""
    rows, rhs = [], []
    for m, o in enumerate(outs):
        row = np.zeros(n_w + len(v))
        row[:n_w] = o.grad
        if o.feasible:
            if o.value <= v[m] + gap_tol * max(1.0, abs(o.value)):
                continue
            row[n_w + m] = -1.0
        rows.append(row)
        rhs.append(float(o.grad @ w - o.value))
    return rows, rhs


def benders_loop(users: list[UserLP], n_w: int, *, gap_tol: float = 1e-6, max_iter: int = 100,
                 time_limit: float | None = None, progress: Progress = no_progress,
                 sub: Callable[[UserLP, NDArray[np.float64], float | None], SubOutcome] | None = None
                 ) -> BendersOutcome:
    """Benders decomposition with one subproblem per user (see the module doc). Bounds are in the cost's unit.

    ``sub(u, ŵ, seconds_left)`` solves one subproblem at ŵ; by default each user gets a warm-started ``WarmSub``.
    ``time_limit`` bounds the whole loop: every master and subproblem LP gets only the time left, and the loop ends
    with status ``time limit`` (its best point so far, or none) when one of them stops at it.
    """
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + float(time_limit)

    def left() -> float | None:
        return None if deadline is None else deadline - time.perf_counter()

    n_u = len(users)
    alpha = sum((u.alpha for u in users), np.zeros(n_w))
    S, s_lo, s_hi = master_static(users, n_w)
    col_hi = np.concatenate([w_upper(users, n_w), np.full(n_u, INF)])
    cost = np.concatenate([alpha, np.ones(n_u)])
    cut_rows: list[NDArray[np.float64]] = []
    cut_rhs: list[float] = []
    best_ub, best = np.inf, None
    history: list[dict[str, float]] = []
    status, lb = "iteration limit", -np.inf
    warm = [WarmSub(u) for u in users] if sub is None else []

    def solve_all(w: NDArray[np.float64]) -> list[SubOutcome]:
        outs = []
        for m, u in enumerate(users):  # one LP per user
            o = sub(u, w, left()) if sub is not None else warm[m](u, w, left())
            outs.append(o)
            if o.timed_out:
                break
        return outs

    for it in range(1, max_iter + 1):
        A, lo, hi = _master_rows(S, s_lo, s_hi, n_u, cut_rows, cut_rhs)
        if (remaining := left()) is not None and remaining <= 0:
            status = "time limit"
            break
        master = _solve_master(cost, A, lo, hi, col_hi, remaining)
        if master is None:
            status = "time limit"
            break
        x, objective = master
        w, v = x[:n_w], x[n_w:]
        lb = max(lb, objective)
        outs = solve_all(w)
        if any(o.timed_out for o in outs):
            status = "time limit"
            break
        rows, rhs = _cuts(outs, w, v, n_w, gap_tol)
        cut_rows += rows
        cut_rhs += rhs
        feasible = all(o.feasible for o in outs)
        ub = float(alpha @ w + sum(o.value for o in outs)) if feasible else np.inf
        if ub < best_ub:
            best_ub, best = ub, (w.copy(), [o.z for o in outs])
        elif not feasible and best is not None:
            best_ub, best = _towards_incumbent(w, best_ub, best, alpha, solve_all, n_u)
        history.append({"iteration": it, "lower": lb, "upper": best_ub, "cuts": len(cut_rows),
                        "infeasible_users": sum(not o.feasible for o in outs), "time_s": time.perf_counter() - t0})
        progress("Benders", min(it / max_iter, 1.0))
        if best is not None and best_ub - lb <= gap_tol * max(abs(best_ub), 1e-12):
            status = "optimal"
            break
        if not rows:  # no cut can be added: the master is exact at ŵ
            status = "optimal" if best is not None else "infeasible"
            break
        if (remaining := left()) is not None and remaining <= 0:
            status = "time limit"
            break
    size = {"master_variables": n_w + n_u, "master_static_rows": int(S.shape[0]), "cuts": len(cut_rows)}
    return _loop_outcome(status, best, best_ub, lb, history, n_w, size)


def _master_rows(S: sp.csr_matrix, s_lo: NDArray[np.float64], s_hi: NDArray[np.float64], n_u: int,
                 cut_rows: list[NDArray[np.float64]],
                 cut_rhs: list[float]) -> tuple[sp.csr_matrix, NDArray[np.float64], NDArray[np.float64]]:
    """The master's rows over (w, v): the static rows on w, then every cut so far; returns (A, lower, upper)."""
    static = sp.hstack([S, sp.csr_matrix((S.shape[0], n_u))]).tocsr()
    if not cut_rows:
        return static, s_lo, s_hi
    A = sp.vstack([static, sp.csr_matrix(np.array(cut_rows))]).tocsr()
    return A, np.concatenate([s_lo, np.full(len(cut_rhs), -INF)]), np.concatenate([s_hi, cut_rhs])


def _solve_master(cost: NDArray[np.float64], A: sp.csr_matrix, lo: NDArray[np.float64], hi: NDArray[np.float64],
                  col_hi: NDArray[np.float64], time_limit: float | None) -> tuple[NDArray[np.float64], float] | None:
    """The master LP over (w, v) ≥ 0; returns its point and objective, None when it stopped at ``time_limit``
    (``SolverError`` for any other failure)."""
    mp = solve_lp(cost, A, lo, hi, np.zeros(len(cost)), col_hi, method="simplex", time_limit=time_limit)
    if mp.status == "time limit":
        return None
    if mp.status != "optimal" or mp.x is None or mp.objective is None:
        raise SolverError(f"The DISTA-LP Benders master ended with status `{mp.status}` ({mp.message}).")
    return mp.x, mp.objective


def _towards_incumbent(w: NDArray[np.float64], best_ub: float,
                       best: tuple[NDArray[np.float64], list[NDArray[np.float64] | None]], alpha: NDArray[np.float64],
                       solve_all: Callable[[NDArray[np.float64]], list[SubOutcome]], n_u: int
                       ) -> tuple[float, tuple[NDArray[np.float64], list[NDArray[np.float64] | None]]]:
    """Primal heuristic after an infeasible ŵ: the feasible set in w is convex, so points between ŵ and the
    incumbent are feasible close enough to the incumbent; returns the best upper bound and point after trying a few."""
    for lam in (0.5, 0.25):
        w_try = lam * w + (1 - lam) * best[0]
        tries = solve_all(w_try)
        if all(o.feasible for o in tries) and len(tries) == n_u:  # the first feasible try decides
            ub_try = float(alpha @ w_try + sum(o.value for o in tries))
            if ub_try < best_ub:
                return ub_try, (w_try, [o.z for o in tries])
            break
    return best_ub, best


def _loop_outcome(status: str, best: tuple[NDArray[np.float64], list[NDArray[np.float64] | None]] | None,
                  best_ub: float, lb: float, history: list[dict[str, float]], n_w: int,
                  size: dict[str, int]) -> BendersOutcome:
    """The loop's result: its best point, bounds and history (no point after a time limit); ``SolverError`` when it
    ended without a feasible point otherwise."""
    if best is None and status == "time limit":
        return BendersOutcome(status, np.zeros(n_w), [], np.inf, lb, history, size["cuts"], {})
    if best is None:
        raise SolverError("Benders found no feasible WEM weights within its iteration budget; raise `benders_iters` "
                          "or the WEM radius (`wem_radius`).")
    return BendersOutcome(status, best[0], [z for z in best[1] if z is not None], best_ub, lb, history, size["cuts"],
                          size)


def solve_direct(users: list[UserLP], n_w: int, method: str = "ipm", time_limit: float | None = None
                 ) -> tuple[NDArray[np.float64], list[NDArray[np.float64]], float] | None:
    """The same WEM+LP in one piece: variables [z_free of every user, w]. Returns (w, z_free per user, objective),
    or None when it stops at ``time_limit``."""
    n_u = len(users)
    S, s_lo, s_hi = master_static(users, n_w)
    rows = [[None] * n_u + [u.B] for u in users]
    for m, u in enumerate(users):
        rows[m][m] = u.A_free
    z_width = [u.n_free for u in users]
    rows.append([sp.csr_matrix((S.shape[0], k)) for k in z_width] + [S])
    A = sp.bmat(rows, format="csr")
    lo = np.concatenate([u.lower for u in users] + [s_lo])
    hi = np.concatenate([u.upper for u in users] + [s_hi])
    alpha = sum((u.alpha for u in users), np.zeros(n_w))
    cost = np.concatenate([u.cost_free for u in users] + [alpha])
    col_hi = np.concatenate([np.full(sum(z_width), INF), w_upper(users, n_w)])
    out = solve_lp(cost, A, lo, hi, np.zeros(len(cost)), col_hi, method=method, time_limit=time_limit)
    if out.status == "time limit":
        return None
    if out.status != "optimal" or out.x is None or out.objective is None:
        raise SolverError(f"The direct DISTA-LP solve ended with status `{out.status}` ({out.message}); raise the time "
                          "limit or use the Benders solver, which keeps its best feasible point.")
    splits = np.cumsum([0] + z_width)
    return out.x[splits[-1]:], [out.x[splits[m]:splits[m + 1]] for m in range(n_u)], out.objective
