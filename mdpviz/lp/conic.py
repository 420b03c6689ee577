"""The conic column-generation engine of the optimal-mDP LP, for instances whose optimal columns are dense.

At small ε·d (a city a few km wide at ε = 5 km⁻¹, or Rome at ε = 1 km⁻¹) a row's mass spreads over most outputs and
most pair rows can bind, so the restricted LP of :func:`mdpviz.lp.structured.solve_structured` grows towards the whole
LP. There this engine is faster: it never writes a pair row into its master. Every column Z[:, y] is a conic
combination of *atoms*, vectors exactly in the cone C = {v ≥ 0 : v_i ≤ e^{E_ij} v_j}:

* **Master** (n rows): Z[:, y] = Σ_k λ_yk · a_k, λ ≥ 0; its row duals μ give the certified bound
  ``Σ_x μ_x + Σ_y min(0, min_{v ∈ C ∩ [0,1]^n} (W[:, y] − μ)·v)`` (valid for any μ: the row sums force Z ≤ 1).
* **Pricing** per output: an LP over a relaxation of C ∩ [0,1]^n with a sparse, lazily grown pair set (a
  relaxation only lowers the value, so the bound stays valid); its vertex is Lipschitz-repaired into C.
* **Stabilisation**: Wentges smoothing toward the best-bound dual and a dual box (artificial columns).
* **Exact output**: Z = Σ λ a is in the cone column by column; ``make_row_stochastic`` fixes the rows inside it.

In the code: :func:`solve_conic` checks and scales the input, ``_initial_atoms`` gives the starting atoms,
``_Master`` holds the master LP and its atoms, ``_Pricer`` the per-output pricing LPs, and ``_ColumnGeneration``
runs the loop (price, repair, share atoms, bound, purge) and assembles the exact Z.

Its pricing LPs carry coefficients up to 1e9 and can end in numerical trouble when ε·d is large (HiGHS "Unknown").
A failed pricing LP is solved again from scratch; if that fails too, its output gives no column that round and its
bound is the box's (min over [0, 1]^n), so the round's bound stays valid. Only when more pricing LPs fail than there
are outputs does it raise :class:`~mdpviz.errors.SolverError`, and ``solve_structured`` falls back to the
row-and-column engine. This is the project's earlier default engine, kept for the dense regime.
"""

from __future__ import annotations

import time

import highspy
import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from ..deadline import OutOfTime, check_deadline
from ..errors import ParameterError, SolverError
from ..progress import Progress, no_progress
from .cone import exponent_closure, floor_columns, lipschitz_repair, make_row_stochastic
from .highs import INF, new_highs
from .outcome import EngineDiagnostics, StructuredOutcome
from .pricing import LOG_COEF_CAP


def _csc_dense(V: NDArray[np.float64]) -> tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.float64]]:
    """Column starts, row indices and values of a dense (n, b) block, dropping exact zeros."""
    nz = V != 0.0
    counts = nz.sum(axis=0)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)
    _, cols = np.nonzero(nz.T)  # column-major order
    return starts, cols.astype(np.int32), V.T[nz.T].astype(np.float64)


