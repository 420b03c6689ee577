"""Exact evaluation of a mechanism: utility loss, measured mDP violations, Bayes adversary error, posteriors."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from numpy.typing import NDArray

from .problem import Problem

TOLERANCE = 1e-9  # relative slack of the violation check: z_xy > (1 + τ) e^{ε d} z_x'y + 1e-12 is a violation
ABS_SLACK = 1e-12


@dataclass(frozen=True)
class Violations:
    """Measured mDP violations of Z over ordered pairs of secrets.

    A pair (x, x') is violated when some output y has ``Z[x,y] > (1 + tolerance)·e^{ε·d(x,x')}·Z[x',y] + 1e-12``.
    ``worst_factor`` is max ln(Z[x,y] / Z[x',y]) / (ε·d(x,x')): 1.0 means exactly at the budget, above 1 a breach
    (inf when Z[x',y] = 0 < Z[x,y]). ``worst_pairs`` holds (i, j, factor) arrays of the worst violating pairs
    when the check was asked for them (``pairs_limit``), for drawing.
    """

    violated_pairs: int
    checked_pairs: int
    violated_triples: int
    checked_triples: int
    worst_factor: float
    eps: float
    tolerance: float
    worst_pairs: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]] | None = field(
        default=None, compare=False)

    @property
    def ratio(self) -> float:
        return self.violated_pairs / self.checked_pairs if self.checked_pairs else 0.0

    def as_dict(self) -> dict[str, float | int]:
        return {**{k: v for k, v in asdict(self).items() if k != "worst_pairs"}, "ratio": self.ratio}


def utility_loss_m(problem: Problem, Z: NDArray[np.float64]) -> float:
    """Expected utility loss Σ_x p_x Σ_y c_xy Z_xy, metres."""
    return float(problem.p @ np.einsum("ij,ij->i", problem.c, Z))


def per_secret_loss_m(problem: Problem, Z: NDArray[np.float64]) -> NDArray[np.float64]:
    """Expected loss of each secret, Σ_y c_xy Z_xy, metres."""
    return np.einsum("ij,ij->i", problem.c, Z)


def check_distance(problem: Problem, metric: str = "") -> NDArray[np.float64]:
    """Distances (km) between secrets for a claim's metric: the problem's own, or ``l1-planar``/``l2-planar``."""
    if not metric:
        return problem.d
    xy = problem.xy_km
    order = {"l1-planar": 1, "l2-planar": 2}[metric]
    return np.linalg.norm(xy[:, None, :] - xy[None, :, :], ord=order, axis=2)


def violations(problem: Problem, Z: NDArray[np.float64], eps: float, tolerance: float = TOLERANCE,
               rows: NDArray[np.int64] | None = None, chunk: int = 32, metric: str = "",
               pairs_limit: int = 0) -> Violations:
    """Check ε-mDP of Z over all ordered pairs of ``rows`` (default: all of X) and all outputs, vectorised.

    ``metric`` selects the distance of the claim (see ``check_distance``); the problem's metric by default.
    With ``pairs_limit`` > 0 the result also lists the worst violating pairs (at most that many).
    """
    idx = np.arange(problem.k) if rows is None else np.asarray(rows)
    Zs, d = Z[idx], check_distance(problem, metric)[np.ix_(idx, idx)]
    n, m = Zs.shape
    bad_pairs = bad_triples = 0
    worst = 0.0
    found: list[tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]] = []
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        logz = np.log(Zs)
        for s in range(0, n, chunk):
            e = slice(s, min(s + chunk, n))
            bound = (1 + tolerance) * np.exp(eps * d[e])[:, :, None] * Zs[None, :, :] + ABS_SLACK
            over = Zs[e, None, :] > bound  # (b, n, m): z[x, y] above the bound from x'
            bad_triples += int(over.sum())
            bad = over.any(axis=2)
            bad_pairs += int(bad.sum())
            lr = logz[e, None, :] - logz[None, :, :]  # ln z[x,y] − ln z[x',y]
            lr = np.where(Zs[e, None, :] > 0, lr, -np.inf)
            factor = np.where(d[e] > 0, np.max(lr, axis=2) / (eps * d[e]), -np.inf)  # d = 0 on the diagonal
            worst = max(worst, float(np.max(factor)))
            if pairs_limit > 0 and bad.any():
                ii, jj = np.nonzero(bad)
                found.append((idx[ii + s], idx[jj], factor[ii, jj]))
    worst_pairs = None
    if pairs_limit > 0:
        i, j, f = (np.concatenate(parts) for parts in zip(*found, strict=True)) if found else \
            (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
        order = np.argsort(-f, kind="stable")[:pairs_limit]
        worst_pairs = (i[order], j[order], f[order])
    return Violations(bad_pairs, n * (n - 1), bad_triples, n * (n - 1) * m, worst, eps, tolerance, worst_pairs)


def posterior(problem: Problem, Z: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """Pr[x | report y_k] ∝ p_x Z[x, k] over X (zeros if y_k is never reported)."""
    w = problem.p * Z[:, k]
    total = w.sum()
    return w / total if total > 0 else np.zeros_like(w)


def adversary_error_m(problem: Problem, Z: NDArray[np.float64]) -> float:
    """Expected inference error of the Bayes-optimal adversary, metres (in the mDP metric d).

    Seeing y, the adversary guesses the secret x̂ that minimises the posterior expected distance
    Σ_x Pr[x | y] d(x̂, x); the result is Σ_y Pr[y] min_x̂ E[d(x̂, x) | y].
    """
    joint = problem.p[:, None] * Z  # (K, M): Pr[x, y]
    expected = problem.d @ joint  # (K̂, M): Σ_x d(x̂, x) Pr[x, y]
    return float(expected.min(axis=0).sum() * 1000.0)


def expected_report(problem: Problem, Z: NDArray[np.float64]) -> NDArray[np.float64]:
    """Mean reported (lat, lon) for each secret, degrees, shape (K, 2): a summary of where reports land."""
    return np.column_stack([Z @ problem.y_lat, Z @ problem.y_lon])


def row_errors(Z: NDArray[np.float64]) -> tuple[float, float]:
    """(largest |row sum − 1|, most negative entry): both should be ≤ 1e-9 in magnitude."""
    return float(np.max(np.abs(Z.sum(axis=1) - 1.0))), float(min(Z.min(), 0.0))


def evaluate(problem: Problem, Z: NDArray[np.float64], eps: float, metric: str = "") -> dict[str, object]:
    """Every metric of a mechanism in one dict (loss and adversary error in metres).

    ``metric`` is the distance the privacy claim refers to (``Result.check_metric``).
    """
    v = violations(problem, Z, eps, metric=metric)
    row_err, neg = row_errors(Z)
    return {"utility_loss_m": utility_loss_m(problem, Z), "adversary_error_m": adversary_error_m(problem, Z),
            "violations": {**v.as_dict(), "metric": metric or problem.metric}, "row_sum_error": row_err, "min_entry": neg}
