"""PAnDA's Phase II and its measured privacy and utility (spec §8.1–8.2): reports, V_pair, V_cf, V_pure, losses.

A pair is violated when some output y has ``ln z_{s,y} − ln z_{s',y} > E + ln(1 + τ)`` (τ = 1e-9, no absolute
slack: the one check, ``mdpviz.metrics.rows_breach``), where s, s' are the surrogates used and E the exponent the
check allows:

- **V_pair**: ordered pairs of users (n, m) with different secrets; E = (ε − ε̄_{x_n,x_m})·d_{x_n,x_m}: Phase I is
  charged its worst case, Phase II is checked on the surrogates the users actually got.
- **V_pure**: the same pairs with E = ε·d_{x_n,x_m} (Phase I ignored).
- **V_cf**: for each user n and sampled alternative secrets x', x̂' = the anchor of A_n nearest to x' (the surrogate
  user n would have had at x' with the same anchors, as Lemma 1 conditions on A); E = (ε − ε̄_{x_n,x'})·d; both
  directions are checks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..deadline import check_deadline
from ..metrics import TOLERANCE
from ..metrics import rows_breach as _violated
from .diagnostics import PandaCheck


def sample_reports(rows: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.int64]:
    """One output index per row, y ~ row (inverse CDF, vectorised)."""
    cdf = np.cumsum(rows, axis=1)
    u = rng.random(len(rows)) * cdf[:, -1]
    y: NDArray[np.int64] = np.minimum((cdf < u[:, None]).sum(axis=1), rows.shape[1] - 1).astype(np.int64)
    return y


def _rate(violated: int, checked: int, exponent: str) -> PandaCheck:
    return {"violated": int(violated), "checked": int(checked), "ratio": (violated / checked) if checked else None,
            "tolerance": TOLERANCE, "exponent": exponent}


def user_pair_violations(user_rows: NDArray[np.float64], secrets: NDArray[np.int64], has: NDArray[np.bool_],
                         d: NDArray[np.float64], cost: NDArray[np.float64],
                         eps: float) -> tuple[PandaCheck, PandaCheck]:
    """V_pair and V_pure over ordered pairs of users with a surrogate and different secrets."""
    idx = np.flatnonzero(has)
    n = len(idx)
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    a, b = idx[i], idx[j]
    same = secrets[a] == secrets[b]
    a, b = a[~same], b[~same]
    dd = d[secrets[a], secrets[b]]
    v_pair = _violated(user_rows[a], user_rows[b], eps * dd - cost[secrets[a], secrets[b]])
    v_pure = _violated(user_rows[a], user_rows[b], eps * dd)
    checks = (_rate(int(v_pair.sum()), len(a), "(ε − ε̄_{x_n,x_m})·d"), _rate(int(v_pure.sum()), len(a), "ε·d"))
    for check in checks:
        check["excluded_same_secret"] = int(same.sum())
        check["users_without_surrogate"] = int((~has).sum())
    return checks


def counterfactual_violations(z_anchor: NDArray[np.float64], anchors: NDArray[np.int64],
                              member: NDArray[np.bool_], secrets: NDArray[np.int64], d: NDArray[np.float64],
                              cost: NDArray[np.float64], eps: float, samples: int,
                              rng: np.random.Generator, deadline: float | None = None) -> PandaCheck:
    """V_cf: per user, alternatives x' (``samples`` drawn without replacement from X \\ {x_n}; 0 = all of them).
    Past ``deadline`` (checked per user) ``OutOfTime`` is raised."""
    k = len(d)
    pos = np.full(k, -1)
    pos[anchors] = np.arange(len(anchors))
    bad = checks = 0
    per_user = min(samples, k - 1) if samples > 0 else k - 1
    for n in range(len(secrets)):  # loop over users, vectorised over alternatives
        check_deadline(deadline, f"measuring V_cf ({n} of {len(secrets)} users done)")
        own = np.flatnonzero(member[n])
        if len(own) == 0:
            continue
        x = secrets[n]
        others = np.delete(np.arange(k), x)
        alt = others if per_user == k - 1 else rng.choice(others, size=per_user, replace=False)
        s_n = own[np.argmin(d[x, own])]
        s_alt = own[np.argmin(d[np.ix_(alt, own)], axis=1)]
        expo = eps * d[x, alt] - cost[x, alt]
        zn = np.broadcast_to(z_anchor[pos[s_n]], (len(alt), z_anchor.shape[1]))
        za = z_anchor[pos[s_alt]]
        bad += int(_violated(zn, za, expo).sum() + _violated(za, zn, expo).sum())
        checks += 2 * len(alt)
    v_cf = _rate(bad, checks, "(ε − ε̄_{x_n,x'})·d, both directions")
    v_cf["alternatives_per_user"] = per_user
    v_cf["sampled"] = per_user < k - 1
    return v_cf


def claim_refuted(violated: int, checked: int, delta: float) -> bool:
    """Does a measured V_pair refute (ε, δ)-PmDP? Yes when the count exceeds δ·n by more than 3 binomial standard
    deviations (for δ = 1e-7 and a few thousand pairs: any violation at all)."""
    return checked > 0 and violated > delta * checked + 3.0 * np.sqrt(delta * (1.0 - delta) * checked)


def budget_split(d_a: NDArray[np.float64], cost_a: NDArray[np.float64], xi_a: NDArray[np.float64],
                 eps: float, used: NDArray[np.bool_] | None = None) -> dict[str, Any]:
    """Mean per-distance budget over ordered anchor pairs (those in ``used``, the pairs the LP constrains, when
    given): Phase I min(ε̄, ε), margin min(ξ̂/d, rest), Phase II rest."""
    off = ~np.eye(len(d_a), dtype=bool) & (d_a > 0) & (True if used is None else used)
    if not off.any():
        return {"pairs": 0}
    dd = d_a[off]
    phase1 = np.minimum(cost_a[off] / dd, eps)
    margin = np.minimum(np.nan_to_num(xi_a[off], nan=0.0) / dd, eps - phase1)
    phase2 = eps - phase1 - margin
    means = {"phase1": float(phase1.mean()), "margin": float(margin.mean()), "phase2": float(phase2.mean())}
    return {"pairs": int(off.sum()), "km_inv": means, "percent": {k: 100.0 * v / eps for k, v in means.items()},
            "rule": "per ordered anchor pair: min(ε̄, ε), then min(ξ̂/d, what is left), then the rest; averaged"}


def histogram(values: NDArray[np.float64], bins: int = 30, log: bool = False) -> dict[str, Any]:
    """Counts and bin edges (log10-spaced when ``log``) of the finite values, for the dashboard's bar charts."""
    v = values[np.isfinite(values)]
    if len(v) == 0:
        return {"counts": [], "edges": [], "n": 0, "log10_edges": log}
    if log:
        pos = v[v > 0]
        lo, hi = (np.log10(pos.min()), np.log10(pos.max())) if len(pos) else (0.0, 1.0)
        edges = np.logspace(lo, hi if hi > lo else lo + 1, bins + 1)
        counts, edges = np.histogram(pos, bins=edges)
        return {"counts": counts, "edges": edges, "n": len(v), "zeros": int((v <= 0).sum()), "log10_edges": True}
    counts, edges = np.histogram(v, bins=bins)
    return {"counts": counts, "edges": edges, "n": len(v), "log10_edges": False}
