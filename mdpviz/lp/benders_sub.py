"""The subproblems of the Benders decomposition (:mod:`mdpviz.lp.benders`): one LP per subset of the partition
over its internal records, its optimality and feasibility cuts, the row-sum cuts, and the HiGHS run with its
restarts that every Benders LP goes through."""

from __future__ import annotations

import time

import highspy
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ..deadline import check_deadline
from .cone import exponent_closure
from .highs import COEF_CAP, INF, new_highs, pass_model

LOG_CAP = float(np.log(COEF_CAP))
CUT_CAP = 1e13  # a cut with a larger coefficient is left out (HiGHS refuses entries above 1e15)
_H = highspy.HighsModelStatus


def pair_rows(pi: NDArray[np.int64], pj: NDArray[np.int64], coef: NDArray[np.float64], m: int,
               col_i: NDArray[np.int64], col_j: NDArray[np.int64], n_cols: int) -> sp.csr_matrix:
    """Rows ``z[i, y] − coef·z[j, y]`` for each pair and output (row r*m + y); col_* map rows to variable blocks."""
    r = len(pi)
    y = np.tile(np.arange(m), r)
    row = np.repeat(np.arange(r) * m, m) + y
    cols = np.concatenate([np.repeat(col_i, m) * m + y, np.repeat(col_j, m) * m + y])
    vals = np.concatenate([np.ones(r * m), -np.repeat(coef, m)])
    return sp.csr_matrix((vals, (np.concatenate([row, row]), cols)), shape=(r * m, n_cols))


def run_highs(h: highspy.Highs, deadline: float | None, first_cap: float | None = None) -> _H:
    """Run HiGHS within the deadline. A status other than optimal / infeasible / time limit gets a cold restart
    without presolve on the model passed afresh (a warm start, or presolve on these badly scaled rows, can end in
    "Unknown" where a fresh solve succeeds; and HiGHS scales a model when it is passed, so a master whose cuts were
    added later is re-scaled: on the paper's Rome instance a master that the instance, cleared, had not solved after
    129 s solved in 0.5 s passed afresh, docs/WHAT-WE-LEARNED.md), then one interior-point run with crossover (a
    travel-cost subproblem on Rome, K = 500, ended "Unknown" in both simplex runs and solved by it); the instance's
    options are restored after.
    ``first_cap`` (seconds) bounds the first, warm run alone: a warm solve of the lazily built master on Rome once
    ran for most of a minute before ending "Unknown", where a cold restart was quick."""
    saved = {k: h.getOptionValue(k)[1] for k in ("solver", "presolve", "run_crossover")}  # highspy: (status, value)
    for attempt in range(3):
        left = None if deadline is None else max(deadline - time.perf_counter(), 0.01)
        capped = attempt == 0 and first_cap is not None and (left is None or first_cap < left)
        budget = first_cap if capped else left
        # HiGHS's clock is cumulative over the instance's runs: the limit is run time so far + what is left
        h.setOptionValue("time_limit", INF if budget is None else float(h.getRunTime() + budget))
        h.run()
        st = h.getModelStatus()
        if (st in (_H.kOptimal, _H.kInfeasible) or (st == _H.kTimeLimit and not capped)) or attempt == 2:
            if attempt:
                for key, value in saved.items():
                    h.setOptionValue(key, value)
            return st
        h.passModel(h.getLp())  # cold, and scaled anew over every row added since the model was passed
        h.setOptionValue("presolve", "off")
        if attempt == 1:
            h.setOptionValue("solver", "ipm")
            h.setOptionValue("run_crossover", "on")
    return st


