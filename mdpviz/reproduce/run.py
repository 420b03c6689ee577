"""Run one experiment: its grid through the sweep runner (resuming from the points file), then its report."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import __version__
from ..benchmarks.report import machine
from ..sweep import Point, run_sweep
from .base import Comparison
from .registry import get_experiment
from .report import folder_name, write_index, write_report

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


def points_file(out_dir: Path, experiment: str, size: str) -> Path:
    """Where an experiment's finished points live (shared by experiments with the same grid)."""
    exp = get_experiment(experiment)
    return out_dir / "_points" / f"{exp.grid_name or exp.name}-{size}.jsonl"


def not_run(points: list[Point], finished: set[str]) -> list[str]:
    """The grid's points without a record, grouped as 'label, city, K = k, ε = e: n points' (empty when all ran)."""
    counts: Counter[str] = Counter()
    for p in {p.key: p for p in points}.values():
        if p.key not in finished:
            what = [str(p.tags.get("label") or p.mechanism or p.task.rsplit(":", 1)[-1]), str(p.problem.get("city", "")),
                    f"K = {p.problem['k']:,}" if "k" in p.problem else "",
                    f"ε = {p.params['eps']:g}" if isinstance(p.params.get("eps"), (int, float)) else ""]
            counts[", ".join(w for w in what if w)] += 1
    return [f"{what}: {n} point{'s' if n > 1 else ''}" for what, n in counts.items()]


def reproduce(name: str, *, size: str = "quick", mode: str = "paper", out_dir: Path | str = DEFAULT_OUT,
              workers: int = 0, scheduler: str | None = None, use_cache: bool = True, fresh: bool = False,
              command: str = "",
              progress: Callable[[dict[str, Any], int, int], None] | None = None,
              stop: Callable[[], bool] | None = None) -> tuple[Path, Comparison]:
    """Rerun experiment ``name`` and write its report folder under ``out_dir``; return (report.md path, rows).

    Finished points are kept in ``out_dir/_points/`` so an interrupted run resumes where it stopped (records of
    other library code are recomputed; ``fresh`` recomputes every point).
    """
    exp = get_experiment(name)
    exp.check(size, mode)
    out_dir = Path(out_dir)
    points = exp.points(size, mode)
    load_start, t0 = _load(), time.perf_counter()
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    run = run_sweep(points, points_file(out_dir, name, size), workers=workers, scheduler=scheduler,
                    use_cache=use_cache, fresh=fresh, stop=stop, on_record=progress)
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
            "not_run": not_run(points, {r["key"] for r in run.records})}
    path = write_report(exp, cmp, run.records, meta, out_dir / folder_name(name, size, mode))
    write_index(out_dir)
    return path, cmp
