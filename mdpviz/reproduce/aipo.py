"""AIPO (seed 003): utility loss, mDP violations, ratio to the lower bound and runtime against ε (ℓ2), beside the
paper's baselines EM, Laplace, TEM, RMP, LP and COPT.

Rome, secrets drawn from the whole city (the artifact's SCALE = 2), |Y| = 20 outputs, cost = distance (km),
uniform prior, ε ∈ {0.2, …, 1.6} km⁻¹. The paper's "LP" is Bordenabe's LP on an 18×18 grid (12×12 at ε ≤ 0.4)
expanded to the nodes: mdpviz's ``lp-ca`` with that grid. COPT is ``lp-em`` (ConstOPT) with r = 50 neighbours;
RMP is ``em-br``. The paper's Laplace is the exponential weights exp(−ε′d) discretised on the outputs; planar
Laplace (``laplace``) is shown beside it. The paper's absolute numbers come from the artifact README's example run
(one repetition on Rome); its averages (Table 3) from the text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..mechanisms import mechanisms
from ..sweep import Point
from . import common as cm
from .base import (
    ChartSpec,
    Comparison,
    Experiment,
    comparison_row,
    find_preset,
    fit_params,
    mean_pm,
    missing_row,
    paper_value,
    rows_of,
    sizes,
)
from .registry import register

PAPER = "aipo"
EPS_ALL = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6)


def discrete_laplace() -> tuple[str, dict[str, Any]] | None:
    """The paper's discretised Laplace baseline where a mechanism offers it: (name, params), else None."""
    for m in mechanisms():
        if m.name.startswith("laplace") and m.name != "laplace":
            return m.name, {}
        if m.name == "laplace":
            for p in m.params:
                hits = [c for c in p.choices if "discret" in c.lower() or "paper" in c.lower()]
                if p.kind is str and hits:
                    return "laplace", {p.name: hits[0]}
    return None


def _methods(eps: float) -> list[tuple[str, str, dict[str, Any]]]:
    out = [("em", "EM", {}), ("laplace", "Laplace (planar)", {}), ("tem", "TEM", {}), ("em-br", "RMP", {}),
           ("lp-ca", "LP", {"grid": 12 if eps <= 0.4 else 18}), ("lp-em", "COPT", {"neighbours": 50}),
           ("aipo", "AIPO", {"p": 2}), ("aipo-e", "AIPO-E", {"p": 2}), ("aipo-r", "AIPO-R", {"p": 2})]
    if (dl := discrete_laplace()) is not None:
        out.insert(2, (dl[0], "Laplace", dl[1]))
    return out


def _settings(size: str) -> dict[str, Any]:
    return {"k": sizes(size, 40, 300, 1000), "eps": sizes(size, [1.0], [0.4, 1.0, 1.6], list(EPS_ALL)),
            "seeds": sizes(size, [0], [0], [0, 1]), "outputs": sizes(size, 10, 20, 20),
            "cells": sizes(size, 2, 6, 8), "lb_grid": sizes(size, 2, 4, 6),
            "time_limit": sizes(size, 10.0, 30.0, 600.0)}


def _preset() -> tuple[str, dict[str, Any], dict[str, Any]]:
    """AIPO's paper preset where the mechanism has one: (name, params, problem settings)."""
    return find_preset("aipo", "paper") or ("", {}, {})


def points(size: str, mode: str) -> list[Point]:
    """The AIPO experiment's grid for ``size`` (quick, full...) and ``mode``."""
    s = _settings(size)
    _, preset_params, preset_problem = _preset()
    problem = {"city": "rome", "k": s["k"], "n_outputs": s["outputs"], "cost": "distance", "metric": "haversine",
               "region": "whole"}
    if size == "full":
        problem.update({k: v for k, v in preset_problem.items() if k in ("n_outputs", "cost", "metric")})
    out = []
    for eps in s["eps"]:
        for name, label, extra in _methods(eps):
            wanted = {"eps": eps, **extra}
            if name.startswith("aipo"):
                # the full form takes the paper preset where there is one; smaller forms a lighter lattice
                wanted.update({"cells": s["cells"], "lb_grid": s["lb_grid"]} if size != "full" or not preset_params
                              else preset_params)
                if name != "aipo":
                    wanted.pop("lb_grid", None)
            params, _ = fit_params(name, wanted)
            out += [Point(problem, name, params, seed, time_limit=s["time_limit"], tags={"label": label})
                    for seed in s["seeds"]]
    return out


