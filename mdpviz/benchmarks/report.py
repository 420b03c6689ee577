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
from ..contract import Result
from ..errors import MdpvizError
from ..paths import atomic_write, read_only
from ..problem import Problem
from ..solve import solve
from .options import check_file, check_folder

DOCS = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"


def timed_solve(pb: Problem, mechanism: str, params: dict[str, Any],
                time_limit: float) -> tuple[Result, dict[str, Any]]:
    """Solve without the cache and measure: status, wall time, loss, the no-privacy floor and the privacy cost (m),
    violations in the claim's metric and the time of that all-pairs check. Returns the Result too, for
    mechanism-specific columns."""
    t0 = time.perf_counter()
    r = solve(pb, mechanism, params, time_limit=time_limit, use_cache=False)
    row: dict[str, Any] = {"status": r.status, "wall_s": time.perf_counter() - t0}
    if r.Z is not None:
        t0 = time.perf_counter()
        v = metrics.violations(pb, r.Z, r.eps, metric=r.check_metric)
        loss, floor = metrics.utility_loss_m(pb, r.Z), metrics.floor_m(pb)
        row.update(loss_m=loss, floor_m=floor, privacy_cost_m=loss - floor, violated_pairs=v.violated_pairs,
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


OUT_SUFFIXES = (".csv", ".md")
OUT_HELP = ("a name: NAME.csv and NAME.md in docs/benchmarks; or a path with a /: PATH.csv and PATH.md in an "
            "existing folder (`..` is refused, no folder is created)")


def out_stem(out: str, option: str = "--out", folder: Path | None = None) -> Path:
    """Where a benchmark writes its report, checked before any work: the path of its files without the suffix.

    A *name* (no ``/``) is a file name in ``folder`` (default docs/benchmarks): ``NAME.csv`` and ``NAME.md`` there.
    A *path* (with a ``/``) is relative to the current folder or absolute: ``PATH.csv`` and ``PATH.md``, in a folder
    that must exist (it is never created). A trailing ``.csv`` or ``.md`` is dropped. Refused: an empty value,
    ``..`` (a name never leaves its folder; a path says where it goes without it), control characters, a missing
    or read-only folder, and a target that is a folder or a read-only file.
    """
    folder = DOCS if folder is None else Path(folder)
    shown = f"`{option} {out}`"
    text = out.strip()
    for suffix in OUT_SUFFIXES:
        if text.lower().endswith(suffix):
            text = text[:-len(suffix)]
    if not text or text.endswith("/") or Path(text).name in ("", "."):
        raise MdpvizError(f"`{option}` = {out!r} gives no file name; give a name (written to {folder}/NAME.csv and "
                          ".md) or a path ending in a file name.")
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise MdpvizError(f"`{option}` = {out!r} holds control characters; give a plain name.")
    if ".." in Path(text).parts:
        raise MdpvizError(f"{shown}: `..` is not allowed: a name is written in {folder} (NAME.csv and NAME.md) and "
                          "never outside it; to write elsewhere give a path to an existing folder without `..`.")
    if "/" in text:
        stem = Path(text)
        check_folder(stem.parent, shown)
        if stem.is_dir():
            raise MdpvizError(f"{shown} is a folder; give a file name in it, e.g. {option} {text.rstrip('/')}/NAME "
                              "(NAME.csv and NAME.md are written).")
    else:
        stem = folder / text
        if folder.exists() or not folder.parent.is_dir():
            check_folder(folder, shown)
        elif read_only(folder.parent):  # the default folder is created at the first write, in an existing parent
            raise MdpvizError(f"{shown}: the folder `{folder.parent}` is read-only; `{folder.name}` cannot be "
                              "created in it.")
    for suffix in OUT_SUFFIXES:
        check_file(stem.with_name(stem.name + suffix), shown)
    return stem


def write(rows: list[dict[str, Any]], name: str | Path, title: str, notes: str = "", folder: Path | None = None,
          table_rows: list[dict[str, Any]] | None = None) -> Path:
    """Write ``<name>.csv`` and ``.md`` (a name in ``folder``, default docs/benchmarks, or a stem from
    :func:`out_stem`); return the Markdown path.

    ``table_rows`` (optional) is what the Markdown table shows, e.g. with long texts shortened; the CSV has ``rows``.
    The header records date, machine and the load average when the run ended. Only the default folder itself is
    created when missing (never its parents, nor the folder of a path).
    """
    stem = name if isinstance(name, Path) else out_stem(name, "--out", folder)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    md = (f"# {title}\n\n{stamp} on {machine()}; {load()} at the end of the run.\n\n"
          f"{table(table_rows if table_rows is not None else rows)}\n" + (f"\n{notes}\n" if notes else ""))
    csv = io.StringIO()
    pd.DataFrame(rows).to_csv(csv, index=False)
    try:
        if not stem.parent.exists():
            stem.parent.mkdir()
            print(f"created the folder {stem.parent}")
        atomic_write(stem.with_name(stem.name + ".csv"), lambda p: p.write_text(csv.getvalue()), make_parents=False)
        atomic_write(stem.with_name(stem.name + ".md"), lambda p: p.write_text(md), make_parents=False)
    except OSError as e:  # changed since the check at the start (full disk, permissions)
        raise MdpvizError(f"Could not write `{stem}.csv`/`.md` ({type(e).__name__}: {e}).") from e
    return stem.with_name(stem.name + ".md")
