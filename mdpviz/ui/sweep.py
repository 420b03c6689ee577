"""Parameter sweeps for the Trade-off page, resumable and stoppable.

A sweep is a plan of (mechanism, value) points kept in session state with its finished rows. Each script run
solves the points still missing, storing every finished row at once, so a Stop click (or any rerun) loses
nothing; a stopped sweep can be resumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import streamlit as st

from mdpviz.errors import MdpvizError
from mdpviz.explain import sweep_values
from mdpviz.mechanisms import Mechanism, Param, get_mechanism
from mdpviz.problem import Problem

from . import cache, solving, state


def sweepable(mechs: list[Mechanism]) -> dict[str, Param]:
    """Numeric parameters with a range in any of ``mechs`` (ε first), keyed by name."""
    found: dict[str, Param] = {}
    for m in mechs:
        for p in m.params:
            if p.kind in (int, float) and p.low is not None and p.high is not None and p.name not in found:
                found[p.name] = p
    return dict(sorted(found.items(), key=lambda kv: kv[0] != "eps"))


def default_range(p: Param) -> tuple[float, float]:
    """A useful default sweep range: ε 1–20 km⁻¹, log parameters over two decades, others the whole range."""
    lo, hi = float(p.low), float(p.high)  # type: ignore[arg-type]
    if p.open_high:
        hi = hi - (1 if p.kind is int else 0.01)
    if p.name == "eps":
        return max(lo, 1.0), min(hi, 20.0)
    if p.log and lo > 0:
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
        cols = ["mechanism", "param", "value", "status", "utility_loss_m", "violation_ratio", "violated_pairs",
                "checked_pairs", "adversary_error_m", "solve_s"]
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


def run_pending(prob: Problem, sweep: Sweep, time_limit: float) -> None:
    """Solve the points not done yet, with a progress bar; each row is stored as soon as it is finished."""
    todo = [pt for pt in sweep.points if pt not in sweep.rows]
    if not todo:
        sweep.running = False
        return
    bar = st.progress(sweep.done / len(sweep.points), text="starting the sweep")
    for mech_name, value in todo:
        mech = get_mechanism(mech_name)
        params = {**sweep.base[mech_name], sweep.param: mech.param(sweep.param).kind(value)}
        bar.progress(sweep.done / len(sweep.points),
                     text=f"{sweep.done}/{len(sweep.points)} done · solving {mech_name} at {sweep.label} = {value:g}")
        try:
            result = cache.lookup(prob, mech_name, params) or solving.run_solve(prob, mech, params, time_limit,
                                                                              label=f"{mech_name} at {value:g}")
        except MdpvizError as e:
            sweep.rows[(mech_name, value)] = _row(sweep, mech_name, value, f"error: {e}", None, None)
            continue
        ev = cache.evaluation(prob, result, cache.result_key(prob, result)) if result.ok else None
        sweep.rows[(mech_name, value)] = _row(sweep, mech_name, value, result.status, ev,
                                              result.timings.get("total_s", sum(result.timings.values())))
    bar.progress(1.0, text=f"{sweep.done}/{len(sweep.points)} points done")
    sweep.running = False


def _row(sweep: Sweep, mech: str, value: float, status: str, ev: dict[str, Any] | None,
         solve_s: float | None) -> dict[str, Any]:
    nan = float("nan")
    v = ev["violations"] if ev else {}
    return {"mechanism": mech, "param": sweep.param, "value": value, "status": status,
            "utility_loss_m": ev["utility_loss_m"] if ev else nan, "violation_ratio": v.get("ratio", nan),
            "violated_pairs": v.get("violated_pairs", nan), "checked_pairs": v.get("checked_pairs", nan),
            "adversary_error_m": ev["adversary_error_m"] if ev else nan,
            "solve_s": nan if solve_s is None else solve_s}


def current(sweep: Sweep | None) -> Sweep | None:
    """``sweep`` when it is a :class:`Sweep`, else None (session state may hold anything)."""
    return sweep if isinstance(sweep, Sweep) else None
