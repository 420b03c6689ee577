"""Phase I of PAnDA: the decay functions h, the selection probabilities w and seeded anchor-set sampling.

User n with true secret x_n includes each record x independently with probability w(d(x_n, x)) (Eqs. 10–11, 15):
``h(d)`` for d < γ and a floor beyond γ, either the paper's ``h(γ)`` or the authors' code's small ``w_min``.
Every h has h(0) = α, so α < 1 is required (Prop. 5: w = 1 would make Phase I's likelihood ratio infinite).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import ParameterError

VARIANTS = ("e", "p", "l")
VARIANT_NAMES = {"e": "exponential α·e^(−λd)", "p": "power law α/(1 + d^λ)", "l": "logistic 2α/(1 + e^(λd))"}
FLOORS = ("w_min", "h_gamma")
EMPTY_RULES = ("no output", "resample")


def decay(d_km: NDArray[np.float64] | float, variant: str, alpha: float, lam: float) -> NDArray[np.float64]:
    """The selection function h(d) of a variant (paper Table 1), d in km; h(0) = α and h is non-increasing.

    >>> [round(float(decay(0.0, v, 0.9, 0.5)), 3) for v in VARIANTS]
    [0.9, 0.9, 0.9]
    >>> round(float(decay(2.0, "e", 0.9, 0.5)), 4)
    0.3311
    """
    d = np.asarray(d_km, dtype=np.float64)
    if variant == "e":
        return alpha * np.exp(-lam * d)
    if variant == "p":
        return alpha / (1.0 + d ** lam)
    if variant == "l":
        return 2.0 * alpha / (1.0 + np.exp(np.minimum(lam * d, 700.0)))
    raise ParameterError(f"`variant` = {variant!r} is not one of {', '.join(VARIANTS)}.")


@dataclass(frozen=True)
class Selection:
    """The selection rule w(d): ``h(d)`` for d < γ, ``floor_value`` for d ≥ γ.

    Attributes:
        variant: ``e``, ``p`` or ``l``.
        alpha: h(0), in (0, 1).
        lam: decay rate λ (km⁻¹ for e and l, a dimensionless exponent for p).
        gamma_km: distance γ beyond which w is the floor, km.
        floor: ``h_gamma`` (paper Eq. 15) or ``w_min`` (authors' code).
        floor_value: the probability beyond γ.
    """

    variant: str
    alpha: float
    lam: float
    gamma_km: float
    floor: str
    floor_value: float

    def weights(self, d_km: NDArray[np.float64]) -> NDArray[np.float64]:
        """w for distances ``d_km`` (any shape), every value in [floor_value, α]."""
        d = np.asarray(d_km, dtype=np.float64)
        return np.where(d < self.gamma_km, decay(np.minimum(d, self.gamma_km), self.variant, self.alpha, self.lam),
                        self.floor_value)


def make_selection(variant: str, alpha: float, lam: float, gamma_km: float, floor: str = "w_min",
                   w_min: float = 1e-4) -> Selection:
    """Check the parameters and fix the floor.

    Raises:
        ParameterError: α outside (0, 1), λ or γ not positive, an unknown floor, or a ``w_min`` above h(γ)
            (the floor must not exceed the probabilities inside γ, or w would increase with distance).
    """
    if not 0.0 < alpha < 1.0:
        raise ParameterError(f"`alpha` = {alpha} must lie in (0, 1): α = h(0) is the chance that a user selects "
                             "its own record, and α ≥ 1 makes Phase I's privacy cost infinite (Prop. 5).")
    if lam <= 0 or gamma_km <= 0:
        raise ParameterError(f"`lam` = {lam} and γ = {gamma_km} km must both be positive.")
    if floor not in FLOORS:
        raise ParameterError(f"`floor` = {floor!r} is not one of {', '.join(FLOORS)}.")
    h_gamma = float(decay(gamma_km, variant, alpha, lam))
    if floor == "h_gamma":
        value = h_gamma
    else:
        if not 0.0 < w_min <= h_gamma:
            raise ParameterError(f"`w_min` = {w_min:g} must lie in (0, h(γ) = {h_gamma:.4g}]: beyond γ the selection "
                                 "probability may not exceed its value inside γ. Lower w_min or γ.")
        value = float(w_min)
    return Selection(variant, float(alpha), float(lam), float(gamma_km), floor, value)


def sample_users(p: NDArray[np.float64], n_users: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """True secrets of ``n_users`` users, drawn i.i.d. from the prior ``p`` (two users may share a secret)."""
    return rng.choice(len(p), size=n_users, replace=True, p=p).astype(np.int64)


def sample_anchor_sets(w_users: NDArray[np.float64], rng: np.random.Generator,
                       empty: str = "no output", max_redraws: int = 1000) -> tuple[NDArray[np.bool_], int]:
    """Each user's anchor set: record x is included independently with probability ``w_users[n, x]``.

    Args:
        w_users: (N, K) selection probabilities, one row per user.
        empty: what a user with an empty set does: ``no output`` (the user reports nothing; exactly the
            mechanism the ε̄ bound covers, since ∅ is one of its outcomes) or ``resample`` (redraw the whole set
            until non-empty; this conditions Phase I on A ≠ ∅, which changes ε̄ by at most
            |ln((1 − P∅(x_n)) / (1 − P∅(x_m)))|, reported by the mechanism).

    Returns:
        (N, K) boolean membership, and the number of redraws made.
    """
    if empty not in EMPTY_RULES:
        raise ParameterError(f"`empty` = {empty!r} is not one of {', '.join(EMPTY_RULES)}.")
    member = rng.random(w_users.shape) < w_users
    redraws = 0
    if empty == "resample":
        for _ in range(max_redraws):  # loop over redraw rounds, vectorised over the empty users
            bad = np.flatnonzero(~member.any(axis=1))
            if len(bad) == 0:
                break
            member[bad] = rng.random((len(bad), w_users.shape[1])) < w_users[bad]
            redraws += len(bad)
    return member, redraws


def nearest_member(d_rows: NDArray[np.float64], member: NDArray[np.bool_]) -> NDArray[np.int64]:
    """For each row, the index of the nearest member (ties: lowest index); −1 for a row with no member.

    ``d_rows`` and ``member`` have the same shape (rows × K).
    """
    masked = np.where(member, d_rows, np.inf)
    idx: NDArray[np.int64] = np.argmin(masked, axis=1).astype(np.int64)
    idx[~member.any(axis=1)] = -1
    return idx
