"""The report folder of one reproduce run: Markdown, CSV, an HTML chart and the run's metadata; and reading it back.

Files: ``report.md`` (header with date, machine and load; our numbers beside the paper's with ratio, verdict and
reason), ``comparison.csv`` (the same rows), ``points.csv`` (every measured row), ``chart.html`` (plotly; its
script is one shared ``plotly.min.js`` in the parent folder, so it opens offline), ``meta.json``.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..paths import atomic_write
from .base import COLUMNS, ChartSpec, Comparison, Experiment, paper_info, rows_of
from .common import fmt

SHIPPED_DIR = Path(__file__).resolve().parents[2] / "docs" / "reproduce"  # the committed full runs
PLOTLY_JS = "plotly.min.js"
NOTES_FILE = "NOTES.md"  # hand-written notes on a run, appended to the generated index
TEXT_COLUMNS = ("table", "city", "setting", "method", "metric", "unit", "paper", "verdict", "reason", "paper_ref",
                "hardware", "series", "paper_id")
POINT_COLUMNS = ("problem.city", "problem.k", "problem.region", "mechanism", "tag.label", "tag.mode", "seed", "status",
                 "loss_m", "objective_m", "bound_m", "gap_m", "time_s", "cpu_s", "iterations", "master_pairs",
                 "violated_pairs", "checked_pairs", "violation_ratio",
                 "worst_factor", "degenerate", "message", "error", "cached", "wall_s")


def folder_name(experiment: str, size: str, mode: str) -> str:
    """``NAME`` for the full paper-mode run; ``NAME-authors``, ``NAME-quick``... otherwise."""
    return experiment + (f"-{mode}" if mode != "paper" else "") + (f"-{size}" if size != "full" else "")


MAX_SERIES = 6  # method lines per panel; more are split into panels (by city, then method family)
FAMILIES = ("PAnDA", "AIPO", "LP+C-mDP", "DISTA")  # a method whose name starts so is charted with its own family


def _family(method: str) -> str:
    return next((f for f in FAMILIES if method.startswith(f)), "baselines")


def facets(keys: Sequence[tuple[str, str, str]]) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """Series keys (method, city, extra) in panels of at most MAX_SERIES: all in one panel when they fit, else by
    city and extra (e.g. N), then by method family, then in chunks; each panel with its title."""
    if len(keys) <= MAX_SERIES:
        return [("", list(keys))]
    cities = sorted({c for _, c, _ in keys})
    extras = sorted({e for _, _, e in keys})
    coarse: dict[str, list[tuple[str, str, str]]] = {}
    for key in keys:
        parts = ([key[1]] if len(cities) > 1 else []) + ([key[2]] if len(extras) > 1 else [])
        coarse.setdefault(", ".join(p for p in parts if p), []).append(key)
    out = []
    for title, members in coarse.items():
        fine: dict[str, list[tuple[str, str, str]]] = {}
        for key in members:
            label = title if len(members) <= MAX_SERIES else ", ".join(p for p in (title, _family(key[0])) if p)
            fine.setdefault(label, []).append(key)
        for label, part in fine.items():
            for n in range(0, len(part), MAX_SERIES):
                out.append((label + (f" ({n // MAX_SERIES + 1})" if len(part) > MAX_SERIES else ""),
                            part[n:n + MAX_SERIES]))
    return out


def chart_figure(rows: Sequence[Mapping[str, Any]], spec: ChartSpec, title: str) -> Any:
    """Ours (lines with their ± bars; on a log y axis a lower bar reaching 0 is left out) and the paper's points
    (open markers, dotted) for ``spec.metric``, at most MAX_SERIES methods per panel."""
    # local: plotly only for the charts; the command line and the claims ledger import this module
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots  # local: plotly, as above

    picked = [r for r in rows if r["metric"] == spec.metric and (not spec.table or r["table"] == spec.table)]
    series: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for r in picked:
        extra = r.get("series")
        series.setdefault((str(r["method"]), str(r["city"]), "" if extra != extra or not extra else str(extra)),
                          []).append(r)
    series = {k: v for k, v in series.items()  # a series with no number of ours or the paper's draws nothing
              if any(math.isfinite(_num(r["ours"])) or math.isfinite(_num(r["paper_value"])) for r in v)}
    panels = facets(sorted(series))
    cities = {c for _, c, _ in series}
    ncols = 2 if len(panels) in (2, 4) else min(len(panels), 3)
    nrows = -(-len(panels) // ncols)
    fig = make_subplots(rows=nrows, cols=ncols, shared_yaxes=True, horizontal_spacing=0.05,
                        vertical_spacing=0.42 / nrows if nrows > 1 else 0.0,
                        subplot_titles=[t for t, _ in panels] if len(panels) > 1 else None)
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
               "#17becf", "#393b79", "#637939"]
    names: dict[str, str] = {}  # line name -> colour: one colour and one legend entry per name across panels
    legend_done: set[str] = set()
    for n_panel, (panel, keys) in enumerate(panels):
        row, col = n_panel // ncols + 1, n_panel % ncols + 1
        shown_city = len(cities) > 1 and not any(c in panel for c in cities)
        for key in keys:
            method, city, extra = key
            pts = sorted(series[key], key=lambda r: _num(r["x"]))
            name = method + (f" ({city})" if shown_city else "") + (f", {extra}" if extra and extra not in panel
                                                                     else "")
            color = names.setdefault(name, palette[len(names) % len(palette)])
            xs = [r["x"] for r in pts]
            ours = [_num(r["ours"]) for r in pts]
            first = name not in legend_done
            legend_done.add(name)
            if any(math.isfinite(v) for v in ours):
                pm = [_num(r["ours_pm"]) for r in pts]
                # a log axis cannot show an interval reaching 0: such a lower bar is left out (the upper one stays)
                minus = [0.0 if spec.log_y and e >= v else e for v, e in zip(ours, pm, strict=True)]
                fig.add_trace(go.Scatter(x=xs, y=ours, mode="lines+markers", name=f"{name}: ours",
                                         line={"color": color}, legendgroup=f"{name}: ours", showlegend=first,
                                         error_y={"type": "data", "array": pm, "arrayminus": minus,
                                                  "symmetric": False, "visible": True}), row=row, col=col)
            paper = [_num(r["paper_value"]) for r in pts]
            if any(math.isfinite(v) for v in paper):
                fig.add_trace(go.Scatter(x=xs, y=paper, mode="markers+lines", name=f"{name}: paper",
                                         line={"color": color, "dash": "dot"},
                                         marker={"symbol": "circle-open", "size": 10, "color": color},
                                         legendgroup=f"{name}: paper", showlegend=first,
                                         text=[r["paper"] for r in pts],
                                         hovertemplate="paper %{text}<extra></extra>"), row=row, col=col)
    fig.update_layout(title=title, yaxis_title=spec.y_label, template="plotly_white", legend={"font": {"size": 10}},
                      margin={"l": 60, "r": 20, "t": 70, "b": 50})
    if len(panels) > 1:  # one legend for every panel: a name has one colour wherever it is drawn
        fig.update_layout(height=380 * nrows + 120)
    fig.update_xaxes(title_text=spec.x_label, type="log" if spec.log_x else None)
    if spec.log_y:
        fig.update_yaxes(type="log")
    return fig


SHOWN = ("city", "setting", "method", "metric", "ours", "paper", "ratio ours/paper", "verdict", "reason")


def shown_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Comparison rows as text, as the report and the dashboard show them: ours with ± and the run count, the
    paper's number as printed, both with their unit."""
    out = []
    for r in frame.itertuples(index=False):
        ours = fmt(r.ours) + (f" ± {fmt(r.ours_pm, 3)}" if isinstance(r.ours_pm, float) and r.ours_pm > 0 else "")
        unit = r.unit if isinstance(r.unit, str) else ""
        ours = (ours + f" {unit}" if ours else "—") + (f" (n={r.n})" if r.n and r.n == r.n else "")
        paper = str(r.paper) if isinstance(r.paper, str) and r.paper else "—"
        if paper != "—" and r.paper_value == r.paper_value and unit and not paper.endswith(unit):
            paper += f" {unit}"
        reason = r.reason if isinstance(r.reason, str) else ""
        out.append((r.city, r.setting, r.method, r.metric, ours.strip(), paper, fmt(r.ratio, 3), r.verdict, reason))
    return pd.DataFrame(out, columns=list(SHOWN))


