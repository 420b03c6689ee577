"""``python -m mdpviz bench aipo``: where AIPO stands against EM and the paper's baselines, and why.

Three sweeps on one city (default Rome, the paper's city, X drawn over the whole city):

* ``standing``: for each ε, AIPO, AIPO-E, the paper's discretised Laplace (``laplace-d``), EM, EM with Bayesian
  remapping (``em-br``, the paper's RMP), planar Laplace (``laplace``) and the exact LP where K allows, plus two
  references: the non-private floor (every secret reports its cheapest output, metres) and AIPO's universal lower
  bound. ``--preset paper`` uses the paper's settings (|Y| = 20, the authors' 4.77 km Rome cell, lower-bound grid 12).
* ``cells``: AIPO's loss and time against the lattice cell side at one ε (a 4-step budget search, no lower bound):
  a node's distribution is a blend of its cell's four corners, so AIPO cannot tell apart outputs closer together
  than a cell.
* ``soundness``: every mechanism of the AIPO family at each ε of ``--eps`` and both cost models, with its status,
  verdict and violations of its own claim (the paper-cities issue's check at K = 500, |Y| = 100).

Every loss is the true loss on the secrets (metres); violations are checked in each mechanism's own claim metric.
Each solve is one point of the sweep runner (``benchmarks.grid``): ``--points FILE`` keeps finished points and a
rerun resumes from it; ``--workers N`` runs them on Dask.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..mechanisms import get_mechanism
from ..sweep import Point, problem_of
from . import grid, options, report

FLOOR = "floor (cheapest output, not private)"


def _run(pb: Any, mechanism: str, params: dict[str, Any], time_limit: float) -> dict[str, Any]:
    r, row = report.timed_solve(pb, mechanism, params, time_limit)
    return {**row, "anchors": r.diagnostics.get("anchors"), "cell_km": (r.diagnostics.get("lattice") or {}).get(
        "step_km"), "lower_bound_m": r.bound_m, "degenerate": bool(r.degenerate)}


def _soundness(pb: Any, mechanism: str, params: dict[str, Any], time_limit: float) -> dict[str, Any]:
    r, row = report.timed_solve(pb, mechanism, params, time_limit)
    return {**row, "claim_check": (r.diagnostics.get("claim_check") or {}).get("violated_pairs"),
            "degenerate": r.degenerate[:60], "message": r.message[:90]}


def bench_point(point: Point, *, use_cache: bool = False) -> dict[str, Any]:
    """The sweep runner's task: one mechanism on the point's problem (built from its settings), measured as its
    sweep (``tags["sweep"]``) reports it."""
    measure = _soundness if point.tags["sweep"] == "soundness" else _run
    return {**point.tags, **measure(problem_of(point), point.mechanism, dict(point.params),
                                    float(point.time_limit or 0.0))}


def points(problem: dict[str, Any], aipo_params: dict[str, Any], sweeps: Sequence[str], eps_values: Sequence[float],
           cells_eps: float, cell_km: Sequence[float], lp_max_k: int, time_limit: float) -> list[Point]:
    """The benchmark's grid: one point per solve, tagged with its sweep, ε and method (and cost or cell side)."""
    out: list[Point] = []

    def add(pb: dict[str, Any], name: str, params: dict[str, Any], **tags: Any) -> None:
        out.append(Point(pb, name, params, seed=0, task=f"{__name__}:bench_point", time_limit=time_limit,
                         tags={"sweep": tags.pop("sweep"), **tags, "method": name}))

    if "standing" in sweeps:
        for eps in eps_values:
            add(problem, "aipo", {**aipo_params, "eps": eps}, sweep="standing", eps=eps)
            add(problem, "aipo-e", {k: v for k, v in {**aipo_params, "eps": eps}.items()
                                    if k in get_mechanism("aipo-e").defaults()}, sweep="standing", eps=eps)
            for name in ("laplace-d", "em", "em-br", "laplace") + (("lp",) if problem["k"] <= lp_max_k else ()):
                add(problem, name, {"eps": eps}, sweep="standing", eps=eps)
    if "cells" in sweeps:
        add(problem, "em", {"eps": cells_eps}, sweep="cells", eps=cells_eps)
        for cell in cell_km:
            add(problem, "aipo", {"eps": cells_eps, "cell_km": cell, "lb_grid": 0, "budget_steps": 4},
                sweep="cells", eps=cells_eps, cell_km_asked=cell)
    if "soundness" in sweeps:
        for cost in ("travel", "distance"):
            for eps in eps_values:
                for name in ("aipo", "aipo-e", "aipo-r", "laplace-d"):
                    add({**problem, "cost": cost}, name, {"eps": eps}, sweep="soundness", cost=cost, eps=eps)
    return out


