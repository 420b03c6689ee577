"""``python -m mdpviz bench benders``: lp-bd (the paper's neighbour LP by Benders) against the solvers it decomposes.

For each K: the neighbour graph (pairs d ≤ η, components), the four partitions of the paper (subset and master
component sizes, the analogues of its Tables 1–2; boundary records; master rows with cuts = needed against all),
the monolithic HiGHS optimum of the same LP (dual simplex), mdpviz's ``lp`` with the neighbour scope (the structured
engine on each component of the neighbour graph, certified bound), and lp-bd runs (``--configs``: by default
plain Benders with k-m-DV as the paper, ours with in-out λ = 0.3 and row-sum cuts, and the spectral partition;
``--threads``: each with that many subproblem threads). Wall and CPU seconds are both recorded: the machine is
shared. The grid runs on the one sweep runner (``benchmarks.grid``): in
process by default (one solve at a time), on Dask with ``--workers N``; ``--points FILE`` keeps each finished point,
and a rerun resumes from it.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..lp.benders import PARTITIONERS, components, master_pairs, partition
from ..lp.mdp_lp import solve_mdp_lp
from ..lp.neighbours import neighbour_pairs
from ..mechanisms.lp_bd import STABILISED_LAMBDA
from ..solve import solve
from ..sweep import Point, SweepRun, problem_of
from . import grid, options
from .report import DOCS, OUT_HELP, load, machine, out_stem, table, write

PAPER_TABLE3 = ("The paper's Table 3 (IJCAI 2024, road data, N = 500, k-m-DV): 290.7 ± 33.5 s for Benders, on a "
                "desktop with a 13th Gen Intel Core i7 (16 cores), MATLAB linprog; quoted, not reproduced. Its Fig. 4: "
                "≈ 1,800 s at N = 1,000 for road data. Its instances are 500 nodes of a 'relatively small target "
                "region' of Rome; ours are drawn from the whole city.")


def _partition_rows(problem: Any, eta: float, eps: float, subsets: int, seed: int) -> list[dict[str, Any]]:
    pi, pj = neighbour_pairs(problem.d, eta)
    expo = eps * problem.d[pi, pj]
    out = []
    for method in PARTITIONERS:
        t0 = time.perf_counter()
        labels = partition(method, subsets, problem.d, problem.xy_km, pi, pj, seed=seed)
        part_s = time.perf_counter() - t0
        cross = labels[pi] != labels[pj]
        is_b = np.zeros(problem.k, dtype=bool)
        is_b[pi[cross]] = is_b[pj[cross]] = True
        sizes = np.bincount(labels)
        ci, cj, _, counts = master_pairs(problem.k, pi, pj, expo, labels, is_b, "needed")
        comps = components(int(is_b.sum()), ci, cj)
        n_all = len(master_pairs(problem.k, pi, pj, expo, labels, is_b, "all")[0])
        out.append({"K": problem.k, "partitioner": method, "partition_s": part_s, "subsets": len(sizes),
                    "subset_avg": float(sizes.mean()), "subset_max": int(sizes.max()),
                    "boundary": int(is_b.sum()), "master_comp_avg": float(np.mean(comps)) if comps else 0.0,
                    "master_comp_max": max(comps, default=0), "master_pairs_needed": len(ci),
                    "initial_cuts_needed": counts["initial_cuts"], "master_pairs_all": n_all})
    return out


def _point_and_gap(res: Any) -> dict[str, Any]:
    """A result's point (its mechanism's objective, else the feasible point kept at a stop), its certified bound and
    their gap (m); ``vs_monolithic_m`` is filled in by ``run``."""
    point = res.objective_m if res.objective_m is not None else res.diagnostics.get("feasible_objective_m")
    gap = (point - res.bound_m) if (point is not None and res.bound_m is not None) else None
    return {"objective_m": point, "bound_m": res.bound_m, "gap_m": gap, "vs_monolithic_m": None}


def _lp_bd_row(problem: Any, eps: float, eta: float, part: str, lam: float, row_cuts: bool,
               time_limit: float, threads: int = 1) -> dict[str, Any]:
    """One lp-bd run (partitioner, λ, row-sum cuts): a table row (``vs_monolithic_m`` is filled in by ``run``)."""
    t0, c0 = time.perf_counter(), time.process_time()
    res = solve(problem, "lp-bd", {"eps": eps, "eta": eta, "stabilise": lam, "partitioner": part,
                                   "row_cuts": row_cuts, "threads": threads}, time_limit=time_limit, use_cache=False)
    dg = res.diagnostics
    hist = dg.get("history") or [{}]
    return {"K": problem.k, "solver": _label(part, lam, row_cuts, threads), "threads": threads,
            "status": res.status, "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
            **_point_and_gap(res), "master_objective_m": hist[-1].get("master_objective"),
            "iterations": dg.get("iterations"), "boundary": dg.get("boundary_count"),
            "master_pairs": dg.get("master_pairs"),
            "master_rows_added": dg.get("master_pair_rows_added"), "optimality_cuts": dg.get("optimality_cuts"),
            "feasibility_cuts": dg.get("feasibility_cuts"), "row_sum_cuts": dg.get("row_sum_cuts"),
            "master_s": res.timings.get("master_s"), "subproblems_s": res.timings.get("subproblems_s"),
            "message": res.message[:160]}


MONOLITHIC = "monolithic HiGHS (dual simplex)"


def _monolithic_row(problem: Any, eps: float, eta: float, time_limit: float) -> dict[str, Any]:
    """The monolithic HiGHS optimum (dual simplex) of the same neighbour LP: a table row."""
    pi, pj = neighbour_pairs(problem.d, eta)
    t0, c0 = time.perf_counter(), time.process_time()
    _, mono = solve_mdp_lp(problem.p, problem.c, pi, pj, eps * problem.d[pi, pj], method="simplex",
                           time_limit=time_limit)
    return {"K": problem.k, "solver": MONOLITHIC, "status": mono.status,
            "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
            "objective_m": mono.objective, "pairs": len(pi), "rows": mono.size.get("constraints")}


NEIGHBOUR_LP = "lp, neighbour scope (structured engine, component by component)"


def _neighbour_lp_row(problem: Any, eps: float, eta: float, time_limit: float) -> dict[str, Any]:
    """The same neighbour LP by mdpviz's ``lp`` (scope ``neighbours``): a table row with its certified bound."""
    t0, c0 = time.perf_counter(), time.process_time()
    res = solve(problem, "lp", {"eps": eps, "scope": "neighbours", "eta": eta}, time_limit=time_limit,
                use_cache=False)
    return {"K": problem.k, "solver": NEIGHBOUR_LP, "status": res.status,
            "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, **_point_and_gap(res),
            "message": res.message[:160]}


