"""Step ② of DISTA-LP, the local randomiser: one-sided (conservative) Laplace noise on surrogate parameters.

Per coordinate l of θ with lowering direction s_l ∈ {−1, 0, +1} (see ``surrogates``), shift τ_l ≥ 0 and floor f_l:

* ``one-sided`` (paper §IV-B and Eq. 58, the default): θ̃_l = max(θ_l + s_l·τ_l + s_l·|η_l|, f_l) with
  η_l ~ Lap(0, b), so the surface only moves down (SVD: s̃ = max(s − τ − |η|, 0)). Coordinates with s_l = 0
  (a Gaussian's centre, a polynomial's non-constant terms) keep two-sided noise: no sign of them lowers the surface.
* ``two-sided`` (the artifact): θ̃_l = max(θ_l + s_l·τ_l + η_l, f_l).

The noise scale b is in the parameter's unit (km for every block). Densities are exact, including the atom at the
floor, so the auditor can compute the true privacy loss of a draw.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

NOISE_KINDS = ("one-sided", "two-sided")


@dataclass(frozen=True)
class NoiseModel:
    """Noise of one upload: ``kind`` (``NOISE_KINDS``), Laplace scale ``b`` (km) and deterministic shrink ``tau``
    (km)."""

    kind: str
    b: float
    tau: float


def centre(theta: NDArray[np.float64], direction: NDArray[np.int8], tau: float) -> NDArray[np.float64]:
    """μ = θ + s·τ: the parameters after the deterministic shrink, before the random part."""
    return theta + direction * tau


def standard_draws(shape: tuple[int, ...], kind: str, rng: np.random.Generator) -> NDArray[np.float64]:
    """Noise at scale b = 1: |Lap(0, 1)| ~ Exp(1) for ``one-sided``, Lap(0, 1) for ``two-sided``.

    For ``one-sided`` the draws are returned as Laplace variables too; ``apply`` takes their magnitude on the
    lowering coordinates and keeps the sign on the two-sided ones. Scaling a fixed draw by b gives common random
    numbers across noise scales (used by the auditor's search for b).
    """
    return rng.laplace(0.0, 1.0, size=shape)


def apply(mu: NDArray[np.float64], direction: NDArray[np.int8], floor: NDArray[np.float64], kind: str, b: float,
          g: NDArray[np.float64]) -> NDArray[np.float64]:
    """θ̃ = max(μ + noise, floor) for standard draws ``g`` (broadcast over leading axes)."""
    if kind == "one-sided":
        step = np.where(direction != 0, direction * np.abs(g), g)
    else:
        step = g
    return np.maximum(mu + b * step, floor)


def perturb(theta: NDArray[np.float64], direction: NDArray[np.int8], floor: NDArray[np.float64],
            model: NoiseModel, rng: np.random.Generator) -> NDArray[np.float64]:
    """One release θ̃ = M^p(θ) of a parameter vector."""
    g = standard_draws(theta.shape, model.kind, rng)
    return apply(centre(theta, direction, model.tau), direction, floor, model.kind, model.b, g)


def log_density(t: NDArray[np.float64], mu: NDArray[np.float64], direction: NDArray[np.int8],
                floor: NDArray[np.float64], kind: str, b: float) -> NDArray[np.float64]:
    """Per-coordinate log density of observing θ̃ = t given centre μ (log mass at the floor atom), −inf off support.

    Shapes broadcast; returns the elementwise values (sum over the last axis for the joint log density).
    """
    at_floor = t <= floor
    one = (kind == "one-sided") & (direction != 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # interior densities
        excess = direction * (t - mu)  # ≥ 0 on the support of a one-sided coordinate
        d_one = np.where(excess >= -1e-12, -np.log(b) - np.maximum(excess, 0.0) / b, -np.inf)
        d_lap = -np.log(2 * b) - np.abs(t - mu) / b
        # atoms at the floor: Pr[noised value ≤ floor]
        gap = mu - floor  # distance from the centre down to the floor
        # one-sided lowering (s = −1): Pr[μ − |η| ≤ f] = exp(−(μ − f)⁺ / b); raising (s = +1): Pr = 1 if μ ≤ f else 0
        m_one = np.where(direction < 0, -np.maximum(gap, 0.0) / b, np.where(gap <= 0, 0.0, -np.inf))
        m_lap = np.where(gap >= 0, np.log(0.5) - gap / b, np.log1p(-0.5 * np.exp(np.minimum(gap, 0.0) / b)))
    interior = np.where(one, d_one, d_lap)
    atom = np.where(one, m_one, m_lap)
    return np.where(at_floor & np.isfinite(floor), atom, interior)


def infinite_loss_probability(mu_i: NDArray[np.float64], mu_j: NDArray[np.float64], direction: NDArray[np.int8],
                              floor: NDArray[np.float64], kind: str, b: float) -> NDArray[np.float64]:
    """Exact Pr[θ̃ ~ M(x_i) falls where M(x_j) has no density] (privacy loss +∞), over the last axis.

    Two-sided Laplace has full support: 0. One-sided lowering coordinates put mass on (max(μ_j, f), μ_i] with
    probability 1 − e^{−(μ_i − max(μ_j, f))⁺/b}; raising ones on [μ_i, μ_j) with 1 − e^{−(μ_j − μ_i)⁺/b}.
    """
    if kind != "one-sided":
        return np.zeros(np.broadcast(mu_i, mu_j).shape[:-1])
    lower = np.where(direction < 0, np.maximum(mu_i - np.maximum(mu_j, floor), 0.0), 0.0)
    upper = np.where(direction > 0, np.maximum(mu_j - mu_i, 0.0), 0.0)
    p: NDArray[np.float64] = 1.0 - np.exp(-(lower + upper).sum(axis=-1) / b)
    return p
