"""Controls generated from schemas: problem settings and each mechanism's Param list become widgets.

A float on a log scale becomes a select slider over readable log-spaced values; other numbers a slider (bounded)
or a number box; a string with choices a select box; a bool a checkbox. Labels carry units, help is the tooltip.
"""

from __future__ import annotations

import streamlit as st

from mdpviz.cities import list_cities
from mdpviz.explain import log_grid
from mdpviz.mechanisms import Mechanism, Param, mechanisms
from mdpviz.problem import COST_MODELS, METRICS

from . import state

METRIC_LABELS = {"haversine": "great-circle (haversine) km", "road": "road shortest-path km"}
COST_LABELS = {"travel": "travel cost to task nodes (m)", "distance": "distance d(x, y) (m)"}
PRIOR_LABELS = {"uniform": "uniform", "street_count": "street count (busier junctions likelier)"}


def city_label(slug: str | None) -> str:
    """A city's human label (its slug when unknown; "your points" without a city)."""
    if slug is None:
        return "your points"
    return next((c.label for c in list_cities() if c.slug == slug), slug)


def mechanism_label(name: str) -> str:
    from mdpviz.mechanisms import get_mechanism

    mech = get_mechanism(name)
    return mech.label


def param_widget(mech: Mechanism, p: Param) -> None:
    """One widget for ``p``, its value kept under ``state.param_key(mech.name, p.name)``."""
    key = state.param_key(mech.name, p.name)
    ss = st.session_state
    state.ensure_params(mech)
    label, help_ = p.display, p.help
    if p.kind is bool:
        st.checkbox(label, key=key, help=help_)
    elif p.kind is str:
        if ss[key] not in p.choices:
            ss[key] = p.default
        st.selectbox(label, p.choices, key=key, help=help_)
    elif p.kind is float and p.log and p.low is not None and p.high is not None and p.low > 0:
        high = p.high * (1 - 1e-9) if p.open_high else p.high
        options = log_grid(p.low, high, extra=(float(p.default), float(ss[key])))
        if ss[key] not in options:
            ss[key] = float(p.default)
        st.select_slider(label + " · log scale", options=options, key=key, help=help_, format_func=lambda v: f"{v:g}")
    elif p.kind in (int, float) and p.low is not None and p.high is not None:
        high = p.high if not p.open_high else (p.high - 1 if p.kind is int else round(p.high - 0.01, 6))
        if p.kind is int:
            ss[key] = int(min(max(int(ss[key]), int(p.low)), int(high)))
            st.slider(label, int(p.low), int(high), step=1, key=key, help=help_)
        else:
            ss[key] = float(min(max(float(ss[key]), p.low), high))
            step = _step(p.low, high)
            st.slider(label, float(p.low), float(high), step=step, key=key, help=help_, format="%g")
    elif p.kind is int:
        st.number_input(label, min_value=None if p.low is None else int(p.low),
                        max_value=None if p.high is None else int(p.high), step=1, key=key, help=help_)
    else:
        st.number_input(label, min_value=p.low, max_value=p.high, key=key, help=help_, format="%g")


def _step(low: float, high: float) -> float:
    span = high - low
    for s in (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0):
        if span / s <= 200:
            return s
    return span / 200


def mechanism_params(mech: Mechanism) -> None:
    """Every parameter widget of ``mech``."""
    for p in mech.params:
        param_widget(mech, p)


def problem_controls() -> None:
    """City, K, |Y|, metric, prior, cost model, task count and seed (call inside a form)."""
    ss = st.session_state
    cities = list_cities()
    labels = {c.slug: f"{c.label} · {c.nodes:,} nodes" for c in cities}
    st.selectbox("City (bundled OpenStreetMap road network)", [c.slug for c in cities], key="city",
                 format_func=lambda s: labels.get(s, s), help="Offline road networks; see data/ATTRIBUTION.md.")
    c1, c2 = st.columns(2)
    c1.number_input("K = |X| (secrets)", min_value=state.K_RANGE[0], max_value=state.K_RANGE[1], step=50, key="k",
                    help="Number of road nodes sampled as possible true locations.")
    c2.number_input("|Y| (outputs)", min_value=state.M_RANGE[0], max_value=state.M_RANGE[1], step=10, key="m",
                    help="Number of reportable locations, a seeded subset of X (capped at K).")
    if ss.get("metric") not in METRICS:
        ss["metric"] = "haversine"
    st.selectbox("mDP metric d (km)", METRICS, key="metric", format_func=METRIC_LABELS.get,
                 help="The distance that ε multiplies; ε is in km⁻¹.")
    st.selectbox("Prior p over X", state.PRIORS_UI, key="prior", format_func=PRIOR_LABELS.get,
                 help="Where users are likely to be; weights the expected loss.")
    st.selectbox("Cost model c (m)", COST_MODELS, key="cost", format_func=COST_LABELS.get,
                 help="Utility loss of reporting y when the truth is x, in metres.")
    c3, c4 = st.columns(2)
    c3.number_input("Task nodes (count)", min_value=state.TASKS_RANGE[0], max_value=state.TASKS_RANGE[1], key="tasks",
                    help="Travel cost only: the number of destinations averaged over.")
    c4.number_input("Seed (integer)", min_value=0, max_value=2**31 - 1, key="seed",
                    help="Seeds X, Y and the tasks: the same settings give the same problem.")


def mechanism_picker(key: str = "mech") -> Mechanism:
    """Select box of every registered mechanism (outside the form so its parameters appear at once)."""
    from mdpviz.mechanisms import get_mechanism

    names = [m.name for m in mechanisms()]
    if st.session_state.get(key) not in names:
        st.session_state[key] = state.DEFAULTS["mech"]
    name = st.selectbox("Mechanism", names, key=key, format_func=mechanism_label,
                        help="Every registered mechanism; its parameters appear below.")
    return get_mechanism(name)


def time_limit_control() -> None:
    st.number_input("Time limit per solve (s)", min_value=state.TIME_LIMIT_RANGE[0],
                    max_value=state.TIME_LIMIT_RANGE[1], step=10.0, key="time_limit",
                    help="An LP that runs out of time stops with status 'time limit' and no mechanism.")


def range_control(p: Param, key: str, default: tuple[float, float]) -> None:
    """A range for a sweep over ``p``: log-spaced select slider for log parameters, a slider otherwise.

    The range widget takes its default through ``value=`` (a range needs a pair there); its state is never set
    through the Session State API, so it is kept only while the page stays open.
    """
    lo, hi = float(p.low), float(p.high)  # type: ignore[arg-type]
    if p.open_high:
        hi = hi - (1 if p.kind is int else 0.01)
    if p.log and lo > 0:
        options = log_grid(lo, hi, extra=default)
        st.select_slider(f"Range of {p.display} · log scale", options=options, value=default, key=key, help=p.help,
                         format_func=lambda v: f"{v:g}")
    elif p.kind is int:
        st.slider(f"Range of {p.display}", int(lo), int(hi), value=(int(default[0]), int(default[1])), key=key,
                  help=p.help)
    else:
        st.slider(f"Range of {p.display}", lo, hi, value=(float(default[0]), float(default[1])), step=_step(lo, hi),
                  key=key, help=p.help, format="%g")
