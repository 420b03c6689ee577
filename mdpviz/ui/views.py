"""Rendering helpers shared by the pages: error guard, solve with progress, metrics, diagnostics, downloads."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from mdpviz.errors import MdpvizError
from mdpviz.explain import format_s, solve_warning
from mdpviz.export import result_bytes
from mdpviz.mechanisms import Mechanism, Result
from mdpviz.problem import Problem
from mdpviz.solve import solve
from mdpviz.verdict import Verdict, is_check, measured_checks, verdict

from . import cache, charts, continuous


@contextmanager
def guard() -> Iterator[None]:
    """Show a library error as a message a person can act on, then stop the page (never a traceback)."""
    try:
        yield
    except MdpvizError as e:
        st.error(str(e), icon=":material/error:")
        st.stop()


def solve_hint(prob_k: int, prob_m: int, mech: Mechanism) -> str | None:
    """The slow-solve warning of ``mdpviz.explain`` (the mechanism's ``max_k``, the LP's size), and a note when
    the all-pairs check itself will take a while (K above ``state.SLOW_CHECK_K``)."""
    from . import state

    hint = solve_warning(prob_k, prob_m, max_k=mech.max_k, family=mech.family, exact=mech.exact,
                         time_limit_s=float(st.session_state.get("time_limit", 60.0)))
    if prob_k > state.SLOW_CHECK_K:
        pairs = prob_k * (prob_k - 1)
        check = (f"Checking ε-mDP on all {pairs:,} ordered pairs × {prob_m:,} outputs after the solve takes "
                 "a while (tens of seconds and more).")
        hint = f"{hint} {check}" if hint else check
    return hint


def run_solve(prob: Problem, mech: Mechanism, params: dict[str, Any], time_limit: float,
              label: str | None = None) -> Result:
    """Solve in a worker thread while this script shows the phase and elapsed time; returns the Result.

    The worker only records the latest phase: it never calls Streamlit (no script context there). A quick
    solve (under 0.3 s) shows no status box at all. The box ends green only for a usable mechanism.
    """
    box: dict[str, Any] = {"phase": "starting", "fraction": None}
    out: dict[str, Any] = {}
    name = label or mech.label

    def progress(phase: str, fraction: float | None) -> None:
        box["phase"], box["fraction"] = phase, fraction

    def work() -> None:
        try:
            out["result"] = solve(prob, mech.name, params, progress=progress, time_limit=time_limit)
        except BaseException as e:  # noqa: BLE001 - handed to the script thread, which shows or re-raises it
            out["error"] = e

    worker = threading.Thread(target=work, name=f"mdpviz-solve-{mech.name}", daemon=True)
    t0 = time.perf_counter()
    worker.start()
    worker.join(0.3)
    if worker.is_alive():
        with st.status(f"Solving {name}…", expanded=True) as status:
            bar = st.progress(0.0, text="starting")
            while worker.is_alive():
                worker.join(0.2)
                el = time.perf_counter() - t0
                frac = box["fraction"]
                shown = float(frac) if frac is not None else min(0.99, el / max(time_limit, 1e-9))
                bar.progress(min(max(shown, 0.0), 1.0),
                             text=f"{box['phase']} · {el:.1f} s elapsed (limit {time_limit:g} s)")
            took = format_s(time.perf_counter() - t0)
            result = out.get("result")
            if "error" in out:
                status.update(label=f"{name} failed after {took}", state="error", expanded=False)
            elif result is not None and not result.ok:
                status.update(label=f"{name}: {result.status} after {took}, no mechanism", state="error",
                              expanded=False)
            else:
                status.update(label=f"{name}: {result.status if result else 'done'} in {took}", state="complete",
                              expanded=False)
    if "error" in out:
        raise out["error"]
    result = out["result"]
    cache.remember(prob, result)
    return result


def solve_or_lookup(prob: Problem, mech: Mechanism, params: dict[str, Any], solve_now: bool,
                    time_limit: float) -> tuple[Result | None, str | None]:
    """Solve (when asked) or look up a result; a library error becomes its message instead of stopping the page."""
    try:
        if solve_now:
            return run_solve(prob, mech, params, time_limit), None
        return cache.lookup(prob, mech.name, params), None
    except MdpvizError as e:
        return None, str(e)


def phase_text(timings: dict[str, float]) -> str:
    """Seconds per phase as one short line (``total_s`` left out): ``anchors 0.3 ms · LP solve 1.2 s``."""
    return " · ".join(f"{k.removesuffix('_s').replace('_', ' ')} {format_s(v)}" for k, v in timings.items()
                      if k != "total_s" and isinstance(v, (int, float)))


# words for the LP-size keys the solvers report; other keys are turned into words by lp_size_label
LP_SIZE_LABELS = {"wem_entries": "weighted-EM entries", "pricing_lps": "pricing LPs",
                  "pricing_rows_max": "rows per pricing LP (max)", "pricing_rows_mean": "rows per pricing LP (mean)",
                  "master_rows": "master LP rows", "atoms_used": "atoms used", "nonzeros": "nonzeros",
                  "sub_variables_max": "subproblem variables (max)",
                  "sub_constraints_max": "subproblem constraints (max)"}


def lp_size_label(key: str) -> str:
    """A readable name of an LP-size key: ``pricing_rows_mean`` → ``rows per pricing LP (mean)``.

    >>> lp_size_label("master_variables"), lp_size_label("cuts_max")
    ('master variables', 'cuts (max)')
    """
    if key in LP_SIZE_LABELS:
        return LP_SIZE_LABELS[key]
    words = key.split("_")
    if words[-1] in ("max", "mean", "min", "total") and len(words) > 1:
        return f"{' '.join(words[:-1])} ({words[-1]})"
    return " ".join(words)


def lp_size_text(lp_size: dict[str, int]) -> str:
    return " · ".join(f"{v:,} {lp_size_label(k)}" for k, v in lp_size.items())


VERDICT_BOX = {"ok": (st.success, ":material/verified_user:"), "info": (st.info, ":material/info:"),
               "warning": (st.warning, ":material/warning:"), "error": (st.error, ":material/gpp_bad:")}


def verdict_box(result: Result, ev: dict[str, Any] | None, label: str) -> Verdict:
    """The plain-words verdict (``mdpviz.verdict``) in a box coloured by its level, then the mechanism's message."""
    v = verdict(result, ev, label=label)
    box, icon = VERDICT_BOX[v.level]
    box(v.headline, icon=icon)
    if result.message:
        st.caption(f"**What happened:** {result.message}")
    if not result.ok:
        st.caption("Try a smaller K or |Y|, a faster mechanism, or a longer time limit.")
    return v


