"""The structured engine's pricing (mdpviz.lp.pricing): a certified lower bound on one output's column problem,
checked against that problem solved directly, with every pair row, on a Rome sample."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from mdpviz.lp.pricing import Pricer
from mdpviz.problem import build_problem


def _exact_min(g: np.ndarray, Es: np.ndarray) -> float:
    """min g·v over v ∈ [0, 1]^n with v_i ≤ e^{E_ij} v_j for every ordered pair (the cone), by one HiGHS LP."""
    n = len(g)
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    rows = np.arange(len(i))
    A = sp.csr_matrix((np.concatenate([np.ones(len(i)), -np.exp(Es[i, j])]),
                       (np.concatenate([rows, rows]), np.concatenate([i, j]))), shape=(len(i), n))
    res = linprog(g, A_ub=A, b_ub=np.zeros(len(i)), bounds=(0, 1), method="highs")
    assert res.status == 0
    return float(res.fun)


@pytest.mark.parametrize("eps", [0.5, 2.0, 10.0])
def test_the_pricing_bound_is_the_column_minimum_from_below(eps: float) -> None:
    """For reduced costs with a few negative rows near one another (as at an LP's row duals) and with many scattered
    ones, the bound never exceeds the true minimum (to the direct LP's own accuracy) and is tight to 1e-9 of the
    costs' scale. The sample lies in a 1.5 km disc so that the direct LP's coefficients stay below HiGHS's limit
    (e^{ε·d} ≤ e^30); at ε = 10 km⁻¹ pairs farther than 2.07 km pass the pricing LP's coefficient cap of 1e9, so its
    greedy step is exercised too."""
    problem = build_problem("rome", 60, n_outputs=10, cost="distance", seed=3, region="centre:1.5")
    Es = eps * problem.d
    assert Es.max() <= 30.0 and (eps < 10.0 or Es.max() > np.log(1e9))
    rng = np.random.default_rng(7)
    pricer = Pricer(Es)
    for trial in range(6):
        g = rng.uniform(0.0, 1.0, 60)
        if trial % 2:
            sources = rng.choice(60, 20, replace=False)  # scattered
        else:
            sources = np.argsort(problem.d[trial])[:5]  # a few rows near one another
        g[sources] = -rng.uniform(0.0, 3.0, len(sources))
        exact = _exact_min(g, Es)
        bound = pricer.price(g).bound
        scale = np.abs(g).sum()
        assert bound <= exact + 1e-11 * scale  # the direct LP's own tolerance, not the bound's
        assert bound >= exact - 1e-9 * scale
    assert not pricer.failures and pricer.retries == 0 and pricer.lp_calls > 0
