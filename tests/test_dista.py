"""DISTA-LP (seed 001): surrogates, one-sided noise, the auditor, tightening, Benders, budget and the mechanism."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mdpviz import metrics
from mdpviz.dista import noise as nz
from mdpviz.dista.audit import run_audit
from mdpviz.dista.budget import account
from mdpviz.dista.mechanism import config_from_params
from mdpviz.dista.per_user_benders import TIMED_OUT, benders_loop, build_user_lp, solve_sub
from mdpviz.dista.pipeline import DistaConfig, embed, run
from mdpviz.dista.surrogates import fit_parametric, fit_svd, fit_user, relative_error
from mdpviz.dista.tighten import overestimate, tighten
from mdpviz.dista.users import User, candidates, draw_users, local_blocks, make_user, neighbourhood, raw_upload_bytes
from mdpviz.errors import ParameterError
from mdpviz.mechanisms import get_mechanism
from mdpviz.problem import build_problem
from mdpviz.solve import solve


@pytest.fixture(scope="module")
def pb():
    return build_problem(None, 300, n_outputs=60, seed=3)


def test_users_blocks_and_bytes(pb):
    users = draw_users(pb, 4, 20, 20, np.random.default_rng(0))
    assert len({u.record for u in users}) == 4
    for u in users:
        assert u.hood[0] == u.record and len(set(u.hood)) == 20
        assert u.blocks.dx.shape == (20, 20) and u.blocks.dy.shape == (20, 20)
        assert np.allclose(u.blocks.dx, pb.d[np.ix_(u.hood, u.hood)])
        # N_m really is the nearest set: nothing outside is closer than its farthest member
        outside = np.setdiff1d(np.arange(pb.k), u.hood)
        assert pb.d[u.record, outside].min() >= pb.d[u.record, u.hood].max() - 1e-12
    assert raw_upload_bytes(20, 20) == 9600  # the paper's Table XIII raw upload
    with pytest.raises(ParameterError, match="candidates"):
        draw_users(pb, 2, 20, pb.m + 1, np.random.default_rng(0))


def test_reconstruction_error_falls_with_rank(pb):
    A = make_user(pb, 7, 20, 20).blocks.dx
    errors = [relative_error(A, fit_svd(A, k).reconstruct()) for k in range(1, 8)]
    assert all(b < a for a, b in itertools.pairwise(errors)), errors
    s = np.linalg.svd(A, compute_uv=False)
    k = 5  # Eckart–Young: the squared Frobenius error is the tail of the spectrum
    assert np.linalg.norm(A - fit_svd(A, k).reconstruct()) ** 2 == pytest.approx((s[k:] ** 2).sum(), rel=1e-9)
    # the parametric families fit too, worse than SVD at rank 5
    gauss = fit_parametric(A, "gaussian", maxfev=400)
    assert relative_error(A, gauss.reconstruct()) > errors[4]


def test_noise_is_one_sided():
    rng = np.random.default_rng(1)
    theta = np.array([5.0, 2.0, 1.0, 0.1])
    direction = np.array([-1, -1, 0, 1], dtype=np.int8)
    floor = np.array([0.0, 0.0, -np.inf, -np.inf])
    model = nz.NoiseModel("one-sided", b=0.7, tau=0.2)
    draws = np.stack([nz.perturb(theta, direction, floor, model, rng) for _ in range(4000)])
    assert np.all(draws[:, :2] <= theta[:2] - 0.2 + 1e-12)  # lowering coordinates only go down (by ≥ τ)
    assert np.all(draws[:, :2] >= 0.0)  # and stop at the floor
    assert np.all(draws[:, 3] >= theta[3] + 0.2 - 1e-12)  # raising coordinate only goes up
    assert (draws[:, 2] > theta[2]).any() and (draws[:, 2] < theta[2]).any()  # direction 0 stays two-sided
    assert np.mean(draws[:, 1] == 0.0) == pytest.approx(np.exp(-(2.0 - 0.2) / 0.7), abs=0.03)  # the floor atom
    two = np.stack([nz.perturb(theta, direction, floor, nz.NoiseModel("two-sided", 0.7, 0.2), rng)
                    for _ in range(500)])
    assert (two[:, 0] > theta[0] - 0.2).any()  # the artifact's two-sided noise can overestimate
    # SVD uploads: shrinking singular values of a distance block never raises its Frobenius norm
    A = np.abs(np.subtract.outer(np.arange(10.0), np.arange(10.0)))
    sur = fit_svd(A, 4)
    for _ in range(20):
        th = nz.perturb(sur.theta, sur.direction, sur.floor, model, rng)
        assert np.all(th <= sur.theta) and np.linalg.norm(sur.reconstruct(th)) <= np.linalg.norm(sur.reconstruct())


def test_log_density_is_a_density():
    mu, b = np.array([1.3]), 0.4
    for kind, direction in (("one-sided", -1), ("two-sided", -1), ("one-sided", 0)):
        dirs, floor = np.array([direction], dtype=np.int8), np.array([0.0])
        t = np.linspace(1e-9, 6.0, 200001)[:, None]
        dens = np.exp(nz.log_density(t, mu, dirs, floor, kind, b))[:, 0]
        atom = np.exp(nz.log_density(np.zeros((1, 1)), mu, dirs, floor, kind, b))[0, 0]
        assert np.trapezoid(dens, t[:, 0]) + atom == pytest.approx(1.0, abs=1e-3), kind


@pytest.mark.parametrize("kind", ["one-sided", "two-sided"])
def test_auditor_within_its_stated_bound(pb, kind):
    rep = run_audit(pb, hood=20, n_cand=20, family="svd", rank=5, kind=kind, tau=0.1, samples=200,
                    rng=np.random.default_rng(2), b_fixed=0.5, eps_naive=4.0)
    for nv in rep.naive.values():  # the naive entrywise baseline: b = Δ/ε from half the pairs, tested on the rest
        assert nv["b_km"] == pytest.approx(nv["sensitivity_km_per_km"] / 4.0)
        assert 0.0 <= nv["share_above_eps"] <= 1.0 and nv["upload_bytes"] == 20 * 20 * 8
    for a in rep.blocks.values():
        finite = np.isfinite(a.pl)
        assert finite.any()
        assert np.all(a.pl[finite] <= a.bound[finite] * (1 + 1e-9) + 1e-12)
        assert a.eps_t == pytest.approx(max(a.pl[finite].max(), 0.0))
        if kind == "two-sided":
            assert finite.all() and a.delta_t == 0.0
        else:  # the Monte-Carlo share of infinite loss agrees with its exact expectation
            assert abs(a.delta_t - a.p_infinite) < 0.1
    # target mode: the noise scale is searched so that every upload meets its share
    rep = run_audit(pb, hood=20, n_cand=20, family="svd", rank=5, kind=kind, tau=0.1, samples=100,
                    rng=np.random.default_rng(2), targets={"dx": 0.5, "dy": 0.7, "cy": 0.9})
    assert [rep.blocks[t].eps_t <= v + 1e-12 for t, v in {"dx": 0.5, "dy": 0.7, "cy": 0.9}.items()] == [True] * 3
    assert all(a.delta_t <= 0.1 for a in rep.blocks.values())  # the δ cap keeps b from "passing" by infinite loss


def test_tightening_never_overestimates(pb):
    rng = np.random.default_rng(4)
    user = make_user(pb, 11, 20, 20)
    fit = fit_user(user.blocks.as_dict(), "svd", 5, rng)
    true = {t: (A[np.ix_(fit.perm, fit.perm)] if t == "dx" else A[fit.perm]) for t, A in user.blocks.as_dict().items()}
    model = nz.NoiseModel("one-sided", 0.05, 0.02)
    recon = {t: s.reconstruct(nz.perturb(s.theta, s.direction, s.floor, model, rng)) for t, s in fit.surrogates.items()}
    raw = tighten(recon, 0.0)
    assert max(overestimate(true["dx"], raw["dx"]), overestimate(true["dy"], raw["dy"])) > 0  # the case is not trivial
    dx0 = 0.5 * (np.maximum(recon["dx"], 0) + np.maximum(recon["dx"], 0).T)
    assert np.all(raw["dx"] <= dx0 + 1e-12) and np.all(raw["dy"] <= np.maximum(recon["dy"], 0) + 1e-12)
    D = raw["dx"]
    assert np.allclose(D, D.T) and np.all(np.diag(D) == 0)
    assert np.all(D[:, None, :] <= D[:, :, None] + D[None, :, :] + 1e-12)  # triangle inequality
    gamma = max(overestimate(true["dx"], recon["dx"]), overestimate(true["dy"], recon["dy"]))
    safe = tighten(recon, gamma)  # γ ≥ Δ⁺ (Eq. 64–65): nothing overestimated after tightening
    assert overestimate(true["dx"], safe["dx"]) == 0.0 and overestimate(true["dy"], safe["dy"]) == 0.0
    # the pipeline's audited γ (from simulated users on public data) leaves no real user's distance overestimated
    out = run(pb, DistaConfig(eps=20.0, users=4, seed=5))
    assert out.gamma > 0
    assert all(o.stats["delta_plus_dx_km"] == 0.0 and o.stats["delta_plus_dy_km"] == 0.0 for o in out.users)
    assert out.violations_true["violated"] == 0


def test_benders_cuts_are_valid_and_match_the_direct_lp(pb):
    cfg = DistaConfig(eps=40.0, users=4, gamma_mode="fixed", gamma=0.0, wem_radius=0.0, delta_max=0.3, repair=False,
                      seed=1)
    bd = run(pb, cfg)
    direct = run(pb, DistaConfig(**{**cfg.__dict__, "solver": "direct"}))
    assert bd.lp_size["wem_entries"] > 0 and len(bd.benders.history) > 1  # the master really iterates
    assert bd.benders.upper == pytest.approx(direct.objective_km, rel=1e-6, abs=1e-9)
    assert bd.benders.lower <= bd.benders.upper + 1e-9
    # an optimality cut from HiGHS's duals under-estimates the subproblem at other weights (convexity)
    o = bd.users[0]
    n_w = len(bd.benders.w)
    used = np.unique(np.concatenate([u.user.cand for u in bd.users]))
    w_index = np.full(pb.m, -1)
    w_index[used] = np.arange(len(used))
    lp = build_user_lp(o.server_blocks["dx"], o.server_blocks["dy"], o.server_blocks["cy"], o.user.cand, w_index,
                       n_w, bd.budget.eps_pt, cfg.wem_radius, "half")
    w0 = bd.benders.w
    s0 = solve_sub(lp, w0)
    assert s0.feasible
    rng = np.random.default_rng(0)
    for _ in range(5):
        w1 = w0 * rng.uniform(0.5, 1.0, size=n_w)
        s1 = solve_sub(lp, w1)
        if s1.feasible:
            assert s1.value >= s0.value + s0.grad @ (w1 - w0) - 1e-7


def test_final_mechanism_meets_its_enforced_constraints(pb):
    r = solve(pb, "dista-lp", {"eps": 40.0, "users": 5, "gamma_mode": "fixed", "gamma": 0.0, "wem_radius": 0.1,
                               "repair": False}, use_cache=False)
    assert r.Z is not None and r.Z.shape == (pb.k, pb.m)
    assert np.allclose(r.Z.sum(axis=1), 1.0) and r.Z.min() >= 0
    ve, vc = r.diagnostics["violations_enforced"], r.diagnostics["violations_claim"]
    # without the repair only solver tolerance separates Z from the cone: check it at 1e-6 relative
    assert ve["checked"] == 5 * 20 * 19 * 20
    out = run(pb, DistaConfig(eps=40.0, users=5, gamma_mode="fixed", gamma=0.0, wem_radius=0.1, repair=False))
    for o in out.users:
        Zs = np.empty_like(o.Z)
        Zs[:] = o.Z[o.fit.perm]  # back to the server's order, where d̄ lives
        bound = np.exp(out.budget.eps_pt * o.server_blocks["dx"])[:, :, None] * Zs[None, :, :]
        assert np.all(Zs[:, None, :] <= bound * (1 + 1e-6) + 1e-7)
    # with the repair (default) the enforced constraints hold at the library's strict tolerance
    r2 = solve(pb, "dista-lp", {"eps": 40.0, "users": 5, "gamma_mode": "fixed", "gamma": 0.0, "wem_radius": 0.1},
               use_cache=False)
    assert r2.diagnostics["violations_enforced"]["violated"] == 0 and not r2.degenerate
    assert vc["definition"].startswith("per constraint")
    # the generic all-pairs check runs on the same Z and is labelled as not the claim
    v = metrics.violations(pb, r2.Z, r2.eps)
    assert v.checked_pairs == pb.k * (pb.k - 1)
    src = r2.diagnostics["row_source"]
    assert (src >= 0).sum() > 0 and (src == -1).sum() > 0


@pytest.fixture(scope="module")
def rome():
    """The paper's city: 200 secrets over the whole of Rome (distances up to ~50 km)."""
    return build_problem("rome", 200, n_outputs=60, seed=1, cost="distance")


