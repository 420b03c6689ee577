"""Shared output of the benchmarks: a printed table, and CSV + Markdown files stamped with date and machine."""

from __future__ import annotations

import datetime as dt
import io
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import metrics
from ..mechanisms.base import Result
from ..paths import atomic_write
from ..problem import Problem
from ..solve import solve

DOCS = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"


def timed_solve(pb: Problem, mechanism: str, params: dict[str, Any],
                time_limit: float) -> tuple[Result, dict[str, Any]]:
    """Solve without the cache and measure: status, wall time, loss (m), violations in the claim's metric and the
    time of that all-pairs check. Returns the Result too, for mechanism-specific columns."""
    t0 = time.perf_counter()
    r = solve(pb, mechanism, params, time_limit=time_limit, use_cache=False)
    row: dict[str, Any] = {"status": r.status, "wall_s": time.perf_counter() - t0}
    if r.Z is not None:
        t0 = time.perf_counter()
        v = metrics.violations(pb, r.Z, r.eps, metric=r.check_metric)
        row.update(loss_m=metrics.utility_loss_m(pb, r.Z), violated_pairs=v.violated_pairs,
                   checked_pairs=v.checked_pairs, worst_factor=v.worst_factor, check_s=time.perf_counter() - t0,
                   claim_metric=r.check_metric or pb.metric)
    return r, row


def load() -> str:
    """The 1, 5 and 15 minute load averages (as ``uptime`` prints them): the machine is shared."""
    try:
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def machine() -> str:
    """One line naming the machine: CPU model, cores, memory, Python."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{cpu}, {os.cpu_count()} cores{mem}, Python {platform.python_version()}"


def _fmt(value: Any) -> str:
    """A cell: counts with thousands separators, other numbers to 4 significant digits, missing as –."""
    if isinstance(value, float):
        if value != value:  # NaN: the column has no value for this row
            return "–"
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:.4g}"
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return f"{int(value):,}"
    return "" if value is None else str(value)


def table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of the rows (columns in first-seen order)."""
    frame = pd.DataFrame(rows)
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def write(rows: list[dict[str, Any]], name: str, title: str, notes: str = "", folder: Path | None = None,
          table_rows: list[dict[str, Any]] | None = None) -> Path:
    """Write ``<folder>/<name>.csv`` and ``.md`` (default folder docs/benchmarks); return the Markdown path.

    ``table_rows`` (optional) is what the Markdown table shows, e.g. with long texts shortened; the CSV has ``rows``.
    The header records date, machine and the load average when the run ended.
    """
    folder = folder or DOCS
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    md = (f"# {title}\n\n{stamp} on {machine()}; {load()} at the end of the run.\n\n"
          f"{table(table_rows if table_rows is not None else rows)}\n" + (f"\n{notes}\n" if notes else ""))
    csv = io.StringIO()
    pd.DataFrame(rows).to_csv(csv, index=False)
    atomic_write(folder / f"{name}.csv", lambda p: p.write_text(csv.getvalue()))
    atomic_write(folder / f"{name}.md", lambda p: p.write_text(md))
    return folder / f"{name}.md"
