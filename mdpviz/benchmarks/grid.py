"""The benchmarks' side of the one sweep runner (``mdpviz.sweep``): its command-line options, and table rows out
of its records.

Every benchmark builds a grid of ``Point``s whose ``tags`` are the columns that name a row (K, method, mode...) and
whose task returns ``{**point.tags, **measurements}``; ``run`` solves the grid in this process or on Dask, appends
each finished point to ``--points FILE`` at once (a rerun resumes from it) and returns the rows in grid order.
Solves never use the solve cache here: a benchmark measures them.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import MdpvizError
from ..sweep import Point, SweepRun, run_sweep
from .options import check_file, check_folder


def add_options(ap: argparse.ArgumentParser) -> None:
    """``--points``, ``--fresh``, ``--workers`` and ``--scheduler``."""
    g = ap.add_argument_group("sweep runner (mdpviz.sweep)")
    g.add_argument("--points", default=None, metavar="FILE",
                   help="JSON-lines file of finished points: appended as each ends; a rerun resumes from it (its "
                        "folder must exist; unreadable lines are skipped and counted)")
    g.add_argument("--fresh", action="store_true", help="remeasure every point even when --points has it")
    g.add_argument("--workers", type=int, default=0, metavar="N",
                   help="run on a Dask LocalCluster of N processes (default 0: in this process, one solve at a "
                        "time, which keeps the timings comparable)")
    g.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="run on an existing Dask cluster (wins over --workers)")


def check_options(a: argparse.Namespace) -> None:
    """Refuse bad values of ``add_options``' options before any work: an empty ``--points``, one that is a folder,
    read-only or in a missing folder (never created), ``--workers`` < 0, and a ``--scheduler`` that is no address.
    """
    if a.points is not None:
        if not a.points.strip():
            raise MdpvizError("`--points` is empty; give the path of a JSON-lines file (created when missing), or "
                              "leave it out.")
        path = Path(a.points)
        shown = f"`--points {a.points}`"
        if path.is_dir():
            raise MdpvizError(f"{shown} is a folder; give the path of a JSON-lines file in it (created when missing).")
        check_folder(path.parent, shown)
        check_file(path, shown)
    check_workers(a.workers, a.scheduler)


def check_workers(workers: int, scheduler: str | None) -> None:
    """Refuse ``--workers`` < 0 and a ``--scheduler`` that is not an address ``[tcp://]HOST:PORT``."""
    if workers < 0:
        raise MdpvizError(f"`--workers` = {workers} is invalid: give 0 (in this process) or a positive number of "
                          "worker processes.")
    if scheduler is not None:
        match = re.fullmatch(r"(?:[a-z][a-z0-9+.-]*://)?([^\s:/]+|\[[0-9a-fA-F:]+\]):(\d+)", scheduler.strip())
        if not match or not 0 < int(match.group(2)) < 65536:
            raise MdpvizError(f"`--scheduler` = {scheduler!r} is not the address of a Dask scheduler; write "
                              "tcp://HOST:PORT (the port printed by `dask scheduler`).")


def rows_of(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A record's rows; a point whose task failed gives one row of its tags, status ``crashed`` and the reason."""
    if record.get("rows"):
        return [dict(r) for r in record["rows"]]
    return [{**record["point"].get("tags", {}), "status": "crashed", "message": record.get("error", "")}]


def run(points: Sequence[Point], a: argparse.Namespace,
        show: Callable[[dict[str, Any]], str] = str) -> tuple[list[dict[str, Any]], SweepRun]:
    """Run the grid with the options of ``add_options``; print each finished point (``show`` formats a row) and
    return (rows in grid order, the runner's summary)."""
    def echo(record: dict[str, Any], done: int, total: int) -> None:
        for row in rows_of(record):
            print(f"[{done}/{total}] {show(row)}", flush=True)

    done = run_sweep(points, a.points, workers=a.workers, scheduler=a.scheduler, use_cache=False, fresh=a.fresh,
                     on_record=echo)
    if done.skipped:
        print(f"skipped {done.skipped} unreadable line(s) of {a.points} (torn by a crash, or not UTF-8 JSON): their "
              "points count as not finished", flush=True)
    if done.reused:
        print(f"{done.reused} of {done.total} points reused from {a.points}", flush=True)
    return [row for rec in done.records for row in rows_of(rec)], done


def summary(done: SweepRun) -> str:
    """One sentence for a report's notes: the backend, and how many points came from an earlier run."""
    reused = f"; {done.reused} of {done.total} points reused from an earlier run" if done.reused else ""
    return f"Run by the sweep runner ({done.backend}{reused})."
