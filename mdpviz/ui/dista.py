"""DISTA-LP's panel: users and neighbourhoods on a pydeck map, the budget split, communication, audit and Benders.

The figure and deck builders are pure (no streamlit); ``render`` lays them out and is the only streamlit call.
Hook: in the Explore page's mechanism-specific area, ``if result.mechanism == "dista-lp": dista.render(prob,
roads, result)`` (``roads`` from ``cache.road_layer``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pydeck as pdk

from mdpviz.contract import Result
from mdpviz.dista.diagnostics import DistaDiagnostics, dista_diagnostics
from mdpviz.problem import Problem

from . import charts, maps

PALETTE = [(37, 99, 235), (220, 38, 38), (22, 163, 74), (147, 51, 234), (234, 88, 12), (8, 145, 178),
           (190, 24, 93), (101, 163, 13), (79, 70, 229), (202, 138, 4)]
BLOCK_LABEL = {"dx": "A^dx (within N_m)", "dy": "A^dy (N_m → Y_m)", "cy": "A^cy (cost)"}


# the per-user statistics' columns in words (``mdpviz.dista.pipeline``: before tightening "raw", after it the
# blocks the server uses); a column not listed keeps its key
USER_COLUMNS = {"user": "user", "record": "true record (index)", "report": "report (index)",
                "bytes_raw": "raw upload (bytes)", "bytes_surrogate": "surrogate upload (bytes)",
                "bytes_download": "download Z_m (bytes)", "bytes_report": "report (bytes)",
                "fit_loss_km": "surrogate fit loss (km)", "swaps": "permutation swaps",
                "repair_mass_added": "repair mass added", "loss_m": "expected loss (m)",
                "report_cost_m": "report's cost (m)"}


def user_column(key: str) -> str:
    """A per-user statistic's key in words: ``relerr_dx_raw`` → ``relative error, dx block (raw)``.

    >>> [user_column(k) for k in ("bytes_raw", "relerr_cy", "over_dy_raw")]
    ['raw upload (bytes)', 'relative error, cy block', 'overestimated share, dy block (raw)']
    >>> [user_column(k) for k in ("delta_plus_dx_km", "odd_key")]
    ['Δ⁺, dx block (km)', 'odd_key']
    """
    if key in USER_COLUMNS:
        return USER_COLUMNS[key]
    for prefix, words in (("relerr_", "relative error"), ("over_", "overestimated share"), ("delta_plus_", "Δ⁺")):
        if key.startswith(prefix):
            rest = key.removeprefix(prefix)
            unit = " (km)" if rest.endswith("_km") else ""
            rest = rest.removesuffix("_km")
            raw = " (raw)" if rest.endswith("_raw") else ""
            return f"{words}, {rest.removesuffix('_raw')} block{raw}{unit}"
    return key


def per_user_table(result: Result) -> pd.DataFrame:
    """Every user's statistics with readable column names ("raw": the reconstruction before tightening)."""
    df = pd.DataFrame(_diag(result)["per_user"])
    return df.rename(columns={c: user_column(str(c)) for c in df.columns})


def _diag(result: Result) -> DistaDiagnostics:
    if result.mechanism != "dista-lp" or not result.diagnostics:
        raise ValueError("mdpviz.ui.dista draws DISTA-LP results only")
    return dista_diagnostics(result)


