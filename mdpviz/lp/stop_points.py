"""A stop's exactly private point, made without an LP: the cells' points (the exponential mechanism with each
output standing for its cell, at several shares) and, when even those take too long, the best constant mechanism."""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import NDArray

from ..deadline import OutOfTime
from .cone import RepairFacts, RowFix, repair_into_cone


def starting_point(Wn: NDArray[np.float64], Es: NDArray[np.float64], reach: NDArray[np.float64],
                   deadline: float | None = None, share: float = 0.5,
                   balance_until: float | None = None) -> tuple[NDArray[np.float64], RepairFacts]:
    """An exactly private mechanism before any LP (a cells' point): each row reports output y with probability
    ∝ e^{−share·reach[x, y]}; at ``share`` = 1/2 the exponential mechanism with each output standing for its cell.

    ``reach[:, y]`` is a minimum of rows of the closed exponents, so it obeys their triangle inequality and, for a
    symmetric exponent matrix (ε·d) and share 1/2, those rows are already in the cone; :func:`repair_into_cone` makes
    them exact in every case (a larger share concentrates the rows and leaves more to the repair, whose rows are
    balanced until ``balance_until``: :func:`mdpviz.lp.cone.fix_rows`). Returns Z and the repair's facts; past
    ``deadline`` ``OutOfTime`` is raised.
    """
    V = np.exp(-share * reach)
    return repair_into_cone(V / V.sum(axis=1, keepdims=True), Es, Wn, deadline=deadline, balance_until=balance_until)


CELLS_BALANCE_S = 10.0  # seconds the cells' points may balance their rows when there is no deadline
POINT_GRACE_S = 0.5  # seconds past the deadline a stop may spend on the cells' points
# the shares of the cells' points a stop tries, in order: 1/2 (the exponential mechanism, whose rows need no
# balancing) first, then those that cost least once balanced on whole-city Rome at ε = 0.5–5 (docs/WHAT-WE-LEARNED.md)
CELL_SHARES = (0.5, 1.5, 1.0, 3.0, 0.8)


def cells_point(Wn: NDArray[np.float64], Es: NDArray[np.float64], reach: NDArray[np.float64],
                deadline: float | None) -> tuple[NDArray[np.float64], RepairFacts, str]:
    """The cheapest of the cells' points (:func:`starting_point`) at the shares of ``CELL_SHARES``, tried in order
    until ``deadline``, and what it is; ``OutOfTime`` only if the first does not finish. Each balances its rows until
    the deadline (``CELLS_BALANCE_S`` without one)."""
    balance_until = time.perf_counter() + CELLS_BALANCE_S if deadline is None else deadline
    best: tuple[NDArray[np.float64], RepairFacts, float, float] | None = None
    for share in CELL_SHARES:
        try:
            Z, facts = starting_point(Wn, Es, reach, deadline, share, balance_until)
        except OutOfTime:
            if best is None:
                raise
            break
        cost = float(np.sum(Wn * Z))
        if best is None or cost < best[2]:
            best = Z, facts, cost, share
    assert best is not None
    passes = best[1].get("balance_passes")
    balanced = f", its rows balanced in {passes} passes" if passes else ""
    return best[0], best[1], (f"the cells' point at share {best[3]:g} (each secret reports output y with probability "
                              f"∝ e^(−{best[3]:g} × its privacy exponent to y's cell), then repaired to be exactly "
                              f"private{balanced})")


def stop_point(Wn: NDArray[np.float64], Es: NDArray[np.float64], reach: NDArray[np.float64],
               deadline: float | None) -> tuple[NDArray[np.float64], RowFix | RepairFacts, str]:
    """The exactly private point of a stop, and what it is: the best cells' point found within ``POINT_GRACE_S``
    past the deadline (each costs a repair of O(n²·|Y|): about 3.6 CPU s at K = 1,500, |Y| = 100), else the best
    constant mechanism (every secret reports the one output of least expected cost: all rows equal, so exactly
    private)."""
    grace = None if deadline is None else max(deadline, time.perf_counter()) + POINT_GRACE_S
    try:
        return cells_point(Wn, Es, reach, grace)
    except OutOfTime:
        y = int(np.argmin(Wn.sum(axis=0)))
        Z = np.zeros_like(Wn)
        Z[:, y] = 1.0
        untouched = RowFix(row_sum_max_before=1.0, row_sum_min_before=1.0, shrink_t=0.0, deficit_max=0.0)
        return Z, untouched, (f"the best constant mechanism (every secret reports output {y}; the cells' "
                              f"points needed more than {POINT_GRACE_S:g} s past the deadline)")
