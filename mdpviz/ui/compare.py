"""The Compare page's views: small maps of the same secret under each mechanism, a metrics table, bar charts."""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from mdpviz.explain import format_m, format_s
from mdpviz.mechanisms import Mechanism, Result
from mdpviz.metrics import Evaluation
from mdpviz.problem import Problem
from mdpviz.verdict import against_claim, verdict

from . import cache, charts, maps, state
from .explore import clamp_secret

MAX_MECHS = 4


def metrics_row(mech: Mechanism, result: Result | None, ev: Evaluation | None,
                error: str | None = None) -> dict[str, Any]:
    """One table row per mechanism (NaN where there is no result), with its privacy verdict in a few words."""
    label = mech.label if result is None else mech.label_for(result.params)
    row: dict[str, Any] = {"mechanism": mech.name, "label": label}
    empty = {"utility_loss_m": np.nan, "claim_violation_ratio": np.nan, "violated / claimed": "",
             "violation_ratio": np.nan, "violated / all pairs": "", "adversary_error_m": np.nan}
    if result is None:
        return {**row, **empty, "status": "error" if error else "not solved", "privacy promise": error or "",
                "solve_s": np.nan}
    total = result.timings.get("total_s", sum(result.timings.values()))
    promise = verdict(result, ev, label=mech.label).short
    if ev is None:
        return {**row, **empty, "status": result.status, "privacy promise": promise, "solve_s": total}
    v = ev["violations"]
    # the verdict's own measure (its claim: all pairs, or the narrower pairs it protects), then all pairs: a
    # mechanism that claims fewer pairs can hold its claim and still break many of the others
    claim = against_claim(result, ev)
    return {**row, "status": result.status, "privacy promise": promise, "utility_loss_m": ev["utility_loss_m"],
            "privacy_cost_m": ev.get("privacy_cost_m", np.nan),
            "claim_violation_ratio": claim.violated / claim.checked if claim and claim.checked else np.nan,
            "violated / claimed": f"{claim.violated:,} / {claim.checked:,} {claim.unit}" if claim else "not measured",
            "violation_ratio": v["ratio"],
            "violated / all pairs": f"{v['violated_pairs']:,} / {v['checked_pairs']:,}",
            "adversary_error_m": ev["adversary_error_m"], "solve_s": total}


def summary(rows: list[dict[str, Any]]) -> str:
    """The comparison in plain words: which mechanism loses least among those that keep their promise.

    >>> summary([{"label": "EM", "privacy promise": "holds on all pairs", "utility_loss_m": 357.0},
    ...          {"label": "LP", "privacy promise": "holds on all pairs", "utility_loss_m": 251.0}])
    '**LP** loses least among those that keep their promise: 251 m against 357 m for EM.'
    """
    kept = [r for r in rows if str(r.get("privacy promise", "")).startswith("holds")
            and np.isfinite(r.get("utility_loss_m", np.nan))]
    if len(kept) < 2:
        return ""
    kept.sort(key=lambda r: r["utility_loss_m"])
    others = ", ".join(f"{format_m(r['utility_loss_m'])} for {r['label']}" for r in kept[1:])
    return (f"**{kept[0]['label']}** loses least among those that keep their promise: "
            f"{format_m(kept[0]['utility_loss_m'])} against {others}.")


def kept_points_choice(prob: Problem, items: list[tuple[Mechanism, Result | None]]
                       ) -> list[tuple[Mechanism, Result | None]]:
    """Solves that stopped without a mechanism may have kept a feasible point (``Result.kept_point``): one toggle,
    off by default, shows those points in their place, each labelled as not optimal by its status and verdict."""
    kept = {mech.name: point for mech, r in items
            if r is not None and (point := r.kept_point(prob)) is not None}
    if not kept:
        return items
    names = ", ".join(mech.label for mech, _ in items if mech.name in kept)
    shown = st.toggle(f"Show the feasible points the stopped solves kept ({names}): not the optimum",
                      key="compare_show_kept",
                      help="A solve that stopped before proving a mechanism optimal kept the best feasible point "
                           "it had found. Its privacy is measured like any mechanism's, against the same claim; its "
                           "row says why it stopped.")
    return [(mech, kept.get(mech.name, r) if shown else r) for mech, r in items]


def _on_click(map_key: str) -> None:
    event = st.session_state.get(map_key)
    hit = maps.clicked_secret(event.get("selection") if event else None)
    if hit is not None:
        st.session_state["secret"] = hit[1]
        st.session_state["map_generation"] = st.session_state.get("map_generation", 0) + 1


