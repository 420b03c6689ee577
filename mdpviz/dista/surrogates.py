"""Step ① of DISTA-LP: the user's private permutation and the surrogate fit of each coefficient block.

Families (spec 001 §4.2): low-rank SVD (default, closed form), 2D Gaussian, 2D cubic Legendre polynomial and RBF
(fixed 5×5 centres), the last three fitted by Nelder–Mead on the entrywise ℓ1 loss. Blocks are read on the unit
square: row i sits at u = i/(n−1), column j at v = j/(m−1). Every surrogate carries the vector of parameters that
is noised and uploaded (``theta``) and, per coordinate, the direction of its one-sided noise (−1: subtracting
lowers the surface, +1: adding lowers it, 0: no sign lowers it, so the noise stays two-sided).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from scipy.special import eval_legendre

from ..deadline import check_deadline
from ..errors import ParameterError

FAMILIES = ("svd", "gaussian", "polynomial", "rbf")
BLOCKS = ("dx", "dy", "cy")
RBF_GRID = 5  # centres per side of the RBF family (25 weights, the paper's Table VII count)
RBF_SIGMA = 0.35  # shared RBF bandwidth on the unit square (the artifact's 0.35·n in index units)
POLY_TERMS = tuple((p, q) for p in range(4) for q in range(4) if p + q <= 3)  # full cubic: 10 terms
POLY_RIDGE = 1e-3  # ρ of the ridge term of the polynomial fit
FIT_MAXFEV = 600  # Nelder–Mead evaluations per parametric fit on a device (the auditor uses fewer)


@functools.lru_cache(maxsize=64)
def _axes(n: int, m: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Row and column coordinates on the unit square (cached: Nelder–Mead evaluates thousands of surfaces)."""
    u = np.linspace(0.0, 1.0, n) if n > 1 else np.zeros(1)
    v = np.linspace(0.0, 1.0, m) if m > 1 else np.zeros(1)
    return u, v


