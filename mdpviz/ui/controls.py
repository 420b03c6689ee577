"""Controls generated from schemas: problem settings and each mechanism's Param list become widgets.

A float on a log scale becomes a select slider over readable log-spaced values; other numbers a slider (bounded)
or a number box; a string with choices a select box; a bool a checkbox. Labels carry units, help is the tooltip.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, cast

import streamlit as st

from mdpviz.cities import city_info, list_cities
from mdpviz.errors import MdpvizError
from mdpviz.explain import log_grid
from mdpviz.mechanisms import Mechanism, Param, get_mechanism, mechanisms
from mdpviz.points import read_points
from mdpviz.problem import COST_MODELS, METRICS
from mdpviz.region import parse_region, region_presets

from . import state

METRIC_LABELS = {"haversine": "great-circle (haversine) km", "road": "road shortest-path km"}
COST_LABELS = {"travel": "travel cost to task nodes (m)", "distance": "distance d(x, y) (m)"}
PRIOR_LABELS = {"uniform": "uniform", "street_count": "street count (busier junctions likelier)"}


def label_of(labels: Mapping[str, str]) -> Callable[[Any], str]:
    """``labels.get`` as a select box's ``format_func`` (typed as returning str: the box's options are keys of
    ``labels``, which mypy cannot see through ``dict.get``'s overloads)."""
    return cast("Callable[[Any], str]", labels.get)


def city_label(slug: str | None) -> str:
    """A city's human label (its slug when unknown; "your points" without a city)."""
    if slug is None:
        return "your points"
    return next((c.label for c in list_cities() if c.slug == slug), slug)


def mechanism_label(name: str) -> str:
    """A registered mechanism's human label, for select boxes."""
    mech = get_mechanism(name)
    return mech.label


def param_widget(mech: Mechanism, p: Param, key: str | None = None) -> None:
    """One widget for ``p``, its value kept under ``key`` (default: ``state.param_key(mech.name, p.name)``, the
    mechanism's own value; a page whose values are shared by several mechanisms passes its own key)."""
    ss = st.session_state
    if key is None:
        key = state.param_key(mech.name, p.name)
        state.ensure_params(mech)
    else:
        ss.setdefault(key, p.default)
    label, help_ = p.display, p.help
    off = _unused(mech, p)
    if off:
        label, help_ = f"{label} (unused here)", f"{help_}. {off}"
    if p.kind is bool:
        st.checkbox(label, key=key, help=help_, disabled=bool(off))
    elif p.kind is str:
        if ss[key] not in p.choices:
            ss[key] = p.default
        st.selectbox(label, p.choices, key=key, help=help_, format_func=p.shown, disabled=bool(off))
    elif p.kind is float and p.log and p.low is not None and p.high is not None and p.low > 0:
        high = p.high * (1 - 1e-9) if p.open_high else p.high
        options = log_grid(p.low, high, extra=(float(p.default), float(ss[key])))
        if ss[key] not in options:
            ss[key] = float(p.default)
        st.select_slider(label + " · log scale", options=options, key=key, help=help_, format_func=lambda v: f"{v:g}",
                         disabled=bool(off))
    elif p.kind in (int, float) and p.low is not None and p.high is not None:
        high = p.high if not p.open_high else (p.high - 1 if p.kind is int else round(p.high - 0.01, 6))
        if p.kind is int:
            ss[key] = int(min(max(int(ss[key]), int(p.low)), int(high)))
            st.slider(label, int(p.low), int(high), step=1, key=key, help=help_, disabled=bool(off))
        else:
            ss[key] = float(min(max(float(ss[key]), p.low), high))
            step = _step(p.low, high)
            st.slider(label, float(p.low), float(high), step=step, key=key, help=help_, format="%g",
                      disabled=bool(off))
    elif p.kind is int:
        st.number_input(label, step=1, key=key, help=f"{help_} Range {p.range_text()}.", disabled=bool(off))
    else:
        st.number_input(label, key=key, help=f"{help_} Range {p.range_text()}.", format="%g", disabled=bool(off))


def _unused(mech: Mechanism, p: Param) -> str:
    """Why ``p`` is greyed out (it matters only when another of ``mech``'s parameters has a value it has not now),
    or "" when it is used."""
    if not p.used_when:
        return ""
    other, value = p.used_when
    now = st.session_state.get(state.param_key(mech.name, other))
    if now is None or now == value:
        return ""
    words = next((q.display for q in mech.params if q.name == other), other)
    return f"Used only when {words} is {value}; it is {now} now."


