"""The optimal mDP LP (Bordenabe et al. 2014) and its coarse grid approximation (LP+CA, PAnDA §4.3)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..contract import Mechanism, Param, Progress, Result, epsilon_param, register
from ..lp.mdp_lp import PAIR_SETS
from ..lp.neighbours import neighbour_path_km, solve_by_components
from ..lp.optimal import GAP_TOL, optimal_rows
from ..lp.outcome import EngineDiagnostics
from ..lp.structured import ENGINES
from ..problem import Problem
from .neighbour_scope import all_pairs_verdict, neighbour_claim

_METHOD = Param("method", str, "ipm", "monolithic engine: HiGHS algorithm, interior point (with crossover) or "
                "dual simplex",
                choices=("ipm", "simplex"), label="LP method")
_PAIRS = Param("pairs", str, "exact",
               "monolithic engine's constrained pairs: 'exact' drops only pairs implied by a chain through another "
               "secret (exact for the metric); 'all' keeps every ordered pair; 'spanner' keeps a greedy t-spanner's "
               "edges at ε/t",
               choices=PAIR_SETS, label="constraint pairs")
_SPANNER_T = Param("spanner_t", float, 1.5, "stretch t of the spanner (only with pairs = spanner)", low=1.01,
                   high=5.0, label="spanner stretch t")
SOLVERS = ("structured", "monolithic")
_SOLVER = Param("solver", str, "structured",
                "'structured': exact row-and-column generation (a small LP over the entries and pair rows that matter, "
                "repaired into the mDP cone and certified by a lower bound; private by construction), or conic "
                "column generation where most entries matter (small cities); 'monolithic': one HiGHS LP over all "
                "pairs' rows (slow beyond K ≈ 100)",
                choices=SOLVERS, label="LP engine")
_ENGINE = Param("engine", str, "auto", "structured engine: 'rows' (row-and-column generation), 'conic' (conic column "
                "generation, faster when most entries carry mass: small cities) or 'auto' (conic on such dense "
                "instances, rows otherwise and as its fallback)", choices=ENGINES, label="structured engine")
_GAP = Param("gap_tol", float, GAP_TOL, "structured engine: the certified relative gap (objective − lower bound) / "
             "objective to reach; status 'optimal' only within it", low=1e-10, high=0.1, log=True,
             label="relative gap")
_SCOPE = Param("scope", str, "all-pairs", "constraint set: 'all-pairs' = exact ε-mDP for every pair; 'neighbours' = "
               "only pairs within η, the LP of the PAnDA and Benders papers (the message states the measured "
               "all-pairs violations)", choices=("all-pairs", "neighbours"), label="constraint set")
_ETA = Param("eta", float, 2.0, "neighbour threshold η (only with scope = neighbours; 2 km as the Benders paper)",
             low=0.01, high=100.0, log=True, unit="km", label="η")
_REPAIR = Param("repair", bool, True, "monolithic engine: raise entries that solver tolerances left too small "
                "(Lipschitz repair), then fix row sums inside the mDP cone, so every pair meets ε-mDP",
                label="repair columns")


def collapsed(Z: NDArray[np.float64] | None) -> str:
    """The degenerate verdict of an LP mechanism whose rows are all the same distribution (it reveals nothing)."""
    if Z is None or len(Z) < 2 or float(np.ptp(Z, axis=0).max()) > 1e-12:
        return ""
    return (f"Collapsed: all {len(Z)} secrets report the same distribution (at this ε the optimal mechanism "
            "reveals nothing about the location)")


def _solve_lp(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None) -> Result:
    timings: dict[str, float] = {}
    near = params["scope"] == "neighbours"
    if near:  # E = ε·d on pairs d ≤ η, +inf elsewhere: its closure is ε × the path metric through neighbours
        Z, f = solve_by_components(neighbour_path_km(problem.d, params["eta"]), problem.p, problem.c,
                                   lambda d, w, c, left: optimal_rows(d, w, c, params, progress, left, timings),
                                   time_limit)
    else:
        Z, f = optimal_rows(problem.d, problem.p, problem.c, params, progress, time_limit, timings,
                             out_rows=problem.y_index)
    claim, message, degenerate = "all pairs", f.message, ""
    if near:
        claim = neighbour_claim(params["eta"])
        if Z is not None:
            note, degenerate, f.diagnostics["all_pairs"] = all_pairs_verdict(Z, params["eps"], problem.d,
                                                                                params["eta"])
            message = "; ".join(m for m in (message, note) if m)
    if not degenerate and collapsed(Z):
        degenerate = collapsed(Z)
        message = "; ".join(m for m in (message, degenerate) if m)
    return Result("lp", params, Z, f.status, params["eps"], claim=claim, timings=timings, lp_size=f.size,
                  objective_m=f.objective, bound_m=f.bound, message=message, degenerate=degenerate,
                  diagnostics=f.diagnostics)


def grid_cells(problem: Problem, g: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Cell of each secret on a g×g grid over X's bounding box, and each cell's representative.

    Returns (cell index per secret, compacted to non-empty cells; representative secret per non-empty cell:
    the secret nearest the cell's centre).
    """
    xy = problem.xy_km
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