class _Pricer:
    """One warm-started HiGHS model per output: min g·v over [0,1]^n with a lazily grown pair set."""

    def __init__(self, Es: NDArray[np.float64], m: int, knn: int,
                 extra: list[NDArray[np.int64]] | None = None) -> None:
        n = len(Es)
        self.n, self.m, self.Es = n, m, Es
        sym = np.minimum(Es, Es.T).copy()
        np.fill_diagonal(sym, np.inf)
        k = min(knn, n - 1)
        nb = np.argpartition(sym, k - 1, axis=1)[:, :k] if k > 0 else np.zeros((n, 0), dtype=np.int64)
        pi = np.repeat(np.arange(n), k)
        pj = nb.ravel()
        key = np.unique(np.concatenate([pi * n + pj, pj * n + pi]))
        self.base = key
        self.pairs: list[set[int]] = [set() for _ in range(m)]
        self.models: list[highspy.Highs] = []
        self.n_rows = np.zeros(m, dtype=np.int64)
        self.retries = 0  # pricing LPs solved again from scratch after numerical trouble
        for y in range(m):
            h = new_highs()
            h.setOptionValue("primal_feasibility_tolerance", 1e-9)
            h.setOptionValue("dual_feasibility_tolerance", 1e-9)
            h.setOptionValue("simplex_strategy", 4)  # only the cost changes between calls: primal simplex
            h.setOptionValue("presolve", "off")
            h.addVars(n, np.zeros(n), np.ones(n))
            self.models.append(h)
            ky = key if extra is None else np.union1d(key, extra[y])
            self._add(y, ky)
            self.pairs[y].update(ky.tolist())

    def _add(self, y: int, key: NDArray[np.int64]) -> None:
        i, j = key // self.n, key % self.n
        e = self.Es[i, j]
        keep = e <= LOG_COEF_CAP
        i, j, e = i[keep], j[keep], e[keep]
        r = len(i)
        if r == 0:
            return
        idx = np.column_stack([i, j]).ravel().astype(np.int32)
        val = np.column_stack([np.ones(r), -np.exp(e)]).ravel()
        self.models[y].addRows(r, np.full(r, -INF), np.zeros(r), 2 * r, (2 * np.arange(r)).astype(np.int32),
                               idx, val)
        self.n_rows[y] += r

    def add_pairs(self, y: int, i: NDArray[np.int64], j: NDArray[np.int64]) -> int:
        key = np.unique(i * self.n + j)
        new = np.array([k for k in key.tolist() if k not in self.pairs[y]], dtype=np.int64)
        if len(new):
            self.pairs[y].update(new.tolist())
            self._add(y, new)
        return len(new)

    def price(self, y: int, g: NDArray[np.float64], time_limit: float | None) -> tuple[NDArray[np.float64], float, str]:
        h = self.models[y]
        h.changeColsCost(self.n, np.arange(self.n, dtype=np.int32), g)
        if time_limit is not None:
            # HiGHS's clock is cumulative over the instance's runs: the limit is run time so far + what is left
            h.setOptionValue("time_limit", float(h.getRunTime() + max(time_limit, 0.01)))
        h.run()
        st = h.getModelStatus()
        if st not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit):
            # numerical trouble of the warm start (coefficients up to 1e9): once more from scratch, by dual simplex
            self.retries += 1
            h.setOptionValue("simplex_strategy", 1)
            h.clearSolver()
            h.run()
            h.setOptionValue("simplex_strategy", 4)
            st = h.getModelStatus()
        if st == highspy.HighsModelStatus.kTimeLimit:
            return np.zeros(self.n), 0.0, "time limit"
        if st != highspy.HighsModelStatus.kOptimal:
            return np.zeros(self.n), 0.0, h.modelStatusToString(st)
        v = np.clip(np.array(h.getSolution().col_value), 0.0, 1.0)
        return v, float(h.getInfo().objective_function_value), "optimal"