# a release the noise does not erase and whose distances the audited γ keeps conservative: a large ε, most of it
# for the uploads, full-rank SVD (no truncation error to repair), two-sided noise (finite loss, δ = 0)
LIVE = {"eps": 100.0, "noise": "two-sided", "upload_share": 0.9, "rank": 20, "users": 4, "solver": "direct",
        "wem_radius": 20.0}


def test_a_live_release_is_lp_optimal_against_em_on_the_server_blocks(rome):
    r = solve(rome, "dista-lp", LIVE, use_cache=False)
    assert not r.degenerate, r.degenerate
    assert r.diagnostics["violations_claim"]["violated"] == 0 and r.diagnostics["violations_claim"]["checked"] > 0
    assert r.diagnostics["erased_users"]["dx"] < 4
    # with every entry free, EM on the reconstructed blocks is feasible for the server's LP: the LP is no worse
    out = run(rome, config_from_params(get_mechanism("dista-lp").validate(LIVE)))
    eps_pt = out.budget.eps_pt
    em_cost = 0.0
    for o in out.users:
        dy, cy = o.server_blocks["dy"], o.server_blocks["cy"]
        w = np.exp(-0.5 * eps_pt * dy)
        em_cost += float((cy * w / w.sum(axis=1, keepdims=True)).sum())
    assert out.objective_km <= em_cost * (1 + 1e-6)
    # the per-user losses are real expectations over each user's own row
    Z, _ = embed(rome, out)
    assert r.diagnostics["loss_users_m"] == pytest.approx(sum(
        float(rome.c[u["record"]] @ Z[u["record"]]) for u in r.diagnostics["per_user"]), rel=1e-9)