def _grid(n: int, m: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    u, v = _axes(n, m)
    return np.meshgrid(u, v, indexing="ij")


@functools.lru_cache(maxsize=64)
def _poly_basis(n: int, m: int) -> NDArray[np.float64]:
    """(n·m, 10) Legendre products L_p(2u−1)·L_q(2v−1)."""
    U, V = _grid(n, m)
    return np.column_stack([eval_legendre(p, 2 * U.ravel() - 1) * eval_legendre(q, 2 * V.ravel() - 1)
                            for p, q in POLY_TERMS])


@functools.lru_cache(maxsize=64)
def _rbf_basis(n: int, m: int) -> NDArray[np.float64]:
    """(n·m, 25) Gaussian kernels around a fixed 5×5 grid of centres on the unit square."""
    U, V = _grid(n, m)
    c = np.linspace(0.0, 1.0, RBF_GRID)
    cu, cv = np.meshgrid(c, c, indexing="ij")
    r2 = (U.ravel()[:, None] - cu.ravel()[None, :]) ** 2 + (V.ravel()[:, None] - cv.ravel()[None, :]) ** 2
    return np.exp(-r2 / (2 * RBF_SIGMA ** 2))


@dataclass
class Surrogate:
    """A fitted surrogate of one (n, m) block.

    Attributes:
        family: one of ``FAMILIES``.
        shape: (n, m) of the block.
        theta: the parameters that are noised and uploaded (SVD: the k singular values, km).
        direction: per coordinate of ``theta``, the sign that lowers the surface (see module doc).
        floor: per coordinate, the smallest allowed value after noise (0 for singular values, −inf otherwise).
        public: arrays uploaded in the clear (SVD: U_k and V_k, as in the paper's Eq. 58; their leakage is not
            covered by the auditor, which sees only ``theta``).
        fit_loss: entrywise ℓ1 loss of the noise-free fit, km.
    """

    family: str
    shape: tuple[int, int]
    theta: NDArray[np.float64]
    direction: NDArray[np.int8]
    floor: NDArray[np.float64]
    public: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    fit_loss: float = 0.0

    def reconstruct(self, theta: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """The block f(·; θ), km, shape ``shape`` (θ defaults to the fitted parameters)."""
        th = self.theta if theta is None else np.asarray(theta, dtype=np.float64)
        return _evaluate(self.family, self.shape, th, self.public)

    def upload_numbers(self, theta: NDArray[np.float64] | None = None) -> int:
        """Numbers sent for this block. SVD sends only the r = #{s̃ > 0} kept columns of U, V and s̃."""
        th = self.theta if theta is None else theta
        if self.family == "svd":
            r = int(np.count_nonzero(th > 0))
            return r * (self.shape[0] + self.shape[1] + 1)
        return len(th)


def _evaluate(family: str, shape: tuple[int, int], th: NDArray[np.float64],
              public: dict[str, NDArray[np.float64]]) -> NDArray[np.float64]:
    n, m = shape
    if family == "svd":
        return (public["U"] * th[None, :]) @ public["V"].T
    if family == "gaussian":
        a, b, cu, cv, su, sv = th
        u, v = _axes(n, m)
        su, sv = max(abs(su), 1e-3), max(abs(sv), 1e-3)
        bump: NDArray[np.float64] = a * np.outer(np.exp(-(u - cu) ** 2 / (2 * su * su)),
                                                 np.exp(-(v - cv) ** 2 / (2 * sv * sv))) + b
        return bump
    if family == "polynomial":
        return (_poly_basis(n, m) @ th).reshape(n, m)
    if family == "rbf":
        fit: NDArray[np.float64] = (_rbf_basis(n, m) @ th[:-1] + th[-1]).reshape(n, m)
        return fit
    raise ParameterError(f"Unknown surrogate family `{family}`; choose one of {', '.join(FAMILIES)}.")


def fit_svd(A: NDArray[np.float64], rank: int) -> Surrogate:
    """Rank-k truncated SVD A ≈ U_k diag(s) V_kᵀ (Eckart–Young: the best rank-k fit in Frobenius norm)."""
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    k = min(rank, len(s))
    sur = Surrogate("svd", A.shape, s[:k].copy(), -np.ones(k, dtype=np.int8), np.zeros(k),
                    public={"U": U[:, :k].copy(), "V": Vt[:k].T.copy()})
    sur.fit_loss = float(np.abs(A - sur.reconstruct()).sum())
    return sur


# (mypy) loss is scipy's objective, a callable of an array left unannotated
def _nelder_mead(loss, x0: NDArray[np.float64], maxfev: int) -> NDArray[np.float64]:  # type: ignore[no-untyped-def]
    res = minimize(loss, x0, method="Nelder-Mead", options={"maxfev": maxfev, "xatol": 1e-6, "fatol": 1e-9})
    best = res.x if loss(res.x) <= loss(x0) else x0
    return np.asarray(best, dtype=np.float64)


def fit_parametric(A: NDArray[np.float64], family: str, maxfev: int = FIT_MAXFEV) -> Surrogate:
    """Fit a Gaussian, polynomial or RBF surface to A by Nelder–Mead on the ℓ1 loss (plus the family's penalty)."""
    n, m = A.shape
    a = A.ravel()
    if family == "gaussian":
        x0 = np.array([a.max() - a.min(), a.min(), 0.5, 0.5, 0.5, 0.5])

        def loss(t: NDArray[np.float64]) -> float:
            box = 0.0 if t[0] >= 0 else 1e3 * -t[0]  # box constraint A ≥ 0 as a penalty
            s = np.abs(t[4:])
            spread = 1e3 * float(np.maximum(0.02 - s, 0).sum() + np.maximum(s - 5.0, 0).sum())
            return float(np.abs(_evaluate("gaussian", (n, m), t, {}).ravel() - a).sum() + box + spread)

        theta = _nelder_mead(loss, x0, maxfev)
        direction = np.array([-1, -1, 0, 0, 0, 0], dtype=np.int8)
    elif family in ("polynomial", "rbf"):
        B = _poly_basis(n, m) if family == "polynomial" else np.column_stack([_rbf_basis(n, m), np.ones(n * m)])
        ridge = POLY_RIDGE if family == "polynomial" else 1e-2
        x0 = np.asarray(np.linalg.solve(B.T @ B + ridge * np.eye(B.shape[1]), B.T @ a), dtype=np.float64)

        def loss(t: NDArray[np.float64]) -> float:
            return float(np.abs(B @ t - a).sum() + ridge * float(t @ t))

        theta = _nelder_mead(loss, x0, maxfev)
        if family == "polynomial":
            direction = np.zeros(len(POLY_TERMS), dtype=np.int8)
            direction[0] = -1  # only the intercept (L0·L0 = 1) lowers the surface everywhere
        else:
            direction = -np.ones(len(theta), dtype=np.int8)  # kernels and the bias are ≥ 0
    else:
        raise ParameterError(f"Unknown surrogate family `{family}`; choose one of {', '.join(FAMILIES)}.")
    sur = Surrogate(family, (n, m), theta, direction, np.full(len(theta), -np.inf))
    sur.fit_loss = float(np.abs(A - sur.reconstruct()).sum())
    return sur


def fit_block(A: NDArray[np.float64], family: str, rank: int, maxfev: int = FIT_MAXFEV) -> Surrogate:
    """Fit one block with ``family`` (rank is used by SVD only, ``maxfev`` by the parametric families)."""
    return fit_svd(A, rank) if family == "svd" else fit_parametric(A, family, maxfev)


def permute(blocks: dict[str, NDArray[np.float64]], perm: NDArray[np.int64]) -> dict[str, NDArray[np.float64]]:
    """Â^dx = E A^dx Eᵀ and Â^{dy,cy} = E A^{dy,cy}: permuted row r is original row ``perm[r]`` (Eq. 21)."""
    return {t: (A[np.ix_(perm, perm)] if t == "dx" else A[perm]) for t, A in blocks.items()}


def weighted_loss(blocks: dict[str, NDArray[np.float64]], fits: dict[str, Surrogate],
                  weights: dict[str, float]) -> float:
    """Σ_t λ_t ‖Â^t − f(·; Θ^t)‖₁ (Eq. 23), km."""
    return float(sum(weights[t] * np.abs(blocks[t] - fits[t].reconstruct()).sum() for t in blocks))


@dataclass
class Fit:
    """The outcome of step ① for one user: permutation, one surrogate per block and the loss history."""

    perm: NDArray[np.int64]
    surrogates: dict[str, Surrogate]
    loss_history: list[float]
    swaps: int


def fit_user(blocks: dict[str, NDArray[np.float64]], family: str, rank: int, rng: np.random.Generator,
             perm_iters: int = 10, weights: dict[str, float] | None = None, maxfev: int = FIT_MAXFEV,
             deadline: float | None = None, what: str = "fitting a user's surrogates") -> Fit:
    """Step ①: draw a private random permutation, fit every block, then refine the permutation by greedy swaps.

    Each outer iteration tries every pairwise swap with the surrogates held fixed, applies the best one if it
    lowers the weighted ℓ1 loss and refits (the paper's alternating fit/swap). The SVD loss does not depend on the
    permutation (singular values are invariant under row and column permutations), so for SVD the swap search is
    skipped and the permutation only hides the order of the neighbourhood. Past ``deadline`` (checked before each
    block fit and each swap search) ``OutOfTime`` is raised, naming ``what``.
    """
    weights = weights or {t: 1.0 for t in blocks}
    n = blocks["dx"].shape[0]
    perm = rng.permutation(n).astype(np.int64)
    pb = permute(blocks, perm)
    fits = _fit_blocks(pb, family, rank, maxfev, deadline, what)
    history = [weighted_loss(pb, fits, weights)]
    swaps = 0
    if family != "svd":
        ia, ib = np.triu_indices(n, 1)
        for _ in range(perm_iters):
            check_deadline(deadline, what)
            recon = {t: f.reconstruct() for t, f in fits.items()}
            best, best_pair = history[-1], None
            for a, b in zip(ia, ib):  # one trial per swap (≤ n(n−1)/2), each vectorised over the block
                trial = perm.copy()
                trial[[a, b]] = trial[[b, a]]
                tb = permute(blocks, trial)
                value = sum(weights[t] * np.abs(tb[t] - recon[t]).sum() for t in tb)
                if value < best - 1e-12:
                    best, best_pair = value, trial
            if best_pair is None:
                break
            perm, swaps = best_pair, swaps + 1
            pb = permute(blocks, perm)
            fits = _fit_blocks(pb, family, rank, maxfev, deadline, what)
            history.append(weighted_loss(pb, fits, weights))
    return Fit(perm, fits, history, swaps)


def _fit_blocks(pb: dict[str, NDArray[np.float64]], family: str, rank: int, maxfev: int, deadline: float | None,
                what: str) -> dict[str, Surrogate]:
    """``fit_block`` of every block, with a deadline check before each."""
    fits = {}
    for t, A in pb.items():  # three blocks
        check_deadline(deadline, what)
        fits[t] = fit_block(A, family, rank, maxfev)
    return fits


def relative_error(A: NDArray[np.float64], B: NDArray[np.float64]) -> float:
    """RelErr = ‖A − B‖_F / ‖A‖_F (Eq. 37)."""
    norm = float(np.linalg.norm(A))
    return float(np.linalg.norm(A - B)) / norm if norm > 0 else float(np.linalg.norm(B))


def overestimated_share(true: NDArray[np.float64], approx: NDArray[np.float64], tol: float = 1e-12) -> float:
    """ViolRatio (Eq. 39): the share of entries with approx > true (distance overestimated), over all n×m entries."""
    return float(np.mean(approx > true + tol))
