"""The Learn page's live examples: each step computes with the library on a tiny problem and draws one chart."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from mdpviz.explain import expected_failing_pairs, line_points, lp_size, two_point_keep
from mdpviz.mechanisms import Result, mechanisms
from mdpviz.metrics import utility_loss_m, violations
from mdpviz.problem import Problem, build_problem, problem_from_points
from mdpviz.solve import solve

from . import charts

TINY_KM = (0.0, 0.15, 0.3, 0.7, 1.2)


def step_local_vs_metric(eps: float, eps_local: float) -> go.Figure:
    """Pr[truthful report] of the optimal two-point mechanism against distance: mDP vs local DP."""
    d = np.linspace(0, 2.0, 200)
    mdp = np.array([two_point_keep(eps, x) for x in d])
    ldp = np.full_like(d, np.exp(eps_local) / (1 + np.exp(eps_local)))
    return charts.line(d * 1000, {f"mDP, ε = {eps:g} km⁻¹": mdp, f"local DP, ε = {eps_local:g}": ldp},
                       "distance D between the two locations (m)", "Pr[report the true location]",
                       title="Two locations, optimal randomised response", height=320)


@st.cache_resource(show_spinner=False)
def tiny_problem() -> Problem:
    """Five points on a 1.2 km line, Y = X, distance cost: small enough to read every number."""
    return problem_from_points(line_points(list(TINY_KM)), all_outputs=True, cost="distance")


def tiny_results(eps: float) -> tuple[Problem, Result, Result]:
    """EM and the optimal LP on the tiny problem at ``eps`` (both instant; cached on disk by the library)."""
    prob = tiny_problem()
    return prob, solve(prob, "em", {"eps": eps}), solve(prob, "lp", {"eps": eps})


def tiny_labels(prob: Problem) -> list[str]:
    """Labels of the tiny example's secrets: each one's position along the line, in metres."""
    return [f"{round(k * 1000)} m" for k in TINY_KM[: prob.k]]


def tiny_summary(prob: Problem, result: Result) -> str:
    """Utility loss and violated pairs of a tiny example's result, as one line."""
    assert result.Z is not None
    v = violations(prob, result.Z, result.eps, metric=result.check_metric)
    return (f"utility loss **{utility_loss_m(prob, result.Z):.0f} m** · violated pairs "
            f"{v.violated_pairs}/{v.checked_pairs}")


def size_figure(k: int, m: int, anchor_share: float) -> go.Figure:
    """LP constraints of the full LP against the anchor LP, K from 100 to 5,000 (log scale), K marked."""
    ks = np.array([100, 200, 500, 1000, 2000, 3000, 5000])
    full = np.array([lp_size(int(x), m)["inequalities"] for x in ks], dtype=float)
    anch = np.array([lp_size(max(2, int(x * anchor_share)), m)["inequalities"] for x in ks], dtype=float)
    return charts.line(ks, {"full LP: K(K−1)·|Y|": full, f"anchor LP: |A|(|A|−1)·|Y|, |A| = {anchor_share:.0%} of K":
                            anch}, "K = |X| (secrets)", "LP inequalities (count, log scale)",
                       title="Why anchors: LP size against K", marks=[(k, f"K = {k}")], log_y=True, height=320)


def delta_sweep_query() -> dict[str, str]:
    """Trade-off URL that sweeps δ for PAnDA-p (ε only, when PAnDA is not registered)."""
    names = {m.name for m in mechanisms()}
    if "panda-p" in names:
        return {"sweep_mechs": "panda-p", "sweep_param": "delta"}
    return {"sweep_mechs": "em", "sweep_param": "eps"}


def delta_text(delta: float, n_users: int) -> str:
    """What δ means for N users: the expected number of ordered pairs whose guarantee fails."""
    pairs = n_users * (n_users - 1)
    return (f"With N = {n_users} users there are {pairs:,} ordered user pairs; at δ = {delta:g} the expected number "
            f"whose ε-mDP guarantee fails is **{expected_failing_pairs(n_users, delta):.3g}**. A measured violation "
            f"rate below 1/{pairs:,} ≈ {1 / pairs:.1e} cannot be told apart from zero with this many pairs.")


DELTA_EXAMPLE: dict[str, Any] = {"city": "helsinki", "k": 100, "n_outputs": 30, "cost": "distance", "eps": 15.0}
STRICT_DELTA = 1e-7  # the strictest δ of the paper's sweep, the one the live example compares with


@st.cache_data(show_spinner="Solving PAnDA-p at this δ…")
def delta_budget(delta: float) -> dict[str, float]:
    """PAnDA-p on a small Helsinki problem (``DELTA_EXAMPLE``) at ``delta``: its budget split (% of ε spent on
    Phase I, the safety margin and Phase II) and its utility loss (m), solved live by the library."""
    ex = DELTA_EXAMPLE
    prob = build_problem(ex["city"], ex["k"], n_outputs=ex["n_outputs"], cost=ex["cost"], seed=0)
    r = solve(prob, "panda-p", {"eps": ex["eps"], "delta": delta})
    split = dict(r.diagnostics.get("budget_split", {}).get("percent", {}))
    return {**{k: float(v) for k, v in split.items()},
            "loss_m": utility_loss_m(prob, r.Z) if r.Z is not None else float("nan")}


def delta_example_text(delta: float, here: dict[str, float], strict: dict[str, float]) -> str:
    """What the live example shows: the margin δ buys back, and how much of ε Phase I already took. At the
    strictest δ (10⁻⁷, the slider's start) there is nothing to compare with, and the sentence says so.

    >>> split = {"margin": 0.48, "phase2": 1.2, "phase1": 98.3}
    >>> text = delta_example_text(1e-7, split, split)
    >>> "the strictest the paper sweeps" in text, "instead of" in text
    (True, False)
    >>> "Phase II gets 3 % instead of 1.2 %" in delta_example_text(0.15, {**split, "phase2": 3.0}, split)
    True
    """
    ex = DELTA_EXAMPLE
    start = f"Live, PAnDA-p on {ex['k']} secrets of Helsinki, ε = {ex['eps']:g} km⁻¹: at δ = {delta:g}"
    if delta <= STRICT_DELTA:  # "… 1.2 % instead of 1.2 %" said nothing
        middle = (f", the strictest the paper sweeps, the safety margin takes **{here.get('margin', 0):.2g} %** of "
                  f"the budget and Phase II gets {here.get('phase2', 0):.2g} %.")
    else:
        middle = (f" the safety margin takes **{here.get('margin', 0):.2g} %** of the budget (at δ = 10⁻⁷: "
                  f"{strict.get('margin', 0):.2g} %), so Phase II gets {here.get('phase2', 0):.2g} % instead of "
                  f"{strict.get('phase2', 0):.2g} %.")
    return (start + middle + " Phase I, the random anchor choice, already takes "
            f"{here.get('phase1', 0):.3g} %: here δ can buy back little, which is why PAnDA's loss barely moves with "
            "δ on these cities.")
