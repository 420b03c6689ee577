"""Streamlit glue for the Trajectories page (C-mDP, seed 002): cached solves, the trajectory map, charts."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pydeck as pdk
import streamlit as st

from mdpviz.cmdp.compare import compare
from mdpviz.cmdp.pipeline import context_free_problem, prepare
from mdpviz.mechanisms import get_mechanism
from mdpviz.mechanisms.base import Result
from mdpviz.mechanisms.cmdp import data_settings
from mdpviz.problem import Problem, build_problem
from mdpviz.solve import solve

from . import charts, maps

POLYLINE = [37, 99, 235, 200]
CURRENT = [220, 38, 38, 255]
BLANKET = [234, 88, 12, 255]
OLDER = [150, 150, 150, 200]
NEXT = [16, 185, 129, 255]
TASK = [124, 58, 237, 255]
VARIANTS = ("cmdp", "cmdp-markov", "cmdp-truemb")


@st.cache_resource(max_entries=4, show_spinner="Building the stations (secrets = outputs)…")
def problem(city: str, k: int, seed: int) -> Problem:
    """Stations = secrets = outputs, travel cost to the problem's task nodes."""
    return build_problem(city, k, all_outputs=True, seed=seed)


def params_for(mech: str, values: dict[str, Any]) -> dict[str, Any]:
    """The mechanism's defaults overridden by the page's values it knows."""
    defaults = get_mechanism(mech).defaults()
    return {**defaults, **{k: v for k, v in values.items() if k in defaults}}


@st.cache_resource(max_entries=16, show_spinner="Generating trajectories, discovering blankets, solving the C-mDP LP…")
def solve_variant(city: str, k: int, seed: int, mech: str, values_json: str) -> Result:
    """One C-mDP variant (library disk cache underneath)."""
    return solve(problem(city, k, seed), mech, params_for(mech, json.loads(values_json)))


@st.cache_resource(max_entries=16, show_spinner="Solving the context-free LP on the same corpus…")
def lp_baseline(city: str, k: int, seed: int, values_json: str) -> Result:
    """The context-free LP (spec §3.4 no-motion cost) on the corpus of these settings."""
    pb = problem(city, k, seed)
    data = prepare(pb, data_settings(params_for("cmdp", json.loads(values_json))))
    return solve(context_free_problem(data, "no-motion"), "lp", {"eps": json.loads(values_json)["eps"]})


METHODS = 6  # the paper's Fig. 10 ...
REFERENCES = 1  # ... and the LP on the context-averaged cost (``mdpviz.cmdp.compare``)


@st.cache_resource(show_spinner=False)
def _curve_store() -> dict[tuple[str, int, int, str, tuple[float, ...]], pd.DataFrame]:
    """Finished curves, shared by sessions (the solves underneath are in the library's disk cache too)."""
    return {}


def curves_estimate_s(result: Result, lp: Result, n_eps: int) -> float:
    """A rough duration of :func:`curves`: per ε, three C-mDP solves like ``result`` and four context-free
    solves like ``lp`` (EM and ConstOPT are faster, so this leans long)."""
    t_c = float(result.timings.get("total_s", 0.0))
    t_lp = float(lp.timings.get("total_s", 0.0))
    return n_eps * (3 * t_c + (METHODS + REFERENCES - 3) * t_lp)


def cached_curves(city: str, k: int, seed: int, values_json: str, eps_values: tuple[float, ...]
                  ) -> pd.DataFrame | None:
    return _curve_store().get((city, k, seed, values_json, eps_values))


def curves(city: str, k: int, seed: int, values_json: str, eps_values: tuple[float, ...]) -> pd.DataFrame:
    """Loss and runtime against ε for the six methods and the reference (``mdpviz.cmdp.compare``), with a
    progress bar per ε while it runs."""
    key = (city, k, seed, values_json, eps_values)
    store = _curve_store()
    if key not in store:
        pb = problem(city, k, seed)
        params = params_for("cmdp", json.loads(values_json))
        data = prepare(pb, data_settings(params))
        bar = st.progress(0.0, text="starting")

        def progress(phase: str, fraction: float | None) -> None:
            bar.progress(min(max(float(fraction or 0.0), 0.0), 1.0), text=f"solving at {phase}")

        rows = compare(data, params, eps_values, use_cache=True, progress=progress)
        bar.empty()
        store[key] = pd.DataFrame([{k: v for k, v in r.items() if k != "blankets"} for r in rows])
    return store[key]


