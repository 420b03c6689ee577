"""The restricted LP of the structured solver: the mDP LP over a subset of its variables and of its pair rows.

    minimise   Σ_{(x,y) ∈ R} Wn[x, y] · z[x, y]
    subject to Σ_{y : (x,y) ∈ R} z[x, y] = 1                  for every row x
               z[i, y] − e^{E_ij} · z[j, y] ≤ 0               for every (i, j, y) ∈ S (both (i,y), (j,y) ∈ R)
               0 ≤ z ≤ 1

R holds the entries that can carry non-negligible mass, S the pair rows that bind or were found broken. Both only
grow (variables and rows are appended, so HiGHS keeps its basis between solves). The solver never trusts this
LP's own optimality: its solution is repaired into the cone and its row duals are certified by pricing.

*Held entries.* An entry (j, y) expected to sit at the least value its *holder* (h, y) allows is solved in the
variable s = z[j, y] − e^{−E_hj} z[h, y] ≥ 0: that pair row becomes a bound, and the holder's column carries the
held entries' row sums and costs. This is the same LP in other variables. It matters at small ε, where a column's
tail is thousands of entries each held up by one nearer its output's cell: as rows, every one of those binding
pair rows is in the simplex basis and each iteration's solves fill along them; as bounds they cost nothing
(whole-city Rome, ε = 2 km⁻¹, K = 500, the last LP solved cold: 21.6 s of CPU as rows, 5.8 s held by the cells'
rows; ``docs/WHAT-WE-LEARNED.md``). A holder is never itself held, so z = v + a·v[hold] is one step. Should HiGHS
fail on the held form, the LP is rebuilt with every pair row a row and solved again.

*Pooled rows.* Most pair rows the rounds add are slack at the LP's optimum, yet HiGHS would carry them in every
later solve (whole-city Rome, ε = 1 km⁻¹, K = 500: 198,048 rows in the last LP, 34,591 with a nonzero dual). After
a round the rows that are slack at its solution (basic, zero dual) leave HiGHS for a *pool* (:meth:`pool_slack_rows`;
deleting basic rows keeps the basis); a solve whose point breaks a pooled row takes it back and re-solves warm, so a
solve still ends optimal for the LP over every row of S. Dropping them outright instead costs rounds: they are
broken again (K = 200: 68 rounds against 13; ``docs/WHAT-WE-LEARNED.md``).

*Trust box.* :meth:`set_trust` keeps every model column within a radius of its value at a given exactly private
point; the LP solved is then a restriction of this one, so its point need not be this LP's optimum, but its duals
still give a certified bound (:meth:`dual_bound` holds for any multipliers). The structured solver uses it at
small ε, where the rounds' LP points otherwise jump far from any private point.
"""

from __future__ import annotations

import time

import highspy
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ..errors import SolverError
from .highs import INF, new_highs

# a solve is warm dual simplex (rows are added as cuts: the basis stays dual feasible); when that ends in numerical
# trouble it is retried cold with interior point (with crossover), then with primal simplex
_DUAL: dict[str, str | int] = {"solver": "simplex", "simplex_strategy": 1}
_IPM: dict[str, str | int] = {"solver": "ipm", "run_crossover": "on"}
_PRIMAL: dict[str, str | int] = {"solver": "simplex", "simplex_strategy": 4}
# HiGHS refuses a coefficient above 1e15; a pair row's e^{E_ij} is capped below it (only a tighter row: the LP is
# never trusted, its point is repaired and its bound computed by hand with the true coefficient)
ROW_COEF_CAP = 1e14
POOLED = -2  # ``row_at`` of a pair row in the pool: in S, not in HiGHS (−1: a held entry's bound)


def _check(status: highspy.HighsStatus, what: str) -> None:
    if status == highspy.HighsStatus.kError:
        raise SolverError(f"HiGHS refused the restricted LP's new {what}")