def _cell(value: Any) -> str:
    """A Markdown table cell: pipes escaped, one line."""
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def markdown(exp: Experiment, cmp: Comparison, meta: Mapping[str, Any]) -> str:
    """The report: what was run where, then one table per paper table with ours beside the paper's."""
    info = paper_info(exp.paper)
    out = io.StringIO()
    out.write(f"# {exp.title}\n\n{info['title']}. {exp.summary}\n\n")
    head = [f"command: `{meta['command']}`", f"date: {meta['date']}", f"machine: {meta['machine']}",
            f"load (1, 5, 15 min) at start {meta['load_start']}, at end {meta['load_end']}"]
    if meta.get("points_finished") and meta.get("points_load"):
        head.append(f"points computed {meta['points_finished'][0]} to {meta['points_finished'][1]} (1-min load "
                    f"{meta['points_load'][0]}–{meta['points_load'][1]} as they finished; "
                    f"{meta['points_wall_s']:.0f} s of point time in all)")
    head += [f"run: size {meta['size']}, mode {meta['mode']}, backend {meta['backend']}, {meta['points']} points "
             f"({meta['computed']} computed now, {meta['reused']} reused from the points file, {meta['errors']} "
             f"errors{', stopped early' if meta.get('stopped') else ''}), wall time {meta['wall_s']:.0f} s",
             f"code: mdpviz {meta['version']}" + (f", commit {meta['commit']}" if meta.get("commit") else ""),
             *([f"report rebuilt from the points file {meta['rebuilt']}"] if meta.get("rebuilt") else []),
             *([f"points made by code stamp{'s' if len(meta['codes']) > 1 else ''} "
                + ", ".join(f"`{c}`" for c in meta["codes"]) + " (`mdpviz.sweep.code_stamp()`)"]
               if meta.get("codes") else []),
             *([f"points file: {meta['skipped_lines']} unreadable line(s) skipped (torn by a crash, or not UTF-8 "
                "JSON): their points count as not finished"] if meta.get("skipped_lines") else []),
             f"the paper's numbers: `mdpviz/reproduce/paper_values.json` (from {info['spec']} §7); the paper ran "
             f"{info['hardware']}"]
    out.write("".join(f"- {h}\n" for h in head) + "\n")
    if meta.get("not_run"):
        n = len(meta["not_run"])
        out.write(f"## Not run\n\nThe run stopped before these points of the grid ({n} group{'s' if n > 1 else ''}); "
                  "their rows below have no number of ours. Rerunning the same command resumes them.\n\n"
                  + "".join(f"- {w}\n" for w in meta["not_run"]) + "\n")
    if cmp.notes:
        out.write("## Settings and scope\n\n" + "".join(f"- {n}\n" for n in cmp.notes) + "\n")
    frame = pd.DataFrame(cmp.rows, columns=[*COLUMNS, "paper_id"])
    verdicts = frame["verdict"].value_counts().to_dict() if len(frame) else {}
    out.write("Verdicts: " + ", ".join(f"{v} {n}" for v, n in verdicts.items()) + ". 'agrees': within the paper's "
              "± band or a ratio in [0.8, 1.25]; 'bound holds/fails': against a printed bound (≤, <, >).\n\n")
    if cmp.extra_md:
        out.write(cmp.extra_md + "\n")
    hw = info.get("short", info["hardware"])
    for table, part in frame.groupby("table", sort=False):
        out.write(f"## {table}\n\n")
        out.write(f"| city | setting | method | metric | ours | paper ({hw}) | ratio ours/paper "
                  "| verdict | reason where they differ |\n|---|---|---|---|---|---|---|---|---|\n")
        for cells in shown_rows(part).itertuples(index=False):
            out.write("| " + " | ".join(_cell(c) for c in cells) + " |\n")
        out.write("\n")
    out.write("Chart: `chart.html` (ours as lines, the paper's as open markers). Measured rows: `points.csv`.\n")
    return out.getvalue()