def _notes(size: str) -> list[str]:
    s = _settings(size)
    notes = [f"Rome (whole city), K = {s['k']} secrets (the paper evaluates every node of the city), |Y| = "
             f"{s['outputs']}, ε ∈ {s['eps']} km⁻¹, {len(s['seeds'])} seed(s), AIPO lattice {s['cells']} cells across, "
             f"lower-bound grid {s['lb_grid']}, {s['time_limit']:g} s per solve.",
             "Violations: ours is the exact check over every ordered pair of the secrets and every output (relative "
             "tolerance 1e-9, no absolute slack; AIPO's in its planar ℓ2 claim). The artifact adds an absolute 0.01, "
             "which hides small violations.",
             "Losses are in km (metres / 1000), as the paper's."]
    name, params, problem = _preset()
    if name and size == "full":
        notes.append(f"AIPO's '{name}' preset: " + ", ".join(f"{k}={v}" for k, v in {**params, **problem}.items()))
    elif name:
        notes.append(f"The {size} form uses a lighter lattice than AIPO's '{name}' preset (the full form uses it).")
    if discrete_laplace() is None:
        notes.append("Laplace as the paper runs it (exp(−ε′d) discretised on the outputs) is not implemented in "
                     "mdpviz yet: its rows are compared with planar Laplace and say so.")
    return notes


def _reason(label: str, runs: Sequence[Mapping[str, Any]], metric: str, standing: str = "") -> str:
    """Measured facts (and the specs' notes on the artifact) that bear on a difference; ``standing``: where the
    method stands against EM, ours and the paper's."""
    if why := cm.failed(runs):
        return why
    if metric == "time":
        return cm.hardware_reason()
    parts = []
    vio = cm.values(runs, "violation_ratio")
    if metric == "violations":
        if label == "COPT":
            parts.append("ours runs ConstOPT on the secrets themselves and repairs solver tolerances exactly (ε-mDP); "
                         "the paper's COPT runs on a 250 × 250 grid expanded to the nodes (spec §6)")
        elif label == "AIPO-R" or label == "LP":
            parts.append("not ε-mDP by design" + (" (rows shared per grid cell)" if label == "LP" else
                                                  " (anchors' neighbours only, before normalisation)")
                         + "; ours checks every ordered pair of the secrets with no absolute slack, the artifact "
                         "adds 0.01 (spec §6)")
    else:
        if label == "Laplace (planar)":
            parts.append("continuous planar Laplace + nearest output, not the paper's discretised weights")
        if label == "LP" and vio and max(vio) > 0:
            parts.append(f"grid LP: secrets share their cell's row, {max(vio):.1%} of the checked pairs violate "
                         "ε-mDP")
        if label.startswith("AIPO"):
            anchors = cm.values(runs, "d.anchors")
            if anchors:
                parts.append(f"{anchors[0]:.0f} lattice anchors over the 47 × 49 km city")
        if label in ("EM", "Laplace", "TEM", "RMP", "COPT"):
            parts.append(f"ours: K = {runs[0].get('problem.k')} sampled secrets with |Y| = "
                         f"{runs[0].get('problem.n_outputs')} outputs drawn from them; the paper evaluates every node "
                         "(its EM is nearly flat in ε, 8.5–8.9 km)")
        if standing:
            parts.append(standing)
    return "; ".join(p for p in parts if p)


