"""The "Which mechanism?" view: the committed regime grid (``docs/regimes/``) answered for one cell, and one
method's map over ε × region. Reads a CSV; never solves (a click opens the cell on Explore, which does)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import streamlit as st

from mdpviz.regimes.cells import SOUND, rank
from mdpviz.regimes.examples import cell_values
from mdpviz.regimes.grid import method_labels, methods
from mdpviz.regimes.report import COLOURS, SHIPPED_DIR, chart, region_label

from . import cache, glossary, presets

OUTCOME_WORDS = {
    "beats EM": "keeps its claim and beats the exponential mechanism (by ≥ 1 % on every seed)",
    "reference": "the exponential mechanism itself: the yardstick",
    "trails EM": "keeps its claim, but does not beat the exponential mechanism here",
    "EM not measured": "keeps its claim; the exponential mechanism has no result here to compare with",
    "claim not measured": "claims privacy only on some pairs and reports no check of it",
    "degenerate": "degenerate here: its reports say (almost) nothing, or it is not ε-mDP by design",
    "breaks its claim": "breaks its own privacy claim here (measured by our exact check)",
    "no result": "no mechanism here: time limit, error, or a region with fewer than K road nodes",
}


def cells() -> pd.DataFrame | None:
    """The committed cell table (None when the repository holds no grid)."""
    return cache.regime_cells(SHIPPED_DIR)


def _pick(label: str, options: list[Any], key: str, fmt: Any = str, default: Any = None) -> Any:
    index = options.index(default) if default in options else 0
    return st.selectbox(label, options, index=index, format_func=fmt, key=key)


def cell_controls(table: pd.DataFrame) -> dict[str, Any]:
    """City, ε, region, K and cost, from the values the grid holds."""
    c1, c2, c3, c4, c5 = st.columns(5)
    with c1:
        city = _pick("City", sorted(table["city"].unique()), "which_city", str.title, "rome")
    with c2:
        eps = _pick("ε (km⁻¹)", sorted(table["eps"].unique()), "which_eps", lambda e: f"{e:g}", 5.0)
    with c3:
        regions = sorted(table["region"].unique(), key=lambda r: (r == "whole", r))
        region = _pick("Where the secrets are", regions, "which_region", region_label, "whole")
    with c4:
        k = _pick("K (secrets)", sorted(int(v) for v in table["K"].unique()), "which_k", lambda v: f"{v:,}", 500)
    with c5:
        cost = _pick("Cost", sorted(table["cost"].unique()), "which_cost", lambda c: f"{c} cost", "distance")
    return {"city": city, "region": region, "K": k, "cost": cost, "eps": eps}


def _fmt_m(v: float) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.0f} m"


def ranking(rows: pd.DataFrame) -> pd.DataFrame:
    """A cell's methods as :func:`~mdpviz.regimes.cells.rank` orders them, in words and units."""
    labels = method_labels()
    shown = pd.DataFrame({
        "method": [labels.get(m, m) for m in rows["method"]],
        "verdict here": rows["outcome"].to_list(),
        "privacy cost": [_fmt_m(v) + ("" if math.isnan(ci) else f" ± {ci:,.0f}")
                         for v, ci in zip(rows["privacy_cost_m"], rows["privacy_cost_ci95_m"], strict=True)],
        "loss ÷ EM's": ["–" if math.isnan(v) else f"{v:.2f}" for v in rows["vs_em"]],
        "cost ÷ LP's": ["–" if math.isnan(v) else f"{v:.3g}" for v in rows["share_of_lp"]],
        "time": ["–" if math.isnan(v) else f"{v:.1f} s" for v in rows["time_s"]],
        "why not": [("" if o in SOUND else str(w))
                    for o, w in zip(rows["outcome"], rows["why"].fillna(""), strict=True)],
    })
    shown.index = list(rows["method"])
    return shown


def _style(frame: pd.DataFrame) -> Any:
    return frame.style.map(lambda o: f"background-color: {COLOURS.get(o, '')}33" if o in COLOURS else "",
                           subset=["verdict here"])


