"""Parameter sweeps for the Trade-off page, resumable and stoppable.

A sweep is a plan of (mechanism, value) points kept in session state with its finished rows. Each script run
solves the points still missing through the one sweep runner (``mdpviz.sweep.run_sweep``, in process), storing
every finished row at once, so a Stop click (or any rerun) loses nothing; a stopped sweep can be resumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from mdpviz.explain import format_m, sweep_values
from mdpviz.mechanisms import Mechanism, Param, get_mechanism
from mdpviz.problem import Problem
from mdpviz.sweep import Point, local_problem, problem_of, result_row, run_sweep

from . import cache, solving, state


def sweepable(mechs: list[Mechanism]) -> dict[str, Param]:
    """Numeric parameters with a range in any of ``mechs`` (ε first), keyed by name."""
    found: dict[str, Param] = {}
    for m in mechs:
        for p in m.params:
            if p.kind in (int, float) and p.low is not None and p.high is not None and p.name not in found:
                found[p.name] = p
    return dict(sorted(found.items(), key=lambda kv: kv[0] != "eps"))


LOG_DECADES = 7  # a log parameter whose range spans at most this many decades is swept over all of it


def default_range(p: Param) -> tuple[float, float]:
    """A useful default sweep range: ε 1–20 km⁻¹; a log parameter over its whole range when that spans at most
    ``LOG_DECADES`` decades (PAnDA's δ: 1e-7 to 0.15, the paper's sweep), else over two decades around its default;
    others over the whole range.

    >>> from mdpviz.contract import Param
    >>> default_range(Param("delta", float, 1e-7, "δ", low=1e-7, high=0.15, log=True))
    (1e-07, 0.15)
    >>> default_range(Param("gap_tol", float, 1e-4, "gap", low=1e-10, high=0.1, log=True))
    (1e-05, 0.001)
    """
    # (mypy) a parameter offered for sweeping has both bounds
    lo, hi = float(p.low), float(p.high)  # type: ignore[arg-type]
    if p.open_high:
        hi = hi - (1 if p.kind is int else 0.01)
    if p.name == "eps":
        return max(lo, 1.0), min(hi, 20.0)
    if p.log and lo > 0:
        if np.log10(hi / lo) <= LOG_DECADES:
            return lo, hi
        return max(lo, float(p.default) / 10), min(hi, float(p.default) * 10)
    return lo, hi


@dataclass
class Sweep:
    """A planned sweep and its finished rows (keyed by (mechanism, value))."""

    problem_key: str
    param: str
    label: str
    log: bool
    points: list[tuple[str, float]]
    base: dict[str, dict[str, Any]]
    rows: dict[tuple[str, float], dict[str, Any]] = field(default_factory=dict)
    running: bool = True
    skipped: list[str] = field(default_factory=list)

    @property
    def done(self) -> int:
        """Number of finished points."""
        return len(self.rows)

    def frame(self) -> pd.DataFrame:
        """The finished rows as a table, one per (mechanism, value)."""
        cols = ["mechanism", "param", "value", "status", "verdict", "utility_loss_m", "privacy_cost_m",
                "claim_violation_ratio", "violation_ratio", "violated_pairs", "checked_pairs", "adversary_error_m",
                "solve_s"]
        return pd.DataFrame(list(self.rows.values()), columns=cols)


def plan(problem_key: str, mechs: list[Mechanism], p: Param, low: float, high: float, n: int) -> Sweep:
    """Plan a sweep of ``p`` over ``n`` values in [low, high] (log-spaced for a log parameter) for each mechanism
    that has ``p``, from its current values; the others are listed as skipped."""
    values = sweep_values(low, high, n, p.log and low > 0)
    base, points, skipped = {}, [], []
    for m in mechs:
        if p.name not in {q.name for q in m.params}:
            skipped.append(m.name)
            continue
        base[m.name] = state.params_of(m)
        points += [(m.name, float(v)) for v in values]
    return Sweep(problem_key, p.name, p.display, p.log, points, base, skipped=skipped)


def points_of(prob: Problem, sweep: Sweep, time_limit: float) -> list[Point]:
    """The sweep's points for the one sweep runner (``mdpviz.sweep``), its problem handed over in process."""
    settings = local_problem(prob)
    out = []
    for mech_name, value in sweep.points:
        mech = get_mechanism(mech_name)
        params = {**sweep.base[mech_name], sweep.param: mech.param(sweep.param).kind(value)}
        out.append(Point(settings, mech_name, params, time_limit=time_limit, task=PAGE_TASK,
                         tags={"value": value}))
    return out