def test_erased_uploads_are_flagged_and_privacy_is_reported_end_to_end(rome):
    r = solve(rome, "dista-lp", {"eps": 5.0, "users": 4}, use_cache=False)  # the defaults at the paper's ε
    assert r.degenerate.startswith("Uploads erased") and r.diagnostics["erased_users"]["dx"] == 4
    assert r.diagnostics["violations_claim"]["violated"] == 0  # the claim itself holds (rows merged: ratio 1)
    e2e = r.diagnostics["end_to_end"]
    assert e2e["pairs"] == 12 and e2e["breached"] > 0 and e2e["worst_factor"] == np.inf
    assert "against the paper's 0.0001" in r.message and "End to end" in r.message
    assert not r.diagnostics["delta_vs_paper"]["meets_paper"]


def test_release_does_not_depend_on_the_order_of_candidates(rome):
    # two users with the same neighbourhood and candidates as sets, different true records, listed in different
    # orders: with erased uploads (the default at ε = 5) both must release the same distribution over outputs;
    # listing candidates nearest first used to put all mass on the one nearest each true record
    a = 17
    hood = neighbourhood(rome, a, 20)
    b = int(hood[1])
    hood_b = np.concatenate([[b], hood[hood != b]])
    cand = candidates(rome, a, 20)
    near_a = cand[np.argsort(rome.d[a, rome.y_index[cand]])]
    near_b = cand[np.argsort(rome.d[b, rome.y_index[cand]])]
    assert not np.array_equal(near_a, near_b)
    cfg = DistaConfig(eps=5.0, users=1)
    rows = []
    for rec, h, c in ((a, hood, near_a), (b, hood_b, near_b), (a, hood, near_a[::-1])):
        out = run(rome, cfg, users=[User(rec, h, c, local_blocks(rome, h, c))])
        o = out.users[0]
        row = np.zeros(rome.m)
        row[o.user.cand] = o.Z[0]
        rows.append(row)
    np.testing.assert_allclose(rows[0], rows[2], atol=1e-12)  # the same user, candidates listed backwards
    eps_pt = out.budget.eps_pt
    E = eps_pt * rome.d[np.ix_([a, b, a], [a, b, a])]
    assert len(metrics.cone_breaches(np.array(rows), E).i) == 0  # the claim between two records of one N_m