class RestrictedLP:
    """The LP over entries R and pair rows S, with its HiGHS model kept warm between solves."""

    def __init__(self, Wn: NDArray[np.float64], Es: NDArray[np.float64], tolerance: float = 1e-7) -> None:
        self.Wn, self.Es = Wn, Es
        self.n, self.m = Wn.shape
        self.tolerance = tolerance
        self.var = np.full((self.n, self.m), -1, dtype=np.int64)  # column index of entry (x, y), −1: not in R
        self.xs = np.zeros(0, dtype=np.int64)
        self.ys = np.zeros(0, dtype=np.int64)
        self.hold = np.zeros(0, dtype=np.int64)  # each entry's holder entry (−1: none), fixed when the model is built
        self.pair_codes = np.zeros(0, dtype=np.int64)  # sorted (i·n + j)·m + y of the rows in S
        # the pair rows of S in the order added: the entries z[i,y] and z[j,y], e^{E_ij}, and the HiGHS row (−1: the
        # bound of a held entry)
        self.row_hi = np.zeros(0, dtype=np.int64)
        self.row_lo = np.zeros(0, dtype=np.int64)
        self.row_coef = np.zeros(0)
        self.row_at = np.zeros(0, dtype=np.int64)
        self.h: highspy.Highs | None = None
        self.built = (0, 0)  # entries and pair rows of S handed to HiGHS so far
        self.solves = 0
        self.retries = 0
        self.pooled = 0  # pair rows moved to the pool, counted each time
        self.returned = 0  # pooled rows taken back because a solution broke them
        self.simplex_iterations = self.ipm_iterations = 0  # HiGHS's iterations over every solve
        self.rebuilt = False  # the held form failed and the LP was rebuilt with every pair row a row
        self.z = np.zeros(0)
        self.mu = np.zeros(self.n)
        self.pair_duals = np.zeros(0)
        self.objective = np.nan  # the last solve's objective (Wn's unit); no bound: the LP lacks rows and entries
        self.trust: tuple[NDArray[np.float64], float] | None = None  # (centre Z, radius): ``set_trust``
        self._box: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None  # the bounds HiGHS holds, if boxed
        self.trust_lifted = False  # a boxed solve failed, so the box was lifted

    @property
    def n_vars(self) -> int:
        """Number of entries (variables) in the restricted LP."""
        return len(self.xs)

    @property
    def n_pairs(self) -> int:
        """Number of mDP pair rows in the restricted LP."""
        return len(self.pair_codes)

    @property
    def n_held(self) -> int:
        """Number of entries solved as held (their holder's pair row a bound)."""
        return int(np.count_nonzero(self.hold >= 0))

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
            self.hold = np.concatenate([self.hold, np.full(k, -1, dtype=np.int64)])
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
        self.row_hi = np.concatenate([self.row_hi, self.var[i, y]])
        self.row_lo = np.concatenate([self.row_lo, self.var[j, y]])
        self.row_coef = np.concatenate([self.row_coef, np.exp(self.Es[i, j])])
        self.row_at = np.concatenate([self.row_at, np.full(len(code), -1, dtype=np.int64)])
        self.pair_codes = np.union1d(self.pair_codes, code)
        return len(code)

    def hold_by(self, i: NDArray[np.int64], j: NDArray[np.int64], y: NDArray[np.int64]) -> int:
        """Add the pair rows z[i,y] ≤ e^{E_ij} z[j,y] and solve each z[j,y] as held by z[i,y] (that row a bound; see
        the module's text). An entry gets one holder, and holders are not held: pairs that would break that stay
        plain rows. Only before the first solve; returns how many entries are held in all."""
        if self.h is not None:
            raise RuntimeError("entries are held only before the first solve")
        self.add_pairs(i, j, y)
        keep = i != j
        hi, lo = self.var[i[keep], y[keep]], self.var[j[keep], y[keep]]
        _, first = np.unique(lo, return_index=True)  # one holder per entry
        hi, lo = hi[first], lo[first]
        ok = (self.hold[hi] < 0) & (self.hold[lo] < 0) & ~np.isin(hi, lo) & ~np.isin(lo, self.hold[self.hold >= 0])
        self.hold[lo[ok]] = hi[ok]
        return self.n_held

    # ---- the HiGHS model: the entries and pair rows of R and S not yet handed over ----
    def _factor(self, e: NDArray[np.int64]) -> NDArray[np.float64]:
        """e^{−E_hj} of held entries e (z[j] = s[j] + that · z[h])."""
        return np.exp(-self.Es[self.xs[self.hold[e]], self.xs[e]])

    def _in_columns(self, e: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
        """z[e[k]] as a combination of model columns: triplets (k, column, coefficient)."""
        held = np.flatnonzero(self.hold[e] >= 0)
        return (np.concatenate([np.arange(len(e)), held]), np.concatenate([e, self.hold[e[held]]]),
                np.concatenate([np.ones(len(e)), self._factor(e[held])]))

    def _sync(self) -> None:
        """Hand HiGHS the entries and pair rows added since the last solve (a new model at the first)."""
        n = self.n
        if self.h is None:
            h = new_highs()
            h.setOptionValue("presolve", "off")
            # Devex pricing: dual steepest edge recomputes its weights from scratch after rows are added (about a
            # second per re-solve at K = 1,000, for a handful of iterations); Devex is also faster from scratch here
            h.setOptionValue("simplex_dual_edge_weight_strategy", 1)
            # a pair row met only to HiGHS's tolerance leaves an entry that much too low; the repair then raises it
            # and the row fix-up spreads the excess, so the tolerance must be below the certified gap asked for
            h.setOptionValue("primal_feasibility_tolerance", self.tolerance)
            h.setOptionValue("dual_feasibility_tolerance", self.tolerance)
            for key, value in _DUAL.items():
                h.setOptionValue(key, value)
            h.addRows(n, np.ones(n), np.ones(n), 0, np.zeros(n, dtype=np.int32), np.zeros(0, dtype=np.int32),
                      np.zeros(0))
            self.h, self.built = h, (0, 0)
        h = self.h
        v0, p0 = self.built
        if v0 < self.n_vars:  # new columns: the entry's row sum, and those of the entries it holds
            new = np.arange(v0, self.n_vars)
            held = np.flatnonzero(self.hold >= v0)
            rows = np.concatenate([self.xs[new], self.xs[held]])
            cols = np.concatenate([new, self.hold[held]]) - v0
            vals = np.concatenate([np.ones(len(new)), self._factor(held)])
            A = sp.csc_matrix((vals, (rows, cols)), shape=(n, len(new)))
            A.sum_duplicates()
            ents = np.concatenate([new, held])
            cost = np.asarray(np.bincount(cols, vals * self.Wn[self.xs[ents], self.ys[ents]], minlength=len(new)),
                              dtype=np.float64)
            _check(h.addCols(len(new), cost, np.zeros(len(new)), np.ones(len(new)), A.nnz,  # z ≤ 1, so v ≤ 1
                             A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32), A.data), "entries")
        if p0 < len(self.row_hi):  # new pair rows, except the bounds of held entries
            idx = np.arange(p0, len(self.row_hi))
            self._add_rows(idx[self.hold[self.row_lo[idx]] != self.row_hi[idx]])
        self.built = (self.n_vars, len(self.row_hi))

    def _add_rows(self, idx: NDArray[np.int64]) -> None:
        """Hand HiGHS the pair rows ``idx`` of S as rows, appended after its last row."""
        h = self.h
        assert h is not None
        r = len(idx)
        self.row_at[idx] = h.getNumRow() + np.arange(r)
        k1, c1, a1 = self._in_columns(self.row_hi[idx])
        k2, c2, a2 = self._in_columns(self.row_lo[idx])
        coef = np.minimum(self.row_coef[idx], ROW_COEF_CAP)
        A = sp.csr_matrix((np.concatenate([a1, -coef[k2] * a2]),
                           (np.concatenate([k1, k2]), np.concatenate([c1, c2]))), shape=(r, self.n_vars))
        A.sum_duplicates()
        _check(h.addRows(r, np.full(r, -INF), np.zeros(r), A.nnz, A.indptr[:-1].astype(np.int32),
                         A.indices.astype(np.int32), A.data), "pair rows")

    def pool_slack_rows(self) -> int:
        """Move the pair rows that are slack at the last solution (basic in HiGHS's basis, zero dual) from HiGHS
        to the pool; the basis stays valid, so the next solve is warm. Returns how many moved."""
        h = self.h
        if h is None or not self.solves:
            return 0
        basis = h.getBasis()
        if not basis.valid:  # no basis to keep warm (and no statuses to read): leave every row in place
            return 0
        live = np.flatnonzero(self.row_at >= 0)
        basic = np.asarray(basis.row_status)[self.row_at[live]] == highspy.HighsBasisStatus.kBasic
        drop = live[basic & (self.pair_duals[live] == 0.0)]
        if not len(drop):
            return 0
        gone = np.sort(self.row_at[drop]).astype(np.int32)
        _check(h.deleteRows(len(gone), gone), "pool")
        self.row_at[drop] = POOLED
        live = np.flatnonzero(self.row_at >= 0)
        self.row_at[live] -= np.searchsorted(gone, self.row_at[live])
        self.pooled += len(drop)
        return len(drop)

    def _broken_pooled(self) -> NDArray[np.int64]:
        """The pooled pair rows the last solution breaks (by more than 1e-9 of the larger side), each with the
        coefficient it has in HiGHS (capped at ``ROW_COEF_CAP``), so that the LP solved is the one without a pool."""
        idx = np.flatnonzero(self.row_at == POOLED)
        zi = self.z[self.row_hi[idx]] if len(idx) else np.zeros(0)
        gap = zi - np.minimum(self.row_coef[idx], ROW_COEF_CAP) * self.z[self.row_lo[idx]]
        return idx[gap > 1e-9 * np.maximum(zi, 1e-300)]

    def tighten(self, tolerance: float) -> None:
        """Solve from now on to a tighter primal and dual feasibility tolerance (the next solve starts warm from the
        last basis and cleans up what the new tolerance no longer allows)."""
        self.tolerance = float(tolerance)
        if self.h is not None:
            for option in ("primal_feasibility_tolerance", "dual_feasibility_tolerance"):
                _check(self.h.setOptionValue(option, self.tolerance), f"{option} {self.tolerance:g}")

    def _rebuild_unheld(self) -> None:
        """Drop the held form: a new model with every entry its own column and every pair row a row."""
        self.hold[:] = -1
        self.row_at[:] = -1
        self.h = None
        self._box = None  # the new model's columns are in [0, 1]
        self.rebuilt = True
        self._sync()

    @property
    def n_rows_solved(self) -> int:
        """Pair rows the next solve holds as rows (not as the bounds of held entries, nor pooled)."""
        return int(np.count_nonzero((self.hold[self.row_lo] != self.row_hi) & (self.row_at != POOLED)))

    def set_trust(self, centre: NDArray[np.float64] | None, radius: float = np.inf) -> None:
        """Keep each model column within ``radius`` of its value at ``centre`` (an (n, m) exactly private point) in
        the next solves; None lifts the box. Should a boxed solve fail (the centre's mass off R can leave the box
        without a feasible point), the box is lifted for good and the LP solved again."""
        self.trust = None if centre is None or not np.isfinite(radius) else (centre, float(radius))

    def _apply_trust(self) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
        """Set the columns' bounds: the trust box around its centre, in the model's variables (a held entry's column
        is s = z[j] − e^{−E_hj}·z[h]), else [0, 1]. Returns the box when there is one."""
        h, k = self.h, self.n_vars
        assert h is not None
        lo, hi = np.zeros(k), np.ones(k)
        box = None
        if self.trust is not None:
            centre, radius = self.trust
            v = centre[self.xs, self.ys]
            held = np.flatnonzero(self.hold >= 0)
            v[held] -= self._factor(held) * centre[self.xs[self.hold[held]], self.ys[self.hold[held]]]
            v = np.clip(v, 0.0, 1.0)
            lo, hi = np.maximum(0.0, v - radius), np.minimum(1.0, v + radius)
            box = lo, hi
        _check(h.changeColsBounds(k, np.arange(k, dtype=np.int32), lo, hi), "trust box")
        return box

    @property
    def trust_bound(self) -> int:
        """Model columns at a bound of the trust box in the last solve (0 without a box): whether the box binds."""
        if self._box is None or self.h is None:
            return 0
        lo, hi = self._box
        x = np.asarray(self.h.getSolution().col_value)[:len(lo)]
        tol = 10 * self.tolerance
        return int(np.count_nonzero(((x <= lo + tol) & (lo > 0)) | ((x >= hi - tol) & (hi < 1))))

    def solve(self, deadline: float | None, cold_ipm: bool = False) -> str:
        """Solve; ``optimal``, ``time limit`` or HiGHS's status text. Sets ``z`` (values on R) and ``mu``.

        ``cold_ipm`` starts with interior point (faster than simplex from scratch on a large first LP).
        """
        self._sync()
        if self.trust is not None or self._box is not None:  # (re)set the box, or lift the one HiGHS holds
            self._box = self._apply_trust()
        st = self._run_boxed([_IPM, _PRIMAL] if cold_ipm else [_DUAL, _IPM, _PRIMAL], deadline)
        while st == "optimal" and len(back := self._broken_pooled()):  # pooled rows it breaks come back, warm
            self._add_rows(back)
            self.returned += len(back)
            st = self._run_boxed([_DUAL, _IPM, _PRIMAL], deadline)
        if st not in ("optimal", "time limit") and self.n_held:
            self._rebuild_unheld()
            st = self._run([_IPM, _PRIMAL], deadline)
        return st

    def _run_boxed(self, attempts: list[dict[str, str | int]], deadline: float | None) -> str:
        """``_run``; should it fail with the trust box on (the box may hold no feasible point: the centre's mass off
        R), the box is lifted for good and the LP solved again."""
        st = self._run(attempts, deadline)
        if st not in ("optimal", "time limit") and self._box is not None:
            self.trust, self.trust_lifted = None, True
            self._box = self._apply_trust()
            st = self._run([_DUAL, _IPM, _PRIMAL], deadline)
        return st

    def _run(self, attempts: list[dict[str, str | int]], deadline: float | None) -> str:
        h = self.h
        assert h is not None
        st = highspy.HighsModelStatus.kNotset
        for k, options in enumerate(attempts):
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
            info = h.getInfo()
            self.simplex_iterations += max(0, int(info.simplex_iteration_count))
            self.ipm_iterations += max(0, int(info.ipm_iteration_count))
            for key, value in _DUAL.items():
                h.setOptionValue(key, value)
            st = h.getModelStatus()
            if st == highspy.HighsModelStatus.kOptimal:
                self._read(h.getSolution(), float(h.getInfo().objective_function_value))
                return "optimal"
            if st == highspy.HighsModelStatus.kTimeLimit:
                return "time limit"
        return h.modelStatusToString(st)

    def _read(self, sol: highspy.HighsSolution, objective: float) -> None:
        """Entries z = v + e^{−E_hj}·v[holder], row duals μ, and the pair rows' duals: a held entry's bound row has
        dual −(reduced cost of s)/e^{E_hj} (≤ 0), which makes z[j]'s reduced cost in the LP with that row 0 or the
        same as s's."""
        v = np.array(sol.col_value)
        z = v.copy()
        held = np.flatnonzero(self.hold >= 0)
        z[held] += self._factor(held) * v[self.hold[held]]
        self.z = np.clip(z, 0.0, 1.0)
        duals = np.array(sol.row_dual)
        self.mu = duals[:self.n]
        rows = self.row_at >= 0
        lam = np.zeros(len(self.row_at))  # a pooled row's dual: 0 (slack when it left, and unbroken since)
        lam[rows] = duals[self.row_at[rows]]
        bound = np.flatnonzero(self.row_at == -1)
        lam[bound] = -np.maximum(np.array(sol.col_dual)[self.row_lo[bound]], 0.0) / self.row_coef[bound]
        self.pair_duals = lam
        self.objective = objective

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