def metrics_panel(prob: Problem, result: Result, ev: dict[str, Any], v: Verdict | None = None) -> None:
    """The headline numbers of one result, with units, and the violations stated against the claim."""
    viol = ev["violations"]
    if v is not None and v.meaning:
        st.caption(v.meaning)
    st.metric("Utility loss (m)", f"{ev['utility_loss_m']:.1f}",
              help="Expected cost Σ_x p_x Σ_y c(x, y)·Z[x, y] in metres: lower is better for the user.")
    st.metric("mDP violation ratio (pairs)", f"{viol['ratio']:.3g}",
              help=f"Ordered pairs (x, x') with some y where Z[x,y] > e^(ε·d)·Z[x',y] (relative tolerance "
                   f"{viol['tolerance']:g}), over all pairs of X. Worst pair uses {viol['worst_factor']:.3g}× the "
                   "allowed ε·d.")
    st.caption(f"{viol['violated_pairs']:,} violated / {viol['checked_pairs']:,} ordered pairs checked at "
               f"ε = {result.eps:.3g} km⁻¹ in the {viol.get('metric', prob.metric)} metric")
    if v is not None and v.claim_line:
        st.caption(f"**Against the claim:** {v.claim_line}")
    st.metric("Adversary error (m)", f"{ev['adversary_error_m']:.1f}",
              help="Expected distance between the true location and the Bayes-optimal attacker's guess, metres: "
                   "higher is more private.")
    total = result.timings.get("total_s", sum(result.timings.values()))
    st.metric("Solve time", format_s(total), help="Wall-clock seconds of the solve (from the cache: as measured "
                                                     "when it was first solved).")
    phases = phase_text(result.timings)
    if phases:
        st.caption(f"Per phase: {phases}")
    if result.lp_size:
        st.caption("LP: " + lp_size_text(result.lp_size))
    st.caption(f"Status: **{result.status}**")
    if len(result.claim) <= 60:
        st.caption(f"Privacy claim: {result.claim}")
    else:
        with st.expander("Privacy claim"):
            st.caption(result.claim)


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


def check_rows(diag: dict[str, Any]) -> list[dict[str, Any]]:
    """Every measured check (violated / checked) in the diagnostics as table rows with numerator/denominator."""
    return [{"check": name, "violated": f"{bad:,}", "checked": f"{total:,}",
             "ratio": f"{bad / total:.3g}" if total else "–", "exponent": str(v.get("exponent", ""))}
            for name, bad, total, v in measured_checks(diag)]


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
        if arr.dtype.kind == "f":
            arrays[prefix] = arr.astype(float)
        else:
            scalars[prefix] = f"{len(arr):,} integers (e.g. indices)"
    elif arr.ndim == 0 and arr.dtype.kind in "fiub":
        scalars[prefix] = arr.item()
    else:
        other[prefix] = f"array of shape {arr.shape}"


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


def diagnostic_points(diag: dict[str, Any], prob: Problem) -> tuple[str, np.ndarray, np.ndarray] | None:
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


