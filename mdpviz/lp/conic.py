"""The conic column-generation engine of the optimal-mDP LP, for instances whose optimal columns are dense.

At small ε·d (a city a few km wide at ε = 5 km⁻¹, or Rome at ε = 1 km⁻¹) a row's mass spreads over most outputs and
most pair rows can bind, so the restricted LP of :func:`mdpviz.lp.colgen.solve_structured` grows towards the whole
LP. There this engine is faster: it never writes a pair row into its master. Every column Z[:, y] is a conic
combination of *atoms*, vectors exactly in the cone C = {v ≥ 0 : v_i ≤ e^{E_ij} v_j}:

* **Master** (n rows): Z[:, y] = Σ_k λ_yk · a_k, λ ≥ 0; its row duals μ give the certified bound
  ``Σ_x μ_x + Σ_y min(0, min_{v ∈ C ∩ [0,1]^n} (W[:, y] − μ)·v)`` (valid for any μ: the row sums force Z ≤ 1).
* **Pricing** per output: an LP over a relaxation of C ∩ [0,1]^n with a sparse, lazily grown pair set (a
  relaxation only lowers the value, so the bound stays valid); its vertex is Lipschitz-repaired into C.
* **Stabilisation**: Wentges smoothing toward the best-bound dual and a dual box (artificial columns).
* **Exact output**: Z = Σ λ a is in the cone column by column; ``make_row_stochastic`` fixes the rows inside it.

Its pricing LPs carry coefficients up to 1e9 and can end in numerical trouble when ε·d is large (HiGHS "Unknown");
it then raises :class:`~mdpviz.errors.SolverError` and ``solve_structured`` falls back to the row-and-column
engine. This is the project's earlier default engine, kept for the dense regime.
"""

from __future__ import annotations

import time

import highspy
import numpy as np
from numpy.typing import NDArray

