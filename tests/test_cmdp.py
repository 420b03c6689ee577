"""C-mDP (seed 002): generator, CSV loading, blanket discovery, augmented LP invariants (spec §8.4)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mdpviz.cities import load_city
from mdpviz.cmdp.augmented import augmented_distance, build_secrets, full_context_distance, neighbour_pairs
from mdpviz.cmdp.blanket import algorithm1
from mdpviz.cmdp.corpus import generate_trajectories, read_trajectories, station_graph, to_slots
from mdpviz.cmdp.mechanism import solve_cmdp
from mdpviz.cmdp.pipeline import (
    DataSettings,
    context_free_problem,
    holdout_loss,
    prepare,
    rows_for_slots,
    solve_context,
    true_loss_context_free,
)
from mdpviz.cmdp.solver import check
from mdpviz.errors import MdpvizError, ProblemError
from mdpviz.mechanisms import get_mechanism
from mdpviz.problem import build_problem
from mdpviz.solve import solve

CITY = "helsinki"
SMALL = {"vehicles": 250, "steps": 40, "max_secrets": 80}
SETTINGS = DataSettings(n_vehicles=250, n_steps=40)


@pytest.fixture(scope="module")
def pb():
    return build_problem(CITY, 12, all_outputs=True, seed=3)


@pytest.fixture(scope="module")
def data(pb):
    return prepare(pb, SETTINGS)


def _sizes(data, context):
    return data.sizes(context)[0]


def test_mechanism_rows_are_distributions_and_enforced_domain_is_clean(pb) -> None:
    r = solve(pb, "cmdp", {"eps": 5.0, **SMALL}, use_cache=False)
    assert r.ok and r.status == "optimal"
    Q = r.diagnostics["Q"]
    for M in (r.Z, Q):
        assert M.shape[1] == pb.m
        assert np.allclose(M.sum(axis=1), 1.0, atol=1e-9)
        assert M.min() >= 0.0 and M.max() <= 1.0
    assert r.Z.shape == (pb.k, pb.m)
    v = r.diagnostics["violations_enforced"]
    assert v["checked"] > 0 and v["violated"] == 0 and v["worst_log_ratio"] <= 1 + 1e-6
    assert r.diagnostics["violations_location"]["checked"] == pb.k * (pb.k - 1) * pb.m
    # independent re-check of Eq. 24 from the returned secrets, not from the solver's own bookkeeping
    d = pb.d
    ctx = [[int(v) for v in c.split(">")] if c else [] for c in r.diagnostics["secret_context"]]
    lags = np.array([c + [-1] * (3 - len(c)) for c in ctx])
    dist = d[np.ix_(r.diagnostics["secret_station"], r.diagnostics["secret_station"])].copy()
    for tau in range(lags.shape[1]):
        both = (lags[:, tau, None] >= 0) & (lags[None, :, tau] >= 0)
        at = np.maximum(lags[:, tau], 0)
        dist += np.where(both, 0.5 ** (tau + 1) * d[np.ix_(at, at)], 0)
    i, j = np.nonzero((dist <= 5.0) & ~np.eye(len(dist), dtype=bool))
    assert np.all(Q[i] <= np.exp(5.0 * dist[i, j])[:, None] * Q[j] * (1 + 1e-6) + 1e-9)
    # the page's data is there
    ex = r.diagnostics["examples"]
    assert ex and {"polyline_lat", "context", "next_station", "task", "row"} <= set(ex[0])
    assert sum(r.diagnostics["blanket_hist"].values()) == r.diagnostics["corpus"]["complete_slots"]
    assert "marginal" in r.claim


def test_empty_blanket_is_the_plain_lp(pb, data) -> None:
    eps = 4.0
    sol = solve_context(data, _sizes(data, "none"), eps, eta=100.0)
    assert sol.secrets.n == pb.k
    cf = context_free_problem(data, "context-averaged")
    lp = solve(cf, "lp", {"eps": eps}, use_cache=False)
    assert lp.ok
    assert sol.loss_m == pytest.approx(true_loss_context_free(data, lp.Z), rel=1e-5)
    # zero decay weights collapse every context at a location onto one row: the plain LP again
    sol0 = solve_context(data, _sizes(data, "first-order"), eps, eta=100.0, decay=0.0)
    assert sol0.secrets.n > pb.k
    assert sol0.loss_m == pytest.approx(sol.loss_m, rel=1e-5)


@pytest.mark.parametrize("context", ["first-order", "predicted", "oracle"])
def test_replicated_context_free_mechanism_is_feasible_and_never_better(pb, data, context) -> None:
    eps = 4.0
    sol = solve_context(data, _sizes(data, context), eps, max_secrets=80)
    # the best context-invariant mechanism: the plain mDP LP over locations on the context-averaged cost
    plain = solve_context(data, _sizes(data, "none"), eps)
    Z = np.zeros_like(plain.Q)
    Z[plain.secrets.station] = plain.Q
    replicated = Z[sol.secrets.station]
    assert check(replicated, sol.d_aug, sol.near, eps, "replicated").violated == 0
    invariant_loss = true_loss_context_free(data, Z)
    assert sol.loss_m <= invariant_loss * (1 + 1e-6)
    # the replicated rows have the same loss under the augmented cost model
    cost = sol.secrets.next_prob @ pb.c
    assert float(np.sum(sol.secrets.prior[:, None] * cost * replicated)) == pytest.approx(invariant_loss, rel=1e-9)
    if context != "first-order":
        return
    # with real momentum in the corpus, the context must actually help (a strict gain, not a tie)
    assert sol.loss_m < invariant_loss * 0.99


def test_loss_non_increasing_in_eps(data) -> None:
    sizes = _sizes(data, "predicted")
    losses = [solve_context(data, sizes, eps, max_secrets=80).loss_m for eps in (1.0, 3.0, 9.0)]
    assert all(b <= a * (1 + 1e-6) for a, b in itertools.pairwise(losses)), losses
    assert losses[-1] < losses[0]


def test_reduced_distance_bounds_full_distance(pb, data) -> None:
    ok = data.complete
    sizes = _sizes(data, "predicted")
    sec = build_secrets(data.slots.station[ok], data.slots.lags[ok], data.slots.next_station[ok], sizes, pb.k)
    d_red = augmented_distance(sec, pb.d, 0.5)
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, ok.sum(), 2000), rng.integers(0, ok.sum(), 2000)
    lags = data.slots.lags[ok]
    full = full_context_distance(lags[a], lags[b], data.slots.station[ok][a], data.slots.station[ok][b], pb.d, 0.5)
    red = d_red[sec.slot_secret[a], sec.slot_secret[b]]
    assert np.all(red <= full + 1e-12)
    assert (red < full - 1e-9).any()  # the bound is not vacuous


@pytest.mark.parametrize(("memory", "expected"), [("1", 1), ("2", 2)])
def test_discovery_recovers_planted_order(pb, memory, expected) -> None:
    net = load_city(CITY)
    g = station_graph(net, pb.x_node)
    tr = generate_trajectories(net, pb.x_node, n_vehicles=600, n_steps=50, dependence=4.0, dest_weight=0.0,
                               memory=memory, seed=1, graph=g)
    sl = to_slots(tr, g.cell, 3)
    ok = sl.complete
    size, pvals = algorithm1(sl.station[ok], sl.lags[ok], g.k)
    assert size == expected, pvals
    assert (sl.oracle_order[ok] == expected).mean() > 0.95


def test_fixed_time_slots(pb) -> None:
    """``slot_s`` > 0 cuts each trajectory into fixed time slots (the next location may be the same station);
    0 keeps one slot per station visit (the next location is always another station)."""
    net = load_city(CITY)
    g = station_graph(net, pb.x_node)
    tr = generate_trajectories(net, pb.x_node, n_vehicles=30, n_steps=20, interval_s=5.0, seed=3, graph=g)
    visits = to_slots(tr, g.cell, 3)
    assert visits.station.tolist() == to_slots(tr, g.cell, 3, slot_s=0.0).station.tolist()
    nxt = visits.next_station >= 0
    assert (visits.next_station[nxt] != visits.station[nxt]).all()
    slots = to_slots(tr, g.cell, 3, slot_s=15.0)
    per_traj = np.bincount(tr.traj)
    assert np.array_equal(np.bincount(slots.traj), (per_traj + 2) // 3)  # every third 5-s fix starts a slot
    same = slots.next_station == slots.station
    assert same.any() and (slots.next_station[slots.next_station >= 0] != slots.station[slots.next_station >= 0]).any()
    assert len(slots.station) > len(visits.station)


def test_classifier_and_lookup_report_metrics(data) -> None:
    assert data.discovery.groups["tested"].any()
    assert data.classifier is not None
    m = data.classifier.metrics["train"]
    assert 0.0 <= m["accuracy"] <= 1.0 and m["n"] > 0
    look, note = data.sizes("predicted", predictor="lookup")
    assert "lookup" in note and look.min() >= 1 and look.max() <= SETTINGS.max_lag


def test_generated_csv_round_trip_and_user_data(pb, tmp_path: Path) -> None:
    net = load_city(CITY)
    tr = generate_trajectories(net, pb.x_node, n_vehicles=40, n_steps=30, seed=2)
    path = tmp_path / "traces.csv"
    tr.to_frame().to_csv(path, index=False)
    back = read_trajectories(path, net)
    assert back.n_trajectories == 40
    order = np.lexsort((tr.time_s, tr.ids[tr.traj]))
    assert np.array_equal(back.node, tr.node[order])
    assert np.allclose(back.time_s, np.floor(tr.time_s[order]))
    data = prepare(pb, DataSettings(min_group=20), trajectories=back)
    params = {**get_mechanism("cmdp-truemb").defaults(), "eps": 5.0}
    r = solve_cmdp(pb, params, "oracle", lambda *_: None, None, "cmdp-truemb", data=data)
    assert r.ok and "no generator record" in r.diagnostics["blankets"]
    assert r.diagnostics["corpus"]["source"] == "csv"


GOOD = "trajectory_id,timestamp,lat,lon\n"


def _lines(*rows: str) -> str:
    return GOOD + "\n".join(rows) + "\n"


@pytest.mark.parametrize(("text", "match"), [
    ("id,lat,lon\na,60.17,24.94\na,60.171,24.941\n", "timestamp"),
    ("trajectory_id,timestamp,lat\na,2024-01-01T08:00:00Z,60.17\n", "`lon`"),
    (_lines("a,2024-01-01T08:00:00Z,60.17,24.94", "a,yesterday noon,60.171,24.941"), "unparsable timestamp"),
    (_lines("a,2024-01-01T08:00:00Z,60.17,24.94", "a,2024-01-01T08:00:05Z,north,24.941"), "non-numeric"),
    (_lines("a,2024-01-01T08:00:00Z,60.17,24.94", "a,2024-01-01T08:00:05Z,48.85,2.35"), "from the road network"),
    (_lines("a,2024-01-01T08:00:00Z,60.17,24.94", "a,2024-01-01T08:00:05Z,60.171,24.941",
            "b,2024-01-01T08:00:00Z,60.17,24.94"), "single fix"),
    ("", "could not be read"),
    (GOOD, "no rows"),
])
def test_malformed_trajectory_csv(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(ProblemError, match=match) as info:
        read_trajectories(path, load_city(CITY))
    assert isinstance(info.value, MdpvizError)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written on failure


def test_problem_without_network_or_too_large_is_refused() -> None:
    big = build_problem(CITY, 120, n_outputs=10)
    with pytest.raises(ProblemError, match="k ≤"):
        solve(big, "cmdp", {"eps": 5.0}, use_cache=False)
    pts = pd.DataFrame({"lat": [60.17, 60.171, 60.172], "lon": [24.94, 24.941, 24.943]})
    from mdpviz.problem import problem_from_points
    free = problem_from_points(pts)
    with pytest.raises(ProblemError, match="road network"):
        solve(free, "cmdp-markov", {"eps": 5.0}, use_cache=False)


def test_neighbour_rules_differ_only_in_pairs(pb, data) -> None:
    sizes = _sizes(data, "first-order")
    aug = solve_context(data, sizes, 4.0, eta=0.6, neighbours="augmented")
    base = solve_context(data, sizes, 4.0, eta=0.6, neighbours="base")
    d_base = pb.d[np.ix_(aug.secrets.station, aug.secrets.station)]
    assert np.array_equal(base.near, neighbour_pairs(aug.d_aug, d_base, 0.6, "base"))
    assert base.near.sum() > aug.near.sum()  # the appendix rule constrains more pairs
    assert base.loss_m >= aug.loss_m * (1 - 1e-6)
    assert base.enforced.violated == 0 and aug.enforced.violated == 0
    # fewer neighbours (smaller η) never raise the optimum (spec §8.4 #4)
    wide = solve_context(data, sizes, 4.0, eta=5.0)
    assert aug.loss_m <= wide.loss_m * (1 + 1e-6)
    assert aug.near.sum() < wide.near.sum()


def test_trajectories_page_renders_maps_and_both_violation_views() -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app_pages" / "trajectories.py"),
                           default_timeout=120)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    shown = {m.label: m.value for m in at.metric}
    assert shown["Violations of its claim"].startswith("0 / ")
    # C-mDP's secrets are station-context pairs, named so beside the sidebar's K stations (the review read "Secrets
    # 147" beside "Stations K 16")
    assert int(shown["Station-context pairs"].replace(",", "")) > at.sidebar.slider(key="traj_k").value
    assert int(shown["Violations, location only"].split(" / ")[1].replace(",", "")) > 0
    # the location-only count says it is not claimed (no contradiction with "0 violations of its claim")
    assert next(m for m in at.metric if m.label == "Violations, location only").delta == "not claimed"
    assert len(at.get("deck_gl_json_chart")) == 3  # trajectory, C-mDP row, context-free LP row
    # built from the schema: the registry's variants and labels, the variant's station limit, its preset's ε grid
    from mdpviz.cmdp_comparison import BEST_LP_LABEL
    from mdpviz.mechanisms import mechanisms

    variants = [m for m in mechanisms() if m.family == "cmdp"]
    picker = at.sidebar.selectbox(key="traj_mech")
    assert picker.options == [m.label for m in variants] and picker.value == "cmdp"
    assert at.sidebar.slider(key="traj_k").max == get_mechanism("cmdp").max_k
    assert "ε grid (0.5, 1, 1.5, 2, 2.5 km⁻¹)" in " ".join(c.value for c in at.caption)
    # the comparison the library reports: against the best context-invariant LP, labelled
    loss = next(m for m in at.metric if m.label == "C-mDP loss (m)")
    assert loss.delta.endswith(" % vs best LP") and loss.delta[0] in "+-"
    against = next(c.value for c in at.caption if c.value.startswith("**Against the best LP that ignores context**"))
    assert BEST_LP_LABEL in against and f"**{loss.delta.removesuffix(' vs best LP')}**" in against
    assert any(c.value.startswith(f"{BEST_LP_LABEL} row for station") for c in at.caption)


def test_compare_measures_against_the_best_context_invariant_lp(pb) -> None:
    """``vs_lp_pct`` is against the LP on the context-averaged cost (``best_context_free``, what the Trajectories
    page shows), which no context-free mechanism beats under the true model, the no-motion LP included."""
    from mdpviz.cmdp_comparison import BEST_LP_LABEL, NO_MOTION_LP_LABEL, best_context_free, compare_problem, vs_lp_pct

    params = {**get_mechanism("cmdp").defaults(), **SMALL, "eps": 5.0}
    rows = {r["label"]: r for r in compare_problem(pb, params, (5.0,), use_cache=True)}
    best, best_loss = best_context_free(pb, params)
    assert best.ok and not best.degenerate and best_loss is not None
    assert rows[BEST_LP_LABEL]["loss_m"] == pytest.approx(best_loss, rel=1e-12)
    assert rows[BEST_LP_LABEL]["vs_lp_pct"] == 0.0
    assert rows[NO_MOTION_LP_LABEL]["loss_m"] >= best_loss * (1 - 1e-6)
    ours = solve(pb, "cmdp", params)  # from the disk cache compare_problem filled
    assert rows["LP+C-mDP"]["vs_lp_pct"] == pytest.approx(vs_lp_pct(ours.objective_m, best_loss), rel=1e-12)


def test_slots_map_back_to_their_secrets_and_holdout_agrees_for_context_free(pb, data) -> None:
    ok = data.complete
    sol = solve_context(data, _sizes(data, "predicted"), 4.0, max_secrets=80)
    sl = data.slots
    rows = rows_for_slots(sol.secrets, sl.station[ok], sl.lags[ok], None, pb.k)  # prefix-free: the trie leaf
    assert np.array_equal(rows, sol.secrets.slot_secret)
    per_slot = solve_context(data, _sizes(data, "predicted"), 4.0, max_secrets=80, domain="per-slot")
    rows = rows_for_slots(per_slot.secrets, sl.station[ok], sl.lags[ok], per_slot.secrets.slot_size, pb.k)
    assert np.array_equal(rows, per_slot.secrets.slot_secret)
    none = solve_context(data, _sizes(data, "none"), 4.0)
    by_station = np.zeros_like(none.Q)
    by_station[none.secrets.station] = none.Q
    assert holdout_loss(data, none.Q, none.secrets, "none") == pytest.approx(holdout_loss(data, by_station, None))
    held = holdout_loss(data, sol.Q, sol.secrets, "predicted")
    assert 0.5 * sol.loss_m < held < 2.0 * sol.loss_m


def test_posterior_leakage_equals_the_row_log_ratio(data) -> None:
    """Spec §8.4 #9 (Appendix B): the prior cancels, so PL from posteriors is the log-ratio of Q's rows."""
    sol = solve_context(data, _sizes(data, "first-order"), 4.0, max_secrets=80)
    p, Q = sol.secrets.prior, sol.Q
    Q = Q[:, (p @ Q) > 0]  # outputs that can be reported at all
    i, j = np.nonzero(sol.near & (p[:, None] > 0) & (p[None, :] > 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        post = p[:, None] * Q / (p @ Q)[None, :]  # Pr[s | y]
        pl = np.log(post[i] / post[j]) - np.log(p[i] / p[j])[:, None]
        lr = np.log(Q[i] / Q[j])
    finite = np.isfinite(lr)
    assert finite.any()
    assert np.allclose(pl[finite], lr[finite], atol=1e-8)
    assert np.all(np.abs(lr[finite]) <= 4.0 * sol.d_aug[i, j][:, None].repeat(Q.shape[1], 1)[finite] + 1e-6)


def test_prefix_free_domain_and_longer_blankets_pay_off_on_third_order_walks(pb) -> None:
    data3 = prepare(pb, DataSettings(n_vehicles=400, n_steps=40, memory="3", dest_weight=0.0, dependence=4.0))
    first = solve_context(data3, _sizes(data3, "first-order"), 4.0, max_secrets=80)
    oracle = solve_context(data3, _sizes(data3, "oracle"), 4.0, max_secrets=80)
    sec = oracle.secrets
    assert (sec.size >= 2).any()
    # no context is a strict prefix of another's at the same location
    for a in np.flatnonzero(sec.size >= 1):
        same = (sec.station == sec.station[a]) & (sec.size > sec.size[a])
        assert not (same & np.all(sec.lags[:, :sec.size[a]] == sec.lags[a, :sec.size[a]], axis=1)).any()
    # the second lag carries information about the next location, and the LP uses it
    assert oracle.loss_m < first.loss_m * 0.999, (oracle.loss_m, first.loss_m)
    per_slot = solve_context(data3, _sizes(data3, "oracle"), 4.0, max_secrets=80, domain="per-slot")
    assert per_slot.enforced.violated == 0 and oracle.enforced.violated == 0


# ---- the paper's city: stations in a Rome region, and one station limit for every variant and the dashboard

@pytest.mark.parametrize("name", ["cmdp", "cmdp-markov", "cmdp-truemb"])
def test_every_variant_meets_its_claim_on_a_rome_region(name: str) -> None:
    rome = build_problem("rome", 10, all_outputs=True, seed=2, region="centre:2")
    r = solve(rome, name, {"eps": 1.0, "vehicles": 200, "steps": 30, "max_secrets": 40}, use_cache=False)
    assert r.status == "optimal" and not r.degenerate
    Q = r.diagnostics["Q"]
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-9)
    assert Q.min() >= 0.0
    v = r.diagnostics["violations_enforced"]
    assert v["violated"] == 0 and v["checked"] > 0


def test_whole_rome_at_paper_scale_is_refused_with_the_schema_limit() -> None:
    from mdpviz.cmdp.pipeline import MAX_STATIONS

    assert {get_mechanism(n).max_k for n in ("cmdp", "cmdp-markov", "cmdp-truemb")} == {MAX_STATIONS}
    rome = build_problem("rome", 150, seed=1, cost="distance")
    with pytest.raises(ProblemError, match=rf"at most K = {MAX_STATIONS} stations.*K = 150.*--region"):
        solve(rome, "cmdp", {"eps": 5.0}, use_cache=False)


def test_the_cone_repair_fixes_row_sums_inside_the_cone() -> None:
    """Dividing each row by its own sum breaks a pair by the ratio of the two sums: two rows at the bound of
    their pair, with sums 1 and 1 + 1e-7, breach the 1e-9 check after plain renormalisation, not after the fix."""
    from mdpviz.cmdp.solver import cone_repair
    from mdpviz.metrics import cone_breaches

    expo = np.array([[0.0, 1.0], [1.0, 0.0]])
    # q[0,0] = e·q[1,0] exactly, at the bound; row 1 sums to 1 + 1e-7 (a solver's tolerance), row 0 to 1
    q = np.array([[0.5, 0.5], [0.5 * np.exp(-1.0), 1 - 0.5 * np.exp(-1.0) + 1e-7]])
    assert not len(cone_breaches(q, expo).i)
    plain = q / q.sum(axis=1, keepdims=True)
    assert len(cone_breaches(plain, expo).i) == 1  # what renormalising row by row did
    fixed, excess = cone_repair(q, expo, np.ones((2, 2), dtype=bool), np.ones((2, 2)))
    assert np.allclose(fixed.sum(axis=1), 1.0, rtol=0, atol=1e-12) and fixed.min() >= 0
    assert not len(cone_breaches(fixed, expo).i) and excess == pytest.approx(1e-7, rel=1e-6)


def test_our_variant_keeps_contexts_and_its_claim_on_the_whole_city() -> None:
    """Issue 30: `cmdp` preset `ours` (8 stations, a cap that does not bind, a corpus of planted order 3) keeps
    secrets with two and three lags, meets its enforced claim on 8 stations spread over the whole of Rome, and its
    contexts pay: its loss is below LP+Markov's on the same corpus."""
    preset = get_mechanism("cmdp").preset("ours")
    assert "ours" in preset.label and preset.problem_dict()["k"] == 8
    rome = build_problem("rome", 8, all_outputs=True, seed=0, region="whole")
    assert rome.d.max() > 15
    params = {**preset.param_dict(), "eps": 1.0, "vehicles": 400, "steps": 40}
    r = solve(rome, "cmdp", params, use_cache=False)
    markov = solve(rome, "cmdp-markov", params, use_cache=False)
    assert r.status == "optimal" and not r.degenerate
    v = r.diagnostics["violations_enforced"]
    assert v["violated"] == 0 and v["checked"] > 0
    np.testing.assert_allclose(r.diagnostics["Q"].sum(axis=1), 1.0, atol=1e-9)
    assert r.diagnostics["n_secrets"] < preset.param_dict()["max_secrets"]  # the cap does not bind
    assert (r.diagnostics["secret_size"] == 3).any() and (r.diagnostics["secret_size"] == 2).any()
    assert r.objective_m < markov.objective_m


def test_every_method_reports_its_floor_and_privacy_cost(pb) -> None:
    """Issue 26 on trajectories: each row of the comparison states the no-privacy floor of its secret domain (each
    secret reporting its cheapest output under the same model) and loss − floor; context lowers the floor."""
    from mdpviz.cmdp_comparison import compare, corpus

    params = {**get_mechanism("cmdp").defaults(), "vehicles": 200, "steps": 30, "max_secrets": 60}
    rows = {r["label"]: r for r in compare(corpus(pb, params), params, [2.0])}
    for r in rows.values():
        assert 0 <= r["floor_m"] <= r["loss_m"] + 1e-6
        assert r["privacy_cost_m"] == pytest.approx(r["loss_m"] - r["floor_m"])
    free = {r["floor_m"] for label, r in rows.items() if not label.startswith("LP+")}
    assert len(free) == 1  # the context-free methods share one floor
    assert rows["LP+TrueMB"]["floor_m"] <= free.pop() + 1e-9
