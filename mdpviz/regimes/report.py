"""The committed regime grid: ``cells.csv``, ``README.md`` (what was run, how long, and per method where it beats the
exponential mechanism) and one chart per method (``charts/METHOD.html``: outcomes over ε × region, one panel per
city and cost), written under one folder (``docs/regimes/`` for the committed run)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from ..benchmarks.report import table as markdown_table
from ..paths import atomic_write
from .cells import OUTCOMES, method_map
from .grid import REGIONS_KM, Size

SHIPPED_DIR = Path(__file__).resolve().parents[2] / "docs" / "regimes"
CELLS_FILE = "cells.csv"
POINTS_FILE = "points.jsonl"
COLOURS = {"beats EM": "#1a9850", "reference": "#4575b4", "trails EM": "#fee08b",
           "EM not measured": "#e6f5d0", "claim not measured": "#d9d9d9",
           "degenerate": "#f46d43", "breaks its claim": "#a50026", "no result": "#6b6b6b"}
PLOTLY_JS = "../../reproduce/plotly.min.js"  # the copy docs/reproduce already ships (charts open offline)


def region_label(region: str) -> str:
    """``centre:2`` -> ``2 km disc``; ``whole`` -> ``whole city``."""
    radius = REGIONS_KM.get(region)
    return "whole city" if region == "whole" else f"{radius:g} km disc" if radius else region


def load_cells(folder: Path = SHIPPED_DIR) -> pd.DataFrame | None:
    """The cell table of a written grid (None when there is none)."""
    path = folder / CELLS_FILE
    if not path.is_file():
        return None
    return pd.read_csv(path)


def chart(table: pd.DataFrame, method: str, label: str) -> Any:
    """One method's outcomes over ε (x) × region (y), one panel per (city, cost) at each K, coloured by outcome."""
    # local: plotly only for the charts; `python -m mdpviz --help` and the dashboard's cell table import this module
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots  # local: plotly, as above

    rows = table[table["method"] == method]
    panels = sorted({(c, k, cost) for c, k, cost in zip(rows["city"], rows["K"], rows["cost"], strict=True)})
    cols = min(2, max(len(panels), 1))
    n_rows = -(-len(panels) // cols) if panels else 1
    fig = make_subplots(rows=n_rows, cols=cols, subplot_titles=[f"{c.title()}, K = {k:,}, {cost} cost"
                                                                for c, k, cost in panels])
    codes = {o: i for i, o in enumerate(OUTCOMES)}
    scale = [[i / (len(OUTCOMES) - 1), COLOURS[o]] for i, o in enumerate(OUTCOMES)]
    for n, (city, k, cost) in enumerate(panels):
        grid = method_map(table, method, city=city, K=k, cost=cost)
        z = grid.apply(lambda col: col.map(codes)).to_numpy(dtype=float)
        vs = rows[(rows["city"] == city) & (rows["K"] == k) & (rows["cost"] == cost)].pivot_table(
            index="region", columns="eps", values="vs_em", aggfunc="first").reindex(index=grid.index,
                                                                                  columns=grid.columns)
        # in the cell: the loss against EM's, large enough to read; the outcome is the colour (key below) and
        # both are in the hover
        text = [[f"{v:.2f}×" if pd.notna(v) else "" for v in vrow] for vrow in vs.to_numpy()]
        hover = [[f"{o}, {v:.2f}× EM's loss" if pd.notna(v) and pd.notna(o) else (o if pd.notna(o) else "")
                  for o, v in zip(orow, vrow, strict=True)] for orow, vrow in zip(grid.to_numpy(), vs.to_numpy(),
                                                                                 strict=True)]
        fig.add_trace(go.Heatmap(z=z, x=[f"ε = {e:g}" for e in grid.columns],
                                 y=[region_label(r) for r in grid.index], text=text, texttemplate="%{text}",
                                 textfont={"size": 12}, customdata=hover, colorscale=scale, zmin=0,
                                 zmax=len(OUTCOMES) - 1, showscale=False,
                                 hovertemplate="%{y}, %{x}<br>%{customdata}<extra></extra>"),
                      row=n // cols + 1, col=n % cols + 1)
    shown = [o for o in OUTCOMES if (rows["outcome"] == o).any()]
    for o in shown:  # the colour key: one legend entry per outcome present
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=o, showlegend=True,
                                 marker={"symbol": "square", "size": 12, "color": COLOURS[o]}), row=1, col=1)
    fig.update_layout(title=f"{label}: where it beats EM (in a cell: its loss ÷ EM's; colour: the outcome)",
                      template="plotly_white", height=320 * n_rows + 130,
                      legend={"orientation": "h", "y": -40 / (320 * n_rows), "yanchor": "top", "x": 0},
                      margin={"l": 90, "r": 20, "t": 90, "b": 90})
    return fig


