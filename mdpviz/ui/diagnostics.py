"""A result's free-form diagnostics made readable: sorted into a table, histograms and measured checks, points
worth drawing, users' sampled reports, the anchors-and-budget panel, and mechanism-specific panels."""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from mdpviz.errors import MdpvizError
from mdpviz.mechanisms import Result, get_mechanism
from mdpviz.problem import Problem
from mdpviz.verdict import is_check, measured_checks

from . import cache, charts


def _as_array(value: Any) -> np.ndarray | None:
    """``value`` as a numpy array, or None for ragged or odd values (diagnostics are free-form)."""
    try:
        return np.asarray(value)
    except (TypeError, ValueError):
        return None


def is_binned(value: Any) -> bool:
    """A pre-binned histogram: a dict with ``counts`` and ``edges`` (one more edge than counts)."""
    return isinstance(value, dict) and "counts" in value and "edges" in value


def _walk(prefix: str, value: Any, found: dict[str, Any], test: Any) -> None:
    if test(value):
        found[prefix] = value
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk(f"{prefix}.{k}" if prefix else str(k), v, found, test)


def binned_histograms(diag: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every pre-binned histogram in the diagnostics, by dotted name."""
    found: dict[str, Any] = {}
    _walk("", diag, found, is_binned)
    return {k: v for k, v in found.items() if len(v["counts"]) and len(v["edges"]) == len(v["counts"]) + 1}


SUBSCRIPTS = {"x_n": "xₙ", "x_m": "xₘ"}


def formula_text(text: str) -> str:
    """A check's exponent as a person reads it, not TeX: ``(ε − ε̄_{x_n,x_m})·d`` → ``(ε − ε̄(xₙ, xₘ))·d``.

    >>> formula_text("(ε − ε̄_{x_n,x_m})·d"), formula_text("(ε − ε̄_{x_n,x'})·d, both directions"), formula_text("ε·d")
    ('(ε − ε̄(xₙ, xₘ))·d', "(ε − ε̄(xₙ, x'))·d, both directions", 'ε·d')
    """
    def sub(m: re.Match[str]) -> str:
        inner = m.group(1)
        for raw, shown in SUBSCRIPTS.items():
            inner = inner.replace(raw, shown)
        return "(" + ", ".join(p.strip() for p in inner.split(",")) + ")"

    return re.sub(r"_\{([^}]*)\}", sub, text)


def check_rows(diag: dict[str, Any]) -> list[dict[str, Any]]:
    """Every measured check (violated / checked) in the diagnostics as table rows with numerator/denominator."""
    return [{"check": key_label(name), "violated": f"{bad:,}", "checked": f"{total:,}",
             "ratio": f"{bad / total:.3g}" if total else "–", "exponent": formula_text(str(v.get("exponent", "")))}
            for name, bad, total, v in measured_checks(diag)]


MIN_HISTOGRAM = 5  # a float diagnostic with fewer values is listed in the table, not drawn


def _flatten(prefix: str, value: Any, scalars: dict[str, Any], arrays: dict[str, np.ndarray],
             other: dict[str, str]) -> None:
    if is_binned(value) or is_check(value):  # drawn as bar charts / listed in the checks table
        return
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, scalars, arrays, other)
        return
    if isinstance(value, (bool, np.bool_, str)) or value is None:
        scalars[prefix] = value if not isinstance(value, np.bool_) else bool(value)
        return
    if isinstance(value, (int, float, np.integer, np.floating)):
        scalars[prefix] = value.item() if isinstance(value, np.generic) else value
        return
    arr = _as_array(value)
    if arr is None:
        other[prefix] = type(value).__name__
        return
    if arr.ndim == 1 and arr.dtype.kind in "fiu" and len(arr):
        if arr.dtype.kind == "f" and len(arr) >= MIN_HISTOGRAM:
            arrays[prefix] = arr.astype(float)
        elif arr.dtype.kind == "f":  # too few values for a histogram to say anything: list them
            scalars[prefix] = ", ".join(f"{v:.4g}" for v in arr)
        else:
            scalars[prefix] = f"{len(arr):,} whole numbers (in the downloads)"
    elif arr.ndim == 0 and arr.dtype.kind in "fiub":
        scalars[prefix] = arr.item()
    else:
        shape = " × ".join(f"{n:,}" for n in arr.shape)
        other[prefix] = f"a {shape} table (in the downloads)"


def split_diagnostics(diag: dict[str, Any]) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, str]]:
    """Sort a result's diagnostics into scalars (a table), float 1-D arrays (histograms) and the rest."""
    scalars: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    other: dict[str, str] = {}
    for k, v in diag.items():
        _flatten(str(k), v, scalars, arrays, other)
    return scalars, arrays, other


def table_arrays(diag: dict[str, Any]) -> dict[str, np.ndarray]:
    """2-D numeric diagnostics with 2 to 6 columns (per-iteration histories), except coordinate lists."""
    found: dict[str, np.ndarray] = {}
    for k, v in diag.items():
        if isinstance(v, (str, bytes, dict)) or "latlon" in str(k).lower():
            continue
        try:
            arr = np.asarray(v, dtype=float)
        except (TypeError, ValueError):
            continue
        if arr.ndim == 2 and 2 <= arr.shape[1] <= 6 and arr.shape[0] >= 2:
            found[str(k)] = arr
    return found


def diagnostic_points(diag: Mapping[str, Any], prob: Problem) -> tuple[str, np.ndarray, np.ndarray] | None:
    """Points worth drawing from the diagnostics: an (n, 2) ``*latlon*`` array, or anchor indices into X."""
    for k, v in diag.items():
        name = str(k).lower()
        arr = _as_array(v)
        if arr is None:
            continue
        if "latlon" in name and arr.ndim == 2 and arr.shape[1] == 2 and arr.dtype.kind in "fi":
            return str(k), arr[:, 0].astype(float), arr[:, 1].astype(float)
        if "anchor" in name and arr.ndim == 1 and arr.dtype.kind in "iu" and len(arr) and arr.max() < prob.k:
            return str(k), prob.x_lat[arr], prob.x_lon[arr]
    return None


def user_reports(diag: Mapping[str, Any], k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Users' true secrets and sampled reports (both indices into X) from ``diag['users']``, where given."""
    users = diag.get("users")
    if not isinstance(users, dict) or "secret" not in users or "report_x" not in users:
        return None
    try:
        src, dst = np.asarray(users["secret"], dtype=np.int64), np.asarray(users["report_x"], dtype=np.int64)
    except (TypeError, ValueError):
        return None
    if src.shape != dst.shape or src.ndim != 1:
        return None
    ok = (dst >= 0) & (src >= 0) & (src < k) & (dst < k)
    return src[ok], dst[ok]


DRAWN_ELSEWHERE = ("budget_curve",)  # diagnostics with their own chart (mdpviz.ui.continuous)


def diagnostics_panel(result: Result, k: int | None = None) -> None:
    """Generic view of ``result.diagnostics`` plus a specific PAnDA panel when its keys are present."""
    diag = {n: v for n, v in (result.diagnostics or {}).items() if n not in DRAWN_ELSEWHERE}
    if not diag:
        st.caption("This mechanism reports no diagnostics.")
        return
    if result.mechanism not in SPECIFIC_PANELS:  # a specific panel draws its own budget (DISTA-LP: ε, not ε_pt)
        panda_panel(diag, result.eps, k)
    checks = check_rows(diag)
    if checks:
        st.markdown("**Measured checks reported by the mechanism** (violated / checked)")
        st.dataframe(pd.DataFrame(checks), hide_index=True, width="stretch")
    binned = binned_histograms(diag)
    if binned:
        cols = st.columns(2)
        for n, (name, h) in enumerate(binned.items()):
            with cols[n % 2]:
                st.plotly_chart(charts.binned_histogram(h, key_label(name)), key=f"binned-{name}",
                                config={"displayModeBar": False})
    scalars, arrays, other = split_diagnostics(diag)
    if scalars or other:
        params = _params_of(result)  # a diagnostic that echoes a parameter reads as the parameter's choice does
        rows = [{"diagnostic": key_label(name),
                 "value": _cell(params[name].shown(v) if name in params and isinstance(v, str) else v)}
                for name, v in {**scalars, **other}.items()]
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    for name, arr in table_arrays(diag).items():
        names = array_columns(diag, name, arr.shape[1])
        title = ("Iteration history (one point per round)" if name == "history" else
                 f"{key_label(name)} (one point per {'round' if name == 'lp_rounds' else 'row'})")
        st.plotly_chart(charts.columns_chart(arr, title, names), key=f"cols-{name}", config={"displayModeBar": False})
    cols = st.columns(2)
    for n, (name, arr) in enumerate(arrays.items()):
        finite = arr[np.isfinite(arr)]
        with cols[n % 2]:
            st.plotly_chart(charts.histogram(finite, f"{key_label(name)} ({len(arr):,} values)"), key=f"hist-{name}",
                            config={"displayModeBar": False})


# the columns of the LP engines' iteration histories, as their docstrings give them (mdpviz.lp.structured, .conic),
# recognised by a key only that engine reports beside ``history``
HISTORY_COLUMNS: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("pair_cap", 5, ("seconds since start", "best objective (m)", "best bound (m)", "LP variables", "LP pair rows")),
    ("atoms_final", 4, ("seconds since start", "objective (m)", "best lower bound (m)", "atoms")))
# the row-and-column engine's LP work per round (mdpviz.lp.structured, ``lp_rounds``)
LP_ROUND_COLUMNS = ("LP seconds", "simplex iterations", "interior-point iterations", "pooled rows taken back",
                    "pair rows held as rows after it")


def array_columns(diag: dict[str, Any], name: str, n: int) -> list[str]:
    """Names of the columns of a 2-D diagnostic: an LP engine's iteration history where recognised, else
    ``column 1`` … (numbered from 1, as a person counts).

    >>> array_columns({"history": [], "pair_cap": 15}, "history", 5)[:2]
    ['seconds since start', 'best objective (m)']
    >>> array_columns({"path": []}, "path", 2)
    ['column 1', 'column 2']
    """
    if name == "history":
        for marker, width, names in HISTORY_COLUMNS:
            if marker in diag and width == n:
                return list(names)
    if name == "lp_rounds" and n == len(LP_ROUND_COLUMNS):
        return list(LP_ROUND_COLUMNS)
    return [f"column {j + 1}" for j in range(n)]


# words for the parts of diagnostic keys (the mechanisms' own names); anything else is turned into words below
KEY_WORDS = {
    "eps": "ε", "eps1": "ε₁ (axis 1)", "eps2": "ε₂ (axis 2)", "eps_bar": "Phase I cost ε̄", "eps_pt": "ε for the LP",
    "xi_hat": "safety margins ξ̂", "delta": "δ", "tau": "τ", "gamma": "γ", "km_inv": "(km⁻¹)",
    "pair_cap": "largest exponent kept on a pair row (ε·d cap)", "shrink_t": "row-sum repair: shift t",
    "deficit_max": "row-sum repair: largest deficit added", "row_sum_max_before": "row sums before repair (max)",
    "row_sum_min_before": "row sums before repair (min)", "gap": "certified relative gap", "lp": "LP",
    "row_fix": "LP point", "cone_repair": "repair into the cone",
    "held_entries": "LP entries held by their cell's row (that pair row a bound)",
    "lp_rebuilt": "LP rebuilt with every pair row a row (HiGHS failed on the held form)",
    "cold_rounds": "LP rounds solved cold by interior point (a large LP grown by a tenth or more)",
    "pooled_rows": "pair rows moved out of the LP while slack (counted each time)",
    "pool_returns": "pooled pair rows taken back because a solution broke them",
    "lp_rounds": "LP work",
    "dropped_outputs": "outputs never reported (the anchor LP gives them probability 0 at every anchor)",
    "trust_radius": "trust box around the best private point: radius (0: no box)",
    "trust_lifted": "LP round after which the trust box was lifted (0: never)",
    "lp_tolerance": "HiGHS feasibility tolerance at the end (tightened when nothing was left to add)",
    "cy": "cost block", "dx": "x-distance block", "dy": "y-distance block", "v_pair": "V_pair (between users)",
    "v_cf": "V_cf (counterfactual anchors)", "v_pure": "V_pure (pure ε-mDP between users)", "p_s": "p_s",
    "anpo": "AnPO", "pl": "privacy loss", "relerr": "relative error", "lb": "lower bound",
    "violations_claim": "against its claim", "violations_enforced": "against the constraints it enforces",
    "enforced": "against its LP's constraints", "claim_check": "against its claim",
}
UNIT_SUFFIXES = {"m": "m", "km": "km", "s": "s", "mb": "MB", "km_inv": "km⁻¹", "bytes": "bytes"}
STAT_SUFFIXES = ("max", "min", "mean", "median", "total")


def key_label(key: str) -> str:
    """A diagnostic's dotted key in words with its unit: ``lp.size.pricing_rows_max`` → ``LP · size · pricing rows
    (max)``; ``memory_peak_mb`` → ``memory peak (MB)``; ``pair_cap`` → its words from ``KEY_WORDS``."""
    parts = []
    for part in key.split("."):
        low = part.lower()
        if low in KEY_WORDS:
            parts.append(KEY_WORDS[low])
            continue
        words = part.split("_")
        unit = stat = ""
        if len(words) > 2 and "_".join(words[-2:]).lower() == "km_inv":
            unit, words = "km⁻¹", words[:-2]
        elif len(words) > 1 and words[-1].lower() in UNIT_SUFFIXES:
            unit, words = UNIT_SUFFIXES[words[-1].lower()], words[:-1]
        if len(words) > 1 and words[-1].lower() in STAT_SUFFIXES:
            stat, words = words[-1].lower(), words[:-1]
        text = " ".join(KEY_WORDS.get(w.lower(), w) for w in words)
        extra = ", ".join(x for x in (stat, unit) if x)
        parts.append(f"{text} ({extra})" if extra else text)
    return " · ".join(parts)


def _params_of(result: Result) -> dict[str, Any]:
    """The result's mechanism's parameters by name (none for a mechanism no longer registered)."""
    try:
        return {p.name: p for p in get_mechanism(result.mechanism).params}
    except MdpvizError:  # a result from the disk cache may name a mechanism this build lacks
        return {}


def _cell(v: Any) -> str:
    """A diagnostic's value as the table shows it: "–" where there is none (never None or nan).

    >>> [_cell(v) for v in (None, float("nan"), 0.1234567, True, "w_min")]
    ['–', '–', '0.123457', 'True', 'w_min']
    """
    if v is None or (isinstance(v, float) and not np.isfinite(v) and np.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _find(diag: dict[str, Any], *needles: str) -> tuple[str, Any] | None:
    for k, v in diag.items():
        if any(n in str(k).lower() for n in needles):
            return str(k), v
    return None


def anchor_count(diag: dict[str, Any]) -> tuple[str, int] | None:
    """(name, count) of the anchors in the diagnostics: an index array or a plain count named like ``anchor``."""
    found = _find(diag, "anchor")
    if found is None:
        return None
    k, v = found
    arr = np.asarray(v)
    if arr.ndim == 1 and arr.dtype.kind in "iu":
        return k, len(arr)
    if arr.ndim == 0 and arr.dtype.kind in "iu":
        return k, int(arr)
    if arr.ndim == 2:
        return k, len(arr)
    return None


def budget_parts(diag: dict[str, Any]) -> tuple[list[tuple[str, float]], str]:
    """The parts of a budget split and their unit: a dict named like ``budget``/``split`` of numbers, or its
    ``percent`` (% of ε) or ``km_inv`` (km⁻¹) sub-dict."""
    split = _find(diag, "budget_split", "split")
    if split is None or not isinstance(split[1], dict):
        return [], ""
    body, unit = split[1], ""
    for sub_key, sub_unit in (("percent", "% of ε"), ("km_inv", "km⁻¹")):
        if isinstance(body.get(sub_key), dict):
            body, unit = body[sub_key], sub_unit
            break
    parts = [(str(n), float(x)) for n, x in body.items() if isinstance(x, (int, float, np.integer, np.floating))
             and not isinstance(x, bool)]
    if not unit and parts:
        total = sum(x for _, x in parts)
        unit = "% of ε" if 95 <= total <= 105 else ("fraction of ε" if 0.95 <= total <= 1.05 else "km⁻¹")
    return parts, unit


# the parts of PAnDA's budget split (``mdpviz.panda.evaluate``) in the Learn page's words
PART_WORDS = {"phase1": "Phase I (anchor choice)", "margin": "safety margin", "phase2": "Phase II (the LP)"}


def panda_panel(diag: dict[str, Any], eps: float, k: int | None = None) -> None:
    """Anchor-based mechanisms (PAnDA, AIPO): anchor count and share of K, and the budget split when given."""
    anchors = anchor_count(diag)
    parts, unit = budget_parts(diag)
    if anchors is None and not parts:
        return
    st.markdown("**Anchors and privacy budget**")
    if anchors is not None:
        name, n = anchors
        share = f" ({n / k:.1%} of K = {k:,})" if k else ""
        lat = diag.get("lattice")
        if isinstance(lat, dict) and {"nx", "ny", "step_km"} <= lat.keys():  # a regular lattice (AIPO)
            st.caption(f"{name}: **{n:,}** anchors on a {lat['nx']} × {lat['ny']} lattice with cells of "
                       f"{float(lat['step_km']) * 1000:,.0f} m{share}. The LP is solved over anchors only.")
        else:
            st.caption(f"{name}: **{n:,}** anchors{share}. The LP is solved over anchors only; PAnDA reports "
                       "≈ 15 % of K in the paper.")
    sizes = [(label, diag.get(key)) for key, label in (("expected_anchor_set_size", "expected anchor set size E|A_n|"),
                                                        ("mean_anchor_set_size", "mean sampled |A_n|"))
             if isinstance(diag.get(key), (int, float))]
    if sizes:
        st.caption(" · ".join(f"{label}: {value:.3g}" for label, value in sizes))
    if parts:
        parts = [(PART_WORDS.get(name, name), value) for name, value in parts]
        st.plotly_chart(charts.stacked_split(parts, f"Budget split at ε = {eps:g} km⁻¹", unit),
                        key="panda-split", config={"displayModeBar": False})


# mechanism-specific panels that other modules of mdpviz/ui provide: mechanism name -> (module, function);
# each function takes (problem, road segments, result) and lays out its own panel
SPECIFIC_PANELS: dict[str, tuple[str, str]] = {"dista-lp": ("mdpviz.ui.dista", "render")}


def specific_panel(prob: Problem, result: Result) -> None:
    """The mechanism's own panel, when one is registered in ``SPECIFIC_PANELS``."""
    entry = SPECIFIC_PANELS.get(result.mechanism)
    if entry is None or not result.ok:
        return
    render = getattr(importlib.import_module(entry[0]), entry[1])
    render(prob, cache.road_layer(prob), result)
