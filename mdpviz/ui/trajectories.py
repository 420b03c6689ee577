"""Streamlit glue for the Trajectories page (C-mDP, seed 002): controls from the schemas of the registry's ``cmdp``
family, cached solves (the comparison itself is ``mdpviz.cmdp_comparison``), the trajectory map, charts."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pydeck as pdk
import streamlit as st

from mdpviz import cmdp_comparison as compare
from mdpviz.cities import list_cities
from mdpviz.contract import Preset, Result
from mdpviz.mechanisms import Mechanism, Param, get_mechanism, mechanisms
from mdpviz.problem import Problem, build_problem
from mdpviz.solve import solve

from . import charts, controls, maps

POLYLINE = [37, 99, 235, 200]
CURRENT = [220, 38, 38, 255]
BLANKET = [234, 88, 12, 255]
OLDER = [150, 150, 150, 200]
NEXT = [16, 185, 129, 255]
TASK = [124, 58, 237, 255]
FAMILY = "cmdp"  # the registry family of the page's mechanisms
SHOWN = ("eps", "vehicles", "dependence", "memory")  # parameters shown above the "Advanced" expander
STATIONS = ("seed",)  # parameters shown with the stations (the seed also draws them)
K_LOW = 8  # fewest stations the page offers


def variants() -> list[Mechanism]:
    """The registered C-mDP variants (family ``cmdp``), in registry order: the page's mechanism choices."""
    return [m for m in mechanisms() if m.family == FAMILY]


def page_params() -> list[Param]:
    """Every parameter of any variant, once each (the variants share the corpus and LP parameters)."""
    seen: dict[str, Param] = {}
    for m in variants():
        for p in m.params:
            seen.setdefault(p.name, p)
    return list(seen.values())


def param_key(name: str) -> str:
    """Session key of a page parameter: one value per name, shared by the variants (so is the corpus)."""
    return f"traj.{name}"


def sweep_preset(mech: Mechanism) -> Preset | None:
    """The variant's first preset with an ε sweep (the paper's Fig. 10 grid), or None."""
    return next((pr for pr in mech.presets if pr.eps), None)


@st.cache_resource(max_entries=4, show_spinner="Building the stations (secrets = outputs)…")
def problem(city: str, k: int, seed: int, region: str = "whole") -> Problem:
    """Stations = secrets = outputs, travel cost to the problem's task nodes, drawn from ``region``."""
    return build_problem(city, k, all_outputs=True, seed=seed, region=None if region == "whole" else region)


def params_for(mech: str, values: dict[str, Any]) -> dict[str, Any]:
    """The mechanism's defaults overridden by the page's values it knows."""
    defaults = get_mechanism(mech).defaults()
    return {**defaults, **{k: v for k, v in values.items() if k in defaults}}


@st.cache_resource(max_entries=16, show_spinner="Generating trajectories, discovering blankets, solving the C-mDP LP…")
def solve_variant(city: str, k: int, seed: int, region: str, mech: str, values_json: str) -> Result:
    """One C-mDP variant (library disk cache underneath)."""
    return solve(problem(city, k, seed, region), mech, params_for(mech, json.loads(values_json)))


@st.cache_resource(max_entries=16, show_spinner="Solving the best context-invariant LP on the same corpus…")
def lp_baseline(city: str, k: int, seed: int, region: str, values_json: str) -> tuple[Result, float | None]:
    """The reference of the library's comparison (``mdpviz.cmdp_comparison.best_context_free``): the context-free
    LP on the context-averaged cost of this corpus, and its loss under the true model (m)."""
    return compare.best_context_free(problem(city, k, seed, region), params_for("cmdp", json.loads(values_json)))


def param_controls(mech: Mechanism) -> None:
    """The variant's parameters from its schema (call inside the form): ε and the corpus's main settings, then
    the others in an "Advanced" expander; values are kept per name, shared by the variants."""
    ss = st.session_state
    for p in page_params():
        ss.setdefault(param_key(p.name), p.default)
    own = [p for p in mech.params if p.name not in STATIONS]
    shown = [p for p in own if p.name in SHOWN]
    advanced = [p for p in own if p.name not in SHOWN]
    st.markdown(f"**{mech.label}: parameters**")
    for p in shown:
        controls.param_widget(mech, p, key=param_key(p.name))
    if advanced:
        with st.expander(f"Advanced parameters ({len(advanced)})"):
            for p in advanced:
                controls.param_widget(mech, p, key=param_key(p.name))


