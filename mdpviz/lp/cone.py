"""The cone every column of an ε-mDP mechanism lies in, and the exact repair into it that every LP mechanism shares.

A column Z[:, y] of a mechanism meets ε-mDP (with exponents E: Z[i, y] ≤ e^{E[i, j]} Z[j, y]) exactly when it lies
in the cone C = {v ≥ 0 : v_i ≤ e^{E_ij} v_j}. C does not change when E is replaced by its min-plus (shortest-path)
closure E*, which satisfies the triangle inequality, so the *Lipschitz repair* ``u'_j = min(0, max_i (log v_i −
E*_ij))`` maps any vector into C ∩ [0, 1]^n exactly (up to floating-point rounding, which ``floor_columns`` and the
margins below keep on the safe side). ``make_row_stochastic`` then fixes the row sums without leaving the cone, and
``repair_into_cone`` does both for a whole matrix. Everything is vectorised and works in log space.
"""

from __future__ import annotations

import time
from typing import TypedDict

import numpy as np
from numpy.typing import NDArray
from scipy.sparse.csgraph import shortest_path

from ..deadline import OutOfTime, check_deadline, would_overrun
from ..errors import ParameterError, SolverError


def exponent_closure(E: NDArray[np.float64]) -> NDArray[np.float64]:
    """Min-plus (shortest-path) closure E* of a nonnegative exponent matrix (n × n, diagonal 0).

    ``Z[i, y] ≤ e^{E_ij} Z[j, y]`` for all pairs is equivalent to the same constraints with E*, and E* obeys
    the triangle inequality. Raises ParameterError on a negative or NaN exponent.
    """
    E = np.asarray(E, dtype=np.float64)
    if E.ndim != 2 or E.shape[0] != E.shape[1]:
        raise ParameterError(f"The exponent matrix must be square (n × n); got shape {E.shape}.")
    if not np.all(np.isfinite(E) | (E == np.inf)) or np.any(E < 0):
        raise ParameterError("Exponents must be ≥ 0 (a negative exponent forces two rows to zero: infeasible); "
                             "clip them at 0 first.")
    n = len(E)
    G = E.copy()
    np.fill_diagonal(G, 0.0)
    off = ~np.eye(n, dtype=bool)
    G[off & (G == 0)] = 1e-300  # csgraph reads a dense 0 as "no edge"; keep zero-exponent pairs as edges
    Es = shortest_path(G, method="D" if n > 300 else "FW", directed=True)
    Es[Es < 1e-200] = 0.0
    np.fill_diagonal(Es, 0.0)
    return np.asarray(Es, dtype=np.float64)


