"""The Phase I privacy cost of PAnDA in closed form: ε̄_{u,v}·d_{u,v} for every pair of secrets (paper §2.5).

With a_x = ln(w_{u,x}/w_{v,x}) and b_x = ln((1 − w_{u,x})/(1 − w_{v,x})), the worst anchor set gives
(Prop. 3, Lemma 4)

    ε̄_{u,v}·d_{u,v} = max(Σ_x max(a_x, b_x), −Σ_x min(a_x, b_x))          (nats, dimensionless)

Because w depends only on distance and is the floor f beyond γ, only records inside the two γ-balls count. Writing
g = logit(w) − logit(f) ≥ 0 and l = ln(w/f) + ln((1 − w)/(1 − f)), per record a + b = l_u − l_v and
|a − b| = |g_u − g_v|, so

    ε̄·d = (G_u + G_v + |s_u − s_v|)/2 − M_{u,v},   G_u = Σ_x g_{u,x},  s_u = Σ_x l_{u,x},
    M_{u,v} = Σ_x min(g_{u,x}, g_{v,x})  (zero unless the balls overlap, i.e. d_{u,v} < 2γ).

This costs O(K²) plus O(pairs closer than 2γ × ball size), with no Python loop over pairs.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..deadline import check_deadline
from .selection import Selection


def _logit(w: NDArray[np.float64] | float) -> NDArray[np.float64]:
    w = np.asarray(w, dtype=np.float64)
    return np.log(w) - np.log1p(-w)


def phase1_cost_direct(w_u: NDArray[np.float64], w_v: NDArray[np.float64]) -> NDArray[np.float64]:
    """ε̄·d from two selection-probability vectors (last axis = records), by the spec's formula; broadcasts.

    >>> float(phase1_cost_direct(np.array([0.5, 0.1]), np.array([0.5, 0.1]))) == 0.0
    True
    >>> round(float(phase1_cost_direct(np.array([0.9, 0.1]), np.array([0.1, 0.9]))), 4)  # ln(0.81/0.01)
    4.3944
    """
    a = np.log(w_u) - np.log(w_v)
    b = np.log1p(-w_u) - np.log1p(-w_v)
    cost: NDArray[np.float64] = np.maximum(np.maximum(a, b).sum(axis=-1), -np.minimum(a, b).sum(axis=-1))
    return cost


def ball_lists(d: NDArray[np.float64], radius_km: float, deadline: float | None = None,
               block: int = 2_000_000) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Padded lists of the records within ``radius_km`` (strictly) of each secret, nearest first (ties by index).

    Returns (K, B) indices (padding repeats the row's own index) and the (K, B) mask of real entries. Rows are
    sorted in blocks of about ``block`` entries of ``d`` (each row on its own: the same lists as one pass); past
    ``deadline`` (checked per block) ``OutOfTime`` is raised.
    """
    k = len(d)
    count = (d < radius_km).sum(axis=1)
    width = int(count.max()) if k else 0
    idx = np.repeat(np.arange(k), width).reshape(k, width)
    step = max(1, block // max(d.shape[1] if d.ndim == 2 else 1, 1))
    for r0 in range(0, k, step):
        check_deadline(deadline, f"listing the γ-balls ({r0:,} of {k:,} secrets done)")
        sub = d[r0:r0 + step]
        rows, cols = np.nonzero(sub < radius_km)  # row-major, so already grouped by row
        order = np.lexsort((cols, sub[rows, cols], rows))  # by row, then distance, then index
        rows, cols = rows[order], cols[order]
        cnt = count[r0:r0 + step]
        start = np.concatenate([[0], np.cumsum(cnt)[:-1]])
        pos = np.arange(len(rows)) - start[rows]
        idx[r0 + rows, pos] = cols
    mask = np.arange(width)[None, :] < count[:, None]
    return idx.astype(np.int64), mask


def phase1_cost(d: NDArray[np.float64], sel: Selection, chunk: int = 200_000,
                deadline: float | None = None) -> NDArray[np.float64]:
    """ε̄·d (nats) for every ordered pair of secrets, shape (K, K): symmetric, ≥ 0, zero on the diagonal.

    Args:
        d: mDP metric between secrets, km (a metric: the overlap test d < 2γ relies on the triangle inequality).
        sel: the selection rule (variant, α, λ, γ, floor).
        chunk: pairs per vectorised block of the overlap correction (memory bound only).
        deadline: a ``time.perf_counter()`` value; past it (checked per block) ``OutOfTime`` is raised.
    """
    k = len(d)
    f = sel.floor_value
    rows, cols = np.nonzero(d < sel.gamma_km)
    w = sel.weights(d[rows, cols])
    g = _logit(w) - _logit(f)
    lw = (np.log(w) - np.log(f)) + (np.log1p(-w) - np.log1p(-f))
    # numpy's stubs type bincount as intp even with float weights, where it returns float64
    G: NDArray[np.float64] = np.bincount(rows, weights=g, minlength=k)  # type: ignore[assignment]
    s: NDArray[np.float64] = np.bincount(rows, weights=lw, minlength=k)  # type: ignore[assignment]
    cost = G[:, None] + G[None, :]
    spread = s[:, None] - s[None, :]
    np.abs(spread, out=spread)
    cost += spread
    del spread
    cost *= 0.5

    # M_{u,v} = Σ_x min(g_{u,x}, g_{v,x}) over records x in both balls: enumerate, for every x, the pairs of
    # its own ball B(x) (x ∈ B(u) ⇔ u ∈ B(x)), grouping records by ball size so no padding is needed
    check_deadline(deadline, "computing the Phase I cost ε̄")
    nbr, mask = ball_lists(d, sel.gamma_km, deadline)
    count = mask.sum(axis=1)
    gball = np.where(mask, sel.weights(np.take_along_axis(d, nbr, axis=1)), f)
    gball = _logit(gball) - _logit(f)
    keys, vals = [], []
    for c in np.unique(count[count > 1]):  # loop over distinct ball sizes only
        xs = np.flatnonzero(count == c)
        i, j = np.triu_indices(int(c), 1)
        for s0 in range(0, len(xs), max(1, chunk // len(i))):
            check_deadline(deadline, "computing the Phase I cost ε̄ (overlapping γ-balls)")
            xb = xs[s0:s0 + max(1, chunk // len(i))]
            u, v = nbr[xb][:, i], nbr[xb][:, j]
            m = np.minimum(gball[xb][:, i], gball[xb][:, j])
            keys.append(np.minimum(u, v).ravel() * k + np.maximum(u, v).ravel())
            vals.append(m.ravel())
    if keys:
        check_deadline(deadline, "computing the Phase I cost ε̄ (overlapping γ-balls)")
        key, inv = np.unique(np.concatenate(keys), return_inverse=True)
        total = np.bincount(inv, weights=np.concatenate(vals))
        lo, hi = key // k, key % k
        cost[lo, hi] -= total  # the same value both ways keeps the matrix exactly symmetric
        cost[hi, lo] -= total
    np.fill_diagonal(cost, 0.0)
    np.maximum(cost, 0.0, out=cost)  # round-off only
    return cost


EPS_BAR_RULES = ("paper", "authors-code")


def phase1_cost_last_factor_direct(w_u: NDArray[np.float64], w_v: NDArray[np.float64]) -> float:
    """ε̄·d as the authors' code computes it, for two selection-probability vectors (a reference for tests).

    ``get_epsilon_nmw.m`` loops ``for l=length(R)``, a loop that runs once with l = length(R), so of each product it
    keeps only the factor of the last record: ln(w_u,r / w_v,r) for r the last record with w_u > w_v, plus
    ln((1 − w_u,s)/(1 − w_v,s)) for s the last record with w_u ≤ w_v (a missing set contributes nothing).
    """
    above = np.flatnonzero(w_u > w_v)
    rest = np.flatnonzero(w_u <= w_v)
    total = 0.0
    if len(above):
        r = above[-1]
        total += float(np.log(w_u[r]) - np.log(w_v[r]))
    if len(rest):
        s = rest[-1]
        total += float(np.log1p(-w_u[s]) - np.log1p(-w_v[s]))
    return total


def phase1_cost_last_factor(d: NDArray[np.float64], sel: Selection, chunk: int = 4_000_000,
                            deadline: float | None = None) -> NDArray[np.float64]:
    """ε̄·d (nats) for every ordered pair as the authors' code computes it (see ``phase1_cost_last_factor_direct``).

    Not symmetric, and far below Prop. 3's value: a labelled variant ("authors' code"), never a privacy bound.
    Records with w_u > w_v lie in u's γ-ball B(u). When d(u, v) ≥ 2γ the balls are disjoint and w_v = floor on
    B(u), so r is the highest index of B(u) and s the highest index outside B(u)'s top run, whatever v is: one
    vectorised formula covers those pairs, and the few closer pairs are computed record by record. Past
    ``deadline`` (checked per block) ``OutOfTime`` is raised.
    """
    k = len(d)
    f = sel.floor_value
    nbr, mask = ball_lists(d, sel.gamma_km, deadline)
    ball = np.where(mask, nbr, -1)
    ball = -np.sort(-ball, axis=1)  # each row's ball, highest index first, padding (−1) last
    real = ball >= 0
    width = ball.shape[1]
    run = np.cumprod(ball == (k - 1 - np.arange(width))[None, :], axis=1).astype(bool)  # the top run k−1, k−2, ...
    u_all = np.arange(k)
    r = ball[:, 0]  # B(u) holds u itself, so it is never empty
    s = k - 1 - run.sum(axis=1)  # −1 only if B(u) is all of X
    sc = np.maximum(s, 0)
    a_far = np.log(sel.weights(d[u_all, r])) - np.log(f)
    b_u = np.log1p(-sel.weights(d[u_all, sc]))
    cost = a_far[:, None] + np.where(s[:, None] >= 0, b_u[:, None] - np.log1p(-sel.weights(d[sc])), 0.0)
    # pairs closer than 2γ: their balls may overlap, so compute r and s record by record
    pu, pv = np.nonzero(d < 2 * sel.gamma_km)
    keep = pu != pv
    pu, pv = pu[keep], pv[keep]
    step = max(1, chunk // max(width, 1))
    for s0 in range(0, len(pu), step):
        check_deadline(deadline, "computing ε̄ as the authors' code does (pairs closer than 2γ)")
        u, v = pu[s0:s0 + step], pv[s0:s0 + step]
        bu, ok = ball[u], real[u]
        x = np.maximum(bu, 0)
        wu = sel.weights(d[u[:, None], x])
        wv = sel.weights(d[v[:, None], x])
        above = ok & (wu > wv)
        has = above.any(axis=1)
        first = np.argmax(above, axis=1)
        rows = np.arange(len(u))
        a = np.where(has, np.log(wu[rows, first]) - np.log(wv[rows, first]), 0.0)
        lead = np.cumprod(above & run[u], axis=1).sum(axis=1)
        sv = k - 1 - lead
        svc = np.maximum(sv, 0)
        b = np.log1p(-sel.weights(d[u, svc])) - np.log1p(-sel.weights(d[v, svc]))
        cost[u, v] = a + np.where(sv >= 0, b, 0.0)
    np.fill_diagonal(cost, 0.0)
    clipped: NDArray[np.float64] = np.maximum(cost, 0.0)
    return clipped


def empty_probability(d: NDArray[np.float64], sel: Selection) -> NDArray[np.float64]:
    """P∅(x) = Π_records (1 − w_{x,record}): the chance that a user at x selects no anchor, shape (K,)."""
    inside = d < sel.gamma_km
    log_keep = np.where(inside, np.log1p(-sel.weights(d)), 0.0).sum(axis=1)
    log_keep += (~inside).sum(axis=1) * np.log1p(-sel.floor_value)
    p_empty: NDArray[np.float64] = np.exp(log_keep)
    return p_empty


def eps_bar(cost: NDArray[np.float64], d: NDArray[np.float64]) -> NDArray[np.float64]:
    """ε̄ = (ε̄·d)/d in km⁻¹ (0 on the diagonal and wherever d = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d > 0, cost / np.where(d > 0, d, 1.0), 0.0)