def cell_view(table: pd.DataFrame) -> None:
    """The question, the ranked answer and a button that opens the winner on Explore."""
    cell = cell_controls(table)
    ranked = rank(table, **cell)
    rows = ranking(ranked)
    if rows.empty:
        st.info("The grid has no such cell; pick another combination.", icon=":material/info:")
        return
    seeds, floor = int(ranked["seeds"].max()), float(ranked["floor_m"].mean())
    sound = rows[rows["verdict here"].isin(SOUND)]
    best = sound.index[0] if len(sound) else None
    where = (f"{cell['city'].title()}, {region_label(cell['region'])}, K = {cell['K']:,}, {cell['cost']} cost, "
             f"ε = {cell['eps']:g} km⁻¹")
    if best is not None:
        glossary.alert("success", f"**{rows.loc[best, 'method']}** has the least privacy cost among the mechanisms "
                       f"that keep their claim here ({where}): {rows.loc[best, 'privacy cost']} above the "
                       f"no-privacy floor of {_fmt_m(floor)}.", icon=":material/emoji_events:")
    over = (f"mean over {seeds} seeds of the committed grid" if seeds > 1
            else "one seed of the committed grid, so no interval")
    glossary.caption(f"Cell: {where}; {over}. Privacy cost = utility loss − the no-privacy floor (every secret "
                     "reporting its cheapest output)" + ("; ± is a 95 % interval over seeds." if seeds > 1 else "."))
    st.dataframe(_style(rows), hide_index=True, width="stretch", column_config={
        "method": st.column_config.TextColumn(width="medium"),
        "loss ÷ EM's": st.column_config.TextColumn(help="utility loss divided by the exponential mechanism's"),
        "cost ÷ LP's": st.column_config.TextColumn(help="privacy cost divided by the exact LP's (the least "
                                                   "possible for ε-mDP on all pairs)"),
        "why not": st.column_config.TextColumn(width="large", help="for a method that does not keep its claim or "
                                               "gives no mechanism here: its own words")})
    if best is not None:
        mech = next(m for m in methods() if m.name == best)
        values = cell_values(ranked[ranked["method"] == best].iloc[0], mech)
        # streamlit types on_click as returning None; it discards the page presets.apply_values returns
        st.button(f"Open {rows.loc[best, 'method']} on this cell in Explore (seed 0)", icon=":material/map:",
                  # (mypy) Streamlit types on_click as returning None; it discards the page apply_values returns
                  on_click=presets.apply_values, args=(values, "explore", f"Regime grid: {where}"),  # type: ignore[arg-type]
                  key="which_open")


def method_view(table: pd.DataFrame) -> None:
    """One method's outcomes over ε × region, and where it wins (or that it wins nowhere)."""
    labels = method_labels()
    names = list(dict.fromkeys(table["method"]))
    # first shown: the method that beats EM in the most cells (a page that opens on a method winning nowhere shows
    # only red); every other method, winning or not, is one pick away
    wins_by = table[(table["outcome"] == "beats EM") & (table["method"] != "em")].groupby("method").size()
    first = str(wins_by.idxmax()) if len(wins_by) else names[0]
    name = st.selectbox("Method", names, format_func=lambda n: labels.get(n, n), key="which_method",
                        index=names.index(first))
    rows = table[table["method"] == name]
    wins = rows[rows["outcome"] == "beats EM"]
    if name == "em":
        st.info("The exponential mechanism is the yardstick of every cell.", icon=":material/info:")
    elif wins.empty:
        counts = rows["outcome"].value_counts()
        top = counts.index[0]
        example = rows[rows["outcome"] == top]["why"].dropna()
        glossary.alert("warning", f"**{labels.get(name, name)} beats the exponential mechanism in no cell of the "
                       f"grid.** Most often ({counts.iloc[0]} of {len(rows)} cells) it "
                       f"{OUTCOME_WORDS[top].split(': ')[0]}"
                       + (f": {example.iloc[0][:220]}" if len(example) and example.iloc[0] else "."),
                       icon=":material/do_not_disturb_on:")
    else:
        best = wins.sort_values("vs_em").iloc[0]
        glossary.alert("success", f"{labels.get(name, name)} beats the exponential mechanism in {len(wins)} of "
                       f"{len(rows)} cells; best: {best['city'].title()}, {region_label(best['region'])}, "
                       f"K = {best['K']:,}, {best['cost']} cost, ε = {best['eps']:g} km⁻¹ ({best['vs_em']:.2f}× "
                       "EM's loss).", icon=":material/check_circle:")
    st.plotly_chart(chart(table, name, labels.get(name, name)), width="stretch", config={"displayModeBar": False})
    glossary.caption(" · ".join(f"**{o}**: {w}" for o, w in OUTCOME_WORDS.items()))
