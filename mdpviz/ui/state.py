"""Page state: defaults, session keys shared by every page, and the URL query parameters that mirror them.

Widgets never get a ``value=``; their value lives in ``st.session_state`` under the keys below, which are filled
with defaults (or values parsed from the URL) before any widget is drawn. Parsing is pure
(:func:`parse_query`), so bad URLs fall back to defaults with a notice a person can read.
"""

from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass
from typing import Any

import streamlit as st

from mdpviz import problem as _problem
from mdpviz.cities import city_info, default_city, list_cities, load_city
from mdpviz.errors import MdpvizError
from mdpviz.mechanisms import Mechanism, get_mechanism, mechanisms
from mdpviz.problem import COST_MODELS, METRICS
from mdpviz.region import WHOLE, parse_region

from .continuous import parse_point

# the fast, small default: every page opens on this and renders in well under a second
DEFAULTS: dict[str, Any] = {"k": 200, "m": 50, "metric": "haversine", "prior": "uniform", "cost": "travel",
                            "tasks": 10, "seed": 0, "region": WHOLE, "mech": "em", "secret": None,
                            "time_limit": 60.0, "compare": ["em", "em-br"], "sweep_mechs": ["em", "em-br"],
                            "source": "sample", "points_snap": True}
PRIORS_UI: tuple[str, ...] = ("uniform", "street_count")  # "points" needs an upload: library and CLI only
# K: the problem builder's rule, 2 ≤ K ≤ nodes in the region and ≤ its memory cap (mdpviz.problem.MAX_K, K × K
# arrays); the same for widgets, URLs and the CLI. Above SLOW_CHECK_K the page warns that the all-pairs check is slow.
K_MIN = 2
K_MAX: int = getattr(_problem, "MAX_K", 10_000)
SLOW_CHECK_K = 3000
M_MIN = 1  # |Y| ≥ 1 and ≤ K (the problem builder's rule)
TASKS_RANGE = (1, 50)
TIME_LIMIT_RANGE = (1.0, 1800.0)
PROBLEM_KEYS = ("city", "region", "k", "m", "metric", "prior", "cost", "tasks", "seed")
# keys whose values survive page switches (the widget clean-up is interrupted for them in app.py)
SHARED_KEYS = (*PROBLEM_KEYS, "mech", "secret", "time_limit", "compare", "sweep_mechs", "sweep_param", "sweep_n",
               "colour_mode", "show_dist", "show_outputs", "show_viol", "attack_y", "point", "show_heat", "heat_y",
               "show_lattice", "source", "points_snap")
PERSIST_PREFIXES = ("mp.",)
# every URL parameter a page reads (mechanism parameters come on top); others get a notice
URL_KEYS = (*PROBLEM_KEYS, "mech", "secret", "pt", "time_limit", "compare", "sweep_mechs", "sweep_param", "preset")


def default_city_slug() -> str:
    """The slug of the default city (the library's choice)."""
    return default_city()


def city_slugs() -> list[str]:
    """Slugs of every bundled city."""
    return [c.slug for c in list_cities()]


def city_nodes(slug: str) -> int:
    """Number of road nodes of a bundled city."""
    return next(c.nodes for c in list_cities() if c.slug == slug)


@functools.lru_cache(maxsize=32)
def region_nodes(slug: str, region: str) -> int:
    """Nodes of the city inside the region: the problem builder's upper bound on K (raises on a bad region)."""
    if region == WHOLE:
        return city_nodes(slug)
    net = load_city(slug)
    return int(parse_region(region, net.centre).contains(net.lat, net.lon).sum())


def k_range(slug: str, region: str = WHOLE) -> tuple[int, int, str]:
    """(lowest K, highest K, why the highest) for a city and region: the one rule of UI, URL and warnings."""
    try:
        nodes = region_nodes(slug, region)
    except MdpvizError:
        nodes = city_nodes(slug)
    where = city_info(slug).label + ("" if region == WHOLE else f" in region `{region}`")
    if nodes > K_MAX:
        return K_MIN, K_MAX, (f"the most mdpviz handles (its K × K arrays; {where} has {nodes:,} nodes: choose a "
                              "region or a smaller K)")
    return K_MIN, nodes, f"the {nodes:,} nodes of {where}"


