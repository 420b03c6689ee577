"""LP+EM (ConstOPT, Imola et al. UAI 2022, as the PAnDA authors reimplement it; spec 000 §3.4).

An LP optimises the columns of a *candidate set* of outputs (those where the exponential mechanism loses most
utility); the exponential mechanism (ε/2 exponent) keeps its columns for every other output. Each candidate
output's column is constrained locally, as in the authors' artifact: every ordered pair among the r secrets
nearest to it, plus a link from each other secret to its nearest member of that neighbourhood. Local constraints
do not imply ε-mDP for every pair, so the LP solution is checked and repaired exactly (Lipschitz repair of each
column, then a cone-preserving fix of the row sums); the breach found before the repair is reported.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..lp.colgen import lipschitz_repair, make_row_stochastic
from ..lp.highs import COEF_CAP, INF, solve_lp
from ..problem import Problem
from .base import Mechanism, Param, Progress, Result, epsilon_param
from .em import em_matrix
from .registry import register


def _solve_lp_em(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None) -> Result:
    eps = params["eps"]
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    n, m = problem.k, problem.m
    W = problem.p[:, None] * problem.c
    em = em_matrix(problem, eps, "half")
    # utility sensitivity: each output's share of EM's expected loss; the largest form the candidate set
    share = (W * em).sum(axis=0)
    n_cand = min(params["candidates"], m)
    cand = np.sort(np.argsort(-share, kind="stable")[:n_cand])
    rest = np.setdiff1d(np.arange(m), cand)
    q = em[:, cand].sum(axis=1)  # row mass the LP must place on the candidates
    r = min(params["neighbours"], n)
    d = problem.d
    # local pairs for each candidate output (vectorised over candidates)
    near = np.argsort(d[problem.y_index[cand]], axis=1, kind="stable")[:, :r]  # (C, r) secret indices
    a, b = np.nonzero(~np.eye(r, dtype=bool))
    loc_i = near[:, a].ravel()
    loc_j = near[:, b].ravel()
    loc_y = np.repeat(np.arange(n_cand), len(a))
    in_nb = np.zeros((n_cand, n), dtype=bool)
    in_nb[np.arange(n_cand)[:, None], near] = True
    oy, ox = np.nonzero(~in_nb)
    anchor = near[oy, np.argmin(d[ox[:, None], near[oy]], axis=1)]
    pi = np.concatenate([loc_i, ox, anchor])
    pj = np.concatenate([loc_j, anchor, ox])
    py = np.concatenate([loc_y, oy, oy])
    coef = np.minimum(np.exp(np.minimum(eps * d[pi, pj], 700.0)), COEF_CAP)
    n_pairs = len(pi)
    nv = n * n_cand
    rows = np.arange(n_pairs)
    A_pairs = sp.csr_matrix((np.concatenate([np.ones(n_pairs), -coef]),
                             (np.concatenate([rows, rows]), np.concatenate([pi * n_cand + py, pj * n_cand + py]))),
                            shape=(n_pairs, nv))
    S = sp.csr_matrix((np.ones(nv), (np.repeat(np.arange(n), n_cand), np.arange(nv))), shape=(n, nv))
    A = sp.vstack([A_pairs, S]).tocsc()
    lower = np.concatenate([np.full(n_pairs, -INF), q])
    upper = np.concatenate([np.zeros(n_pairs), q])
    timings["build_s"] = time.perf_counter() - t0
    out = solve_lp(W[:, cand].ravel(), A, lower, upper, np.zeros(nv), np.ones(nv), method=params["method"],
                   time_limit=time_limit, progress=progress, phase="LP over candidate outputs")
    timings["solve_s"] = out.solve_s
    diag: dict[str, Any] = {"candidates": cand, "candidate_count": int(n_cand), "neighbours": int(r),
                            "local_pairs": int(n_pairs)}
    if out.x is None:
        return Result("lp-em", params, None, out.status, eps, timings=timings, lp_size=out.size,
                      message=out.message or "the candidate LP did not finish", diagnostics=diag)
    t0 = time.perf_counter()
    progress("check and repair", None)
    Z = em.copy()
    Z[:, cand] = np.clip(out.x.reshape(n, n_cand), 0.0, None)
    Z[:, rest] = em[:, rest]
    Es = eps * d
    with np.errstate(divide="ignore"):
        logz = np.log(Z)
    top = logz.max(axis=0, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    u, _ = lipschitz_repair(logz - top, Es)
    Zr = np.exp(u + top)
    base = logz - top
    with np.errstate(invalid="ignore"):
        gap = np.where(np.isneginf(base), np.where(np.isneginf(u), 0.0, np.inf), u - base)
    diag["breach_before_repair"] = float(gap.max())  # max log-ratio above ε·d before the repair (0: none)
    diag["entries_raised"] = int((gap > 1e-9).sum())
    diag["repair_mass_added"] = float((Zr - Z).sum(axis=1).max())
    Z, fix = make_row_stochastic(Zr, Es, W)
    diag.update(fix)
    timings["repair_s"] = time.perf_counter() - t0
    objective = float(np.sum(W * Z))
    msg = ("local constraints broke ε-mDP for some pairs; the columns were repaired"
           if diag["entries_raised"] else "")
    return Result("lp-em", params, Z, out.status, eps, timings=timings, lp_size=out.size, objective_m=objective,
                  message=msg, diagnostics=diag)


LP_EM = register(Mechanism(
    name="lp-em", label="LP + EM (ConstOPT)", family="lp",
    paper="Imola, Kasiviswanathan, White, Chaudhuri: Balancing utility and scalability in metric differential "
          "privacy (UAI 2022); as reimplemented in PAnDA (CCS 2025) §4.3",
    info="An LP optimises the outputs where the exponential mechanism loses most; EM (ε/2) keeps the other "
         "outputs. Local constraints (r nearest secrets per output); the result is checked and repaired to be "
         "exactly ε-mDP.",
    params=(epsilon_param(),
            Param("candidates", int, 20, "number of outputs the LP optimises (largest share of EM's loss)", low=1,
                  high=10000, label="candidate outputs"),
            Param("neighbours", int, 38, "r: mDP rows of a candidate output link its r nearest secrets pairwise "
                  "(artifact: 38)", low=2, high=10000, label="neighbours r"),
            Param("method", str, "ipm", "HiGHS algorithm", choices=("ipm", "simplex"), label="LP method")),
    solve=_solve_lp_em, max_k=2000))
