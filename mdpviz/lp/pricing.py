"""Pricing for the structured solver: min g·v over a certified relaxation of C ∩ [0, 1]^n, one output at a time.

C is the cone {v ≥ 0 : v_i ≤ e^{E_ij} v_j} of a closed exponent matrix E (it obeys the triangle inequality). For
weights g (one output's reduced costs) split the rows into *sources* N = {g < 0}, which want v = 1, and *sinks*
P = {g > 0}, which want v = 0. The pricing LP over all of C has the same value as the bipartite LP that keeps only
the constraints v_s ≤ e^{E_st} v_t for s ∈ N, t ∈ P: its dual is a generalised transportation problem (a source
ships its weight |g_s| to sinks; a unit shipped from s to t uses e^{E_st} units of t's capacity g_t), and routing
through a third row never helps because of the triangle inequality. At paper scale N is a handful of rows near
the output, so this LP is small, where an LP over every row and pair would be large.

Two things keep it exact and robust:

* **Relaxation only.** Pairs with E_st above ``cap`` (and sinks beyond ``cap`` of every source) are left out,
  which can only lower the value: the bound stays valid. It loses at most e^{−cap} per unit of sink weight.
* **A bound no tolerance can spoil.** The lower bound is not the LP's reported objective but the value of the LP's
  dual flows after scaling them down so that no sink's capacity is exceeded: any such flow bounds the value from
  below. A pricing LP in numerical trouble is retried (primal simplex, then interior point) and, failing that,
  bounded by the trivial −Σ|g_N| (v = 1 on every source), which is valid too.

The atom handed to the master is the Lipschitz envelope of the vertex's source values, exactly in C.
"""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from .highs import INF, new_highs, pass_model

# pricing pairs with a larger exponent are left out (a relaxation, never a tightening): coefficients e^{E} stay
# ≤ 1e9, which HiGHS handles, and what is left out weighs at most 1e-9 per unit of sink weight
LOG_COEF_CAP = float(np.log(1e9))
# largest pricing LP: beyond it each sink keeps only its nearest sources (still a relaxation)
MAX_PRICING_ROWS = 200_000
_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0)
# tried in turn when a pricing LP ends in numerical trouble
_STRATEGIES = ({"solver": "simplex", "simplex_strategy": 1}, {"solver": "simplex", "simplex_strategy": 4},
               {"solver": "ipm", "run_crossover": "on"})


@dataclass
class Priced:
    """One output's pricing.

    Attributes:
        bound: certified lower bound on min_{v ∈ C ∩ [0,1]^n} g·v (≤ 0).
        src, logv: rows and log-values (≤ 0) whose Lipschitz envelope is the new atom (empty: no atom).
        status: ``optimal``, ``time limit``, or ``failed (<HiGHS status>)`` (then ``bound`` is the trivial one).
        rows: constraint rows of the pricing LP (0 for a closed form).
    """

    bound: float
    src: NDArray[np.int64]
    logv: NDArray[np.float64]
    status: str
    rows: int = 0