def station_controls(mech: Mechanism) -> None:
    """City, region and number of stations (up to the variant's ``max_k``), and the seed (inside the form)."""
    ss = st.session_state
    cities = [c.slug for c in list_cities()]
    if ss.get("traj_city") not in cities:
        ss["traj_city"] = cities[0]
    st.markdown("**Stations**")
    st.selectbox("City", cities, key="traj_city", format_func=controls.city_label)
    options = controls.region_options(ss["traj_city"], str(ss.get("traj_region") or "whole"))
    if ss.get("traj_region") not in options:
        ss["traj_region"] = "whole"
    st.selectbox("Where the stations come from", list(options), key="traj_region",
                 format_func=controls.label_of(options),
                 help="The whole city, or a disc around its centre: C-mDP's neighbour threshold η is a few km, so "
                      "stations close together give it pairs to constrain.")
    hi = int(mech.max_k or 2)
    lo = min(K_LOW, hi)
    preset = sweep_preset(mech)
    default = int(preset.problem_dict().get("k", hi)) if preset is not None else hi
    ss["traj_k"] = int(min(max(int(ss.get("traj_k", default)), lo), hi))
    st.slider("Stations K (count)", lo, hi, key="traj_k",
              help=f"Stations = secrets = outputs: {lo} to {hi} (the variant's limit).")
    for p in mech.params:
        if p.name in STATIONS:
            st.number_input(p.display, int(p.low or 0), int(p.high or 0), step=1, key=param_key(p.name),
                            help=f"{p.help}; also draws the stations. Range {p.range_text()}.")


def apply_preset(preset: Preset) -> None:
    """Button callback: put a preset's parameters and stations (city, K, region) into the page's controls."""
    ss = st.session_state
    for name, value in preset.params:
        ss[param_key(name)] = value
    where = preset.problem_dict()
    if "city" in where:
        ss["traj_city"] = where["city"]
    if "k" in where:
        ss["traj_k"] = int(where["k"])
    ss["traj_region"] = str(where.get("region", "whole"))


def preset_button(mech: Mechanism) -> None:
    """A button per preset of the variant that sweeps ε (the paper's; ours, labelled so), applying its stations
    and parameters."""
    for preset in (pr for pr in mech.presets if pr.eps):
        st.button(preset.label, on_click=apply_preset, args=(preset,), help=preset.help, width="stretch",
                  icon=":material/science:", key=f"traj_preset_{preset.name}")


METHODS = 6  # the paper's Fig. 10 ...
REFERENCES = 1  # ... and the LP on the context-averaged cost (``mdpviz.cmdp_comparison``)


@st.cache_resource(show_spinner=False)
def _curve_store() -> dict[tuple[Any, ...], pd.DataFrame]:
    """Finished curves, shared by sessions (the solves underneath are in the library's disk cache too)."""
    return {}


def curves_estimate_s(result: Result, lp: Result, n_eps: int) -> float:
    """A rough duration of :func:`curves`: per ε, three C-mDP solves like ``result`` and four context-free
    solves like ``lp`` (EM and ConstOPT are faster, so this leans long)."""
    t_c = float(result.timings.get("total_s", 0.0))
    t_lp = float(lp.timings.get("total_s", 0.0))
    return n_eps * (3 * t_c + (METHODS + REFERENCES - 3) * t_lp)


def cached_curves(city: str, k: int, seed: int, region: str, values_json: str, eps_values: tuple[float, ...]
                  ) -> pd.DataFrame | None:
    """The curves of these settings when already computed in this server, else None."""
    return _curve_store().get((city, k, seed, region, values_json, eps_values))


