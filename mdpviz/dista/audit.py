"""The Monte-Carlo PmDP auditor of DISTA-LP's uploads (spec 001 §4.4), its noise calibration and γ calibration.

The auditor uses public data only (the road network, X, Y, d, c and p), never a real user's record: it simulates
hypothetical users at uniformly drawn pairs of secrets (x_i, x_j), i ≠ j, runs their step ① (neighbourhood, blocks,
surrogate fit), draws θ̃ ~ M^p_t(x_i) and computes the exact privacy loss

    PL = (1 / d(x_i, x_j)) · ln( p(θ̃ | x_i) / p(θ̃ | x_j) )

from the noise densities (``noise.log_density``). One-sided noise has a support that ends at the centre, so a draw
can land where x_j's density is zero: PL = +∞ there. The auditor therefore reports ε_t = the largest finite PL and
δ_t = the share of samples above it (the infinite ones) — an (ε_t, δ_t)-PmDP estimate — plus the exact probability
of infinite loss averaged over the sampled pairs, and the stated bound: every finite PL is at most
‖μ(x_i) − μ(x_j)‖₁ / (b · d(x_i, x_j)), μ the noise centre (each coordinate's log-density is 1/b-Lipschitz).

Scope: only the noised parameters θ are audited. Public parts uploaded in the clear (SVD's U_k, V_k; Eq. 58) are
not covered, as in the paper; neither is the mixture over the private permutation (the bound holds per
permutation, and the SVD singular values do not depend on it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..deadline import check_deadline
from ..errors import ParameterError
from ..problem import Problem
from ..progress import Progress, no_progress
from . import noise as nz
from .surrogates import BLOCKS, Fit, fit_user, permute
from .tighten import overestimate, tighten
from .users import make_user

AUDIT_MAXFEV = 200  # Nelder–Mead evaluations per simulated fit (parametric families): 2·S fits per block


@dataclass
class BlockAudit:
    """The audit of one upload type t.

    Attributes:
        block: ``dx``, ``dy`` or ``cy``.
        b: Laplace scale of its noise, km.
        pl: privacy loss of each sample, km⁻¹ (may hold +inf), shape (S,).
        bound: the stated bound ‖Δμ‖₁/(b·d) of each sample, km⁻¹, shape (S,).
        eps_t: largest finite PL (≥ 0), km⁻¹.
        delta_t: share of samples with PL > ε_t.
        p_infinite: exact Pr[PL = +∞] averaged over the sampled pairs (Monte-Carlo check of ``delta_t``).
    """

    block: str
    b: float
    pl: NDArray[np.float64]
    bound: NDArray[np.float64]
    eps_t: float
    delta_t: float
    p_infinite: float

    def summary(self) -> dict[str, float]:
        """The audit of one upload block as plain numbers (noise b, ε_t, δ_t, privacy-loss quantiles)."""
        finite = self.pl[np.isfinite(self.pl)]
        return {"b_km": self.b, "eps_t": self.eps_t, "delta_t": self.delta_t, "p_infinite": self.p_infinite,
                "pl_median": float(np.median(finite)) if len(finite) else float("nan"),
                "share_infinite": float(np.mean(~np.isfinite(self.pl))),
                "max_pl_over_bound": float(np.max(np.where(np.isfinite(self.pl) & (self.bound > 0),
                                                           self.pl / np.where(self.bound > 0, self.bound, 1), 0)))}


@dataclass
class AuditReport:
    """Everything the auditor measured: per-block audits, the sampled pairs, the calibrated repair γ (km), and the
    naive entrywise-Laplace baseline (``naive``, per block; see ``naive_baseline``)."""

    blocks: dict[str, BlockAudit]
    pairs: NDArray[np.int64]
    gamma: float
    overestimates: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    samples: int = 0
    naive: dict[str, dict[str, float]] = field(default_factory=dict)


def naive_baseline(raw_i: NDArray[np.float64], raw_j: NDArray[np.float64], d: NDArray[np.float64], eps: float,
                   rng: np.random.Generator) -> dict[str, float]:
    """The paper's naive upload (App. C, Fig. 3): vec(A) + Lap(b) entrywise, b = Δ/ε with Δ the metric sensitivity.

    Δ = max ‖vec A(x_i) − vec A(x_j)‖₁ / d(x_i, x_j) is estimated on the first half of the sampled pairs, and the
    privacy loss PL = (‖θ̃ − A_j‖₁ − ‖θ̃ − A_i‖₁)/(b·d) is measured on the second half (pairs the estimate never
    saw). In sample PL ≤ ε holds by construction, so any share above ε is an out-of-sample sensitivity miss.
    Rows are samples, columns the flattened block (n·m numbers).
    """
    half = max(len(d) // 2, 1)
    sens = float(np.max(np.abs(raw_i[:half] - raw_j[:half]).sum(axis=1) / d[:half]))
    b = sens / eps
    test_i, test_j, dt = raw_i[half:], raw_j[half:], d[half:]
    if len(dt) == 0 or b <= 0:
        return {"sensitivity_km_per_km": sens, "b_km": b, "share_above_eps": float("nan"), "max_pl": float("nan")}
    th = test_i + rng.laplace(0.0, b, size=test_i.shape)
    pl = (np.abs(th - test_j).sum(axis=1) - np.abs(th - test_i).sum(axis=1)) / (b * dt)
    return {"sensitivity_km_per_km": sens, "b_km": b, "share_above_eps": float(np.mean(pl > eps)),
            "max_pl": float(pl.max()), "upload_bytes": int(test_i.shape[1] * 8)}


def _pl(mu_i: NDArray[np.float64], mu_j: NDArray[np.float64], d: NDArray[np.float64], direction: NDArray[np.int8],
        floor: NDArray[np.float64], kind: str, b: float, g: NDArray[np.float64]) -> NDArray[np.float64]:
    """PL of draws θ̃ = apply(μ_i, g·b) against x_j, per sample (rows)."""
    th = nz.apply(mu_i, direction, floor, kind, b, g)
    li = nz.log_density(th, mu_i, direction, floor, kind, b).sum(axis=-1)
    lj = nz.log_density(th, mu_j, direction, floor, kind, b).sum(axis=-1)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(lj), (li - lj) / d, np.inf)


def _eps_delta(pl: NDArray[np.float64]) -> tuple[float, float]:
    finite = pl[np.isfinite(pl)]
    eps_t = max(float(finite.max()), 0.0) if len(finite) else 0.0
    return eps_t, float(np.mean(pl > eps_t))


def calibrate_b(mu_i: NDArray[np.float64], mu_j: NDArray[np.float64], d: NDArray[np.float64],
                direction: NDArray[np.int8], floor: NDArray[np.float64], kind: str, g: NDArray[np.float64],
                target: float, delta_max: float = 0.1, lo: float = 1e-6, hi: float = 1e4) -> float:
    """Smallest noise scale b (km, bisection in log b on common random numbers) whose audit gives ε_t ≤ ``target``
    and δ_t ≤ ``delta_max`` (without the δ cap, a tiny b would "pass" by making every loss infinite)."""
    def ok(b: float) -> bool:
        eps_t, delta_t = _eps_delta(_pl(mu_i, mu_j, d, direction, floor, kind, b, g))
        return eps_t <= target and delta_t <= delta_max

    if not ok(hi):
        raise ParameterError(f"No noise scale up to b = {hi:g} km brings the audited upload loss under "
                             f"{target:.3g} km⁻¹ with δ_t ≤ {delta_max:g}; raise `upload_share`, ε or `delta_max`, "
                             "or use two-sided noise.")
    for _ in range(60):
        mid = float(np.sqrt(lo * hi))
        if ok(mid):
            hi = mid
        else:
            lo = mid
        if hi / lo < 1.001:
            break
    return hi


def simulate_fits(problem: Problem, locations: NDArray[np.int64], hood: int, n_cand: int, family: str, rank: int,
                  rng: np.random.Generator, progress: Progress = no_progress, deadline: float | None = None
                  ) -> list[tuple[dict[str, NDArray[np.float64]], dict[str, NDArray[np.float64]], Fit]]:
    """Step ① of a hypothetical user at each location: (raw blocks, permuted blocks, fit). One fit per location;
    ``OutOfTime`` once ``deadline`` passes."""
    out = []
    for n, x in enumerate(locations):  # one short step-① simulation per sampled location
        what = f"fitting the auditor's simulated users ({n} of {len(locations)} done)"
        check_deadline(deadline, what)
        user = make_user(problem, int(x), hood, n_cand)
        fit = fit_user(user.blocks.as_dict(), family, rank, rng, perm_iters=0, maxfev=AUDIT_MAXFEV, deadline=deadline,
                       what=what)
        out.append((user.blocks.as_dict(), permute(user.blocks.as_dict(), fit.perm), fit))
        if n % 20 == 0:
            progress("audit: simulating users", n / len(locations))
    return out


def run_audit(problem: Problem, *, hood: int, n_cand: int, family: str, rank: int, kind: str, tau: float,
              samples: int, rng: np.random.Generator, b_fixed: float | None = None,
              targets: dict[str, float] | None = None, progress: Progress = no_progress,
              cost_up: bool = False, delta_max: float = 0.1, eps_naive: float | None = None,
              deadline: float | None = None) -> AuditReport:
    """Audit the three uploads on ``samples`` random pairs of secrets.

    Args:
        b_fixed: noise scale (km) for every block (``budget_mode`` = 'fixed-b'); or None with ``targets``.
        targets: per block the ε_t (km⁻¹) to reach; b is then the smallest scale that meets it.
        tau: deterministic shrink (km) of lowering coordinates.
        cost_up: the cost block's noise raises the surface (``cost_noise`` = 'up') instead of lowering it.
        delta_max: largest δ_t the target search accepts per upload.
        eps_naive: when given, also audit the naive entrywise-Laplace upload at this ε (km⁻¹).
        deadline: a ``time.perf_counter()`` value; past it (checked per simulated user, block and sample)
            ``OutOfTime`` is raised.
    """
    if problem.k < 2:
        raise ParameterError("The auditor needs at least two secrets.")
    i = rng.integers(0, problem.k, size=samples)
    j = (i + rng.integers(1, problem.k, size=samples)) % problem.k  # uniform over j ≠ i
    locations, inverse = np.unique(np.concatenate([i, j]), return_inverse=True)
    sims = simulate_fits(problem, locations, hood, n_cand, family, rank, rng, progress, deadline)
    ii, jj = inverse[:samples], inverse[samples:]
    d = np.maximum(problem.d[i, j], 1e-9)
    blocks: dict[str, BlockAudit] = {}
    draws: dict[str, NDArray[np.float64]] = {}
    for t in BLOCKS:
        check_deadline(deadline, f"auditing the {t} uploads")
        sur0 = sims[0][2].surrogates[t]
        direction, floor = sur0.direction, sur0.floor
        if cost_up and t == "cy":
            direction = -direction
        mu = np.stack([nz.centre(f.surrogates[t].theta, direction, tau) for _, _, f in sims])  # (L, p)
        mu_i, mu_j = mu[ii], mu[jj]
        g = nz.standard_draws(mu_i.shape, kind, rng)
        if b_fixed is not None:
            b = float(b_fixed)
        else:
            assert targets is not None
            b = calibrate_b(mu_i, mu_j, d, direction, floor, kind, g, targets[t], delta_max)
        pl = _pl(mu_i, mu_j, d, direction, floor, kind, b, g)
        eps_t, delta_t = _eps_delta(pl)
        bound = np.abs(mu_i - mu_j).sum(axis=1) / (b * d)
        p_inf = float(nz.infinite_loss_probability(mu_i, mu_j, direction, floor, kind, b).mean())
        blocks[t] = BlockAudit(t, b, pl, bound, eps_t, delta_t, p_inf)
        draws[t] = nz.apply(mu_i, direction, floor, kind, b, g)
    progress("audit: calibrating γ", None)
    over = np.empty(samples)
    for s in range(samples):  # one reconstruction per sample: the γ that would have made it conservative
        check_deadline(deadline, f"calibrating the repair γ ({s} of {samples} samples done)")
        _, true, fit = sims[ii[s]]
        recon = {t: fit.surrogates[t].reconstruct(draws[t][s]) for t in BLOCKS}
        tight = tighten(recon, 0.0)
        over[s] = max(overestimate(true["dx"], tight["dx"]), overestimate(true["dy"], tight["dy"]))
    naive: dict[str, dict[str, float]] = {}
    if eps_naive is not None:
        for t in BLOCKS:
            raw = np.stack([r[t].ravel() for r, _, _ in sims])
            naive[t] = naive_baseline(raw[ii], raw[jj], d, eps_naive, rng)
    return AuditReport(blocks, np.column_stack([i, j]).astype(np.int64), float(over.max()), over, samples, naive)