def _step(low: float, high: float) -> float:
    span = high - low
    for s in (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0):
        if span / s <= 200:
            return s
    return span / 200


COMMON_PARAMS = ("eps", "delta", "alpha", "lam", "lambda")
FIRST_PARAMS = 3  # a mechanism's first few parameters stay visible besides the common ones


def split_params(mech: Mechanism) -> tuple[list[Param], list[Param]]:
    """(shown, advanced): ε, δ, α, λ and the first few parameters are shown; the rest fold into an expander."""
    shown = [p for n, p in enumerate(mech.params) if p.name in COMMON_PARAMS or n < FIRST_PARAMS]
    return shown, [p for p in mech.params if p not in shown]


def mechanism_params(mech: Mechanism) -> None:
    """Every parameter widget of ``mech``: the common ones, then the others in an "Advanced" expander."""
    shown, advanced = split_params(mech)
    for p in shown:
        param_widget(mech, p)
    if advanced:
        with st.expander(f"Advanced parameters ({len(advanced)})"):
            for p in advanced:
                param_widget(mech, p)


def region_options(slug: str, current: str) -> dict[str, str]:
    """Region text → label: the library's presets for the city (whole city, centre discs), and the current one."""
    info = city_info(slug)
    options = {spec: label for label, spec in region_presets(info)}
    if current not in options:
        try:
            options[current] = f"{info.label.split(' (')[0]}: {parse_region(current, info.centre).describe()}"
        except MdpvizError:
            pass
    return options


def problem_controls() -> None:
    """City, region, K, |Y|, metric, prior, cost model, task count and seed (call inside a form).

    K and |Y| boxes take any whole number: a value out of range is brought into range before the next run with
    a notice saying so (``state.validate_state``), rather than only outlined by the browser.
    """
    ss = st.session_state
    cities = list_cities()
    labels = {c.slug: f"{c.label} · {c.nodes:,} nodes · {c.extent_km[0]:.0f} × {c.extent_km[1]:.0f} km"
              for c in cities}
    st.selectbox("City (bundled OpenStreetMap road network)", [c.slug for c in cities], key="city",
                 format_func=lambda s: labels.get(s, s), help="Offline road networks; see data/ATTRIBUTION.md.")
    options = region_options(ss["city"], str(ss.get("region") or "whole"))
    if ss.get("region") not in options:
        ss["region"] = "whole"
    st.selectbox("Where the secrets come from", list(options), key="region", format_func=label_of(options),
                 help="The whole city (the papers' way: K random road nodes of the city) or a disc around its "
                      "centre. A region of your own: type it below, or pick it on the map.")
    # the example is a disc around this city's own centre (from the list read above: no second scan of the cache)
    lat, lon = next((c.centre for c in cities if c.slug == ss["city"]), cities[0].centre)
    st.text_input("…or a region of your own", key="region_text", placeholder=f"{lat:.3f},{lon:.3f},2  or  S,W,N,E",
                  help="`LAT,LON,R`: within R km of a point (degrees, km); `S,W,N,E`: a box (degrees); "
                       "`centre:R`: within R km of the city's centre. Applied when you press Solve.")
    lo, hi, why = state.k_range(ss["city"], str(ss.get("region") or "whole"))
    c1, c2 = st.columns(2)
    c1.number_input("K = |X| (secrets)", step=50, key="k",
                    help=f"Number of road nodes sampled as possible true locations: {lo} to {hi:,} ({why}).")
    c2.number_input("|Y| (outputs)", step=10, key="m",
                    help="Number of reportable locations, a seeded subset of X: 1 to K.")
    if ss.get("metric") not in METRICS:
        ss["metric"] = "haversine"
    st.selectbox("mDP metric d (km)", METRICS, key="metric", format_func=label_of(METRIC_LABELS),
                 help="The distance that ε multiplies; ε is in km⁻¹.")
    st.selectbox("Prior p over X", state.PRIORS_UI, key="prior", format_func=label_of(PRIOR_LABELS),
                 help="Where users are likely to be; weights the expected loss.")
    st.selectbox("Cost model c (m)", COST_MODELS, key="cost", format_func=label_of(COST_LABELS),
                 help="Utility loss of reporting y when the truth is x, in metres.")
    c3, c4 = st.columns(2)
    c3.number_input("Task nodes (count)", key="tasks", step=1,
                    help=f"Travel cost only: the number of destinations averaged over ({state.TASKS_RANGE[0]} to "
                         f"{state.TASKS_RANGE[1]}).")
    c4.number_input("Seed (integer)", key="seed", step=1,
                    help="Seeds X, Y and the tasks: the same settings give the same problem.")


