"""PAnDA's safety margins ξ̂ for anchor pairs (paper §4.4, Eqs. 23–30, Algorithms 1–2), vectorised.

For a true pair (q, r) and its users' surrogates (a, b), the LP's budget on (a, b) is F_ab = (ε − ε̄_ab)·d_ab and
the pair needs F_ab − ξ ≤ F_qr, i.e. Δ_ab = F_ab − F_qr ≤ ξ. Surrogate a of a user at q has probability
v_{q,a} = w_{q,a}·Π_{closer x}(1 − w_{q,x}) (Prop. 7; ties broken by index). The margin for (q, r) is

    ξ(q, r) = the smallest Δ with h_{q,r}(Δ) = Σ_{a∈B(q), b∈B(r), Δ_ab ≤ Δ} v_{q,a} v_{r,b} ≥ 1 − δ'

(the linear search of Algorithm 2, done here as one sort and a cumulative sum per pair). B(q) is q's γ-ball: only
surrogates inside it qualify (Eq. 23–26). The server's estimate for an anchor pair is the worst case over the Γ
nearest records of each anchor (Eq. 29): ξ̂(x, x') = max(0, max_{q∈S_x, r∈S_x'} ξ(q, r)).

Patches for cases the paper leaves undefined, each counted by ``MarginReport``:

- **unreachable target**: when Σ v·v over the two balls is below 1 − δ' no Δ qualifies; ξ falls back to the
  largest Δ over the balls (the authors' code returns the end of its list), a worst case over surrogates in γ.
- **Eq. 30**: with ``ps_rule="eq30"`` the target is 1 − δ_{x,x'} = (1 − δ)/P_S; when P_S ≤ 1 − δ the target is
  above 1 (infeasible) and the worst-case fallback is used; feasible pairs share one target, the smallest of their
  δ_{x,x'} (conservative: a smaller δ' can only raise ξ). ``ps_rule="one"`` (default, authors' code) sets P_S = 1.
- **no room**: when ε̄_{x,x'} ≥ ε the LP exponent is clipped to 0 whatever ξ̂ is, so ξ̂ is not computed (NaN).
- true pairs with q = r (both users on the same secret) are skipped: ε-mDP says nothing about a secret and itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..deadline import check_deadline
from ..errors import ParameterError
from ..progress import Progress, no_progress
from .budget import ball_lists
from .selection import Selection

PS_RULES = ("one", "eq30")
S_RULES = ("nearest", "half-gamma")


def surrogate_probabilities(d: NDArray[np.float64], sel: Selection, nbr: NDArray[np.int64],
                            mask: NDArray[np.bool_]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """v_{q,a} for a in q's γ-ball (same layout as ``nbr``, 0 on padding) and P0(q) = Π_{a∈B(q)} (1 − w_{q,a}).

    ``nbr`` lists each ball nearest first with ties by index, so an exclusive cumulative product gives
    Π_{x closer than a}(1 − w_{q,x}). Σ_a v_{q,a} = 1 − P0(q): the chance that q's surrogate lies inside γ.
    """
    w = np.where(mask, sel.weights(np.take_along_axis(d, nbr, axis=1)), 0.0)
    keep = np.cumprod(1.0 - w, axis=1)
    before = np.concatenate([np.ones((len(w), 1)), keep[:, :-1]], axis=1)
    return w * before, np.exp(np.log1p(-w).sum(axis=1))


def half_gamma_neighbourhoods(d: NDArray[np.float64], rows: NDArray[np.int64],
                              gamma_km: float) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """S_x as the authors' code builds it: the records closer than γ/2 to each x in ``rows`` (x itself first,
    nearest first, ties by index), padded with x; returns (len, width) indices and the mask of real entries."""
    nbr, mask = ball_lists(d[rows], 0.5 * gamma_km)  # rows of d: the padding repeats a column index, fixed below
    nbr = np.where(mask, nbr, np.asarray(rows)[:, None])
    return nbr.astype(np.int64), mask


def neighbourhoods(d: NDArray[np.float64], rows: NDArray[np.int64], size: int) -> NDArray[np.int64]:
    """S_x: the ``size`` records nearest to each x in ``rows`` (x itself first; ties by index), shape (len, size)."""
    size = min(size, d.shape[1])
    part = np.argpartition(d[rows], size - 1, axis=1)[:, :size] if size < d.shape[1] else \
        np.tile(np.arange(d.shape[1]), (len(rows), 1))
    key = np.take_along_axis(d[rows], part, axis=1)
    order = np.lexsort((part, key), axis=1)
    return np.take_along_axis(part, order, axis=1).astype(np.int64)


def pair_margins(F: NDArray[np.float64], nbr: NDArray[np.int64], count: NDArray[np.int64],
                 v: NDArray[np.float64], p0: NDArray[np.float64], q: NDArray[np.int64], r: NDArray[np.int64],
                 delta: float, batch: int = 2_000_000,
                 deadline: float | None = None) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """ξ(q, r) for pairs of true secrets, and whether each fell back to the worst case (target unreachable).

    Args:
        F: Phase II room (ε − ε̄)·d for every pair of secrets, nats, (K, K).
        nbr, count, v, p0: γ-balls (nearest first), their sizes, surrogate probabilities and P0 per secret.
        q, r: the true pairs.
        delta: the failure probability δ' of the target 1 − δ'.
        batch: candidate (a, b) entries per vectorised block (memory bound only).
        deadline: a ``time.perf_counter()`` value; past it (checked per block) ``OutOfTime`` is raised.

    Pairs are taken in groups of equal ball sizes, so each block of candidates is a regular (pairs, |B(q)|·|B(r)|)
    array in the order a-major. A pair whose balls miss the target however large Δ is (slack below 0) takes the
    largest Δ; the others the smallest Δ whose mass above it is within the slack (``_first_within_slack``).
    """
    out = np.empty(len(q))
    # 1 − (1 − P0_q)(1 − P0_r) without cancellation, then the mass allowed above ξ
    slack_all = delta - (p0[q] + p0[r] - p0[q] * p0[r])
    fallback = slack_all < 0
    cq, cr = count[q], count[r]
    key = cq * (int(count.max()) + 1) + cr
    order = np.argsort(key, kind="stable")
    cuts = np.flatnonzero(np.diff(key[order])) + 1
    for group in np.split(order, cuts):
        a, b = int(cq[group[0]]), int(cr[group[0]])
        step = max(1, batch // max(1, a * b))
        for s0 in range(0, len(group), step):
            check_deadline(deadline, "computing the safety margins ξ̂ of true pairs")
            pairs = group[s0:s0 + step]
            qs, rs = q[pairs], r[pairs]
            D = (F[nbr[qs, :a][:, :, None], nbr[rs, :b][:, None, :]].reshape(len(pairs), a * b)
                 - F[qs, rs][:, None])
            fb = fallback[pairs]
            if fb.any():
                out[pairs[fb]] = D[fb].max(axis=1)
            if (~fb).any():
                keep = ~fb
                W = (v[qs[keep], :a][:, :, None] * v[rs[keep], :b][:, None, :]).reshape(-1, a * b)
                out[pairs[keep]] = _first_within_slack(D[keep], W, slack_all[pairs[keep]])
    return out, fallback


def _first_within_slack(delta_ab: NDArray[np.float64], weight: NDArray[np.float64], slack: NDArray[np.float64],
                        bins: int = 64) -> NDArray[np.float64]:
    """Per row (a pair's candidates, shape (pairs, n)), Δ at the first position of the Δ-sorted row (ties in entry
    order) whose mass strictly after it is ≤ slack[row] ≥ 0: Algorithm 2's linear search.

    Only one histogram bin per row is sorted: with M_k the mass in Δ-bins ≥ k and k* the highest bin with
    M_k* > slack, every entry above bin k* qualifies (less than M_k*+1 ≤ slack after it) and none below it does (all
    of bin k* is after it), so the answer lies in bin k*, which is never empty. No bin above slack: the row's
    smallest Δ.
    """
    n_seg, width_n = delta_ab.shape
    # Δ is finite: selection weights lie in (0, 1) (make_selection), so ε̄ and F are finite
    lo, hi = delta_ab.min(axis=1), delta_ab.max(axis=1)
    width = hi - lo
    scale = np.where(width > 0, bins / np.where(width > 0, width, 1.0), 0.0)
    b = np.minimum(((delta_ab - lo[:, None]) * scale[:, None]).astype(np.int64), bins - 1).ravel()
    seg = np.repeat(np.arange(n_seg), width_n)
    delta_ab, weight = delta_ab.ravel(), weight.ravel()
    mass = np.bincount(seg * bins + b, weights=weight, minlength=n_seg * bins).reshape(n_seg, bins)
    above = np.cumsum(mass[:, ::-1], axis=1)[:, ::-1]  # above[s, k] = M_k
    k_star = (above > slack[:, None]).sum(axis=1) - 1
    out: NDArray[np.float64] = lo.copy()  # k* = −1: the whole row's mass is within the slack
    mass_over = np.where(k_star + 1 < bins, above[np.arange(n_seg), np.minimum(k_star + 1, bins - 1)], 0.0)
    pick = np.flatnonzero((b == k_star[seg]) & (k_star[seg] >= 0))
    if len(pick):
        s, dl, w = seg[pick], delta_ab[pick], weight[pick]
        order = np.lexsort((dl, s))
        s, dl, w = s[order], dl[order], w[order]
        starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
        csum = np.cumsum(w[::-1])[::-1]  # inclusive suffix sums over the picked entries
        tail_end = np.concatenate([csum[starts[1:]], [0.0]])  # suffix mass of the later segments' picks
        after = csum - w - np.repeat(tail_end, np.diff(np.r_[starts, len(s)])) + mass_over[s]
        ok = after <= slack[s]
        ok[np.r_[starts[1:], len(s)] - 1] = True  # the last pick of a segment: ≤ M_k*+1 after it (round-off aside)
        out[s[starts]] = dl[np.minimum.reduceat(np.where(ok, np.arange(len(s)), len(s)), starts)]
    return out


@dataclass
class MarginReport:
    """Safety margins for anchor pairs and what happened while computing them.

    Attributes:
        xi_hat: ξ̂ (nats) for every ordered pair of anchors, (|A|, |A|); NaN where not needed (ε̄ ≥ ε), 0 diagonal.
        counts: how many anchor pairs and true pairs fell into each case (see the module docstring).
        ps: P_S(x, x') of Eq. 93 summary (computed under both rules, used only under ``eq30``).
        fallback_pair: (|A|, |A|) True where ξ̂ came at least partly from a worst-case fallback.
        timed_out: the deadline passed before every true pair was evaluated (``counts`` says how many were).
    """

    xi_hat: NDArray[np.float64]
    fallback_pair: NDArray[np.bool_]
    counts: dict[str, int] = field(default_factory=dict)
    ps: dict[str, Any] = field(default_factory=dict)
    timed_out: bool = False  # the deadline came first: xi_hat is incomplete and must not be used


def _pair_probabilities(d: NDArray[np.float64], p: NDArray[np.float64], anchors: NDArray[np.int64], sel: Selection,
                        S: NDArray[np.int64], s_mask: NDArray[np.bool_], ps_rule: str,
                        delta: float) -> tuple[NDArray[np.float64], dict[str, Any]]:
    """Eq. 93: π_x = Pr[the user who selected x sits in S_x] and P_S(x, x') = π_x π_x' over anchor pairs, with a
    summary (min, median, pairs above 1 − δ, the rule)."""
    n_a = len(anchors)
    wp = sel.weights(d[:, anchors]) * p[:, None]  # (K, |A|): p_u w_{u,x}
    pi = np.where(s_mask, np.take_along_axis(wp.T, S, axis=1), 0.0).sum(axis=1) / wp.sum(axis=0)
    ps = pi[:, None] * pi[None, :]
    off = ~np.eye(n_a, dtype=bool)
    info = {"min": float(ps[off].min()) if n_a > 1 else 1.0, "median": float(np.median(ps[off])) if n_a > 1 else 1.0,
            "pairs_above_1_minus_delta": int(((ps > 1.0 - delta) & off).sum()), "rule": ps_rule}
    return ps, info


def _eq30_target(ps: NDArray[np.float64], need: NDArray[np.bool_], delta: float,
                 ps_rule: str) -> tuple[NDArray[np.bool_], float]:
    """With ``eq30``: the anchor pairs where Eq. 30 is infeasible (P_S ≤ 1 − δ) and the δ the margins must then meet;
    with ``one`` (P_S = 1): no such pair, and δ itself."""
    if ps_rule != "eq30":
        return np.zeros_like(need), delta
    feasible30 = ps > 1.0 - delta
    with np.errstate(divide="ignore"):
        dlt = np.where(feasible30, 1.0 - (1.0 - delta) / np.where(ps > 0, ps, 1.0), 0.0)
    target = float(dlt[need & feasible30].min()) if (need & feasible30).any() else delta
    return need & ~feasible30, target


class _Balls(NamedTuple):
    """Every secret's γ-ball (nearest first, padded), its size, the surrogate probabilities v and P0."""

    nbr: NDArray[np.int64]
    mask: NDArray[np.bool_]
    size: NDArray[np.int64]
    v: NDArray[np.float64]
    p0: NDArray[np.float64]


def safety_margins(d: NDArray[np.float64], cost: NDArray[np.float64], p: NDArray[np.float64],
                   anchors: NDArray[np.int64], sel: Selection, eps: float, delta: float, big_gamma: int,
                   ps_rule: str = "one", progress: Progress = no_progress,
                   nbr: NDArray[np.int64] | None = None, mask: NDArray[np.bool_] | None = None,
                   s_rule: str = "nearest", deadline: float | None = None,
                   used: NDArray[np.bool_] | None = None) -> MarginReport:
    """ξ̂ for every pair of anchors that needs one (Eq. 29 with the patches of the module docstring).

    Args:
        d: mDP metric, km, (K, K). cost: Phase I cost ε̄·d, nats, (K, K). p: prior over X.
        anchors: indices of the union of anchor sets A. sel: the selection rule.
        eps: ε, km⁻¹. delta: δ. big_gamma: Γ, records per neighbourhood S_x.
        ps_rule: ``one`` (P_S = 1, authors' code) or ``eq30`` (the paper's Eq. 30 with P_S from Eq. 93).
        s_rule: S_x = the Γ nearest records (``nearest``, paper Eq. 29) or the records within γ/2
            (``half-gamma``, authors' code).
        deadline: ``time.perf_counter()`` value after which no further block of true pairs is started; the report
            then has ``timed_out`` set (the set-up before it takes well under a second at K = 5,000). Passed inside
            a block or in the steps after the blocks, it raises ``OutOfTime``.
        used: (|A|, |A|) the anchor pairs whose ξ̂ the LP uses (default: all); the others stay NaN (the authors' code
            constrains only anchors closer than 0.8 km, and computes no margin for the rest).

    ``cost`` may be asymmetric (the authors' ε̄): ξ̂ is then computed for each ordered pair.
    """
    if ps_rule not in PS_RULES:
        raise ParameterError(f"`ps_rule` = {ps_rule!r} is not one of {', '.join(PS_RULES)}.")
    if s_rule not in S_RULES:
        raise ParameterError(f"`s_rule` = {s_rule!r} is not one of {', '.join(S_RULES)}.")
    if nbr is None or mask is None:
        nbr, mask = ball_lists(d, sel.gamma_km)
    v, p0 = surrogate_probabilities(d, sel, nbr, mask)
    balls = _Balls(nbr, mask, mask.sum(axis=1), v, p0)
    n_a = len(anchors)
    if s_rule == "nearest":
        S = neighbourhoods(d, anchors, big_gamma)  # (|A|, Γ)
        s_mask = np.ones(S.shape, dtype=bool)
    else:
        S, s_mask = half_gamma_neighbourhoods(d, anchors, sel.gamma_km)  # padded with the anchor itself

    ps, ps_info = _pair_probabilities(d, p, anchors, sel, S, s_mask, ps_rule, delta)
    off = ~np.eye(n_a, dtype=bool)

    room = eps * d[np.ix_(anchors, anchors)] - cost[np.ix_(anchors, anchors)]
    unused = off & ~used if used is not None else np.zeros_like(off)
    need = off & ~unused & (room > 0)
    bad30, target_delta = _eq30_target(ps, need, delta, ps_rule)

    xi_hat = np.full((n_a, n_a), np.nan)
    np.fill_diagonal(xi_hat, 0.0)
    fb_pair = np.zeros((n_a, n_a), dtype=bool)
    counts: dict[str, int] = {"anchor_pairs": int(off.sum()), "anchor_pairs_unused": int(unused.sum()),
                              "anchor_pairs_no_room": int((off & ~unused & (room <= 0)).sum()),
                              "anchor_pairs_computed": int(need.sum()),
                              "anchor_pairs_eq30_infeasible": int(bad30.sum())}
    symmetric = bool(np.array_equal(cost, cost.T))
    # with a symmetric cost ξ̂ is symmetric: compute each unordered pair once
    ia, ib = np.nonzero(np.triu(need, 1) if symmetric else need)
    if len(ia) == 0:
        counts.update(true_pairs_evaluated=0, true_pairs_unreachable=0, anchor_pairs_with_fallback=0)
        return MarginReport(xi_hat, fb_pair, counts, ps_info)

    progress("safety margins: true pairs", 0.0)
    g = S.shape[1]
    k = len(d)
    step_p = max(1, 2_000_000 // (g * g))  # anchor pairs per block: (P, Γ²) keys for every pair at once took 21 GB
    blocks = [slice(s0, s0 + step_p) for s0 in range(0, len(ia), step_p)]
    uniq = _needed_true_pairs(S, ia, ib, blocks, symmetric, k)
    real = uniq // k != uniq % k  # q = r: the same secret, no constraint
    F = eps * d - cost
    xi_u, fb_u, stopped = _true_pair_margins(F, balls, uniq, k, real, target_delta, progress, deadline)
    if stopped is not None:
        counts.update(true_pairs_evaluated=stopped, true_pairs_needed=int(real.sum()))
        return MarginReport(xi_hat, fb_pair, counts, ps_info, timed_out=True)
    val, fb = _worst_over_neighbourhoods(uniq, xi_u, fb_u, S, ia, ib, blocks, symmetric, k, deadline)
    if ps_rule == "eq30":  # Eq. 30 infeasible: the worst case over the balls, for every true pair
        worst = _worst_case(F, nbr, mask, S[ia], S[ib], deadline)
        bad = bad30[ia, ib]
        val = np.where(bad, np.maximum(worst, 0.0), val)
        fb = fb | bad
    xi_hat[ia, ib] = val
    fb_pair[ia, ib] = fb
    if symmetric:
        xi_hat[ib, ia] = val
        fb_pair[ib, ia] = fb
    counts.update(true_pairs_evaluated=int(real.sum()), true_pairs_unreachable=int(fb_u[real].sum()),
                  anchor_pairs_with_fallback=int((2 if symmetric else 1) * fb.sum()))
    ps_info["target_delta"] = target_delta
    return MarginReport(xi_hat, fb_pair, counts, ps_info)


def _true_pair_keys(S: NDArray[np.int64], ia: NDArray[np.int64], ib: NDArray[np.int64], sl: slice, symmetric: bool,
                    k: int) -> NDArray[np.int64]:
    """(block, Γ²) keys q·K + r of the true pairs q ∈ S_a, r ∈ S_b behind the anchor pairs (ia, ib)[sl] (with a
    symmetric cost, min·K + max)."""
    g = S.shape[1]
    qq = np.repeat(S[ia[sl]], g, axis=1).astype(np.int64)  # (block, Γ²): q of each true pair (q, r)
    rr = np.tile(S[ib[sl]], (1, g)).astype(np.int64)
    lo, hi = (np.minimum(qq, rr), np.maximum(qq, rr)) if symmetric else (qq, rr)
    return lo * k + hi


def _needed_true_pairs(S: NDArray[np.int64], ia: NDArray[np.int64], ib: NDArray[np.int64], blocks: list[slice],
                       symmetric: bool, k: int) -> NDArray[np.int64]:
    """The sorted keys of every true pair that some anchor pair (ia, ib) needs."""
    seen = np.zeros(k * k, dtype=bool)
    for sl in blocks:
        seen[_true_pair_keys(S, ia, ib, sl, symmetric, k)] = True
    return np.flatnonzero(seen)


def _true_pair_margins(F: NDArray[np.float64], balls: _Balls, uniq: NDArray[np.int64], k: int,
                       real: NDArray[np.bool_], target_delta: float, progress: Progress, deadline: float | None
                       ) -> tuple[NDArray[np.float64], NDArray[np.bool_], int | None]:
    """ξ(q, r) and whether it fell back to the worst case, for the true pairs ``uniq`` (−inf where q = r), in blocks
    that report progress; returns them and, when the deadline came before a block, how many were done (else None)."""
    uq, ur = uniq // k, uniq % k
    xi_u = np.full(len(uniq), -np.inf)
    fb_u = np.zeros(len(uniq), dtype=bool)
    idx = np.flatnonzero(real)
    step = 20_000
    for s0 in range(0, len(idx), step):  # blocks of true pairs, for progress reports and the deadline
        if deadline is not None and time.perf_counter() > deadline:
            return xi_u, fb_u, s0
        sl = idx[s0:s0 + step]
        xi_u[sl], fb_u[sl] = pair_margins(F, balls.nbr, balls.size, balls.v, balls.p0, uq[sl], ur[sl], target_delta,
                                          deadline=deadline)
        progress("safety margins: true pairs", min(1.0, (s0 + step) / len(idx)))
    return xi_u, fb_u, None


def _worst_over_neighbourhoods(uniq: NDArray[np.int64], xi_u: NDArray[np.float64], fb_u: NDArray[np.bool_],
                               S: NDArray[np.int64], ia: NDArray[np.int64], ib: NDArray[np.int64],
                               blocks: list[slice], symmetric: bool, k: int,
                               deadline: float | None) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Eq. 29 for the anchor pairs (ia, ib): max(0, the largest ξ over their true pairs), and whether any of those
    fell back to the worst case."""
    val = np.empty(len(ia))
    fb = np.empty(len(ia), dtype=bool)
    for sl in blocks:
        check_deadline(deadline, "collecting the safety margins of anchor pairs")
        inv = np.searchsorted(uniq, _true_pair_keys(S, ia, ib, sl, symmetric, k))
        val[sl] = np.maximum(xi_u[inv].max(axis=1), 0.0)
        fb[sl] = fb_u[inv].any(axis=1)
    return val, fb


def _worst_case(F: NDArray[np.float64], nbr: NDArray[np.int64], mask: NDArray[np.bool_], Sa: NDArray[np.int64],
                Sb: NDArray[np.int64], deadline: float | None = None) -> NDArray[np.float64]:
    """max over q∈S_a, r∈S_b (q ≠ r), a'∈B(q), b'∈B(r) of F_a'b' − F_qr, per row of Sa/Sb."""
    out = np.full(len(Sa), -np.inf)
    for gi in range(Sa.shape[1]):  # loop over Γ, vectorised over pairs
        for gj in range(Sb.shape[1]):
            check_deadline(deadline, "computing the worst-case margins (P_S ≤ 1 − δ)")
            q, r = Sa[:, gi], Sb[:, gj]
            block = F[nbr[q][:, :, None], nbr[r][:, None, :]]
            block = np.where(mask[q][:, :, None] & mask[r][:, None, :], block, -np.inf).max(axis=(1, 2))
            out = np.where(q != r, np.maximum(out, block - F[q, r]), out)
    return out


def success_bound(F: NDArray[np.float64], nbr: NDArray[np.int64], mask: NDArray[np.bool_],
                  v: NDArray[np.float64], q: int, r: int, xi: float) -> float:
    """h_{q,r}(ξ) of Eq. 27 by direct summation: Σ v_{q,a}·v_{r,b} over a ∈ B(q), b ∈ B(r) with Δ_ab ≤ ξ.

    A plain reference implementation (for tests and for plotting h against ξ), not used by the solver.
    """
    a, b = nbr[q][mask[q]], nbr[r][mask[r]]
    delta_ab = F[np.ix_(a, b)] - F[q, r]
    weight = np.outer(v[q][mask[q]], v[r][mask[r]])
    return float(weight[delta_ab <= xi].sum())