def test_the_authors_recipe_reports_the_budget_it_really_spends(rome):
    preset = get_mechanism("dista-lp").preset("authors").param_dict()
    r = solve(rome, "dista-lp", {**preset, "eps": 5.0, "users": 4}, use_cache=False)
    b = r.diagnostics["budget"]
    assert b["eps_pt"] == pytest.approx(0.26 * 5.0)  # the LP gets the nominal share, as the artifact did
    assert b["eps_spent"] > 5.0 * 10 and r.degenerate.startswith("Budget overspent")
    assert r.diagnostics["audit"]["dx"]["b_km"] == pytest.approx(1 / 5.0)


def test_a_broken_claim_is_flagged(rome):
    r = solve(rome, "dista-lp", {"eps": 5.0, "noise": "two-sided", "rank": 20, "gamma_mode": "fixed",
                                 "gamma": 0.0, "users": 4, "solver": "direct"}, use_cache=False)
    vc = r.diagnostics["violations_claim"]
    assert vc["violated"] > 0 and "Claim not met" in r.degenerate


def test_budget_too_small_for_the_uploads_is_a_clear_error(pb):
    with pytest.raises(ParameterError, match=r"leaving ε_pt = .* Raise ε"):
        solve(pb, "dista-lp", {"eps": 5.0, "budget_mode": "fixed-b", "noise_mult": 1.0}, use_cache=False)
    with pytest.raises(ParameterError, match="ε_dx"):
        account(1.0, {"dx": 0.4, "dy": 0.4, "cy": 0.3}, {"dx": 0, "dy": 0, "cy": 0})
    with pytest.raises(ParameterError, match="guarantees nothing"):
        account(5.0, {"dx": 0.1, "dy": 0.1, "cy": 0.1}, {"dx": 0.5, "dy": 0.4, "cy": 0.3})
    b = account(1.0, {"dx": 0.2, "dy": 0.2, "cy": 0.1}, {"dx": 0.01, "dy": 0, "cy": 0.02})
    assert b.eps_pt == pytest.approx(0.5) and b.delta_total == pytest.approx(0.03)


