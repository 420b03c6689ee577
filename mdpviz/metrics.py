"""Exact evaluation of a mechanism: utility loss, measured mDP violations, Bayes adversary error, posteriors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np
from numpy.typing import NDArray

from .problem import Problem

# The violation check, decided once for every mechanism and test: a pair (x, x') breaches ε-mDP when some output
# y has ln Z[x,y] − ln Z[x',y] > ε·d(x,x') + ln(1 + τ), computed in log space (e^{ε·d} overflows at paper scale,
# and products like e^{εd}·Z underflow). τ = 1e-9 is relative: floating-point rounding of a ratio of two
# normalised probabilities is ~1e-15, so only a real breach exceeds it. There is no absolute slack: an entry of
# 1e-300 against 1e-310 is a breach, and Z[x',y] = 0 < Z[x,y] is an infinite one (a zero where the true
# probability is positive is a privacy bug, not rounding).
#
# What the tolerance is not for. Solver tolerances (HiGHS works to ~1e-7 absolute) are not rounding: an LP's Z
# is repaired exactly (``lp.cone.repair_into_cone``) before it is released, never excused by the check. Values
# below float64's range are not rounding either: at ε = 15 km⁻¹ and 58 km the true ratio bound e^{−870} has no
# float64; mechanisms floor the entries of non-zero columns at 1e-300 (``lp.cone.floor_columns``), which keeps
# every ratio inside the cone, instead of letting them underflow to 0. Numerical integrals (planar Laplace) are
# computed in log space and repaired like an LP's Z when quadrature leaves a pair outside the cone.
# ``cone_breaches`` (pairs of rows of one matrix) and ``rows_breach`` (paired rows, e.g. sampled points of the
# plane) are the one place this check is coded: any other copy, or any additive slack, is a bug.
TOLERANCE = 1e-9


def entry_breaches(za: NDArray[np.float64], zb: NDArray[np.float64], expo: NDArray[np.float64],
                   tolerance: float = TOLERANCE) -> NDArray[np.bool_]:
    """Entry by entry: is ln za[r,y] − ln zb[r,y] > expo[r] + ln(1+τ)? (the check above, for paired rows)

    A 0 under a positive entry is a breach; two zeros are not.

    >>> entry_breaches(np.array([[0.5, 0.5]]), np.array([[0.9, 0.1]]), np.array([1.0])).tolist()
    [[False, True]]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.log(za) - np.log(zb)
    lr[np.isnan(lr)] = -np.inf
    breach: NDArray[np.bool_] = lr > (np.asarray(expo, dtype=np.float64) + np.log1p(tolerance))[:, None]
    return breach


def rows_breach(za: NDArray[np.float64], zb: NDArray[np.float64], expo: NDArray[np.float64],
                tolerance: float = TOLERANCE) -> NDArray[np.bool_]:
    """Row by row: does some y breach (``entry_breaches``)?

    >>> rows_breach(np.array([[0.5, 0.5]]), np.array([[0.9, 0.1]]), np.array([1.0])).tolist()
    [True]
    """
    return np.asarray(entry_breaches(za, zb, expo, tolerance).any(axis=1), dtype=np.bool_)


@dataclass(frozen=True)
class Breaches:
    """Ordered pairs (i, j) whose log-ratio exceeds their exponent: max_y ln Z[i,y] − ln Z[j,y] > E[i,j] + ln(1+τ).

    ``i``, ``j``: the breached pairs; ``factor``: their max log-ratio / E[i,j] (inf where E = 0 or Z[j,y] = 0 <
    Z[i,y]); ``triples``: breached (i, j, y); ``worst_factor``: the largest factor over every checked pair with
    0 < E < inf (0 when there is none).
    """

    i: NDArray[np.int64]
    j: NDArray[np.int64]
    factor: NDArray[np.float64]
    triples: int
    worst_factor: float