class RowSumCuts:
    """Cheap valid cuts on z_Y from the row sums of the internal records (ours, not the paper's; the LP is unchanged).

    A chain of pair rows from a boundary record b to an internal record x of the same subset gives
    z_b,y ≤ e^{D(b,x)} z_x,y and z_x,y ≤ e^{D(x,b)} z_b,y (D: the subset's shortest exponent paths). With Σ_y z_x,y = 1,
    every choice b(y) of a boundary record per output gives two valid cuts in the master's variables alone:
    Σ_y e^{−D(b(y),x)} z_b(y),y ≤ 1 and Σ_y e^{D(x,b(y))} z_b(y),y ≥ 1. The most violated choice is the arg max
    (arg min) per output, so separation is a vectorised max over (b, x, y). These are the slivers that Benders'
    feasibility cuts otherwise remove one per subset and iteration.
    """

    def __init__(self, n: int, pi: NDArray[np.int64], pj: NDArray[np.int64], expo: NDArray[np.float64],
                 labels: NDArray[np.int64], is_b: NDArray[np.bool_], bidx: NDArray[np.int64]) -> None:
        self.blocks: list[tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]] = []
        for lab in np.unique(labels):
            members = np.flatnonzero(labels == lab)
            yl, xl = members[is_b[members]], members[~is_b[members]]
            if len(yl) == 0 or len(xl) == 0:
                continue
            pos = np.full(n, -1, dtype=np.int64)
            pos[members] = np.arange(len(members))
            inside = (labels[pi] == lab) & (labels[pj] == lab)
            El = np.full((len(members), len(members)), np.inf)
            np.fill_diagonal(El, 0.0)
            np.minimum.at(El, (pos[pi[inside]], pos[pj[inside]]), expo[inside])
            Dl = exponent_closure(El)
            low = np.exp(-Dl[np.ix_(pos[yl], pos[xl])])  # (b, x): z_x ≥ low·z_b
            with np.errstate(over="ignore"):
                up = np.exp(Dl[np.ix_(pos[xl], pos[yl])]).T  # (b, x): z_x ≤ up·z_b
            up[up > CUT_CAP] = np.inf  # such a bound is left out (a relaxation), never capped
            self.blocks.append((bidx[yl], low, up))

    def separate(self, zY: NDArray[np.float64], tol: float = 1e-7
                 ) -> tuple[list[float], list[NDArray[np.int64]], list[NDArray[np.float64]]]:
        """Cuts ``Σ a·z_Y ≥ lo`` violated by more than ``tol`` at zY (nb × m)."""
        m = zY.shape[1]
        lo: list[float] = []
        cols: list[NDArray[np.int64]] = []
        vals: list[NDArray[np.float64]] = []
        ys = np.arange(m)
        for brow, low, up in self.blocks:
            zb = zY[brow]  # (b, m)
            for coef, sign in ((low, -1.0), (up, 1.0)):
                with np.errstate(invalid="ignore"):
                    cand = np.where(np.isfinite(coef)[:, :, None], coef[:, :, None] * zb[:, None, :], np.inf)
                pick = cand.argmax(axis=0) if sign < 0 else cand.argmin(axis=0)  # (x, m)
                best = np.take_along_axis(cand, pick[None], axis=0)[0]
                total = best.sum(axis=1)
                bad = total > 1 + tol if sign < 0 else (total < 1 - tol) & np.isfinite(total)
                for x in np.flatnonzero(bad):  # one cut per violated internal record (few per round)
                    a = coef[pick[x], x]
                    cols.append(brow[pick[x]] * m + ys)
                    vals.append(sign * a)
                    lo.append(sign)
        return lo, cols, vals