def solve_conic(W: NDArray[np.float64], E: NDArray[np.float64], *, closed: bool = False,
                tol: float = 1e-8, time_limit: float | None = None, progress: Progress = no_progress,
                knn: int = 8, alpha: float = 0.5, max_iter: int = 5000,
                max_atoms_factor: float = 6.0, share: int = 3, lower_box: bool = True,
                full_every: int = 4, init_atoms: NDArray[np.float64] | None = None,
                init_owner: NDArray[np.int64] | None = None,
                init_pairs: list[NDArray[np.int64]] | None = None,
                out_rows: NDArray[np.int64] | None = None) -> StructuredOutcome:
    """Solve min Σ W∘Z over row-stochastic Z whose columns satisfy Z[i,y] ≤ e^{E[i,j]} Z[j,y] for all i, j.

    Args:
        W: (n, m) weighted costs, W[x, y] = p_x · c_xy (any unit; objective and bound come back in it).
        E: (n, n) nonnegative exponents; E[i, j] bounds ln(Z[i, y] / Z[j, y]). For ε-mDP, E = ε·d with d in km
            and ε in km⁻¹. A general (e.g. pair-specific, asymmetric) E is allowed: its min-plus closure is
            used, which defines the same feasible set.
        closed: promise that E already satisfies the triangle inequality (true for ε times a metric); skips the
            O(n³) closure.
        tol: stop when (UB − LB) ≤ tol·|UB| with LB the certified Lagrangian bound.
        time_limit: seconds; on expiry the status is ``time limit`` and Z is the current feasible (private,
            not optimal) master point; ``OutOfTime`` when it expires before the master exists.
        progress: ``progress(phase, fraction)``.
        knn: nearest neighbours per row in the initial pricing pair set.
        alpha: Wentges smoothing weight toward the best-bound dual (0 disables).
        max_iter: iteration cap (status ``iteration limit``).
        max_atoms_factor: purge unused atoms when there are more than this many times n.
        lower_box: also impose μ ≥ 0 through surplus columns (dropped automatically if still used at the end).
        full_every: price every output (and update the bound) every this many iterations; in between only
            the outputs whose last pricing gave a column (1 = always price all).
        init_atoms, init_owner: extra starting atoms (n, a), each exactly in the cone, and their outputs (a,).
        init_pairs: per output, extra pricing pairs as keys i·n + j.
        share: each output receives up to this many of the iteration's new atoms (priced for any output).
        out_rows: (m,) row index of each output's own location (Y ⊂ X), used to shape the starting columns;
            default: the row where the output is cheapest.

    Returns:
        StructuredOutcome with Z (n, m), status, objective, certified bound, timings, sizes and history. On a time
        limit Z is the master's feasible, exactly private point (not certified).
    """
    t_start = time.perf_counter()
    deadline = None if time_limit is None else t_start + float(time_limit)
    W = np.asarray(W, dtype=np.float64)
    n, m = W.shape
    if E.shape != (n, n):
        raise ParameterError(f"E must be {n} × {n} to match W's {n} rows; got {E.shape}.")
    timings: dict[str, float] = {}
    progress("closure", None)
    t0 = time.perf_counter()
    Es = np.asarray(E, dtype=np.float64) if closed else exponent_closure(E)
    if closed and np.any(Es < 0):
        raise ParameterError("Exponents must be ≥ 0.")
    timings["closure_s"] = time.perf_counter() - t0
    scale = float(np.abs(W).max()) or 1.0
    Wn = W / scale  # work in a unit where costs are ≤ 1

    t0 = time.perf_counter()
    progress("initial columns", None)
    what = "making the conic engine's first columns"  # its repair is O(n²·|Y|): OutOfTime past the deadline
    check_deadline(deadline, what)
    try:
        A0, own0 = _initial_atoms(Wn, Es, out_rows, deadline)
    except OutOfTime:
        raise OutOfTime(what) from None
    master = _Master(Wn, Es)
    master.add_atoms(A0, own0)
    if init_atoms is not None and init_owner is not None and init_atoms.shape[1]:
        master.add_atoms(np.asarray(init_atoms, dtype=np.float64), np.asarray(init_owner, dtype=np.int64))
    timings["init_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    check_deadline(deadline, "setting up the conic engine's pricing")
    pricer = _Pricer(Es, m, knn, init_pairs)
    timings["pricing_setup_s"] = time.perf_counter() - t0
    if not lower_box:
        master.drop_lower_box()

    run = _ColumnGeneration(master, pricer, Wn, deadline, tol, progress, t_start, scale, alpha=alpha, share=share,
                            full_every=full_every, max_atoms_factor=max_atoms_factor)
    # one BLAS thread: a round's matrix products are small and many, and a second thread only spins between them
    # (Rome, ε = 0.5 km⁻¹, K = 200: 67.1 s of CPU and 56.2 s of wall time with OpenBLAS's own threads, 57.6 s of
    # both with one; docs/WHAT-WE-LEARNED.md)
    with threadpool_limits(limits=1, user_api="blas"):
        run.run(max_iter)
        return run.outcome(W, timings)


def _initial_atoms(Wn: NDArray[np.float64], Es: NDArray[np.float64], out_rows: NDArray[np.int64] | None,
                   deadline: float | None = None) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Starting atoms and their outputs: constant (feasible start), EM(E/2)-shaped columns, bumps exp(−E*[y, ·]);
    ``OutOfTime`` once ``deadline`` passes in the repair of the EM columns."""
    n, m = Wn.shape
    best_y = int(np.argmin(Wn.sum(axis=0)))
    sym = 0.5 * (Es + Es.T)
    ymin_row = np.argmin(Wn, axis=0) if out_rows is None else np.asarray(out_rows, dtype=np.int64)
    em = np.exp(-0.5 * sym[:, ymin_row])  # (n, m)
    em /= em.sum(axis=1, keepdims=True)
    em_cols, _ = lipschitz_repair(np.log(em), Es, deadline=deadline)  # no-op for a metric exponent
    em_cols = np.exp(em_cols - em_cols.max(axis=0, keepdims=True))
    bumps = np.exp(-Es[ymin_row, :].T)  # (n, m): column y = exp(−Es[loc_y, ·]), in the cone
    atoms = [np.ones((n, 1)), em_cols, bumps]
    owners = [np.array([best_y]), np.arange(m), np.arange(m)]
    return np.concatenate(atoms, axis=1), np.concatenate(owners)


class _Master:
    """The restricted master LP: Σ_y Z[x, y] = 1 per row x, with Z[:, y] = Σ_k λ_yk · a_k over the stored atoms.

    Its first 2n columns are artificial and keep the row duals μ in a box: +e_x at cost U_x (μ ≤ U) and −e_x at
    a tiny cost (μ ≥ −1e-7, the lower box, dropped when it binds); both must carry no mass at the end.
    """

    def __init__(self, Wn: NDArray[np.float64], Es: NDArray[np.float64]) -> None:
        n, m = Wn.shape
        self.n, self.Wn = n, Wn
        h = self.h = new_highs()
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("simplex_strategy", 4)  # primal simplex: columns are added, the basis stays feasible
        h.setOptionValue("small_matrix_value", 1e-12)
        h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        h.setOptionValue("dual_feasibility_tolerance", 1e-10)
        h.addRows(n, np.ones(n), np.ones(n), 0, np.zeros(n, dtype=np.int32), np.zeros(0, dtype=np.int32),
                  np.zeros(0))
        # dual box 0 ≤ μ ≤ U: +e_x at cost U_x, −e_x at cost 0 (both must be 0 at the end)
        U = np.min(Wn.T @ np.exp(-Es.T), axis=0) if n * m <= 4e7 else np.full(n, Wn.max())
        self.U = np.maximum(U, 1e-12)
        self.eye_idx = np.arange(n, dtype=np.int32)
        h.addCols(n, self.U, np.zeros(n), np.full(n, INF), n, self.eye_idx, self.eye_idx, np.ones(n))
        # a tiny cost on the surplus columns breaks ties away from rows that sum above 1 (the box becomes μ ≥ −1e-7)
        h.addCols(n, np.full(n, 1e-7), np.zeros(n), np.full(n, INF), n, self.eye_idx, self.eye_idx, -np.ones(n))
        self.n_art = 2 * n
        self.atom_store = np.empty((n, 0))
        self.atom_owner = np.empty(0, dtype=np.int64)
        self.box_on = True
        self.lower_box_on = True
        self.seconds = 0.0  # in the master's runs (not its rare restarts)

    def add_atoms(self, V: NDArray[np.float64], own: NDArray[np.int64]) -> None:
        """Add the atoms V[:, k] (each exactly in the cone) as columns of the outputs own[k]."""
        cost = np.einsum("ij,ij->j", self.Wn[:, own], V)
        starts, idx, vals = _csc_dense(V)
        self.h.addCols(V.shape[1], cost, np.zeros(V.shape[1]), np.full(V.shape[1], INF), len(vals), starts, idx,
                       vals)
        self.atom_store = np.concatenate([self.atom_store, V], axis=1)
        self.atom_owner = np.concatenate([self.atom_owner, own])

    def drop_lower_box(self) -> None:
        """Fix the surplus columns at 0: μ is no longer bounded below."""
        n = self.n
        self.h.changeColsBounds(n, np.arange(n, 2 * n, dtype=np.int32), np.zeros(n), np.zeros(n))
        self.lower_box_on = False

    def solve(self, deadline: float | None) -> tuple[NDArray[np.float64], NDArray[np.float64], float] | None:
        """Column values, row duals μ and objective of the master; None on the time limit."""
        h = self.h
        t0 = time.perf_counter()
        if deadline is not None:
            # HiGHS's clock is cumulative over the instance's runs: the limit is run time so far + what is left
            h.setOptionValue("time_limit", float(h.getRunTime() + max(deadline - time.perf_counter(), 0.01)))
        h.run()
        self.seconds += time.perf_counter() - t0
        if h.getModelStatus() not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit):
            # rare numerical trouble of the warm-started primal simplex: retry from scratch with dual simplex
            h.setOptionValue("simplex_strategy", 1)
            h.clearSolver()
            h.run()
            h.setOptionValue("simplex_strategy", 4)
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            if h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit:
                return None
            raise SolverError(f"The restricted master failed: {h.modelStatusToString(h.getModelStatus())}.")
        sol = h.getSolution()
        return np.array(sol.col_value), np.array(sol.row_dual), float(h.getInfo().objective_function_value)

    def relax_box(self, art: NDArray[np.float64]) -> None:
        """The artificial columns still carry mass at convergence: drop the lower box or widen the upper one."""
        n = self.n
        if np.any(art[n:] > 1e-11) and self.lower_box_on:
            self.drop_lower_box()  # surplus rows (μ ≥ 0) in use at convergence
        if np.any(art[:n] > 1e-11):
            self.U = self.U * 10.0  # the upper box binds: widen it
            self.h.changeColsCost(n, self.eye_idx, self.U)
            self.box_on = bool(self.U.min() < 1e6)

    def purge(self, lam: NDArray[np.float64], mu: NDArray[np.float64], max_atoms_factor: float) -> None:
        """Above max_atoms_factor · n atoms, delete the unused ones whose reduced cost is above the median."""
        if len(self.atom_owner) > max_atoms_factor * self.n:
            n_old = len(lam)
            dj = np.einsum("ij,ij->j", self.Wn[:, self.atom_owner[:n_old]] - mu[:, None], self.atom_store[:, :n_old])
            drop = np.flatnonzero((lam <= 1e-14) & (dj > np.quantile(dj, 0.5)))
            if len(drop):
                self.h.deleteCols(len(drop), (drop + self.n_art).astype(np.int32))
                keep = np.ones(len(self.atom_owner), dtype=bool)
                keep[drop] = False
                self.atom_store, self.atom_owner = self.atom_store[:, keep], self.atom_owner[keep]

    def final_weights(self, deadline: float | None) -> NDArray[np.float64]:
        """Re-solve with the artificial columns priced out or fixed at 0; the atom weights λ of that solution."""
        n, h = self.n, self.h
        h.changeColsCost(n, self.eye_idx, np.full(n, 1e6))
        h.changeColsBounds(n, np.arange(n, 2 * n, dtype=np.int32), np.zeros(n), np.zeros(n))
        left = 60.0 if deadline is None else max(deadline - time.perf_counter(), 0.01)  # never past the deadline
        h.setOptionValue("time_limit", float(h.getRunTime() + left))
        h.run()
        x = np.array(h.getSolution().col_value)
        return x[self.n_art:]


class _ColumnGeneration:
    """The column-generation loop over a :class:`_Master` and a :class:`_Pricer`, and the exact Z it ends with."""

    def __init__(self, master: _Master, pricer: _Pricer, Wn: NDArray[np.float64], deadline: float | None,
                 tol: float, progress: Progress, t_start: float, scale: float, *, alpha: float, share: int,
                 full_every: int, max_atoms_factor: float) -> None:
        n, m = Wn.shape
        self.master, self.pricer, self.Wn, self.n, self.m = master, pricer, Wn, n, m
        self.deadline, self.tol, self.progress, self.t_start, self.scale = deadline, tol, progress, t_start, scale
        self.alpha, self.share, self.full_every, self.max_atoms_factor = alpha, share, full_every, max_atoms_factor
        self.last_val = np.full(m, -np.inf)
        self.partial_ok = True
        self.mu_best = np.zeros(n)
        self.lb_best = -np.inf
        self.history: list[tuple[float, float, float, int]] = []
        self.t_price = self.t_repair = 0.0
        self.n_price = 0
        self.failures = 0  # pricing LPs that failed after their retry (bounded by the box instead)
        self.status = "iteration limit"
        self.message = ""
        self.ub = np.inf
        self.it = 0
        self.lam = np.zeros(0)
        self.gap0: float | None = None

    def run(self, max_iter: int) -> None:
        """Iterate until optimal, stalled, out of time or at max_iter (status and message say which)."""
        for it in range(1, max_iter + 1):
            self.it = it
            if self._iteration(it):
                break

    def _iteration(self, it: int) -> bool:
        """One master solve and pricing round; True when the loop is over."""
        if self.deadline is not None and time.perf_counter() > self.deadline:
            self.status, self.message = "time limit", f"time limit after {it - 1} iterations"
            return True
        solved = self.master.solve(self.deadline)
        if solved is None:
            self.status, self.message = "time limit", f"time limit in the master at iteration {it}"
            return True
        x, mu, obj = solved
        art = x[:self.master.n_art]
        self.lam = x[self.master.n_art:]
        art_used = bool(np.any(art > 1e-11))
        if not art_used:
            self.ub = min(self.ub, obj)
        full, todo = self._outputs_to_price(it)
        improved, pairs_added = self._price_round(mu, full, todo, it)
        if self.status == "time limit":
            return True
        gap = self._record(obj)
        if not art_used and gap <= self.tol:
            self.status = "optimal"
            return True
        if not improved and not full:
            self.partial_ok = False  # a partial round found nothing: price every output next time
            return False
        self.partial_ok = True
        if not improved:
            if art_used:
                self.master.relax_box(art)
                return False
            if pairs_added == 0:
                self.status = "optimal" if gap <= 1e-6 else "stalled"
                self.message = f"no improving column and exact pricing; certified gap {gap:.2e}"
                return True
        self.master.purge(self.lam, mu, self.max_atoms_factor)
        return False

    def _outputs_to_price(self, it: int) -> tuple[bool, NDArray[np.int64]]:
        """Whether this is a full round, and the outputs to price in it.

        Partial pricing: outputs that gave no column last time are priced only on full rounds (every
        ``full_every`` iterations, and whenever a partial round finds nothing); the bound needs a full round.
        """
        full = (it % self.full_every == 1) or self.full_every <= 1 or not self.partial_ok
        todo = np.arange(self.m) if full else np.flatnonzero(self.last_val < -1e-12)
        if len(todo) == 0:
            full, todo = True, np.arange(self.m)
        return full, todo

    def _price_round(self, mu: NDArray[np.float64], full: bool, todo: NDArray[np.int64],
                     it: int) -> tuple[bool, int]:
        """Price, repair and share new atoms; (whether an improving atom was added, pricing pairs added)."""
        pairs_added = 0
        for attempt in (0, 1):
            # attempt 0: smoothed dual; attempt 1 (mis-pricing): the master's own dual
            a = self.alpha if (attempt == 0 and np.isfinite(self.lb_best)) else 0.0
            mu_s = a * self.mu_best + (1 - a) * mu
            V, vals = self._price(self.Wn - mu_s[:, None], todo, it)
            if self.status == "time limit":
                return False, pairs_added
            self.last_val[todo] = vals[todo]
            if full:
                lb = float(mu_s.sum() + np.minimum(vals, 0.0).sum())
                if lb > self.lb_best:
                    self.lb_best, self.mu_best = lb, mu_s.copy()
            Vr, pairs_added = self._repair(V, todo)
            if self._share_atoms(Vr, mu):
                return True, pairs_added
            if a == 0.0:
                break
        return False, pairs_added

    def _price(self, G: NDArray[np.float64], todo: NDArray[np.int64],
               it: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Pricing vertices V[:, y] and values of the outputs todo at reduced costs G (status set on a time limit)."""
        t0 = time.perf_counter()
        V = np.zeros((self.n, self.m))
        vals = np.zeros(self.m)
        for y in todo:
            rem = None if self.deadline is None else self.deadline - time.perf_counter()
            v, val, st = self.pricer.price(int(y), G[:, y], rem)
            if st != "optimal":
                if st == "time limit" or (rem is not None and rem <= 0.05):
                    self.status, self.message = "time limit", f"time limit while pricing at iteration {it}"
                    break
                # failed twice: no column from this output this round, and the box bound of its pricing LP
                # (min over [0, 1]^n, below the LP's value) keeps the round's Lagrangian bound valid; trouble that
                # persists (more failures than outputs) hands the solve to the row-and-column engine
                self.failures += 1
                if self.failures > self.m:
                    raise SolverError(f"{self.failures} pricing LPs failed ({st}).")
                v, val = np.zeros(self.n), float(np.minimum(G[:, y], 0.0).sum())
            V[:, y], vals[y] = v, val
            self.n_price += 1
        self.t_price += time.perf_counter() - t0
        return V, vals

    def _repair(self, V: NDArray[np.float64], todo: NDArray[np.int64]) -> tuple[NDArray[np.float64], int]:
        """Pricing vertices repaired into the cone, and how many pricing pairs they broke (added to the pricer)."""
        t0 = time.perf_counter()
        with np.errstate(divide="ignore"):
            logv = np.log(V[:, todo])
        u, arg = lipschitz_repair(logv, self.pricer.Es)
        Vr = np.zeros((self.n, self.m))
        Vr[:, todo] = np.exp(u)
        broke = u > np.where(np.isfinite(logv), logv, -np.inf) + 1e-9
        pairs_added = 0
        for c in np.flatnonzero(broke.any(axis=0)):
            js = np.flatnonzero(broke[:, c])
            pairs_added += self.pricer.add_pairs(int(todo[c]), arg[js, c], js)
        self.t_repair += time.perf_counter() - t0
        return Vr, pairs_added

    def _share_atoms(self, Vr: NDArray[np.float64], mu: NDArray[np.float64]) -> bool:
        """Offer the repaired vertices to the outputs whose reduced cost they improve; True if any was added.

        Every repaired vertex is an atom of the shared cone: each output receives the best ``share`` of them for
        it, not only the one it priced.
        """
        m = self.m
        RC = (self.Wn - mu[:, None]).T @ Vr  # (m outputs, m new atoms)
        RC[:, np.max(Vr, axis=0) <= 0] = np.inf
        k_share = min(self.share, m)
        best = np.argpartition(RC, k_share - 1, axis=1)[:, :k_share] if k_share < m else \
            np.tile(np.arange(m), (m, 1))
        yy = np.repeat(np.arange(m), best.shape[1])
        kk = best.ravel()
        good = RC[yy, kk] < -1e-10
        if np.any(good):
            self.master.add_atoms(Vr[:, kk[good]], yy[good].astype(np.int64))
            return True
        return False

    def _record(self, obj: float) -> float:
        """Append the round to the history, report progress; the certified relative gap."""
        ub, lb_best = self.ub, self.lb_best
        gap = (ub - lb_best) / max(abs(ub), 1e-300) if np.isfinite(ub) else np.inf
        self.history.append((time.perf_counter() - self.t_start, obj * self.scale, lb_best * self.scale,
                             len(self.master.atom_owner)))
        if np.isfinite(gap):
            self.gap0 = self.gap0 or max(gap, self.tol * 10)
            frac = float(np.clip(np.log(self.gap0 / max(gap, self.tol)) / np.log(self.gap0 / self.tol), 0.0, 1.0))
            self.progress("column generation", frac)
        return gap

    def outcome(self, W: NDArray[np.float64], timings: dict[str, float]) -> StructuredOutcome:
        """An exactly private Z from the master's last solution, with its objective, bound and diagnostics."""
        t0 = time.perf_counter()
        master, pricer, n, m = self.master, self.pricer, self.n, self.m
        lam = self.lam
        if self.status != "optimal" or len(lam) != len(master.atom_owner):
            lam = master.final_weights(self.deadline)  # current and free of artificial mass
        lam = np.maximum(lam[: len(master.atom_owner)], 0.0)
        Z = np.zeros((n, m))
        use = np.flatnonzero(lam > 0)
        np.add.at(Z.T, master.atom_owner[use], (master.atom_store[:, use] * lam[use]).T)
        Z, fix = make_row_stochastic(floor_columns(Z), pricer.Es, self.Wn)
        timings["assemble_s"] = time.perf_counter() - t0
        objective = float(np.sum(W * Z))
        bound = self.lb_best * self.scale if np.isfinite(self.lb_best) else None
        message = self.message
        if self.failures:
            failed = (f"{self.failures} pricing LP{'s' if self.failures > 1 else ''} failed twice (no column from "
                      "that output in that round; its bound taken over the box)")
            message = f"{message}; {failed}" if message else failed
        slack = 10 * self.tol * abs(objective) + 1e-12
        if self.status == "optimal" and bound is not None and objective - bound > slack:
            message = (f"certified gap after assembly {(objective - bound) / objective:.2e} (row-sum fix-up); "
                       "objective still within tolerance of the master")
        timings.update(master_s=master.seconds, pricing_s=self.t_price, repair_s=self.t_repair,
                       total_s=time.perf_counter() - self.t_start)
        size = {"master_rows": n, "atoms": len(master.atom_owner), "atoms_used": len(use),
                "pricing_lps": int(self.n_price), "pricing_rows_max": int(pricer.n_rows.max()),
                "pricing_rows_mean": int(pricer.n_rows.mean()), "variables": n * m}
        diagnostics: EngineDiagnostics = {
            "atoms_final": master.atom_store[:, use], "atom_owner_final": master.atom_owner[use],
            "pricing_pairs": [np.fromiter(p, dtype=np.int64) for p in pricer.pairs],
            "iterations": self.it, "history": self.history,
            "outputs_used": len(np.unique(master.atom_owner[use])), "box_dropped": not master.box_on,
            "pricing_retries": pricer.retries, "pricing_failures": self.failures}
        diagnostics["row_fix"] = fix
        return StructuredOutcome(Z, self.status, objective, bound, timings, size, diagnostics, message)
