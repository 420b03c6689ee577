"""A thin, typed wrapper over highspy: pass a sparse LP, solve with a time limit and progress, read back status."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

import highspy
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ..deadline import OutOfTime, check_deadline
from ..errors import ParameterError
from ..progress import Progress, no_progress

INF = highspy.kHighsInf
# Largest constraint coefficient handed to HiGHS: e^{ε·d} overflows its "large matrix value" check (1e15)
# long before ε·d is large. Capping a coefficient k in `z_x − k·z_x' ≤ 0` only tightens the constraint.
COEF_CAP = 1e9
# Largest number of pair-constraint rows an explicit LP may have: 1M rows took about 0.75 GB here, and an lp-bd run
# with 25M rows (K = 500, |Y| = 100, all pairs) was killed for exhausting 24 GB.
MAX_PAIR_ROWS = 5_000_000


def check_lp_rows(n_rows: int, what: str) -> None:
    """Refuse an explicit LP too large for memory, with what to change instead of crashing the process."""
    if n_rows > MAX_PAIR_ROWS:
        msg = (f"{what} would need {n_rows:,} constraint rows (limit {MAX_PAIR_ROWS:,}: more would exhaust memory). "
               "Lower K or |Y|, or use `lp` with solver = structured, which never builds all pair rows.")
        raise ParameterError(msg)

_STATUS = {
    highspy.HighsModelStatus.kOptimal: "optimal",
    highspy.HighsModelStatus.kInfeasible: "infeasible",
    highspy.HighsModelStatus.kUnboundedOrInfeasible: "infeasible",
    highspy.HighsModelStatus.kUnbounded: "unbounded",
    highspy.HighsModelStatus.kTimeLimit: "time limit",
    highspy.HighsModelStatus.kIterationLimit: "iteration limit",
    highspy.HighsModelStatus.kInterrupt: "interrupted",
    highspy.HighsModelStatus.kMemoryLimit: "memory limit",
}


@dataclass
class LPOutcome:
    """What a solve returned. ``x`` is None unless the status is ``optimal``."""

    x: NDArray[np.float64] | None
    status: str
    objective: float | None
    solve_s: float
    size: dict[str, int] = field(default_factory=dict)
    row_duals: NDArray[np.float64] | None = None
    message: str = ""


_BANNER_SHOWN = False


def new_highs() -> highspy.Highs:
    """A silent HiGHS instance. The first one prints a banner from C code; it is sent to /dev/null."""
    global _BANNER_SHOWN
    if _BANNER_SHOWN:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _BANNER_SHOWN = True
    h.setOptionValue("output_flag", False)
    return h


def pass_model(h: highspy.Highs, cost: NDArray[np.float64], A: sp.spmatrix, row_lower: NDArray[np.float64],
               row_upper: NDArray[np.float64], col_lower: NDArray[np.float64] | None = None,
               col_upper: NDArray[np.float64] | None = None, deadline: float | None = None) -> None:
    """Load ``min cost·x, row_lower ≤ A x ≤ row_upper, col_lower ≤ x ≤ col_upper`` into ``h`` (default x ≥ 0).

    Handing over a model of millions of rows takes seconds: past ``deadline`` (checked between its steps)
    ``OutOfTime`` is raised and ``h`` keeps its previous model.
    """
    A = sp.csc_matrix(A)
    n_rows, n_cols = A.shape
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_cols, n_rows
    lp.col_cost_ = np.asarray(cost, dtype=np.float64)
    lp.col_lower_ = np.zeros(n_cols) if col_lower is None else np.asarray(col_lower, dtype=np.float64)
    lp.col_upper_ = np.full(n_cols, INF) if col_upper is None else np.asarray(col_upper, dtype=np.float64)
    lp.row_lower_ = np.asarray(row_lower, dtype=np.float64)
    lp.row_upper_ = np.asarray(row_upper, dtype=np.float64)
    check_deadline(deadline, f"handing the LP ({n_rows:,} rows) to HiGHS")
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(np.float64)
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n_cols, n_rows
    check_deadline(deadline, f"handing the LP ({n_rows:,} rows) to HiGHS")
    h.passModel(lp)


def solve_lp(cost: NDArray[np.float64], A: sp.spmatrix, row_lower: NDArray[np.float64],
             row_upper: NDArray[np.float64], col_lower: NDArray[np.float64] | None = None,
             col_upper: NDArray[np.float64] | None = None, *, method: str = "ipm",
             time_limit: float | None = None, progress: Progress = no_progress,
             phase: str = "LP solve") -> LPOutcome:
    """Minimise ``cost·x`` subject to ``row_lower ≤ A x ≤ row_upper`` and ``col_lower ≤ x ≤ col_upper``.

    Args:
        method: ``ipm`` (interior point with crossover), ``simplex`` or ``choose`` (HiGHS decides).
        time_limit: seconds, passing the model to HiGHS included; on expiry the status is ``time limit`` and ``x``
            is None (no fake solution).
        progress: receives ``(phase, None)`` at every solver iteration report.
    """
    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit
    n_rows, n_cols = A.shape
    size = {"variables": n_cols, "constraints": n_rows, "nonzeros": int(A.nnz)}
    A = sp.csc_matrix(A)
    h = new_highs()
    h.setOptionValue("solver", method)
    try:
        pass_model(h, cost, A, row_lower, row_upper, col_lower, col_upper, deadline)
        check_deadline(deadline, f"handing the LP ({n_rows:,} rows) to HiGHS")
    except OutOfTime as e:  # HiGHS is not started when nothing is left
        return LPOutcome(None, "time limit", None, 0.0, size, message=f"time limit while {e}, before it ran")
    if time_limit is not None:  # what is left after handing over the model
        h.setOptionValue("time_limit", float(max(time_limit - (time.perf_counter() - start), 0.01)))

    def report(event: object) -> None:
        progress(phase, None)

    h.cbSimplexInterrupt.subscribe(report)
    h.cbIpmInterrupt.subscribe(report)
    t0 = time.perf_counter()
    h.run()
    solve_s = time.perf_counter() - t0
    status = _STATUS.get(h.getModelStatus(), "error")
    if status != "optimal":
        return LPOutcome(None, status, None, solve_s, size, message=h.modelStatusToString(h.getModelStatus()))
    sol = h.getSolution()
    return LPOutcome(np.array(sol.col_value), status, float(h.getInfo().objective_function_value), solve_s, size,
                     row_duals=np.array(sol.row_dual))
