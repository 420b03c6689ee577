"""The papers' LP over neighbours (d ≤ η): its pair set, its path metric, and a solve split by components.

Definition 2.2 of the Benders paper (and PAnDA's authors' code) enforce ε-mDP only between neighbours. Chaining the
constraints along paths (Property 3.2) gives every pair ε × their shortest path through neighbours, and nothing
between connected components, which are independent LPs (Property 3.1).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from .cone import exponent_closure
from .outcome import RowsFacts

RowsSolver = Callable[[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float | None],
                      tuple[NDArray[np.float64] | None, RowsFacts]]


def neighbour_pairs(d: NDArray[np.float64], eta: float) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Ordered pairs (i, j), i ≠ j, with d_ij ≤ η km: the paper's neighbour set E (Definition 2.1)."""
    i, j = np.nonzero((d <= eta) & ~np.eye(len(d), dtype=bool))
    return i.astype(np.int64), j.astype(np.int64)


def neighbour_path_km(d: NDArray[np.float64], eta: float) -> NDArray[np.float64]:
    """Shortest-path distance (km) in the mDP graph whose edges are the neighbour pairs d ≤ η (inf between
    components). ε times it is the closure of the neighbour LP's exponents (Property 3.2)."""
    return exponent_closure(np.where(d <= eta, d, np.inf))


def solve_by_components(d_path: NDArray[np.float64], weights: NDArray[np.float64], c: NDArray[np.float64],
                        solve_rows: RowsSolver, time_limit: float | None
                        ) -> tuple[NDArray[np.float64] | None, RowsFacts]:
    """Solve the LP with metric ``d_path`` (inf = unconstrained) one connected component at a time.

    ``solve_rows(d, weights, c, time_limit)`` solves one component and returns (Z or None, its
    :class:`RowsFacts`), as :func:`mdpviz.lp.optimal.optimal_rows` does. A component of one
    row has no constraint: it takes its cheapest output. Facts are summed (objective, bound, sizes); the status is
    ``optimal`` only when every component is.
    """
    n, m = c.shape
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    n_comp, comp = connected_components(csr_matrix(np.isfinite(d_path) & ~np.eye(n, dtype=bool)), directed=False)
    Z = np.zeros((n, m))
    status, objective, messages = "optimal", 0.0, []
    bound: float | None = 0.0
    size: dict[str, int] = {}
    floor = weights * c.min(axis=1)  # each row's cheapest output: a lower bound for rows not certified yet
    solved = np.zeros(n, dtype=bool)
    for part in np.argsort(-np.bincount(comp), kind="stable"):  # largest component first (ties: in order)
        rows = np.flatnonzero(comp == part)
        if len(rows) == 1:
            solved[rows[0]] = True
            Z[rows[0], np.argmin(c[rows[0]])] = 1.0
            objective += float(weights[rows[0]] * c[rows[0]].min())
            bound = None if bound is None else bound + float(weights[rows[0]] * c[rows[0]].min())
            continue
        left = None if deadline is None else max(0.01, deadline - time.perf_counter())
        Zp, f = solve_rows(d_path[np.ix_(rows, rows)], weights[rows], c[rows], left)
        if Zp is None:
            # the whole problem's bound, never one component's: what is certified so far, this component's own
            # bound (or its floor), and the floor of the components not reached
            part_bound = f.bound if f.bound is not None else float(floor[rows].sum())
            whole = None if bound is None else bound + part_bound + float(floor[~solved & (comp != part)].sum())
            return None, replace(
                f, bound=whole,
                message=f"component of {len(rows)} of {n} secrets: {f.status}; {f.message}; the lower bound is "
                        "the whole problem's (this component's bound, the other components' certified bounds, and "
                        "the no-privacy floor of those not reached)",
                diagnostics={**f.diagnostics, "components": n_comp})
        solved[rows] = True
        Z[rows] = Zp
        status = status if f.status == "optimal" else f.status
        objective += f.objective or 0.0
        bound = None if (bound is None or f.bound is None) else bound + f.bound
        size = {k: size.get(k, 0) + v for k, v in f.size.items()}
        if f.message:
            messages.append(f.message)
    messages.insert(0, f"{n_comp} connected components of the neighbour graph solved one by one (Property 3.1)")
    return Z, RowsFacts(status, objective, bound, size, "; ".join(messages), {"components": n_comp})
