"""``python -m mdpviz bench dista``: DISTA-LP on the paper's city: verdict, budget really spent, loss, time, memory.

Settings (each at every ε of ``--eps`` and every user count of ``--users``): ``default`` (the mechanism's defaults:
the paper's one-sided noise, the auditor fits b to half of ε, audited γ); ``two-sided`` (the same with the artifact's
two-sided noise, which has finite loss); ``authors`` (the ``authors`` preset: b = 1/ε, two-sided, the LP gets the
artifact's share of ε, and the exact audit's budget is reported as spent); ``live`` (ε = 100 km⁻¹, 90 % for the
uploads, full-rank SVD: the one regime found where the uploads survive and the claim holds); and two stress cases
for the Benders master (``wem``, ``wem-heavy``: γ = 0, WEM radius 0.1 km). The LP is solved by Benders (one
subproblem per user) and, with ``--direct``, also in one piece. EM at the full ε on the same users' true records is
the baseline (its loss over all of Y). Loss is each user's expected true cost from its own row, in metres.
Each solve is one point of the sweep runner (``benchmarks.grid``), run in a fresh subprocess for its peak memory:
``--points FILE`` keeps finished points and a rerun resumes from it; ``--workers N`` runs them on Dask.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MdpvizError
from ..mechanisms import get_mechanism
from ..mechanisms.em import em_matrix
from ..problem import build_problem
from ..solve import solve
from ..sweep import Point
from . import grid, options, report

SETTINGS: dict[str, dict[str, Any]] = {
    "default": {},
    "two-sided": {"noise": "two-sided"},
    "authors": dict(get_mechanism("dista-lp").preset("authors").params),
    "live": {"eps": 100.0, "noise": "two-sided", "upload_share": 0.9, "rank": 20},
    "wem": {"eps": 20.0, "gamma_mode": "fixed", "gamma": 0.0, "wem_radius": 0.1},
    "wem-heavy": {"eps": 50.0, "gamma_mode": "fixed", "gamma": 0.0, "wem_radius": 0.1, "delta_max": 0.5},
}


def _rss_mb() -> float:
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize() / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def _row(pb: Any, users: int, setting: str, solver: str, extra: dict[str, Any], seed: int,
         time_limit: float) -> dict[str, Any]:
    params = {"users": users, "solver": solver, "seed": seed, **extra, **SETTINGS[setting]}
    eps = float(params.get("eps", 5.0))
    t0 = time.perf_counter()
    try:
        r = solve(pb, "dista-lp", params, time_limit=time_limit, use_cache=False)
    except MdpvizError as e:
        return {"setting": setting, "eps": params.get("eps"), "users": users, "solver": solver,
                "status": f"error: {e}"[:120]}
    wall = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    d = r.diagnostics
    rec = d["users_record"]
    em = em_matrix(pb, eps)
    em_loss = float(np.einsum("ij,ij->", pb.c[rec], em[rec])) / users
    vc = d["violations_claim"]
    b, e2e = d["budget"], d["end_to_end"]
    return {"setting": setting, "eps": eps, "users": users, "solver": solver, "status": r.status,
            "verdict": r.degenerate.split(":")[0] if r.degenerate else "", "erased_dx": d["erased_users"]["dx"],
            "eps_upload": b["eps_spent"] - b["eps_pt"], "eps_spent": b["eps_spent"],
            "e2e_breached": f"{e2e['breached']}/{e2e['pairs']}", "wall_s": wall, "audit_s": r.timings.get("audit_s"),
            "lp_solve_s": r.timings.get("lp_solve_s"),
            "benders_iters": len(d["benders_history"]) or None, "rss_peak_mb": peak_mb,
            "bytes_raw": d["mean"]["bytes_raw"], "bytes_surrogate": d["mean"]["bytes_surrogate"],
            "bytes_download": d["mean"]["bytes_download"], "eps_pt": d["eps_pt"], "delta_total": d["delta_total"],
            "gamma_km": d["gamma_km"], "loss_per_user_m": d["loss_users_m"] / users, "em_loss_per_user_m": em_loss,
            "violated": vc["violated"], "checked": vc["checked"],
            "lp_variables": r.lp_size.get("variables"), "lp_constraints": r.lp_size.get("constraints")}


def _one(case: dict[str, Any]) -> dict[str, Any]:
    """One solve in this (fresh) process, so that its peak resident memory belongs to that solve alone."""
    pb = build_problem(case["city"], case["k"], n_outputs=case["outputs"], cost=case["cost"])
    before = _rss_mb()
    row = _row(pb, case["users"], case["setting"], case["solver"], {"eps": case["eps"]}, case["seed"],
               case["time_limit"])
    if "rss_peak_mb" in row:
        row["memory_mb"] = max(row["rss_peak_mb"] - before, 0.0)
        row["rss_before_mb"] = before
    return row


def _spawn(case: dict[str, Any]) -> dict[str, Any]:
    # the child imports the same mdpviz as this process, wherever this process was started from
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    out = subprocess.run([sys.executable, "-m", "mdpviz.benchmarks.dista", "--one", json.dumps(case)],
                         capture_output=True, text=True, check=False, env=env)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        return {"setting": case["setting"], "users": case["users"], "solver": case["solver"],
                "status": f"error: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}"}
    row: dict[str, Any] = json.loads(lines[-1])
    return row


def bench_point(point: Point, *, use_cache: bool = False) -> dict[str, Any]:
    """The sweep runner's task: one DISTA-LP solve, in a fresh subprocess (``_spawn``: its peak memory is then that
    solve's)."""
    t = point.tags
    case = {"city": point.problem["city"], "k": point.problem["k"], "outputs": point.problem["n_outputs"],
            "cost": point.problem["cost"], "eps": t["eps"], "users": t["users"], "setting": t["setting"],
            "solver": t["solver"], "seed": point.seed, "time_limit": point.time_limit}
    return {**t, **_spawn(case)}


