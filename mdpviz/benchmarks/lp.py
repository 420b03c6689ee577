"""``python -m mdpviz bench lp``: the optimal-mDP LP engines against each other as K grows.

Runs, in one process, the monolithic HiGHS LP, the structured exact solver, LP+BD, LP+EM and EM over a list of
K (|Y| = 100 outputs, default city, ε = 5 km⁻¹ by default). A method is skipped for every larger K once one of
its runs passes the time limit. For each run it records wall time, peak memory, the objective (m), the gap to the
best certified bound on that instance, the all-pairs violation count, and the speed-up over the monolithic LP on
the same instance. Writes CSV and Markdown (with date and machine).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import resource
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .report import machine

METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "monolithic": ("lp", {"solver": "monolithic", "pairs": "all", "method": "ipm"}),
    # monolithic over pairs not implied by a chain (exact for the metric; sparse for the road metric)
    "monolithic-exact": ("lp", {"solver": "monolithic", "pairs": "exact", "method": "ipm"}),
    "structured": ("lp", {"solver": "structured"}),
    "lp-bd": ("lp-bd", {}),
    "lp-em": ("lp-em", {}),
    "em": ("em", {}),
}
DEFAULT_METHODS = ("monolithic", "structured", "lp-bd", "lp-em", "em")


def run_one(problem: Any, method: str, eps: float, time_limit: float) -> dict[str, Any]:
    """Solve one method on one problem; returns the row of the table (no Z kept)."""
    from mdpviz.metrics import violations
    from mdpviz.solve import solve

    mech, extra = METHODS[method]
    tracemalloc.start()
    c0 = time.process_time()
    t0 = time.perf_counter()
    res = solve(problem, mech, {"eps": eps, **extra}, time_limit=time_limit, use_cache=False)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    row: dict[str, Any] = {"method": method, "status": res.status, "wall_s": wall,
                           "peak_numpy_mb": peak / 2**20,
                           "process_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                           "objective_m": res.objective_m, "bound_m": res.bound_m,
                           "variables": res.lp_size.get("variables"), "iterations": res.diagnostics.get("iterations"),
                           "load_avg_1min": os.getloadavg()[0], "cpu_s": cpu,
                           "timings": json.dumps({k: round(v, 3) for k, v in res.timings.items()}),
                           "message": res.message}
    Z = res.Z
    if Z is None and res.diagnostics.get("feasible_Z") is not None:
        Z = res.diagnostics["feasible_Z"]
        row["objective_m"] = res.diagnostics.get("feasible_objective_m")
        row["status"] += " (feasible point)"
    if Z is not None:
        if row["objective_m"] is None:
            row["objective_m"] = float(np.sum(problem.p[:, None] * problem.c * Z))
        v = violations(problem, Z, eps)
        row["violated_pairs"] = v.violated_pairs
        row["checked_pairs"] = v.checked_pairs
    return row


def main(argv: Sequence[str] | None = None) -> int:
    """Run the exact-LP benchmark from the command line; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m mdpviz bench lp", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ks", default="100,200,500,1000,2000", help="comma-separated K values")
    parser.add_argument("--outputs", type=int, default=100, help="|Y| (default 100)")
    parser.add_argument("--eps", type=float, default=5.0, help="ε in km⁻¹ (default 5)")
    parser.add_argument("--city", default=None, help="city (default: the default city)")
    parser.add_argument("--metric", default="haversine", choices=("haversine", "road"), help="mDP metric")
    parser.add_argument("--seed", type=int, default=0, help="problem seed")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                        help=f"comma-separated subset of {','.join(METHODS)} (default {','.join(DEFAULT_METHODS)})")
    parser.add_argument("--time-limit", type=float, default=300.0,
                        help="seconds per run; a method that passes it is skipped for larger K (default 300)")
    parser.add_argument("--out", default="docs/benchmarks/lp", help="output path without extension")
    a = parser.parse_args(argv)

    from mdpviz.problem import build_problem

    ks = [int(k) for k in a.ks.split(",") if k.strip()]
    methods = [m.strip() for m in a.methods.split(",") if m.strip()]
    unknown = set(methods) - set(METHODS)
    if unknown:
        parser.error(f"unknown methods {sorted(unknown)}; choose from {', '.join(METHODS)}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    skipped: set[str] = set()
    for k in ks:
        problem = build_problem(a.city, k, n_outputs=min(a.outputs, k), metric=a.metric, seed=a.seed)
        here: list[dict[str, Any]] = []
        for method in methods:
            if method in skipped:
                here.append({"method": method, "status": "skipped (slower than the limit at a smaller K)"})
                continue
            print(f"K={k} {method} ...", flush=True)
            row = run_one(problem, method, a.eps, a.time_limit)
            here.append(row)
            if row["wall_s"] > a.time_limit or row["status"].startswith("time limit"):
                skipped.add(method)
            print(f"  {row['status']}  {row['wall_s']:.1f} s  objective {row.get('objective_m')}", flush=True)
        bounds = [r["bound_m"] for r in here if r.get("bound_m") is not None]
        best = max(bounds) if bounds else None
        mono = next((r for r in here if r["method"] == "monolithic" and r.get("status") == "optimal"), None) or \
            next((r for r in here if r["method"] == "monolithic-exact" and r.get("status") == "optimal"), None)
        for r in here:
            r.update(K=k, outputs=problem.m, eps=a.eps, city=problem.city, metric=a.metric)
            obj = r.get("objective_m")
            r["gap_to_best_bound"] = (obj - best) / best if (obj is not None and best) else None
            r["speedup_vs_monolithic"] = (mono["wall_s"] / r["wall_s"]) if (mono and r.get("wall_s")) else None
        rows.extend(here)
        _write(rows, out, a)
    return 0


def _fmt(x: Any, spec: str) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    return format(x, spec)


def _write(rows: list[dict[str, Any]], out: Path, a: argparse.Namespace) -> None:
    """CSV and Markdown, each written to a temporary file then renamed."""
    cols = ["K", "outputs", "eps", "city", "metric", "method", "status", "wall_s", "cpu_s", "load_avg_1min",
            "peak_numpy_mb",
            "process_maxrss_mb", "objective_m", "bound_m", "gap_to_best_bound", "violated_pairs", "checked_pairs",
            "speedup_vs_monolithic", "variables", "iterations", "timings", "message"]
    df = pd.DataFrame(rows).reindex(columns=cols)
    tmp = out.with_suffix(".csv.tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(out.with_suffix(".csv"))
    lines = [
        "# LP engines benchmark (`python -m mdpviz bench lp`)",
        "",
        f"- date: {_dt.datetime.now(_dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {machine()}",
        f"- instance: city {rows[0].get('city') or 'default'}, metric {a.metric}, |Y| = {a.outputs}, "
        f"ε = {a.eps:g} km⁻¹, seed {a.seed}; time limit {a.time_limit:g} s per run",
        "- peak memory: numpy/Python allocations traced by tracemalloc during the run (HiGHS's C++ memory is not "
        "traced); `maxrss` is the whole process's peak so far (monotone over the run)",
        "- speed-up: monolithic (all pairs) wall time over this run's, on the same instance (monolithic-exact "
        "when the all-pairs run is absent or did not finish)",
        "- gap: (objective − best certified lower bound on the instance) / bound; violations: ordered pairs "
        "(x, x') breaking ε-mDP for some output, checked over all pairs with tolerance 1e-9",
        "",
        "- the machine is shared: `cpu (s)` is this process's CPU time during the run and `load` the 1-minute load "
        "average when it ended; wall times above cpu times mean other work competed for the 2 cores",
        "",
        "| K | method | status | wall (s) | cpu (s) | load | peak numpy (MB) | maxrss (MB) | objective (m) | "
        "gap to best bound | violated pairs | speed-up vs monolithic |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        viol = "–" if r.get("violated_pairs") is None or pd.isna(r.get("violated_pairs")) else \
            f"{int(r['violated_pairs'])} / {int(r['checked_pairs'])}"
        lines.append(f"| {r.get('K')} | {r['method']} | {r.get('status')} | {_fmt(r.get('wall_s'), '.2f')} | "
                     f"{_fmt(r.get('cpu_s'), '.1f')} | {_fmt(r.get('load_avg_1min'), '.1f')} | "
                     f"{_fmt(r.get('peak_numpy_mb'), '.0f')} | {_fmt(r.get('process_maxrss_mb'), '.0f')} | "
                     f"{_fmt(r.get('objective_m'), '.6f')} | {_fmt(r.get('gap_to_best_bound'), '.1e')} | {viol} | "
                     f"{_fmt(r.get('speedup_vs_monolithic'), '.1f')} |")
    tmp = out.with_suffix(".md.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(out.with_suffix(".md"))
