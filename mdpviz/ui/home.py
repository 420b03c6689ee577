"""Content and helpers of the Home page (text, the ε picture, the link into Explore)."""

from __future__ import annotations

import json
import re

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from mdpviz.cities import default_city, list_cities
from mdpviz.explain import log_grid, radius_km, ratio_bound
from mdpviz.regimes.examples import nowhere
from mdpviz.reproduce.report import SHIPPED_DIR

from . import cache, glossary, presets, state

INTRO = """
**Metric differential privacy** (mDP, also called *geo-indistinguishability*) protects a location by reporting a
randomly perturbed one instead. The rule is that any two true locations *r* km apart must produce every report with
probabilities within a factor **e^(ε·r)** of each other, so nearby places are hard to tell apart while far-apart
ones may still be distinguished. Mechanisms differ in *how* they randomise: the exponential mechanism is a fixed
formula, while the optimal LP and PAnDA choose the probabilities that lose the least utility (metres of extra
travel) under the same guarantee.
"""

EPS_OPTIONS = log_grid(0.5, 50.0)


def radius_sentence(eps: float) -> str:
    """ε in words: the ratio-2 radius and the ratio at 1 km."""
    r_m = radius_km(eps) * 1000
    return (f"At **ε = {eps:g} km⁻¹**, two locations less than **{r_m:,.0f} m** apart produce every report with "
            f"probabilities within a factor **2** of each other (radius ln 2 / ε). Locations 1 km apart may differ "
            f"by a factor up to **{ratio_bound(eps, 1.0):,.3g}**.")


def radius_caption(eps: float) -> str:
    """A caption: within how many metres of the true location ε keeps the report ratio ≤ 2."""
    return f"Ratio ≤ 2 within {radius_km(eps) * 1000:,.0f} m of the true location at ε = {eps:g} km⁻¹."


def default_city_label() -> str:
    """The human label of the default city."""
    slug = default_city()
    return next(c.label for c in list_cities() if c.slug == slug)


def button_label() -> str:
    """The text of Home's button to Explore: default city, K and mechanism."""
    d = state.DEFAULTS
    return f"Open Explore: {default_city_label()}, K = {d['k']}, exponential mechanism"


def explore_query(eps: float) -> dict[str, str]:
    """URL of Explore on the default city with the small fast default and the ε chosen here."""
    d = state.DEFAULTS
    return {"city": default_city(), "k": str(d["k"]), "m": str(d["m"]), "metric": d["metric"], "prior": d["prior"],
            "cost": d["cost"], "tasks": str(d["tasks"]), "seed": str(d["seed"]), "mech": d["mech"],
            "eps": f"{eps:g}"}


def picture(eps: float) -> go.Figure:
    """The largest allowed probability ratio between two locations against their distance, ratio 2 marked."""
    r_m = radius_km(eps) * 1000
    x = np.linspace(0, max(4 * r_m, 50.0), 200)
    y = np.exp(eps * x / 1000)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line={"color": "#2563eb", "width": 3},
                             hovertemplate="%{x:.0f} m apart: ratio ≤ %{y:.3g}<extra></extra>", name="e^(ε·r)"))
    fig.add_hrect(y0=1, y1=2, fillcolor="#16a34a", opacity=0.12, line_width=0)
    fig.add_vline(x=r_m, line_dash="dash", line_color="#16a34a",
                  annotation_text=f"{r_m:,.0f} m: ratio 2", annotation_position="top left")
    fig.update_layout(height=340, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      title={"text": f"How different may reports be? (ε = {eps:g} km⁻¹)", "font": {"size": 14}},
                      xaxis_title="distance r between two true locations (m)",
                      yaxis_title="max probability ratio e^(ε·r)", showlegend=False)
    return fig


def seed_examples() -> None:
    """Each seed paper's method where the committed regime grid finds it beating the exponential mechanism (one
    click each), and the seeds that win nowhere there, with what happens to them most often and why."""
    table = cache.regime_cells()
    if table is None:
        return
    intro = ("**The seed papers' methods where they work** (from the regime grid, and for C-mDP's trajectories from "
             "`bench cmdp`: they keep their claim and beat the exponential mechanism there; *ours* marks a variant "
             "of our own beside the paper's)")
    st.markdown(intro, help=glossary.help_for(intro))
    presets.buttons("home-regime", columns=1, regime=True)
    if (traj := presets.by_id("cmdp-ours")) is not None:  # trajectories run outside the grid: measured by bench cmdp
        # streamlit types on_click as returning None; it discards the page presets.apply returns
        st.button("C-mDP, our setting, where its contexts pay: Rome, 8 stations in a 3 km disc, ε = 1.5 km⁻¹",
                  key="home-regime-cmdp-ours", help=traj["help"], width="stretch", icon=":material/play_circle:",
                  # (mypy) Streamlit types on_click as returning None; it discards the page apply returns
                  on_click=presets.apply, args=("cmdp-ours",))  # type: ignore[arg-type]
    for seed, outcome, count, cells, why in nowhere(table):
        glossary.caption(f"**{seed}** beats the exponential mechanism in no cell of the grid: in {count} of {cells} "
                         f"cells it {outcome}" + (f" — {why}" if why else "") + ". Its paper's own setting is below.")
    headline_claims()
    st.page_link("app_pages/which.py", label="Which mechanism for my setting?", icon=":material/rule:")


# the seed papers' headline claims about their own method, as the committed claims ledger judges them
HOME_CLAIMS = ("panda-loss-vs-em", "aipo-vs-em", "dista-vs-em", "cmdp-vs-em", "benders-lp-fails")


def headline_claims() -> None:
    """Each seed paper's headline claim with the ledger's verdict and the first sentence of its measured cause,
    read from the committed ``docs/reproduce/CLAIMS.json``; a link to the Reproduce page for the evidence."""
    try:
        judged = {j["id"]: j for j in json.loads((SHIPPED_DIR / "CLAIMS.json").read_text(encoding="utf-8"))}
    except (OSError, ValueError):
        return
    shown = [judged[c] for c in HOME_CLAIMS if c in judged]
    if not shown:
        return
    with st.expander("What the papers claim for their own method, and what we measure"):
        for j in shown:
            cause = j["cause"].partition(" Measured: ")[0]
            first = re.split(r"(?<!Prop)(?<!Eq)(?<!Fig)(?<!Table)\.\s+(?=[A-Z])", cause)[0].rstrip(".")
            line = f"- *{j['claim']}* ({j['where']}): **{j['verdict']}**" + (f". {first}." if first else ".")
            st.markdown(line, help=glossary.help_for(line))
        st.page_link("app_pages/reproduce.py", label="The claims ledger: every claim, its test and its evidence",
                     icon=":material/fact_check:")
