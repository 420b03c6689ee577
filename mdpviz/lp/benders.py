"""Benders decomposition of the optimal-mDP LP over a partition of the secrets (Qiu, IJCAI 2024; spec 004).

Rows X are split into subsets R_l. A row is a *boundary* record when it shares a constrained pair with a row of
another subset, otherwise *internal*. The master problem (MP) holds the boundary rows' variables z_Y and one
estimate w_l per subset:

    min  Σ W_Y·z_Y + Σ_l w_l                                   (spec §3.4 consistent form (a): the boundary
    s.t. pair rows among boundary records (cross-subset rows     cost is counted once, in the MP objective)
         and the initial cuts z_i ≤ e^{E*_ij} z_j of Eq. 14),
         Σ_y z_Y = 1,  Benders cuts,  z_Y ≥ 0, w ≥ 0.

Subproblem l, given z̄_Y: min W_X·z_X over its internal rows, with every pair row touching an internal record of
R_l (boundary values on the right-hand side) and Σ_y z_X = 1. Its row duals give the optimality cut
w_l ≥ (h − B z_Y)ᵀu + 1ᵀv; an infeasible subproblem is detected by a phase-1 (elastic) twin whose duals give
the feasibility cut. LB = MP optimum (non-decreasing), UB = W_Y·z̄_Y + Σ subproblem optima when all are
feasible. The code-only δ slack of the authors' MATLAB code is off by default (``slack`` > 0 turns it on and
the result no longer solves the paper's LP; it is labelled).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.cluster.vq import kmeans2

from ..errors import ParameterError, SolverError
from ..progress import Progress, no_progress
from .highs import INF, new_highs, pass_model

PARTITIONERS = ("kmeans-dv", "kmeans-rec", "kmeans-adj", "spectral")


def partition(method: str, n_parts: int, d: NDArray[np.float64], coords: NDArray[np.float64] | None,
              pair_i: NDArray[np.int64], pair_j: NDArray[np.int64], seed: int = 0) -> NDArray[np.int64]:
    """Subset label (0..M'−1, empty subsets removed) of each row.

    Methods (spec 004 §3.6): ``kmeans-dv`` k-means on rows of the distance matrix (default), ``kmeans-rec`` on
    the records' coordinates (km), ``kmeans-adj`` on rows of the 0/1 adjacency of the pair graph, ``spectral``
    balanced spectral clustering (k-means on the M smallest eigenvectors of the unnormalised Laplacian).
    """
    n = len(d)
    k = int(min(max(n_parts, 1), n))
    adj = sp.coo_matrix((np.ones(len(pair_i)), (pair_i, pair_j)), shape=(n, n)).tocsr()
    adj = ((adj + adj.T) > 0).astype(np.float64)
    if method == "kmeans-dv":
        data = d
    elif method == "kmeans-rec":
        if coords is None:
            raise ParameterError("`kmeans-rec` needs the records' coordinates.")
        data = coords
    elif method == "kmeans-adj":
        data = adj.toarray()
    elif method == "spectral":
        L = sp.diags(np.asarray(adj.sum(axis=1)).ravel()) - adj
        _, v = np.linalg.eigh(L.toarray())
        data = v[:, :k]
    else:
        raise ParameterError(f"Unknown partitioner `{method}`; choose one of {', '.join(PARTITIONERS)}.")
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    _, labels = kmeans2(np.asarray(data, dtype=np.float64), k, minit="++", seed=np.random.default_rng(seed))
    _, labels = np.unique(labels, return_inverse=True)
    return labels.astype(np.int64)


@dataclass
class BendersOutcome:
    """Result of :func:`solve_benders`. ``Z`` holds the best feasible point (None when no iteration gave one)."""

    Z: NDArray[np.float64] | None
    status: str
    upper: float | None
    lower: float | None
    timings: dict[str, float] = field(default_factory=dict)
    size: dict[str, int] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    message: str = ""


def _pair_rows(pi: NDArray[np.int64], pj: NDArray[np.int64], coef: NDArray[np.float64], m: int,
               col_i: NDArray[np.int64], col_j: NDArray[np.int64], n_cols: int) -> sp.csr_matrix:
    """Rows ``z[i, y] − coef·z[j, y]`` for each pair and output (row r*m + y); col_* map rows to variable blocks."""
    r = len(pi)
    y = np.tile(np.arange(m), r)
    row = np.repeat(np.arange(r) * m, m) + y
    cols = np.concatenate([np.repeat(col_i, m) * m + y, np.repeat(col_j, m) * m + y])
    vals = np.concatenate([np.ones(r * m), -np.repeat(coef, m)])
    return sp.csr_matrix((vals, (np.concatenate([row, row]), cols)), shape=(r * m, n_cols))


class _Sub:
    """Subproblem of one subset: HiGHS models of the LP and of its phase-1 (elastic) twin, rhs = h + B z_Y."""

    def __init__(self, rows_x: NDArray[np.int64], local: NDArray[np.int64], bidx: NDArray[np.int64],
                 is_b: NDArray[np.bool_], pi: NDArray[np.int64], pj: NDArray[np.int64], coef: NDArray[np.float64],
                 W: NDArray[np.float64], nb: int, slack: float) -> None:
        m = W.shape[1]
        self.m, self.nx = m, len(rows_x)
        xi, xj = ~is_b[pi], ~is_b[pj]
        xx, xy, yx = xi & xj, xi & ~xj, ~xi & xj
        blocks, B_rows, B_cols, B_vals = [], [], [], []
        n_rows = 0
        nv = self.nx * m
        # internal–internal: z_a − e z_b ≤ 0
        A_xx = _pair_rows(pi[xx], pj[xx], coef[xx], m, local[pi[xx]], local[pj[xx]], nv)
        blocks.append(A_xx)
        n_rows += A_xx.shape[0]
        # internal i, boundary j: z_a ≤ e z̄_j
        r = int(xy.sum())
        y = np.tile(np.arange(m), r)
        rr = n_rows + np.repeat(np.arange(r) * m, m) + y
        blocks.append(sp.csr_matrix((np.ones(r * m), (rr - n_rows, np.repeat(local[pi[xy]], m) * m + y)),
                                    shape=(r * m, nv)))
        B_rows.append(rr)
        B_cols.append(np.repeat(bidx[pj[xy]], m) * m + y)
        B_vals.append(np.repeat(coef[xy], m))
        n_rows += r * m
        # boundary i, internal j: −e z_b ≤ −z̄_i
        r = int(yx.sum())
        y = np.tile(np.arange(m), r)
        rr = n_rows + np.repeat(np.arange(r) * m, m) + y
        blocks.append(sp.csr_matrix((-np.repeat(coef[yx], m), (rr - n_rows, np.repeat(local[pj[yx]], m) * m + y)),
                                    shape=(r * m, nv)))
        B_rows.append(rr)
        B_cols.append(np.repeat(bidx[pi[yx]], m) * m + y)
        B_vals.append(-np.ones(r * m))
        n_rows += r * m
        self.n_pair_rows = n_rows
        self.B = sp.csr_matrix((np.concatenate(B_vals), (np.concatenate(B_rows), np.concatenate(B_cols))),
                               shape=(n_rows, nb * m))
        self.h = np.full(n_rows, float(slack))
        S = sp.csr_matrix((np.ones(nv), (np.repeat(np.arange(self.nx), m), np.arange(nv))), shape=(self.nx, nv))
        A = sp.vstack(blocks + [S]).tocsc()
        self.cost = W[rows_x].ravel()
        lower = np.concatenate([np.full(n_rows, -INF), np.ones(self.nx)])
        upper = np.concatenate([self.h, np.ones(self.nx)])
        self.lp = new_highs()
        self.lp.setOptionValue("solver", "simplex")
        pass_model(self.lp, self.cost, A, lower, upper)
        # phase 1: the same rows with an elastic slack s ≥ 0 on each pair row, minimise Σ s
        A1 = sp.hstack([A, sp.vstack([-sp.eye(n_rows), sp.csr_matrix((self.nx, n_rows))])]).tocsc()
        self.ph1 = new_highs()
        self.ph1.setOptionValue("solver", "simplex")
        pass_model(self.ph1, np.concatenate([np.zeros(nv), np.ones(n_rows)]), A1, lower, upper)
        self.size = {"variables": nv, "constraints": A.shape[0], "nonzeros": int(A.nnz)}

    def solve(self, zY: NDArray[np.float64]) -> tuple[str, float, NDArray[np.float64], float, NDArray[np.float64] | None]:
        """Returns (kind, const, g, value, z_X): the cut ``kind`` ∈ {opt, feas} reads const + g·z_Y (≤ w or ≤ 0)."""
        rhs = self.h + self.B @ zY
        idx = np.arange(self.n_pair_rows, dtype=np.int32)
        lo = np.full(self.n_pair_rows, -INF)
        if self.n_pair_rows:
            self.lp.changeRowsBounds(self.n_pair_rows, idx, lo, rhs)
        self.lp.run()
        st = self.lp.getModelStatus()
        if st == highspy.HighsModelStatus.kOptimal:
            sol = self.lp.getSolution()
            dual = np.array(sol.row_dual)
            u, v = dual[: self.n_pair_rows], dual[self.n_pair_rows:]
            value = float(self.lp.getInfo().objective_function_value)
            const = float(u @ self.h + v.sum())
            g = self.B.T @ u
            return "opt", const, g, value, np.maximum(np.array(sol.col_value), 0.0).reshape(self.nx, self.m)
        if st not in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible):
            raise SolverError(f"A Benders subproblem failed: {self.lp.modelStatusToString(st)}.")
        if self.n_pair_rows:
            self.ph1.changeRowsBounds(self.n_pair_rows, idx, lo, rhs)
        self.ph1.run()
        sol = self.ph1.getSolution()
        dual = np.array(sol.row_dual)
        u, v = dual[: self.n_pair_rows], dual[self.n_pair_rows:]
        value = float(self.ph1.getInfo().objective_function_value)
        return "feas", float(u @ self.h + v.sum()), self.B.T @ u, value, None


def solve_benders(W: NDArray[np.float64], pi: NDArray[np.int64], pj: NDArray[np.int64],
                  expo: NDArray[np.float64], closure: NDArray[np.float64], labels: NDArray[np.int64], *,
                  gap: float = 0.01, max_iter: int = 200, initial_cuts: bool = True, slack: float = 0.0,
                  time_limit: float | None = None, progress: Progress = no_progress) -> BendersOutcome:
    """Benders decomposition of min Σ W∘Z s.t. rows sum to 1 and z[i,y] ≤ e^{expo}·z[j,y] on pairs (pi, pj).

    Args:
        W: (n, m) weighted costs p_x·c_xy (metres·probability).
        pi, pj, expo: the constrained ordered pairs and their exponents (ε·d).
        closure: (n, n) min-plus closure of the pair exponents (the initial cuts, Eq. 14, use it).
        labels: subset of each row (from :func:`partition`).
        gap: stop when (UB − LB) ≤ gap·UB (relative; the paper's ξ = 0.01).
        max_iter: iteration cap (status ``iteration limit``).
        initial_cuts: add Eq. 14 (all boundary pairs with the path exponent) to the MP.
        slack: the authors' code-only additive slack δ on every pair row (0 = the paper's LP).
        time_limit: seconds (status ``time limit``; Z is then the best feasible point found, if any).
    Returns:
        BendersOutcome with the best feasible Z (before the privacy repair), UB, LB, and per-iteration history.
    """
    t_start = time.perf_counter()
    deadline = None if time_limit is None else t_start + time_limit
    n, m = W.shape
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    cross = labels[pi] != labels[pj]
    is_b = np.zeros(n, dtype=bool)
    is_b[pi[cross]] = True
    is_b[pj[cross]] = True
    b_rows = np.flatnonzero(is_b)
    nb = len(b_rows)
    bidx = np.full(n, -1, dtype=np.int64)
    bidx[b_rows] = np.arange(nb)
    parts = np.unique(labels)
    n_parts = len(parts)
    coef = np.exp(np.minimum(expo, np.log(1e9)))

    # ---- master: z_Y (nb × m) then w (n_parts) ----
    nvm = nb * m + n_parts
    bb = is_b[pi] & is_b[pj]
    if initial_cuts and nb > 1:
        ci, cj = np.nonzero(~np.eye(nb, dtype=bool))
        ce = closure[b_rows[ci], b_rows[cj]]
        ok = np.isfinite(ce)
        ci, cj, ce = ci[ok], cj[ok], ce[ok]
        mcoef = np.exp(np.minimum(ce, np.log(1e9)))
        A_pairs = _pair_rows(ci, cj, mcoef, m, ci, cj, nvm)
    else:
        A_pairs = _pair_rows(bidx[pi[bb]], bidx[pj[bb]], coef[bb], m, bidx[pi[bb]], bidx[pj[bb]], nvm)
    S = sp.csr_matrix((np.ones(nb * m), (np.repeat(np.arange(nb), m), np.arange(nb * m))), shape=(nb, nvm))
    A = sp.vstack([A_pairs, S]).tocsc()
    mp = new_highs()
    mp.setOptionValue("solver", "simplex")
    cost = np.concatenate([W[b_rows].ravel(), np.ones(n_parts)])
    pass_model(mp, cost, A, np.concatenate([np.full(A_pairs.shape[0], -INF), np.ones(nb)]),
               np.concatenate([np.full(A_pairs.shape[0], float(slack)), np.ones(nb)]))
    mp_size = {"variables": nvm, "constraints": int(A.shape[0]), "nonzeros": int(A.nnz)}
    timings["master_build_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    subs: list[_Sub | None] = []
    sub_rows: list[NDArray[np.int64]] = []
    local = np.full(n, -1, dtype=np.int64)
    for lab in parts:  # one loop per subset (M ≤ a few dozen), vectorised inside
        members = np.flatnonzero(labels == lab)
        rows_x = members[~is_b[members]]
        sub_rows.append(rows_x)
        if len(rows_x) == 0:
            subs.append(None)
            continue
        local[rows_x] = np.arange(len(rows_x))
        inside = (labels[pi] == lab) & (labels[pj] == lab) & (~is_b[pi] | ~is_b[pj])
        subs.append(_Sub(rows_x, local, bidx, is_b, pi[inside], pj[inside], coef[inside], W, nb, slack))
    timings["sub_build_s"] = time.perf_counter() - t0

    history: list[dict[str, float]] = []
    lb = -np.inf
    ub_best = np.inf
    Z_best: NDArray[np.float64] | None = None
    status = "iteration limit"
    message = ""
    t_mp = t_sub = 0.0
    n_opt = n_feas = 0
    it = 0
    for it in range(1, max_iter + 1):
        if deadline is not None and time.perf_counter() > deadline:
            status, message = "time limit", f"time limit after {it - 1} iterations"
            break
        t0 = time.perf_counter()
        if deadline is not None:
            # HiGHS's clock is cumulative over the instance's runs: the limit is run time so far + what is left
            mp.setOptionValue("time_limit", float(mp.getRunTime() + max(deadline - time.perf_counter(), 0.01)))
        mp.run()
        dt_mp = time.perf_counter() - t0
        t_mp += dt_mp
        st = mp.getModelStatus()
        if st == highspy.HighsModelStatus.kTimeLimit:
            status, message = "time limit", f"time limit in the master at iteration {it}"
            break
        if st != highspy.HighsModelStatus.kOptimal:
            status, message = "infeasible", f"the master is {mp.modelStatusToString(st)}"
            break
        x = np.array(mp.getSolution().col_value)
        lb = max(lb, float(mp.getInfo().objective_function_value))
        zY, wbar = np.maximum(x[: nb * m], 0.0), x[nb * m:]
        ub = float(W[b_rows].ravel() @ zY)
        feasible = True
        cut_lo, cut_cols, cut_vals = [], [], []
        t0 = time.perf_counter()
        dt_max = 0.0
        zX: list[NDArray[np.float64] | None] = []
        for l, sub in enumerate(subs):
            if sub is None:
                zX.append(None)
                continue
            ts = time.perf_counter()
            kind, const, g, value, z = sub.solve(zY)
            dt_max = max(dt_max, time.perf_counter() - ts)
            zX.append(z)
            gz = np.flatnonzero(g)
            if kind == "opt":
                ub += value
                if wbar[l] < value - 1e-9 * max(1.0, abs(value)):
                    # w_l − g·z_Y ≥ const
                    cut_cols.append(np.concatenate([gz, [nb * m + l]]))
                    cut_vals.append(np.concatenate([-g[gz], [1.0]]))
                    cut_lo.append(const)
                    n_opt += 1
            else:
                feasible = False
                # const + g·z_Y ≤ 0   ⇔   −g·z_Y ≥ const
                cut_cols.append(gz)
                cut_vals.append(-g[gz])
                cut_lo.append(const)
                n_feas += 1
        t_sub += time.perf_counter() - t0
        if feasible and ub < ub_best:
            ub_best = ub
            Z_best = np.zeros((n, m))
            Z_best[b_rows] = zY.reshape(nb, m)
            for rows_x, z in zip(sub_rows, zX):
                if z is not None:
                    Z_best[rows_x] = z
        history.append({"iteration": it, "lower": lb, "upper": ub if feasible else np.nan,
                        "best_upper": ub_best, "optimality_cuts": n_opt, "feasibility_cuts": n_feas,
                        "master_s": dt_mp, "max_sub_s": dt_max})
        if np.isfinite(ub_best):
            g_now = (ub_best - lb) / max(abs(ub_best), 1e-300)
            progress("Benders", float(np.clip(1 - np.log10(max(g_now, gap) / gap) / 6, 0, 1)))
            if g_now <= gap:
                status = "gap reached"
                break
        else:
            progress("Benders", None)
        if not cut_cols:
            status, message = "stalled", "no cut is violated but the gap is open"
            break
        starts = np.concatenate([[0], np.cumsum([len(c) for c in cut_cols])[:-1]]).astype(np.int32)
        mp.addRows(len(cut_cols), np.array(cut_lo), np.full(len(cut_cols), INF), int(sum(len(c) for c in cut_cols)),
                   starts, np.concatenate(cut_cols).astype(np.int32), np.concatenate(cut_vals))
    timings.update(master_s=t_mp, subproblems_s=t_sub, total_s=time.perf_counter() - t_start)
    sizes = [len(r) for r in sub_rows]
    size = {"master_" + k: v for k, v in mp_size.items()}
    size.update({"sub_variables_max": max((s.size["variables"] for s in subs if s), default=0),
                 "sub_constraints_max": max((s.size["constraints"] for s in subs if s), default=0),
                 "variables": nvm + sum(s.size["variables"] for s in subs if s)})
    diagnostics = {"iterations": it, "history": history, "subsets": n_parts,
                   "subset_sizes": [int((labels == lab).sum()) for lab in parts],
                   "internal_sizes": sizes, "boundary_count": int(nb),
                   "boundary_per_subset": [int((is_b & (labels == lab)).sum()) for lab in parts],
                   "optimality_cuts": n_opt, "feasibility_cuts": n_feas}
    return BendersOutcome(Z_best, status, None if not np.isfinite(ub_best) else ub_best,
                          None if not np.isfinite(lb) else lb, timings, size, diagnostics, message)
