"""Certified pricing for the structured solver: a lower bound on min g·v over C ∩ [0, 1]^n, one output at a time.

C is the cone {v ≥ 0 : v_i ≤ e^{E_ij} v_j} of a closed exponent matrix E (it obeys the triangle inequality). For
weights g (one output's reduced costs) split the rows into *sources* N = {g < 0}, which want v = 1, and *sinks*
P = {g > 0}, which want v = 0. By LP duality the minimum is −(supply that cannot be shipped) in a generalised
transportation problem: source s has supply |g_s|, sink t capacity g_t, and a unit shipped from s to t uses e^{E_st}
units of t's capacity (routing through a third row never helps, by the triangle inequality). **Any** flow that
respects the capacities therefore bounds the minimum from below:

    min_{v ∈ C ∩ [0,1]^n} g·v  ≥  −Σ_s max(0, |g_s| − Σ_t f_st)      for every f ≥ 0 with Σ_s e^{E_st} f_st ≤ g_t.

The pricer finds a good flow with HiGHS (the transportation LP over the pairs whose exponent is at most ``cap``:
coefficients stay ≤ e^cap), then makes it capacity-feasible exactly (scaling down what enters an over-full sink),
and finally gives every sink's unused capacity to its nearest source that still has supply (pairs beyond the cap
included). Whatever the solver's tolerances, the bound is valid. Each transportation LP is solved by primal simplex
without presolve; one in numerical trouble is retried (dual simplex, then interior point) and, failing that, replaced
by the greedy flow alone, still valid. At paper scale N is a handful of rows near the output, so these LPs are small.
"""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from .highs import INF, new_highs, pass_model

# flows on pairs with a larger exponent are left to the greedy step (they cost more than 1e9 units of capacity per
# unit shipped): the LP's coefficients stay ≤ 1e9, which HiGHS handles
LOG_COEF_CAP = float(np.log(1e9))
# largest transportation LP: beyond it each sink keeps only its nearest sources (the bound stays valid)
MAX_PRICING_PAIRS = 200_000
# tried in turn when a transportation LP ends in numerical trouble. Primal simplex without presolve goes first: on
# whole-city Rome it prices the 100 outputs 1.6-12x faster than dual simplex did (K = 500, eps = 1: 1.06 s against
# 12.8 s; K = 2,000, eps = 5: 0.98 s against 1.55 s), to the same bounds within 1e-7 (docs/WHAT-WE-LEARNED.md)
_STRATEGIES: tuple[dict[str, str | int], ...] = (
    {"solver": "simplex", "simplex_strategy": 4, "presolve": "off"}, {"solver": "simplex", "simplex_strategy": 1},
    {"solver": "ipm", "run_crossover": "on"})


@dataclass
class Priced:
    """One output's pricing: ``bound`` ≤ min_{v ∈ C ∩ [0,1]^n} g·v (≤ 0); ``status`` is ``optimal``, ``time limit``
    or ``failed (<HiGHS status>)`` (the bound then comes from the greedy flow alone); ``pairs`` is the LP's size.
    ``sources`` (the rows with g < 0) and ``values`` (1 − each one's capacity dual in the transportation LP, or None
    where no LP was solved) give a minimiser (:meth:`Pricer.minimiser`; ``scripts/bundle_lagrangian.py`` uses it as
    a subgradient)."""

    bound: float
    status: str
    pairs: int = 0
    sources: NDArray[np.int64] | None = None
    values: NDArray[np.float64] | None = None