def coarse_verdict(n_cells: int, k: int, grid: int) -> str:
    """The degenerate verdict of LP+CA: its LP, hence its privacy claim, covers only the cells' representatives."""
    return (f"Claim covers only the {n_cells} cell representatives ({grid}×{grid} grid): each of the {k} secrets "
            "reports with its cell's row, so a pair of secrets in different cells is ε-mDP only at the "
            "representatives' distance, not at its own (pairs closer than their representatives can break ε-mDP)")


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
    lp_params = {**params, "pairs": "all", "spanner_t": 1.5, "repair": True, "gap_tol": 1e-8}
    Zr, f = optimal_rows(problem.d[np.ix_(reps, reps)], weights, c_cell, lp_params, progress, time_limit, timings)
    Z = None if Zr is None else Zr[cell_of]
    diagnostics = EngineDiagnostics(cells=n_cells, representatives=reps, cell_of=cell_of) | f.diagnostics
    if isinstance(kept := diagnostics.get("feasible_Z"), np.ndarray):  # a stop's point: one row per secret, as Z
        diagnostics["feasible_Z"] = kept[cell_of]
    degenerate = "" if Z is None else coarse_verdict(n_cells, problem.k, params["grid"])
    message = "; ".join(m for m in (f.message, degenerate) if m)
    return Result("lp-ca", params, Z, f.status, params["eps"],
                  claim="representatives only: secrets share their cell's row, so pairs of real secrets may violate",
                  timings=timings, lp_size=f.size, objective_m=f.objective, bound_m=f.bound,
                  message=message, degenerate=degenerate, diagnostics=diagnostics)


LP = register(Mechanism(
    name="lp", label="Optimal LP", family="lp",
    paper="Bordenabe, Chatzikokolakis, Palamidessi: Optimal geo-indistinguishable mechanisms for location "
          "privacy (CCS 2014)",
    info="Minimises expected cost subject to z[x,y] ≤ e^{ε·d(x,x')} z[x',y] for all pairs: the best ε-mDP "
         "mechanism over Y. Default engine: exact row-and-column generation (certified lower bound, private by "
         "construction; on Rome at ε = 5 km⁻¹ K = 1,000 takes under a second), conic column generation on the "
         "small cities, where every entry carries mass and K = 200 takes about a minute; on Rome at ε = 1 km⁻¹ "
         "K = 200 takes about 4 s, K = 500 about 200 s and K = 1,000 is stopped by a 300 s limit (CPU seconds, "
         "`bench lp`'s grid in the README); the monolithic LP has K²·|Y| constraints.",
    params=(epsilon_param(), _SOLVER, _GAP, _ENGINE, _PAIRS, _SPANNER_T, _METHOD, _REPAIR, _SCOPE, _ETA),
    solve=_solve_lp, max_k=1000, diagnostics=EngineDiagnostics))

LP_CA = register(Mechanism(
    name="lp-ca", label="LP + coarse approximation (LP+CA)", family="lp", exact=False,
    paper="Liu, Qiu: PAnDA (CCS 2025), §4.3 baseline",
    info="Grid of G×G cells over the region; one representative secret per non-empty cell; the optimal LP over "
         "representatives; each secret uses its cell's row. Fast, but real pairs may violate ε-mDP.",
    params=(epsilon_param(), Param("grid", int, 8, "cells per side of the grid", low=2, high=20, label="grid G"),
            _SOLVER, _METHOD), solve=_solve_lp_ca, diagnostics=EngineDiagnostics))