def neighbourhood_deck(prob: Problem, roads: pdk.Layer | None, result: Result, *, height_px: int = 480,
                       width_px: int = 800) -> pdk.Deck:
    """Roads; each user's neighbourhood N_m (dots in the user's colour), candidates Y_m (rings), true record
    (large dot) and the sampled report (line from the record to the reported output)."""
    d = _diag(result)
    layers: list[pdk.Layer] = [roads] if roads is not None else []
    hood, cand, rec, rep = d["users_hood"], d["users_cand"], d["users_record"], d["users_report"]
    pts, rings, trues, lines = [], [], [], []
    for m in range(len(rec)):  # one small frame per user
        col = list(PALETTE[m % len(PALETTE)])
        h = hood[m]
        pts.append(pd.DataFrame({"lon": prob.x_lon[h], "lat": prob.x_lat[h], "color": [col + [170]] * len(h),
                                 "tip": [f"user {m}: neighbourhood secret x{i}" for i in h]}))
        y = prob.y_index[cand[m]]
        rings.append(pd.DataFrame({"lon": prob.x_lon[y], "lat": prob.x_lat[y], "color": [col + [230]] * len(y),
                                   "tip": [f"user {m}: candidate output y{k}" for k in cand[m]]}))
        trues.append({"lon": prob.x_lon[rec[m]], "lat": prob.x_lat[rec[m]], "color": col + [255],
                      "tip": f"user {m}: true record x{rec[m]}"})
        ry = prob.y_index[rep[m]]
        lines.append({"s": [prob.x_lon[rec[m]], prob.x_lat[rec[m]]], "t": [prob.x_lon[ry], prob.x_lat[ry]],
                      "color": col + [230], "tip": f"user {m} reported y{rep[m]}"})
    layers += [
        pdk.Layer("ScatterplotLayer", id="dista-hood", data=pd.concat(pts), get_position=["lon", "lat"],
                  get_fill_color="color", get_radius=1, radius_units="'pixels'", radius_min_pixels=3,
                  radius_max_pixels=3, pickable=True),
        pdk.Layer("ScatterplotLayer", id="dista-cand", data=pd.concat(rings), get_position=["lon", "lat"],
                  filled=False, stroked=True, get_line_color="color", line_width_min_pixels=1.5, get_radius=1,
                  radius_units="'pixels'", radius_min_pixels=6, radius_max_pixels=6, pickable=True),
        pdk.Layer("LineLayer", id="dista-report", data=pd.DataFrame(lines), get_source_position="s",
                  get_target_position="t", get_color="color", get_width=2, width_min_pixels=2, pickable=True),
        pdk.Layer("ScatterplotLayer", id="dista-true", data=pd.DataFrame(trues), get_position=["lon", "lat"],
                  get_fill_color="color", stroked=True, get_line_color=[255, 255, 255, 255],
                  line_width_min_pixels=2, get_radius=1, radius_units="'pixels'", radius_min_pixels=8,
                  radius_max_pixels=8, pickable=True),
    ]
    return maps.CompactDeck(layers=layers, initial_view_state=maps.view_state(prob, width_px, height_px),
                            tooltip={"text": "{tip}"})


def budget_figure(result: Result) -> go.Figure:
    """Stacked bar ε_dx + ε_dy + ε_cy + ε_pt = ε (km⁻¹), δ_total in the title."""
    d = _diag(result)
    parts = list(d["budget_split"]["km_inv"].items())
    title = f"Budget split of ε = {d['budget']['eps']:g} (uploads' δ_total = {d['delta_total']:.3g})"
    return charts.stacked_split(parts, title, "km⁻¹")


def communication_figure(result: Result, height: int = 260) -> go.Figure:
    """Bytes per user: raw blocks vs noised surrogate upload, the download of Z_m and the report."""
    d = _diag(result)
    users = [f"user {u['user']}" for u in d["per_user"]]
    fig = go.Figure()
    for key, name, colour in (("bytes_raw", "raw upload (3 blocks)", "#9ca3af"),
                              ("bytes_surrogate", "surrogate upload", "#2563eb"),
                              ("bytes_download", "download Z_m", "#f59e0b"), ("bytes_report", "report", "#16a34a")):
        fig.add_trace(go.Bar(x=users, y=[u[key] for u in d["per_user"]], name=name, marker_color=colour,
                             hovertemplate=f"{name}: %{{y:,.0f}} B<extra></extra>"))
    fig.update_layout(barmode="group", height=height, margin=charts.MARGIN, yaxis_title="bytes per user",
                      title={"text": "Communication per user (8-byte numbers)", "font": {"size": 13}},
                      legend={"orientation": "h", "y": -0.25})
    return fig


def audit_figure(result: Result, height: int = 260) -> go.Figure:
    """Histograms of the audited privacy loss per upload (finite samples), ε_t marked, share infinite in the name."""
    d = _diag(result)
    fig = go.Figure()
    for t, pl in d["audit_pl"].items():
        pl = np.asarray(pl, dtype=float)
        finite = pl[np.isfinite(pl)]
        a = d["audit"][t]
        fig.add_trace(go.Histogram(x=finite, name=f"{BLOCK_LABEL[t]} · ε_t {a['eps_t']:.3g}, "
                                                  f"{a['share_infinite']:.0%} infinite", opacity=0.6, nbinsx=40))
    fig.update_layout(barmode="overlay", height=height, margin=charts.MARGIN, xaxis_title="privacy loss (km⁻¹)",
                      yaxis_title="audit samples", legend={"orientation": "h", "y": -0.35},
                      title={"text": f"PmDP audit ({d['audit_samples']} pairs per upload)", "font": {"size": 13}})
    return fig