def summary(table: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """Per method: cells by outcome, and the cells where it beats EM (best first by loss against EM)."""
    out = []
    for method, g in table.groupby("method", sort=False):
        counts = g["outcome"].value_counts()
        wins = g[g["outcome"] == "beats EM"].sort_values("vs_em")
        where = "; ".join(f"{r.city} {region_label(r.region)}, K = {r.K}, {r.cost}, ε = {r.eps:g} "
                          f"({r.vs_em:.2f}× EM)" for r in wins.head(3).itertuples())
        out.append({"method": labels.get(str(method), str(method)), "name": method, "cells": len(g),
                    **{o: int(counts.get(o, 0)) for o in OUTCOMES}, "best cells (beats EM)": where or "nowhere"})
    return pd.DataFrame(out)


def readme(table: pd.DataFrame, labels: Mapping[str, str], size: Size, meta: Mapping[str, Any],
           left_out: str) -> str:
    """The grid's README: what was run and how, then the summary per method and links to the charts."""
    s = summary(table, labels)
    never = [r["method"] for _, r in s.iterrows() if r["beats EM"] == 0 and r["name"] != "em"]
    lines = [
        "# Where each mechanism wins: the regime grid", "",
        f"Written by `{meta['command']}` on {meta['date']}; {meta['points']} points ({meta['computed']} computed in "
        f"this run, {meta['reused']} reused), "
        + (f"{meta['wall_label']} {meta['wall_s'] / 60:.1f} min on {meta['workers']} worker(s)"
           if len(meta.get("runs") or ()) < 2 else "made by separate runs (" + "; ".join(
               f"library version {stamp}: {n:,} points finished over {span / 60:.1f} min"
               for stamp, n, span in meta["runs"]) + ")")
        + f" ({meta['backend']}); machine"
        + (" of this report (a point does not record its own)" if meta.get("runs") else "")
        + f": {meta['machine']}; {meta['load']} at the start."
        + (f" The points finished from {meta['span']} (1-minute load {meta['point_load']} as each ended), made by "
           f"library version(s) {', '.join(meta['stamps'])} (`mdpviz.sweep.code_stamp`)." if meta.get("span") else ""),
        "",
        f"Grid (`{size.name}`): {', '.join(c.title() for c in size.cities)}; regions "
        f"{', '.join(region_label(r) for r in size.regions)}; K = {', '.join(f'{k:,}' for k in size.ks)}"
        + (f" (and {', '.join(f'{k:,}' for k in size.large_ks)} for the methods built for it)" if size.large_ks else "")
        + f"; |Y| = min({size.outputs}, K); ε = {', '.join(f'{e:g}' for e in size.eps)} km⁻¹; "
        f"{' and '.join(size.costs)} cost (travel: the discrepancy of road travel to one task node, as in the "
        f"authors' artifact); seeds {', '.join(map(str, size.seeds))}; {size.time_limit:g} s per solve.",
        *([f"Left out: {left_out}.", ""] if left_out else []),
        "Each cell's outcome (`mdpviz/regimes/cells.py`): **beats EM** = keeps its claim (measured), not degenerate, "
        "and a loss at least 1 % below the exponential mechanism's on every seed; **trails EM** = sound but not "
        "lower on every seed; **EM not measured** = sound, but EM has no result on some seed; **degenerate** = "
        "collapsed, uploads erased or not ε-mDP by design; **breaks its claim** = our exact check finds violations "
        "of what it claims; **no result** = time limit, error, or a region too small for K. "
        "Privacy cost = loss − the no-privacy floor (every secret reports its cheapest output).", "",
        "## Per method", "",
        markdown_table(s.drop(columns="name").to_dict("records")), "",
        ("Methods that beat EM in no cell of this grid: " + ", ".join(never) + ".") if never else "", "",
        "## Charts (outcome per ε × region; open offline)", "",
        *[f"- [{labels.get(m, m)}](charts/{m.replace(':', '_')}.html)" for m in table["method"].unique()], "",
        f"Every row: [`{CELLS_FILE}`]({CELLS_FILE}); every measured point: [`{POINTS_FILE}`]({POINTS_FILE}) (a "
        "rerun of the command resumes from it).", ""]
    return "\n".join(lines)


def write(folder: Path, table: pd.DataFrame, labels: Mapping[str, str], size: Size, meta: Mapping[str, Any],
          left_out: str = "") -> Path:
    """Write ``cells.csv``, the charts and ``README.md`` under ``folder``; returns the README's path."""
    folder.mkdir(exist_ok=True)
    atomic_write(folder / CELLS_FILE, lambda p: table.to_csv(p, index=False))
    charts = folder / "charts"
    charts.mkdir(exist_ok=True)
    for method in table["method"].unique():
        fig = chart(table, str(method), labels.get(str(method), str(method)))
        html = fig.to_html(include_plotlyjs=PLOTLY_JS, full_html=True)
        atomic_write(charts / f"{str(method).replace(':', '_')}.html", partial(Path.write_text, data=html))
    text = readme(table, labels, size, meta, left_out)
    atomic_write(folder / "README.md", lambda p: p.write_text(text, encoding="utf-8"))
    return folder / "README.md"


def run_meta(command: str, run: Any, workers: int, wall_s: float, load: str, machine: str) -> dict[str, Any]:
    """The run's facts for the README: the points' library versions (code stamps) and when they finished, too."""
    stamps = sorted({str(r.get("code", "?")) for r in run.records})
    finished = sorted(str(r["finished"]) for r in run.records if r.get("finished"))
    wall_label = "wall time"
    if run.computed == 0 and len(finished) > 1:  # a report of points made earlier: the time they took to make
        first, last = (dt.datetime.fromisoformat(t) for t in (finished[0], finished[-1]))
        wall_s, wall_label = (last - first).total_seconds(), "made over"
    runs = []  # a report of points made earlier: one run per library version, the span its points finished over
    if run.computed == 0:
        for stamp in stamps:
            times = sorted(dt.datetime.fromisoformat(str(r["finished"])) for r in run.records
                           if str(r.get("code", "?")) == stamp and r.get("finished"))
            if times:
                runs.append((stamp, len(times), (times[-1] - times[0]).total_seconds()))
    loads = [float(r["load"]) for r in run.records if isinstance(r.get("load"), (int, float))]
    return {"command": command, "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "points": len(run.records), "computed": run.computed, "reused": run.reused, "wall_s": wall_s,
            "workers": workers, "backend": run.backend, "load": load, "machine": machine, "stamps": stamps,
            "wall_label": wall_label, "runs": runs,
            "span": f"{finished[0]} to {finished[-1]}" if finished else "",
            "point_load": f"{min(loads):.1f}–{max(loads):.1f}" if loads else ""}
