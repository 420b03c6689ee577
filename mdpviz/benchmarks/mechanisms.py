"""``python -m mdpviz bench mechanisms``: status, time, loss and measured privacy of every registered mechanism.

For each K, cost model and ε, one problem on the city (whole city, |Y| = min(outputs, K), seed 0); each mechanism is
solved with its default parameters at the given ε (cache off, ``--time-limit`` seconds per solve), then its Z is
checked: utility loss (m), violated/checked ordered pairs of X in the metric of its claim (``metrics.violations``),
the worst privacy-loss factor and the time of that all-pairs check. Each solve runs in a child process that is
stopped at 2 × the time limit + 30 s, so a mechanism that ignores its time limit costs a bounded time and is
reported as such. The survey is a grid for the one sweep runner (``benchmarks.grid``: in process by default, so
that timings are taken one solve at a time, or on Dask with ``--workers N``); with ``--points FILE`` each finished
point is appended to FILE at once and a rerun resumes from it (``--fresh`` remeasures every point). The paper-scale
survey:

    python -m mdpviz bench mechanisms --city rome --ks 500 --costs distance travel --time-limit 60
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from collections.abc import Sequence
from typing import Any

from ..errors import MdpvizError
from ..mechanisms import get_mechanism, mechanisms
from ..problem import Problem
from ..sweep import Point, problem_of
from . import grid, options, report

NOTE_CHARS = 160  # the Markdown table shortens messages; the CSV keeps them whole


def _row(pb: Problem, name: str, eps: float, time_limit: float) -> dict[str, Any]:
    """One mechanism's measurements (in the child process)."""
    try:
        params = {"eps": eps} if "eps" in {p.name for p in get_mechanism(name).params} else {}
        r, row = report.timed_solve(pb, name, params, time_limit)
    except MdpvizError as e:
        return {"status": "refused", "message": str(e)}
    return {**row, "claim": r.claim, "degenerate": r.degenerate, "message": r.message}


def _child(conn: Any, pb: Problem, name: str, eps: float, time_limit: float) -> None:
    try:
        conn.send(_row(pb, name, eps, time_limit))
    except Exception as e:  # noqa: BLE001 - a crash is a measured outcome of the survey, not a reason to stop it
        conn.send({"status": "crashed", "message": f"{type(e).__name__}: {e}"})
    finally:
        conn.close()


def measure(pb: Problem, name: str, eps: float, time_limit: float) -> dict[str, Any]:
    """Run one mechanism in a child process, stopped at 2 × ``time_limit`` + 30 s."""
    hard = 2 * time_limit + 30.0
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    t0 = time.perf_counter()
    proc = ctx.Process(target=_child, args=(child, pb, name, eps, time_limit), daemon=True)
    proc.start()
    child.close()
    try:
        if parent.poll(hard):
            row: dict[str, Any] = parent.recv()
            return row
        status, message = "killed", f"no result after {hard:.0f} s: the time limit of {time_limit:g} s was not honoured"
    except EOFError:
        status, message = "crashed", f"the solve process died (exit code {proc.exitcode})"
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        parent.close()
    return {"status": status, "wall_s": time.perf_counter() - t0, "message": message}


def bench_point(point: Point, *, use_cache: bool = False) -> dict[str, Any]:
    """The sweep runner's task: one mechanism on one problem (built from the point's settings), measured."""
    return {**point.tags, **measure(problem_of(point), point.mechanism, float(point.tags["eps"]),
                                    float(point.time_limit or 0.0))}


def points(city: str | None, ks: Sequence[int], outputs: int, costs: Sequence[str], eps_values: Sequence[float],
           names: Sequence[str], time_limit: float) -> list[Point]:
    """The survey's grid: K × cost × ε × mechanism, whole city, seed 0."""
    return [Point({"city": city, "k": k, "n_outputs": min(outputs, k), "cost": cost}, name, seed=0,
                  task=f"{__name__}:bench_point", time_limit=time_limit,
                  tags={"K": k, "outputs": min(outputs, k), "cost": cost, "eps": float(eps), "mechanism": name})
            for k in ks for cost in costs for eps in eps_values for name in names]


