"""The restricted LP of the structured solver: the mDP LP over a subset of its variables and of its pair rows.

    minimise   Σ_{(x,y) ∈ R} Wn[x, y] · z[x, y]
    subject to Σ_{y : (x,y) ∈ R} z[x, y] = 1                  for every row x
               z[i, y] − e^{E_ij} · z[j, y] ≤ 0               for every (i, j, y) ∈ S (both (i,y), (j,y) ∈ R)
               0 ≤ z ≤ 1

R holds the entries that can carry non-negligible mass, S the pair rows that bind or were found broken. Both only
grow (variables and rows are appended, so HiGHS keeps its basis between solves). The solver never trusts this
LP's own optimality: its solution is repaired into the cone and its row duals are certified by pricing.
"""

from __future__ import annotations

import time

import highspy
import numpy as np
from numpy.typing import NDArray

from .highs import INF, new_highs

# a solve is warm dual simplex (rows are added as cuts: the basis stays dual feasible); when that ends in numerical
# trouble it is retried cold with interior point (with crossover), then with primal simplex
_DUAL: dict[str, str | int] = {"solver": "simplex", "simplex_strategy": 1}
_IPM: dict[str, str | int] = {"solver": "ipm", "run_crossover": "on"}
_PRIMAL: dict[str, str | int] = {"solver": "simplex", "simplex_strategy": 4}