def _label(part: str, lam: float, row_cuts: bool, threads: int = 1) -> str:
    return (f"lp-bd {part} λ = {lam:g}" + (" + row-sum cuts" if row_cuts else "")
            + (f", {threads} threads" if threads > 1 else ""))


def bench_point(point: Point, *, use_cache: bool = False) -> dict[str, Any] | list[dict[str, Any]]:
    """The sweep runner's task: a K's partition rows (a list), its monolithic solve, or one lp-bd config, on the
    problem built from the point's settings."""
    problem, pr, tags = problem_of(point), point.params, dict(point.tags)
    eps, eta, limit = float(pr["eps"]), float(pr["eta"]), float(point.time_limit or 0.0)
    if tags["kind"] == "partition":
        return [{**tags, **row} for row in _partition_rows(problem, eta, eps, int(pr["subsets"]), point.seed)]
    try:
        if tags["kind"] == "monolithic":
            return {**tags, **_monolithic_row(problem, eps, eta, limit)}
        if tags["kind"] == "lp":
            return {**tags, **_neighbour_lp_row(problem, eps, eta, limit)}
        return {**tags, **_lp_bd_row(problem, eps, eta, pr["partitioner"], float(pr["stabilise"]),
                                     bool(pr["row_cuts"]), limit, int(pr.get("threads", 1)))}
    except ParameterError as e:  # an LP refused before it is built (e.g. by the memory guard): a row that says so
        why = "refused (too large)" if "exhaust memory" in str(e) else "refused"
        return {**tags, "K": problem.k, "status": why, "message": str(e)[:160]}