def write_report(exp: Experiment, cmp: Comparison, records: Sequence[Mapping[str, Any]], meta: Mapping[str, Any],
                 folder: Path) -> Path:
    """Write the report folder; return the path of ``report.md``. Its parent folder must exist (nothing above the
    folder named is created)."""
    folder.mkdir(exist_ok=True)
    frame = pd.DataFrame(cmp.rows, columns=[*COLUMNS, "paper_id"])
    atomic_write(folder / "comparison.csv", lambda p: frame.to_csv(p, index=False))
    measured = pd.DataFrame(rows_of(records))
    cols = [c for c in POINT_COLUMNS if c in measured.columns] + sorted(
        c for c in measured.columns if c not in POINT_COLUMNS and (c.startswith(("problem.", "param.", "tag."))
                                                                    or c in ("violation_rate",)))
    atomic_write(folder / "points.csv", lambda p: measured.reindex(columns=cols).to_csv(p, index=False))
    fig = chart_figure(cmp.chart or cmp.rows, exp.chart, exp.title)
    shared = folder.parent / PLOTLY_JS
    if not shared.exists():
        from plotly.offline import get_plotlyjs  # local: plotly only where a report is written (see chart_figure)

        atomic_write(shared, lambda p: p.write_text(get_plotlyjs(), encoding="utf-8"))
    atomic_write(folder / "chart.html",
                 lambda p: p.write_text(fig.to_html(include_plotlyjs=f"../{PLOTLY_JS}", full_html=True),
                                        encoding="utf-8"))
    atomic_write(folder / "meta.json", lambda p: p.write_text(json.dumps(dict(meta), indent=1, default=str)))
    md = markdown(exp, cmp, meta)
    atomic_write(folder / "report.md", lambda p: p.write_text(md, encoding="utf-8"))
    return folder / "report.md"