def page_point(point: Point, *, use_cache: bool = True) -> dict[str, Any]:
    """The runner's task on this page: this session's or the disk cache's result, else a solve with its live
    status box; then the runner's measurements of it."""
    prob = problem_of(point)
    mech = get_mechanism(point.mechanism)
    params = dict(point.params)
    value = point.tags["value"]
    result = (cache.lookup(prob, mech.name, params) if use_cache else None) or solving.run_solve(
        prob, mech, params, float(point.time_limit or 0.0), label=f"{mech.name} at {value:g}")
    return result_row(prob, result)


PAGE_TASK = f"{__name__}:page_point"


def run_pending(prob: Problem, sweep: Sweep, time_limit: float) -> None:
    """Solve the points not done yet through the sweep runner, with a progress bar; each row is stored as soon as
    it is finished (a Stop click reruns the page: the rows stored so far are kept)."""
    todo = [pt for pt in points_of(prob, sweep, time_limit) if (pt.mechanism, pt.tags["value"]) not in sweep.rows]
    if not todo:
        sweep.running = False
        return
    total = len(sweep.points)
    bar = st.progress(sweep.done / total, text=f"{sweep.done}/{total} done · solving {todo[0].mechanism} at "
                                                f"{sweep.label} = {todo[0].tags['value']:g}")
    upcoming = iter(todo[1:])

    def store(record: dict[str, Any], _done: int, _total: int) -> None:
        pt = record["point"]
        mech_name, value = pt["mechanism"], pt["tags"]["value"]
        sweep.rows[(mech_name, value)] = _row(sweep, mech_name, value, record)
        nxt = next(upcoming, None)
        text = f"{sweep.done}/{total} done" + (
            f" · solving {nxt.mechanism} at {sweep.label} = {nxt.tags['value']:g}" if nxt is not None else "")
        bar.progress(sweep.done / total, text=text)

    run_sweep(todo, on_record=store)
    bar.progress(1.0, text=f"{sweep.done}/{total} points done")
    sweep.running = False


def _row(sweep: Sweep, mech: str, value: float, record: dict[str, Any]) -> dict[str, Any]:
    """The page's row of one runner record (an error record keeps its message as the status)."""
    nan = float("nan")
    row = record["rows"][0] if record.get("rows") else {}
    status = f"error: {record['error']}" if record.get("error") else row.get("status", "error")
    return {"mechanism": mech, "param": sweep.param, "value": value, "status": status,
            "verdict": row.get("verdict", ""),
            "utility_loss_m": row.get("loss_m", nan), "privacy_cost_m": row.get("privacy_cost_m", nan),
            "claim_violation_ratio": claim_ratio(row),
            "violation_ratio": row.get("violation_ratio", nan),
            "violated_pairs": row.get("violated_pairs", nan), "checked_pairs": row.get("checked_pairs", nan),
            "adversary_error_m": row.get("adversary_error_m", nan), "solve_s": row.get("time_s", nan)}


def claim_ratio(row: dict[str, Any]) -> float:
    """The share of its own claim's cases a point broke: the narrower check where the mechanism reports one (PAnDA's
    user pairs, DISTA-LP's triples ...), else the all-pairs ratio; NaN without a check.

    >>> claim_ratio({"claim_violated": 3, "claim_checked": 12, "violation_ratio": 0.0})
    0.25
    >>> claim_ratio({"violation_ratio": 0.5})
    0.5
    """
    checked = row.get("claim_checked")
    if isinstance(checked, (int, float)) and checked > 0:
        return float(row["claim_violated"]) / float(checked)
    return float(row.get("violation_ratio", float("nan")))


def current(sweep: Sweep | None) -> Sweep | None:
    """``sweep`` when it is a :class:`Sweep`, else None (session state may hold anything)."""
    return sweep if isinstance(sweep, Sweep) else None


def times_differ(df: pd.DataFrame) -> bool:
    """Whether the solve times say anything: the slowest point takes over 0.1 s and over twice the fastest
    (sub-millisecond closed forms, or times all alike, only show noise)."""
    t = df["solve_s"].dropna() if "solve_s" in df else pd.Series(dtype=float)
    return bool(len(t) and t.max() > 0.1 and t.max() > 2 * max(t.min(), 1e-9))


