"""The exact structured solver of the optimal-mDP LP: row-and-column generation on the LP itself.

The LP (Bordenabe et al. 2014, with a general exponent matrix) is

    minimise   Σ_{x,y} W[x, y] · Z[x, y]                       (W = p_x · c_xy, e.g. metres)
    subject to Σ_y Z[x, y] = 1                                  for every row x
               Z[i, y] ≤ e^{E[i, j]} · Z[j, y]                  for every ordered pair (i, j) and output y
               Z ≥ 0.

Every column Z[:, y] lies in the same cone C = {v ≥ 0 : v_i ≤ e^{E_ij} v_j}; only the row sums couple the
columns, and the *Lipschitz repair* of ``mdpviz.lp.cone`` maps any vector into C ∩ [0, 1]^n exactly. The solver
(:func:`solve_structured`) is built on that fact.
At the papers' scale (a city 40–60 km wide, ε = 5 km⁻¹) a row's mass sits on a few nearby outputs and almost every
one of the K²·|Y| pair rows is slack, so it works on the LP itself, restricted:

* **Restricted LP** (``mdpviz.lp.restricted``): the entries (x, y) within reach of the rows for which y is
  cheapest, and the pair rows that hold an entry up (from its nearest cell row, as a bound: the entry is *held*,
  and from its nearest neighbours), solved by warm dual simplex.
* **Upper bound**: its solution, Lipschitz-repaired and made row-stochastic inside the cone, is an exactly private
  mechanism; its objective is an upper bound.
* **Lower bound**, two certified kinds. Every round, the LP's own duals (:meth:`RestrictedLP.dual_bound`): weak
  duality for the LP with the missing pair rows dropped, over the box the row sums imply, computed by hand from
  the duals, so no solver tolerance can inflate it; it equals the LP's value once no entry outside the LP prices
  negative. Where entries outside still matter, *pricing* (``mdpviz.lp.pricing``): at the LP's row duals μ,
  ``Σ_x μ_x + Σ_y min_{v ∈ C ∩ [0,1]^n} (W[:, y] − μ)·v`` bounds the optimum for any μ; each minimum is bounded
  from below by a capacity-feasible flow of a small transportation problem.
* **Trust box** (small ε only): every round's LP keeps its columns near the best exactly private point so far,
  from the cells' point on (``RestrictedLP.set_trust``), so its point cannot jump far from a private one.
* **Growth and termination**: the pair rows and entries the repair had to raise, and the entries priced negative,
  join the LP; the loop stops when the certified gap is within the tolerance asked for (status ``optimal``),
  and otherwise says how far it got.

Where most entries are within reach of their output's cell (small ε·d: the small cities) the restricted LP would be
most of the LP; there :func:`mdpviz.lp.conic.solve_conic` (conic column generation, no pair rows in its master)
goes first, with this engine as its fallback (``engine`` selects either).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..deadline import OutOfTime
from ..errors import ParameterError, SolverError
from ..progress import Progress, no_progress
from .cone import (
    RepairFacts,
    RowFix,
    exponent_closure,
    floor_columns,
    lipschitz_repair,
    make_row_stochastic,
)
from .conic import solve_conic
from .outcome import EngineDiagnostics, StructuredOutcome
from .pricing import LOG_COEF_CAP, Pricer
from .restricted import RestrictedLP
from .stop_points import CELL_SHARES, cells_point, starting_point, stop_point

__all__ = ["CELL_SHARES", "cells_point", "no_privacy_floor", "solve_structured", "starting_point", "stop_point"]

REACH = 15.0  # the first LP holds entry (x, y) when x is within this exponent of the rows for which y is cheapest
# above this share of entries within REACH (small ε·d: the small cities) the conic engine goes first: the restricted
# LP would hold most of the LP's entries and pair rows (Helsinki K = 100 at ε = 5: 100 %, over 300 s; conic 17 s).
# Rome at ε = 1 (57–63 %) stays below: there the row-and-column engine was as fast or faster (tests' K = 150: 2 s
# against 18 s)
DENSE = 0.7
DENSE_KNN = 8  # neighbours per row whose pairs enter the first LP on a dense instance (0 on a sparse one)
ENGINES = ("auto", "rows", "conic")
PAIR_CAPS = (15.0, LOG_COEF_CAP, 25.0)  # pair rows with larger exponents are left out; the next cap when stalled
# a round that adds at least COLD_GROWTH of the pair rows an LP of at least COLD_MIN_ROWS already holds as rows is
# solved cold by interior point, not warm by dual simplex: there a warm iteration costs milliseconds (whole-city Rome,
# ε = 2 km⁻¹, K = 2,000: 26,444 iterations in 213 s for a round adding 39,139 rows to 129,112) and a warm solve can
# end on a singular basis; below that size warm stays faster (ε = 1, K = 200: 5.9 s against 9.5 s with one cold round).
# With the pool below, HiGHS seldom holds that many rows; lowering the size to 20,000 made rounds cold again and cost
# more (ε = 1, K = 500: 364 s against 216 s; ε = 2, K = 2,000: 720 s against 488 s)
COLD_GROWTH = 0.1
COLD_MIN_ROWS = 50_000
# from this many pair rows held as rows, a round's slack rows leave HiGHS for a pool (``RestrictedLP.pool_slack_rows``;
# whole-city Rome, ε = 2 km⁻¹, K = 1,000, back to back: 47.5 s of CPU against 72.3 s unpooled); below it the warm
# re-solves that take rows back cost more than they save (ε = 2, K = 500: 4.0 s against 3.3 s, every round pooled).
# It loses at ε = 1, K = 1,000: 4 LP rounds in 300 s against 6 (docs/WHAT-WE-LEARNED.md, "Slack rows leave HiGHS")
POOL_MIN_ROWS = 20_000
# at small ε (at least TRUST_DENSE of the entries within REACH of their output's cell) and from TRUST_MIN_ROWS secrets,
# every LP round keeps its columns within TRUST_RADIUS of their value at the best exactly private point so far
# (``RestrictedLP.set_trust``), starting from the cells' point; without it the rounds' LP points jump far from any
# private point and the pool churns (whole-city Rome, ε = 1 km⁻¹, K = 500: docs/WHAT-WE-LEARNED.md, "A trust box")
TRUST_RADIUS = 0.3
TRUST_DENSE = 0.5
TRUST_MIN_ROWS = 400
# a round with nothing left to add whose gap is still open re-solves at TIGHTEN times HiGHS's feasibility tolerance,
# down to TIGHTEST, before it stalls: with weights spread over many decades (a DISTA-LP cell's prior, 1e-11 to 1e-2
# of the total) dual infeasibilities of 1e-7 on thousands of entries lower the priced bound by more than the gap
# (Rome, K = 500, travel cost, ε = 3.5 km⁻¹: 4 of 8 cells stalled at gaps of 2.9e-4 to 4.0e-3; at 1e-9 all optimal)
TIGHTEN = 1e-2
TIGHTEST = 1e-10


def _setup(W: NDArray[np.float64], E: NDArray[np.float64],
           closed: bool) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """Closed exponents Es (the closure unless ``closed``), costs in a unit where they are ≤ 1, and that unit."""
    n = W.shape[0]
    E = np.asarray(E, dtype=np.float64)
    if E.shape != (n, n):
        raise ParameterError(f"E must be {n} × {n} to match W's {n} rows; got {E.shape}.")
    if closed:
        if np.any(E < 0) or np.any(np.isnan(E)):
            raise ParameterError("Exponents must be ≥ 0 (a negative exponent forces two rows to zero: infeasible).")
        Es = E.copy()
        np.fill_diagonal(Es, 0.0)
    else:
        Es = exponent_closure(E)
    scale = float(np.abs(W).max()) or 1.0
    return Es, W / scale, scale


def _cells(Wn: NDArray[np.float64], Es: NDArray[np.float64],
           out_rows: NDArray[np.int64] | None) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """For each output y, its *cell* (the rows for which it is cheapest, and its own row): reach[x, y] = min over
    the cell of E*[i, x] and holder[x, y] the minimising i. At large ε the optimal column is close to
    e^{−reach[·, y]} (held up by its cell), which is what the first LP and its pair rows are built from."""
    n, m = Wn.shape
    own = np.argmin(Wn, axis=0) if out_rows is None else np.asarray(out_rows, dtype=np.int64)
    cheapest = np.argmin(Wn, axis=1)
    reach = np.empty((n, m))
    holder = np.empty((n, m), dtype=np.int64)
    cols = np.arange(n)
    for y in range(m):  # one vectorised step per output
        cell = np.union1d(np.flatnonzero(cheapest == y), [own[y]])
        best = np.argmin(Es[cell], axis=0)
        holder[:, y] = cell[best]
        reach[:, y] = Es[cell[best], cols]
    return reach, holder


def _first_lp(lp: RestrictedLP, reach: NDArray[np.float64], holder: NDArray[np.int64], knn: int,
              cap: float) -> None:
    """Entries within REACH of their output's cell, each held by its holder (that pair row a bound:
    ``RestrictedLP.hold_by``); pair rows from its k nearest neighbours, in the direction that holds the entry farther
    from the cell up (both directions inside a cell)."""
    Es = lp.Es
    n, m = reach.shape
    R = reach <= REACH
    xs, ys = np.nonzero(R)
    lp.add_vars(xs, ys)
    hi = holder[xs, ys]
    ok = (hi != xs) & (Es[hi, xs] <= cap)
    lp.hold_by(hi[ok], xs[ok], ys[ok])  # each entry held by its holder: those pair rows are bounds
    k = min(knn, n - 1)
    if k <= 0:
        return
    sym = np.minimum(Es, Es.T)
    np.fill_diagonal(sym, np.inf)
    nb = np.argpartition(sym, k - 1, axis=1)[:, :k]
    a = np.repeat(np.arange(n), k)
    b = nb.ravel()
    key = np.unique(np.minimum(a, b) * n + np.maximum(a, b))
    a, b = key // n, key % n
    pp, yy = np.nonzero(R[a] & R[b])  # (neighbour pair, output) with both entries in R
    a, b = a[pp], b[pp]
    ra, rb = reach[a, yy], reach[b, yy]
    fwd = (ra <= rb) & (Es[a, b] <= cap)  # a nearer the cell (or level): a holds b up
    bwd = (rb <= ra) & (Es[b, a] <= cap)
    lp.add_pairs(np.concatenate([a[fwd], b[bwd]]), np.concatenate([b[fwd], a[bwd]]),
                 np.concatenate([yy[fwd], yy[bwd]]))


def no_privacy_floor(W: NDArray[np.float64]) -> float:
    """Σ_x min_y W[x, y]: what every secret reporting its cheapest output costs, a lower bound on any mechanism.

    It is also the pricing bound at the row duals μ_x = min_y W[x, y] (every reduced cost ≥ 0, every output prices
    at 0), so it is the certified bound a solve has before its first LP."""
    return float(W.min(axis=1).sum())


# the share of a time limit the LP rounds leave to a stop's cells' points (made at the stop, so a round as long as
# the rest of the limit cannot leave a stop without them: ε = 2, K = 2,000 spent 239 of its 300 s in round 4)
RESERVE = 0.1


def _rounds_until(deadline: float | None, t_start: float) -> float | None:
    """When an engine's rounds stop under ``deadline``: ``RESERVE`` of the time limit before it, left for a stop's
    cells' points."""
    return None if deadline is None else deadline - RESERVE * max(0.0, deadline - t_start)


