"""The master LP of the Benders decomposition (:mod:`mdpviz.lp.benders`): the boundary records, the pair rows
among them (added lazily) and the initial cuts of Eq. 14, the cuts added to it, and the bound kept safe from
the solver's tolerances."""

from __future__ import annotations

from typing import NotRequired, TypedDict

import highspy
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components

from ..errors import ParameterError
from .benders_sub import CUT_CAP, LOG_CAP, pair_rows
from .cone import exponent_closure
from .highs import INF, new_highs, pass_model

CUT_RULES = ("needed", "all", "none")  # which initial cuts of Eq. 14 the master gets


class CutCounts(TypedDict):
    """How many of the master's pair rows are the LP's own pairs between boundary records, and how many are
    initial cuts (Eq. 14) added beside them (rule ``needed``: how many of the LP's own pairs it kept)."""

    lp_pairs_between_boundary: int
    initial_cuts: int
    lp_pairs_kept_in_master: NotRequired[int]


def master_pairs(n: int, pi: NDArray[np.int64], pj: NDArray[np.int64], expo: NDArray[np.float64],
                 labels: NDArray[np.int64], is_b: NDArray[np.bool_],
                 rule: str) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], CutCounts]:
    """The MP's pair rows over boundary indices (0..nb−1) and their exponents, with counts.

    ``none``: the LP's own pairs between boundary records. ``all``: those plus Eq. 14 for every ordered pair of
    boundary records joined by a path. ``needed``: of all these, only the pairs not implied by a chain of
    others (same polytope as ``all``). Cut exponents above ln(COEF_CAP) are left out (a cut is a relaxation; it
    may be dropped but never tightened).
    """
    if rule not in CUT_RULES:
        raise ParameterError(f"`cuts` = {rule!r} is not one of {', '.join(CUT_RULES)}.")
    b_rows = np.flatnonzero(is_b)
    nb = len(b_rows)
    bidx = np.full(n, -1, dtype=np.int64)
    bidx[b_rows] = np.arange(nb)
    both = is_b[pi] & is_b[pj]
    bi, bj, be = bidx[pi[both]], bidx[pj[both]], expo[both]
    counts = CutCounts(lp_pairs_between_boundary=int(both.sum()), initial_cuts=0)
    if rule == "none" or nb < 2:
        return bi, bj, be, counts
    # C: the LP's boundary pairs, plus each subset's shortest paths between its boundary records
    C = np.full((nb, nb), np.inf)
    np.fill_diagonal(C, 0.0)
    np.minimum.at(C, (bi, bj), np.minimum(be, LOG_CAP))
    for lab in np.unique(labels):  # one small closure per subset (|R_l| ≈ K/M rows)
        members = np.flatnonzero(labels == lab)
        yl = members[is_b[members]]
        if len(yl) < 2 or len(yl) == len(members):
            continue  # no internal record: no path the MP does not already see
        pos = np.full(n, -1, dtype=np.int64)
        pos[members] = np.arange(len(members))
        inside = (labels[pi] == lab) & (labels[pj] == lab)
        El = np.full((len(members), len(members)), np.inf)
        np.fill_diagonal(El, 0.0)
        np.minimum.at(El, (pos[pi[inside]], pos[pj[inside]]), np.minimum(expo[inside], LOG_CAP))
        Dl = exponent_closure(El)[np.ix_(pos[yl], pos[yl])]
        sub = np.ix_(bidx[yl], bidx[yl])
        C[sub] = np.minimum(C[sub], Dl)
    Cs = exponent_closure(C)
    off = ~np.eye(nb, dtype=bool)
    if rule == "all":
        ci, cj = np.nonzero(off & np.isfinite(Cs) & (Cs <= LOG_CAP))
        counts["initial_cuts"] = int(len(ci) - len(bi))
        return ci.astype(np.int64), cj.astype(np.int64), Cs[ci, cj], counts
    # needed: a candidate edge (a, b) survives when no chain a → k → b (k ≠ a, b) is as short
    ci, cj = np.nonzero(off & np.isfinite(C))
    keep = np.ones(len(ci), dtype=bool)
    step = max(1, 4_000_000 // max(nb, 1))
    for s in range(0, len(ci), step):  # blocks of candidate edges, vectorised over intermediates k
        a, b = ci[s:s + step], cj[s:s + step]
        via = Cs[a] + Cs[:, b].T
        via[np.arange(len(a)), a] = np.inf
        via[np.arange(len(a)), b] = np.inf
        keep[s:s + step] = via.min(axis=1) > C[a, b] * (1 + 1e-12)
    ci, cj = ci[keep], cj[keep]
    ce = C[ci, cj]
    ok = ce <= LOG_CAP
    ci, cj, ce = ci[ok], cj[ok], ce[ok]
    direct = np.zeros((nb, nb), dtype=bool)
    direct[bi, bj] = True
    counts["initial_cuts"] = int((~direct[ci, cj]).sum())
    counts["lp_pairs_kept_in_master"] = int(direct[ci, cj].sum())
    return ci.astype(np.int64), cj.astype(np.int64), ce, counts


class SafeBound:
    """A lower bound on the master LP that holds whatever HiGHS's tolerances (Neumaier–Shcherbina): any row duals y
    of the right signs give min over the column box of c·x − yᵀ(Ax − b) ≤ the optimum. With coefficients up to
    1e13 HiGHS's own "optimal" objective was once above a feasible point's value (1.06 m above the optimum)."""

    def __init__(self, cost: NDArray[np.float64], A: sp.spmatrix, lo: NDArray[np.float64], up: NDArray[np.float64],
                 col_lo: NDArray[np.float64], col_up: NDArray[np.float64]) -> None:
        self.cost, self.col_lo, self.col_up = cost, col_lo, col_up
        self.blocks, self.lo, self.up = [sp.csr_matrix(A)], [lo], [up]
        self.A: sp.csr_matrix | None = None

    def add(self, rows: sp.csr_matrix, lo: NDArray[np.float64], up: NDArray[np.float64]) -> None:
        """Rows lo ≤ rows·x ≤ up, in the order they were added to the master (±inf: no bound)."""
        self.blocks.append(rows)
        self.lo.append(lo)
        self.up.append(up)
        self.A = None

    def bound(self, y: NDArray[np.float64]) -> float:
        if self.A is None:
            self.A = sp.vstack(self.blocks).tocsr()
            self.lo, self.up = [np.concatenate(self.lo)], [np.concatenate(self.up)]
            self.blocks = [self.A]
        lo, up = self.lo[0], self.up[0]
        y = np.where(y > 0, np.where(np.isfinite(lo), y, 0.0), np.where(np.isfinite(up), y, 0.0))
        r = self.cost - self.A.T @ y
        rows = np.where(y > 0, y * np.where(np.isfinite(lo), lo, 0.0), y * np.where(np.isfinite(up), up, 0.0))
        return float(rows.sum() + np.minimum(r * self.col_lo, r * self.col_up).sum())


def components(nb: int, ci: NDArray[np.int64], cj: NDArray[np.int64]) -> list[int]:
    """Sizes of the connected components of the MP's own pair graph (the paper's Table 2 measure)."""
    if nb == 0:
        return []
    g = sp.coo_matrix((np.ones(len(ci)), (ci, cj)), shape=(nb, nb))
    _, lab = connected_components(g, directed=False)
    return sorted(np.bincount(lab).tolist(), reverse=True)


def clean_cuts(lo: list[float], cols: list[NDArray[np.int64]], vals: list[NDArray[np.float64]]
                ) -> tuple[list[float], list[NDArray[np.int64]], list[NDArray[np.float64]], int]:
    """Make cuts ``Σ a_k z_k (+ w) ≥ lo`` safe for HiGHS without ever tightening them (0 ≤ z ≤ 1; the w
    coefficient is 1, never tiny): a tiny positive coefficient is dropped and the right-hand side lowered by it,
    a tiny negative one is dropped; a cut
    with a coefficient above ``CUT_CAP`` is left out whole. Returns the cuts kept and how many were left out."""
    out_lo, out_cols, out_vals = [], [], []
    dropped = 0
    for b, c, v in zip(lo, cols, vals):
        if len(v) and np.abs(v).max() > CUT_CAP:
            dropped += 1
            continue
        tiny = np.abs(v) < 1e-9  # HiGHS's small_matrix_value: below it HiGHS itself would drop the entry
        out_lo.append(b - float(v[tiny & (v > 0)].sum()))
        out_cols.append(c[~tiny])
        out_vals.append(v[~tiny])
    return out_lo, out_cols, out_vals, dropped


def add_rows(mp: highspy.Highs, safe: SafeBound, rows: sp.csr_matrix, lo: NDArray[np.float64],
              up: NDArray[np.float64]) -> bool:
    """Add rows ``lo ≤ rows·x ≤ up`` (±inf: no bound) to the master and to its safe bound; False when HiGHS
    refuses them."""
    rows = sp.csr_matrix(rows)
    added = mp.addRows(rows.shape[0], np.maximum(lo, -INF), np.minimum(up, INF), int(rows.nnz),
                       rows.indptr[:-1].astype(np.int32), rows.indices.astype(np.int32), rows.data)
    if added != highspy.HighsStatus.kOk:
        return False
    safe.add(rows, lo, up)
    return True


def add_cuts(mp: highspy.Highs, safe: SafeBound, lo: list[float], cols: list[NDArray[np.int64]],
              vals: list[NDArray[np.float64]]) -> bool:
    """Add cuts ``Σ a·x ≥ lo`` to the master and to its safe bound; False when HiGHS refuses them."""
    indptr = np.concatenate([[0], np.cumsum([len(c) for c in cols])])
    rows = sp.csr_matrix((np.concatenate(vals), np.concatenate(cols), indptr), shape=(len(cols), mp.getNumCol()))
    return add_rows(mp, safe, rows, np.asarray(lo, dtype=np.float64), np.full(len(cols), np.inf))


class LazyPairRows:
    """The master's pair rows (its own LP pairs and the initial cuts, ``z_i,y − e·z_j,y ≤ slack``), added to the
    HiGHS model only once the master's point breaks them (row generation; ``bench benders`` reports how many were
    added). The master solved is the same LP: its point is returned only when it meets every pair row, so each
    master solve gives the bound and the point of the full master."""

    def __init__(self, A: sp.csr_matrix, slack: float) -> None:
        self.A, self.slack = A, float(slack)
        self.present = np.zeros(A.shape[0], dtype=bool)

    def add_violated(self, mp: highspy.Highs, safe: SafeBound, x: NDArray[np.float64], tol: float = 1e-9
                     ) -> int | None:
        """Add the absent rows that x breaks by more than tol; how many (None when HiGHS refuses them)."""
        return self._add(mp, safe, np.flatnonzero(~self.present & (self.A @ x[: self.A.shape[1]] > self.slack + tol)))

    def add_all(self, mp: highspy.Highs, safe: SafeBound) -> int | None:
        """Add every absent row; how many (None when HiGHS refuses them)."""
        return self._add(mp, safe, np.flatnonzero(~self.present))

    def _add(self, mp: highspy.Highs, safe: SafeBound, bad: NDArray[np.int64]) -> int | None:
        if len(bad) == 0:
            return 0
        rows = self.A[bad]
        rows.resize(rows.shape[0], mp.getNumCol())
        if not add_rows(mp, safe, rows, np.full(len(bad), -np.inf), np.full(len(bad), self.slack)):
            return None
        self.present[bad] = True
        return len(bad)


def boundary_records(n: int, pi: NDArray[np.int64], pj: NDArray[np.int64],
                     labels: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Which rows are boundary records: an end of a constrained pair whose other end lies in another subset."""
    cross = labels[pi] != labels[pj]
    is_b = np.zeros(n, dtype=bool)
    is_b[pi[cross]] = True
    is_b[pj[cross]] = True
    return is_b


def build_master(W: NDArray[np.float64], labels: NDArray[np.int64], is_b: NDArray[np.bool_],
                  ci: NDArray[np.int64], cj: NDArray[np.int64], ce: NDArray[np.float64], slack: float,
                  floor: float) -> tuple[highspy.Highs, SafeBound, LazyPairRows, dict[str, int]]:
    """The master LP (z_Y, nb × m, then one w per subset) with its row sums, its safe bound, its pair rows (added
    lazily, :class:`LazyPairRows`) and its size (with every pair row counted).

    w_l ≥ Σ_{x ∈ X_l} min_y W[x, y] is a valid starting bound, and w_l ≤ Σ_{x ∈ X_l} max_y W[x, y] since no
    subproblem costs more (a box the safe bound needs).
    """
    m = W.shape[1]
    b_rows = np.flatnonzero(is_b)
    nb = len(b_rows)
    parts = np.unique(labels)
    n_parts = len(parts)
    nvm = nb * m + n_parts
    A_pairs = pair_rows(ci, cj, np.exp(np.minimum(ce, LOG_CAP)), m, ci, cj, nb * m)
    A = sp.csr_matrix((np.ones(nb * m), (np.repeat(np.arange(nb), m), np.arange(nb * m))), shape=(nb, nvm))
    w_floor = np.array([W[(labels == lab) & ~is_b].min(axis=1).sum() if ((labels == lab) & ~is_b).any() else 0.0
                        for lab in parts])
    w_ceil = np.array([W[(labels == lab) & ~is_b].max(axis=1).sum() if ((labels == lab) & ~is_b).any() else 0.0
                       for lab in parts])
    mp = new_highs()
    mp.setOptionValue("solver", "simplex")
    # the safe bound charges every reduced-cost error times the column box; with cut coefficients up to 1e13 the
    # default tolerance (1e-7) left it 7–65 m below the master's optimum on Rome (K = 500), so it never rose
    mp.setOptionValue("dual_feasibility_tolerance", 1e-10)
    mp_cost = np.concatenate([W[b_rows].ravel(), np.ones(n_parts)])
    col_lo = np.concatenate([np.full(nb * m, float(floor)), w_floor])
    col_up = np.concatenate([np.ones(nb * m), w_ceil])
    pass_model(mp, mp_cost, A.tocsc(), np.ones(nb), np.ones(nb), col_lo, col_up)
    safe = SafeBound(mp_cost, A, np.ones(nb), np.ones(nb), col_lo, col_up)
    return mp, safe, LazyPairRows(A_pairs, slack), {"variables": nvm, "constraints": int(A_pairs.shape[0] + nb),
                                                      "nonzeros": int(A_pairs.nnz + A.nnz)}