def benders_figure(result: Result, height: int = 240) -> go.Figure | None:
    """Benders lower and upper bounds per iteration (None when the direct solver ran)."""
    hist = _diag(result)["benders_history"]
    if not hist:
        return None
    it = np.array([h["iteration"] for h in hist], dtype=float)
    ys = {name: np.array([h[key] for h in hist], dtype=float) for key, name in
          (("lower", "lower bound (master)"), ("upper", "best upper bound"))}
    ys = {k: np.where(np.isfinite(v), v, np.nan) for k, v in ys.items()}  # no upper bound before a feasible w
    return charts.line(it, ys, "iteration", "objective (cost km, reconstructed)", "Benders bounds", height=height)


def render(prob: Problem, roads: pdk.Layer | None, result: Result) -> None:
    """Streamlit layout of the whole panel."""
    import streamlit as st  # local: the figure and deck builders stay free of streamlit (module docstring)

    d = _diag(result)
    if d.get("upload") == "cell":
        _render_cells(d)
        return
    vc, ve = d["violations_claim"], d["violations_enforced"]
    st.markdown("**DISTA-LP: users, neighbourhoods and reports**")
    st.pydeck_chart(neighbourhood_deck(prob, roads, result), height=480)
    st.caption(f"Claim (per constraint inside neighbourhoods, true metric, ε_pt = {d['eps_pt']:.3g} km⁻¹): "
               f"{vc['violated']:,} / {vc['checked']:,} violated · enforced on the tightened distances: "
               f"{ve['violated']:,} / {ve['checked']:,}. Repair γ = {d['gamma_km']:.3g} km, τ = {d['tau_km']:.3g} km.")
    st.plotly_chart(budget_figure(result), key="dista-budget", config={"displayModeBar": False})
    c1, c2 = st.columns(2)
    with c1:
        st.plotly_chart(communication_figure(result), key="dista-bytes", config={"displayModeBar": False})
    with c2:
        st.plotly_chart(audit_figure(result), key="dista-audit", config={"displayModeBar": False})
    fig = benders_figure(result)
    if fig is not None:
        st.plotly_chart(fig, key="dista-benders", config={"displayModeBar": False})
    upper = ", ".join(f"δ_{t} ≤ {v:.3g}" for t, v in d["delta_t_upper_95"].items())
    st.caption(f"Audit with S = {d['audit_samples']} pairs: at 95 % confidence {upper} (Hoeffding). The paper's "
               f"Prop. 2 at δ = 10⁻⁴ gives confidence {d['prop2_confidence']:.3g} (negative = says nothing); it needs "
               f"S ≈ {d['prop2_samples_needed']:,}.")
    st.caption("Per user (raw: the server's reconstruction before tightening by γ)")
    st.dataframe(per_user_table(result), hide_index=True, width="stretch")


def cells_table(diag: DistaDiagnostics) -> pd.DataFrame:
    """The private-cell variant's cells (ours): each cell's LP, how it ended and where its rows come from."""
    rows = diag.get("cells") or []
    return pd.DataFrame([{"cell": c["cell"], "LP status": c["status"], "rows from": c["rows_from"],
                          "candidate outputs |Y_m|": c["outputs"], "LP time (s)": round(c["time_s"], 2)}
                         for c in rows])


def _render_cells(d: DistaDiagnostics) -> None:
    """The panel of the private-cell variant (ours): the budget split, the exact check of the release, the cells."""
    import streamlit as st  # local: the figure and deck builders stay free of streamlit (module docstring)

    check = d["violations_claim"]
    st.markdown("**DISTA-LP with a private cell (ours, not the paper's)**")
    st.caption(f"Budget: the cell is chosen by the exponential mechanism at ε_c = {d['eps_cell']:.3g} km⁻¹, the report "
               f"from that cell's exact LP at ε_pt = {d['eps_pt']:.3g} km⁻¹. The release (cell, report) breaks ε-mDP "
               f"on {check['violated']:,} of {check['checked']:,} ordered pairs of secrets (checked exactly).")
    st.dataframe(cells_table(d), hide_index=True, width="stretch")