class Pricer:
    """Prices outputs against a closed exponent matrix ``Es``; counts what it did for the result's diagnostics."""

    def __init__(self, Es: NDArray[np.float64], cap: float = LOG_COEF_CAP, max_rows: int = MAX_PRICING_ROWS) -> None:
        self.Es = Es
        self.cap = float(cap)
        self.max_rows = int(max_rows)
        self.calls = 0
        self.lp_calls = 0
        self.retries = 0
        self.failures: list[str] = []
        self.rows_max = 0
        self.rows_total = 0

    def price(self, g: NDArray[np.float64], time_limit: float | None = None) -> Priced:
        """min g·v over the relaxation, with a certified lower bound and the vertex's sources."""
        self.calls += 1
        N = np.flatnonzero(g < 0)
        if not N.size:
            return Priced(0.0, _EMPTY_I, _EMPTY_F, "optimal")
        a = -g[N]
        P = np.flatnonzero(g > 0)
        EP = self.Es[np.ix_(N, P)]
        within = EP <= self.cap
        near = within.any(axis=0)
        P, EP, within = P[near], EP[:, near], within[:, near]
        if not P.size:  # nothing holds the sources down: v = 1 on every source
            return Priced(-float(a.sum()), N, np.zeros(len(N)), "optimal")
        b = g[P]
        if len(N) == 1:  # closed form: v_s = 1 pays Σ_t g_t e^{−E_st} on the sinks it holds up
            held = float(np.sum(np.where(within[0], b * np.exp(-np.where(within[0], EP[0], 0.0)), 0.0)))
            value = held - float(a[0])
            if value < 0:
                return Priced(value, N, np.zeros(1), "optimal")
            return Priced(0.0, _EMPTY_I, _EMPTY_F, "optimal")
        si, ti = self._pairs(EP, within)
        return self._solve_lp(N, a, P, b, EP, si, ti, time_limit)

    def _pairs(self, EP: NDArray[np.float64], within: NDArray[np.bool_]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Source–sink pairs of the LP: all within the cap, or each sink's nearest sources when that is too many."""
        if int(within.sum()) > self.max_rows:
            k = max(1, self.max_rows // EP.shape[1])
            if k < EP.shape[0]:
                keep = np.zeros_like(within)
                nearest = np.argpartition(EP, k - 1, axis=0)[:k]
                keep[nearest, np.arange(EP.shape[1])[None, :]] = True
                within = within & keep
        si, ti = np.nonzero(within)
        return si.astype(np.int64), ti.astype(np.int64)

    def _solve_lp(self, N: NDArray[np.int64], a: NDArray[np.float64], P: NDArray[np.int64],
                  b: NDArray[np.float64], EP: NDArray[np.float64], si: NDArray[np.int64], ti: NDArray[np.int64],
                  time_limit: float | None) -> Priced:
        nN, nP, r = len(N), len(P), len(si)
        self.lp_calls += 1
        self.rows_max = max(self.rows_max, r)
        self.rows_total += r
        coef = np.exp(EP[si, ti])
        rows = np.arange(r)
        A = sp.csr_matrix((np.concatenate([np.ones(r), -coef]), (np.concatenate([rows, rows]),
                                                                  np.concatenate([si, nN + ti]))), shape=(r, nN + nP))
        status = "error"
        for attempt, options in enumerate(_STRATEGIES):
            h = new_highs()
            for key, value in options.items():
                h.setOptionValue(key, value)
            if time_limit is not None:
                h.setOptionValue("time_limit", float(max(time_limit, 0.01)))
            pass_model(h, np.concatenate([-a, b]), A, np.full(r, -INF), np.zeros(r), np.zeros(nN + nP),
                       np.ones(nN + nP))
            h.run()
            st = h.getModelStatus()
            if st == highspy.HighsModelStatus.kTimeLimit:
                return Priced(-float(a.sum()), _EMPTY_I, _EMPTY_F, "time limit", r)
            if st == highspy.HighsModelStatus.kOptimal:
                self.retries += attempt
                sol = h.getSolution()
                bound = _flow_bound(np.array(sol.row_dual), a, b, coef, si, ti)
                v = np.clip(np.array(sol.col_value[:nN]), 0.0, 1.0)
                pos = v > 0
                with np.errstate(divide="ignore"):
                    return Priced(bound, N[pos], np.log(v[pos]), "optimal", r)
            status = h.modelStatusToString(st)
        self.failures.append(status)
        return Priced(-float(a.sum()), _EMPTY_I, _EMPTY_F, f"failed ({status})", r)


def _flow_bound(row_dual: NDArray[np.float64], a: NDArray[np.float64], b: NDArray[np.float64],
                coef: NDArray[np.float64], si: NDArray[np.int64], ti: NDArray[np.int64]) -> float:
    """Certified lower bound −(unshipped supply) from the LP's dual flows, scaled to respect every sink's capacity.

    The dual of a row v_s − e^{E_st} v_t ≤ 0 is a flow f_st = −y_st ≥ 0 from s to t. Any flow with
    Σ_s e^{E_st} f_st ≤ g_t at every sink t bounds the pricing value from below by −Σ_s max(0, |g_s| − Σ_t f_st).
    """
    f = np.maximum(-row_dual, 0.0)
    load = np.bincount(ti, weights=f * coef, minlength=len(b))
    with np.errstate(divide="ignore", invalid="ignore"):
        shrink = np.where(load > b, b / load, 1.0)
    shipped = np.bincount(si, weights=f * shrink[ti], minlength=len(a))
    return float(np.minimum(shipped - a, 0.0).sum())


def envelope(src: NDArray[np.int64], logv: NDArray[np.float64], Es: NDArray[np.float64]) -> NDArray[np.float64]:
    """The smallest vector of C ∩ [0, 1]^n with v_s ≥ e^{logv_s} on the sources: e^{min(0, max_s logv_s − Es[s, ·])}."""
    if not len(src):
        return np.zeros(Es.shape[1])
    u = np.max(logv[:, None] - Es[src], axis=0)
    return np.exp(np.minimum(u, 0.0))
