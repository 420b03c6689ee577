"""The tabs below a result's map: diagnostics, time and LP size, downloads and the problem's settings."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from mdpviz.export import result_bytes
from mdpviz.mechanisms import Result
from mdpviz.metrics import Evaluation
from mdpviz.problem import Problem

from . import cache, charts, continuous
from .diagnostics import diagnostics_panel, specific_panel
from .metrics_panel import lp_size_label


@st.fragment
def details_tabs(prob: Problem, result: Result, ev: Evaluation | None, key: str) -> None:
    """Tabs below the map: diagnostics, time and LP size, downloads, the problem.

    Only the open tab runs and is sent (``on_change="rerun"``, inside a fragment so that switching tabs reruns
    only this part): a hidden tab's charts would otherwise load the chart library into every page view.
    """
    t_diag, t_time, t_dl, t_prob = st.tabs(["Diagnostics", "Time & LP size", "Downloads", "Problem"],
                                           key=f"details-tab-{key}", on_change="rerun")
    if t_diag.open:
        with t_diag:
            specific_panel(prob, result)
            if result.ok:
                continuous.diagnostics(prob, result, cache.result_key(prob, result))
            diagnostics_panel(result, prob.k)
    if t_time.open:
        _time_tab(t_time, result, key)
    if t_dl.open:
        with t_dl:
            downloads(prob, result, ev, key)
    if t_prob.open:
        with t_prob:
            problem_table(prob)


def _time_tab(t_time: Any, result: Result, key: str) -> None:
    with t_time:
        c1, c2 = st.columns([3, 2])
        with c1:
            if result.timings:
                st.plotly_chart(charts.timing_bar(result.timings), key=f"timing-{key}",
                                config={"displayModeBar": False})
        with c2:
            if result.lp_size:
                st.markdown("**LP size**")
                st.dataframe(pd.DataFrame([{"quantity": lp_size_label(k), "count": f"{v:,}"}
                                           for k, v in result.lp_size.items()]), hide_index=True, width="stretch")
            else:
                st.caption("No LP was solved (closed form).")
            if result.objective_m is not None:
                st.caption(f"Solver objective: {result.objective_m:.2f} m")
            if result.bound_m is not None:
                st.caption(f"Certified lower bound: {result.bound_m:.2f} m")


def downloads(prob: Problem, result: Result, ev: Evaluation | None, key: str) -> None:
    """Z as CSV and NPZ, metrics and metadata as JSON, secrets and outputs as GeoJSON (built only when clicked)."""
    stem = f"mdpviz-{prob.city or 'points'}-K{prob.k}-{result.mechanism}"
    ref = cache.reference(prob, result.eps) if result.ok else None  # the exact LP's optimum, when in the cache
    c1, c2, c3, c4 = st.columns(4)
    c1.download_button("Z (CSV)", data=lambda: result_bytes(".csv", prob, result, ev, ref), file_name=f"{stem}.csv",
                       mime="text/csv", on_click="ignore", key=f"dl-csv-{key}", icon=":material/download:")
    c2.download_button("Z + coordinates (NPZ)", data=lambda: result_bytes(".npz", prob, result, ev, ref),
                       file_name=f"{stem}.npz", mime="application/octet-stream", on_click="ignore",
                       key=f"dl-npz-{key}", icon=":material/download:")
    c3.download_button("Metrics (JSON)", data=lambda: result_bytes(".json", prob, result, ev, ref),
                       file_name=f"{stem}.json", mime="application/json", on_click="ignore",
                       key=f"dl-json-{key}", icon=":material/download:")
    if result.ok:
        c4.download_button("Map layers (GeoJSON)", data=lambda: result_bytes(".geojson", prob, result, ev, ref),
                           file_name=f"{stem}.geojson", mime="application/geo+json", on_click="ignore",
                           key=f"dl-geojson-{key}", icon=":material/download:")
    st.caption("Every file first says what the result is: its verdict, whether it is degenerate, its claim and "
               "the violations measured against it (CSV: as `#` lines above the header). CSV: one row per secret "
               "(lat, lon, then Pr of each output). JSON: settings, metrics, timings, diagnostics and Z. GeoJSON "
               "(for QGIS): secrets with their expected loss (m), most likely report and pairs over ε·d, and "
               "outputs; `python -m mdpviz solve --out r.gpkg` writes the same as a GeoPackage.")


def problem_table(prob: Problem) -> None:
    """The problem's settings and sizes (city, K, |Y|, metric, prior, cost...) as a table."""
    s = prob.summary()
    rows = [("city", s["city"]), ("K = |X| (secrets)", s["k"]), ("|Y| (outputs)", s["n_outputs"]),
            ("mDP metric d", s["metric"]), ("prior", s["prior"]), ("cost model", s["cost"]),
            ("task nodes", s["n_tasks"]), ("seed", s["seed"]),
            ("d range (km)", f"{s['d_min_km']:.3f} – {s['d_max_km']:.3f}"),
            ("mean cost (m)", f"{s['cost_mean_m']:.0f}"), ("build time (s)", s["build_s"]),
            ("fingerprint", s["fingerprint"])]
    st.dataframe(pd.DataFrame([{"setting": a, "value": str(b)} for a, b in rows]), hide_index=True, width="stretch")