def with_references(rows: list[dict[str, Any]], eps_values: Sequence[float], floor_m: float) -> list[dict[str, Any]]:
    """The rows with, after each ε's standing block, the floor row, and ``vs_em_pct`` (against EM at that ε) on
    every standing row with a loss; cells and soundness rows follow unchanged.

    >>> rows = [{"sweep": "standing", "eps": 1.0, "method": "em", "loss_m": 200.0},
    ...         {"sweep": "standing", "eps": 1.0, "method": "aipo", "loss_m": 150.0},
    ...         {"sweep": "cells", "eps": 5.0, "method": "em", "loss_m": 90.0}]
    >>> [(r["method"], r.get("vs_em_pct")) for r in with_references(rows, [1.0], 100.0)]
    [('em', 0.0), ('aipo', -25.0), ('floor (cheapest output, not private)', -50.0), ('em', None)]
    """
    out: list[dict[str, Any]] = []
    for eps in eps_values:
        block = [dict(r) for r in rows if r["sweep"] == "standing" and r["eps"] == eps]
        if not block:
            continue
        block.append({"sweep": "standing", "eps": eps, "method": FLOOR, "loss_m": floor_m})
        em_loss = next((r.get("loss_m") for r in block if r["method"] == "em"), None)
        for row in block:
            if row.get("loss_m") is not None and em_loss:
                row["vs_em_pct"] = 100.0 * (row["loss_m"] / em_loss - 1.0)
        out.extend(block)
    return out + [r for r in rows if r["sweep"] != "standing"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the AIPO benchmark from the command line; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m mdpviz bench aipo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--city", default="rome", help="city (default rome)")
    ap.add_argument("--k", type=int, default=500, help="secrets K (default 500)")
    ap.add_argument("--outputs", type=int, default=100, help="|Y| (default 100; the paper preset sets 20)")
    ap.add_argument("--cost", choices=("travel", "distance"), default="distance", help="cost model (default distance)")
    ap.add_argument("--eps", type=float, nargs="+", default=[0.4, 1.0, 1.6, 5.0], help="ε values, km⁻¹")
    ap.add_argument("--preset", choices=("none", "paper"), default="none", help="AIPO's paper preset")
    ap.add_argument("--sweeps", nargs="+", choices=("standing", "cells", "soundness"), default=["standing", "cells"])
    ap.add_argument("--cells-eps", type=float, default=5.0, help="ε of the cells sweep (default 5)")
    ap.add_argument("--cell-km", type=float, nargs="+", default=[6.0, 3.0, 2.0, 1.5],
                    help="cell sides of the cells sweep, km")
    ap.add_argument("--lp-max-k", type=int, default=300, help="run the exact LP only up to this K (default 300)")
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds per solve (default 600)")
    ap.add_argument("--out", default="aipo", help=report.OUT_HELP)
    grid.add_options(ap)
    a = ap.parse_args(argv)
    # every option is checked before any work: a bad value is one error line, not a report of refused rows
    info = options.check_city(a.city)
    options.check_ks([a.k], info, "--k")
    options.check_outputs(a.outputs, [a.k])
    options.check_param("aipo", "eps", a.eps, "--eps")
    options.check_param("aipo", "eps", a.cells_eps, "--cells-eps")
    options.check_param("aipo", "cell_km", a.cell_km, "--cell-km")
    options.check_whole(a.lp_max_k, "--lp-max-k", 0, "the largest K of the exact LP")
    options.check_time_limit(a.time_limit)
    grid.check_options(a)
    stem = report.out_stem(a.out)

    preset = get_mechanism("aipo").preset("paper") if a.preset == "paper" else None
    problem: dict[str, Any] = {"city": a.city, "k": a.k, "n_outputs": min(a.outputs, a.k), "cost": a.cost}
    aipo_params: dict[str, Any] = {}
    if preset is not None:
        problem.update(preset.problem_dict())
        aipo_params.update(preset.param_dict())
    eps_values = list(dict.fromkeys(a.eps))
    # the standing and cells problem (seed 0), for the floor and the notes: built first, so that a setting it
    # refuses (|Y| of the preset above K...) stops the run before any solve
    pb = options.build_first(lambda: problem_of(Point(problem)),
                             {"k": "--k"} if preset is not None else {"k": "--k", "n_outputs": "--outputs"})
    survey = points(problem, aipo_params, list(dict.fromkeys(a.sweeps)), eps_values, a.cells_eps,
                    list(dict.fromkeys(a.cell_km)), a.lp_max_k, a.time_limit)
    rows, done = grid.run(survey, a)
    floor_m = float(pb.p @ pb.c.min(axis=1))  # every secret reports its cheapest output: no privacy at all
    rows = with_references(rows, eps_values, floor_m)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    notes = (f"`python -m mdpviz bench aipo {' '.join(argv or [])}`: {a.city}, K = {pb.k} secrets over the whole "
             f"city (d up to {np.max(pb.d):.0f} km), |Y| = {pb.m}, cost {pb.settings['cost']}, uniform prior"
             f"{', AIPO paper preset ' + str(preset.param_dict()) if preset else ''}. {grid.summary(done)} Load "
             f"average at the end (1, 5, 15 min): {load} on 2 cores shared with other work, so times are noisy. "
             "`loss_m`: the true loss on the secrets, metres; `vs_em_pct` against EM at the same ε; the floor row is "
             "the loss of reporting each secret's cheapest output (no privacy). Violations are checked over all "
             "ordered pairs of X in each claim's metric (planar ℓ2 for AIPO, laplace-d and laplace).")
    path = report.write(rows, stem, "AIPO benchmark: standing against EM and the paper's baselines", notes=notes)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit("run the suite with `python -m mdpviz bench aipo`")
