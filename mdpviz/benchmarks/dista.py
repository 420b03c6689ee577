"""``python -m mdpviz bench dista``: DISTA-LP's runtime, memory, bytes per user and loss against the number of users.

Three settings per user count: the mechanism's defaults (ε = 5 km⁻¹, audited γ); ε = 20 km⁻¹ with γ = 0 and WEM
radius 0.1 km; and a stress case for the Benders master (ε = 50, γ = 0, radius 0.1 km, δ cap 0.5 so that less
upload noise leaves more WEM entries). The LP is solved by Benders (one subproblem
per user) and, as a check, by the same LP in one piece. EM at the full ε on the same users' true records is the
baseline (its loss over all of Y). Loss is each user's expected true cost from its own row, in metres.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MdpvizError
from ..mechanisms.em import em_matrix
from ..problem import build_problem
from ..solve import solve
from . import report

SETTINGS = {
    "default": {},
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
    params = {"users": users, "solver": solver, "seed": seed, **SETTINGS[setting], **extra}
    eps = float(params.get("eps", 5.0))
    t0 = time.perf_counter()
    try:
        r = solve(pb, "dista-lp", params, time_limit=time_limit, use_cache=False)
    except MdpvizError as e:
        return {"setting": setting, "users": users, "solver": solver, "status": f"error: {e}"[:80]}
    wall = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    d = r.diagnostics
    rec = d["users_record"]
    em = em_matrix(pb, eps)
    em_loss = float(np.einsum("ij,ij->", pb.c[rec], em[rec])) / users
    vc = d["violations_claim"]
    return {"setting": setting, "eps": eps, "users": users, "solver": solver, "status": r.status,
            "wall_s": wall, "audit_s": r.timings.get("audit_s"), "lp_solve_s": r.timings.get("lp_solve_s"),
            "benders_iters": len(d["benders_history"]) or None, "rss_peak_mb": peak_mb,
            "bytes_raw": d["mean"]["bytes_raw"], "bytes_surrogate": d["mean"]["bytes_surrogate"],
            "bytes_download": d["mean"]["bytes_download"], "eps_pt": d["eps_pt"], "delta_total": d["delta_total"],
            "gamma_km": d["gamma_km"], "loss_per_user_m": d["loss_users_m"] / users, "em_loss_per_user_m": em_loss,
            "violated": vc["violated"], "checked": vc["checked"],
            "lp_variables": r.lp_size.get("variables"), "lp_constraints": r.lp_size.get("constraints")}


def _one(case: dict[str, Any]) -> dict[str, Any]:
    """One solve in this (fresh) process, so that its peak resident memory belongs to that solve alone."""
    pb = build_problem(case["city"], case["k"], n_outputs=case["outputs"])
    before = _rss_mb()
    row = _row(pb, case["users"], case["setting"], case["solver"], {}, case["seed"], case["time_limit"])
    if "rss_peak_mb" in row:
        row["memory_mb"] = max(row["rss_peak_mb"] - before, 0.0)
        row["rss_before_mb"] = before
    return row


def _spawn(case: dict[str, Any]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "mdpviz.benchmarks.dista", "--one", json.dumps(case)],
                         capture_output=True, text=True, check=False)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        return {"setting": case["setting"], "users": case["users"], "solver": case["solver"],
                "status": f"error: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}"}
    return json.loads(lines[-1])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mdpviz bench dista", description=__doc__)
    ap.add_argument("--city", default=None, help="city (default: the bundled default)")
    ap.add_argument("--k", type=int, default=1000, help="|X| (default 1000)")
    ap.add_argument("--outputs", type=int, default=200, help="|Y| (default 200)")
    ap.add_argument("--users", type=int, nargs="+", default=[2, 5, 10, 20, 40, 80], help="user counts to sweep")
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS), help="settings")
    ap.add_argument("--direct", action="store_true", help="also solve the LP in one piece (a check on Benders)")
    ap.add_argument("--seed", type=int, default=0, help="seed of users, audit and noise (default 0)")
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds per solve (default 600)")
    ap.add_argument("--out", default="dista", help="name of the CSV/Markdown files in docs/benchmarks")
    a = ap.parse_args(argv)

    pb = build_problem(a.city, a.k, n_outputs=a.outputs)
    rows: list[dict[str, Any]] = []
    for setting in a.settings:
        for users in a.users:
            for solver in (("benders", "direct") if a.direct else ("benders",)):
                # each solve in its own process: the peak memory is then that solve's
                row = _spawn({"city": a.city, "k": a.k, "outputs": a.outputs, "users": users, "setting": setting,
                              "solver": solver, "seed": a.seed, "time_limit": a.time_limit})
                rows.append(row)
                print(row, flush=True)
    notes = (f"`python -m mdpviz bench dista {' '.join(argv or [])}`; {pb.city}, K = {pb.k}, |Y| = {pb.m}, |N_m| = "
             "|Y_m| = 20, SVD rank 5, one-sided noise, budget mode 'target' (uploads get half of ε, δ_t ≤ 0.1 each "
             "unless the setting says otherwise). "
             "Settings: " + "; ".join(f"{k} = {v or 'mechanism defaults'}" for k, v in SETTINGS.items()) + ". "
             "Each solve runs in a fresh process: `rss_peak_mb` is that process's peak resident memory (ru_maxrss, "
             "HiGHS included) and `memory_mb` its growth over the resident size after loading the city and building "
             "the problem. "
             "Bytes are per user: raw blocks vs the noised SVD upload (kept rank only), and the download of Z_m. "
             "Loss is per user, from the user's own row, metres; EM uses the full ε over all of Y on the same "
             "records. `violated`/`checked` are per-constraint counts inside the neighbourhoods under the true "
             "metric at ε_pt (the claim).")
    path = report.write(rows, a.out, "DISTA-LP benchmark", notes=notes)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(_one(json.loads(sys.argv[2])), default=float))
    else:
        sys.exit(main(sys.argv[1:]))