class RestrictedLP:
    """The LP over entries R and pair rows S, with its HiGHS model kept warm between solves."""

    def __init__(self, Wn: NDArray[np.float64], Es: NDArray[np.float64], tolerance: float = 1e-7) -> None:
        self.Wn, self.Es = Wn, Es
        self.n, self.m = Wn.shape
        self.var = np.full((self.n, self.m), -1, dtype=np.int64)  # column index of entry (x, y), −1: not in R
        self.xs = np.zeros(0, dtype=np.int64)
        self.ys = np.zeros(0, dtype=np.int64)
        self.pair_codes = np.zeros(0, dtype=np.int64)  # sorted (i·n + j)·m + y of the rows in S
        # the pair rows in HiGHS's order (after the n row sums): the columns of z[i,y] and z[j,y], and e^{E_ij}
        self.row_hi = np.zeros(0, dtype=np.int64)
        self.row_lo = np.zeros(0, dtype=np.int64)
        self.row_coef = np.zeros(0)
        h = new_highs()
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("simplex_strategy", 1)  # dual simplex: rows are added as cuts, the basis stays dual feasible
        h.setOptionValue("presolve", "off")
        # Devex pricing: dual steepest edge recomputes its weights from scratch after rows are added (about a second
        # per re-solve at K = 1,000, for a handful of iterations); Devex is also faster from scratch here
        h.setOptionValue("simplex_dual_edge_weight_strategy", 1)
        # a pair row met only to HiGHS's tolerance leaves an entry that much too low; the repair then raises it and
        # the row fix-up spreads the excess, so the tolerance must be below the certified gap asked for
        h.setOptionValue("primal_feasibility_tolerance", tolerance)
        h.setOptionValue("dual_feasibility_tolerance", tolerance)
        h.addRows(self.n, np.ones(self.n), np.ones(self.n), 0, np.zeros(self.n, dtype=np.int32),
                  np.zeros(0, dtype=np.int32), np.zeros(0))
        self.h = h
        self.solves = 0
        self.retries = 0
        self.z = np.zeros(0)
        self.mu = np.zeros(self.n)
        self.pair_duals = np.zeros(0)
        self.objective = np.nan  # the last solve's objective (Wn's unit); no bound: the LP lacks rows and entries

    @property
    def n_vars(self) -> int:
        """Number of entries (variables) in the restricted LP."""
        return len(self.xs)

    @property
    def n_pairs(self) -> int:
        """Number of mDP pair rows in the restricted LP."""
        return len(self.pair_codes)

    def add_vars(self, xs: NDArray[np.int64], ys: NDArray[np.int64]) -> int:
        """Add entries (x, y) not yet in R; returns how many were new."""
        new = self.var[xs, ys] < 0
        xs, ys = xs[new], ys[new]
        if len(xs):
            code = np.unique(xs * self.m + ys)
            xs, ys = code // self.m, code % self.m
            k = len(xs)
            self.var[xs, ys] = self.n_vars + np.arange(k)
            self.xs, self.ys = np.concatenate([self.xs, xs]), np.concatenate([self.ys, ys])
            self.h.addCols(k, self.Wn[xs, ys], np.zeros(k), np.ones(k), k, np.arange(k, dtype=np.int32),
                           xs.astype(np.int32), np.ones(k))
        return len(xs)

    def add_pairs(self, i: NDArray[np.int64], j: NDArray[np.int64], y: NDArray[np.int64]) -> int:
        """Add rows z[i,y] ≤ e^{E_ij} z[j,y] not yet in S; both entries are added to R first. Returns how many."""
        keep = i != j
        i, j, y = i[keep], j[keep], y[keep]
        code = np.unique((i * self.n + j) * self.m + y)
        code = code[~np.isin(code, self.pair_codes, assume_unique=True)]
        if not len(code):
            return 0
        y = code % self.m
        i, j = (code // self.m) // self.n, (code // self.m) % self.n
        self.add_vars(np.concatenate([i, j]), np.concatenate([y, y]))
        r = len(code)
        hi, lo, coef = self.var[i, y], self.var[j, y], np.exp(self.Es[i, j])
        idx = np.column_stack([hi, lo]).ravel().astype(np.int32)
        val = np.column_stack([np.ones(r), -coef]).ravel()
        self.row_hi, self.row_lo = np.concatenate([self.row_hi, hi]), np.concatenate([self.row_lo, lo])
        self.row_coef = np.concatenate([self.row_coef, coef])
        self.h.addRows(r, np.full(r, -INF), np.zeros(r), 2 * r, (2 * np.arange(r)).astype(np.int32), idx, val)
        self.pair_codes = np.union1d(self.pair_codes, code)
        return r

    def solve(self, deadline: float | None, cold_ipm: bool = False) -> str:
        """Solve; ``optimal``, ``time limit`` or HiGHS's status text. Sets ``z`` (values on R) and ``mu``.

        ``cold_ipm`` starts with interior point (faster than simplex from scratch on a large first LP).
        """
        h = self.h
        st = highspy.HighsModelStatus.kNotset
        for k, options in enumerate([_IPM, _PRIMAL] if cold_ipm else [_DUAL, _IPM, _PRIMAL]):
            if deadline is not None:
                left = deadline - time.perf_counter()
                if left <= 0:
                    return "time limit"
                # HiGHS's clock is cumulative over the instance's runs: the limit is its run time so far + what is left
                h.setOptionValue("time_limit", float(h.getRunTime() + left))
            for key, value in options.items():
                h.setOptionValue(key, value)
            if k:
                h.clearSolver()
                self.retries += 1
            h.run()
            self.solves += 1
            for key, value in _DUAL.items():
                h.setOptionValue(key, value)
            st = h.getModelStatus()
            if st == highspy.HighsModelStatus.kOptimal:
                sol = h.getSolution()
                self.z = np.clip(np.array(sol.col_value), 0.0, 1.0)
                duals = np.array(sol.row_dual)
                self.mu, self.pair_duals = duals[:self.n], duals[self.n:]
                self.objective = float(h.getInfo().objective_function_value)
                return "optimal"
            if st == highspy.HighsModelStatus.kTimeLimit:
                return "time limit"
        return h.modelStatusToString(st)

    def dual_bound(self) -> float:
        """A lower bound on the whole LP's optimum from the last solve's duals, certified by weak duality alone.

        Dropping the pair rows outside S relaxes the LP, and every entry outside R (no pair row yet) joins the
        relaxation with its row-sum coefficient only; the row sums force z ≤ 1. For any row duals μ and pair duals
        λ ≤ 0 (HiGHS's sign for a ≤ row of a minimisation, enforced here by clipping) the Lagrangian of that
        relaxation over the box [0, 1] is Σ_x μ_x + Σ_{entries} min(0, reduced cost): a bound that no solver
        tolerance can inflate, computed in O(entries + rows). Once S holds the binding pair rows and no entry
        outside R prices negative it equals the restricted LP's optimum, so it closes the gap where the
        transportation pricing (``mdpviz.lp.pricing``, |Y| small LPs) would cost seconds. The rounding of the sums
        is subtracted as a margin.
        """
        k = min(len(self.z), self.n_vars)
        lam = np.minimum(self.pair_duals, 0.0)
        p = len(lam)  # pair rows added since the last solve have no dual yet: dropping them is still a relaxation
        rc = self.Wn[self.xs[:k], self.ys[:k]] - self.mu[self.xs[:k]]
        rc -= np.bincount(self.row_hi[:p], lam, minlength=k)[:k]
        rc += np.bincount(self.row_lo[:p], lam * self.row_coef[:p], minlength=k)[:k]
        G = self.Wn - self.mu[:, None]
        G[self.xs[:k], self.ys[:k]] = rc
        terms = np.minimum(G, 0.0)
        scale = float(np.abs(self.mu).sum() + np.abs(terms).sum()
                      + np.abs(lam) @ (1.0 + self.row_coef[:p]))
        return float(self.mu.sum() + terms.sum()) - 1e-12 * scale

    def solution(self) -> NDArray[np.float64]:
        """The last solution as an (n, m) matrix, zero outside R."""
        Z = np.zeros((self.n, self.m))
        k = min(len(self.z), self.n_vars)  # entries added since the last solve are 0 in it
        Z[self.xs[:k], self.ys[:k]] = self.z[:k]
        return Z
