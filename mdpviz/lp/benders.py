"""Benders decomposition of the mDP LP over a partition of the secrets (Qiu, IJCAI 2024; spec 004).

The LP is min Σ W∘Z over row-stochastic Z with z[i, y] ≤ e^{E_ij} z[j, y] on a given set of ordered pairs (the
paper's neighbours d ≤ η, or any pair set). Rows are split into subsets R_l (:func:`partition`). A row is a
*boundary* record when it shares a constrained pair with a row of another subset, otherwise *internal*.

* **Master (MP)**: the boundary rows' variables z_Y and one estimate w_l per subset;
  min W_Y·z_Y + Σ_l w_l (spec §3.4 consistent form (a): boundary cost counted once) subject to the pair rows
  among boundary records, the initial cuts of Eq. 14 (``cuts``), Σ_y z_Y = 1 and the Benders cuts.
* **Subproblem l**, given z̄_Y: min W_X·z_X over its internal rows with every pair row touching an internal
  record of R_l (boundary values move to the right-hand side) and Σ_y z_X = 1. Its row duals give the
  optimality cut w_l ≥ (h + B z_Y)ᵀu + 1ᵀv; an infeasible subproblem is re-solved as a phase-1 (elastic) twin
  whose duals give the feasibility cut.
* LB = MP optimum (non-decreasing); UB = W_Y·z̄_Y + Σ subproblem optima when every subproblem is feasible.

**Initial cuts (Eq. 14).** The paper adds z_i ≤ e^{εD_ij} z_j for every ordered pair of boundary records
(D = shortest path in the mDP graph). Only the paths through internal records add anything the MP does not
already hold, and a cut implied by a chain of other MP rows adds nothing either, so ``cuts="needed"`` (default)
keeps exactly the boundary pairs not implied by others: the same MP polytope as ``"all"`` with far fewer rows.

**Numerics: the master floor.** A subproblem's value falls with a boundary entry z̄_b,y at slopes up to
e^{ε·D(b, x)}·c (an internal record x capped by z_x ≤ e^{ε·D} z̄_b): at the paper's ε = 10 km⁻¹ cut coefficients
reached 1e34, which HiGHS refuses. A floor z_Y ≥ τ (``floor``, default 1e-9) bounds those slopes by about c/τ; it
can raise the optimum by at most τ·Σ W (mix any optimum with the uniform matrix), which the reported lower bound
subtracts. A cut that still has a coefficient above ``CUT_CAP`` is left out (a relaxation), never capped.

**Row-sum cuts** (``row_cuts``, ours, not the paper's): a chain of pair rows bounds each internal record's entries
by its subset's boundary entries, and its row sums to 1; both give cuts in z_Y alone (:class:`RowSumCuts`), which
the master point is cut with before any subproblem is solved. They are valid for the LP, so the optimum is the
same; on Rome (K = 500, ε = 10) they replace nearly every feasibility cut.

**In-out stabilisation** (``stabilise`` λ < 1, ``core``): the subproblems are solved at λ·z_out + (1 − λ)·z_core,
z_core a feasible point (the exponential mechanism, then each stabilised separation point that lowers the best upper
bound); when no cut from there cuts the master's own point, the next round separates near that point, and once a
separation point repeats, every round does. *Near* is (1 − t)·z_out + t·z_anchor, z_anchor the first core (strictly
inside the feasible set). Near the optimum the master's own point lies outside that set by the solvers' tolerances,
where a subproblem is infeasible, or feasible only within tolerance, and its cuts no longer move the master; pulled
by t = 1e-5, every subproblem is solved exactly (Rome, K = 500, travel cost). The move costs about t times the
anchor's cost above the lower bound at most (the value functions are convex), so t is ``PULL`` = 1e-5, or less where
that would exceed a quarter of ξ (``PULL_COST``: at ε = 0.5 on a 15 km disc of London, K = 200, the exponential
mechanism costs 4.3 km more than the optimum). Cuts stay valid wherever they are found, so the optimum is the same;
λ = 1 is plain Benders as in the paper, which separates at the master's point itself.

**The master's pair rows are generated lazily** (:class:`LazyPairRows`): HiGHS holds only those the master's
point has broken, and a point is handed on only when it meets all of them, so each master solve is that of the
full master. Should HiGHS fail on the partial master, every row is added and the solve repeated.

**Statuses.** ``optimal`` (certified UB − LB ≤ ξ and ≤ 1e-4·UB for the paper's LP, the floor's effect included),
``gap reached`` (UB − LB ≤ ξ for the LP solved, when a slack or a large floor makes it differ from the paper's),
``iteration limit``, ``time limit``, ``stalled`` (no cut is violated but the gap is open: numerical trouble) and
``error`` (a HiGHS status that is neither optimal nor infeasible, e.g. "Unknown", even after a cold restart).
Only the first two hand back ``Z``; the others keep the best feasible point found in ``feasible_Z``.
The code-only δ slack of the authors' MATLAB code is off by default (``slack`` > 0 changes the LP; labelled).

**Code layout.** :func:`solve_benders` builds a :class:`_BendersRun` (master by :func:`build_master`, subproblems by
:func:`build_subs`) and calls its ``iterate`` once per iteration until a stop; ``outcome`` assembles the result
(:class:`BendersOutcome`, ``benders_outcome.py``). The subsets come from :func:`partition` (``benders_partition.py``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from ..deadline import OutOfTime, check_deadline
from ..progress import Progress, no_progress
from .benders_master import (
    CUT_RULES,
    add_cuts,
    boundary_records,
    build_master,
    clean_cuts,
    components,
    master_pairs,
)
from .benders_outcome import BendersDiagnostics, BendersOutcome
from .benders_partition import PARTITIONERS, partition
from .benders_sub import CUT_CAP, LOG_CAP, RowSumCuts, Subproblem, build_subs, run_highs
from .highs import check_lp_rows

__all__ = ["CUT_RULES", "PARTITIONERS", "PULL", "BendersDiagnostics", "BendersOutcome", "components", "master_pairs",
           "partition", "solve_benders"]

PULL = 1e-5  # a stabilised run separates near the master's point at most this share of the way towards the first core
PULL_COST = 0.25  # ... and at most so far that the move costs this share of ξ (the anchor's cost above the bound)
OPTIMAL_REL = 1e-4  # a certified gap within ξ is called optimal only if it is also this small against UB
_H = highspy.HighsModelStatus


@dataclass
class _MasterPoint:
    """The master's solution at one iteration: z_Y (flat, clipped at 0), the estimates w, objective and safe bound."""

    z_out: NDArray[np.float64]
    w_out: NDArray[np.float64]
    objective: float
    safe_bound: float
    seconds: float