def points(city: str, ks: Sequence[int], eps: float, eta: float, outputs: int, cost: str, seed: int,
           configs: Sequence[tuple[str, float, bool]], time_limit: float,
           threads: Sequence[int] = (1,)) -> list[Point]:
    """The grid: per K, its partitions (25 subsets), the monolithic solve, lp (neighbour scope) and each lp-bd
    config with each number of subproblem threads."""
    out = []
    for k in ks:
        common: dict[str, Any] = {"problem": {"city": city, "k": k, "n_outputs": outputs, "cost": cost},
                                  "seed": seed, "task": f"{__name__}:bench_point", "time_limit": time_limit}
        base = {"eps": eps, "eta": eta}
        out.append(Point(**common, params={**base, "subsets": 25}, tags={"K": k, "kind": "partition"}))
        out.append(Point(**common, params=base, tags={"K": k, "kind": "monolithic", "solver": MONOLITHIC}))
        out.append(Point(**common, params=base, tags={"K": k, "kind": "lp", "solver": NEIGHBOUR_LP}))
        out += [Point(**common, mechanism="lp-bd", params={**base, "partitioner": part, "stabilise": lam,
                                                           "row_cuts": rc, **({"threads": t} if t > 1 else {})},
                      tags={"K": k, "kind": "lp-bd", "solver": _label(part, lam, rc, t)})
                for part, lam, rc in configs for t in threads]
    return out


def run(a: argparse.Namespace) -> tuple[list[dict[str, Any]], list[dict[str, Any]], SweepRun]:
    """Solve lp-bd (each config), a monolithic HiGHS solve and ``lp`` (neighbour scope) of the same neighbour LP for
    each K on the sweep runner (the options of ``main``): (solve rows, partition rows, the runner's summary)."""
    rows, done = grid.run(points(a.city, a.k, a.eps, a.eta, a.outputs, a.cost, a.seed, a.configs, a.time_limit,
                                 a.threads), a)
    parts = [_untagged(r) for r in rows if r.get("kind") == "partition"]
    solves = [_untagged(r) for r in rows if r.get("kind") != "partition"]
    ref = {r["K"]: r.get("objective_m") for r in solves if r.get("solver") == MONOLITHIC}
    for r in solves:  # the monolithic objective of the same K, from the rows (points run independently)
        if "vs_monolithic_m" in r:
            point, mono = r.get("objective_m"), ref.get(r["K"])
            r["vs_monolithic_m"] = (point - mono) if (point is not None and mono is not None) else None
    print(table(parts), flush=True)
    return solves, parts, done