def points(city: str, k: int, outputs: int, cost: str, settings: Sequence[str], eps_values: Sequence[float],
           users: Sequence[int], direct: bool, seed: int, time_limit: float) -> list[Point]:
    """The benchmark's grid: setting × ε (once for a setting that fixes ε) × users × solver."""
    problem = {"city": city, "k": k, "n_outputs": outputs, "cost": cost}
    return [Point(problem, "dista-lp", {}, seed=seed, task=f"{__name__}:bench_point", time_limit=time_limit,
                  tags={"setting": setting, "eps": float(eps), "users": n, "solver": solver})
            for setting in settings
            for eps in ([SETTINGS[setting]["eps"]] if "eps" in SETTINGS[setting] else eps_values)
            for n in users for solver in (("benders", "direct") if direct else ("benders",))]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the DISTA-LP benchmark from the command line; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m mdpviz bench dista", description=__doc__)
    ap.add_argument("--city", default="rome", help="city (default rome, the paper's)")
    ap.add_argument("--k", type=int, default=500, help="|X| (default 500)")
    ap.add_argument("--outputs", type=int, default=100, help="|Y| (default 100)")
    ap.add_argument("--cost", choices=("travel", "distance"), default="distance", help="cost model (default distance)")
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 5.0, 15.0],
                    help="ε values, km⁻¹ (default 1 5 15; a setting that fixes ε runs once)")
    ap.add_argument("--users", type=int, nargs="+", default=[10], help="user counts (default 10, the paper's)")
    ap.add_argument("--settings", nargs="+", default=["default", "two-sided", "authors", "live"],
                    choices=list(SETTINGS), help="settings (default: default two-sided authors live)")
    ap.add_argument("--direct", action="store_true", help="also solve the LP in one piece (a check on Benders)")
    ap.add_argument("--seed", type=int, default=0, help="seed of users, audit and noise (default 0)")
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds per solve (default 600)")
    ap.add_argument("--out", default="dista", help=report.OUT_HELP)
    grid.add_options(ap)
    a = ap.parse_args(argv)
    # every option is checked before any work: a bad value is one error line, not a report of refused rows
    info = options.check_city(a.city)
    options.check_ks([a.k], info, "--k")
    options.check_outputs(a.outputs, [a.k], clamped=False)
    options.check_param("dista-lp", "eps", a.eps, "--eps")
    options.check_param("dista-lp", "users", a.users, "--users")
    options.check_whole(a.seed, "--seed", 0, "the seed")
    options.check_time_limit(a.time_limit)
    grid.check_options(a)
    stem = report.out_stem(a.out)

    survey = points(a.city, a.k, a.outputs, a.cost, list(dict.fromkeys(a.settings)), list(dict.fromkeys(a.eps)),
                    list(dict.fromkeys(a.users)), a.direct, a.seed, a.time_limit)
    pb = options.build_first(lambda: build_problem(a.city, a.k, n_outputs=a.outputs, cost=a.cost),  # for the notes
                             {"k": "--k", "n_outputs": "--outputs"})  # built before any solve
    rows, done = grid.run(survey, a)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    notes = (f"`python -m mdpviz bench dista {' '.join(argv or [])}`; {pb.city}, K = {pb.k} over the whole city (d "
             f"up to {pb.d.max():.0f} km), |Y| = {pb.m}, cost {a.cost}, |N_m| = |Y_m| = 20, SVD rank 5 unless the "
             f"setting says otherwise; load average at the end {load} on 2 cores shared with other work. "
             f"{grid.summary(done)} "
             "`verdict`: the result's degenerate verdict (Uploads erased, Budget overspent, Claim not met); "
             "`erased_dx`: users whose distance block the noise and repair left all zero; `eps_upload`: the uploads' "
             "budget by the exact audit; `eps_spent`: uploads + ε_pt (≤ ε unless overspent); `e2e_breached`: ordered "
             "pairs of the users' true records whose report distributions breach ε (the candidate sets differ). "
             "Settings: " + "; ".join(f"{k} = {v or 'mechanism defaults'}" for k, v in SETTINGS.items()) + ". "
             "Each solve runs in a fresh process: `rss_peak_mb` is that process's peak resident memory (ru_maxrss, "
             "HiGHS included) and `memory_mb` its growth over the resident size after loading the city and building "
             "the problem. "
             "Bytes are per user: raw blocks vs the noised SVD upload (kept rank only), and the download of Z_m. "
             "Loss is per user, from the user's own row, metres; EM uses the full ε over all of Y on the same "
             "records. `violated`/`checked` are per-constraint counts inside the neighbourhoods under the true "
             "metric at ε_pt (the claim).")
    path = report.write(rows, stem, "DISTA-LP benchmark", notes=notes)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(_one(json.loads(sys.argv[2])), default=float))
    else:  # this module is the suite's worker; the suite itself runs from the command line
        sys.exit("run the suite with `python -m mdpviz bench dista` (this module only runs one case with --one)")