def test_result_diagnostics_budget_and_bytes(pb):
    r = solve(pb, "dista-lp", {"eps": 8.0, "users": 3}, use_cache=False)
    assert r.degenerate.startswith("Uploads erased")  # accounting only: this release is not one that works
    b = r.diagnostics["budget"]
    assert b["eps_dx"] + b["eps_dy"] + b["eps_cy"] + b["eps_pt"] == pytest.approx(8.0)
    assert r.eps == pytest.approx(b["eps_pt"]) and 0 < r.eps < 8.0
    for u in r.diagnostics["per_user"]:
        assert u["bytes_raw"] == 9600 and u["bytes_surrogate"] < u["bytes_raw"]
        assert u["report"] in r.diagnostics["users_cand"][u["user"]]
    assert r.diagnostics["memory_peak_mb"] > 0 and r.diagnostics["benders_history"]


def test_ui_helpers_build_from_a_result(pb):
    from mdpviz.ui import dista as ui

    r = solve(pb, "dista-lp", {"eps": 20.0, "users": 3, "gamma_mode": "fixed", "wem_radius": 0.05}, use_cache=False)
    from mdpviz.ui.maps import image_layer

    roads = image_layer("roads", "data:,", (pb.x_lon.min(), pb.x_lat.min(), pb.x_lon.max(), pb.x_lat.max()))
    deck = ui.neighbourhood_deck(pb, roads, r)
    ids = [layer.id for layer in deck.layers]
    assert ids == ["roads", "dista-hood", "dista-cand", "dista-report", "dista-true"]
    assert len(deck.layers[1].data) == 3 * 20 and len(deck.layers[4].data) == 3
    budget = ui.budget_figure(r)
    assert [t.name for t in budget.data] == ["ε_dx", "ε_dy", "ε_cy", "ε_pt"]
    assert sum(t.x[0] for t in budget.data) == pytest.approx(20.0)
    assert len(ui.communication_figure(r).data) == 4 and len(ui.audit_figure(r).data) == 3
    assert ui.benders_figure(r) is not None
    # the per-user table in words (the walk of the dashboard found bytes_raw, fit_loss_km, relerr_dx_raw shown)
    table = ui.per_user_table(r)
    assert len(table) == 3 and not [c for c in table.columns if "_" in c.replace("Z_m", "")], list(table.columns)
    assert {"raw upload (bytes)", "relative error, dx block (raw)", "relative error, dx block"} <= set(table.columns)
    with pytest.raises(ValueError):
        ui.budget_figure(solve(pb, "em", {"eps": 5.0}, use_cache=False))