class _RowAndColumnGeneration:
    """Solve the restricted LP, certify (repair for a feasible point; its duals, or pricing, for a bound), grow,
    repeat."""

    def __init__(self, lp: RestrictedLP, pricer: Pricer, deadline: float | None, tol: float, cap: float,
                 progress: Progress, t_start: float, lazy: bool = True) -> None:
        self.lp, self.pricer = lp, pricer
        self.Wn, self.Es = lp.Wn, lp.Es
        self.deadline, self.tol, self.progress, self.t_start = deadline, tol, progress, t_start
        self.until = _rounds_until(deadline, t_start)  # when the LP rounds stop: RESERVE is left for the stop
        self.caps = [c for c in PAIR_CAPS if c > cap] + [np.inf]
        self.cap = cap
        self.best: tuple[NDArray[np.float64], RowFix | RepairFacts, float] | None = None
        self.ub = np.inf
        self.lb = no_privacy_floor(self.Wn)  # certified before any LP: the pricing bound at μ_x = min_y Wn[x, y]
        self.history: list[tuple[float, float, float, int, int]] = []
        # per round: LP seconds, simplex and interior-point iterations, pooled rows taken back, pair rows held as
        # rows after it (the time of a round is in these solves: docs/WHAT-WE-LEARNED.md, "Where a pooled round's
        # time goes")
        self.lp_rounds: list[tuple[float, int, int, int, int]] = []
        self.t_lp = self.t_repair = self.t_price = 0.0
        self.rounds = 0
        self.priced = 0  # the last round whose duals were priced
        self.priced_rounds = 0
        self.lazy = lazy  # price only when it can close the gap (``_worth_pricing``)
        self.added = (0, 0)
        self.cold_rounds = 0  # rounds solved cold because they grew a large LP by COLD_GROWTH or more
        self.whole_column = False
        self.point_from = ""  # what the best point is: a repaired LP solution or a cells' point
        self.trust_radius = 0.0  # the trust box's radius (``start_trust``); 0: no box
        self.trust_lifted = 0  # the round after which the box was lifted (0: never)
        self.tightened = 0  # the last round after which HiGHS's feasibility tolerance was tightened (0: never)
        self.cells_made = False  # the cells' point was made before the rounds (``start_trust``): a stop has it
        self.bound_from = "the no-privacy floor"  # what certified the bound: the floor or pricing at the LP's duals

    @property
    def gap(self) -> float:
        return (self.ub - self.lb) / max(abs(self.ub), 1e-300) if np.isfinite(self.ub) else np.inf

    def start_trust(self, reach: NDArray[np.float64], radius: float) -> None:
        """Keep every round's LP within ``radius`` of the best exactly private point, starting from the cells' point
        (:func:`cells_point`, made now: it is also the point of an early stop)."""
        t0 = time.perf_counter()
        try:
            Z, fix, label = cells_point(self.Wn, self.Es, reach, self.until)
        except OutOfTime:
            return  # no time for a centre: the rounds run without the box, and a stop makes its own point
        finally:
            self.t_repair += time.perf_counter() - t0  # the profile's repair_s: the cells' point is a repair
        cost = float(np.sum(self.Wn * Z))
        self.ub, self.best, self.point_from, self.cells_made = cost, (Z, fix, cost), label, True
        self.trust_radius = radius
        self.lp.set_trust(Z, radius)

    def _left(self) -> float | None:
        return None if self.until is None else self.until - time.perf_counter()

    def _solve_lp(self, cold_ipm: bool) -> str:
        """Solve the restricted LP; what it took joins this round's row of ``lp_rounds``."""
        lp = self.lp
        t0, before = time.perf_counter(), (lp.simplex_iterations, lp.ipm_iterations, lp.returned)
        st = lp.solve(self.until, cold_ipm=cold_ipm)
        if lp.trust_lifted and not self.trust_lifted:  # a boxed solve failed: the box is gone from this round on
            self.trust_lifted = self.rounds
        seconds = time.perf_counter() - t0
        self.t_lp += seconds
        simplex, ipm, back = (lp.simplex_iterations - before[0], lp.ipm_iterations - before[1],
                              lp.returned - before[2])
        if self.rounds and len(self.lp_rounds) == self.rounds:  # a second solve in a round (the whole column added)
            s0, a0, b0, c0, _ = self.lp_rounds.pop()
            seconds, simplex, ipm, back = s0 + seconds, a0 + simplex, b0 + ipm, c0 + back
        self.lp_rounds.append((seconds, simplex, ipm, back, lp.n_rows_solved))
        return st

    # ---- a feasible, exactly private point from the LP solution ----
    def _repair(self, Z: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        t0 = time.perf_counter()
        with np.errstate(divide="ignore"):
            u, arg = lipschitz_repair(np.log(Z), self.Es)
        Zf, fix = make_row_stochastic(floor_columns(np.exp(u)), self.Es, self.Wn)
        obj = float(np.sum(self.Wn * Zf))
        if obj < self.ub:
            self.ub, self.best = obj, (Zf, fix, obj)
            self.point_from = f"the repaired solution of LP round {self.rounds}"
            if self.lp.trust is not None:  # the box follows the best point
                self.lp.set_trust(Zf, self.trust_radius)
        self.t_repair += time.perf_counter() - t0
        return u, arg

    # ---- certified lower bounds: the LP's own duals (cheap), pricing at its row duals (|Y| small LPs) ----
    def _dual_bound(self) -> None:
        b = self.lp.dual_bound()
        if b > self.lb:
            self.lb, self.bound_from = b, f"LP round {self.rounds}'s duals"

    def _price(self, mu: NDArray[np.float64]) -> str:
        t0 = time.perf_counter()
        self.priced = self.rounds
        self.priced_rounds += 1
        G = self.Wn - mu[:, None]
        total = float(mu.sum())
        for y in range(G.shape[1]):
            left = self._left()
            pr = None if (left is not None and left <= 0) else self.pricer.price(G[:, y], left)
            if pr is None or pr.status == "time limit":
                self.t_price += time.perf_counter() - t0
                return "time limit"
            total += pr.bound
        if total > self.lb:
            self.lb, self.bound_from = total, f"pricing at LP round {self.rounds}'s duals"
        self.t_price += time.perf_counter() - t0
        return "optimal"

    # ---- what the next LP needs: entries and pair rows the repair had to raise, entries priced negative ----
    def _grow(self, Z: NDArray[np.float64], u: NDArray[np.float64], arg: NDArray[np.int64],
              mu: NDArray[np.float64]) -> int:
        theta = 1e-5 * self.tol
        with np.errstate(over="ignore"):
            raised = np.exp(u) - Z > theta
        jj, yy = np.nonzero(raised)
        ii = arg[jj, yy]
        ok = self.Es[ii, jj] <= self.cap
        new_pairs = self.lp.add_pairs(ii[ok], jj[ok], yy[ok])
        nx, ny = np.nonzero((self.Wn - mu[:, None] < -theta) & (self.lp.var < 0))
        new_vars = self.lp.add_vars(nx, ny)
        self.added = (new_vars, new_pairs)
        return new_vars + new_pairs

    def run(self, max_rounds: int) -> tuple[str, str]:
        n = self.lp.n
        for r in range(1, max_rounds + 1):
            self.rounds = r
            self.progress(f"LP round {r}", self._fraction())
            # interior point beats dual simplex from scratch on a first LP with many pair rows (a dense instance), and
            # beats a warm start on a large LP that a round grew by a tenth or more
            grew_much = self._grew_much()
            self.cold_rounds += int(grew_much)
            st = self._solve_lp(cold_ipm=(r == 1 and self.lp.n_rows_solved > 20 * n) or grew_much)
            if st == "Infeasible" and not self.whole_column:
                # every row reporting one output is feasible whatever pair rows there are: add that column
                self.whole_column = True
                self.lp.add_vars(np.arange(n), np.full(n, int(np.argmin(self.Wn.sum(axis=0)))))
                st = self._solve_lp(cold_ipm=False)
            if st == "time limit":
                return "time limit", f"time limit in LP round {r}"
            if st != "optimal" and self.tightened and self.tightened == r - 1:  # the last round's LP, only tighter
                return "stalled", (f"nothing left to add to the LP, and its re-solve at HiGHS's feasibility "
                                   f"tolerance {self.lp.tolerance:.0e} failed ({st})")
            if st != "optimal":
                return f"solver error ({st})", f"the restricted LP failed in round {r} ({st}) after retries"
            if (left := self._left()) is not None and left <= 0:
                return "time limit", f"time limit after LP round {r}"
            Z = self.lp.solution()
            self._dual_bound()
            u, arg = self._repair(Z)
            # within the tolerance already (a better point against the bound certified): done, no pricing
            if self.gap > self.tol and self._worth_pricing() and self._price(self.lp.mu) == "time limit":
                return "time limit", f"time limit while certifying round {r}"
            self.history.append(self._state())
            if self.gap <= self.tol:
                return "optimal", ""
            if self.lp.n_rows_solved >= POOL_MIN_ROWS:  # slack rows leave HiGHS; a point breaking one takes it back
                self.lp.pool_slack_rows()
            if not self._grow(Z, u, arg, self.lp.mu):
                if self.lp.trust is not None:  # nothing to add: the box may be what holds the LP back, lift it
                    self.lp.set_trust(None)
                    self.trust_lifted = r
                    continue
                if self.priced < r:  # certify before admitting more
                    if self._price(self.lp.mu) == "time limit":
                        return "time limit", f"time limit while certifying round {r}"
                    self.history[-1] = self._state()
                if self.gap <= self.tol:
                    return "optimal", ""
                if self._admit_longer_pairs(Z, u, arg):
                    continue
                if self.lp.tolerance > TIGHTEST:  # the LP holds all it needs: its duals may be too loose for the bound
                    self.lp.tighten(max(TIGHTEN * self.lp.tolerance, TIGHTEST))
                    self.tightened = r
                    continue
                return "stalled", "nothing left to add to the LP"
        return "iteration limit", f"round limit ({max_rounds}) reached"

    def _admit_longer_pairs(self, Z: NDArray[np.float64], u: NDArray[np.float64], arg: NDArray[np.int64]) -> bool:
        """Nothing left below the pair cap: raise it, cap by cap, until a pair is added; False when none is."""
        while np.isfinite(self.caps[0]):  # the last cap, inf, stays: nothing is admitted beyond it
            self.cap = self.caps.pop(0)
            if self._grow(Z, u, arg, self.lp.mu):
                return True
        return False

    def _grew_much(self) -> bool:
        """Whether the last round added at least ``COLD_GROWTH`` of the pair rows a large LP held as rows before it."""
        if self.rounds == 1:
            return False
        before = self.lp.n_rows_solved - self.added[1]
        return before >= COLD_MIN_ROWS and self.added[1] >= COLD_GROWTH * before

    def _state(self) -> tuple[float, float, float, int, int]:
        """This round's row of ``history``: seconds since start, best objective and bound, LP entries and pair rows."""
        return time.perf_counter() - self.t_start, self.ub, self.lb, self.lp.n_vars, self.lp.n_pairs

    def _worth_pricing(self) -> bool:
        """Whether to price this round's duals. Pricing only raises the bound, which cannot close the gap while the
        repaired point is still above the restricted LP's own value by more than the tolerance (the LP still lacks
        pair rows the repair had to add): it is skipped then. Every round has the LP-dual bound
        (:meth:`RestrictedLP.dual_bound`), which equals the LP's value once no entry outside it prices negative, so
        pricing (|Y| transportation LPs) is needed only where entries outside the LP still matter."""
        return not self.lazy or self.ub - self.lp.objective <= self.tol * self.ub

    def _fraction(self) -> float | None:
        if not np.isfinite(self.gap):
            return None
        return float(np.clip(np.log(1.0 / max(self.gap, self.tol)) / np.log(1.0 / self.tol), 0.0, 1.0))


def solve_structured(W: NDArray[np.float64], E: NDArray[np.float64], *, closed: bool = False,
                     tol: float = 1e-8, time_limit: float | None = None, progress: Progress = no_progress,
                     knn: int | None = None, max_iter: int = 200, out_rows: NDArray[np.int64] | None = None,
                     cap: float = PAIR_CAPS[0], engine: str = "auto", lazy: bool = True,
                     trust: bool | None = None, **ignored: Any) -> StructuredOutcome:
    """Solve min Σ W∘Z over row-stochastic Z whose columns satisfy Z[i,y] ≤ e^{E[i,j]} Z[j,y] for all i, j.

    Row-and-column generation on the LP itself: a restricted LP over the entries that can carry mass and the pair
    rows that bind is solved, repaired into the cone (an exactly private point: the upper bound) and certified by
    its own duals or by pricing at its row duals (lower bounds valid for the full LP); entries and pairs the repair
    had to raise are added, and the loop stops when the certified gap is within ``tol``.

    Args:
        W: (n, m) weighted costs, W[x, y] = p_x · c_xy (any unit; objective and bound come back in it).
        E: (n, n) nonnegative exponents; E[i, j] bounds ln(Z[i, y] / Z[j, y]); +inf leaves a pair free. For
            ε-mDP, E = ε·d with d in km and ε in km⁻¹. A general (e.g. pair-specific, asymmetric) E is allowed:
            its min-plus closure is used, which defines the same feasible set.
        closed: promise that E already satisfies the triangle inequality (true for ε times a metric); skips the
            O(n³) closure.
        tol: certified relative gap to reach: status ``optimal`` only when (objective − bound) ≤ tol·objective.
        time_limit: seconds for the whole solve (every LP gets only what is left, less the last ``RESERVE`` of the
            limit, which a stop spends on its cells' points); on expiry the status is ``time limit`` and Z is the
            best feasible (exactly private, not certified) point found.
        progress: ``progress(phase, fraction)``.
        knn: nearest neighbours per row whose pairs enter the first LP besides each entry's holder. By default 0
            on sparse instances (the holders' rows alone; the repair adds the rest in cheap warm re-solves: with
            lazy pricing 1.2–3.3× less CPU at ε ≤ 5 on whole-city Rome) and 8 on dense ones (more than ``DENSE``
            of the entries near their output's cell, where this engine is the conic engine's fallback: there the
            neighbours' rows save rounds; ``docs/WHAT-WE-LEARNED.md``).
        max_iter: round cap (status ``iteration limit``).
        out_rows: (m,) row index of each output's own location (Y ⊂ X), part of its cell; default: the row where
            the output is cheapest.
        cap: LP pair rows start with exponents ≤ cap (coefficients ≤ e^cap); longer pairs are admitted only when
            nothing else is left to add.
        engine: ``rows`` (row-and-column generation), ``conic`` (:func:`mdpviz.lp.conic.solve_conic`, faster when
            the optimal columns are dense) or ``auto``: conic when more than ``DENSE`` of the entries are within
            reach of their output's cell, with row-and-column generation as the fallback if it fails.
        lazy: price a round's row duals only when the repaired point is within ``tol`` of the restricted LP's
            value and the LP's own duals did not close the gap, instead of every round.
        trust: keep every round's LP near the best exactly private point (``TRUST_RADIUS``, from the cells' point;
            lifted when nothing is left to add). By default on at small ε (at least ``TRUST_DENSE`` of the entries
            near their output's cell) from ``TRUST_MIN_ROWS`` rows.
        ignored: options of the former column-generation engine (alpha, share, lower_box, ...), accepted and unused.

    Returns:
        StructuredOutcome with Z (n, m), status, objective, certified bound and gap, timings, sizes and history.
    """
    t_start = time.perf_counter()
    deadline = None if time_limit is None else t_start + float(time_limit)
    timings: dict[str, float] = {}
    progress("closure", None)
    W = np.asarray(W, dtype=np.float64)
    Es, Wn, scale = _setup(W, E, closed)
    timings["closure_s"] = time.perf_counter() - t_start
    t0 = time.perf_counter()
    progress("first LP", None)
    lp = RestrictedLP(Wn, Es, tolerance=float(np.clip(1e-3 * tol, 1e-10, 1e-7)))
    reach, holder = _cells(Wn, Es, out_rows)
    dense = float(np.mean(reach <= REACH))
    note = ""
    if engine not in ENGINES:
        raise ParameterError(f"`engine` = {engine!r} is not one of {', '.join(ENGINES)}.")
    if engine == "conic" or (engine == "auto" and dense > DENSE):
        out, note = _solve_dense(W, Es, tol, deadline, progress, out_rows, dense, t_start, reach)
        if out is not None:
            return out
    _first_lp(lp, reach, holder, (DENSE_KNN if dense > DENSE else 0) if knn is None else knn, cap)
    timings["init_s"] = time.perf_counter() - t0
    run = _RowAndColumnGeneration(lp, Pricer(Es), deadline, tol, cap, progress, t_start, lazy)
    if (trust if trust is not None else (dense >= TRUST_DENSE and W.shape[0] >= TRUST_MIN_ROWS)):
        run.start_trust(reach, TRUST_RADIUS)
    status, message = run.run(max_iter)
    _keep_stop_point(run, status, reach)
    out = _finish(run, status, message, W, scale, timings, t_start)
    out.diagnostics["engine"] = "rows"
    if note:
        out.message = f"{note}; {out.message}"
    return out


def _solve_dense(W: NDArray[np.float64], Es: NDArray[np.float64], tol: float, deadline: float | None,
                 progress: Progress, out_rows: NDArray[np.int64] | None, dense: float,
                 t_start: float, reach: NDArray[np.float64]) -> tuple[StructuredOutcome | None, str]:
    """The conic engine on a dense instance, with its gap stated; (None, why) when it failed (numerical trouble).

    A stop returns the cheaper of the master's point and the cells' points (none from the master before its first
    solve), and the no-privacy floor when the engine has no better bound, as the row-and-column engine does."""
    until = _rounds_until(deadline, t_start)
    left = None if until is None else max(0.01, until - time.perf_counter())
    try:
        out = solve_conic(W, Es, closed=True, tol=tol, time_limit=left, progress=progress, out_rows=out_rows)
    except SolverError as e:
        return None, f"conic engine failed ({e}), row-and-column generation used"
    except OutOfTime as e:  # the deadline came in the engine's set-up: no master point, no bound yet
        out = StructuredOutcome(None, "time limit", None, None, message=f"time limit while {e}")
    floor = no_privacy_floor(W)
    if out.bound is None or out.bound < floor:
        out.bound = floor
        out.diagnostics["bound_from"] = "the no-privacy floor"
    out.objective = None if out.Z is None else float(np.sum(W * out.Z))
    if out.objective is None or out.status != "optimal":  # a stop: the master's point or a cells' point, the cheaper
        Zs, _, label = stop_point(W, Es, reach, deadline)
        cost = float(np.sum(W * Zs))
        if out.objective is None or cost < out.objective:
            out.Z, out.objective, out.diagnostics["point_from"] = Zs, cost, label
            history = out.diagnostics.get("history")
            if history:  # a last row for the point that replaced the master's, so the trace ends at the objective
                _, _, lb, *rest = history[-1]
                history.append((time.perf_counter() - t_start, cost, lb, *rest))
    out.diagnostics.setdefault("point_from", "the conic master's last solution")
    assert out.Z is not None and out.objective is not None
    gap = (out.objective - out.bound) / max(abs(out.objective), 1e-300)
    if out.status == "optimal" and gap > tol:
        out.status = "stalled"  # "optimal" only within the tolerance asked for
    it = out.diagnostics.get("iterations", 0)
    words = [f"conic column generation ({dense:.0%} of entries near their output's cell)"]
    if out.message:
        words.append(out.message)
    words.append(f"certified gap {gap:.1e} (tolerance {tol:g}) after {it} iterations")
    out.message, out.gap = "; ".join(words), gap
    out.diagnostics.update({"engine": "conic", "gap": gap})
    out.timings["total_s"] = time.perf_counter() - t_start
    return out, ""


def _keep_stop_point(run: _RowAndColumnGeneration, status: str, reach: NDArray[np.float64]) -> None:
    """A stop's point: :func:`stop_point` (made in what the LP rounds left of the time limit, ``RESERVE``, and its
    grace) when no LP solved, or when it beats the repaired LP point (at small ε the repaired point of an early round
    can cost several times as much); nothing when the best point is within the tolerance or the run made the cells'
    point before its rounds (the trust box's centre)."""
    if run.best is not None and (status == "optimal" or run.gap <= run.tol or run.cells_made):
        return  # within the tolerance, or the cells' point was made before the rounds and is kept or beaten
    t0 = time.perf_counter()
    Zs, fix, label = stop_point(run.Wn, run.Es, reach, run.deadline)
    run.t_repair += time.perf_counter() - t0  # the profile's repair_s: the stop's point is a repair too
    obj = float(np.sum(run.Wn * Zs))
    if run.best is None or obj < run.ub:
        run.best, run.ub, run.point_from = (Zs, fix, obj), obj, label


def _finish(run: _RowAndColumnGeneration, status: str, message: str, W: NDArray[np.float64], scale: float,
            timings: dict[str, float], t_start: float) -> StructuredOutcome:
    """The best feasible point found (:func:`_keep_stop_point` has set it), with what was certified about it in
    plain words."""
    n, m = W.shape
    assert run.best is not None
    Z, fix, _ = run.best
    objective = float(np.sum(W * Z))
    bound = run.lb * scale
    gap = (objective - bound) / max(abs(objective), 1e-300)
    if status == "optimal" and gap > run.tol:
        status = "stalled"
    elif status != "optimal" and gap <= run.tol:
        status, message = "optimal", f"{message}, but the point found is already within the tolerance".lstrip(", ")
    words = [message] if message else []
    words.append(f"certified gap {gap:.1e} (tolerance {run.tol:g}) after {run.rounds} LP rounds")
    if status != "optimal":
        words.append(f"bound from {run.bound_from}, point from {run.point_from}")
    if run.tightened:
        words.append(f"HiGHS's feasibility tolerance tightened to {run.lp.tolerance:.0e} after round {run.tightened}, "
                     "when nothing was left to add")
    if run.lp.rebuilt:
        words.append("HiGHS failed on the LP with held entries, so it was rebuilt with every pair row a row")
    failures = run.pricer.failures
    if failures:
        words.append(f"{len(failures)} pricing LPs failed ({', '.join(sorted(set(failures)))}) and were bounded by "
                     "the trivial bound instead")
    timings.update(lp_s=run.t_lp, repair_s=run.t_repair, pricing_s=run.t_price, total_s=time.perf_counter() - t_start)
    size = {"rows": n, "lp_variables": run.lp.n_vars, "lp_pair_rows": run.lp.n_pairs,
            "lp_pair_rows_as_rows": run.lp.n_rows_solved,
            "pricing_lps": run.pricer.lp_calls, "pricing_pairs_max": run.pricer.pairs_max, "variables": n * m}
    diagnostics: EngineDiagnostics = {
        "iterations": run.rounds, "priced_rounds": run.priced_rounds, "pair_cap": run.cap,
        "history": [(t, ub * scale, lb * scale, v, p) for t, ub, lb, v, p in run.history],  # in W's unit, as objective
        "lp_rounds": run.lp_rounds,
        "gap": gap, "lp_retries": run.lp.retries, "held_entries": run.lp.n_held, "lp_rebuilt": run.lp.rebuilt,
        "cold_rounds": run.cold_rounds, "trust_radius": run.trust_radius,
        "trust_lifted": run.trust_lifted, "lp_tolerance": run.lp.tolerance,
        "pooled_rows": run.lp.pooled, "pool_returns": run.lp.returned,
        "pricing_retries": run.pricer.retries,
        "pricing_failures": len(failures), "bound_from": run.bound_from, "point_from": run.point_from}
    diagnostics["row_fix"] = fix
    return StructuredOutcome(Z, status, objective, bound, timings, size, diagnostics, "; ".join(words), gap)
