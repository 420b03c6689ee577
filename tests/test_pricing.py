"""The structured engine's pricing (mdpviz.lp.pricing): a certified lower bound on one output's column problem,
checked against that problem solved directly, with every pair row, on a Rome sample."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from mdpviz.lp.cone import cone_violation, lipschitz_repair
from mdpviz.lp.pricing import Pricer
from mdpviz.problem import build_problem


def _feasible_minimiser(g: np.ndarray, Es: np.ndarray) -> np.ndarray:
    """A point of the cone ∩ [0, 1]^n near min g·v: the direct LP (every ordered pair a row, solved by HiGHS) and its
    solution raised exactly into the cone (capped at 1), so that g·v bounds the true minimum from above whatever the
    LP solver's tolerances."""
    n = len(g)
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    rows = np.arange(len(i))
    A = sp.csr_matrix((np.concatenate([np.ones(len(i)), -np.exp(Es[i, j])]),
                       (np.concatenate([rows, rows]), np.concatenate([i, j]))), shape=(len(i), n))
    res = linprog(g, A_ub=A, b_ub=np.zeros(len(i)), bounds=(0, 1), method="highs")
    assert res.status == 0
    with np.errstate(divide="ignore"):
        u, _ = lipschitz_repair(np.log(np.clip(res.x, 0.0, 1.0))[:, None], Es)
    return np.exp(u[:, 0])


@pytest.mark.parametrize("eps", [0.5, 2.0, 10.0])
def test_the_pricing_bound_is_the_column_minimum_from_below(eps: float) -> None:
    """For reduced costs with a few negative rows near one another (as at an LP's row duals) and with many scattered
    ones, the bound never exceeds the cost of an exactly feasible point and is within 1e-9 of the costs' scale of the
    best one the direct LP finds. The sample lies in a 1.2 km disc so that the direct LP's coefficients stay within
    what HiGHS solves accurately (e^{ε·d} ≤ e^24); at ε = 10 km⁻¹ pairs farther than 2.07 km pass the pricing LP's
    coefficient cap of 1e9, so its greedy step is exercised too. The minimiser read from the pricer's duals (the
    envelope of its sources' values) lies in the cone and costs the bound."""
    problem = build_problem("rome", 60, n_outputs=10, cost="distance", seed=3, region="centre:1.2")
    Es = eps * problem.d
    assert Es.max() <= 24.0 and (eps < 10.0 or Es.max() > np.log(1e9))
    rng = np.random.default_rng(7)
    pricer = Pricer(Es)
    for trial in range(6):
        g = rng.uniform(0.0, 1.0, 60)
        if trial % 2:
            sources = rng.choice(60, 20, replace=False)  # scattered
        else:
            sources = np.argsort(problem.d[trial])[:5]  # a few rows near one another
        g[sources] = -rng.uniform(0.0, 3.0, len(sources))
        v = _feasible_minimiser(g, Es)
        assert cone_violation(v[:, None], Es) <= 1e-12 and 0.0 <= v.min() and v.max() <= 1.0
        priced = pricer.price(g)
        bound, scale = priced.bound, np.abs(g).sum()
        assert bound <= float(g @ v) + 1e-12 * scale
        assert bound >= float(g @ v) - 1e-9 * scale
        # the minimiser its duals give: in the cone, and as cheap as the bound says
        assert priced.sources is not None and np.array_equal(priced.sources, np.flatnonzero(g < 0))
        w = pricer.minimiser(priced, g)  # v = 0 where no source pays for its sinks
        assert cone_violation(w[:, None], Es) <= 1e-12 and w.max() <= 1.0
        assert abs(float(g @ w) - bound) <= 1e-9 * scale
    assert not pricer.failures and pricer.retries == 0 and pricer.lp_calls > 0
