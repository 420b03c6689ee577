"""DISTA-LP end to end: users → step ① (permute + fit) → auditor and budget → step ② (noise) → server (reconstruct,
tighten, WEM+LP by Benders) → each user un-permutes its block and samples its report."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..contract import CountCheck
from ..deadline import check_deadline, with_grace
from ..errors import ParameterError
from ..lp.cone import repair_into_cone
from ..metrics import cone_breaches
from ..problem import Problem
from ..progress import Progress, no_progress
from ..rows import exp_rows
from . import noise as nz
from .audit import AuditReport, run_audit
from .budget import Budget, account
from .diagnostics import EndToEnd
from .per_user_benders import BendersOutcome, UserLP, benders_loop, build_user_lp, solve_direct
from .surrogates import BLOCKS, Fit, fit_user, overestimated_share, permute, relative_error
from .tighten import overestimate, tighten
from .users import BYTES_PER_NUMBER, User, canonical, draw_users, raw_upload_bytes

TAU_RULES = ("0.5/eps", "c*eps")
BUDGET_MODES = ("target", "fixed-b", "paper")
GAMMA_MODES = ("audit", "fixed")
SOLVERS = ("benders", "direct")


@dataclass(frozen=True)
class DistaConfig:
    """Every DISTA-LP setting (units: ε km⁻¹; radii, γ, b in km). See ``dista.mechanism`` for the schema."""

    eps: float = 5.0
    users: int = 6
    hood: int = 20
    candidates: int = 20
    family: str = "svd"
    rank: int = 5
    perm_iters: int = 5
    noise: str = "one-sided"
    cost_noise: str = "down"
    tau_rule: str = "0.5/eps"
    tau_c: float = 0.5
    budget_mode: str = "target"
    upload_share: float = 0.5
    delta_max: float = 0.1
    noise_mult: float = 1.0
    audit_samples: int = 100
    gamma_mode: str = "audit"
    gamma: float = 0.0
    wem_radius: float = 0.3
    wem_exponent: str = "half"
    solver: str = "benders"
    benders_iters: int = 60
    gap_tol: float = 1e-6
    repair: bool = True
    seed: int = 0
    upload: str = "surrogate"
    cells: int = 8
    cell_share: float = 0.3

    @property
    def tau(self) -> float:
        """Deterministic shrink τ (km): 0.5/ε (artifact, default) or c·ε (paper §C; grows with ε)."""
        return 0.5 / self.eps if self.tau_rule == "0.5/eps" else self.tau_c * self.eps


@dataclass
class UserOutcome:
    """One user's trip through the pipeline (arrays in the user's own order unless named ``server``)."""

    user: User
    fit: Fit
    theta: dict[str, NDArray[np.float64]]
    server_blocks: dict[str, NDArray[np.float64]]
    Z: NDArray[np.float64] | None = None
    report: int = -1
    stats: dict[str, float] = field(default_factory=dict)


@dataclass
class DistaRun:
    """Everything a DISTA-LP run produced."""

    config: DistaConfig
    users: list[UserOutcome]
    audit: AuditReport
    budget: Budget
    gamma: float
    benders: BendersOutcome | None
    objective_km: float
    lp_size: dict[str, int]
    timings: dict[str, float]
    violations_true: CountCheck
    violations_enforced: CountCheck
    end_to_end: EndToEnd | None = None
    status: str = "optimal"  # the LP's: optimal, iteration limit, or time limit (then users may have no Z)

    @property
    def erased(self) -> dict[str, int]:
        """How many users' server blocks are all zero, per block (dx, dy, cy): the uploads the noise erased."""
        return {t: sum(int(not np.any(o.server_blocks[t] > 0)) for o in self.users) for t in BLOCKS}


def _triples(Z: NDArray[np.float64], D: NDArray[np.float64], eps: float) -> tuple[int, int]:
    """(violated, checked) triples (i ≠ j, k) of z_ik ≤ e^{ε·D_ij} z_jk inside one block (``metrics.cone_breaches``)."""
    n, m = Z.shape
    return cone_breaches(Z, eps * D).triples, n * (n - 1) * m