@st.fragment
def maps_view(prob: Problem, items: list[tuple[Mechanism, Result | None]],
              evs: dict[str, Evaluation | None] | None = None) -> None:
    """The same selected secret under every mechanism, one map each, two a row (≤ 4 maps: well under 8 WebGL
    charts)."""
    clamp_secret(prob)
    st.columns([1, 3])[0].number_input("Selected secret x (index)", step=1, key="secret",
                                       help=f"0 to {prob.k - 1}. Or click a point on any map.")
    i = int(st.session_state["secret"])
    per_row = 2 if len(items) > 1 else 1  # two maps a row: each about 400 px wide, readable at 1280×800
    cols = [c for start in range(0, len(items), per_row) for c in st.columns(per_row, gap="medium")][:len(items)]
    roads = cache.road_layer(prob)
    zmax = max((float(r.Z[i].max()) for _, r in items if r is not None and r.Z is not None), default=1.0)
    for col, (mech, result) in zip(cols, items, strict=True):
        with col:
            # a fixed-height title keeps the maps aligned when labels wrap differently
            st.html(f'<div style="min-height:2.8em;font-weight:600;line-height:1.3">{html.escape(mech.label)}</div>')
            layers = maps.MapLayers(secret=i, show_outputs=False)
            if result is not None and result.Z is not None:
                key = cache.result_key(prob, result)
                loss, expected = cache.per_secret(prob, result, key)
                layers.Z_row = result.Z[i]
                layers.expected = (float(expected[i, 0]), float(expected[i, 1]))
                note = (f"x{i}: expected loss {format_m(float(loss[i]))}, top report Pr = {result.Z[i].max():.3g}")
            else:
                note = "no mechanism (not solved or no feasible result)"
            if result is not None:
                v = verdict(result, (evs or {}).get(mech.name), label=mech.label)
                st.caption(f"Privacy promise: **{v.short}**")
            map_key = f"compare_map_{mech.name}_{st.session_state.get('map_generation', 0)}"
            width_px = int(820 / per_row)  # the main column at 1280×800, shared by the maps of a row
            st.pydeck_chart(maps.deck(prob, roads, layers, height_px=340, width_px=width_px, small=True),
                            on_select=lambda k=map_key: _on_click(k), selection_mode="single-object", key=map_key,
                            height=340, alt=f"{mech.label}: distribution of secret x{i}")
            st.caption(note)
    st.html(maps.symbol_legend_html([("selected secret", maps.TRUE, "dot"), ("expected report", maps.EXPECTED, "dot"),
                                     ("secrets X", maps.SECRET, "dot")])
            + maps.legend_html(f"Pr[report y | true x{i}] (probability; same scale on every map)", "prob", "0",
                               f"{zmax:.3g}"))
    state.write_url("compare")


def _num(value: Any, fmt: str) -> str:
    return "–" if value is None or (isinstance(value, float) and not np.isfinite(value)) else fmt.format(value)


def shown_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The table as read on the page: labels, words and units, "–" where there is nothing (never None or NaN)."""
    return pd.DataFrame({
        "mechanism": [r["label"] for r in rows],
        "privacy promise": [r["status"] if r["status"] in ("error", "not solved") else r["privacy promise"]
                            for r in rows],
        "privacy cost": [_num(r.get("privacy_cost_m"), "{:,.1f} m") for r in rows],
        "utility loss": [_num(r["utility_loss_m"], "{:,.1f} m") for r in rows],
        "adversary error": [_num(r["adversary_error_m"], "{:,.1f} m") for r in rows],
        "violated / claimed": [r["violated / claimed"] or "–" for r in rows],
        "violated / all pairs": [r["violated / all pairs"] or "–" for r in rows],
        "time": ["–" if not np.isfinite(r["solve_s"]) else format_s(float(r["solve_s"])) for r in rows]})


def table_and_bars(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The metrics table and the bar charts; returns the table (the CSV's columns, with raw numbers)."""
    df = pd.DataFrame(rows)
    st.dataframe(shown_table(rows), hide_index=True, width="stretch",  # every column in view at 1280 px
                 # each mechanism's whole label and promise are written above its map; the cells give their start
                 column_config={"mechanism": st.column_config.TextColumn(width="small"),
                                "privacy promise": st.column_config.TextColumn(width="medium"),
                                "violated / claimed": st.column_config.TextColumn(
                                    help="Cases that break ε-mDP among those the mechanism claims to protect: what "
                                         "its privacy promise is judged on."),
                                "violated / all pairs": st.column_config.TextColumn(
                                    help="Ordered pairs of secrets that break ε-mDP for some report, over all pairs, "
                                         "including those a mechanism with a narrower claim does not protect."),
                                "time": st.column_config.TextColumn(width="small")})
    st.download_button("Comparison table (CSV)", data=df.to_csv(index=False), file_name="mdpviz-compare.csv",
                       mime="text/csv", on_click="ignore", icon=":material/download:")
    solved = df.dropna(subset=["utility_loss_m"])
    if len(solved):
        st.plotly_chart(charts.metric_bars(solved), config={"displayModeBar": False}, key="compare_bars")
    return df