from ..errors import ParameterError, SolverError
from ..progress import Progress, no_progress
from .colgen import StructuredOutcome, exponent_closure, floor_columns, lipschitz_repair, make_row_stochastic
from .highs import INF, new_highs
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
            not optimal) master point.
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

    # ---- initial atoms: constant (feasible start), EM(E/2)-shaped columns, and bumps exp(−E*[y, ·]) ----
    t0 = time.perf_counter()
    progress("initial columns", None)
    best_y = int(np.argmin(Wn.sum(axis=0)))
    sym = 0.5 * (Es + Es.T)
    ymin_row = np.argmin(Wn, axis=0) if out_rows is None else np.asarray(out_rows, dtype=np.int64)
    em = np.exp(-0.5 * sym[:, ymin_row])  # (n, m)
    em /= em.sum(axis=1, keepdims=True)
    em_cols, _ = lipschitz_repair(np.log(em), Es)  # no-op for a metric exponent
    em_cols = np.exp(em_cols - em_cols.max(axis=0, keepdims=True))
    bumps = np.exp(-Es[ymin_row, :].T)  # (n, m): column y = exp(−Es[loc_y, ·]), in the cone
    atoms = [np.ones((n, 1)), em_cols, bumps]
    owners = [np.array([best_y]), np.arange(m), np.arange(m)]
    A0 = np.concatenate(atoms, axis=1)
    own0 = np.concatenate(owners)

    # ---- master ----
    master = new_highs()
    master.setOptionValue("solver", "simplex")
    master.setOptionValue("simplex_strategy", 4)  # primal simplex: columns are added, the basis stays feasible
    master.setOptionValue("small_matrix_value", 1e-12)
    master.setOptionValue("primal_feasibility_tolerance", 1e-10)
    master.setOptionValue("dual_feasibility_tolerance", 1e-10)
    master.addRows(n, np.ones(n), np.ones(n), 0, np.zeros(n, dtype=np.int32), np.zeros(0, dtype=np.int32),
                   np.zeros(0))
    # dual box 0 ≤ μ ≤ U: +e_x at cost U_x, −e_x at cost 0 (both must be 0 at the end)
    U = np.min(Wn.T @ np.exp(-Es.T), axis=0) if n * m <= 4e7 else np.full(n, Wn.max())
    U = np.maximum(U, 1e-12)
    eye_idx = np.arange(n, dtype=np.int32)
    master.addCols(n, U, np.zeros(n), np.full(n, INF), n, eye_idx, eye_idx, np.ones(n))
    # a tiny cost on the surplus columns breaks ties away from rows that sum above 1 (the box becomes μ ≥ −1e-7)
    master.addCols(n, np.full(n, 1e-7), np.zeros(n), np.full(n, INF), n, eye_idx, eye_idx, -np.ones(n))
    n_art = 2 * n
    atom_store = np.empty((n, 0))
    atom_owner = np.empty(0, dtype=np.int64)

    def add_atoms(V: NDArray[np.float64], own: NDArray[np.int64]) -> None:
        nonlocal atom_store, atom_owner
        cost = np.einsum("ij,ij->j", Wn[:, own], V)
        starts, idx, vals = _csc_dense(V)
        master.addCols(V.shape[1], cost, np.zeros(V.shape[1]), np.full(V.shape[1], INF), len(vals), starts, idx,
                       vals)
        atom_store = np.concatenate([atom_store, V], axis=1)
        atom_owner = np.concatenate([atom_owner, own])

    add_atoms(A0, own0)
    if init_atoms is not None and init_owner is not None and init_atoms.shape[1]:
        add_atoms(np.asarray(init_atoms, dtype=np.float64), np.asarray(init_owner, dtype=np.int64))
    timings["init_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    pricer = _Pricer(Es, m, knn, init_pairs)
    timings["pricing_setup_s"] = time.perf_counter() - t0

    box_on = True
    last_val = np.full(m, -np.inf)
    partial_ok = True
    lower_box_on = lower_box
    if not lower_box:
        master.changeColsBounds(n, np.arange(n, 2 * n, dtype=np.int32), np.zeros(n), np.zeros(n))
    mu_best = np.zeros(n)
    lb_best = -np.inf
    history: list[tuple[float, float, float, int]] = []
    t_master = t_price = t_repair = 0.0
    n_price = 0
    status = "iteration limit"
    message = ""
    ub = np.inf
    it = 0
    lam = np.zeros(0)
    gap0 = None
    for it in range(1, max_iter + 1):
        if deadline is not None and time.perf_counter() > deadline:
            status = "time limit"
            message = f"time limit after {it - 1} iterations"
            break
        t0 = time.perf_counter()
        if deadline is not None:
            # HiGHS's clock is cumulative over the instance's runs: the limit is run time so far + what is left
            master.setOptionValue("time_limit", float(master.getRunTime() + max(deadline - time.perf_counter(), 0.01)))
        master.run()
        t_master += time.perf_counter() - t0
        if master.getModelStatus() not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit):
            # rare numerical trouble of the warm-started primal simplex: retry from scratch with dual simplex
            master.setOptionValue("simplex_strategy", 1)
            master.clearSolver()
            master.run()
            master.setOptionValue("simplex_strategy", 4)
        if master.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            if master.getModelStatus() == highspy.HighsModelStatus.kTimeLimit:
                status = "time limit"
                message = f"time limit in the master at iteration {it}"
                break
            raise SolverError(f"The restricted master failed: {master.modelStatusToString(master.getModelStatus())}.")
        sol = master.getSolution()
        x = np.array(sol.col_value)
        mu = np.array(sol.row_dual)
        obj = float(master.getInfo().objective_function_value)
        art = x[:n_art]
        lam = x[n_art:]
        art_used = bool(np.any(art > 1e-11))
        if not art_used:
            ub = min(ub, obj)

        improved = False
        # partial pricing: outputs that gave no column last time are priced only on full rounds (every
        # `full_every` iterations, and whenever a partial round finds nothing); the bound needs a full round
        full = (it % full_every == 1) or full_every <= 1 or not partial_ok
        todo = np.arange(m) if full else np.flatnonzero(last_val < -1e-12)
        if len(todo) == 0:
            full, todo = True, np.arange(m)
        for attempt in (0, 1):
            # attempt 0: smoothed dual; attempt 1 (mis-pricing): the master's own dual
            a = alpha if (attempt == 0 and np.isfinite(lb_best)) else 0.0
            mu_s = a * mu_best + (1 - a) * mu
            G = Wn - mu_s[:, None]
            t0 = time.perf_counter()
            V = np.zeros((n, m))
            vals = np.zeros(m)
            for y in todo:
                rem = None if deadline is None else deadline - time.perf_counter()
                v, val, st = pricer.price(int(y), G[:, y], rem)
                if st != "optimal":
                    if st == "time limit" or (rem is not None and rem <= 0.05):
                        status, message = "time limit", f"time limit while pricing at iteration {it}"
                        break
                    raise SolverError(f"A pricing LP failed ({st}).")
                V[:, y], vals[y] = v, val
                n_price += 1
            t_price += time.perf_counter() - t0
            if status == "time limit":
                break
            last_val[todo] = vals[todo]
            if full:
                lb = float(mu_s.sum() + np.minimum(vals, 0.0).sum())
                if lb > lb_best:
                    lb_best, mu_best = lb, mu_s.copy()
            # repair pricing vertices into the cone; remember the pairs they broke
            t0 = time.perf_counter()
            with np.errstate(divide="ignore"):
                logv = np.log(V[:, todo])
            u, arg = lipschitz_repair(logv, Es)
            Vr = np.zeros((n, m))
            Vr[:, todo] = np.exp(u)
            broke = u > np.where(np.isfinite(logv), logv, -np.inf) + 1e-9
            pairs_added = 0
            for c in np.flatnonzero(broke.any(axis=0)):
                js = np.flatnonzero(broke[:, c])
                pairs_added += pricer.add_pairs(int(todo[c]), arg[js, c], js)
            t_repair += time.perf_counter() - t0
            # every repaired vertex is an atom of the shared cone: offer it to every output whose reduced cost
            # it improves (the best `share` atoms per output), not only to the output that priced it
            RC = (Wn - mu[:, None]).T @ Vr  # (m outputs, m new atoms)
            RC[:, np.max(Vr, axis=0) <= 0] = np.inf
            k_share = min(share, m)
            best = np.argpartition(RC, k_share - 1, axis=1)[:, :k_share] if k_share < m else \
                np.tile(np.arange(m), (m, 1))
            yy = np.repeat(np.arange(m), best.shape[1])
            kk = best.ravel()
            good = RC[yy, kk] < -1e-10
            if np.any(good):
                add_atoms(Vr[:, kk[good]], yy[good].astype(np.int64))
                improved = True
                break
            if a == 0.0:
                break
        if status == "time limit":
            break
        gap = (ub - lb_best) / max(abs(ub), 1e-300) if np.isfinite(ub) else np.inf
        history.append((time.perf_counter() - t_start, obj * scale, lb_best * scale, len(atom_owner)))
        if np.isfinite(gap):
            gap0 = gap0 or max(gap, tol * 10)
            frac = float(np.clip(np.log(gap0 / max(gap, tol)) / np.log(gap0 / tol), 0.0, 1.0))
            progress("column generation", frac)
        if not art_used and gap <= tol:
            status = "optimal"
            break
        if not improved and not full:
            partial_ok = False  # a partial round found nothing: price every output next time
            continue
        partial_ok = True
        if not improved:
            if art_used:
                if np.any(art[n:] > 1e-11) and lower_box_on:
                    # surplus rows (μ ≥ 0) in use at convergence: drop the lower box
                    master.changeColsBounds(n, np.arange(n, 2 * n, dtype=np.int32), np.zeros(n), np.zeros(n))
                    lower_box_on = False
                if np.any(art[:n] > 1e-11):
                    U = U * 10.0  # the upper box binds: widen it
                    master.changeColsCost(n, eye_idx, U)
                    box_on = bool(U.min() < 1e6)
                continue
            if pairs_added == 0:
                status = "optimal" if gap <= 1e-6 else "stalled"
                message = f"no improving column and exact pricing; certified gap {gap:.2e}"
                break
        # purge unused atoms
        if len(atom_owner) > max_atoms_factor * n:
            n_old = len(lam)
            dj = np.einsum("ij,ij->j", Wn[:, atom_owner[:n_old]] - mu[:, None], atom_store[:, :n_old])
            drop = np.flatnonzero((lam <= 1e-14) & (dj > np.quantile(dj, 0.5)))
            if len(drop):
                master.deleteCols(len(drop), (drop + n_art).astype(np.int32))
                keep = np.ones(len(atom_owner), dtype=bool)
                keep[drop] = False
                atom_store, atom_owner = atom_store[:, keep], atom_owner[keep]

    # ---- assemble an exactly private Z from the master's last solution ----
    t0 = time.perf_counter()
    if status != "optimal" or len(lam) != len(atom_owner):
        # make sure the last master solution is current and uses no artificial mass
        master.changeColsCost(n, eye_idx, np.full(n, 1e6))
        master.changeColsBounds(n, np.arange(n, 2 * n, dtype=np.int32), np.zeros(n), np.zeros(n))
        left = 60.0 if deadline is None else max(deadline - time.perf_counter(), 0.01)  # never past the deadline
        master.setOptionValue("time_limit", float(master.getRunTime() + left))
        master.run()
        x = np.array(master.getSolution().col_value)
        lam = x[n_art:]
    lam = np.maximum(lam[: len(atom_owner)], 0.0)
    Z = np.zeros((n, m))
    use = np.flatnonzero(lam > 0)
    np.add.at(Z.T, atom_owner[use], (atom_store[:, use] * lam[use]).T)
    Z, fix = make_row_stochastic(floor_columns(Z), Es, Wn)
    timings["assemble_s"] = time.perf_counter() - t0
    objective = float(np.sum(W * Z))
    bound = lb_best * scale if np.isfinite(lb_best) else None
    if status == "optimal" and bound is not None and objective - bound > 10 * tol * abs(objective) + 1e-12:
        message = (f"certified gap after assembly {(objective - bound) / objective:.2e} (row-sum fix-up); "
                   "objective still within tolerance of the master")
    timings.update(master_s=t_master, pricing_s=t_price, repair_s=t_repair,
                   total_s=time.perf_counter() - t_start)
    size = {"master_rows": n, "atoms": len(atom_owner), "atoms_used": len(use),
            "pricing_lps": int(n_price), "pricing_rows_max": int(pricer.n_rows.max()),
            "pricing_rows_mean": int(pricer.n_rows.mean()), "variables": n * m}
    diagnostics = {"atoms_final": atom_store[:, use], "atom_owner_final": atom_owner[use],
                   "pricing_pairs": [np.fromiter(p, dtype=np.int64) for p in pricer.pairs],
                   "iterations": it, "history": history, "outputs_used": len(np.unique(atom_owner[use])),
                   "box_dropped": not box_on, **fix}
    return StructuredOutcome(Z, status, objective, bound, timings, size, diagnostics, message)