def lipschitz_repair(logv: NDArray[np.float64], Es: NDArray[np.float64], chunk: int = 64,
                     deadline: float | None = None) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Smallest log-vectors above ``logv`` that lie in the cone (w.r.t. the closed exponents Es), capped at 0.

    Only the finite entries of a column can hold others up, so each column is computed from its own finite entries
    (fast for the sparse columns of an LP solution), in blocks of bounded memory.

    Args:
        logv: (n, b) log-values of b vectors (−inf allowed).
        Es: (n, n) closed exponents: v_i ≤ e^{Es_ij} v_j.
        chunk: block size in units of 64·n entries (memory of a temporary ≈ chunk·64·n floats).
        deadline: a ``time.perf_counter()`` value; ``OutOfTime`` is raised once it has passed (checked once per
            block), or as soon as the pace so far (measured over at least a twentieth of the work or 50 ms) shows
            the repair would end past it: a stop with half a second left does not spend it on a repair of seconds.
    Returns:
        (u, arg): u[j, b] = min(0, max_i logv[i, b] − Es[i, j]) and arg[j, b] the maximising i (0 for an all −inf
        column).
    """
    n, b = logv.shape
    u = np.full((n, b), -np.inf)
    arg = np.zeros((n, b), dtype=np.int64)
    finite = np.isfinite(logv)
    step = max(1, int(chunk * 64))
    cols = np.arange(n)
    total, done, t0 = int(finite.sum()), 0, time.perf_counter()
    for c in range(b):  # one vectorised step per column (or per block of its sources)
        src = np.flatnonzero(finite[:, c])
        for s in range(0, len(src), step):
            what = f"repairing column {c + 1} of {b} into the ε-mDP cone"
            check_deadline(deadline, what)
            if deadline is not None and done and would_overrun(t0, done, total, deadline):
                raise OutOfTime(f"{what} (at its pace so far it would end after the deadline)")
            rows = src[s:s + step]
            done += len(rows)
            blk = logv[rows, c, None] - Es[rows]  # (sources, n)
            best = np.argmax(blk, axis=0)
            val = blk[best, cols]
            better = val > u[:, c]
            u[better, c] = val[better]
            arg[better, c] = rows[best[better]]
    return np.minimum(u, 0.0), arg


TINY = 1e-300  # a normal float64 (full precision): entries below it cannot keep their ratios exactly


def floor_columns(Z: NDArray[np.float64]) -> NDArray[np.float64]:
    """Raise every entry of each non-zero column to at least ``TINY``; all-zero columns stay zero.

    This keeps a column in the cone exactly (max of two cone vectors, the constant one included, is in the cone),
    and it is what makes the cone representable at paper scale: at ε = 15 km⁻¹ and 58 km the true lower bound
    e^{−870} of an entry underflows float64 (its smallest positive is e^{−744}), and a 0 under a positive entry is
    a breach. The mass added is at most K·1e-300 per column.
    """
    has_mass = (Z > 0).any(axis=0)
    return np.where(has_mass, np.maximum(Z, TINY), 0.0)


def cone_violation(Z: NDArray[np.float64], Es: NDArray[np.float64]) -> float:
    """Largest breach max_{i,j,y} (log Z_iy − log Z_jy − Es_ij) over entries with Z > 0 (≤ 0: in the cone).

    A zero entry below a positive one counts as +inf.
    """
    with np.errstate(divide="ignore"):
        logz = np.log(Z)
    top = logz.max(axis=0, keepdims=True)
    base = logz - np.where(np.isfinite(top), top, 0.0)  # an all-zero column stays −inf (no breach)
    u, _ = lipschitz_repair(base, Es)
    with np.errstate(invalid="ignore"):
        diff = np.where(np.isneginf(base), np.where(np.isneginf(u), 0.0, np.inf), u - base)
    return float(diff.max())


_ROW_BLOCK = 256  # rows per block of the O(n²) steps below (memory: block·n floats)


def _margin(Es: NDArray[np.float64]) -> NDArray[np.float64]:
    """The exponents the row fix-up keeps its deficit within: a hair inside Es, so rounding cannot cross it."""
    return Es * (1 - 1e-12) + 1e-15


def _deficit_in_cone(a: NDArray[np.float64], Es: NDArray[np.float64], t: float,
                     deadline: float | None = None) -> bool:
    """Is the deficit (t + a)/(1 + t) within the (margined) cone? Checked in log space, block by block."""
    ld = np.log((t + a) / (1.0 + t))
    for s in range(0, len(a), _ROW_BLOCK):
        check_deadline(deadline, "fixing the row sums inside the ε-mDP cone")
        if not np.all(ld[s:s + _ROW_BLOCK, None] - ld[None, :] <= _margin(Es[s:s + _ROW_BLOCK])):
            return False
    return True


def _smallest_shift(a: NDArray[np.float64], Es: NDArray[np.float64], deadline: float | None = None) -> float:
    """The smallest t ≥ 0 with (t + a_i) ≤ e^{E_ij} (t + a_j) for every pair: max (a_i − a_j)/(e^{E_ij} − 1) − a_j."""
    t = 0.0
    for s in range(0, len(a), _ROW_BLOCK):
        check_deadline(deadline, "fixing the row sums inside the ε-mDP cone")
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            need = (a[s:s + _ROW_BLOCK, None] - a[None, :]) / np.expm1(_margin(Es[s:s + _ROW_BLOCK])) - a[None, :]
        need = np.where(a[s:s + _ROW_BLOCK, None] > a[None, :], need, 0.0)  # only fuller rows below emptier ones
        t = max(t, float(np.nanmax(need)))
    return t


class RowFix(TypedDict, total=False):
    """What :func:`make_row_stochastic` did: the row sums it found, its shift t and the largest deficit it placed."""

    row_sum_max_before: float
    row_sum_min_before: float
    shrink_t: float
    deficit_max: float
    balance_passes: int


class RepairFacts(RowFix, total=False):
    """What :func:`repair_into_cone` did: the row fix-up's facts, the largest row mass the repair added and, when
    asked, how far the solver's Z was outside the cone (log-ratio above the exponent, 0: not at all)."""

    repair_mass_added: float
    breach_before_repair: float
    entries_raised: int