def cone_breaches(Z: NDArray[np.float64], E: NDArray[np.float64], tolerance: float = TOLERANCE) -> Breaches:
    """Check Z[i,y] ≤ e^{E[i,j]}·Z[j,y] for every ordered pair i ≠ j of rows and every column, in log space.

    ``E`` (n × n) holds each pair's exponent: ε·d for ε-mDP, a pair-specific budget for PAnDA, ``inf`` for a
    pair that is not claimed. Vectorised in row blocks of bounded memory.

    >>> Z = np.array([[0.5, 0.5], [0.9, 0.1]])
    >>> b = cone_breaches(Z, np.array([[0.0, 1.0], [1.0, 0.0]]))   # ln(0.5/0.1) = 1.61 > 1
    >>> b.i.tolist(), b.j.tolist(), round(b.worst_factor, 3)
    ([0], [1], 1.609)
    """
    n, m = Z.shape
    E = np.asarray(E, dtype=np.float64)
    slack = np.log1p(tolerance)
    with np.errstate(divide="ignore"):
        logz = np.log(Z)
    has_zero = bool((Z == 0).any())
    found_i, found_j, found_f = [], [], []
    triples, worst = 0, 0.0
    step = max(1, 2_000_000 // max(n * m, 1))
    for s in range(0, n, step):
        e = slice(s, min(s + step, n))
        with np.errstate(invalid="ignore"):
            lr = logz[e, None, :] - logz[None, :, :]  # (b, n, m): ln z[i,y] − ln z[j,y]
        if has_zero:
            lr[np.isnan(lr)] = -np.inf  # both zero: no breach
        rows = np.arange(e.start, e.stop)
        lr[rows - s, rows, :] = -np.inf  # the diagonal is no pair
        limit = E[e] + slack
        top = lr.max(axis=2)
        bad = top > limit
        if bad.any():  # count breached outputs only where some output breaches
            triples += int((lr[bad] > limit[bad][:, None]).sum())
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(E[e] > 0, top / E[e], np.where(bad, np.inf, 0.0))
        checked = np.isfinite(E[e]) & (E[e] > 0)
        if checked.any():
            worst = max(worst, float(np.max(np.where(checked, factor, -np.inf))))
        ii, jj = np.nonzero(bad)
        found_i.append(ii + s)
        found_j.append(jj)
        found_f.append(factor[ii, jj])
    if any(np.isinf(f).any() for f in found_f):
        worst = np.inf
    return Breaches(np.concatenate(found_i).astype(np.int64), np.concatenate(found_j).astype(np.int64),
                    np.concatenate(found_f), triples, max(worst, 0.0))


@dataclass(frozen=True)
class Violations:
    """Measured mDP violations of Z over ordered pairs of secrets (the check is defined above ``TOLERANCE``).

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
        """Violated over checked ordered pairs (0 when none were checked)."""
        return self.violated_pairs / self.checked_pairs if self.checked_pairs else 0.0


def utility_loss_m(problem: Problem, Z: NDArray[np.float64]) -> float:
    """Expected utility loss Σ_x p_x Σ_y c_xy Z_xy, metres."""
    return float(problem.p @ np.einsum("ij,ij->i", problem.c, Z))


def floor_m(problem: Problem) -> float:
    """The no-privacy floor: every secret reports its cheapest output, Σ_x p_x min_y c(x, y), metres. No mechanism
    goes below it; a loss minus the floor is what privacy costs (see ``mdpviz.reference``)."""
    return float(problem.p @ np.asarray(problem.c).min(axis=1))


def per_secret_loss_m(problem: Problem, Z: NDArray[np.float64]) -> NDArray[np.float64]:
    """Expected loss of each secret, Σ_y c_xy Z_xy, metres."""
    loss: NDArray[np.float64] = np.einsum("ij,ij->i", problem.c, Z)
    return loss


def check_distance(problem: Problem, metric: str = "") -> NDArray[np.float64]:
    """Distances (km) between secrets for a claim's metric: the problem's own, or ``l1-planar``/``l2-planar``."""
    if not metric:
        return problem.d
    xy = problem.xy_km
    order = {"l1-planar": 1, "l2-planar": 2}[metric]
    d: NDArray[np.float64] = np.linalg.norm(xy[:, None, :] - xy[None, :, :], ord=order, axis=2)
    return d


def violations(problem: Problem, Z: NDArray[np.float64], eps: float, tolerance: float = TOLERANCE,
               rows: NDArray[np.int64] | None = None, metric: str = "", pairs_limit: int = 0) -> Violations:
    """Check ε-mDP of Z over all ordered pairs of ``rows`` (default: all of X) and all outputs (``cone_breaches``).

    ``metric`` selects the distance of the claim (see ``check_distance``); the problem's metric by default.
    With ``pairs_limit`` > 0 the result also lists the worst violating pairs (at most that many).
    """
    idx = np.arange(problem.k) if rows is None else np.asarray(rows)
    Zs, d = Z[idx], check_distance(problem, metric)[np.ix_(idx, idx)]
    n, m = Zs.shape
    b = cone_breaches(Zs, eps * d, tolerance)
    worst_pairs = None
    if pairs_limit > 0:
        order = np.argsort(-b.factor, kind="stable")[:pairs_limit]
        worst_pairs = (idx[b.i[order]], idx[b.j[order]], b.factor[order])
    return Violations(len(b.i), n * (n - 1), b.triples, n * (n - 1) * m, b.worst_factor, eps, tolerance,
                      worst_pairs)


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


class ViolationReport(TypedDict):
    """The all-pairs ε-mDP check of a mechanism as plain values (``Violations`` without the worst pairs), with the
    distance it was measured in."""

    violated_pairs: int
    checked_pairs: int
    violated_triples: int
    checked_triples: int
    worst_factor: float
    eps: float
    tolerance: float
    ratio: float
    metric: str


class Evaluation(TypedDict):
    """Every metric of a mechanism (what :func:`evaluate` returns; losses in metres)."""

    utility_loss_m: float
    floor_m: float
    privacy_cost_m: float
    adversary_error_m: float
    violations: ViolationReport
    row_sum_error: float
    min_entry: float


def violation_report(v: Violations, metric: str) -> ViolationReport:
    """``v`` as plain values, with the distance it was measured in."""
    return ViolationReport(violated_pairs=v.violated_pairs, checked_pairs=v.checked_pairs,
                           violated_triples=v.violated_triples, checked_triples=v.checked_triples,
                           worst_factor=v.worst_factor, eps=v.eps, tolerance=v.tolerance, ratio=v.ratio, metric=metric)


def evaluate(problem: Problem, Z: NDArray[np.float64], eps: float, metric: str = "") -> Evaluation:
    """Every metric of a mechanism (loss, the no-privacy floor, the privacy cost = loss − floor and the adversary
    error, all in metres; the all-pairs privacy check; the row-sum error and the most negative entry).

    ``metric`` is the distance the privacy claim refers to (``Result.check_metric``).
    """
    v = violations(problem, Z, eps, metric=metric)
    row_err, neg = row_errors(Z)
    loss, floor = utility_loss_m(problem, Z), floor_m(problem)
    return Evaluation(utility_loss_m=loss, floor_m=floor, privacy_cost_m=loss - floor,
                      adversary_error_m=adversary_error_m(problem, Z),
                      violations=violation_report(v, metric or problem.metric), row_sum_error=row_err, min_entry=neg)