def _noise_models(cfg: DistaConfig, audit: AuditReport) -> dict[str, nz.NoiseModel]:
    return {t: nz.NoiseModel(cfg.noise, audit.blocks[t].b, cfg.tau) for t in BLOCKS}


def _flip_cost(fit: Fit, cfg: DistaConfig) -> None:
    """``cost_noise`` = 'up' (§IV-B: c̃ = c + |η|) turns the cost block's lowering directions into raising ones."""
    if cfg.cost_noise == "up":
        fit.surrogates["cy"].direction = -fit.surrogates["cy"].direction


def end_to_end(problem: Problem, outcomes: list[UserOutcome], eps: float) -> EndToEnd:
    """The whole release x_m → y_m checked over pairs of the users' true records, at ``eps`` (km⁻¹).

    Each user's report distribution lives on its own candidates Y_m, which are the outputs nearest x_m: two users
    whose candidate sets differ give some report probability 0 under one record and > 0 under the other, an
    infinite privacy loss that no claim inside one neighbourhood covers.
    """
    R = np.zeros((len(outcomes), problem.m))
    for m, o in enumerate(outcomes):
        # (mypy) every user outcome here was solved, so its Z is set
        R[m, o.user.cand] = o.Z[0]  # type: ignore[index]
    rec = np.array([o.user.record for o in outcomes])
    b = cone_breaches(R, eps * problem.d[np.ix_(rec, rec)])
    same = np.array([[np.array_equal(a.user.cand, c.user.cand) for c in outcomes] for a in outcomes])
    n = len(outcomes)
    return {"pairs": n * (n - 1), "breached": len(b.i), "worst_factor": b.worst_factor,
            "pairs_with_different_candidates": int((~same).sum()), "eps": eps,
            "definition": "each user's report distribution (zeros outside Y_m) against every other user's, at ε "
                          "over the users' true records"}


def _server_block(o: UserOutcome, lp: UserLP, zf: NDArray[np.float64], w: NDArray[np.float64], eps_pt: float,
                  repair: bool) -> NDArray[np.float64]:
    """User m's downloaded block Ẑ_m (server order): assembled, and exactly inside the cone of the enforced d̄.

    A user whose cost block the noise erased gets the uniform block: every feasible block costs 0 under its
    uploaded costs, and uniform is the one choice that depends on no ordering (a solver's vertex would put all
    mass on whichever column comes first).
    """
    o.stats["repair_mass_added"] = 0.0
    if not np.any(o.server_blocks["cy"] > 0):
        return np.full((lp.n, lp.m), 1.0 / lp.m)
    Zs = np.clip(lp.assemble(zf, w), 0.0, None)
    if repair:  # solver tolerances: lift entries into the cone of the enforced distances, rows fixed inside it
        Zs, facts = repair_into_cone(Zs, eps_pt * o.server_blocks["dx"], o.server_blocks["cy"])
        o.stats["repair_mass_added"] = facts["repair_mass_added"]
    else:
        Zs /= Zs.sum(axis=1, keepdims=True)
    return Zs


def _reconstruct(o: UserOutcome, gamma: float) -> None:
    """The server's side of one upload: reconstruct the blocks, tighten them by γ, record the errors (post-processing;
    the true blocks enter the diagnostics only, the server never sees them)."""
    true_p = permute(o.user.blocks.as_dict(), o.fit.perm)
    recon = {t: o.fit.surrogates[t].reconstruct(o.theta[t]) for t in BLOCKS}
    o.server_blocks = tighten(recon, gamma)
    for t in BLOCKS:
        o.stats[f"relerr_{t}_raw"] = relative_error(true_p[t], recon[t])
        o.stats[f"relerr_{t}"] = relative_error(true_p[t], o.server_blocks[t])
    for t in ("dx", "dy"):
        o.stats[f"over_{t}_raw"] = overestimated_share(true_p[t], recon[t])
        o.stats[f"over_{t}"] = overestimated_share(true_p[t], o.server_blocks[t])
        o.stats[f"delta_plus_{t}_km"] = overestimate(true_p[t], o.server_blocks[t])


