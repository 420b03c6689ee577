"""Run one experiment: its grid through the sweep runner (resuming from the points file), then its report."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..benchmarks.options import check_file, check_folder
from ..benchmarks.report import machine
from ..errors import MdpvizError
from ..sweep import Point, recorded, run_sweep
from . import common as cm
from .base import Comparison
from .ledger import write_claims
from .registry import get_experiment, points_file
from .report import NOTES_FILE, PLOTLY_JS, folder_name, write_index, write_report

DEFAULT_OUT = Path("mdpviz-reproduce")


def _load() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


RUN_FIELDS = ("command", "date", "machine", "load_start", "load_end", "backend", "computed", "reused", "wall_s",
              "stopped")


def _previous_meta(folder: Path) -> dict[str, Any] | None:
    """The meta.json of an earlier report in ``folder`` (None when there is none or it cannot be read)."""
    try:
        data = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


REPORT_FILES = ("comparison.csv", "points.csv", "chart.html", "meta.json", "report.md")


def check_out(out_dir: Path, names: Sequence[str], size: str, mode: str, option: str = "--out") -> None:
    """Refuse, before any work, an output folder the run could not write in full: ``out_dir`` a file or read-only
    (by its mode bits too), or missing in a folder that does not exist (only ``out_dir`` itself is created); or,
    inside it, a points file, report folder or report file of these experiments that is read-only or of the
    wrong kind (a folder where a file goes, a file where a folder goes)."""
    shown = f"`{option} {out_dir}`"
    if out_dir.exists() or out_dir.is_symlink():
        if not out_dir.is_dir():
            raise MdpvizError(f"{shown} is a file, not a folder; give a folder for the reports (created if "
                              "missing, in an existing folder).")
        check_folder(out_dir, shown)
    else:
        check_folder(out_dir.parent, shown)
        return  # a new folder: nothing in it to check
    folders = [out_dir / "_points"] + [out_dir / folder_name(n, size, mode) for n in names]
    for folder in folders:
        if folder.exists() and not folder.is_dir():
            raise MdpvizError(f"{shown}: `{folder}` is a file where the run writes a folder; move it away first.")
        if folder.is_dir():
            check_folder(folder, shown)
    files = [points_file(out_dir, n, size) for n in names] + [out_dir / "README.md", out_dir / "CLAIMS.md",
                                                               out_dir / "CLAIMS.json",
                                                               out_dir / PLOTLY_JS]
    files += [out_dir / folder_name(n, size, mode) / f for n in names for f in REPORT_FILES]
    for path in files:
        check_file(path, shown)
    notes = out_dir / NOTES_FILE
    if notes.exists() and not notes.is_file():
        raise MdpvizError(f"{shown}: `{notes}` is not a file; the index reads it as hand-written notes.")


def not_run(points: list[Point], finished: set[str]) -> list[str]:
    """The grid's points without a record, grouped as 'label, city, K = k, ε = e: n points' (empty when all ran)."""
    counts: Counter[str] = Counter()
    for p in {p.key: p for p in points}.values():
        if p.key not in finished:
            what = [str(p.tags.get("label") or p.mechanism or p.task.rsplit(":", 1)[-1]),
                    str(p.problem.get("city", "")),
                    f"K = {p.problem['k']:,}" if "k" in p.problem else "",
                    f"ε = {p.params['eps']:g}" if isinstance(p.params.get("eps"), (int, float)) else ""]
            counts[", ".join(w for w in what if w)] += 1
    return [f"{what}: {n} point{'s' if n > 1 else ''}" for what, n in counts.items()]


def reproduce(name: str, *, size: str = "quick", mode: str = "paper", out_dir: Path | str = DEFAULT_OUT,
              workers: int = 0, scheduler: str | None = None, use_cache: bool = True, fresh: bool = False,
              report_only: bool = False, command: str = "",
              progress: Callable[[dict[str, Any], int, int], None] | None = None,
              stop: Callable[[], bool] | None = None) -> tuple[Path, Comparison]:
    """Rerun experiment ``name`` and write its report folder under ``out_dir``; return (report.md path, rows).

    ``out_dir`` is created when missing (the CLI checks it first: see :func:`check_out`); a read-only points file,
    report folder or report file in it is refused before any work.

    Finished points are kept in ``out_dir/_points/`` so an interrupted run resumes where it stopped (records of
    other library code are recomputed; ``fresh`` recomputes every point). ``report_only`` computes nothing: the
    report is rebuilt from the points file's records, whatever code made them (``meta['codes']`` names it).
    """
    exp = get_experiment(name)
    exp.check(size, mode)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)  # the CLI has checked and made it (only the folder named)
    check_out(out_dir, [name], size, mode, "out_dir")
    points = exp.points(size, mode)
    load_start, t0 = _load(), time.perf_counter()
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    if report_only:
        run = recorded(points, points_file(out_dir, name, size))
    else:
        run = run_sweep(points, points_file(out_dir, name, size), workers=workers, scheduler=scheduler,
                        use_cache=use_cache, fresh=fresh, stop=stop, on_record=progress)
    if run.skipped:
        print(f"skipped {run.skipped} unreadable line(s) of {points_file(out_dir, name, size)} (torn by a crash, or "
              "not UTF-8 JSON): their points count as not finished", flush=True)
    folder = out_dir / folder_name(name, size, mode)
    previous = _previous_meta(folder) if report_only else None
    with cm.points_machine(previous.get("machine") if previous else None):  # a rebuild names where points were made
        cmp = exp.compare(run.records, size, mode)
    finished = sorted(r["finished"] for r in run.records if r.get("finished"))
    loads = [r["load"] for r in run.records if isinstance(r.get("load"), (int, float))]
    meta = {"experiment": name, "paper": exp.paper, "title": exp.title, "size": size, "mode": mode,
            "command": command or f"python -m mdpviz reproduce {name} --size {size} --mode {mode}",
            "date": date, "machine": machine(), "load_start": load_start, "load_end": _load(),
            "backend": ", ".join(sorted({str(r.get("backend") or run.backend) for r in run.records}))
            or run.backend, "points": len({p.key for p in points}), "computed": run.computed,
            "reused": run.reused, "errors": sum(1 for r in run.records if r.get("error")), "stopped": run.stopped,
            "wall_s": time.perf_counter() - t0, "version": __version__, "commit": _commit(),
            "points_finished": [finished[0], finished[-1]] if finished else [],
            "points_load": [min(loads), max(loads)] if loads else [],
            "points_wall_s": sum(float(r.get("wall_s") or 0.0) for r in run.records),
            "not_run": not_run(points, {r["key"] for r in run.records}), "skipped_lines": run.skipped,
            "codes": sorted({str(r.get("code", "")) for r in run.records})}
    if previous is not None:
        # a rebuilt report keeps the run that computed its points (its command, date, load, wall time, backend)
        meta.update({k: previous[k] for k in RUN_FIELDS if k in previous},
                    rebuilt=f"{date} by `{meta['command']}`")
    path = write_report(exp, cmp, run.records, meta, folder)
    write_index(out_dir)
    if size == "full":  # the ledger judges the full forms
        write_claims(out_dir)
    return path, cmp
