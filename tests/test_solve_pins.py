"""Pins on results no other test fixes: EM's closed form against a hand computation, and lp's spanner option."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mdpviz import metrics
from mdpviz.geo import EARTH_RADIUS_KM
from mdpviz.problem import build_problem, problem_from_points
from mdpviz.solve import solve

KM_LON = math.degrees(1 / EARTH_RADIUS_KM)  # degrees of longitude per km on the equator (haversine exact there)


@pytest.fixture(scope="module")
def line() -> object:
    """Three secrets on the equator at 0, 1 and 2 km; Y = X, so d(x, y) is 0, 1 or 2 km."""
    pts = pd.DataFrame({"lat": [0.0, 0.0, 0.0], "lon": [0.0, KM_LON, 2 * KM_LON]})
    return problem_from_points(pts, all_outputs=True)


def test_exponential_mechanism_matches_a_hand_computation(line: object) -> None:
    """At ε = ln 4 km⁻¹ the weights exp(−ε·d/2) are 1, 1/2, 1/4 for d = 0, 1, 2 km; rows are those, normalised.

    Row 0 = (1, 1/2, 1/4) / (7/4) = (4/7, 2/7, 1/7); row 1 = (1/2, 1, 1/2) / 2 = (1/4, 1/2, 1/4). Any other
    exponent (ε·d/4, or the papers' literal ε·d) gives other numbers and fails here.
    """
    np.testing.assert_allclose(line.d, [[0, 1, 2], [1, 0, 1], [2, 1, 0]], rtol=1e-12, atol=1e-12)
    r = solve(line, "em", {"eps": math.log(4)}, use_cache=False)
    expected = np.array([[4, 2, 1], [2, 4, 2], [1, 2, 4]]) / np.array([[7], [8], [7]])
    np.testing.assert_allclose(r.Z, expected, rtol=1e-12)
    assert r.status == "closed form" and not r.degenerate
    # the literal variant: weights exp(−ε·d) = 1, 1/4, 1/16
    lit = solve(line, "em", {"eps": math.log(4), "scale": "literal"}, use_cache=False)
    np.testing.assert_allclose(lit.Z[0], np.array([16, 4, 1]) / 21, rtol=1e-12)
    np.testing.assert_allclose(lit.Z[1], np.array([1, 4, 1]) / 6, rtol=1e-12)
    # EM is exactly at its budget between neighbours: Z[0,0] / Z[1,0] = (4/7) / (1/4) ≤ e^{ε·1} = 4
    assert metrics.violations(line, r.Z, math.log(4)).violated_pairs == 0
    assert metrics.violations(line, lit.Z, math.log(4)).violated_pairs > 0


def test_lp_spanner_pairs_are_private_and_cost_at_least_the_optimum() -> None:
    """``pairs = spanner`` constrains a greedy t-spanner's edges at ε/t: private on all pairs, never below the LP."""
    pb = build_problem("kotka", 24, n_outputs=8, seed=5)
    eps = 3.0
    span = solve(pb, "lp", {"eps": eps, "solver": "monolithic", "pairs": "spanner", "spanner_t": 1.5},
                 use_cache=False)
    full = solve(pb, "lp", {"eps": eps, "solver": "monolithic", "pairs": "all"}, use_cache=False)
    assert span.status == full.status == "optimal" and not span.degenerate
    assert span.diagnostics["pairs"] < full.diagnostics["pairs"] == pb.k * (pb.k - 1)
    assert metrics.violations(pb, span.Z, eps).violated_pairs == 0
    assert np.allclose(span.Z.sum(axis=1), 1.0, atol=1e-12) and span.Z.min() >= 0
    assert span.objective_m >= full.objective_m * (1 - 1e-9)
    assert metrics.utility_loss_m(pb, span.Z) == pytest.approx(span.objective_m, rel=1e-9)
