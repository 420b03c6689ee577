"""The optimal rows of the mDP LP on a metric d, prior weights and costs, by the engine the parameters name: the
structured engine (:func:`mdpviz.lp.structured.solve_structured`), or one monolithic HiGHS LP over a chosen pair set
(:func:`mdpviz.lp.mdp_lp.solve_mdp_lp`) repaired into the cone. The LP mechanisms and DISTA-LP's cells call it."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..deadline import KEPT_AT, OutOfTime, deadline_of, time_left
from ..progress import Progress
from .cone import repair_into_cone
from .mdp_lp import all_pairs, greedy_spanner, implied_free_pairs, solve_mdp_lp
from .outcome import EngineDiagnostics, RowsFacts
from .structured import no_privacy_floor, solve_structured

GAP_TOL = 1e-4  # the structured engine's certified relative gap unless the parameters name another


def _pair_set(d: NDArray[np.float64], eps: float, how: str, t: float, deadline: float | None = None
              ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """Pairs to constrain and their exponents (``OutOfTime`` once ``deadline`` passes)."""
    if how == "all":
        pi, pj = all_pairs(len(d))
        return pi, pj, eps * d[pi, pj]
    if how == "exact":
        pi, pj = implied_free_pairs(d, deadline=deadline)
        return pi, pj, eps * d[pi, pj]
    pi, pj = greedy_spanner(d, t, deadline)
    return pi, pj, (eps / t) * d[pi, pj]


def optimal_rows(d: NDArray[np.float64], weights: NDArray[np.float64], c: NDArray[np.float64],
                  params: dict[str, Any], progress: Progress, time_limit: float | None,
                  timings: dict[str, float], out_rows: NDArray[np.int64] | None = None,
                  ) -> tuple[NDArray[np.float64] | None, RowsFacts]:
    """The optimal rows of the mDP LP with metric d (km) and costs c (metres), by the engine ``params`` names:
    ``lp.structured.solve_structured`` or ``lp.mdp_lp.solve_mdp_lp`` (then repaired into the cone). Returns Z (or None)
    and its :class:`~mdpviz.lp.outcome.RowsFacts` (objective in m, of the returned Z; bound in m, certified).

    ``params`` carries eps and the engine choice (``solver``: structured / monolithic, with their options).
    """
    eps = params["eps"]
    W = weights[:, None] * c
    if params.get("solver", "structured") == "structured":
        outcome = solve_structured(W, eps * d, closed=True, tol=params.get("gap_tol", GAP_TOL),
                                   time_limit=time_limit, progress=progress, out_rows=out_rows,
                                   engine=params.get("engine", "auto"))
        timings.update({k: v for k, v in outcome.timings.items() if k != "total_s"})
        diag: EngineDiagnostics = outcome.diagnostics.copy()
        msg = outcome.message
        Z = outcome.Z
        if outcome.status != "optimal" and Z is not None:
            # never hand back a non-optimal point as the mechanism: keep it, labelled, in the diagnostics
            diag["feasible_Z"] = Z
            diag["feasible_objective_m"] = outcome.objective
            msg = (msg + "; " if msg else "") + (f"{KEPT_AT} a feasible, exactly private "
                                                 "point (not the optimum)")
            Z = None
        return Z, RowsFacts(outcome.status, outcome.objective if Z is not None else None, outcome.bound,
                            outcome.size, msg, diag)
    progress("constraint pairs", None)
    t0 = time.perf_counter()
    deadline = deadline_of(time_limit)
    try:
        pi, pj, expo = _pair_set(d, eps, params["pairs"], params["spanner_t"], deadline)
    except OutOfTime as e:
        return None, RowsFacts("time limit", bound=no_privacy_floor(W),
                               message=f"time limit while {e}, before the LP; bound from the no-privacy floor")
    timings["pairs_s"] = time.perf_counter() - t0
    Z, out = solve_mdp_lp(weights, c, pi, pj, expo, method=params["method"], time_limit=time_left(deadline),
                          progress=progress)
    timings["build_s"] = time.perf_counter() - t0 - out.solve_s
    timings["solve_s"] = out.solve_s
    diag = EngineDiagnostics(pairs=len(pi))
    objective = out.objective
    if Z is not None and params["repair"]:
        progress("repair", None)
        t0 = time.perf_counter()
        try:
            Z, facts = repair_into_cone(Z, eps * d, W, deadline=deadline)
        except OutOfTime as e:  # an unrepaired LP point is no mechanism
            return None, RowsFacts("time limit", bound=no_privacy_floor(W), size=out.size,
                                   message=f"time limit while {e} (the LP had solved); bound from the no-privacy floor",
                                   diagnostics=diag)
        diag["cone_repair"] = facts
        timings["repair_s"] = time.perf_counter() - t0
        objective = float(np.sum(W * Z))
    if Z is None:  # a stop or a failure of the monolithic LP: the floor is the certified bound it has
        return None, RowsFacts(out.status, bound=no_privacy_floor(W), size=out.size,
                               message="; ".join(filter(None, [out.message, "bound from the no-privacy floor"])),
                               diagnostics=diag)
    return Z, RowsFacts(out.status, objective, None, out.size, out.message, diag)
