"""The exponential mechanism over Y (2015), its Bayesian remapping (2017) and the truncated EM (TEM)."""

from __future__ import annotations

import time
from typing import Any, TypedDict

import numpy as np
from numpy.typing import NDArray

from .. import metrics
from ..contract import Mechanism, Param, Progress, Result, epsilon_param, register
from ..errors import ParameterError
from ..problem import Problem
from ..rows import exp_rows

SCALES = ("half", "literal")
_SCALE = Param("scale", str, "half",
               "exponent of the weights: 'half' uses exp(−ε·d/2), which is ε-mDP; 'literal' uses the papers' "
               "exp(−ε·d), which is only guaranteed 2ε-mDP and can violate ε-mDP", choices=SCALES,
               label="EM exponent")


class RemapDiagnostics(TypedDict):
    """What EM + Bayesian remapping reports: each output's replacement, and what the remapping changed."""

    remap: NDArray[np.int64]  # output y is reported as remap[y]
    outputs_used: int
    outputs_remapped: int
    remap_gain_m: float  # expected loss saved over plain EM (m)


class ThresholdDiagnostics(TypedDict):
    """What the truncated EM reports: its threshold γ and the prior mass it leaves beyond γ."""

    threshold_km: float
    mass_beyond_threshold: float  # prior-weighted probability of a report beyond γ
    secrets_without_output_within_threshold: float  # prior-weighted share


def em_matrix(problem: Problem, eps: float, scale: str = "half") -> NDArray[np.float64]:
    """Z[x, y] ∝ exp(−ε·d(x, y)/2) (``half``) or exp(−ε·d(x, y)) (``literal``), rows normalised."""
    factor = 0.5 if scale == "half" else 1.0
    return exp_rows(-eps * factor * problem.d_xy)


def bayes_remap(problem: Problem, Z: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Remap each output y to argmin_y' E[c(x, y') | y] under the posterior from the prior; returns (Z', r)."""
    joint = problem.p[:, None] * Z  # Pr[x, y]
    score = problem.c.T @ joint  # (y', y): Σ_x Pr[x, y] c(x, y')
    remap = np.argmin(score, axis=0)
    R = np.zeros((problem.m, problem.m))
    R[np.arange(problem.m), remap] = 1.0
    return Z @ R, remap.astype(np.int64)


def _solve_em(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None) -> Result:
    t0 = time.perf_counter()
    Z = em_matrix(problem, params["eps"], params["scale"])
    literal = params["scale"] == "literal"
    claim = "all pairs at 2ε (literal exp(−ε·d) is not ε-mDP)" if literal else "all pairs"
    degenerate = (f"Not ε-mDP: the literal weights exp(−ε·d), renormalised over Y, are only 2ε-mDP (ε-mDP at "
                  f"{2 * params['eps']:g} km⁻¹, not {params['eps']:g}); scale = 'half' is the ε-mDP form."
                  if literal else "")
    return Result("em", params, Z, "closed form", params["eps"], claim=claim, degenerate=degenerate,
                  message=degenerate, timings={"build_s": time.perf_counter() - t0})


def _solve_em_br(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None) -> Result:
    t0 = time.perf_counter()
    Z0 = em_matrix(problem, params["eps"], "half")
    t1 = time.perf_counter()
    Z, remap = bayes_remap(problem, Z0)
    moved = int((remap != np.arange(problem.m)).sum())
    before = metrics.utility_loss_m(problem, Z0)
    gain = before - metrics.utility_loss_m(problem, Z)
    message = ""
    if gain <= 0.01 * before:  # remapping can only lower the loss; say so when it hardly does
        message = (f"Bayesian remapping moved {moved} of {problem.m} outputs and saved {gain:.3g} m of {before:.4g} m: "
                   "each report's posterior is already best served by (nearly) the report itself, as when EM is "
                   "concentrated (large ε·distances) and the cost is a plain distance.")
    return Result("em-br", params, Z, "closed form", params["eps"], message=message,
                  timings={"em_s": t1 - t0, "remap_s": time.perf_counter() - t1},
                  diagnostics=RemapDiagnostics(remap=remap, outputs_used=len(np.unique(remap)), outputs_remapped=moved,
                                               remap_gain_m=gain))


EM = register(Mechanism(
    name="em", label="Exponential mechanism (EM)", family="baseline",
    paper="Chatzikokolakis, Palamidessi, Stronati: Location privacy via geo-indistinguishability (PoPETs 2015)",
    info="Reports y with probability proportional to exp(−ε·d(x, y)/2). No optimisation; ε-mDP by construction.",
    params=(epsilon_param(), _SCALE), solve=_solve_em))

EM_BR = register(Mechanism(
    name="em-br", label="EM + Bayesian remapping", family="baseline",
    paper="Chatzikokolakis, ElSalamouny, Palamidessi: Efficient utility improvement for location privacy "
          "(PoPETs 2017)",
    info="EM (ε/2 exponent), then each output is remapped to the output with the least posterior expected cost. "
         "Remapping is post-processing, so ε-mDP is kept.",
    params=(epsilon_param(),), solve=_solve_em_br, diagnostics=RemapDiagnostics))


def _solve_tem(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None) -> Result:
    eps, beta, m = params["eps"], params["beta"], problem.m
    arg = (m - 1) * (1 - beta) / beta
    if m < 2 or arg <= 1:
        raise ParameterError(f"`beta` = {beta:g} gives no positive truncation threshold with |Y| = {m}; "
                             f"choose beta < {(m - 1) / m:.3g} (and |Y| ≥ 2).")
    gamma = 2.0 / eps * np.log(arg)
    score = -np.minimum(problem.d_xy, gamma)  # 1-Lipschitz in x, so exp(ε·score/2) normalised is ε-mDP
    Z = exp_rows(eps * score / 2)
    beyond = problem.d_xy > gamma
    # TEM's design (words in a vocabulary) assumes the true value is itself an output: it is then reported with
    # probability ≥ 1 − β. A secret with no output near it sees every output beyond γ as equally likely.
    mass_beyond = float(problem.p @ (Z * beyond).sum(axis=1))
    no_output = float(problem.p @ beyond.all(axis=1))
    message = ""
    if mass_beyond > beta:
        message = (f"Threshold γ = {gamma:.3g} km: on average {100 * mass_beyond:.0f} % of a secret's reports land "
                   f"beyond γ, where every output is equally likely ({100 * no_output:.0f} % of the secrets have no "
                   f"output within γ). TEM's guarantee (reported within γ with probability ≥ 1 − β) holds for a "
                   "secret that is itself an output; a smaller β widens γ.")
    return Result("tem", params, Z, "closed form", eps, message=message,
                  diagnostics=ThresholdDiagnostics(threshold_km=float(gamma), mass_beyond_threshold=mass_beyond,
                                                   secrets_without_output_within_threshold=no_output))


TEM = register(Mechanism(
    name="tem", label="Truncated exponential mechanism (TEM)", family="baseline",
    paper="Carvalho, Vasiloudis, Feyisetan, Wang: TEM: high utility metric differential privacy on text (2023)",
    info="Scores −min(d, γ) with threshold γ = (2/ε)·ln((|Y|−1)(1−β)/β); weights exp(ε·score/2): ε-mDP.",
    params=(epsilon_param(), Param("beta", float, 0.1, "truncation parameter β (smaller: larger threshold)",
                                   low=1e-6, high=0.99, log=True, label="β")), solve=_solve_tem,
    diagnostics=ThresholdDiagnostics))
