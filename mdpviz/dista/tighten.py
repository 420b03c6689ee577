"""Server-side reconstruction and structure-preserving tightening (post-processing, no privacy cost).

dx: clip ≥ 0, symmetrise, zero the diagonal, conservative repair d̄ = max(d̂ − γ, 0) (Eq. 64), then the
Floyd–Warshall metric closure (Eq. 62). dy: clip ≥ 0, the same γ repair, then rectangular triangle tightening
B(i, k) ← min_j d̄x(i, j) + B(j, k) (Eq. 63, j = i included). γ goes before the closures so that the result is still
a metric and triangle-consistent. cy (cost) is only clipped ≥ 0, as in the artifact: the cost is not a metric
(travel cost, prior weights), so tightening it through dx would bias the objective. Every step only lowers
entries, so when the reconstruction is below the truth it stays below it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def metric_closure(D: NDArray[np.float64]) -> NDArray[np.float64]:
    """Floyd–Warshall on a dense (n, n) matrix: D(i, j) ← min_k D(i, k) + D(k, j); one vectorised pass per k."""
    D = D.copy()
    for k in range(len(D)):
        np.minimum(D, D[:, k, None] + D[None, k, :], out=D)
    return D


def tighten_dx(A: NDArray[np.float64], gamma: float = 0.0) -> NDArray[np.float64]:
    """A reconstructed distance block made a (pseudo)metric no larger than its input minus γ (km)."""
    D = np.maximum(A, 0.0)
    D = 0.5 * (D + D.T)
    np.fill_diagonal(D, 0.0)
    D = np.maximum(D - gamma, 0.0)
    return metric_closure(D)


def tighten_rect(B: NDArray[np.float64], dx: NDArray[np.float64], gamma: float = 0.0) -> NDArray[np.float64]:
    """Clip, γ-repair and triangle-tighten a rectangular distance block against the (tightened) dx."""
    B = np.maximum(np.maximum(B, 0.0) - gamma, 0.0)
    tight: NDArray[np.float64] = np.minimum(B, (dx[:, :, None] + B[None, :, :]).min(axis=1))
    return tight


def tighten(recon: dict[str, NDArray[np.float64]], gamma: float) -> dict[str, NDArray[np.float64]]:
    """Tighten all three reconstructed blocks of one user (γ in km applies to the distance blocks only)."""
    dx = tighten_dx(recon["dx"], gamma)
    return {"dx": dx, "dy": tighten_rect(recon["dy"], dx, gamma), "cy": np.maximum(recon["cy"], 0.0)}


def overestimate(true: NDArray[np.float64], approx: NDArray[np.float64]) -> float:
    """Δ⁺ = max (approx − true)⁺, km: the γ that would make ``approx`` conservative (Eq. 64–65)."""
    return float(np.max(np.maximum(approx - true, 0.0)))
