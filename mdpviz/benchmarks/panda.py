"""``python -m mdpviz bench panda``: PAnDA as its paper writes it and as its authors' code ran it, against baselines.

For each K a problem is built on the city (whole city, seeded, |Y| outputs). Each PAnDA variant runs in both modes:
``paper`` (the defaults) and ``authors-code`` (the mechanism's preset), then EM, EM+BR, LP+EM and, up to
``--lp-max-k``, the optimal LP. Every method is measured on the same N users (PAnDA's seeded users): the loss they
experience, V_pure over their pairs (ε·d, the check every ε-mDP mechanism must pass) and, for PAnDA, V_pair
(Phase I charged with Prop. 3's ε̄) and V_cf. Rows go to ``docs/benchmarks/<name>.csv`` and ``<name>.md``
(``--name``, default ``panda``). The grid runs on the one sweep runner (``benchmarks.grid``): in process by default,
on Dask with ``--workers N``; with ``--points FILE`` a rerun resumes from the points already finished.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..mechanisms import get_mechanism
from ..metrics import rows_breach, violations
from ..panda.selection import sample_users
from ..solve import solve
from ..sweep import Point, problem_of
from . import grid, options
from .report import DOCS, OUT_HELP, load, machine, out_stem, write

BASELINES = ("em", "em-br", "lp-em", "lp")


def _user_measures(problem: Any, Z: np.ndarray, users: np.ndarray, eps: float) -> dict[str, Any]:
    """Loss of the N users (each reports from their own row) and V_pure over their ordered pairs (ε·d)."""
    i, j = np.nonzero(~np.eye(len(users), dtype=bool))
    a, b = users[i], users[j]
    keep = a != b
    bad = rows_breach(Z[a[keep]], Z[b[keep]], eps * problem.d[a[keep], b[keep]])
    loss = float(np.einsum("ij,ij->i", problem.c[users], Z[users]).mean())
    return {"user_loss_m": loss, "v_pure": f"{int(bad.sum())}/{int(keep.sum())}"}


def users_of(problem: Any, n_users: int, seed: int) -> np.ndarray:
    """The secrets of PAnDA's N seeded users (as ``panda.mechanism`` draws them): every method is measured on them."""
    return sample_users(problem.p, n_users, np.random.default_rng(np.random.SeedSequence(seed).spawn(4)[0]))


def measure(point: Point, *, use_cache: bool = False) -> dict[str, Any]:
    """The sweep runner's task: one PAnDA mode or one baseline on the point's problem, timed and checked."""
    problem = problem_of(point)
    t0, c0 = time.perf_counter(), time.process_time()
    res = solve(problem, point.mechanism, dict(point.params), time_limit=point.time_limit, use_cache=use_cache)
    row: dict[str, Any] = {**point.tags, "status": res.status, "wall_s": time.perf_counter() - t0,
                           "cpu_s": time.process_time() - c0}
    dg = res.diagnostics
    if point.mechanism.startswith("panda"):
        vio, util = dg.get("violations", {}), dg.get("utility", {})
        row.update({"anchors": len(dg.get("anchors", [])), "lp_rows": dg.get("lp", {}).get("rows_after_merge"),
                    "user_loss_m": util.get("user_level_m"), "anchor_loss_m": util.get("anchor_level_m"),
                    **{key: f"{vio[key]['violated']}/{vio[key]['checked']}" if key in vio else ""
                       for key in ("V_pair", "V_cf", "V_pure")}, "all_pairs_violated": ""})
    elif res.Z is not None:
        eps, users, check_max_k = point.tags["eps"], point.tags["users"], point.tags["check_max_k"]
        measures = _user_measures(problem, res.Z, users_of(problem, users, point.seed), eps)
        row.update(user_loss_m=measures["user_loss_m"], V_pure=measures["v_pure"])
        if problem.k <= check_max_k:
            vv = violations(problem, res.Z, res.eps, metric=res.check_metric)
            row["all_pairs_violated"] = f"{vv.violated_pairs}/{vv.checked_pairs}"
    return {**row, "degenerate": res.degenerate}


def points(city: str, ks: Sequence[int], variants: Sequence[str], modes: Sequence[str], baselines: Sequence[str],
           users: int, outputs: int, cost: str, seed: int, eps: float, lp_max_k: int, check_max_k: int,
           time_limit: float) -> list[Point]:
    """The grid: per K, each PAnDA variant in each mode, then the baselines (the LP only up to ``lp_max_k``)."""
    out = []
    for k in ks:
        problem = {"city": city, "k": k, "n_outputs": outputs, "cost": cost}
        for v in variants:
            name = f"panda-{v}"
            for mode in modes:
                params = {"eps": eps, "n_users": users, "seed": seed, "max_lp_rows": 5000,
                          **get_mechanism(name).preset(mode).param_dict()}
                out.append(Point(problem, name, params, seed, task=f"{__name__}:measure", time_limit=time_limit,
                                 tags={"K": k, "method": name, "mode": mode}))
        out += [Point(problem, name, {"eps": eps}, seed, task=f"{__name__}:measure", time_limit=time_limit,
                      tags={"K": k, "method": name, "mode": "paper", "eps": eps, "users": users,
                            "check_max_k": check_max_k})
                for name in baselines if not (name == "lp" and k > lp_max_k)]
    return out


def _rows(done: list[dict[str, Any]], ks: Sequence[int], baselines: Sequence[str],
          lp_max_k: int) -> list[dict[str, Any]]:
    """The table: the measured rows (without the tags that only steer a task), plus a row for each LP not attempted."""
    rows = [{k: v for k, v in r.items() if k not in ("eps", "users", "check_max_k")} for r in done]
    if "lp" in baselines:
        rows += [{"K": k, "method": "lp", "mode": "paper", "status": f"not attempted (K > {lp_max_k})"}
                 for k in ks if k > lp_max_k]
    return sorted(rows, key=lambda r: ks.index(r["K"]))  # stable: grid order within a K