def make_row_stochastic(Z: NDArray[np.float64], Es: NDArray[np.float64], W: NDArray[np.float64],
                        deadline: float | None = None) -> tuple[NDArray[np.float64], RowFix]:
    """Turn Z (columns exactly in the cone, row sums ≈ 1) into a row-stochastic matrix with columns in the cone.

    Dividing each row by its own sum would break the cone by the ratio of two row sums. Instead every entry is
    shrunk by one factor s = 1/(R(1 + t)) (R = largest row sum) and each row's deficit δ_x = 1 − s·r_x is put
    on the single output y* that costs least; the deficit vector δ ∝ t + 1 − r_x/R is in the cone once t is large
    enough (the smallest such t has a closed form; it is checked, and raised if rounding needs it), so the new
    column y* (a sum of two cone vectors) stays in the cone.
    Returns Z' and facts (shrink factor, largest deficit, t). Past ``deadline`` (checked per block of rows)
    ``OutOfTime`` is raised.
    """
    r = Z.sum(axis=1)
    if np.any(r <= 0):
        raise SolverError("A row of the mechanism has no mass; the master solution is unusable.")
    R = float(r.max())
    one_minus_a = (R - r) / R  # 1 − r_x/R without cancellation
    spread = float(one_minus_a.max())
    t = 0.0
    if spread > 0.0:
        t = _smallest_shift(one_minus_a, Es, deadline)
        t = t * (1 + 1e-9) + 1e-300
        for _ in range(60):
            if t > 1e6:
                raise SolverError("The row sums cannot be fixed inside the cone (a zero-exponent pair has unequal "
                                  "rows).")
            if _deficit_in_cone(one_minus_a, Es, t, deadline):
                break
            t = max(t * 2.0, 1e-14)
    s = 1.0 / (R * (1.0 + t))
    # the deficit as checked above, (t + 1 − r/R)/(1 + t), not 1 − s·r: that difference rounds to 0 for the
    # fullest row, and a 0 beside positive deficits breaks the cone by an infinite factor
    delta = (t + one_minus_a) / (1.0 + t)
    out = Z * s
    if spread > 0.0:
        ystar = int(np.argmin(delta @ W))
        out[:, ystar] += delta
    return out, {"row_sum_max_before": R, "row_sum_min_before": float(r.min()), "shrink_t": t,
                 "deficit_max": float(delta.max())}


BALANCE_PASSES = 60  # at most this many passes of :func:`balance_rows` (whole-city Rome: converged or nearly)


def balance_rows(Z: NDArray[np.float64], Es: NDArray[np.float64], until: float,
                 step_s: float = 0.0) -> tuple[NDArray[np.float64], int]:
    """Bring the row sums of Z (columns in the cone, row sums ≥ 1) towards 1 without leaving the cone, before the
    row fix-up of :func:`make_row_stochastic`, whose cost grows with the spread of the row sums.

    A pass divides each row by its sum (which breaks the cone by at most the ratio of two row sums) and raises every
    column back into it (:func:`lipschitz_repair`): the columns are exactly in the cone after every pass and the rows
    sum to 1 before the raise, so to at least 1 after it. Passes stop when the largest excess is below 1e-12, after
    ``BALANCE_PASSES``, or before a pass that, with the row fix after it, would end after ``until`` (a
    ``time.perf_counter()`` value; a pass, and the fix, are assumed to take as long as the last pass, the first
    ``step_s``). Never raises ``OutOfTime``: what it has is returned. Returns Z and the number of passes made.
    """
    step = step_s
    for passes in range(BALANCE_PASSES):
        r = Z.sum(axis=1)
        if r.max() - 1.0 <= 1e-12 or time.perf_counter() + 2.0 * step > until:
            return Z, passes
        t0 = time.perf_counter()
        with np.errstate(divide="ignore"):
            logz = np.log(Z / r[:, None])
        try:
            u, _ = lipschitz_repair(logz, Es, deadline=until)
        except OutOfTime:
            return Z, passes
        Z = floor_columns(np.exp(u))
        step = time.perf_counter() - t0
    return Z, BALANCE_PASSES