class Subproblem:
    """Subproblem of one subset: HiGHS models of its LP and of its phase-1 (elastic) twin, rhs = h + B z_Y.

    Variables are the internal rows ``rows_x`` of the subset (``local`` maps a row to its position); the boundary
    rows are given (``bidx`` maps a row to its position in z_Y). Pair rows with a boundary end move it to the
    right-hand side.
    """

    def __init__(self, rows_x: NDArray[np.int64], local: NDArray[np.int64], bidx: NDArray[np.int64],
                 is_b: NDArray[np.bool_], pi: NDArray[np.int64], pj: NDArray[np.int64], coef: NDArray[np.float64],
                 W: NDArray[np.float64], nb: int, slack: float) -> None:
        m = W.shape[1]
        self.m, self.nx = m, len(rows_x)
        xi, xj = ~is_b[pi], ~is_b[pj]
        xx, xy, yx = xi & xj, xi & ~xj, ~xi & xj
        nv = self.nx * m
        blocks = [pair_rows(pi[xx], pj[xx], coef[xx], m, local[pi[xx]], local[pj[xx]], nv)]
        n_rows = blocks[0].shape[0]
        B_rows, B_cols, B_vals = [], [], []
        for mask, x_side, b_side, x_val, b_val in ((xy, pi, pj, 1.0, None), (yx, pj, pi, None, -1.0)):
            # internal i, boundary j: z_i ≤ e z̄_j;   boundary i, internal j: −e z_j ≤ −z̄_i
            r = int(mask.sum())
            y = np.tile(np.arange(m), r)
            rr = np.repeat(np.arange(r) * m, m) + y
            e = np.repeat(coef[mask], m)
            blocks.append(sp.csr_matrix((np.full(r * m, x_val) if x_val is not None else -e,
                                         (rr, np.repeat(local[x_side[mask]], m) * m + y)), shape=(r * m, nv)))
            B_rows.append(n_rows + rr)
            B_cols.append(np.repeat(bidx[b_side[mask]], m) * m + y)
            B_vals.append(e if b_val is None else np.full(r * m, b_val))
            n_rows += r * m
        self.n_pair_rows = n_rows
        self.n_fixed = blocks[0].shape[0]  # rows between internal records: their bounds never depend on z_Y
        self.loosened = False  # whether the last solve loosened every row by its phase-1 slack
        # every pair row divided by its largest coefficient, max(1, e): no entry above 1, so a row's slack is at
        # most rhs + 1 over z ∈ [0, 1], which is what makes the safe cuts of _duals tight
        big = np.maximum(1.0, np.concatenate([np.repeat(coef[k], m) for k in (xx, xy, yx)]))
        self.big = big
        scale = sp.diags(1.0 / big)
        self.B = (scale @ sp.csr_matrix((np.concatenate(B_vals), (np.concatenate(B_rows), np.concatenate(B_cols))),
                                        shape=(n_rows, nb * m))).tocsr()
        self.BT = self.B.T.tocsr()
        self.h = scale @ np.full(n_rows, float(slack))
        S = sp.csr_matrix((np.ones(nv), (np.repeat(np.arange(self.nx), m), np.arange(nv))), shape=(self.nx, nv))
        A = sp.vstack([scale @ sp.vstack(blocks), S]).tocsc()
        self.AT = A.T.tocsr()  # for the reduced costs of the safe cuts
        self.cost = W[rows_x].ravel()
        lower = np.concatenate([np.full(n_rows, -INF), np.ones(self.nx)])
        upper = np.concatenate([self.h, np.ones(self.nx)])
        self.lp = new_highs()
        self.lp.setOptionValue("solver", "simplex")
        self.lp.setOptionValue("presolve", "off")  # small LPs; presolve ended some in "Unknown"
        pass_model(self.lp, self.cost, A, lower, upper)
        # phase 1: the same rows with an elastic slack σ ≥ 0 on each pair row, measured in the row's unscaled units
        # (entry −1/scale), minimise Σ σ: a real infeasibility never looks like round-off
        A1 = sp.hstack([A, sp.vstack([-scale, sp.csr_matrix((self.nx, n_rows))])]).tocsc()
        self.ph1 = new_highs()
        self.ph1.setOptionValue("solver", "simplex")
        self.ph1.setOptionValue("presolve", "off")
        pass_model(self.ph1, np.concatenate([np.zeros(nv), np.ones(n_rows)]), A1, lower, upper)
        self.size = {"variables": nv, "constraints": A.shape[0], "nonzeros": int(A.nnz)}

    def _duals(self, h: highspy.Highs, phase1: bool, h_vec: NDArray[np.float64] | None = None
               ) -> tuple[float, NDArray[np.float64], float]:
        """A cut valid whatever the solver's tolerances (a "safe" dual bound). With the duals u (pair rows) and v
        (row sums) as returned and the reduced costs r = c − Aᵀ(u, v) recomputed here, every feasible point gives
        value = r·z + u·rhs − u·s + Σv with row slacks 0 ≤ s ≤ rhs + 1 and 0 ≤ z ≤ 1, hence value ≥ Σ min(r, 0) +
        Σ_{u ≤ 0} u·rhs − Σ_{u > 0} u + Σv: a u of the wrong sign (within HiGHS's tolerance) costs only itself.
        Returns (const, g, objective) of the cut ``const + g·z_Y`` (rhs = h + B z_Y; ``h_vec`` replaces h)."""
        dual = np.array(h.getSolution().row_dual)
        u, v = dual[: self.n_pair_rows], dual[self.n_pair_rows:]
        r = (0.0 if phase1 else self.cost) - self.AT @ dual
        neg = np.minimum(u, 0.0)
        hv = self.h if h_vec is None else h_vec
        const = float(neg @ hv - np.maximum(u, 0.0).sum() + v.sum() + np.minimum(r, 0.0).sum())
        return const, self.BT @ neg, float(h.getInfo().objective_function_value)

    def solve(self, zY: NDArray[np.float64], deadline: float | None
              ) -> tuple[str, float, NDArray[np.float64] | None, float, NDArray[np.float64] | None]:
        """(kind, const, g, value, z_X). kind ``opt``: cut w ≥ const + g·z_Y, value = optimum; ``feas``: cut
        const + g·z_Y ≤ 0; otherwise kind is a HiGHS status text (a time limit, or the failure of the phase-1 twin
        or of the loosened re-solve) and nothing else."""
        rhs = self.h + self.B @ zY
        idx = np.arange(self.n_pair_rows, dtype=np.int32)
        lo = np.full(self.n_pair_rows, -INF)
        f = 0 if self.loosened else self.n_fixed  # else only the rows with a boundary end change
        if self.n_pair_rows > f:
            # (mypy) highspy's stub does not declare changeRowsBounds
            self.lp.changeRowsBounds(self.n_pair_rows - f, idx[f:], lo[f:], rhs[f:])  # type: ignore[attr-defined]
        self.loosened = False
        st = run_highs(self.lp, deadline)
        if st == _H.kOptimal:
            const, g, value = self._duals(self.lp, phase1=False)
            z = np.maximum(np.array(self.lp.getSolution().col_value), 0.0).reshape(self.nx, self.m)
            return "opt", const, g, value, z
        if st == _H.kTimeLimit:
            return self.lp.modelStatusToString(st), 0.0, None, 0.0, None
        # infeasible (costs ≥ 0 and z bounded: never unbounded), or a failure: at a master point on the edge of
        # feasibility (Rome, K = 500, plain Benders) HiGHS said "Unknown" in every run while its presolve said
        # infeasible and unscaled simplex said optimal; the elastic twin, always feasible, decides
        if self.n_pair_rows > self.n_fixed:  # the twin's rows are never loosened
            f = self.n_fixed
            # (mypy) highspy's stub does not declare changeRowsBounds
            self.ph1.changeRowsBounds(self.n_pair_rows - f, idx[f:], lo[f:], rhs[f:])  # type: ignore[attr-defined]
        st = run_highs(self.ph1, deadline)
        if st != _H.kOptimal:  # the elastic twin is always feasible and bounded: anything else is a failure
            return "phase 1: " + self.ph1.modelStatusToString(st), 0.0, None, 0.0, None
        const, g, value = self._duals(self.ph1, phase1=True)
        if const + float(g @ zY) > 1e-9 or not self.n_pair_rows:
            return "feas", const, g, value, None
        # infeasible only within the solver's tolerances (the safe feasibility cut does not cut z_Y): re-solve with
        # each row loosened by its phase-1 slack; that LP relaxes the subproblem, so its cut is valid, and its rows
        # hold within those slacks (the mechanism repairs them exactly and re-checks the gap)
        sigma = np.maximum(np.array(self.ph1.getSolution().col_value)[self.nx * self.m:], 0.0) / self.big
        self.loosened = True
        self.lp.changeRowsBounds(self.n_pair_rows, idx, lo, rhs + sigma)  # type: ignore[attr-defined]  # not in the stubs
        st = run_highs(self.lp, deadline)
        if st in (_H.kInfeasible, _H.kUnboundedOrInfeasible):
            return "feas", const, g, value, None
        if st != _H.kOptimal:  # a time limit or a failure: said, never passed off as a feasibility cut
            return "loosened: " + self.lp.modelStatusToString(st), 0.0, None, 0.0, None
        const, g, value = self._duals(self.lp, phase1=False, h_vec=self.h + sigma)
        z = np.maximum(np.array(self.lp.getSolution().col_value), 0.0).reshape(self.nx, self.m)
        return "opt", const, g, value, z


