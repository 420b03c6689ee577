"""``python -m mdpviz regimes``: run the grid on the sweep runner (resuming from its points file), then write the
cell table, the charts and the README."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..benchmarks.grid import check_workers
from ..benchmarks.report import load, machine
from ..errors import MdpvizError
from ..paths import read_only
from ..sweep import recorded, run_sweep
from . import report
from .cells import cell_table
from .grid import COMMITTED_LEFT_OUT, SIZES, method_labels, methods, regime_points

DEFAULT_OUT = "mdpviz-regimes"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's options."""
    p.add_argument("--size", choices=tuple(SIZES), default="committed",
                   help="tiny (CI, seconds), committed (what docs/regimes holds: hours on 2 workers) or full (the "
                        "whole specified grid: for a cluster)")
    p.add_argument("--tiny", dest="size", action="store_const", const="tiny", help="same as --size tiny")
    p.add_argument("--only", nargs="+", metavar="METHOD", default=(), help="run only these methods (`--list`)")
    p.add_argument("--k", dest="ks", nargs="+", type=int, metavar="K", default=(),
                   help="run only these values of K (the report still reads every point of the grid in the file)")
    p.add_argument("--list", action="store_true", help="list the methods (mechanisms and presets) and exit")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"folder of the results (default ./{DEFAULT_OUT}; the "
                   "committed run uses docs/regimes); its points.jsonl is resumed; its parent must exist")
    p.add_argument("--workers", type=int, default=0, help="a Dask LocalCluster of N worker processes")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="an existing Dask cluster")
    p.add_argument("--fresh", action="store_true", help="recompute every point (default: resume)")
    p.add_argument("--report-only", action="store_true",
                   help="solve nothing: rebuild the cell table, charts and README from the points file (whatever "
                        "version of the library made each point; the README lists them)")
    p.add_argument("--retry-limits", action="store_true",
                   help="recompute the points that stopped at their time limit (e.g. measured on a busy machine)")
    p.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help="stop starting points this long after the start; a rerun resumes")


def check(a: argparse.Namespace) -> Path:
    """Refuse bad options before any work; returns the output folder."""
    check_workers(a.workers, a.scheduler)
    if a.budget is not None and not a.budget > 0:
        raise MdpvizError(f"`--budget` = {a.budget:g} s is invalid: give a positive number of seconds.")
    if not a.out.strip():
        raise MdpvizError("`--out` is empty; give a folder (created if its parent exists).")
    out = Path(a.out)
    if out.exists() and not out.is_dir():
        raise MdpvizError(f"`--out {a.out}` is a file; give a folder.")
    if not out.parent.is_dir():
        raise MdpvizError(f"`--out {a.out}`: the folder `{out.parent}` does not exist (it is not created for you).")
    if read_only(out if out.exists() else out.parent):
        raise MdpvizError(f"`--out {a.out}` is read-only; nothing is written there.")
    regime_points(a.size, a.only)  # unknown methods fail here
    return out


def _hit_its_limit(record: dict[str, Any]) -> bool:
    """A record whose solve stopped at its time limit."""
    return any(row.get("status") == "time limit" for row in record.get("rows") or [])


def main(a: argparse.Namespace, say: Callable[[str], Any] = print) -> int:
    """Run the command; ``say`` prints progress lines."""
    if a.list:
        for m in methods():
            say(f"{m.name:<28} {m.label}")
        return 0
    out = check(a)
    points = regime_points(a.size, a.only, a.ks)
    size = SIZES[a.size]
    results = out / report.POINTS_FILE
    start_load = load()
    t0 = time.perf_counter()
    stop = None if a.budget is None else (lambda: time.perf_counter() - t0 > a.budget)

    def progress(rec: dict[str, Any], done: int, total: int) -> None:
        tags, row = rec["point"]["tags"], (rec.get("rows") or [{}])[0]
        what = rec.get("error") or row.get("status", "")
        say(f"  [{done}/{total}] {tags['method']} {tags['city']} {tags['region']} K={tags['K']} {tags['cost']} "
            f"ε={tags['eps']:g} seed {rec['point']['seed']}: {str(what)[:70]} ({rec.get('wall_s', 0):.1f} s; "
            f"{time.perf_counter() - t0:.0f} s elapsed)")

    out.mkdir(exist_ok=True)
    say(f"regimes: {len(points)} points ({size.name}); results in {results}")
    if a.report_only:
        run = recorded(points, results)
    else:
        run = run_sweep(points, results, workers=a.workers, scheduler=a.scheduler, use_cache=False, fresh=a.fresh,
                        stop=stop, on_record=progress, redo=_hit_its_limit if a.retry_limits else None)
    wall = time.perf_counter() - t0
    # `--only` and `--k` narrow what is solved, never the report: it reads every point of the grid in the file
    everything = recorded(regime_points(a.size), results).records if a.only or a.ks else run.records
    table = cell_table(everything)
    command = f"python -m mdpviz regimes --size {a.size} --out {a.out}" + (
        " --retry-limits" if a.retry_limits else "") + (" --report-only" if a.report_only else "") + (
        f" --workers {a.workers}" if a.workers else "") + (f" --only {' '.join(a.only)}" if a.only else "") + (
        f" --k {' '.join(map(str, a.ks))}" if a.ks else "")
    # a report of points made earlier: as many workers as made them (distinct processes)
    workers = a.workers or (len({r.get("worker") for r in run.records if r.get("worker")}) if a.report_only else 1)
    meta = report.run_meta(command, run, workers, wall, start_load, machine())
    left = COMMITTED_LEFT_OUT if size.name == "committed" else ""
    if run.stopped:
        left = (left + "; " if left else "") + (f"{run.total - len(run.records)} points not run yet (a rerun of the "
                                                "command resumes them)")
    path = report.write(out, table, method_labels(), size, meta, left)
    say(f"wrote {path} ({len(table)} cells × methods; {run.computed} computed, {run.reused} reused"
        + (f", {run.skipped} unreadable lines skipped" if run.skipped else "") + f"; {wall:.0f} s)")
    return 0