def _short(row: dict[str, Any]) -> dict[str, Any]:
    """The row for the Markdown table: long texts shortened."""
    out = {k: v for k, v in row.items() if k not in ("claim", "message", "degenerate")}
    note = "; ".join(t for t in (row.get("degenerate", ""), row.get("message", "")) if t)
    out["note (degenerate; message)"] = note if len(note) <= NOTE_CHARS else note[:NOTE_CHARS - 1] + "…"
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the all-mechanisms benchmark from the command line; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m mdpviz bench mechanisms", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--city", default=None, help="city (default: the bundled default)")
    ap.add_argument("--ks", type=int, nargs="+", default=[100, 500], help="K values (default 100 500)")
    ap.add_argument("--outputs", type=int, default=100, help="|Y| (default 100)")
    ap.add_argument("--costs", nargs="+", default=["travel"], choices=("travel", "distance"),
                    help="cost models (default travel)")
    ap.add_argument("--eps", type=float, nargs="+", default=[5.0], help="ε values in km⁻¹ (default 5)")
    ap.add_argument("--only", nargs="+", default=None, help="mechanism names (default: all registered)")
    ap.add_argument("--time-limit", type=float, default=300.0, help="seconds per solve (default 300)")
    ap.add_argument("--out", default=None, help=report.OUT_HELP + " (default mechanisms[_CITY])")
    grid.add_options(ap)
    a = ap.parse_args(argv)
    names = list(dict.fromkeys(a.only or [m.name for m in mechanisms()]))
    for name in names:
        try:
            get_mechanism(name)  # an unknown name fails before any work
        except MdpvizError as e:
            raise MdpvizError(f"`--only`: {e}") from None
    # every option is checked before any work: a bad value is one error line, not a report of refused rows
    info = options.check_city(a.city)
    options.check_ks(a.ks, info, "--ks")
    options.check_outputs(a.outputs, a.ks)
    options.check_param("em", "eps", a.eps, "--eps")
    options.check_time_limit(a.time_limit)
    grid.check_options(a)
    stem = report.out_stem(a.out if a.out is not None else
                           ("mechanisms" if a.city is None else f"mechanisms_{info.slug}"))
    t_start = time.perf_counter()
    survey = points(a.city, list(dict.fromkeys(a.ks)), a.outputs, list(dict.fromkeys(a.costs)),
                    list(dict.fromkeys(a.eps)), names, a.time_limit)
    rows, done = grid.run(survey, a, lambda row: str(_short(row)))
    city = info.slug
    command = (f"python -m mdpviz bench mechanisms --city {city} --ks {' '.join(map(str, a.ks))} --outputs "
               f"{a.outputs} --costs {' '.join(a.costs)} --eps {' '.join(f'{e:g}' for e in a.eps)} --time-limit "
               f"{a.time_limit:g}" + (f" --only {' '.join(a.only)}" if a.only else "")
               + (f" --out {a.out}" if a.out else ""))
    notes = (f"`{command}` (whole survey {time.perf_counter() - t_start:.0f} s). {grid.summary(done)} Whole city, "
             "seed 0, default "
             "parameters. violated/checked: "
             "ordered pairs of X breaking ε-mDP for some output in the claim's metric (`metrics.violations`, "
             "relative tolerance 1e-9, no absolute slack); worst_factor: max ln(Z[x,y]/Z[x',y]) / (ε·d), 1 = at the "
             "budget. Mechanisms with a narrower claim (lp-ca: representatives; PAnDA: (ε, δ)-PmDP; aipo-r: none; "
             "C-mDP: augmented secrets; DISTA-LP: neighbourhoods) are expected to show violations here; their own "
             "checks are in their diagnostics and in tests/test_paper_scale.py. Statuses: `refused` = the library "
             "declined the problem with a message; `killed` = no result by 2 × time limit + 30 s.")
    path = report.write(rows, stem, f"Every mechanism on {city}", notes=notes, table_rows=[_short(r) for r in rows])
    print(f"wrote {path}")
    return 0