def test_the_deadline_is_honoured_and_a_time_limit_returns_no_z(pb):
    r = solve(pb, "dista-lp", {"eps": 40.0, "users": 3}, time_limit=1e-9, use_cache=False)
    assert r.status == "time limit" and r.Z is None and r.message.startswith("Time limit")
    # inside Benders: a subproblem that stops at the time limit ends the loop with the best point so far
    cfg = DistaConfig(eps=40.0, users=4, gamma_mode="fixed", gamma=0.0, wem_radius=0.0, delta_max=0.3, repair=False,
                      seed=1)
    out = run(pb, cfg)
    used = np.unique(np.concatenate([o.user.cand for o in out.users]))
    w_index = np.full(pb.m, -1)
    w_index[used] = np.arange(len(used))
    lps = [build_user_lp(o.server_blocks["dx"], o.server_blocks["dy"], o.server_blocks["cy"], o.user.cand, w_index,
                         len(used), out.budget.eps_pt, 0.0, "half") for o in out.users]
    calls = []

    def sub(u, w, left):
        calls.append(1)
        return TIMED_OUT if len(calls) > len(lps) else solve_sub(u, w, time_limit=left)

    bd = benders_loop(lps, len(used), sub=sub, max_iter=50)
    assert bd.status == "time limit" and bd.z_free and len(bd.history) == 1
    assert benders_loop(lps, len(used), time_limit=1e-9).status == "time limit"


@pytest.mark.parametrize("eps", [5.0, 15.0])
def test_the_private_cell_variant_is_eps_mdp_end_to_end_on_the_whole_city(rome, eps):
    """Issue 30: `dista-lp:ours` releases (cell, report); P(m, y | x) = P(m | x)·Z_m[x, y] is checked exactly over
    every pair of secrets of whole-city Rome, and so is the marginal the pages draw. It is not degenerate."""
    from mdpviz.dista import cells

    preset = get_mechanism("dista-lp").preset("ours")
    assert "ours" in preset.label and preset.param_dict()["upload"] == "cell"
    r = solve(rome, "dista-lp", {**preset.param_dict(), "eps": eps, "cells": 4}, use_cache=False)
    assert rome.d.max() > 40 and r.Z is not None and not r.degenerate
    mech = get_mechanism("dista-lp")
    assert mech.label_for(r.params).endswith("our variant (not the paper's)")
    assert mech.label_for(mech.defaults()) == mech.label
    assert r.diagnostics["eps_cell"] + r.diagnostics["eps_pt"] == pytest.approx(eps)
    np.testing.assert_allclose(r.Z.sum(axis=1), 1.0, atol=1e-9)
    claim = r.diagnostics["violations_claim"]
    assert claim["violated"] == 0 and claim["checked"] == rome.k * (rome.k - 1)
    assert metrics.violations(rome, r.Z, eps).violated_pairs == 0
    # the same release is not private at a budget below its own: the check can fail
    out = cells.run(rome, eps, 4, 0.3, 20, 0, lambda p, e, t: solve(p, "lp", {"eps": e}, use_cache=False),
                    lambda *a: None, None)
    np.testing.assert_allclose(out.joint.reshape(rome.k, len(out.centres), -1).sum(axis=(1, 2)), 1.0, atol=1e-9)
    assert cells.joint_check(rome, out, 0.5 * eps)["violated"] > 0
    # the cell choice alone is the exponential mechanism: ε_c-mDP, and it favours the nearest centre
    assert metrics.violations(rome, out.pick, out.eps_cell).violated_pairs == 0
    assert (out.pick.argmax(axis=1) == rome.d[:, out.centres].argmin(axis=1)).all()