def _line(r: dict[str, Any]) -> str:
    def f(key: str, fmt: str = "{:.1f}") -> str:
        value = r.get(key)
        return "" if value in (None, "") else (fmt.format(value) if isinstance(value, float) else str(value))

    return (f"K={r['K']:>5} {r['method']:<8} {r.get('mode', ''):<12} {r['status']:<14} wall {f('wall_s')} s "
            f"cpu {f('cpu_s')} s | anchors {f('anchors')} rows {f('lp_rows')} "
            f"| user loss {f('user_loss_m', '{:.0f}')} m "
            f"| V_pair {f('V_pair')} V_cf {f('V_cf')} V_pure {f('V_pure')} all {f('all_pairs_violated')}"
            + (f" | {r['degenerate']}" if r.get("degenerate") else ""))


NOTES = """Columns: wall and CPU seconds of the solve (the machine is shared: CPU seconds are the fairer measure);
anchors = |A| (union of the users' anchor sets); rows = AnPO LP rows after merging equal rows (1 = every user
gets the same distribution); user loss = mean over the N users of Σ_y c(x_n, y)·z(row used, y), metres, the same
users for every method; anchor loss = the authors' code's figure (uniform over anchor rows). V_pair: ordered
user pairs breaking (ε − ε̄)·d with Prop. 3's ε̄, whatever ε̄ the LP charged; V_cf: per-user counterfactuals;
V_pure: user pairs breaking ε·d (Phase I ignored); all: ordered pairs of X breaking ε-mDP for the baselines
(all-pairs check, up to --check-max-k). Modes: paper = the defaults (Prop. 3's ε̄, every anchor pair, S_x = Γ
nearest); authors-code = the mechanism's preset (ε̄ with only the last factor, pairs closer than 0.8 km,
S_x within γ/2). The paper reports ≈ 220–350 m for PAnDA on its cities, 82 % below EM (CCS 2025, Table 2/3;
24-core desktop, MATLAB); those figures are quoted, not reproduced."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the PAnDA benchmark from the command line; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m mdpviz bench panda",
                                 description="PAnDA (paper mode and authors'-code mode) against EM, EM+BR, LP+EM "
                                             "and the LP on one city: loss, V_pair, V_cf, V_pure, time.")
    ap.add_argument("--city", default="rome")
    ap.add_argument("--k", type=int, nargs="+", default=[500, 1000, 2000, 5000], help="secret-domain sizes K")
    ap.add_argument("--variants", nargs="+", default=["e", "p", "l"], choices=["e", "p", "l"])
    ap.add_argument("--modes", nargs="+", default=["paper", "authors-code"], choices=["paper", "authors-code"])
    ap.add_argument("--baselines", nargs="*", default=list(BASELINES), choices=list(BASELINES))
    ap.add_argument("--users", type=int, default=50, help="number of users N (default 50, the paper's)")
    ap.add_argument("--outputs", type=int, default=100, help="|Y| (default 100, as the authors' code)")
    ap.add_argument("--cost", default="distance", choices=["distance", "travel"])
    ap.add_argument("--eps", type=float, default=5.0, help="ε, km⁻¹ (default 5, the paper's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lp-max-k", type=int, default=500, help="run the optimal LP only up to this K")
    ap.add_argument("--check-max-k", type=int, default=1000, help="all-pairs check of baselines up to this K")
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds per solve")
    ap.add_argument("--name", default="panda", help=OUT_HELP)
    ap.add_argument("--no-write", action="store_true", help="print only")
    grid.add_options(ap)
    a = ap.parse_args(list(argv) if argv is not None else None)
    # every option is checked before any work: a bad value is one error line, not a report of refused rows
    info = options.check_city(a.city)
    a.k = list(dict.fromkeys(a.k))
    options.check_ks(a.k, info, "--k")
    options.check_param("panda-e", "n_users", a.users, "--users")
    options.check_outputs(a.outputs, a.k, clamped=False)
    options.check_param("panda-e", "eps", a.eps, "--eps")
    options.check_whole(a.seed, "--seed", 0, "the seed")
    options.check_whole(a.lp_max_k, "--lp-max-k", 0, "the largest K of the LP")
    options.check_whole(a.check_max_k, "--check-max-k", 0, "the largest K of the all-pairs check")
    options.check_time_limit(a.time_limit)
    grid.check_options(a)
    stem = None if a.no_write else out_stem(a.name, "--name", DOCS)
    load0 = load()
    print(f"machine: {machine()}; {load0}")
    grid_points = points(a.city, a.k, a.variants, a.modes, a.baselines, a.users, a.outputs, a.cost, a.seed, a.eps,
                         a.lp_max_k, a.check_max_k, a.time_limit)
    measured, done = grid.run(grid_points, a, _line)
    rows = _rows(measured, a.k, a.baselines, a.lp_max_k)
    if not a.no_write:
        assert stem is not None  # set whenever the report is written
        command = "python -m mdpviz bench panda " + " ".join(argv if argv is not None else [])
        notes = (f"Command: `{command.strip()}`. City {a.city} (whole city), |Y| = {a.outputs}, N = {a.users} users, "
                 f"ε = {a.eps} km⁻¹, cost {a.cost}, seed {a.seed}, time limit {a.time_limit:g} s per solve. "
                 f"At the start: {load0}; at the end: {load()}. {grid.summary(done)}\n\n" + NOTES)
        path = write(rows, stem, f"PAnDA on {a.city}: paper and authors'-code modes against baselines", notes, DOCS)
        print(f"wrote {path} and its .csv")
    return 0
