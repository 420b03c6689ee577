"""The six methods of the paper's Fig. 10 on one corpus, at one or several ε, under the same true loss model.

LP+C-mDP (``cmdp``), LP+Markov (``cmdp-markov``), LP+TrueMB (``cmdp-truemb``) and the context-free ``lp``,
ConstOPT (``lp-em``, when registered) and ``em``, the last three on ``context_free_problem`` of the same corpus. The
context-free ``lp`` runs twice: on the context-averaged cost (the best context-invariant mechanism under the true
model, the fair reference for "what context buys") and on the no-motion cost (the spec's reading of the paper's
Appendix D, a misspecified model whose true loss need not even fall with ε). ``loss_m`` is the in-sample expected
next-location loss (Eq. 34, metres) of every method under the same model; ``floor_m`` the no-privacy floor of the
method's secret domain (each secret reporting its cheapest output; the context-free methods share one) and
``privacy_cost_m`` = loss − floor; ``heldout_loss_m`` the same on an
independent corpus from the same generator (synthetic data only); ``vs_lp_pct`` is against the best
context-invariant LP, ``vs_no_motion_lp_pct`` against the no-motion LP. ``best_context_free`` is that reference
alone for one C-mDP solve (what the Trajectories page shows beside it); ``compare_problem`` runs ``compare`` on the
corpus a problem's C-mDP solves use.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from . import metrics
from .cmdp.diagnostics import cmdp_diagnostics
from .cmdp.mechanism import data_settings
from .cmdp.pipeline import CmdpData, context_free_problem, holdout_loss, prepare, true_loss_context_free
from .contract import Result
from .mechanisms import get_mechanism, mechanisms
from .problem import Problem
from .progress import Progress
from .solve import solve

CONTEXT_AWARE = (("cmdp", "LP+C-mDP"), ("cmdp-markov", "LP+Markov"), ("cmdp-truemb", "LP+TrueMB"))
BEST_LP_LABEL = "LP (context-averaged cost; best context-invariant)"  # the reference of ``vs_lp_pct``
NO_MOTION_LP_LABEL = "LP (no-motion cost; spec's reading of App. D)"  # the reference of ``vs_no_motion_lp_pct``


def _context_aware(pb: Problem, name: str, params: dict[str, Any], time_limit: float | None,
                   use_cache: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    r = solve(pb, name, params, time_limit=time_limit, use_cache=use_cache)
    wall = time.perf_counter() - t0
    if r.Z is None:
        return {"status": r.status, "wall_s": wall}
    diag = cmdp_diagnostics(r)
    ve, vl = diag["violations_enforced"], diag["violations_location"]
    assert ve is not None and vl is not None  # checked whenever Q was solved
    return {"status": r.status, "loss_m": r.objective_m, "heldout_loss_m": diag.get("heldout_loss_m"),
            "floor_m": diag["floor_m"], "privacy_cost_m": diag["privacy_cost_m"],
            "objective_m": r.objective_m, "wall_s": wall,
            "lp_solve_s": r.timings.get("solve_s"), "secrets": diag["n_secrets"],
            "lp_vars": r.lp_size.get("variables"), "lp_rows": r.lp_size.get("constraints"),
            "enforced_viol": f"{ve['violated']:,}/{ve['checked']:,}",
            "location_viol": f"{vl['violated']:,}/{vl['checked']:,}",
            "blankets": diag["blanket_hist"]}


def _context_free(data: CmdpData, cf: Problem, name: str, params: dict[str, Any], time_limit: float | None,
                  use_cache: bool, floor: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    r = solve(cf, name, params, time_limit=time_limit, use_cache=use_cache)
    wall = time.perf_counter() - t0
    if r.Z is None:
        return {"status": r.status, "wall_s": wall}
    v = metrics.violations(cf, r.Z, r.eps, metric=r.check_metric)
    text = f"{v.violated_triples}/{v.checked_triples}"
    held = holdout_loss(data, r.Z, None) if data.trajectories.source == "synthetic" else None
    loss = true_loss_context_free(data, r.Z)
    return {"status": r.status, "loss_m": loss, "heldout_loss_m": held, "floor_m": floor,
            "privacy_cost_m": loss - floor,
            "objective_m": metrics.utility_loss_m(cf, r.Z), "wall_s": wall, "lp_solve_s": r.timings.get("solve_s"),
            "secrets": cf.k, "lp_vars": r.lp_size.get("variables"), "lp_rows": r.lp_size.get("constraints"),
            "enforced_viol": text, "location_viol": text, "blankets": None}


def compare(data: CmdpData, params: dict[str, Any], eps_values: Sequence[float], *,
            baseline_cost: str = "context-averaged", time_limit: float | None = None, use_cache: bool = False,
            progress: Any = None) -> list[dict[str, Any]]:
    """Rows (one per method and ε): loss_m, objective_m, wall_s, LP size, violations both ways, vs_lp_pct.

    ``params`` are ``cmdp`` parameters (ε is overridden; the corpus must be the one ``data`` was prepared from).
    ``baseline_cost`` is the cost ConstOPT (``lp-em``) optimises; ``lp`` runs on both costs.
    """
    pb = data.problem
    cf = context_free_problem(data, baseline_cost)
    cf_avg = context_free_problem(data, "context-averaged")
    cf_nm = context_free_problem(data, "no-motion")
    floor = metrics.floor_m(cf_avg)  # the true model's floor without context: one for every context-free row
    have = {m.name for m in mechanisms()}
    rows: list[dict[str, Any]] = []
    for n, eps in enumerate(eps_values):
        if progress is not None:
            progress(f"ε = {eps:g} km⁻¹", n / len(eps_values))
        block: list[dict[str, Any]] = []
        for name, label in CONTEXT_AWARE:
            own = {k: v for k, v in params.items() if k in get_mechanism(name).defaults()}
            block.append({"eps": eps, "method": name, "label": label,
                          **_context_aware(pb, name, {**own, "eps": eps}, time_limit, use_cache)})
        baselines: list[tuple[str, str, Problem, dict[str, Any]]] = [
            ("lp", BEST_LP_LABEL, cf_avg, {"eps": eps}), ("lp", NO_MOTION_LP_LABEL, cf_nm, {"eps": eps})]
        if "lp-em" in have:
            baselines.append(("lp-em", f"ConstOPT/LP+EM ({baseline_cost} cost)", cf,
                              {"eps": eps, "candidates": max(1, pb.m // 2), "neighbours": min(38, pb.k)}))
        baselines.append(("em", "ExpMech", cf, {"eps": eps}))
        for name, label, problem, p in baselines:
            block.append({"eps": eps, "method": name, "label": label,
                          **_context_free(data, problem, name, p, time_limit, use_cache, floor)})
        best_cf = block[len(CONTEXT_AWARE)].get("loss_m")
        no_motion = block[len(CONTEXT_AWARE) + 1].get("loss_m")
        for row in block:
            if (pct := vs_lp_pct(row.get("loss_m"), best_cf)) is not None:
                row["vs_lp_pct"] = pct
            if (pct := vs_lp_pct(row.get("loss_m"), no_motion)) is not None:
                row["vs_no_motion_lp_pct"] = pct
        rows.extend(block)
    return rows


def corpus(problem: Problem, params: dict[str, Any]) -> CmdpData:
    """The corpus a C-mDP solve of ``problem`` with these parameters runs on (memoised: the solve's own)."""
    return prepare(problem, data_settings(params))


def best_context_free(problem: Problem, params: dict[str, Any], *, use_cache: bool = True
                      ) -> tuple[Result, float | None]:
    """The reference of ``vs_lp_pct``: the context-free ``lp`` on the context-averaged cost of the corpus of
    ``params`` (the best context-invariant mechanism), and its in-sample loss under the true model (m, Eq. 34)."""
    data = corpus(problem, params)
    r = solve(context_free_problem(data, "context-averaged"), "lp", {"eps": params["eps"]}, use_cache=use_cache)
    return r, (true_loss_context_free(data, r.Z) if r.Z is not None else None)


def vs_lp_pct(loss_m: float | None, best_lp_m: float | None) -> float | None:
    """A loss against the best context-invariant LP's, in percent (negative: below it), as ``compare`` reports.

    >>> round(vs_lp_pct(90.0, 100.0), 6), vs_lp_pct(None, 100.0)
    (-10.0, None)
    """
    if loss_m is None or not best_lp_m:
        return None
    return 100.0 * (loss_m / best_lp_m - 1.0)


def compare_problem(problem: Problem, params: dict[str, Any], eps_values: Sequence[float], *,
                    use_cache: bool = True, progress: Progress | None = None) -> list[dict[str, Any]]:
    """:func:`compare` on the corpus of ``params`` for ``problem`` (the one its C-mDP solves use)."""
    return compare(corpus(problem, params), params, eps_values, use_cache=use_cache, progress=progress)