def clamp_problem(values: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Problem settings made valid, with a notice for each value changed: K within :func:`k_range`, |Y| within
    [1, K], the task count and the seed in range. Pure: the same rule for widgets and URLs.
    """
    out, notices = dict(values), []
    lo, hi, why = k_range(out["city"], str(out.get("region") or WHOLE))
    k = int(out["k"])
    if k < lo:
        notices.append(f"K = {k:,} is below {lo} (an mDP problem needs two secrets); using K = {lo}.")
        out["k"] = lo
    elif k > hi:
        notices.append(f"K = {k:,} is above {hi:,}, {why}; using K = {hi:,}.")
        out["k"] = hi
    m = int(out["m"])
    if m < M_MIN:
        notices.append(f"|Y| = {m:,} is below {M_MIN}; using |Y| = {M_MIN}.")
        out["m"] = M_MIN
    elif m > out["k"]:
        notices.append(f"|Y| = {m:,} exceeds K = {out['k']:,} (the outputs are a subset of the secrets); "
                       f"using |Y| = {out['k']:,}.")
        out["m"] = out["k"]
    t = int(out["tasks"])
    if not TASKS_RANGE[0] <= t <= TASKS_RANGE[1]:
        fixed = min(max(t, TASKS_RANGE[0]), TASKS_RANGE[1])
        notices.append(f"The number of task nodes {t:,} is outside [{TASKS_RANGE[0]}, {TASKS_RANGE[1]}]; "
                       f"using {fixed}.")
        out["tasks"] = fixed
    if int(out["seed"]) < 0:
        notices.append(f"The seed {out['seed']} is negative; using 0.")
        out["seed"] = 0
    return out, notices


def check_region(slug: str, text: str) -> tuple[str, str | None]:
    """(canonical region text, notice or None): an invalid or empty region falls back to the whole city."""
    try:
        region = parse_region(text, city_info(slug).centre)
    except MdpvizError as e:
        return WHOLE, f"{e} Using the whole city."
    spec = text.strip().lower() if text.strip().lower().startswith(("centre:", "center:")) else region.spec
    spec = spec.replace("center:", "centre:")
    try:
        if region_nodes(slug, spec) < K_MIN:
            return WHOLE, (f"Region `{text}` holds fewer than {K_MIN} nodes of {city_info(slug).label}; using the "
                           "whole city.")
    except MdpvizError as e:
        return WHOLE, f"{e} Using the whole city."
    return spec, None


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


def _int(raw: str, name: str, low: int, high: int, notices: list[str], label: str, fallback: Any = None) -> Any:
    """``raw`` as a whole number in [low, high], else ``fallback`` with a notice saying so."""
    using = "the default" if fallback is None else f"{fallback:,}"
    try:
        value = int(float(raw))
        if float(raw) != value:
            raise ValueError
    except (ValueError, OverflowError):
        notices.append(f"URL parameter `{name}={raw}` is not a whole number; using {using} for {label}.")
        return fallback
    if not low <= value <= high:
        notices.append(f"URL parameter `{name}={raw}` is outside [{low:,}, {high:,}] for {label}; using {using}.")
        return fallback
    return value


def parse_query(query: dict[str, str]) -> Parsed:
    """Turn URL query parameters into session values; unknown or invalid values become notices.

    Only keys present in the URL are returned, so a URL without parameters keeps the current state.
    """
    notices: list[str] = []
    q = {k: (v[-1] if isinstance(v, list) else str(v)) for k, v in query.items()}
    out = _problem_values(q, notices)
    out.update(_view_values(q, notices))
    out.update(_mechanism_lists(q, notices))
    out.update(_mechanism_values(q, notices))
    notices += _unknown_keys(q)
    return Parsed(out, notices)


def _problem_values(q: dict[str, str], notices: list[str]) -> dict[str, Any]:
    """The problem settings of a URL (city, region, K, |Y|, tasks, seed, metric, prior, cost); notices for refusals."""
    out: dict[str, Any] = {}
    cities = city_slugs()
    if "city" in q:
        if q["city"] in cities:
            out["city"] = q["city"]
        else:
            notices.append(f"Unknown city `{q['city']}` in the URL; showing {default_city_slug()} instead "
                           f"(available: {', '.join(cities)}).")
            out["city"] = default_city_slug()
    # the same limits as the widgets (k_range: 2 ≤ K ≤ nodes in the region and MAX_K; 1 ≤ |Y| ≤ K); a value out
    # of range falls back to the default with a notice, and validate_state checks the whole state afterwards
    city = out.get("city", default_city_slug())
    if "region" in q:
        out["region"] = q["region"]  # checked against the city by validate_state
    k_lo, k_hi, k_why = k_range(city, str(out.get("region", WHOLE)))
    if "k" in q:
        out["k"] = _int(q["k"], "k", k_lo, k_hi, notices, f"K = |X| (at most {k_why})", min(DEFAULTS["k"], k_hi))
    k = out.get("k", DEFAULTS["k"])
    for key, rng, label in (("m", (M_MIN, k), "|Y| (at most K)"), ("tasks", TASKS_RANGE, "the number of task nodes"),
                            ("seed", (0, 2**31 - 1), "the seed")):
        if key in q:
            out[key] = _int(q[key], key, rng[0], rng[1], notices, label, min(DEFAULTS[key], rng[1]))
    for key, allowed in (("metric", METRICS), ("prior", PRIORS_UI), ("cost", COST_MODELS)):
        if key in q:
            if q[key] in allowed:
                out[key] = q[key]
            else:
                notices.append(f"URL parameter `{key}={q[key]}` is not one of {', '.join(allowed)}; "
                               f"using {DEFAULTS[key]}.")
                out[key] = DEFAULTS[key]
    return out


def _view_values(q: dict[str, str], notices: list[str]) -> dict[str, Any]:
    """The selected secret, the picked point and the time limit of a URL; notices for refusals."""
    out: dict[str, Any] = {}
    if "secret" in q:
        v = _int(q["secret"], "secret", 0, K_MAX - 1, notices, "the selected secret")
        out["secret"] = v  # None: the page picks the secret nearest the middle
    if "pt" in q:  # a picked point of the plane "lat,lon" (mechanisms with rows for any point)
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
    return out


def _mechanism_lists(q: dict[str, str], notices: list[str]) -> dict[str, Any]:
    """The mechanisms compared and swept, and the swept parameter, of a URL; notices for refusals."""
    out: dict[str, Any] = {}
    for key in ("compare", "sweep_mechs"):
        if key in q:
            names = [n for n in q[key].split(",") if n]
            known = [n for n in names if n in {m.name for m in mechanisms()}]
            chosen = known[:4] or list(DEFAULTS[key])
            unknown = [n for n in names if n not in known]
            if unknown or not known:
                notices.append(f"URL parameter `{key}={q[key]}` names unknown mechanisms "
                               f"({', '.join(unknown) or 'none given'}); using {', '.join(chosen)} "
                               f"(known: {', '.join(m.name for m in mechanisms())}).")
            elif len(known) > 4:
                notices.append(f"URL parameter `{key}={q[key]}` names {len(known)} mechanisms; at most 4 are "
                               f"compared: using {', '.join(chosen)}.")
            out[key] = chosen
    if "sweep_param" in q:  # checked against the chosen mechanisms' parameters on the Trade-off page
        out["sweep_param"] = q["sweep_param"]
    return out


def _mechanism_values(q: dict[str, str], notices: list[str]) -> dict[str, Any]:
    """The mechanism of a URL and its parameters' session values; notices for refusals."""
    out: dict[str, Any] = {}
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
    return out


def _unknown_keys(q: dict[str, str]) -> list[str]:
    """A notice for each URL parameter the dashboard does not read, with the nearest known name as a hint."""
    notices = []
    known = set(URL_KEYS) | {param_url_name(p.name) for m in mechanisms() for p in m.params}
    for key in q:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.5)
            if key in ("mechanism", "method", "mechanisms"):
                close = ["mech" if key != "mechanisms" else "compare"]
            hint = f"; did you mean `{close[0]}`?" if close else ""
            notices.append(f"URL parameter `{key}={q[key]}` is not one this dashboard reads{hint} It was ignored.")
    return notices