def mechanism_picker(key: str = "mech") -> Mechanism:
    """Select box of every registered mechanism (outside the form so its parameters appear at once)."""
    names = [m.name for m in mechanisms()]
    if st.session_state.get(key) not in names:
        st.session_state[key] = state.DEFAULTS["mech"]
    name = st.selectbox("Mechanism", names, key=key, format_func=mechanism_label,
                        help="Every registered mechanism; its parameters appear below.")
    return get_mechanism(name)


def time_limit_control() -> None:
    """The time limit per solve (seconds), kept under ``time_limit``."""
    lo, hi = state.TIME_LIMIT_RANGE
    st.number_input("Time limit per solve (s)", step=10.0, key="time_limit",
                    help=f"{lo:g} to {hi:g} s. An LP that runs out of time stops with status 'time limit' and, for "
                         "most solvers, no mechanism.")


def range_control(p: Param, key: str, default: tuple[float, float]) -> None:
    """A range for a sweep over ``p``: log-spaced select slider for log parameters, a slider otherwise.

    The range widget takes its default through ``value=`` (a range needs a pair there); its state is never set
    through the Session State API, so it is kept only while the page stays open.
    """
    # (mypy) a parameter with a range slider has both bounds
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


MAX_UPLOAD_MB = 2        # also Streamlit's server.maxUploadSize (.streamlit/config.toml), shown on the widget
MAX_UPLOAD_POINTS = state.K_MAX  # distinct points become K secrets: the problem builder's cap


def check_points(ss: Any, up: Any) -> None:
    """Validate an uploaded file into ``ss`` (session state or a dict): ``_points`` and ``source = points`` when it
    is fine, else ``_points_error`` (the library's message, or the size limits) and ``source = sample``.

    ``up`` is Streamlit's UploadedFile (``name``, ``getvalue()``) or None when the file was removed.
    """
    ss.pop("_points_error", None)
    if up is None:
        ss.pop("_points", None)
        ss["source"] = "sample"
        return
    data = up.getvalue()
    error, rows = None, 0
    if len(data) > MAX_UPLOAD_MB * 1024 * 1024:
        error = (f"`{up.name}` is {len(data) / 1e6:.1f} MB; the dashboard takes files up to {MAX_UPLOAD_MB} MB "
                 "(the CLI's `--points` takes any size).")
    else:
        try:
            rows = len(read_points(data))
        except MdpvizError as e:
            error = f"`{up.name}`: {e}"
        if error is None and rows > MAX_UPLOAD_POINTS:
            error = (f"`{up.name}` has {rows:,} points; the dashboard takes up to {MAX_UPLOAD_POINTS:,} (use the "
                     "CLI's `--points` for more).")
    if error:
        ss["_points_error"] = error
        ss.pop("_points", None)
        ss["source"] = "sample"
    else:
        ss["_points"] = {"digest": hashlib.sha256(data).hexdigest(), "data": data, "name": up.name, "rows": rows}
        ss["source"] = "points"


def _points_changed() -> None:
    """The uploader's callback: validate a new file, or forget a removed one."""
    check_points(st.session_state, st.session_state.get("points_file"))


def points_upload() -> None:
    """Your own points: a CSV of ``lat, lon[, weight]``, validated at once by the library (the CLI's
    ``--points`` rules and messages), kept in this session's memory only (nothing is written to disk)."""
    ss = st.session_state
    loaded = ss.get("_points")
    with st.expander("Your own points (CSV upload)", icon=":material/upload_file:",
                     expanded=ss.get("source") == "points" or bool(ss.get("_points_error"))):
        st.file_uploader(f"CSV with columns lat, lon[, weight] (degrees; up to {MAX_UPLOAD_MB} MB and "
                         f"{MAX_UPLOAD_POINTS:,} points)", type=["csv"], key="points_file", on_change=_points_changed,
                         help="Each row is a possible true location; weights (≥ 0) form the prior. With a city the "
                              "points snap to its nearest road nodes (points on one node merge).")
        if ss.get("_points_error"):
            st.error(ss["_points_error"], icon=":material/error:")
        if loaded:
            st.caption(f"Loaded `{loaded['name']}`: {loaded['rows']:,} points (kept in memory, not on disk).")
            st.radio("Secrets X", ("sample", "points"), key="source", horizontal=True,
                     format_func={"sample": "sampled road nodes", "points": "my points"}.get)
            st.checkbox("Snap my points to the city's road nodes", key="points_snap",
                        help="Off: the points stand alone (haversine metric and distance cost; no roads drawn).")