def compare(records: list[dict[str, Any]], size: str, mode: str) -> Comparison:
    """Our AIPO numbers beside the paper's, one row per setting and method, with the reason where they differ."""
    rows = [r for r in rows_of(records) if r.get("tag.label")]
    out: list[dict[str, Any]] = []
    by = cm.group(rows, "param.eps", "tag.label")
    means: dict[tuple[float, str], float] = {}
    for (eps, label), runs in by.items():
        setting = f"ε = {eps:g} km⁻¹"
        art = "Laplace" if label == "Laplace (planar)" and discrete_laplace() is None else label
        loss = mean_pm(cm.values(runs, lambda r: r["loss_m"] / 1000.0 if "loss_m" in r else None))
        means[(eps, label)] = loss[0]
        em_runs = by.get((eps, "EM"), [])
        em = mean_pm(cm.values(em_runs, lambda r: r["loss_m"] / 1000.0 if "loss_m" in r else None))[0]
        example = {"source": "artifact README example run", "eps": eps, "metric": "utility_loss"}
        paper_loss, paper_em = paper_value(PAPER, method=art, **example), paper_value(PAPER, method="EM", **example)
        standing = ""
        if label != "EM" and em == em and loss[0] == loss[0] and em:
            standing = f"against EM: ours {cm.pct(loss[0], em):+.0f}%"
            if paper_loss and paper_em and paper_loss.get("value") and paper_em.get("value"):
                standing += f", the artifact's run {cm.pct(paper_loss['value'], paper_em['value']):+.0f}%"
        out.append(comparison_row(table="Utility loss (artifact example run)", city="rome", setting=setting, x=eps,
                                  method=label, metric="utility_loss", unit="km", ours=loss[0], ours_pm=loss[1],
                                  n=loss[2], paper=paper_loss, reason=_reason(label, runs, "loss", standing)))
        vio = mean_pm(cm.values(runs, lambda r: 100.0 * r["violation_ratio"] if "violation_ratio" in r else None))
        vpaper = paper_value(PAPER, source="artifact README example run", eps=eps, method=art, metric="violation_ratio")
        out.append(comparison_row(table="Violation ratio (artifact example run)", city="rome", setting=setting, x=eps,
                                  method=label, metric="violation_ratio", unit="%", ours=vio[0], ours_pm=vio[1],
                                  n=vio[2], paper=vpaper, reason=_reason(label, runs, "violations")))
        if label in ("AIPO", "COPT", "LP"):
            t = mean_pm(cm.values(runs, lambda r: r.get("time_s") if "loss_m" in r else None))
            out.append(comparison_row(table="Runtime (artifact example run)", city="rome", setting=setting, x=eps,
                                      method=label, metric="time", unit="s", ours=t[0], ours_pm=t[1], n=t[2],
                                      paper=paper_value(PAPER, source="artifact README example run", eps=eps,
                                                        method=label, metric="time"),
                                      reason=_reason(label, runs, "time")))
        if label == "AIPO":
            lb = mean_pm(cm.values(runs, lambda r: r["loss_m"] / r["bound_m"] if r.get("bound_m") else None))
            out.append(comparison_row(table="Ratio to the lower bound (Table 3 text)", city="rome", setting=setting,
                                      x=eps, method="AIPO/LB", metric="ratio_to_lb", unit="", ours=lb[0], ours_pm=lb[1],
                                      n=lb[2], paper=paper_value(PAPER, source="Table 3 (text)", metric="ratio_to_lb",
                                                                 relation="<="),
                                      reason="LB: mdpviz's universal lower bound on a coarse grid"))
    # Table 3: AIPO's average reduction against each baseline over the ε values run
    eps_run = sorted({e for e, _ in means})
    for base, paper_name in (("EM", "EM"), ("Laplace", "Laplace"), ("Laplace (planar)", "Laplace"), ("TEM", "TEM"),
                             ("COPT", "COPT"), ("RMP", "RMP")):
        found = [(means.get((e, "AIPO")), means.get((e, base))) for e in eps_run]
        pairs = [(a, b) for a, b in found if a is not None and b is not None and a == a and b == b and b > 0]
        if not pairs and base == "Laplace":
            continue
        red = sum(cm.pct(a, b) for a, b in pairs) / len(pairs) if pairs else None
        reason = "averaged over the ε values run here" + ("" if len(eps_run) == len(EPS_ALL) else
                                                          f" ({len(eps_run)} of the paper's 8) and Rome only")
        em_curve = [means.get((e, "EM")) for e in eps_run]
        if len(eps_run) > 1 and all(v == v and v is not None for v in em_curve):
            reason += (f"; our EM falls from {em_curve[0]:.2f} to {em_curve[-1]:.2f} km over these ε, the paper's "
                       "stays at 8.5–8.9 km, which suggests its EM is scored against another loss matrix; and "
                       "AIPO's per-axis budgets spend at most ε/(2√2) along an axis where EM spends ε/2 "
                       "(docs/WHAT-WE-LEARNED.md, AIPO)")
        out.append(comparison_row(table="Table 3: AIPO's loss change against each baseline", city="rome",
                                  setting=f"ε ∈ {eps_run}", x=base, method=f"AIPO vs {base}",
                                  metric=f"loss_change_vs:{base}", unit="%", ours=red, n=len(pairs),
                                  paper=paper_value(PAPER, source="Table 3 (text summary)",
                                                    metric=f"loss_change_vs:{paper_name}"), reason=reason))
    if discrete_laplace() is None:
        for eps in eps_run:
            out.append(missing_row(table="Utility loss (artifact example run)", city="rome",
                                   setting=f"ε = {eps:g} km⁻¹",
                                   method="Laplace (discretised, the paper's)", metric="utility_loss", unit="km",
                                   paper=paper_value(PAPER, source="artifact README example run", eps=eps,
                                                     method="Laplace", metric="utility_loss"),
                                   why="no registered mechanism gives the paper's discretised Laplace; the planar "
                                       "Laplace rows stand in, labelled"))
    return Comparison(out, _notes(size), chart=[r for r in out if r["metric"] == "utility_loss"])


TABLES = register(Experiment(
    name="aipo-tables", paper=PAPER, title="AIPO: utility loss and violations against ε, beside its baselines",
    summary=__doc__.split("\n\n")[1].replace("\n", " "), points=points, compare=compare,
    chart=ChartSpec("utility_loss", "ε (km⁻¹)", "utility loss (km)", log_y=False)))