def query_for(page: str) -> dict[str, str]:
    """The URL query parameters that describe ``page``'s current state (strings)."""
    ss = st.session_state
    q: dict[str, str] = {}
    if page in ("explore", "compare", "tradeoff"):
        q.update({k: str(ss[k]) for k in PROBLEM_KEYS if k in ss and (k != "region" or ss[k] != WHOLE)})
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


# mechanisms whose dashboard start differs from their schema default: a preset that finishes interactively
# (LP+BD: plain Benders, the paper's, rarely closes within a minute; its stabilised preset, ours, solves the same
# LP and does), ε aside
DASHBOARD_PRESETS = {"lp-bd": "stabilised"}


def dashboard_defaults(mech: Mechanism) -> dict[str, Any]:
    """The values a mechanism's controls start from: its schema defaults, or the preset of ``DASHBOARD_PRESETS``."""
    values = mech.defaults()
    if mech.name in DASHBOARD_PRESETS:
        values.update({k: v for k, v in mech.preset(DASHBOARD_PRESETS[mech.name]).params if k != "eps"})
    return values


def ensure_params(mech: Mechanism) -> None:
    """Fill a mechanism's parameter keys with its dashboard defaults where missing."""
    for name, value in dashboard_defaults(mech).items():
        st.session_state.setdefault(param_key(mech.name, name), value)


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
    if "preset" in current:  # applied by presets.follow, in the router
        ss["_preset_request"] = current["preset"]
    ss["_notices"] = ss.get("_notices", []) + parsed.notices
    ss["_url_written"] = current