def ordering(solves: Sequence[dict[str, Any]]) -> list[str]:
    """Per K, the solvers that reached a certified optimum ranked by CPU seconds, with Benders' best against the
    fastest solver it decomposes (monolithic dual simplex or ``lp`` with the neighbour scope): the bench's verdict."""
    lines = []
    for k in sorted({r["K"] for r in solves}):
        done = sorted((r for r in solves if r["K"] == k and r.get("status") == "optimal"
                       and isinstance(r.get("cpu_s"), (int, float))), key=lambda r: r["cpu_s"])
        others = ", ".join(f"{r['solver']} ({r.get('status')})" for r in solves
                           if r["K"] == k and r not in done)
        if not done:
            lines.append(f"K = {k:,}: no solver reached a certified optimum ({others}).")
            continue
        ranked = ", ".join(f"{r['solver']} {r['cpu_s']:.3g} s" for r in done) + (
            f"; not certified: {others}" if others else "")
        bd = [r for r in done if str(r["solver"]).startswith("lp-bd")]
        plain = [r for r in done if not str(r["solver"]).startswith("lp-bd")]
        if not bd:
            verdict = "No lp-bd configuration reached a certified optimum"
        elif not plain:
            verdict = "Only lp-bd reached a certified optimum"
        else:
            ratio = bd[0]["cpu_s"] / plain[0]["cpu_s"]
            verdict = (f"Benders' fastest ({bd[0]['solver']}) takes {ratio:.2g}× the CPU time of {plain[0]['solver']}"
                       + (": Benders overtakes it here" if ratio < 1 else ": Benders does not overtake it here"))
            mono = [r for r in plain if r["solver"] == MONOLITHIC]
            if mono and mono[0] is not plain[0]:
                verdict += f", and {bd[0]['cpu_s'] / mono[0]['cpu_s']:.2g}× that of {MONOLITHIC}"
        lines.append(f"K = {k:,}, by CPU time to a certified optimum: {ranked}. {verdict}.")
    return lines


def speedups(solves: Sequence[dict[str, Any]]) -> list[str]:
    """Per K and lp-bd config run with several thread counts: the wall-time speed-up over one thread, and per thread
    (runs that did not certify are left out: their times are limits, not solves)."""
    lines = []
    done = [r for r in solves if str(r.get("solver", "")).startswith("lp-bd") and r.get("status") == "optimal"
            and isinstance(r.get("wall_s"), (int, float))]
    one = {(r["K"], r["solver"]): r for r in done if r.get("threads", 1) == 1}
    for r in done:
        t = int(r.get("threads", 1))
        base = one.get((r["K"], str(r["solver"]).removesuffix(f", {t} threads")))
        if t > 1 and base is not None:
            up = base["wall_s"] / r["wall_s"]
            lines.append(f"K = {r['K']:,}, {base['solver']}: {t} threads take {r['wall_s']:.3g} s wall against "
                         f"{base['wall_s']:.3g} s with one, a speed-up of {up:.2g}× ({up / t:.2g} per thread).")
    return lines


def _untagged(row: dict[str, Any]) -> dict[str, Any]:
    """A row without the grid's ``kind`` tag (the two kinds go to two tables)."""
    return {c: v for c, v in row.items() if c != "kind"}


def _default_configs() -> tuple[str, ...]:
    """Plain Benders with k-m-DV (the paper), the 'stabilised' preset's λ with row-sum cuts, and spectral."""
    return ("kmeans-dv:1:off", f"kmeans-dv:{STABILISED_LAMBDA:g}:on", "spectral:1:off")