def run(problem: Problem, cfg: DistaConfig, progress: Progress = no_progress,
        time_limit: float | None = None, users: list[User] | None = None) -> DistaRun:
    """Run DISTA-LP on ``problem`` (``users``: given users instead of drawing ``cfg.users`` from the prior).

    Raises:
        ParameterError: settings that do not fit the problem, or an upload budget that leaves no ε_pt.
        SolverError: an LP that ends without a solution.
        OutOfTime: the time limit passed before the LP (the audit, the users' fits) or after it (the downloads'
            repair and checks); a time limit inside the LP gives status ``time limit`` instead.
    """
    timings: dict[str, float] = {}
    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    r_users, r_fit, r_audit, r_noise, r_report = (np.random.default_rng(s)
                                                  for s in np.random.SeedSequence(cfg.seed).spawn(5))
    t0 = time.perf_counter()
    if users is None:
        users = draw_users(problem, cfg.users, cfg.hood, cfg.candidates, r_users)
    users = [canonical(u) for u in users]
    if cfg.hood < 2:
        raise ParameterError("Parameter `hood` must be at least 2: a neighbourhood needs a pair of secrets.")

    # auditor (public data only) and budget, before anything is released
    progress("audit", None)
    t1 = time.perf_counter()
    audit = _audit(problem, cfg, r_audit, progress, deadline)
    timings["audit_s"] = time.perf_counter() - t1
    budget = account(cfg.eps, {t: a.eps_t for t, a in audit.blocks.items()},
                     {t: a.delta_t for t, a in audit.blocks.items()},
                     nominal_pt=(1 - cfg.upload_share) * cfg.eps if cfg.budget_mode == "paper" else None)
    eps_pt = budget.eps_pt
    gamma = audit.gamma if cfg.gamma_mode == "audit" else cfg.gamma

    # step ① and ② on every user's device
    progress("users: fit and perturb", None)
    t1 = time.perf_counter()
    outcomes = _fit_and_perturb(users, cfg, _noise_models(cfg, audit), r_fit, r_noise, deadline)
    timings["users_s"] = time.perf_counter() - t1

    # server: reconstruct and tighten (post-processing)
    progress("server: reconstruct and tighten", None)
    t1 = time.perf_counter()
    for o in outcomes:
        check_deadline(deadline, "reconstructing the uploads")
        _reconstruct(o, gamma)
    timings["tighten_s"] = time.perf_counter() - t1

    # server: the WEM+LP
    progress("server: WEM+LP", None)
    t1 = time.perf_counter()
    n_w, lps = _build_lps(outcomes, problem.m, eps_pt, cfg)
    timings["lp_build_s"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    bd, solved = _solve_wem_lp(lps, n_w, cfg, deadline, progress)
    timings["lp_solve_s"] = time.perf_counter() - t1
    lp_size = _lp_size(lps, n_w)
    if solved is None:  # stopped by the time limit before any feasible point
        timings["total_s"] = time.perf_counter() - t0
        none: CountCheck = {"violated": 0, "checked": 0}
        return DistaRun(cfg, outcomes, audit, budget, gamma, bd, float("nan"), lp_size, timings, none, none.copy(),
                        status="time limit")
    w, z_free, objective = solved

    # download, local un-permutation, report; measured checks
    # a best point of an LP that the deadline stopped is repaired with a little grace (kept aside, never released)
    post = with_grace(deadline) if bd is not None and bd.status == "time limit" else deadline
    viol_true, viol_enf = _download(problem, outcomes, lps, z_free, w, eps_pt, cfg.repair, r_report, post)
    timings["total_s"] = time.perf_counter() - t0
    return DistaRun(cfg, outcomes, audit, budget, gamma, bd, float(objective), lp_size, timings, viol_true, viol_enf,
                    end_to_end(problem, outcomes, budget.eps), bd.status if bd is not None else "optimal")


def _audit(problem: Problem, cfg: DistaConfig, rng: np.random.Generator, progress: Progress,
           deadline: float | None) -> AuditReport:
    """The auditor's run on public data: each block's noise scale b and its (ε_t, δ_t), under ``cfg.budget_mode``."""
    targets = {t: cfg.upload_share * cfg.eps / 3 for t in BLOCKS} if cfg.budget_mode == "target" else None
    b_fixed = cfg.noise_mult / cfg.eps if cfg.budget_mode in ("fixed-b", "paper") else None
    return run_audit(problem, hood=cfg.hood, n_cand=cfg.candidates, family=cfg.family, rank=cfg.rank,
                     kind=cfg.noise, tau=cfg.tau, samples=cfg.audit_samples, rng=rng, b_fixed=b_fixed,
                     targets=targets, progress=progress, cost_up=cfg.cost_noise == "up",
                     delta_max=cfg.delta_max, eps_naive=cfg.eps, deadline=deadline)


def _fit_and_perturb(users: list[User], cfg: DistaConfig, models: dict[str, nz.NoiseModel],
                     r_fit: np.random.Generator, r_noise: np.random.Generator,
                     deadline: float | None) -> list[UserOutcome]:
    """Steps ① and ② on each user's device: permute and fit the surrogates, then perturb their parameters; returns
    one ``UserOutcome`` per user, with its upload and download sizes in ``stats``."""
    outcomes: list[UserOutcome] = []
    for n_done, u in enumerate(users):  # one device per user
        what = f"fitting the users' surrogates ({n_done} of {len(users)} done)"
        check_deadline(deadline, what)
        fit = fit_user(u.blocks.as_dict(), cfg.family, cfg.rank, r_fit, cfg.perm_iters, deadline=deadline, what=what)
        _flip_cost(fit, cfg)
        theta = {t: nz.perturb(s.theta, s.direction, s.floor, models[t], r_noise) for t, s in fit.surrogates.items()}
        up = sum(s.upload_numbers(theta[t]) for t, s in fit.surrogates.items()) * BYTES_PER_NUMBER
        n, m = u.blocks.dy.shape
        stats = {"bytes_raw": raw_upload_bytes(n, m), "bytes_surrogate": up, "bytes_download": n * m * 8,
                 "bytes_report": BYTES_PER_NUMBER, "fit_loss_km": fit.loss_history[-1], "swaps": fit.swaps}
        outcomes.append(UserOutcome(u, fit, theta, {}, stats=stats))
    return outcomes


def _build_lps(outcomes: list[UserOutcome], m: int, eps_pt: float, cfg: DistaConfig) -> tuple[int, list[UserLP]]:
    """Each user's block of the WEM+LP over the server's blocks; returns the number of WEM weights (outputs in some
    user's candidates, out of ``m``) and the blocks."""
    used = np.unique(np.concatenate([o.user.cand for o in outcomes]))
    w_index = np.full(m, -1, dtype=np.int64)
    w_index[used] = np.arange(len(used))
    lps = [build_user_lp(o.server_blocks["dx"], o.server_blocks["dy"], o.server_blocks["cy"], o.user.cand, w_index,
                         len(used), eps_pt, cfg.wem_radius, cfg.wem_exponent) for o in outcomes]
    return len(used), lps


def _solve_wem_lp(lps: list[UserLP], n_w: int, cfg: DistaConfig, deadline: float | None, progress: Progress
                  ) -> tuple[BendersOutcome | None,
                             tuple[NDArray[np.float64], list[NDArray[np.float64]], float] | None]:
    """The WEM+LP by Benders or in one piece (``cfg.solver``) in the time left; returns Benders' outcome (None for
    the direct solve) and (w, free entries per user, objective), None when no feasible point came in time."""
    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and left <= 0:
        return None, None  # the audit and the uploads used the whole time limit: no LP is started
    if cfg.solver == "benders":
        bd = benders_loop(lps, n_w, gap_tol=cfg.gap_tol, max_iter=cfg.benders_iters, time_limit=left,
                          progress=progress)
        return bd, ((bd.w, bd.z_free, bd.upper) if bd.z_free else None)
    return None, solve_direct(lps, n_w, time_limit=left)


def _lp_size(lps: list[UserLP], n_w: int) -> dict[str, int]:
    """Variables, constraints and nonzeros of the WEM+LP, and how many entries WEM fixes."""
    return {"variables": sum(u.n_free for u in lps) + n_w,
            "constraints": sum(u.A_free.shape[0] + u.static_B.shape[0] for u in lps),
            "nonzeros": sum(u.A_free.nnz + u.B.nnz + u.static_B.nnz for u in lps),
            "wem_entries": int(sum(u.fixed.sum() for u in lps))}


def _download(problem: Problem, outcomes: list[UserOutcome], lps: list[UserLP], z_free: list[NDArray[np.float64]],
              w: NDArray[np.float64], eps_pt: float, repair: bool, r_report: np.random.Generator,
              deadline: float | None) -> tuple[CountCheck, CountCheck]:
    """Each user downloads its block, un-permutes it and samples its report (into its ``UserOutcome``); returns the
    violated and checked triples against the true distances and against the enforced ones."""
    viol_true: CountCheck = {"violated": 0, "checked": 0}
    viol_enf: CountCheck = {"violated": 0, "checked": 0}
    for n_done, (o, lp, zf) in enumerate(zip(outcomes, lps, z_free)):
        check_deadline(deadline, f"repairing and checking the users' downloads ({n_done} of {len(lps)} done)")
        Zs = _server_block(o, lp, zf, w, eps_pt, repair)
        bad, checked = _triples(Zs, o.server_blocks["dx"], eps_pt)
        viol_enf["violated"] += bad
        viol_enf["checked"] += checked
        Z = np.empty_like(Zs)
        Z[o.fit.perm] = Zs  # Z_m = E_mᵀ Ẑ_m: permuted row r is the user's row perm[r] (Eq. 36, corrected)
        o.Z = Z
        bad, checked = _triples(Z, o.user.blocks.dx, eps_pt)
        viol_true["violated"] += bad
        viol_true["checked"] += checked
        o.report = int(o.user.cand[r_report.choice(len(o.user.cand), p=Z[0])])
        o.stats["loss_m"] = float(problem.c[o.user.record, o.user.cand] @ Z[0])
        o.stats["report_cost_m"] = float(problem.c[o.user.record, o.report])
    return viol_true, viol_enf


def embed(problem: Problem, run_: DistaRun) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """A K×|Y| row-stochastic Z for the generic views, and each row's source.

    Rows of secrets inside some user's neighbourhood come from that user's block (the user whose true record is
    nearest when neighbourhoods overlap), with zeros outside its Y_m. Other rows are EM at ε_pt (exp(−ε_pt·d/2))
    over all of Y, a filler that is not part of DISTA-LP. ``source[x]`` is the user index, or −1 for filler.
    """
    eps_pt = run_.budget.eps_pt
    Z = exp_rows(-0.5 * eps_pt * problem.d_xy)
    source = np.full(problem.k, -1, dtype=np.int64)
    best = np.full(problem.k, np.inf)
    for m, o in enumerate(run_.users):  # one block per user
        dist = problem.d[o.user.hood, o.user.record]
        take = dist < best[o.user.hood]
        rows = o.user.hood[take]
        best[rows] = dist[take]
        source[rows] = m
        Z[rows] = 0.0
        # (mypy) every user outcome here was solved, so its Z is set
        Z[np.ix_(rows, o.user.cand)] = o.Z[take]  # type: ignore[index]
    return Z, source


def summary(run_: DistaRun) -> dict[str, Any]:
    """Per-user statistics averaged over users (JSON-friendly)."""
    keys = run_.users[0].stats.keys()
    return {k: float(np.mean([o.stats[k] for o in run_.users])) for k in keys}
