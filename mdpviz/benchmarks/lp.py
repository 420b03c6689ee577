"""``python -m mdpviz bench lp``: the exact LP's engines side by side, one instance per ε and K, in one run.

For each ε and K, one problem (city, metric, cost model, |Y| = min(outputs, K), uniform prior, seed) and each
method on it in its own process, so that its wall time, CPU time and peak memory are its own and a crash or an
exhausted memory cannot end the benchmark: the structured engine (the default of `lp`, asked for the certified gap
``--gap-tol``) and monolithic HiGHS over all ordered pairs (interior point with crossover, then the exact repair),
plus lp-em, lp-bd or em on request. A method is skipped at every larger K once it passes the time limit or is
refused as too large. Every returned Z is checked over all ordered pairs (``metrics.violations``). The speed-up is
monolithic's wall time over the structured engine's on the same instance, where both finished. The grid runs on the
one sweep runner (``benchmarks.grid``), one stage per K so that the skips follow from the smaller K: in process by
default (one solve at a time), on Dask with ``--workers N``; ``--points FILE`` keeps each finished point, and a
rerun resumes from it.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import resource
import sys
import time
from collections.abc import Sequence
from typing import Any

from ..errors import MdpvizError
from ..metrics import violations
from ..solve import solve
from ..sweep import Point, SweepRun, problem_of
from . import grid, options, report
from .options import comma_list
from .report import OUT_HELP

METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "structured": ("lp", {"solver": "structured"}),
    "monolithic": ("lp", {"solver": "monolithic", "pairs": "all", "method": "ipm"}),
    # monolithic over pairs not implied by a chain (exact for the metric; sparse for the road metric)
    "monolithic-exact": ("lp", {"solver": "monolithic", "pairs": "exact", "method": "ipm"}),
    "lp-bd": ("lp-bd", {}),
    "lp-em": ("lp-em", {}),
    "em": ("em", {}),
}
DEFAULT_METHODS = ("structured", "monolithic")
FINISHED = ("optimal", "closed form")  # statuses of a method that is run again at the next K

# issue 28's targets for the structured engine on whole-city Rome with |Y| = 100 (either cost, haversine metric): CPU
# seconds to a certified gap of 1e-4 with no pair violated, by (ε, K); and at ε = 1, K = 100 a speed-up over
# monolithic HiGHS on the same instance (the bench's `speedup_cpu`, a ratio of CPU times)
TARGET_CPU_S: dict[tuple[float, int], float] = {(1.0, 500): 60.0, (1.0, 1000): 300.0, (2.0, 500): 20.0,
                                                 (2.0, 2000): 300.0, (0.5, 200): 60.0, (5.0, 5000): 600.0}
TARGET_SPEEDUP: dict[tuple[float, int], float] = {(1.0, 100): 100.0}
TARGET_GAP = 1e-4


def _params(method: str, eps: float, gap_tol: float) -> dict[str, Any]:
    """The solve parameters of a method at ε (the structured engine also gets its certified gap)."""
    return {"eps": eps, **METHODS[method][1], **({"gap_tol": gap_tol} if method == "structured" else {})}


def _run(problem: Any, method: str, eps: float, gap_tol: float, time_limit: float, out: Any) -> None:
    """One solve and its check, in a child process; sends the table row through ``out``."""
    mech = METHODS[method][0]
    params = _params(method, eps, gap_tol)
    row: dict[str, Any] = {"method": method}
    c0, t0 = time.process_time(), time.perf_counter()
    try:
        res = solve(problem, mech, params, time_limit=time_limit, use_cache=False)
    except MdpvizError as e:
        row.update(status=f"refused: {e}"[:160], wall_s=time.perf_counter() - t0)
        out.send(row)
        return
    row.update(status=res.status, wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0,
               maxrss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, objective_m=res.objective_m,
               bound_m=res.bound_m, iterations=res.diagnostics.get("iterations"), message=res.message[:200],
               phases=" ".join(f"{k}={v:.2f}" for k, v in res.timings.items() if k.endswith("_s")))
    if res.objective_m is None and isinstance(res.diagnostics.get("feasible_objective_m"), (int, float)):
        # a stop: the best feasible, exactly private point it kept (issue 28: every stop returns one), labelled
        row["objective_m"] = res.diagnostics["feasible_objective_m"]
    if row["objective_m"] is not None and res.bound_m:
        row["certified_gap"] = (row["objective_m"] - res.bound_m) / row["objective_m"]
    Z = res.Z if res.Z is not None else res.diagnostics.get("feasible_Z")
    if Z is not None:
        t1 = time.perf_counter()
        v = violations(problem, Z, eps)
        row.update(violated_pairs=v.violated_pairs, checked_pairs=v.checked_pairs, check_s=time.perf_counter() - t1)
    out.send(row)


def run_isolated(problem: Any, method: str, eps: float, gap_tol: float, time_limit: float) -> dict[str, Any]:
    """Run :func:`_run` in a forked process; a process that dies or overruns twice the limit is reported as such."""
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    t0 = time.perf_counter()
    proc = ctx.Process(target=_run, args=(problem, method, eps, gap_tol, time_limit, send))
    proc.start()
    send.close()
    row: dict[str, Any] | None = None
    if recv.poll(2 * time_limit + 120):
        try:
            row = recv.recv()
        except EOFError:
            row = None
    proc.join(10)
    if proc.is_alive():
        proc.kill()
        proc.join()
    if row is None:
        row = {"method": method, "wall_s": time.perf_counter() - t0,
               "status": f"died (exit code {proc.exitcode})" if proc.exitcode else "killed after twice the limit"}
    return row


def bench_point(point: Point, *, use_cache: bool = False) -> dict[str, Any]:
    """The sweep runner's task: one method on one problem (built from the point's settings), solved and checked in
    a forked child process (:func:`run_isolated`)."""
    method, eps = point.tags["method"], float(point.tags["eps"])
    row = run_isolated(problem_of(point), method, eps, float(point.params.get("gap_tol", 0.0)),
                       float(point.time_limit or 0.0))
    return {**point.tags, **row, "load_1min": os.getloadavg()[0]}


def points(a: argparse.Namespace, k: int, eps: float, methods: Sequence[str]) -> list[Point]:
    """The grid of one stage: the methods to run at K and ε (seed ``--seed``, |Y| = min(outputs, K))."""
    problem = {"city": a.city, "k": k, "n_outputs": min(a.outputs, k), "metric": a.metric, "cost": a.cost}
    return [Point(problem, METHODS[m][0], params=_params(m, eps, a.gap_tol), seed=a.seed,
                  task=f"{__name__}:bench_point", time_limit=a.time_limit,
                  tags={"eps": eps, "K": k, "outputs": min(a.outputs, k), "method": m}) for m in methods]


def _show(row: dict[str, Any]) -> str:
    """One finished point as the benchmark prints it."""
    return (f"ε={row.get('eps'):g} K={row.get('K')} {row.get('method')}: {row.get('status')}  wall "
            f"{row.get('wall_s') or 0:.1f} s  cpu {row.get('cpu_s') or 0:.1f} s  objective {row.get('objective_m')}  "
            f"violated {row.get('violated_pairs')}")


def _merged(runs: Sequence[SweepRun]) -> SweepRun:
    """The stages' runs as one, for the notes: their counts summed, the backend of a stage that computed."""
    backend = next((r.backend for r in runs if r.computed), runs[0].backend if runs else "in-process")
    return SweepRun([], sum(r.computed for r in runs), sum(r.reused for r in runs), any(r.stopped for r in runs),
                    backend, sum(r.total for r in runs))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the exact-LP benchmark from the command line; returns the exit code."""
    a = _parser().parse_args(argv)
    a.command = "python -m mdpviz bench lp " + " ".join(sys.argv[1:] if argv is None else argv)
    methods = _checked_methods(a)
    a.stem = report.out_stem(a.out)
    rows = _run_stages(a, methods)
    for eps in a.eps:
        both = [r for r in rows if r["eps"] == eps and r.get("speedup") is not None]
        if both:
            top = max(both, key=lambda r: r["K"])
            print(f"ε = {eps:g}: largest K both finished: {top['K']}; structured {top['wall_s']:.2f} s, "
                  f"{top['speedup']:.0f}× faster than monolithic HiGHS")
    return 0


def _parser() -> argparse.ArgumentParser:
    """The command line of ``python -m mdpviz bench lp``."""
    parser = argparse.ArgumentParser(prog="python -m mdpviz bench lp", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--city", default=None, help="city (default: the default city)")
    parser.add_argument("--ks", default=[100, 200, 500, 1000, 2000],
                        type=comma_list(int, "a whole number", "100,200"),
                        help="comma-separated K values (default 100,200,500,1000,2000)")
    parser.add_argument("--outputs", type=int, default=100, help="|Y| (default 100)")
    parser.add_argument("--eps", default=[0.5, 1.0, 2.0, 5.0, 15.0], type=comma_list(float, "a number", "1,5"),
                        help="comma-separated ε values in km⁻¹ (default 0.5,1,2,5,15: small ε is the hard case)")
    parser.add_argument("--metric", default="haversine", choices=("haversine", "road"), help="mDP metric")
    parser.add_argument("--cost", default="distance", choices=("distance", "travel"),
                        help="utility cost (default distance: the papers' Euclidean loss)")
    parser.add_argument("--seed", type=int, default=0, help="problem seed")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                        help=f"comma-separated subset of {','.join(METHODS)} (default {','.join(DEFAULT_METHODS)})")
    parser.add_argument("--gap-tol", type=float, default=1e-4, help="certified gap of the structured engine")
    parser.add_argument("--time-limit", type=float, default=300.0,
                        help="seconds per run; a method that passes it is skipped for larger K (default 300)")
    parser.add_argument("--monolithic-max-k", type=int, default=150,
                        help="largest K for the monolithic runs (default 150: K = 200 needs 4M rows, ~3 GB)")
    parser.add_argument("--out", default="lp", help=OUT_HELP)
    grid.add_options(parser)
    return parser


def _checked_methods(a: argparse.Namespace) -> list[str]:
    """The methods asked for, after every option is checked (before any work: a bad value is one error line, not a
    report of refused rows)."""
    methods = list(dict.fromkeys(m.strip() for m in a.methods.split(",") if m.strip()))
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise MdpvizError(f"`--methods {a.methods}`: " + (f"unknown method(s) {', '.join(unknown)}" if unknown else
                                                          "no method") + f"; choose from {', '.join(METHODS)}.")
    info = options.check_city(a.city)
    options.check_ks(a.ks, info, "--ks")
    options.check_param("lp", "eps", a.eps, "--eps")
    options.check_outputs(a.outputs, a.ks)
    options.check_whole(a.seed, "--seed", 0, "the seed")
    options.check_param("lp", "gap_tol", a.gap_tol, "--gap-tol")
    options.check_time_limit(a.time_limit)
    options.check_whole(a.monolithic_max_k, "--monolithic-max-k", 0, "the largest K of the monolithic runs")
    grid.check_options(a)
    return methods


def _run_stages(a: argparse.Namespace, methods: list[str]) -> list[dict[str, Any]]:
    """Run the grid one stage per K (every ε at once), writing the report after each; returns every row, by ε
    then K. Which methods run at K follows from the rows at smaller K."""
    ks, epss = a.ks, a.eps
    load0 = os.getloadavg()
    skipped: dict[float, set[str]] = {eps: set() for eps in epss}
    stages: dict[tuple[float, int], list[dict[str, Any]]] = {}
    runs: list[SweepRun] = []
    for k in ks:
        here = {eps: _stage_plan(a, k, eps, methods, skipped[eps]) for eps in epss}
        todo = [p for items in here.values() for p in items if isinstance(p, Point)]
        found: dict[str, dict[str, Any]] = {}
        if todo:
            done_rows, done = grid.run(todo, a, _show)
            runs.append(done)
            found = {p.key: row for p, row in zip(todo, done_rows)}
        for eps, items in here.items():
            stage = [found[p.key] if isinstance(p, Point) else p for p in items]
            skipped[eps] |= {p.tags["method"] for p in items
                             if isinstance(p, Point) and found[p.key].get("status") not in FINISHED}
            _speedups(stage)
            if has_targets(a):
                for r in stage:
                    r["target"] = against_target(r, a.time_limit)
            stages[eps, k] = stage
        _write([r for eps in epss for k2 in ks for r in stages.get((eps, k2), [])], a, load0, _merged(runs))
    return [r for eps in epss for k in ks for r in stages[eps, k]]


def _stage_plan(a: argparse.Namespace, k: int, eps: float, methods: list[str],
                skipped: set[str]) -> list[dict[str, Any] | Point]:
    """What each method does at K and ε: a point to run, or the row saying why it is not run (skipped after a
    failure at a smaller K, or over ``--monolithic-max-k``)."""
    items: list[dict[str, Any] | Point] = []
    for method in methods:
        tags = {"eps": eps, "K": k, "outputs": min(a.outputs, k), "method": method}
        if method in skipped:
            items.append({**tags, "status": "skipped (over the limit or refused at a smaller K)"})
        elif method.startswith("monolithic") and k > a.monolithic_max_k:
            items.append({**tags, "status": f"not run (K > --monolithic-max-k {a.monolithic_max_k})"})
        else:
            items.extend(points(a, k, eps, [method]))
    return items


def _speedups(here: list[dict[str, Any]]) -> None:
    """Monolithic's wall and CPU times over each other optimal run's on the same instance."""
    mono = next((r for r in here if r["method"] == "monolithic" and r.get("status") == "optimal"), None)
    for r in here:
        if mono is not None and r is not mono and r.get("status") == "optimal" and r.get("wall_s"):
            r["speedup"] = mono["wall_s"] / r["wall_s"]
            if r.get("cpu_s"):
                r["speedup_cpu"] = mono["cpu_s"] / r["cpu_s"]


def has_targets(a: argparse.Namespace) -> bool:
    """Whether the bench runs the instances issue 28 sets targets on: Rome's whole city, |Y| = 100, the haversine
    metric, a certified gap of at most ``TARGET_GAP``."""
    rome = a.city is not None and options.check_city(a.city).slug == "rome"
    return rome and a.outputs == 100 and a.metric == "haversine" and a.gap_tol <= TARGET_GAP


def _number(x: Any) -> float | None:
    """A measured value, or None when it is missing or not finite (a NaN read back from a report)."""
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def against_target(r: dict[str, Any], time_limit: float) -> str | None:
    """How a structured run stands against issue 28's target at its ε and K, in a few words; None where there is no
    target. Missed: a run that breaks privacy, ends without the optimum (stalled, a round cap, a solver error, a
    crash) or, at the speed-up's instance, is not optimal; an optimum slower than the target (by how much); a stop
    after the target's CPU time or by a time limit of at least the target (wall seconds, so it says at how much CPU).
    Not decided: a stop under a shorter limit, or an optimum whose privacy was not checked. Met: an optimum within
    the target, or a speed-up of at least the target, in CPU time (``speedup_cpu``; a row read back from a report
    older than that column has the wall-time ``speedup`` only)."""
    key = (float(r["eps"]), int(r["K"]))
    if r.get("method") != "structured" or (key not in TARGET_CPU_S and key not in TARGET_SPEEDUP):
        return None
    cpu, status, violated = _number(r.get("cpu_s")), str(r.get("status", "")), _number(r.get("violated_pairs"))
    if cpu is None:
        return "target: not run" if _not_run(status) else f"target: missed ({status})"
    if violated is not None and violated > 0:
        return "target: missed, pairs violated"
    if status == "optimal" and violated is None:
        return "target: not decided (privacy not checked)"
    if key in TARGET_SPEEDUP:
        need, cpu_ratio, wall_ratio = TARGET_SPEEDUP[key], _number(r.get("speedup_cpu")), _number(r.get("speedup"))
        head = f"target ≥ {need:g}× monolithic: "
        if status != "optimal":
            return head + f"missed ({status})"
        got = cpu_ratio if cpu_ratio is not None else wall_ratio
        if got is None:
            return head + "not measured (no monolithic optimum beside it)"
        said = f"{got:.0f}× CPU, {wall_ratio:.0f}× wall" if cpu_ratio is not None and wall_ratio else f"{got:.0f}×"
        return head + ("met" if got >= need else "missed") + f" ({said})"
    limit = TARGET_CPU_S[key]
    head = f"target ≤ {limit:g} s CPU: "
    if status == "optimal":
        return head + ("met" if cpu <= limit else f"missed, {cpu / limit:.1f}× the target")
    if cpu > limit:
        return head + f"missed, not optimal after {cpu / limit:.1f}× the target"
    if status != "time limit":
        return head + f"missed ({status})"
    if time_limit >= limit:
        return head + f"missed, stopped by its {time_limit:g} s time limit (wall) at {cpu:.3g} s CPU"
    return head + f"not decided (stopped at its {time_limit:g} s time limit, under the target)"


def _not_run(status: str) -> bool:
    """Whether a row's status says the run was not made (skipped after a smaller K, or over a limit)."""
    return status.startswith(("skipped", "not run"))


