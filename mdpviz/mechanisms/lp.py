"""The optimal mDP LP (Bordenabe et al. 2014) and its coarse grid approximation (LP+CA, PAnDA §4.3)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..geo import project_km
from ..lp.mdp_lp import PAIR_SETS, all_pairs, greedy_spanner, implied_free_pairs, repair_columns, solve_mdp_lp
from ..problem import Problem
from .base import Mechanism, Param, Progress, Result, epsilon_param
from .registry import register

_METHOD = Param("method", str, "ipm", "HiGHS algorithm: interior point (with crossover) or dual simplex",
                choices=("ipm", "simplex"), label="LP method")
_PAIRS = Param("pairs", str, "exact",
               "constrained pairs: 'exact' drops only pairs implied by a chain through another secret (exact for "
               "the metric); 'all' keeps every ordered pair; 'spanner' keeps a greedy t-spanner's edges at ε/t",
               choices=PAIR_SETS, label="constraint pairs")
_SPANNER_T = Param("spanner_t", float, 1.5, "stretch t of the spanner (only with pairs = spanner)", low=1.01,
                   high=5.0, label="spanner stretch t")
_REPAIR = Param("repair", bool, True, "raise entries that solver tolerances left too small, so every pair meets "
                "ε-mDP, then renormalise rows", label="repair columns")


def _pair_set(d: NDArray[np.float64], eps: float, how: str, t: float) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """Pairs to constrain and their exponents."""
    if how == "all":
        pi, pj = all_pairs(len(d))
        return pi, pj, eps * d[pi, pj]
    if how == "exact":
        pi, pj = implied_free_pairs(d)
        return pi, pj, eps * d[pi, pj]
    pi, pj = greedy_spanner(d, t)
    return pi, pj, (eps / t) * d[pi, pj]


def solve_lp_rows(d: NDArray[np.float64], weights: NDArray[np.float64], c: NDArray[np.float64],
                  params: dict[str, Any], progress: Progress, time_limit: float | None,
                  timings: dict[str, float]) -> tuple[NDArray[np.float64] | None, dict[str, Any]]:
    """Solve the mDP LP over rows with metric d (km); returns Z (or None) and solver facts."""
    eps = params["eps"]
    progress("constraint pairs", None)
    t0 = time.perf_counter()
    pi, pj, expo = _pair_set(d, eps, params["pairs"], params["spanner_t"])
    timings["pairs_s"] = time.perf_counter() - t0
    Z, out = solve_mdp_lp(weights, c, pi, pj, expo, method=params["method"], time_limit=time_limit,
                          progress=progress)
    timings["build_s"] = time.perf_counter() - t0 - out.solve_s
    timings["solve_s"] = out.solve_s
    facts: dict[str, Any] = {"status": out.status, "objective": out.objective, "size": out.size,
                             "pairs": len(pi), "message": out.message}
    if Z is not None and params["repair"]:
        progress("repair", None)
        t0 = time.perf_counter()
        Z, added = repair_columns(Z, eps * d)
        timings["repair_s"] = time.perf_counter() - t0
        facts["repair_mass_added"] = added
    return Z, facts


def _solve_lp(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None) -> Result:
    timings: dict[str, float] = {}
    Z, f = solve_lp_rows(problem.d, problem.p, problem.c, params, progress, time_limit, timings)
    return Result("lp", params, Z, f["status"], params["eps"], timings=timings, lp_size=f["size"],
                  objective_m=f["objective"], message=f["message"],
                  diagnostics={k: v for k, v in f.items() if k in ("pairs", "repair_mass_added")})


def grid_cells(problem: Problem, g: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Cell of each secret on a g×g grid over X's bounding box, and each cell's representative.

    Returns (cell index per secret, compacted to non-empty cells; representative secret per non-empty cell:
    the secret nearest the cell's centre).
    """
    xy = project_km(problem.x_lat, problem.x_lon, float(problem.x_lat.mean()), float(problem.x_lon.mean()))
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    ij = np.minimum((g * (xy - lo) / span).astype(np.int64), g - 1)
    raw = ij[:, 0] * g + ij[:, 1]
    cells, cell_of = np.unique(raw, return_inverse=True)
    centres = lo + (np.column_stack([cells // g, cells % g]) + 0.5) * span / g
    reps = np.empty(len(cells), dtype=np.int64)
    for c_idx in range(len(cells)):  # one short loop per non-empty cell (≤ g²), not per pair
        members = np.flatnonzero(cell_of == c_idx)
        reps[c_idx] = members[np.argmin(((xy[members] - centres[c_idx]) ** 2).sum(axis=1))]
    return cell_of.astype(np.int64), reps


def _solve_lp_ca(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None) -> Result:
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    cell_of, reps = grid_cells(problem, params["grid"])
    n_cells = len(reps)
    member = np.zeros((n_cells, problem.k))
    member[cell_of, np.arange(problem.k)] = problem.p
    weights = member.sum(axis=1)
    # the cell's prior-weighted mean cost: the LP then minimises the coarse mechanism's true expected loss
    c_cell = (member @ problem.c) / np.where(weights > 0, weights, 1.0)[:, None]
    timings["grid_s"] = time.perf_counter() - t0
    lp_params = {**params, "pairs": "all", "spanner_t": 1.5, "repair": True}
    Zr, f = solve_lp_rows(problem.d[np.ix_(reps, reps)], weights, c_cell, lp_params, progress, time_limit, timings)
    Z = None if Zr is None else Zr[cell_of]
    return Result("lp-ca", params, Z, f["status"], params["eps"],
                  claim="representatives only: secrets share their cell's row, so pairs of real secrets may violate",
                  timings=timings, lp_size=f["size"], objective_m=f["objective"], message=f["message"],
                  diagnostics={"cells": n_cells, "representatives": reps, "cell_of": cell_of})


LP = register(Mechanism(
    name="lp", label="Optimal LP", family="lp",
    paper="Bordenabe, Chatzikokolakis, Palamidessi: Optimal geo-indistinguishable mechanisms for location "
          "privacy (CCS 2014)",
    info="Minimises expected cost subject to z[x,y] ≤ e^{ε·d(x,x')} z[x',y] for all pairs: the best ε-mDP "
         "mechanism over Y. Size grows like K²·|Y| constraints.",
    params=(epsilon_param(), _PAIRS, _SPANNER_T, _METHOD, _REPAIR), solve=_solve_lp, max_k=150))

LP_CA = register(Mechanism(
    name="lp-ca", label="LP + coarse approximation (LP+CA)", family="lp", exact=False,
    paper="Liu, Qiu: PAnDA (CCS 2025), §4.3 baseline",
    info="Grid of G×G cells over the region; one representative secret per non-empty cell; the optimal LP over "
         "representatives; each secret uses its cell's row. Fast, but real pairs may violate ε-mDP.",
    params=(epsilon_param(), Param("grid", int, 8, "cells per side of the grid", low=2, high=20, label="grid G"),
            _METHOD), solve=_solve_lp_ca))
