"""Privacy check of continuous-domain mechanisms: random pairs of arbitrary points of the plane, no slack.

For a mechanism that gives rows for any planar point (AIPO's interpolant), sample pairs (a, b) — uniform over a
box slightly larger than the lattice, pairs straddling cell edges, and pairs across cell corners (diagonals) — and
test |ln z(y | a) − ln z(y | b)| ≤ ε·‖a − b‖_p for every output y. Only floating-point rounding is forgiven
(a relative 1e-9), never an additive tolerance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..metrics import rows_breach
from .lattice import Lattice

RowsXY = Callable[[NDArray[np.float64]], NDArray[np.float64]]


@dataclass(frozen=True)
class ContinuousCheck:
    """Outcome of the continuous check: counts per kind of pair and the normalised log-ratio distribution."""

    pairs: dict[str, int]
    violations: dict[str, int]
    worst_factor: float  # max over pairs and outputs of |Δ ln z| / (ε·d_p); ≤ 1 means private
    factor_quantiles: dict[str, float]
    factors: NDArray[np.float64]  # per pair, the max over outputs (for a histogram)

    @property
    def total_violations(self) -> int:
        """Violations over every kind of sampled pair."""
        return sum(self.violations.values())


def sample_pairs(lattice: Lattice, n: int,
                 rng: np.random.Generator) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """Three kinds of pairs in planar km: ``uniform``, ``edge`` (straddling a cell edge), ``diagonal``."""
    lo = np.array([lattice.x0, lattice.y0])
    span = np.array([(lattice.nx - 1), (lattice.ny - 1)]) * lattice.step
    margin = 0.1 * span
    a = lo - margin + rng.random((n, 2)) * (span + 2 * margin)
    b = lo - margin + rng.random((n, 2)) * (span + 2 * margin)
    # a point just left/below a grid line and its partner just across it (tiny distances: the hardest case)
    axis = rng.integers(0, 2, n)
    line = rng.integers(1, np.maximum([lattice.nx - 1, lattice.ny - 1], 2)[axis])
    e_a = lo + rng.random((n, 2)) * span
    e_a[np.arange(n), axis] = lo[axis] + line * lattice.step - rng.random(n) * 0.05 * lattice.step
    e_b = e_a.copy()
    e_b[np.arange(n), axis] += rng.random(n) * 0.1 * lattice.step
    e_b += rng.normal(scale=0.01 * lattice.step, size=(n, 2))
    # pairs across a lattice corner, along a diagonal
    corner = lo + np.column_stack([rng.integers(1, max(lattice.nx - 1, 2), n),
                                   rng.integers(1, max(lattice.ny - 1, 2), n)]) * lattice.step
    off = (rng.random((n, 1)) * 0.3 + 0.01) * lattice.step * rng.choice([-1.0, 1.0], size=(n, 2))
    return {"uniform": (a, b), "edge": (e_a, e_b), "diagonal": (corner + off, corner - off * rng.random((n, 1)))}


def continuous_check(rows_xy: RowsXY, lattice: Lattice, eps: float, p: int, n_pairs: int = 5000,
                     seed: int = 0) -> ContinuousCheck:
    """Check (ε, ℓp)-mDP on ``n_pairs`` pairs of each kind (see module docstring)."""
    rng = np.random.default_rng(seed)
    counts, bad, all_factors = {}, {}, []
    for kind, (a, b) in sample_pairs(lattice, n_pairs, rng).items():
        za, zb = rows_xy(a), rows_xy(b)
        dist = np.linalg.norm(a - b, ord=p, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            diff = np.abs(np.log(za) - np.log(zb))
        diff = np.where((za == 0) & (zb == 0), 0.0, diff)  # an output never reported from either point
        over = rows_breach(za, zb, eps * dist) | rows_breach(zb, za, eps * dist)  # the one check, both ways
        counts[kind], bad[kind] = len(a), int(over.sum())
        with np.errstate(divide="ignore", invalid="ignore"):
            all_factors.append(np.where(dist > 0, diff.max(axis=1) / (eps * dist), 0.0))
    factors = np.concatenate(all_factors)
    q = {f"q{int(100 * x)}": float(np.quantile(factors, x)) for x in (0.5, 0.9, 0.99)}
    return ContinuousCheck(counts, bad, float(factors.max()), {**q, "max": float(factors.max())}, factors)