def curves(city: str, k: int, seed: int, region: str, values_json: str, eps_values: tuple[float, ...]
           ) -> pd.DataFrame:
    """Loss and runtime against ε for the six methods and the reference (``mdpviz.cmdp_comparison``), with a
    progress bar per ε while it runs."""
    key = (city, k, seed, region, values_json, eps_values)
    store = _curve_store()
    if key not in store:
        bar = st.progress(0.0, text="starting")

        def progress(phase: str, fraction: float | None) -> None:
            """Move the progress bar to the finished fraction of the ε values."""
            bar.progress(min(max(float(fraction or 0.0), 0.0), 1.0), text=f"solving at {phase}")

        rows = compare.compare_problem(problem(city, k, seed, region), params_for("cmdp", json.loads(values_json)),
                                       eps_values, progress=progress)
        bar.empty()
        store[key] = pd.DataFrame([{k: v for k, v in r.items() if k != "blankets"} for r in rows])
    return store[key]


# the curves' columns as the page shows them (``mdpviz.cmdp_comparison`` rows); other columns keep their words
CURVE_COLUMNS = {"eps": "ε (km⁻¹)", "label": "method", "status": "status", "loss_m": "expected loss (m)",
                 "floor_m": "no-privacy floor (m)", "privacy_cost_m": "privacy cost (m)",
                 "heldout_loss_m": "held-out loss (m)", "objective_m": "LP objective (m)", "wall_s": "wall time (s)",
                 "lp_solve_s": "LP solve (s)", "secrets": "secrets (count)", "lp_vars": "LP variables",
                 "lp_rows": "LP constraints", "enforced_viol": "violations of its claim",
                 "location_viol": "violations, location only", "vs_lp_pct": "vs best LP (%)",
                 "vs_no_motion_lp_pct": "vs no-motion LP (%)"}


def curves_table(df: pd.DataFrame) -> pd.DataFrame:
    """The curves' rows with readable column names and "–" where a method has no value (never None or NaN);
    the registry's ``method`` name is left out (the label says it)."""
    shown = df.drop(columns=[c for c in ("method",) if c in df]).rename(columns=CURVE_COLUMNS)
    for col in shown.columns:  # metres and percentages to 0.1, seconds to the ms: more digits are noise
        digits = 1 if str(col).endswith(("(m)", "(%)")) else 3 if str(col).endswith("(s)") else None
        if digits is not None and pd.api.types.is_float_dtype(shown[col]):
            shown[col] = shown[col].round(digits)
    return shown.astype(object).where(shown.notna(), "–")


CLASSIFIER_COLUMNS = {"n": "slots (count)", "bce": "cross-entropy", "accuracy": "accuracy",
                      "precision": "precision", "recall": "recall", "f1": "F1",
                      "neg_precision": "precision (negatives)", "neg_recall": "recall (negatives)",
                      "neg_f1": "F1 (negatives)"}
GROUP_COLUMNS = {"hour_group": "hour group", "speed_bin": "speed bin", "region": "region cell", "n": "slots (count)",
                 "tested": "tested", "blanket": "blanket size"}


def classifier_table(clf: dict[str, Any]) -> pd.DataFrame:
    """The blanket classifier's scores per split (rows), columns in words (``mdpviz.cmdp.classifier``)."""
    return pd.DataFrame(clf).T.rename(columns=CLASSIFIER_COLUMNS)


def groups_table(groups: list[dict[str, Any]]) -> pd.DataFrame:
    """Algorithm 1's groups, columns in words: ``p2`` is the CI test's p-value with 2 lags; "–" where a group has
    no value (not tested), never None or NaN.

    >>> list(groups_table([{"hour_group": 0, "speed_bin": 1, "region": 0, "n": 9, "tested": False,
    ...                     "blanket": None, "p1": float("nan")}]).iloc[0])
    [0, 1, 0, 9, False, '–', '–']
    """
    df = pd.DataFrame(groups)
    names = {c: GROUP_COLUMNS.get(c, f"p-value, {c[1:]} lag(s)" if c[:1] == "p" and c[1:].isdigit() else c)
             for c in df.columns}
    df = df.rename(columns=names)
    return df.astype(object).where(df.notna(), "–")


def violations_text(check: dict[str, Any]) -> str:
    """``{"violated": 352, "checked": 3552}`` as ``352 / 3,552``."""
    return f"{int(check['violated']):,} / {int(check['checked']):,}"


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
        pdk.Layer("LineLayer", id="heading",
                  data=pd.DataFrame({"s": [[lag1.lon, lag1.lat]], "t": [[ex["lon"], ex["lat"]]]}),
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
    """The trajectory map's symbol legend (HTML)."""
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