def fix_rows(Zr: NDArray[np.float64], Es: NDArray[np.float64], W: NDArray[np.float64], deadline: float | None = None,
             balance_until: float | None = None, step_s: float = 0.0) -> tuple[NDArray[np.float64], RowFix]:
    """Make Zr (columns in the cone, row sums ≥ 1) row-stochastic inside the cone: :func:`make_row_stochastic`, and
    with ``balance_until`` also after :func:`balance_rows` (until then), keeping the cheaper of the two under W.

    The balanced point is much cheaper where the row sums spread: on whole-city Rome at ε = 1 km⁻¹, K = 500 the
    cells' point at share 1.5 (``lp.stop_points.starting_point``) costs 5,366 m fixed plainly and 2,054 m balanced,
    where the optimum is 1,978 m (``docs/WHAT-WE-LEARNED.md``; ``docs/benchmarks/lp_rome_eps1_k500_60s.md``).
    Past ``deadline`` the plain fix-up raises ``OutOfTime``; the balanced one is then skipped.
    """
    out, fix = make_row_stochastic(Zr, Es, W, deadline)
    if balance_until is None:
        return out, fix
    Zb, passes = balance_rows(Zr, Es, balance_until if deadline is None else min(balance_until, deadline), step_s)
    if passes == 0:
        return out, fix
    try:
        outb, fixb = make_row_stochastic(Zb, Es, W, deadline)
    except OutOfTime:
        return out, fix
    if float(np.sum(W * outb)) < float(np.sum(W * out)):
        return outb, {**fixb, "balance_passes": passes}
    return out, fix


def repair_into_cone(Z: NDArray[np.float64], Es: NDArray[np.float64], W: NDArray[np.float64],
                     report_breach: bool = False, deadline: float | None = None,
                     balance_until: float | None = None) -> tuple[NDArray[np.float64], RepairFacts]:
    """Lipschitz-repair each column of a solver's Z into the cone (w.r.t. closed exponents Es), then fix the rows
    inside the cone with :func:`fix_rows` (balancing the rows first until ``balance_until``, if given: a
    ``time.perf_counter()`` value, ``inf`` for no time limit).

    Returns Z' and facts: ``repair_mass_added`` (largest row mass the repair added), the row fix-up's facts and,
    with ``report_breach``, ``breach_before_repair`` (largest log-ratio above Es, 0: none) and ``entries_raised``.
    Past ``deadline`` (a ``time.perf_counter()`` value, checked per block of work) ``OutOfTime`` is raised and
    nothing is returned: a half-repaired matrix is no mechanism.
    """
    t0 = time.perf_counter()
    with np.errstate(divide="ignore"):
        logz = np.log(Z)
    top = logz.max(axis=0, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)  # an all-zero column stays zero
    base = logz - top
    u, _ = lipschitz_repair(base, Es, deadline=deadline)
    Zr = floor_columns(np.exp(u + top))
    added = float((Zr - Z).sum(axis=1).max())
    step = time.perf_counter() - t0
    out, fix = fix_rows(Zr, Es, W, deadline, balance_until, step)
    facts: RepairFacts = {"repair_mass_added": added, "row_sum_max_before": fix["row_sum_max_before"],
                          "row_sum_min_before": fix["row_sum_min_before"], "shrink_t": fix["shrink_t"],
                          "deficit_max": fix["deficit_max"]}
    if "balance_passes" in fix:
        facts["balance_passes"] = fix["balance_passes"]
    if report_breach:
        with np.errstate(invalid="ignore"):
            gap = np.where(np.isneginf(base), np.where(np.isneginf(u), 0.0, np.inf), u - base)
        facts["breach_before_repair"] = float(gap.max())
        facts["entries_raised"] = int((gap > 1e-9).sum())
    return out, facts
