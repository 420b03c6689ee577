"""Page state: defaults, session keys shared by every page, and the URL query parameters that mirror them.

Widgets never get a ``value=``; their value lives in ``st.session_state`` under the keys below, which are filled
with defaults (or values parsed from the URL) before any widget is drawn. Parsing is pure
(:func:`parse_query`), so bad URLs fall back to defaults with a notice a person can read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import streamlit as st

from mdpviz.cities import list_cities
from mdpviz.errors import MdpvizError
from mdpviz.mechanisms import Mechanism, get_mechanism, mechanisms
from mdpviz.problem import COST_MODELS, METRICS

# the fast, small default: every page opens on this and renders in well under a second
DEFAULTS: dict[str, Any] = {"k": 200, "m": 50, "metric": "haversine", "prior": "uniform", "cost": "travel",
                            "tasks": 10, "seed": 0, "mech": "em", "secret": None, "time_limit": 60.0,
                            "compare": ["em", "em-br"], "sweep_mechs": ["em", "em-br"]}
PRIORS_UI: tuple[str, ...] = ("uniform", "street_count")  # "points" needs an upload: library and CLI only
K_RANGE = (10, 3000)
M_RANGE = (2, 500)
TASKS_RANGE = (1, 50)
TIME_LIMIT_RANGE = (1.0, 1800.0)
PROBLEM_KEYS = ("city", "k", "m", "metric", "prior", "cost", "tasks", "seed")
# keys whose values survive page switches (the widget clean-up is interrupted for them in app.py)
SHARED_KEYS = (*PROBLEM_KEYS, "mech", "secret", "time_limit", "compare", "sweep_mechs", "sweep_param", "sweep_n",
               "colour_mode", "show_dist", "show_outputs", "show_viol", "attack_y", "point", "show_heat", "heat_y",
               "show_lattice")
PERSIST_PREFIXES = ("mp.",)


def default_city_slug() -> str:
    from mdpviz.cities import default_city

    return default_city()


def city_slugs() -> list[str]:
    return [c.slug for c in list_cities()]


def city_nodes(slug: str) -> int:
    return next(c.nodes for c in list_cities() if c.slug == slug)


def param_key(mech: str, name: str) -> str:
    """Session key of a mechanism parameter; each mechanism keeps its own values."""
    return f"mp.{mech}.{name}"


def param_url_name(name: str) -> str:
    """URL name of a mechanism parameter: its own name unless it clashes with a page key."""
    return f"p_{name}" if name in SHARED_KEYS or name in ("page",) else name


@dataclass(frozen=True)
class Parsed:
    """What a URL asked for: values to put in session state and notices for the values that were refused."""

    values: dict[str, Any]
    notices: list[str]


def _int(raw: str, name: str, low: int, high: int, notices: list[str], label: str) -> int | None:
    try:
        value = int(float(raw))
        if float(raw) != value:
            raise ValueError
    except ValueError:
        notices.append(f"URL parameter `{name}={raw}` is not a whole number; using the default for {label}.")
        return None
    if not low <= value <= high:
        notices.append(f"URL parameter `{name}={raw}` is outside [{low}, {high}] for {label}; using the default.")
        return None
    return value


def parse_query(query: dict[str, str]) -> Parsed:
    """Turn URL query parameters into session values; unknown or invalid values become notices.

    Only keys present in the URL are returned, so a URL without parameters keeps the current state.
    """
    notices: list[str] = []
    out: dict[str, Any] = {}
    q = {k: (v[-1] if isinstance(v, list) else str(v)) for k, v in query.items()}
    cities = city_slugs()
    if "city" in q:
        if q["city"] in cities:
            out["city"] = q["city"]
        else:
            notices.append(f"Unknown city `{q['city']}` in the URL; showing {default_city_slug()} instead "
                           f"(available: {', '.join(cities)}).")
            out["city"] = default_city_slug()
    city = out.get("city", q.get("city") if q.get("city") in cities else default_city_slug())
    n_nodes = city_nodes(city)
    for key, rng, label in (("k", (K_RANGE[0], min(K_RANGE[1], n_nodes)), "K = |X|"),
                            ("m", M_RANGE, "|Y|"), ("tasks", TASKS_RANGE, "the number of task nodes"),
                            ("seed", (0, 2**31 - 1), "the seed")):
        if key in q:
            v = _int(q[key], key, rng[0], rng[1], notices, label)
            out[key] = DEFAULTS[key] if v is None else v
    if "k" in out and "m" in out and out["m"] > out["k"]:
        notices.append(f"|Y| = {out['m']} exceeds K = {out['k']}; using |Y| = K.")
        out["m"] = out["k"]
    for key, allowed in (("metric", METRICS), ("prior", PRIORS_UI), ("cost", COST_MODELS)):
        if key in q:
            if q[key] in allowed:
                out[key] = q[key]
            else:
                notices.append(f"URL parameter `{key}={q[key]}` is not one of {', '.join(allowed)}; "
                               f"using {DEFAULTS[key]}.")
                out[key] = DEFAULTS[key]
    if "secret" in q:
        v = _int(q["secret"], "secret", 0, K_RANGE[1], notices, "the selected secret")
        out["secret"] = v  # None: the page picks the secret nearest the middle
    if "pt" in q:  # a picked point of the plane "lat,lon" (mechanisms with rows for any point)
        from .continuous import parse_point

        pt = parse_point(q["pt"])
        if pt is None:
            notices.append(f"URL parameter `pt={q['pt']}` is not a point `lat,lon` in degrees; showing the selected "
                           "secret instead.")
        out["point"] = None if pt is None else f"{pt[0]:.6f},{pt[1]:.6f}"
    if "time_limit" in q:
        try:
            t = float(q["time_limit"])
            if not TIME_LIMIT_RANGE[0] <= t <= TIME_LIMIT_RANGE[1]:
                raise ValueError
            out["time_limit"] = t
        except ValueError:
            notices.append(f"URL parameter `time_limit={q['time_limit']}` must be seconds in "
                           f"[{TIME_LIMIT_RANGE[0]:g}, {TIME_LIMIT_RANGE[1]:g}]; using {DEFAULTS['time_limit']:g} s.")
    for key in ("compare", "sweep_mechs"):
        if key in q:
            names = [n for n in q[key].split(",") if n]
            known = [n for n in names if n in {m.name for m in mechanisms()}]
            if len(known) != len(names) or not known:
                notices.append(f"URL parameter `{key}={q[key]}` names unknown mechanisms; "
                               f"known: {', '.join(m.name for m in mechanisms())}.")
            out[key] = known[:4] or list(DEFAULTS[key])
    if "sweep_param" in q:  # checked against the chosen mechanisms' parameters on the Trade-off page
        out["sweep_param"] = q["sweep_param"]
    mech_name = DEFAULTS["mech"]
    if "mech" in q:
        try:
            mech_name = get_mechanism(q["mech"]).name
        except MdpvizError:
            notices.append(f"Unknown mechanism `{q['mech']}` in the URL; using {DEFAULTS['mech']} "
                           f"(known: {', '.join(m.name for m in mechanisms())}).")
        out["mech"] = mech_name
    mech = get_mechanism(mech_name)
    for p in mech.params:
        url = param_url_name(p.name)
        if url in q:
            try:
                out[param_key(mech.name, p.name)] = p.validate(q[url])
            except MdpvizError as e:
                notices.append(f"{e} Using the default {p.default!r}.")
                out[param_key(mech.name, p.name)] = p.default
    return Parsed(out, notices)


def query_for(page: str) -> dict[str, str]:
    """The URL query parameters that describe ``page``'s current state (strings)."""
    ss = st.session_state
    q: dict[str, str] = {}
    if page in ("explore", "compare", "tradeoff"):
        q.update({k: str(ss[k]) for k in PROBLEM_KEYS if k in ss})
    if page == "explore":
        mech = get_mechanism(ss["mech"])
        q["mech"] = mech.name
        for p in mech.params:
            q[param_url_name(p.name)] = _fmt(ss.get(param_key(mech.name, p.name), p.default))
        if ss.get("secret") is not None:
            q["secret"] = str(ss["secret"])
        if ss.get("point"):
            q["pt"] = str(ss["point"])
    if page == "compare":
        q["compare"] = ",".join(ss.get("compare", []))
        if ss.get("secret") is not None:
            q["secret"] = str(ss["secret"])
    if page == "tradeoff":
        q["sweep_mechs"] = ",".join(ss.get("sweep_mechs", []))
        if ss.get("sweep_param"):
            q["sweep_param"] = str(ss["sweep_param"])
    return q


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def ensure_defaults() -> None:
    """Fill every shared session key that is still missing (first run of a session)."""
    ss = st.session_state
    if "city" not in ss:
        ss["city"] = default_city_slug()
    for k, v in DEFAULTS.items():
        if k not in ss:
            ss[k] = list(v) if isinstance(v, list) else v