def load_report(folder: Path) -> dict[str, Any] | None:
    """A written report: ``meta`` (dict), ``comparison`` (DataFrame), ``markdown`` (str); None when absent."""
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        comparison = pd.read_csv(folder / "comparison.csv", dtype={c: str for c in TEXT_COLUMNS})
        md = (folder / "report.md").read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    return {"meta": meta, "comparison": comparison, "markdown": md, "folder": folder}


def write_index(out_dir: Path) -> Path:
    """``out_dir/README.md``: every report folder there, with its date, form, machine load and verdicts; the runs
    that stopped before the end of their grid, with what they left out; then ``out_dir/NOTES.md`` if present."""
    lines = ["# Reproduced tables of the seed papers", "",
             "Written by `python -m mdpviz reproduce` after each run (one folder per experiment, form and mode; "
             "`NAME` alone is the full form in the paper's mode). Each report puts our numbers beside the paper's "
             "(`mdpviz/reproduce/paper_values.json`), with the ratio and a reason where they differ.", "",
             "| report | what | form, mode | date | load at start | points | verdicts |",
             "|---|---|---|---|---|---|---|"]
    partial: list[str] = []
    for folder in sorted(p for p in out_dir.iterdir() if p.is_dir() and not p.name.startswith("_")):
        report = load_report(folder)
        if report is None:
            continue
        meta, frame = report["meta"], report["comparison"]
        verdicts = ", ".join(f"{k} {v}" for k, v in frame["verdict"].value_counts().items())
        missing = int(meta["points"]) - int(meta["computed"]) - int(meta["reused"])
        ran = f"{meta['points'] - missing} of {meta['points']}" if missing else f"{meta['points']}"
        lines.append(f"| [{folder.name}]({folder.name}/report.md) | {_cell(meta['title'])} | {meta['size']}, "
                     f"{meta['mode']} | {meta['date']} | {meta['load_start']} | {ran} "
                     f"({meta['errors']} errors) | {verdicts} |")
        if missing:
            partial.append(f"- **{folder.name}** (`{meta['command']}`): {missing} of {meta['points']} points not run, "
                           f"stopped after {meta['wall_s']:.0f} s: " + "; ".join(meta.get("not_run") or []) + ".")
    if partial:
        lines += ["", "## Runs that did not cover their whole grid", "",
                  "Their reports list the points not run; rerunning the same command resumes them.", "", *partial]
    notes = out_dir / NOTES_FILE
    if notes.exists():
        lines += ["", notes.read_text(encoding="utf-8").rstrip()]
    path = out_dir / "README.md"
    atomic_write(path, lambda p: p.write_text("\n".join(lines) + "\n", encoding="utf-8"))
    return path