def build_subs(W: NDArray[np.float64], pi: NDArray[np.int64], pj: NDArray[np.int64], coef: NDArray[np.float64],
                labels: NDArray[np.int64], is_b: NDArray[np.bool_], bidx: NDArray[np.int64], slack: float,
                deadline: float | None = None) -> tuple[list[Subproblem | None], list[NDArray[np.int64]]]:
    """One subproblem per subset (None when it has no internal record) and each subset's internal rows;
    ``OutOfTime`` once ``deadline`` passes (checked before each subset)."""
    n = len(W)
    nb = int(is_b.sum())
    subs: list[Subproblem | None] = []
    sub_rows: list[NDArray[np.int64]] = []
    local = np.full(n, -1, dtype=np.int64)
    parts = np.unique(labels)
    for n_done, lab in enumerate(parts):  # one loop per subset (M ≤ a few dozen), vectorised inside
        check_deadline(deadline, f"building the Benders subproblems ({n_done} of {len(parts)} done)")
        members = np.flatnonzero(labels == lab)
        rows_x = members[~is_b[members]]
        sub_rows.append(rows_x)
        if len(rows_x) == 0:
            subs.append(None)
            continue
        local[rows_x] = np.arange(len(rows_x))
        inside = (labels[pi] == lab) & (labels[pj] == lab) & (~is_b[pi] | ~is_b[pj])
        subs.append(Subproblem(rows_x, local, bidx, is_b, pi[inside], pj[inside], coef[inside], W, nb, slack))
    return subs, sub_rows