def write_url(page: str) -> None:
    """Mirror the page state in the URL so the view can be shared or reloaded."""
    q = query_for(page)
    if q != st.session_state.get("_url_written"):
        st.query_params.from_dict(q)
        st.session_state["_url_written"] = q


def notify(message: str) -> None:
    """Queue a notice for :func:`show_notices` (shown once, on the page that runs next)."""
    notices = st.session_state.setdefault("_notices", [])
    if message not in notices:
        notices.append(message)


def show_notices() -> None:
    """Show (once) the notices queued for refused inputs: invalid URL values, out-of-range widget values."""
    for n in st.session_state.pop("_notices", []):
        st.warning(n, icon=":material/warning:")


def check_requested_page(url_paths: list[str]) -> None:
    """A notice when the browser asked for a page that does not exist (Streamlit silently shows Home)."""
    try:
        # local: a Streamlit internal; should it move, the except below drops the notice instead of the page
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        name = ctx.pages_manager.intended_page_name if ctx is not None else None
    except Exception:  # noqa: BLE001 - an internal of Streamlit: without it, no notice, never a failure
        return
    if name and name.strip("/") not in url_paths:
        pages = ", ".join(f"`/{p}`" for p in url_paths if p)
        notify(f"There is no page `/{name.strip('/')}`; showing Home instead (pages: {pages}).")


def validate_state() -> None:
    """Make the shared inputs valid before any widget is drawn, saying what was changed (:func:`notify`).

    One rule for widgets and URLs alike: the region must parse and hold nodes, K lies in :func:`k_range`,
    |Y| ≤ K, tasks and seed in range, the time limit in ``TIME_LIMIT_RANGE``, every parameter of the current
    mechanism in its schema's range (values typed into a box are not bounded by the box).
    """
    ss = st.session_state
    if ss.get("city") not in city_slugs():
        ss["city"] = default_city_slug()
    typed = str(ss.get("region_text") or "").strip()
    if typed:  # a region typed in the box replaces the chosen one
        ss["region"], ss["region_text"], ss["_region_ok"] = typed, "", None
    region = str(ss.get("region") or WHOLE)
    checked = ss.get("_region_ok")
    if checked != (ss["city"], region):
        spec, note = check_region(ss["city"], region)
        if note:
            notify(note)
        ss["region"] = spec
        ss["_region_ok"] = (ss["city"], spec)
    values = {k: ss[k] for k in ("city", "region", "k", "m", "tasks", "seed")}
    fixed, notes = clamp_problem(values)
    for k, v in fixed.items():
        if ss[k] != v:
            ss[k] = v
    for n in notes:
        notify(n)
    t = ss.get("time_limit", DEFAULTS["time_limit"])
    lo, hi = TIME_LIMIT_RANGE
    if not isinstance(t, (int, float)) or not lo <= t <= hi:
        fixed_t = DEFAULTS["time_limit"] if not isinstance(t, (int, float)) else min(max(float(t), lo), hi)
        notify(f"The time limit {t} s is outside [{lo:g}, {hi:g}] s; using {fixed_t:g} s.")
        ss["time_limit"] = fixed_t
    mech_name = ss.get("mech")
    if mech_name in {m.name for m in mechanisms()}:
        fix_params(get_mechanism(mech_name))


def fix_params(mech: Mechanism) -> None:
    """Bring each parameter of ``mech`` held in session state into its schema's range, with a notice."""
    ss = st.session_state
    for p in mech.params:
        key = param_key(mech.name, p.name)
        if key not in ss:
            continue
        try:
            ss[key] = p.validate(ss[key])
        except MdpvizError as e:
            fixed = p.default
            if p.kind in (int, float) and isinstance(ss[key], (int, float)) and p.low is not None:
                fixed = max(ss[key], p.low)
                if p.high is not None:
                    fixed = min(fixed, p.high if not p.open_high else p.default)
                fixed = p.kind(fixed)
            notify(f"{e} Using {p.display} = {fixed:g}." if isinstance(fixed, (int, float)) and not
                   isinstance(fixed, bool) else f"{e} Using the default {fixed!r}.")
            ss[key] = fixed


def keep_shared_state() -> None:
    """Interrupt Streamlit's widget clean-up so shared values survive a page switch (documented pattern)."""
    ss = st.session_state
    for k in list(ss.keys()):
        if isinstance(k, str) and (k in SHARED_KEYS or k.startswith(PERSIST_PREFIXES)):
            ss[k] = ss[k]


def settings_json() -> str:
    """The problem settings as a JSON string (a cache key that changes when any problem setting changes)."""
    return json.dumps({k: st.session_state.get(k) for k in PROBLEM_KEYS}, sort_keys=True)