def user_reports(diag: dict[str, Any], k: int) -> tuple[np.ndarray, np.ndarray] | None:
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
                st.plotly_chart(charts.binned_histogram(h, name), key=f"binned-{name}",
                                config={"displayModeBar": False})
    scalars, arrays, other = split_diagnostics(diag)
    if scalars or other:
        rows = [{"diagnostic": name, "value": _cell(v)} for name, v in {**scalars, **other}.items()]
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    for name, arr in table_arrays(diag).items():
        st.plotly_chart(charts.columns_chart(arr, f"{name} (per row: {arr.shape[1]} columns)"), key=f"cols-{name}",
                        config={"displayModeBar": False})
    cols = st.columns(2)
    for n, (name, arr) in enumerate(arrays.items()):
        finite = arr[np.isfinite(arr)]
        with cols[n % 2]:
            st.plotly_chart(charts.histogram(finite, f"{name} ({len(arr):,} values)"), key=f"hist-{name}",
                            config={"displayModeBar": False})


def _cell(v: Any) -> str:
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
    import importlib

    render = getattr(importlib.import_module(entry[0]), entry[1])
    render(prob, cache.road_layer(prob), result)


@st.fragment
def details_tabs(prob: Problem, result: Result, ev: dict[str, Any] | None, key: str) -> None:
    """Tabs below the map: diagnostics, time and LP size, downloads, the problem.

    Only the open tab runs and is sent (``on_change="rerun"``, inside a fragment so that switching tabs reruns
    only this part): a hidden tab's charts would otherwise load the chart library into every page view.
    """
    t_diag, t_time, t_dl, t_prob = st.tabs(["Diagnostics", "Time & LP size", "Downloads", "Problem"],
                                           key=f"details-tab-{key}", on_change="rerun")
    if t_diag.open:
        with t_diag:
            specific_panel(prob, result)
            if result.ok:
                continuous.diagnostics(prob, result, cache.result_key(prob, result))
            diagnostics_panel(result, prob.k)
    if t_time.open:
        _time_tab(t_time, result, key)
    if t_dl.open:
        with t_dl:
            downloads(prob, result, ev, key)
    if t_prob.open:
        with t_prob:
            problem_table(prob)


def _time_tab(t_time: Any, result: Result, key: str) -> None:
    with t_time:
        c1, c2 = st.columns([3, 2])
        with c1:
            if result.timings:
                st.plotly_chart(charts.timing_bar(result.timings), key=f"timing-{key}",
                                config={"displayModeBar": False})
        with c2:
            if result.lp_size:
                st.markdown("**LP size**")
                st.dataframe(pd.DataFrame([{"quantity": lp_size_label(k), "count": f"{v:,}"}
                                           for k, v in result.lp_size.items()]), hide_index=True, width="stretch")
            else:
                st.caption("No LP was solved (closed form).")
            if result.objective_m is not None:
                st.caption(f"Solver objective: {result.objective_m:.2f} m")
            if result.bound_m is not None:
                st.caption(f"Certified lower bound: {result.bound_m:.2f} m")


def downloads(prob: Problem, result: Result, ev: dict[str, Any] | None, key: str) -> None:
    """Z as CSV and NPZ, metrics and metadata as JSON (built only when clicked)."""
    stem = f"mdpviz-{prob.city or 'points'}-K{prob.k}-{result.mechanism}"
    c1, c2, c3 = st.columns(3)
    c1.download_button("Z (CSV)", data=lambda: result_bytes(".csv", prob, result, ev), file_name=f"{stem}.csv",
                       mime="text/csv", on_click="ignore", key=f"dl-csv-{key}", icon=":material/download:")
    c2.download_button("Z + coordinates (NPZ)", data=lambda: result_bytes(".npz", prob, result, ev),
                       file_name=f"{stem}.npz", mime="application/octet-stream", on_click="ignore",
                       key=f"dl-npz-{key}", icon=":material/download:")
    c3.download_button("Metrics (JSON)", data=lambda: result_bytes(".json", prob, result, ev),
                       file_name=f"{stem}.json", mime="application/json", on_click="ignore",
                       key=f"dl-json-{key}", icon=":material/download:")
    st.caption("CSV: one row per secret (lat, lon, then Pr of each output). JSON: settings, metrics, timings, "
               "diagnostics and Z.")


def problem_table(prob: Problem) -> None:
    s = prob.summary()
    rows = [("city", s["city"]), ("K = |X| (secrets)", s["k"]), ("|Y| (outputs)", s["n_outputs"]),
            ("mDP metric d", s["metric"]), ("prior", s["prior"]), ("cost model", s["cost"]),
            ("task nodes", s["n_tasks"]), ("seed", s["seed"]),
            ("d range (km)", f"{s['d_min_km']:.3f} – {s['d_max_km']:.3f}"),
            ("mean cost (m)", f"{s['cost_mean_m']:.0f}"), ("build time (s)", s["build_s"]),
            ("fingerprint", s["fingerprint"])]
    st.dataframe(pd.DataFrame([{"setting": a, "value": str(b)} for a, b in rows]), hide_index=True, width="stretch")