def at_value(param_label: str, value: float) -> str:
    """``ε (km⁻¹)`` and 5.5 as ``ε = 5.5 km⁻¹`` (the unit after the number, as the rest of the dashboard writes it).

    >>> at_value("ε (km⁻¹)", 5.5), at_value("δ", 1e-07)
    ('ε = 5.5 km⁻¹', 'δ = 1e-07')
    """
    name, unit = param_label, ""
    if param_label.endswith(")") and " (" in param_label:
        name, unit = param_label[:-1].rsplit(" (", 1)
    return f"{name} = {value:g}" + (f" {unit}" if unit else "")


# what a point's verdict level says, for the sentence when no point kept its promise (mdpviz.verdict.Verdict)
LEVEL_WORDS = {"error": "broke it or gave no mechanism", "warning": "degenerate or unfinished",
               "info": "with a narrower claim, not measured"}


def _none_kept(solved: pd.DataFrame) -> str:
    """A sentence for a sweep whose solved points all lack an "ok" verdict (else nothing would be said)."""
    if solved.empty or "verdict" not in solved:
        return ""
    counts = solved["verdict"].value_counts()
    parts = [f"{n} of {len(solved)} {LEVEL_WORDS.get(str(level), f'have the verdict {level!r}')}"
             for level, n in counts.items()]
    return (f"No point of this sweep kept its privacy promise ({'; '.join(parts)}), so none is named the cheapest. "
            "Open one on Explore for its verdict.")


def summary(df: pd.DataFrame, param_label: str, labels: dict[str, str], at: float | None) -> str:
    """One sentence the sweep's data says: at the point nearest ``at`` (else the middle one), which mechanism pays
    least for privacy and how the others compare; for one mechanism, how its privacy cost moves along the sweep.
    Only points whose verdict is that they kept their promise count (where the frame has a ``verdict``).

    >>> frame = pd.DataFrame({"mechanism": ["em", "em", "lp", "lp"], "value": [1.0, 5.0, 1.0, 5.0],
    ...                       "privacy_cost_m": [400.0, 160.0, 60.0, 15.0]})
    >>> summary(frame, "ε (km⁻¹)", {"em": "EM", "lp": "Optimal LP"}, 5.0)
    'At ε = 5 km⁻¹, Optimal LP pays the least for privacy (15 m above the no-privacy floor); EM pays 10.7× as much.'
    >>> summary(frame, "ε (km⁻¹)", {"em": "EM", "lp": "Optimal LP"}, 4.0)[:69]
    'At ε = 5 km⁻¹ (the swept value nearest to the 4 set in the sidebar), '
    >>> summary(frame.assign(verdict="error"), "ε (km⁻¹)", {}, 5.0)[:67]
    'No point of this sweep kept its privacy promise (4 of 4 broke it or'
    """
    solved = df.dropna(subset=["privacy_cost_m"]) if "privacy_cost_m" in df else df.iloc[0:0]
    ok = solved[solved["verdict"] == "ok"] if "verdict" in solved else solved
    if ok.empty:
        return _none_kept(solved)
    values = np.sort(ok["value"].unique())
    v = values[len(values) // 2] if at is None else values[int(np.argmin(np.abs(values - at)))]
    here = ok[ok["value"] == v].sort_values("privacy_cost_m")

    def name(m: Any) -> str:
        return labels.get(str(m), str(m))

    if ok["mechanism"].nunique() == 1:
        one = ok.sort_values("value")
        first, last = one.iloc[0], one.iloc[-1]
        return (f"{name(first['mechanism'])}'s privacy cost goes from {format_m(float(first['privacy_cost_m']))} at "
                f"{at_value(param_label, first['value'])} to {format_m(float(last['privacy_cost_m']))} at "
                f"{at_value(param_label, last['value'])}.")
    best = here.iloc[0]
    nearest = (f" (the swept value nearest to the {at:g} set in the sidebar)"
               if at is not None and not np.isclose(v, at, rtol=1e-6) else "")
    text = (f"At {at_value(param_label, v)}{nearest}, {name(best['mechanism'])} pays the least for privacy "
            f"({format_m(float(best['privacy_cost_m']))} above the no-privacy floor)")
    others = [f"{name(r['mechanism'])} pays {r['privacy_cost_m'] / best['privacy_cost_m']:.3g}× as much"
              for _, r in here.iloc[1:].iterrows() if best["privacy_cost_m"] > 0]
    return text + ("; " + ", ".join(others) if others else "") + "."
