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


def _breached_pairs_by_hand(Z: np.ndarray, d: np.ndarray, eps: float) -> set[tuple[int, int]]:
    """The oracle, written apart from ``metrics``: (i, j) with Z[i,y] > e^{ε·d}·Z[j,y]·(1 + 1e-9) for some y."""
    n, m = Z.shape
    return {(i, j) for i in range(n) for j in range(n) for y in range(m)
            if i != j and Z[i, y] > math.exp(eps * d[i, j]) * Z[j, y] * (1 + 1e-9)}


@pytest.mark.parametrize(("excess", "breached"), [(0.5e-9, False), (2e-9, True), (1e-6, True), (1e-4, True)])
def test_the_violation_check_is_relative_1e9_with_no_absolute_slack(line: object, excess: float,
                                                                     breached: bool) -> None:
    """Pinned with its tolerance written out (1e-9, relative; no absolute slack), against a hand-written oracle:
    a check loosened to 1e-3, tightened to 1e-8, or given an absolute slack fails here.

    Rows 1 and 2 are equal; row 0 equals them but for y_0, where Z[0,0] = e^{ε·1 km}·Z[1,0]·(1 + excess), so only
    the pair (0, 1) can breach. A second matrix puts 1e-300 over 1e-310 (a ratio of 1e10, far over e^{ε·d}: an
    absolute slack would hide it) and a positive entry over 0 (an infinite breach).
    """
    eps = 1.0
    d = np.asarray(line.d)  # type: ignore[attr-defined]
    Z = np.array([[0.2, 0.3, 0.5]] * 3)
    Z[0, 0] = math.exp(eps * d[0, 1]) * Z[1, 0] * (1 + excess)
    v = metrics.violations(line, Z, eps)  # type: ignore[arg-type]
    assert v.tolerance == 1e-9
    assert v.violated_pairs == len(_breached_pairs_by_hand(Z, d, eps)) == int(breached)
    tiny = np.array([[1e-300, 0.5, 0.5], [1e-310, 0.5, 0.5], [0.0, 0.5, 0.5]])
    oracle = _breached_pairs_by_hand(tiny, d, eps)
    assert oracle == {(0, 1), (0, 2), (1, 2)}
    assert metrics.violations(line, tiny, eps).violated_pairs == 3  # type: ignore[arg-type]
    assert metrics.evaluate(line, Z, eps)["violations"]["tolerance"] == 1e-9  # type: ignore[arg-type,index]