def trajectory_deck(prob: Problem, roads: pdk.Layer | None, ex: dict[str, Any], height_px: int = 420) -> pdk.Deck:
    """Road base; the vehicle's polyline; current node; blanket nodes numbered by lag; older context grey;
    the heading (x_{t−1} → x_t); the true next node; the task."""
    lon, lat = ex["polyline_lon"], ex["polyline_lat"]
    layers: list[pdk.Layer] = [*([roads] if roads is not None else []),
        pdk.Layer("PathLayer", id="trajectory", data=pd.DataFrame({"path": [np.column_stack([lon, lat]).tolist()],
                                                                   "tip": [f"vehicle {ex['trajectory']}"]}),
                  get_path="path", get_color=POLYLINE, width_min_pixels=3, pickable=True)]
    ctx = pd.DataFrame(ex["context"])
    # ASCII in map labels: deck.gl's text atlas covers ASCII only, so "−" (U+2212) drew as a gap ("t 1")
    ctx["label"] = "t-" + ctx["lag"].astype(str)
    ctx["color"] = [BLANKET if b else OLDER for b in ctx["in_blanket"]]
    ctx["tip"] = [f"x(t−{g}) = station {n}{' (in the blanket)' if b else ' (outside the blanket)'}"
                  for g, n, b in zip(ctx["lag"], ctx["node"], ctx["in_blanket"], strict=True)]
    lag1 = ctx.iloc[0]
    layers += [
        pdk.Layer("LineLayer", id="heading", data=pd.DataFrame({"s": [[lag1.lon, lag1.lat]], "t": [[ex["lon"], ex["lat"]]]}),
                  get_source_position="s", get_target_position="t", get_color=CURRENT, get_width=3, width_min_pixels=3),
        pdk.Layer("LineLayer", id="to-next", data=pd.DataFrame({"s": [[ex["lon"], ex["lat"]]],
                                                                "t": [[ex["next_lon"], ex["next_lat"]]]}),
                  get_source_position="s", get_target_position="t", get_color=NEXT, get_width=2, width_min_pixels=2),
        pdk.Layer("ScatterplotLayer", id="context", data=ctx, get_position=["lon", "lat"], get_fill_color="color",
                  get_radius=1, radius_units="'pixels'", radius_min_pixels=7, radius_max_pixels=7, pickable=True),
        pdk.Layer("TextLayer", id="lags", data=ctx, get_position=["lon", "lat"], get_text="label", get_size=14,
                  get_color=[30, 30, 30, 255], get_pixel_offset=[0, -16]),
        pdk.Layer("ScatterplotLayer", id="points", data=pd.DataFrame({
            "lon": [ex["lon"], ex["next_lon"], ex["task_lon"]], "lat": [ex["lat"], ex["next_lat"], ex["task_lat"]],
            "color": [CURRENT, NEXT, TASK], "r": [9, 7, 9],
            "tip": [f"current x(t) = station {ex['station']}", f"true next x(t+1) = station {ex['next_station']}",
                    f"task (node of station {ex['task']})"]}),
            get_position=["lon", "lat"], get_fill_color="color", get_radius="r", radius_units="'pixels'",
            stroked=True, get_line_color=[255, 255, 255, 255], line_width_min_pixels=2, pickable=True)]
    return maps.CompactDeck(layers=layers, initial_view_state=maps.view_state(prob, 700, height_px),
                            tooltip={"text": "{tip}"})


def legend() -> str:
    return maps.symbol_legend_html([("trajectory", POLYLINE, "line"), ("current x(t)", CURRENT, "dot"),
                                    ("blanket lag", BLANKET, "dot"), ("older context", OLDER, "dot"),
                                    ("true next", NEXT, "dot"), ("task", TASK, "dot")])


def row_deck(prob: Problem, roads: pdk.Layer | None, z: np.ndarray, secret: int, height_px: int = 320) -> pdk.Deck:
    """A perturbation row drawn on the stations (the Explore map's distribution layer)."""
    return maps.deck(prob, roads, maps.MapLayers(Z_row=z, secret=secret, show_outputs=False), height_px=height_px,
                     width_px=420, small=True)


def loss_figure(df: pd.DataFrame, y: str = "loss_m", title: str = "Expected loss (m) against ε") -> go.Figure:
    """One line per method label."""
    fig = go.Figure()
    for label, g in df.groupby("label", sort=False):
        fig.add_trace(go.Scatter(x=g["eps"], y=g[y], mode="lines+markers", name=str(label)))
    fig.update_layout(height=340, margin={"l": 10, "r": 10, "t": 30, "b": 10}, xaxis_title="ε (km⁻¹)",
                      yaxis_title="metres" if y == "loss_m" else "seconds", title={"text": title, "font": {"size": 13}},
                      legend={"orientation": "h", "y": -0.3})
    return fig


def blanket_figure(diag: dict[str, Any]) -> go.Figure:
    """Blanket sizes of the complete slots: predicted, used in the LP (after rare contexts), and the oracle."""
    fig = go.Figure()
    for key, name in (("blanket_hist_predicted", "predicted"), ("blanket_hist", "used in the LP"),
                      ("blanket_hist_oracle", "generator's true order")):
        if key in diag:
            h = diag[key]
            fig.add_trace(go.Bar(x=[int(s) for s in h], y=list(h.values()), name=name))
    fig.update_layout(height=280, barmode="group", margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      xaxis_title="blanket size |B| (lags)", yaxis_title="slots (count)", yaxis_type="log",
                      title={"text": "Blanket sizes (Fig. 9)", "font": {"size": 13}})
    charts.log_axis(fig, "y")
    return fig


def pvalue_figure(groups: list[dict[str, Any]], by: str, alpha: float = 0.05) -> go.Figure:
    """Mean CI-test p-value per speed bin or hour group, one line per hypothesis m, with the α line (Figs. 5–7)."""
    df = pd.DataFrame(groups)
    fig = go.Figure()
    for col in [c for c in df.columns if c.startswith("p") and c[1:].isdigit()]:
        g = df.dropna(subset=[col]).groupby(by)[col].mean()
        if len(g):
            fig.add_trace(go.Scatter(x=g.index, y=g.values, mode="lines+markers",
                                     name=f"H0: x(t) ⫫ x(t−{int(col[1:]) + 1}) | {int(col[1:])} lag(s)"))
    fig.add_hline(y=alpha, line_dash="dash", line_color="gray", annotation_text=f"α = {alpha:g}")
    label = {"speed_bin": "speed bin (index)", "hour_group": "hour group (index)", "region": "region cell"}[by]
    fig.update_layout(height=260, margin={"l": 10, "r": 10, "t": 30, "b": 10}, xaxis_title=label,
                      yaxis_title="mean p-value", title={"text": f"CI-test p-values by {label}", "font": {"size": 13}},
                      legend={"orientation": "h", "y": -0.35})
    return fig