def _config(text: str) -> tuple[str, float, bool]:
    """Parse ``partitioner:λ:on|off`` (an argparse type)."""
    parts = text.split(":")
    if len(parts) != 3 or parts[0] not in PARTITIONERS or parts[2] not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"--configs {text!r}: write partitioner:λ:on|off with a partitioner in "
                                         f"{', '.join(PARTITIONERS)}")
    try:
        lam = float(parts[1])
    except ValueError:
        raise argparse.ArgumentTypeError(f"--configs {text!r}: λ must be a number in (0, 1]") from None
    if not 0 < lam <= 1:
        raise argparse.ArgumentTypeError(f"--configs {text!r}: λ = {lam:g} is outside (0, 1]")
    return parts[0], lam, parts[2] == "on"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the Benders benchmark from the command line; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m mdpviz bench benders",
                                 description="lp-bd on the paper's neighbour LP against a monolithic HiGHS solve, "
                                             "with the paper's four partitions (writes docs/benchmarks/benders.*).")
    ap.add_argument("--city", default="rome")
    ap.add_argument("--k", type=int, nargs="+", default=[500, 1000])
    ap.add_argument("--eps", type=float, default=10.0, help="ε, km⁻¹ (default 10, the paper's road setting)")
    ap.add_argument("--eta", type=float, default=2.0, help="neighbour threshold η, km (default 2)")
    ap.add_argument("--outputs", type=int, default=100, help="|Y| (default 100, as the authors' code)")
    ap.add_argument("--cost", default="distance", choices=["distance", "travel"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--configs", nargs="+", default=[_config(c) for c in _default_configs()], type=_config,
                    help="lp-bd runs as partitioner:λ:row-cuts (on/off); default: the paper's plain Benders with "
                         "k-m-DV, ours (the 'stabilised' preset: in-out λ and row-sum cuts, same LP), and spectral "
                         "(BSC)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1],
                    help="subproblem threads of each lp-bd run, e.g. `1 2`: every config with each, and the report "
                         "gives the speed-up per thread (default 1)")
    ap.add_argument("--time-limit", type=float, default=900.0, help="seconds per solve")
    ap.add_argument("--name", default="benders", help=OUT_HELP)
    ap.add_argument("--no-write", action="store_true", help="print only")
    grid.add_options(ap)
    a = ap.parse_args(list(argv) if argv is not None else None)
    # every option is checked before any work: a bad value is one error line, not a report of refused rows
    info = options.check_city(a.city)
    a.k = list(dict.fromkeys(a.k))
    options.check_ks(a.k, info, "--k")
    options.check_param("lp-bd", "eps", a.eps, "--eps")
    options.check_param("lp-bd", "eta", a.eta, "--eta")
    options.check_outputs(a.outputs, a.k, clamped=False)
    options.check_whole(a.seed, "--seed", 0, "the seed")
    for t in a.threads:
        options.check_whole(t, "--threads", 1, "a number of threads")
    a.threads = list(dict.fromkeys(a.threads))
    options.check_time_limit(a.time_limit)
    grid.check_options(a)
    stem = None if a.no_write else out_stem(a.name, "--name", DOCS)
    load0 = load()
    print(f"machine: {machine()}; {load0}")
    solves, parts, done = run(a)
    if not a.no_write:
        assert stem is not None  # set whenever the report is written
        command = "python -m mdpviz bench benders " + " ".join(argv if argv is not None else [])
        notes = (f"Command: `{command.strip()}`. City {a.city} (whole city), |Y| = {a.outputs}, ε = {a.eps} km⁻¹, "
                 f"η = {a.eta} km, 25 subsets, cost {a.cost}, seed {a.seed}, time limit {a.time_limit:g} s per solve. "
                 f"At the start: {load0}; at the end: {load()}: CPU seconds are the fairer "
                 f"measure. {grid.summary(done)}\n\n## Does Benders overtake the solvers it decomposes?\n\n"
                 + "\n".join(f"- {line}" for line in ordering(solves) + speedups(solves)) + "\n\n" + PAPER_TABLE3
                 + "\n\n## Partitions (the analogues of the paper's Tables 1–2)\n\n"
                 + table(parts) + "\n\nboundary = records with a neighbour in another subset; master_comp = "
                 "connected components of the master's own pair graph; master_pairs_needed / _all = master pair "
                 "rows (÷ |Y|) with the initial cuts kept only where not implied, and with Eq. 14 for every pair of "
                 "boundary records (cuts above the coefficient cap are left out in both). In the solve table, "
                 "master_rows_added = the master's pair rows that HiGHS held at the end (added lazily, once broken), "
                 "of master_pairs × |Y|.")
        path = write(solves, stem, f"Benders decomposition (lp-bd) on {a.city}: the paper's neighbour LP", notes,
                     DOCS)
        print(f"wrote {path} and its .csv")
    return 0
