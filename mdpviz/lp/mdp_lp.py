"""The optimal-mDP LP (Bordenabe et al. 2014) as sparse matrices and its pair sets (exact repair: ``cone``).

Variables are ``z[x, y]`` for x in a set of rows (secrets or representatives) and y in Y, flattened as
``x * M + y``. Constraints: ``z[i, y] − e^{E_ij} z[j, y] ≤ 0`` for every enforced ordered pair (i, j) and
every y (E_ij = ε·d_ij for plain mDP), and ``Σ_y z[x, y] = 1`` for every x.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ..deadline import check_deadline
from ..progress import Progress, no_progress
from .highs import COEF_CAP, INF, LPOutcome, check_lp_rows, solve_lp

PAIR_SETS = ("exact", "all", "spanner")


def all_pairs(n: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Every ordered pair (i, j), i ≠ j."""
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    return i.astype(np.int64), j.astype(np.int64)


def implied_free_pairs(d: NDArray[np.float64], rtol: float = 1e-9, chunk: int = 64,
                       deadline: float | None = None) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Ordered pairs not implied by others: drop (i, j) when some k ≠ i, j has d_ik + d_kj ≤ d_ij.

    Enforcing ε·d on the kept pairs implies it on every pair by chaining along k, so this set is exact for
    any metric. It is sparse for road shortest-path metrics (many pairs pass through other secrets) and close
    to all pairs for straight-line metrics. Past ``deadline`` (checked per block of rows) ``OutOfTime`` is raised.
    """
    n = len(d)
    keep = ~np.eye(n, dtype=bool)
    for start in range(0, n, chunk):
        check_deadline(deadline, f"listing the pairs not implied by others ({start:,} of {n:,} rows done)")
        rows = slice(start, min(start + chunk, n))
        # via[i, j] = min_k d[i, k] + d[k, j], with k ranging over everything but i and j
        via = np.full((rows.stop - start, n), np.inf)
        dk = d[rows]
        for k in range(n):
            cand = dk[:, k, None] + d[k][None, :]
            cand[:, k] = np.inf
            if start <= k < rows.stop:
                cand[k - start, :] = np.inf
            np.minimum(via, cand, out=via)
        keep[rows] &= ~(via <= d[rows] * (1 + rtol))
    i, j = np.nonzero(keep)
    return i.astype(np.int64), j.astype(np.int64)


def greedy_spanner(d: NDArray[np.float64], t: float,
                   deadline: float | None = None) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Ordered pairs (both directions) of a greedy t-spanner of the metric d: d_G ≤ t·d for every pair.

    Enforcing (ε/t)·d_G on the spanner's edges implies ε·d on every pair. Past ``deadline`` (checked every 1,000
    candidate edges and at every edge added) ``OutOfTime`` is raised.
    """
    n = len(d)
    iu, ju = np.triu_indices(n, 1)
    order = np.argsort(d[iu, ju], kind="stable")
    dist = np.full((n, n), np.inf)
    np.fill_diagonal(dist, 0.0)
    edges = []
    for n_seen, e in enumerate(order):
        if n_seen % 1000 == 0:
            check_deadline(deadline, f"building the t-spanner ({n_seen:,} of {len(order):,} pairs seen)")
        a, b = iu[e], ju[e]
        w = d[a, b]
        if dist[a, b] <= t * w:
            continue
        check_deadline(deadline, f"building the t-spanner ({n_seen:,} of {len(order):,} pairs seen)")
        edges.append((a, b))
        # shortest paths through the new edge (a, b)
        via = np.minimum(dist[:, a, None] + w + dist[None, b, :], dist[:, b, None] + w + dist[None, a, :])
        np.minimum(dist, via, out=dist)
    arr = np.array(edges, dtype=np.int64).reshape(-1, 2)
    return np.concatenate([arr[:, 0], arr[:, 1]]), np.concatenate([arr[:, 1], arr[:, 0]])


def mdp_lp_matrix(n: int, m: int, pi: NDArray[np.int64], pj: NDArray[np.int64],
                  exponent: NDArray[np.float64]) -> tuple[sp.csr_matrix, NDArray[np.float64], NDArray[np.float64]]:
    """Constraint matrix and row bounds: pair rows ``z_i − min(e^E, cap) z_j ≤ 0`` then row-sum equalities."""
    n_pairs = len(pi)
    check_lp_rows(n_pairs * m, "This mDP LP")
    y = np.tile(np.arange(m), n_pairs)
    row = np.repeat(np.arange(n_pairs) * m, m) + y
    coef = np.minimum(np.exp(np.minimum(exponent, 700.0)), COEF_CAP)
    rows = np.concatenate([row, row, n_pairs * m + np.repeat(np.arange(n), m)])
    cols = np.concatenate([np.repeat(pi, m) * m + y, np.repeat(pj, m) * m + y, np.arange(n * m)])
    vals = np.concatenate([np.ones(n_pairs * m), -np.repeat(coef, m), np.ones(n * m)])
    A = sp.csr_matrix((vals, (rows, cols)), shape=(n_pairs * m + n, n * m))
    lower = np.concatenate([np.full(n_pairs * m, -INF), np.ones(n)])
    upper = np.concatenate([np.zeros(n_pairs * m), np.ones(n)])
    return A, lower, upper


def solve_mdp_lp(weights: NDArray[np.float64], c: NDArray[np.float64], pi: NDArray[np.int64],
                 pj: NDArray[np.int64], exponent: NDArray[np.float64], *, method: str = "ipm",
                 time_limit: float | None = None,
                 progress: Progress = no_progress) -> tuple[NDArray[np.float64] | None, LPOutcome]:
    """Minimise Σ_x weights_x Σ_y c_xy z_xy over the mDP polytope; return Z (n, m) or None, and the outcome.

    ``time_limit`` covers building the matrix too: HiGHS gets what is left, and none is started when nothing is.
    """
    t0 = time.perf_counter()
    n, m = c.shape
    A, lower, upper = mdp_lp_matrix(n, m, pi, pj, exponent)
    cost = (weights[:, None] * c).ravel()
    left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
    if left is not None and left <= 0:
        size = {"variables": n * m, "constraints": int(A.shape[0]), "nonzeros": int(A.nnz)}
        return None, LPOutcome(None, "time limit", None, 0.0, size,
                               message=f"time limit while building the LP ({A.shape[0]:,} rows), before HiGHS ran")
    out = solve_lp(cost, A, lower, upper, np.zeros(n * m), np.ones(n * m), method=method,
                   time_limit=left, progress=progress)
    if out.x is None:
        return None, out
    return np.clip(out.x.reshape(n, m), 0.0, None), out
