"""The yardsticks of a loss (issue 26, item 1): the no-privacy floor, the privacy cost, the exact LP's share."""

from __future__ import annotations

import numpy as np
import pytest

from mdpviz import metrics
from mdpviz.problem import Problem, build_problem
from mdpviz.reference import cached_reference, reference
from mdpviz.solve import solve


@pytest.fixture(scope="module")
def pb() -> Problem:
    return build_problem("kotka", 60, n_outputs=12, cost="distance", seed=4)


def test_the_floor_is_the_loss_of_reporting_the_cheapest_output(pb: Problem) -> None:
    nearest = np.zeros((pb.k, pb.m))
    nearest[np.arange(pb.k), [int(np.argmin(row)) for row in pb.c]] = 1.0  # by loops, not by the library's min
    assert metrics.floor_m(pb) == pytest.approx(metrics.utility_loss_m(pb, nearest), rel=1e-12)
    rng = np.random.default_rng(1)
    for _ in range(20):  # no release at all, private or not, goes below it
        Z = rng.random((pb.k, pb.m))
        Z /= Z.sum(axis=1, keepdims=True)
        assert metrics.utility_loss_m(pb, Z) >= metrics.floor_m(pb)


def test_privacy_costs_are_read_against_the_exact_lp(pb: Problem) -> None:
    eps = 2.0
    assert cached_reference(pb, eps).lp_m is None  # nothing solved yet: the floor only, never a solve
    ref = reference(pb, eps)
    lp = solve(pb, "lp", {"eps": eps})
    assert ref.lp_status == "optimal" and ref.lp_m == pytest.approx(metrics.utility_loss_m(pb, lp.Z), rel=1e-12)
    assert cached_reference(pb, eps) == ref  # now it is cached
    em = solve(pb, "em", {"eps": eps})
    ev = metrics.evaluate(pb, em.Z, eps)
    assert ev["floor_m"] == ref.floor_m and ev["privacy_cost_m"] == pytest.approx(ev["utility_loss_m"] - ref.floor_m)
    assert ref.floor_m < ref.lp_m < ev["utility_loss_m"]
    assert ref.share_of_lp(ref.lp_m) == pytest.approx(1.0)
    share = ref.share_of_lp(ev["utility_loss_m"])
    assert share is not None and share > 1
    words = ref.words(ev["utility_loss_m"])
    assert "above the no-privacy floor" in words and "exact LP" in words


def test_a_stopped_lp_gives_its_bound_not_an_optimum(pb: Problem) -> None:
    ref = reference(pb, 3.0, time_limit=1e-6, use_cache=False)
    assert ref.lp_status == "time limit" and ref.lp_m is None and ref.share_of_lp(1e9) is None


def test_the_dashboard_reads_the_lp_reference_once_per_cache_entry(pb: Problem,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Explore's privacy-cost metric reads the LP's cache entry once, and again only when that entry changes."""
    import streamlit as st

    import mdpviz.ui.cache as cache

    st.cache_resource.clear()
    reads = []
    real = cache.cached_reference
    monkeypatch.setattr(cache, "cached_reference", lambda p, e: reads.append(e) or real(p, e))
    first = cache.reference(pb, 4.0)
    assert cache.reference(pb, 4.0) == first and len(reads) == 1 and first.lp_m is None
    solve(pb, "lp", {"eps": 4.0})  # the entry appears: read again
    assert cache.reference(pb, 4.0).lp_m is not None and len(reads) == 2
    st.cache_resource.clear()


def test_a_stopped_exact_lp_is_its_own_yardstick_and_no_other_result_is() -> None:
    """The kept point of the exact LP's own stopped solve (default settings) is read against that solve's certified
    bound, not told to solve the LP; another mechanism, or the LP at other settings, keeps the reference as it is.
    Whole-city Rome at ε = 1 km⁻¹, a deadline already passed (no clock is read for the outcome)."""
    from mdpviz.reference import with_own_lp

    rome = build_problem("rome", 300, n_outputs=50, cost="distance", seed=11)
    stopped = solve(rome, "lp", {"eps": 1.0}, time_limit=1e-9, use_cache=False)
    kept = stopped.kept_point(rome)
    assert kept is not None and stopped.bound_m is not None
    assert "diagnostics['feasible_Z'] holds" in stopped.message  # where the point is kept, for a programmer ...
    assert "feasible_Z" not in kept.message and "the point shown is a feasible" in kept.message  # ... and shown
    bare = cached_reference(rome, 1.0)
    assert bare.lp_m is None and bare.lp_bound_m is None
    own = with_own_lp(bare, rome, kept)
    assert own.lp_m is None and own.lp_bound_m == stopped.bound_m and own.lp_status == "time limit"
    assert "the exact LP's loss is at least" in own.words(float(kept.objective_m))
    assert with_own_lp(bare, rome, solve(rome, "em", {"eps": 1.0}, use_cache=False)) is bare
    other = solve(rome, "lp", {"eps": 1.0, "scope": "neighbours"}, time_limit=1e-9, use_cache=False)
    assert with_own_lp(bare, rome, other) is bare