@dataclass
class _Round:
    """What the subproblems gave at one separation point z_Y: the point's upper bound (when feasible), the cuts,
    whether a cut also cuts the master's own point, the subproblems' solutions, or the failure that ends the run."""

    ub: float
    violated_out: bool
    feasible: bool = True
    failed: str = ""
    cut_lo: list[float] = field(default_factory=list)
    cut_cols: list[NDArray[np.int64]] = field(default_factory=list)
    cut_vals: list[NDArray[np.float64]] = field(default_factory=list)
    zX: list[NDArray[np.float64] | None] = field(default_factory=list)
    max_sub_s: float = 0.0


_Stop = tuple[str, str]  # (status, message) of a run that ends


class _BendersRun:
    """The state of one :func:`solve_benders` call: the master and subproblems, the bounds, the incumbent, the
    stabilisation core and the counters; :meth:`iterate` is one Benders iteration, :meth:`outcome` the result."""

    def __init__(self, W: NDArray[np.float64], pi: NDArray[np.int64], pj: NDArray[np.int64],
                 expo: NDArray[np.float64], labels: NDArray[np.int64], *, gap_m: float, cuts: str, slack: float,
                 deadline: float | None, progress: Progress, core: NDArray[np.float64] | None, stabilise: float,
                 floor: float, row_cuts: bool, reserve: float = 0.0, threads: int = 1) -> None:
        self.W, self.labels, self.gap_m, self.cuts, self.slack = W, labels, gap_m, cuts, slack
        # the subproblems are independent given the master point, and HiGHS releases the GIL while it solves: with
        # threads > 1 they are solved at once (same cuts, same iterations, in the same order)
        self.pool = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None
        self.deadline, self.progress, self.stabilise, self.floor = deadline, progress, stabilise, floor
        self.lam = stabilise  # the in-out λ in use: 1 once the separation point repeats
        self.timings: dict[str, float] = {}
        n, m = W.shape
        self.n, self.m = n, m
        t0 = time.perf_counter()
        check_deadline(deadline, "finding the subsets' boundary records")
        self.is_b = boundary_records(n, pi, pj, labels)
        self.b_rows = np.flatnonzero(self.is_b)
        self.nb = nb = len(self.b_rows)
        bidx = np.full(n, -1, dtype=np.int64)
        bidx[self.b_rows] = np.arange(nb)
        self.parts = np.unique(labels)
        coef = np.exp(np.minimum(expo, LOG_CAP))
        progress("Benders: initial cuts", None)
        check_deadline(deadline, "computing the initial cuts of the Benders master")
        self.ci, self.cj, ce, self.cut_counts = master_pairs(n, pi, pj, expo, labels, self.is_b, cuts)
        sub_pairs = int((~self.is_b[pi] | ~self.is_b[pj]).sum())
        check_lp_rows((len(self.ci) + sub_pairs) * m, f"Benders with cuts = {cuts!r} ({nb:,} of {n:,} records on "
                      f"a subset boundary; {len(self.ci):,} master pairs, {sub_pairs:,} subproblem pairs, "
                      f"× {m} outputs)")
        check_deadline(deadline, "computing the initial cuts of the Benders master")
        self.rowsum = RowSumCuts(n, pi, pj, expo, labels, self.is_b, bidx) if row_cuts else None
        self.timings["cuts_s"] = time.perf_counter() - t0
        check_deadline(deadline, "building the Benders master")
        t0 = time.perf_counter()
        self.mp, self.safe, self.pair_rows, self.mp_size = build_master(W, labels, self.is_b, self.ci, self.cj, ce,
                                                                         slack, floor)
        self.timings["master_build_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.subs, self.sub_rows = build_subs(W, pi, pj, coef, labels, self.is_b, bidx, slack, deadline)
        self.timings["sub_build_s"] = time.perf_counter() - t0
        self.zc = None if core is None else np.asarray(core, dtype=np.float64)[self.b_rows].ravel()
        self.anchor = self.zc if stabilise < 1.0 else None  # what a stabilised run's λ = 1 rounds are pulled towards
        self.anchor_cost = np.inf if core is None or self.anchor is None else float(np.sum(W * core))
        # the floor z_Y ≥ τ can raise the optimum by at most τ·Σ W (mix any optimum with the uniform matrix), so the
        # MP optimum minus that is a lower bound on the LP without the floor
        self.floor_cost = float(floor) * float(W.sum())
        # stop when the gap of the paper's LP (the floor's effect added) is within ξ less the reserve, unless the
        # floor or a slack makes that impossible: then stop on the gap of the LP solved (status "gap reached")
        self.reserve = float(reserve) * gap_m
        stop = gap_m - self.reserve
        self.target = stop - self.floor_cost if (slack == 0 and self.floor_cost < 0.5 * stop) else stop
        self.at_out = False
        # the last two rounds' separation points and the master's estimates w there, latest first
        self.last_seps: list[tuple[NDArray[np.float64], NDArray[np.float64]]] = []
        self.history: list[dict[str, float]] = []
        self.lb = -np.inf
        self.ub_best = np.inf
        self.Z_best: NDArray[np.float64] | None = None
        self.t_mp = self.t_sub = 0.0
        self.mp_cap = 10.0  # seconds for a warm master solve before a cold restart (10 × the last solve, ≥ 1 s)
        self.n_opt = self.n_feas = self.n_dropped = self.n_row = 0

    def iterate(self, it: int) -> _Stop | None:
        """One iteration: solve the master, cut it with row-sum cuts, solve the subproblems at the (stabilised)
        separation point, update the bounds and the incumbent, test for a stop and add the cuts."""
        if self.deadline is not None and time.perf_counter() > self.deadline:
            return "time limit", f"time limit after {it - 1} iterations"
        pt = self._solve_master(it)
        if isinstance(pt, tuple):
            return pt
        lam = 1.0 if (self.zc is None or self.at_out) else self.lam
        row_cut = False
        if self.rowsum is not None:
            added = self._row_sum_cuts(it, self.rowsum, pt.z_out)
            if isinstance(added, tuple):
                return added
            row_cut = added
            if row_cut and lam >= 1.0:  # the subproblems would be solved at this very point: re-solve the master
                self._record(it, pt, np.nan, 0.0)
                return None
        zY = self._separation_point(pt.z_out, lam)
        if self._repeats(zY, pt.w_out):
            stop = self._after_repeat(it, pt, lam)
            if stop is not None:
                return stop
            self.lam = lam = 1.0
            zY = self._separation_point(pt.z_out, lam)
        self.last_seps = [(zY, pt.w_out), *self.last_seps[:1]]
        rnd = self._separate(it, zY, pt, lam, row_cut)
        if rnd.failed:
            return ("time limit", rnd.failed) if "Time limit" in rnd.failed else ("error", rnd.failed)
        if rnd.feasible and lam < 1.0 and rnd.ub < self.ub_best:
            self.zc = zY  # a separation point that improves the best upper bound becomes the new core (in-out)
        self.at_out = lam < 1.0 and not rnd.violated_out  # nothing cuts the MP's own point: separate at λ = 1 next
        if rnd.feasible and rnd.ub < self.ub_best:
            self._keep_incumbent(rnd.ub, zY, rnd.zX)
        self._record(it, pt, rnd.ub if rnd.feasible else np.nan, rnd.max_sub_s)
        stop = self._stopping_test(it, lam, rnd.violated_out)
        if stop is not None:
            return stop
        return self._add_round_cuts(it, lam, rnd)

    def _after_repeat(self, it: int, pt: _MasterPoint, lam: float) -> _Stop | None:
        """A separation point that repeats: the cuts since then left the master's point (and the core) where they
        were, cutting it only within the master's tolerances, and the same point would give the same cuts again
        (Rome, K = 500, travel cost, stabilised: 270 such rounds). The bound may still have risen, so the gap is
        tested first; then ``stalled`` where λ was 1 already, else None: the caller goes on at λ = 1 (the master's
        point, pulled towards the anchor in a stabilised run)."""
        stop = self._stopping_test(it, lam, violated_out=True)
        if stop is None and lam >= 1.0:
            dropped = f"; {self.n_dropped} cuts left out for coefficients above {CUT_CAP:.0e}" if self.n_dropped else ""
            stop = "stalled", (f"the master's point did not move after the cuts of iteration {it - 1} (UB − LB = "
                               f"{self.ub_best - self.lb:.3g}{dropped}): its cuts cut it only within the solver's "
                               "tolerances")
        if stop is not None:
            self._record(it, pt, np.nan, 0.0)
        return stop

    def _repeats(self, zY: NDArray[np.float64], w_out: NDArray[np.float64]) -> bool:
        """Whether the master's estimates and the separation point are those of one of the last two rounds (two:
        a round at λ = 1, forced by ``at_out``, can alternate with one at the in-out point)."""
        return any(np.array_equal(zY, z) and np.array_equal(w_out, w) for z, w in self.last_seps)

    def _separation_point(self, z_out: NDArray[np.float64], lam: float) -> NDArray[np.float64]:
        """Where the subproblems are solved: λ·z_out + (1 − λ)·z_core; at λ = 1 the master's point itself, or in a
        stabilised run that point pulled towards the anchor by ``PULL``, or less where that would cost more than
        ``PULL_COST``·ξ."""
        if lam < 1.0 and self.zc is not None:
            return lam * z_out + (1.0 - lam) * self.zc
        if self.anchor is None:
            return z_out
        excess = self.anchor_cost - self.lb  # what a full move to the anchor could cost at most
        pull = PULL if not excess > 0 else min(PULL, PULL_COST * self.gap_m / excess)
        return (1.0 - pull) * z_out + pull * self.anchor

    def _solve_master(self, it: int) -> _MasterPoint | _Stop:
        """Solve the master (:meth:`_master_rounds`) and raise the lower bound by its safe bound; a stop when HiGHS
        does not end optimal."""
        t0 = time.perf_counter()
        x = self._master_rounds(it)
        dt_mp = time.perf_counter() - t0
        self.t_mp += dt_mp
        if isinstance(x, tuple):
            return x
        mp_obj = float(self.mp.getInfo().objective_function_value)
        raw_lb = self.safe.bound(np.array(self.mp.getSolution().row_dual))
        self.lb = max(self.lb, raw_lb)  # a lower bound on the LP solved
        nbm = self.nb * self.m
        return _MasterPoint(np.maximum(x[:nbm], 0.0), x[nbm:], mp_obj, raw_lb, dt_mp)

    def _master_rounds(self, it: int) -> NDArray[np.float64] | _Stop:
        """The master's solution, re-solved with the pair rows its point breaks until it breaks none; a stop when
        HiGHS does not end optimal."""
        while True:
            ts = time.perf_counter()
            lazy = not self.pair_rows.present.all()  # with every row a long warm solve is normal: no cap
            st = run_highs(self.mp, self.deadline, first_cap=self.mp_cap if lazy else None)
            if st == _H.kTimeLimit:
                return "time limit", f"time limit in the master LP at iteration {it}"
            if st != _H.kOptimal and lazy:
                # HiGHS failed on the master with part of its pair rows (Rome, K = 500, plain Benders: "Unbounded",
                # then "Solve error", on a bounded LP); with all of them it had solved it: add the rest, re-solve
                if self.pair_rows.add_all(self.mp, self.safe) is None:
                    return "error", f"HiGHS refused the master's pair rows at iteration {it}"
                continue
            if st != _H.kOptimal:
                # the MP relaxes a feasible LP, so anything but optimal is a solver failure, never a verdict on the LP
                return "error", (f"the master LP ended with HiGHS status '{self.mp.modelStatusToString(st)}' at "
                                 f"iteration {it}")
            self.mp_cap = max(1.0, 10.0 * (time.perf_counter() - ts))
            x = np.array(self.mp.getSolution().col_value)
            added = self.pair_rows.add_violated(self.mp, self.safe, x)
            if added is None:
                return "error", f"HiGHS refused the master's pair rows at iteration {it}"
            if added == 0:
                return x

    def _row_sum_cuts(self, it: int, rowsum: RowSumCuts, z_out: NDArray[np.float64]) -> bool | _Stop:
        """Add the row-sum cuts the master point violates; whether there were any (a stop if HiGHS refuses them)."""
        r_lo, r_cols, r_vals, _ = clean_cuts(*rowsum.separate(z_out.reshape(self.nb, self.m)))
        if not r_cols:
            return False
        if not add_cuts(self.mp, self.safe, r_lo, r_cols, r_vals):
            return "error", f"HiGHS refused the row-sum cuts of iteration {it}"
        self.n_row += len(r_cols)
        return True

    def _separate(self, it: int, zY: NDArray[np.float64], pt: _MasterPoint, lam: float, row_cut: bool) -> _Round:
        """Solve every subproblem at zY: an optimality cut where it is feasible (kept when it cuts the master's
        estimate, or always under stabilisation), a feasibility cut where it is not."""
        nbm = self.nb * self.m
        rnd = _Round(float(self.W[self.b_rows].ravel() @ zY), row_cut)  # a row-sum cut already cuts the MP's point
        t0 = time.perf_counter()
        for part, (solved, seconds) in enumerate(self._solve_subs(zY)):
            if solved is None:
                rnd.zX.append(None)
                continue
            kind, const, g, value, z = solved
            rnd.max_sub_s = max(rnd.max_sub_s, seconds)
            rnd.zX.append(z)
            if g is None:
                rnd.failed = f"subproblem {part} ended with HiGHS status '{kind}' at iteration {it}"
                break
            gz = np.flatnonzero(g)
            at_o = const + float(g @ pt.z_out)
            if kind == "opt":
                rnd.ub += value
                rnd.violated_out |= bool(pt.w_out[part] < at_o - 1e-9 * max(1.0, abs(at_o)))
                if lam < 1.0 or pt.w_out[part] < value - 1e-9 * max(1.0, abs(value)):
                    rnd.cut_cols.append(np.concatenate([gz, [nbm + part]]))  # w_l − g·z_Y ≥ const
                    rnd.cut_vals.append(np.concatenate([-g[gz], [1.0]]))
                    rnd.cut_lo.append(const)
                    self.n_opt += 1
            else:
                rnd.feasible = False
                rnd.violated_out |= at_o > 1e-9
                rnd.cut_cols.append(gz)  # const + g·z_Y ≤ 0  ⇔  −g·z_Y ≥ const
                rnd.cut_vals.append(-g[gz])
                rnd.cut_lo.append(const)
                self.n_feas += 1
        self.t_sub += time.perf_counter() - t0
        return rnd

    def _solve_subs(self, zY: NDArray[np.float64]) -> Iterator[tuple[Any, float]]:
        """Each subproblem's (result, seconds) at zY in order (None for a subset without records): one after the
        other, lazily (a failure stops the round), or all at once on the thread pool."""
        def one(sub: Subproblem | None) -> tuple[Any, float]:
            ts = time.perf_counter()
            return (None, 0.0) if sub is None else (sub.solve(zY, self.deadline), time.perf_counter() - ts)

        if self.pool is None:
            return (one(sub) for sub in self.subs)
        return iter(list(self.pool.map(one, self.subs)))

    def close(self) -> None:
        """Stop the subproblem threads."""
        if self.pool is not None:
            self.pool.shutdown(wait=True)

    def _keep_incumbent(self, ub: float, zY: NDArray[np.float64], zX: list[NDArray[np.float64] | None]) -> None:
        """A feasible point better than the best so far: the new upper bound and its full matrix."""
        self.ub_best = ub
        self.Z_best = np.zeros((self.n, self.m))
        self.Z_best[self.b_rows] = zY.reshape(self.nb, self.m)
        for rows_x, z in zip(self.sub_rows, zX):
            if z is not None:
                self.Z_best[rows_x] = z

    def _record(self, it: int, pt: _MasterPoint, upper: float, max_sub_s: float) -> None:
        """One row of the iteration history."""
        self.history.append({"iteration": it, "lower": self.lb, "safe_bound": pt.safe_bound,
                             "master_objective": pt.objective, "upper": upper, "best_upper": self.ub_best,
                             "optimality_cuts": self.n_opt, "feasibility_cuts": self.n_feas,
                             "row_sum_cuts": self.n_row, "master_s": pt.seconds, "max_sub_s": max_sub_s})

    def _stopping_test(self, it: int, lam: float, violated_out: bool) -> _Stop | None:
        """``optimal`` / ``gap reached`` when the certified gap is within the target; ``stalled`` when plain Benders
        finds no cut violated at the master's point while the gap is open."""
        if np.isfinite(self.ub_best):
            g_now = self.ub_best - self.lb
            self.progress("Benders", float(np.clip(1 - np.log10(max(g_now, self.target) / self.target) / 6, 0, 1)))
            if g_now <= self.target:
                return self._certified(it, g_now)
        else:
            self.progress(f"Benders iteration {it}: no feasible point yet", None)
        if lam >= 1.0 and not violated_out:
            return "stalled", (f"no cut is violated at iteration {it} but the gap is open (UB − LB = "
                               f"{self.ub_best - self.lb:.3g}): solver tolerances")
        return None

    def _certified(self, it: int, g_now: float, reserve_met: bool = True) -> _Stop:
        """Status and message of a closed gap: optimal for the paper's LP when its certified gap (the floor's effect
        included) is within ξ too, else ``gap reached`` for the LP solved."""
        g_paper = g_now + self.floor_cost
        paper = (self.slack == 0 and g_paper <= self.gap_m
                 and g_paper <= OPTIMAL_REL * max(abs(self.ub_best), 1e-300))
        kept = (f", {self.reserve:.3g} of it kept for the exact repair of the solver's tolerances"
                if self.reserve > 0 and reserve_met else "")
        if paper:
            return "optimal", (f"certified after {it} iterations: UB − LB = {g_paper:.3g} for the LP without floor "
                               f"or slack (ξ = {self.gap_m:g}{kept})")
        return "gap reached", (f"UB − LB = {g_now:.3g} ≤ ξ = {self.gap_m:g} after {it} iterations for the LP solved, "
                               f"which is not the paper's: master floor τ = {self.floor:g} (can raise the optimum by "
                               f"up to {self.floor_cost:.3g}), slack δ = {self.slack:g}")

    def within_xi(self, it: int, status: str, message: str) -> _Stop:
        """A run stopped by a limit whose gap is within ξ but not within ξ less the reserve: certified as the paper's
        rule asks (the reserve was ours), the limit named; otherwise the limit's own status."""
        g_now = self.ub_best - self.lb
        if self.reserve > 0 and np.isfinite(g_now) and g_now <= self.target + self.reserve:
            met = g_now <= self.target
            cert, text = self._certified(it, g_now, reserve_met=met)
            return cert, text + ("" if met else f"; the {status} came before the reserve for the exact repair was met")
        return status, message

    def _add_round_cuts(self, it: int, lam: float, rnd: _Round) -> _Stop | None:
        """Add the round's cuts to the master (those with coefficients beyond ``CUT_CAP`` left out)."""
        cut_lo, cut_cols, cut_vals, dropped = clean_cuts(rnd.cut_lo, rnd.cut_cols, rnd.cut_vals)
        self.n_dropped += dropped
        if not cut_cols:
            if lam >= 1.0:
                return "stalled", (f"every cut of iteration {it} had coefficients beyond {CUT_CAP:.0e} and was left "
                                   "out (a floor on the master's entries keeps them finite)")
            self.at_out = True  # nothing to add from the separation point: separate at the master's own point next
            return None
        if not add_cuts(self.mp, self.safe, cut_lo, cut_cols, cut_vals):
            return "error", f"HiGHS refused the cuts of iteration {it}"
        return None

    def outcome(self, status: str, message: str, iterations: int, t_start: float) -> BendersOutcome:
        """The run's :class:`BendersOutcome`: timings, sizes and diagnostics; Z only when the gap closed."""
        labels, parts, subs = self.labels, self.parts, self.subs
        self.timings.update(master_s=self.t_mp, subproblems_s=self.t_sub, total_s=time.perf_counter() - t_start)
        size = {"master_" + k: v for k, v in self.mp_size.items()}
        size.update({"sub_variables_max": max((s.size["variables"] for s in subs if s), default=0),
                     "sub_constraints_max": max((s.size["constraints"] for s in subs if s), default=0),
                     "variables": self.nb * self.m + len(parts) + sum(s.size["variables"] for s in subs if s)})
        comps = components(self.nb, self.ci, self.cj)
        diagnostics: BendersDiagnostics = {"iterations": iterations, "history": self.history, "subsets": len(parts),
                       "subset_sizes": [int((labels == lab).sum()) for lab in parts],
                       "internal_sizes": [len(r) for r in self.sub_rows], "boundary_count": int(self.nb),
                       "boundary_per_subset": [int((self.is_b & (labels == lab)).sum()) for lab in parts],
                       "master_pairs": int(len(self.ci)), "cut_rule": self.cuts,
                       "master_pair_rows_added": int(self.pair_rows.present.sum()),
                       "master_component_sizes": comps,
                       "optimality_cuts": self.n_opt, "feasibility_cuts": self.n_feas, "row_sum_cuts": self.n_row,
                       "gap_m": self.gap_m, "cuts_dropped": self.n_dropped, "stabilise": self.stabilise,
                       "floor": self.floor, "floor_cost_m": self.floor_cost}
        counts = self.cut_counts
        diagnostics["lp_pairs_between_boundary"], diagnostics["initial_cuts"] = (counts["lp_pairs_between_boundary"],
                                                                                counts["initial_cuts"])
        if "lp_pairs_kept_in_master" in counts:
            diagnostics["lp_pairs_kept_in_master"] = counts["lp_pairs_kept_in_master"]
        done = status in ("optimal", "gap reached")
        ub = None if not np.isfinite(self.ub_best) else self.ub_best
        # reported lower bound: valid for the paper's LP (the floored LP's optimum exceeds it by at most floor_cost)
        lb = None if not np.isfinite(self.lb) else self.lb - self.floor_cost
        return BendersOutcome(self.Z_best if done else None, status, ub, lb, self.Z_best, self.timings, size,
                              diagnostics, message)


def solve_benders(W: NDArray[np.float64], pi: NDArray[np.int64], pj: NDArray[np.int64],
                  expo: NDArray[np.float64], labels: NDArray[np.int64], *, gap_m: float = 0.01,
                  max_iter: int = 1000, cuts: str = "needed", slack: float = 0.0, time_limit: float | None = None,
                  progress: Progress = no_progress,
                  core: NDArray[np.float64] | None = None, stabilise: float = 1.0,
                  floor: float = 1e-9, row_cuts: bool = False, reserve: float = 0.0,
                  threads: int = 1) -> BendersOutcome:
    """Benders decomposition of min Σ W∘Z s.t. rows sum to 1 and z[i,y] ≤ e^{expo}·z[j,y] on pairs (pi, pj).

    Args:
        W: (n, m) weighted costs p_x·c_xy (metres when c is in metres and p sums to 1).
        pi, pj, expo: the constrained ordered pairs and their exponents (ε·d); coefficients e^{expo} above
            ``COEF_CAP`` are capped, as in every explicit LP of mdpviz (a tightening).
        labels: subset of each row (from :func:`partition`).
        gap_m: ξ, stop when best UB − LB ≤ ξ (W's unit; the paper's ξ = 0.01).
        max_iter: iteration cap (status ``iteration limit``).
        cuts: initial cuts of Eq. 14: ``needed`` (default), ``all`` or ``none`` (see :func:`master_pairs`).
        slack: the authors' code-only additive slack δ on every pair row (0 = the paper's LP).
        time_limit: seconds for everything (status ``time limit``).
        core, stabilise: a feasible (n, m) point and λ of the in-out stabilisation (module docstring).
        floor: τ, lower bound on the master's entries (module docstring); 0 turns it off.
        row_cuts: separate :class:`RowSumCuts` at each master point first and re-solve the master while any is
            violated (no subproblem solved in such a round); the LP and its optimum are unchanged.
        reserve: share of ξ kept for a later exact repair of the solver's tolerances: stop at UB − LB ≤ (1 −
            reserve)·ξ (the gap certified is still read against ξ).
        threads: subproblems solved at once (threads; the same cuts and iterations as 1).
    """
    t_start = time.perf_counter()
    deadline = None if time_limit is None else t_start + time_limit
    try:
        run = _BendersRun(W, pi, pj, expo, labels, gap_m=gap_m, cuts=cuts, slack=slack, deadline=deadline,
                          progress=progress, core=core, stabilise=stabilise, floor=floor, row_cuts=row_cuts,
                          reserve=reserve, threads=threads)
    except OutOfTime as e:  # the set-up took the whole time: no iteration, no point
        return BendersOutcome(None, "time limit", None, None, timings={"total_s": time.perf_counter() - t_start},
                              diagnostics={"iterations": 0},
                              message=f"time limit while {e}, before the first iteration")
    status, message = "iteration limit", f"no certified gap ≤ ξ = {gap_m:g} after {max_iter} iterations"
    it = 0
    # one BLAS thread: an iteration's vector products are many and small, and OpenBLAS's second thread only spins
    # between them (Rome, K = 500, travel cost, stabilised: 42.7 s of CPU for 24.6 s of wall time with its own
    # threads, 22.7 s of both with one, the same 251 iterations; docs/WHAT-WE-LEARNED.md)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            for it in range(1, max_iter + 1):
                stop = run.iterate(it)
                if stop is not None:
                    status, message = stop
                    break
    finally:
        run.close()
    if status in ("time limit", "iteration limit"):
        status, message = run.within_xi(len(run.history), status, message)  # iterations completed
    return run.outcome(status, message, it, t_start)