def _cell(r: dict[str, Any] | None) -> str:
    """One structured run in a few words: its CPU and wall seconds, or how it stopped and its certified gap."""
    if r is None:
        return "–"
    status = str(r.get("status", ""))
    target = f"; {r['target']}" if r.get("target") else ""
    if not isinstance(r.get("cpu_s"), (int, float)):
        return ("not run" if _not_run(status) else status) + target
    took = f"{r['cpu_s']:.3g} s CPU ({r['wall_s']:.3g} s wall)"
    if status == "optimal":
        return took + target
    gap = r.get("certified_gap")
    return f"{status} after {took}" + (f", gap {gap:.1%}" if isinstance(gap, (int, float)) else "") + target


def by_k_and_eps(rows: Sequence[dict[str, Any]]) -> str:
    """The structured engine's runs as a K × ε table (the README's), with monolithic HiGHS's CPU time beside it
    where it ran: the same numbers as the long table, read at a glance."""
    epss = sorted({r["eps"] for r in rows})
    ks = sorted({r["K"] for r in rows})
    run = {(r["eps"], r["K"], r["method"]): r for r in rows}
    lines = ["| K | " + " | ".join(f"ε = {e:g} km⁻¹" for e in epss) + " |", "|---|" + "---|" * len(epss)]
    for k in ks:
        cells = []
        for e in epss:
            cell = _cell(run.get((e, k, "structured")))
            mono = run.get((e, k, "monolithic"))
            if mono is not None and isinstance(mono.get("cpu_s"), (int, float)):
                m = str(mono.get("status"))
                cell += f"; monolithic {mono['cpu_s']:.3g} s CPU" + ("" if m == "optimal" else f" ({m})")
            cells.append(cell)
        lines.append(f"| {k:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


COLUMNS = ("eps", "K", "outputs", "method", "status", "wall_s", "cpu_s", "load_1min", "maxrss_mb", "objective_m",
           "bound_m", "certified_gap", "violated_pairs", "checked_pairs", "check_s", "speedup", "speedup_cpu",
           "iterations", "phases", "target", "message")


def _write(rows: list[dict[str, Any]], a: argparse.Namespace, load0: tuple[float, float, float],
           done: SweepRun) -> None:
    table = [{c: r.get(c) for c in COLUMNS} for r in rows]
    notes = (f"Command: `{a.command.strip()}` (city {a.city or 'default'}, metric {a.metric}, cost {a.cost}, "
             f"|Y| = {a.outputs}, seed {a.seed}, uniform prior; structured engine asked for a certified gap of "
             f"{a.gap_tol:g}; time limit {a.time_limit:g} s per run).\n\n"
             f"Load average (1, 5, 15 min) when the run started: {', '.join(f'{x:.1f}' for x in load0)}; `load_1min` "
             "is the 1-minute load when each run ended. The machine is shared: wall times above CPU times mean other "
             "work competed for the 2 cores. `maxrss_mb` is the peak resident memory of the run's own process "
             "(including HiGHS); a run stopped by its time limit keeps a feasible, exactly private point and a "
             "certified bound (the no-privacy floor before its first LP): its `objective_m` is that point's, not an "
             "optimum; `certified_gap` is (objective − certified lower bound) / objective; violations are "
             "ordered pairs (x, x') breaking ε-mDP for some output, over all pairs, relative tolerance 1e-9; "
             "`speedup` (`speedup_cpu`) is monolithic's wall (CPU) time over this run's on the same instance; "
             "`phases` is where a run's time went. "
             + ("`target` is issue 28's for the structured engine at this ε and K (CPU seconds to the certified gap, "
                "or a speed-up over monolithic in CPU time), met or missed and by how much. "
                if has_targets(a) else "") + grid.summary(done)
             + "\n\n## The structured engine by K and ε\n\n" + by_k_and_eps(rows))
    report.write(table, a.stem, "Exact LP engines (`python -m mdpviz bench lp`)", notes=notes)