class Pricer:
    """Prices outputs against a closed exponent matrix ``Es``; counts what it did for the result's diagnostics."""

    def __init__(self, Es: NDArray[np.float64], cap: float = LOG_COEF_CAP,
                 max_pairs: int = MAX_PRICING_PAIRS) -> None:
        self.Es = Es
        self.cap = float(cap)
        self.max_pairs = int(max_pairs)
        self.calls = 0
        self.lp_calls = 0
        self.retries = 0
        self.failures: list[str] = []
        self.pairs_max = 0

    def minimiser(self, priced: Priced, g: NDArray[np.float64]) -> NDArray[np.float64]:
        """The point of C ∩ [0, 1]^n that ``priced`` (the pricing of ``g``) names: the envelope max_s values_s·e^{−E[s,
        ·]} of its sources (each at 1 where no LP was solved), which lies in the cone; 0 where that does not pay
        (g·v ≥ 0). g·v is the minimum when the transportation LP was solved to optimality."""
        if priced.sources is None or not len(priced.sources):
            return np.zeros(len(g))
        values = np.ones(len(priced.sources)) if priced.values is None else priced.values
        v: NDArray[np.float64] = np.max(values[:, None] * np.exp(-self.Es[priced.sources]), axis=0)
        return v if float(g @ v) < 0 else np.zeros(len(g))

    def price(self, g: NDArray[np.float64], time_limit: float | None = None) -> Priced:
        """A certified lower bound on min g·v over C ∩ [0, 1]^n."""
        self.calls += 1
        N = np.flatnonzero(g < 0)
        if not N.size:
            return Priced(0.0, "optimal")
        a = -g[N]
        P = np.flatnonzero(g > 0)
        EP = self.Es[np.ix_(N, P)]
        b = g[P]
        if len(N) == 1:  # exact: one source ships to every sink at once
            return Priced(min(0.0, float(np.sum(b * np.exp(-EP[0]))) - float(a[0])), "optimal", sources=N)
        within = EP <= self.cap
        near = np.flatnonzero(within.any(axis=0))
        if not near.size:
            return Priced(_bound(np.zeros(len(N)), a, b, EP), "optimal", sources=N)
        si, ti = self._pairs(EP[:, near], within[:, near])
        out = self._transport(a, b, EP, near, si, ti, time_limit)
        out.sources = N
        return out

    def _pairs(self, EP: NDArray[np.float64], within: NDArray[np.bool_]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Source–sink pairs of the LP: all within the cap, or each sink's nearest sources when that is too many."""
        if int(within.sum()) > self.max_pairs:
            k = max(1, self.max_pairs // EP.shape[1])
            if k < EP.shape[0]:
                keep = np.zeros_like(within)
                nearest = np.argpartition(EP, k - 1, axis=0)[:k]
                keep[nearest, np.arange(EP.shape[1])[None, :]] = True
                within = within & keep
        si, ti = np.nonzero(within)
        return si.astype(np.int64), ti.astype(np.int64)

    def _transport(self, a: NDArray[np.float64], b: NDArray[np.float64], EP: NDArray[np.float64],
                   near: NDArray[np.int64], si: NDArray[np.int64], ti: NDArray[np.int64],
                   time_limit: float | None) -> Priced:
        """max Σ f over pairs (si, ti): Σ_t f_st ≤ a_s, Σ_s e^{E_st} f_st ≤ b_t, f ≥ 0 (ti indexes ``near``)."""
        nN, nP, r = len(a), len(near), len(si)
        self.lp_calls += 1
        self.pairs_max = max(self.pairs_max, r)
        coef = np.exp(EP[si, near[ti]])
        cols = np.arange(r)
        A = sp.csc_matrix((np.concatenate([np.ones(r), coef]), (np.concatenate([si, nN + ti]),
                                                                 np.concatenate([cols, cols]))), shape=(nN + nP, r))
        upper = np.concatenate([a, b[near]])
        status = "error"
        for attempt, options in enumerate(_STRATEGIES):
            h = new_highs()
            # a capacity met only to the solver's tolerance costs the bound that much per sink: keep it small
            h.setOptionValue("primal_feasibility_tolerance", 1e-10)
            for key, value in options.items():
                h.setOptionValue(key, value)
            if time_limit is not None:
                h.setOptionValue("time_limit", float(max(time_limit, 0.01)))
            pass_model(h, -np.ones(r), A, np.full(nN + nP, -INF), upper)
            h.run()
            st = h.getModelStatus()
            if st == highspy.HighsModelStatus.kTimeLimit:
                return Priced(_bound(np.zeros(nN), a, b, EP), "time limit", r)
            if st == highspy.HighsModelStatus.kOptimal:
                self.retries += attempt
                sol = h.getSolution()
                f = np.maximum(np.array(sol.col_value), 0.0)
                values = np.clip(1.0 + np.array(sol.row_dual)[:nN], 0.0, 1.0)  # a capacity row's dual is −α ≤ 0
                return Priced(_feasible_bound(f, a, b, EP, near, coef, si, ti), "optimal", r, values=values)
            status = h.modelStatusToString(st)
        self.failures.append(status)
        return Priced(_bound(np.zeros(nN), a, b, EP), f"failed ({status})", r)


def _feasible_bound(f: NDArray[np.float64], a: NDArray[np.float64], b: NDArray[np.float64], EP: NDArray[np.float64],
                    near: NDArray[np.int64], coef: NDArray[np.float64], si: NDArray[np.int64],
                    ti: NDArray[np.int64]) -> float:
    """Make the LP's flow capacity-feasible exactly (scale down what enters an over-full sink), then bound."""
    load = np.bincount(ti, weights=f * coef, minlength=len(near))
    bn = b[near]
    with np.errstate(divide="ignore", invalid="ignore"):
        shrink = np.where(load > bn, bn / load, 1.0)
    shipped = np.bincount(si, weights=f * shrink[ti], minlength=len(a)).astype(np.float64)
    room = b.copy()
    room[near] -= np.minimum(load, bn)
    return _bound(shipped, a, room, EP)


def _bound(shipped: NDArray[np.float64], a: NDArray[np.float64], room: NDArray[np.float64],
           EP: NDArray[np.float64]) -> float:
    """Give each sink's unused capacity ``room`` to its nearest source with supply left (a greedy addition to the
    flow), and return −(unshipped supply) of the result."""
    left = a - shipped
    src = np.flatnonzero(left > 0)
    if src.size and room.size:
        nearest = np.argmin(EP[src], axis=0)
        gain = np.maximum(room, 0.0) * np.exp(-EP[src[nearest], np.arange(EP.shape[1])])
        shipped = shipped.copy()
        shipped[src] += np.minimum(np.bincount(nearest, weights=gain, minlength=src.size), left[src])
    return float(np.minimum(shipped - a, 0.0).sum())