def ensure_params(mech: Mechanism) -> None:
    """Fill a mechanism's parameter keys with its schema defaults where missing."""
    for p in mech.params:
        st.session_state.setdefault(param_key(mech.name, p.name), p.default)


def params_of(mech: Mechanism) -> dict[str, Any]:
    """The current parameter values of ``mech`` from session state (validated by the library at solve time)."""
    ensure_params(mech)
    return {p.name: st.session_state[param_key(mech.name, p.name)] for p in mech.params}


def sync_from_url() -> None:
    """Read the URL when it differs from what this session last wrote (first load, a shared link, Home's button).

    Values that fail validation fall back to defaults; the notices are shown by :func:`show_notices`.
    """
    ss = st.session_state
    current = {k: st.query_params.get_all(k)[-1] for k in st.query_params}
    if not current or current == ss.get("_url_written"):
        return
    parsed = parse_query(current)
    for k, v in parsed.values.items():
        ss[k] = v
    if "mech" in parsed.values:
        ensure_params(get_mechanism(parsed.values["mech"]))
    ss["_notices"] = ss.get("_notices", []) + parsed.notices
    ss["_url_written"] = current


def write_url(page: str) -> None:
    """Mirror the page state in the URL so the view can be shared or reloaded."""
    q = query_for(page)
    if q != st.session_state.get("_url_written"):
        st.query_params.from_dict(q)
        st.session_state["_url_written"] = q


def show_notices() -> None:
    """Show (once) the notices from a URL that asked for invalid values."""
    for n in st.session_state.pop("_notices", []):
        st.warning(n, icon="⚠️")


def keep_shared_state() -> None:
    """Interrupt Streamlit's widget clean-up so shared values survive a page switch (documented pattern)."""
    ss = st.session_state
    for k in list(ss.keys()):
        if isinstance(k, str) and (k in SHARED_KEYS or k.startswith(PERSIST_PREFIXES)):
            ss[k] = ss[k]


def settings_json() -> str:
    """The problem settings as a JSON string (a cache key that changes when any problem setting changes)."""
    return json.dumps({k: st.session_state.get(k) for k in PROBLEM_KEYS}, sort_keys=True)
