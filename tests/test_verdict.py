"""The plain-words verdict (mdpviz.verdict): what happened and whether the promise held, against the claim."""

from __future__ import annotations

import numpy as np

from mdpviz.contract import Result
from mdpviz.metrics import evaluate
from mdpviz.problem import build_problem
from mdpviz.verdict import claim_check, claims_all_pairs, verdict


def _ev(bad: int, checked: int, worst: float = 1.0, metric: str = "haversine") -> dict:
    return {"utility_loss_m": 312.4, "adversary_error_m": 250.0,
            "violations": {"violated_pairs": bad, "checked_pairs": checked, "ratio": bad / checked,
                           "worst_factor": worst, "tolerance": 1e-9, "eps": 5.0, "metric": metric}}


def _z(rows: int = 3, same: bool = False) -> np.ndarray:
    z = np.full((rows, 2), 0.5) if same else np.array([[0.7, 0.3], [0.4, 0.6], [0.2, 0.8]])[:rows]
    return z


def test_all_pairs_claim_kept_and_broken() -> None:
    ok = verdict(Result("em", {}, _z(), "closed form", 5.0), _ev(0, 39_800), label="EM")
    assert ok.level == "ok" and ok.headline == ("EM kept its promise: ε-mDP holds for all 39,800 ordered pairs "
                                                "(ε = 5 km⁻¹).")
    assert ok.short == "holds on all pairs" and "312 m" in ok.meaning and "250 m" in ok.meaning
    broken = verdict(Result("lp", {}, _z(), "optimal", 5.0), _ev(70, 39_800, worst=10.8), label="LP")
    assert broken.level == "error"
    assert "broke its promise: ε-mDP fails on 70 of 39,800 ordered pairs" in broken.headline
    assert "10.8× the allowed ε·d" in broken.headline and broken.short == "broken on 70 of 39,800 pairs"


def test_narrower_claim_is_measured_against_its_own_check() -> None:
    diag = {"violations_claim": {"violated": 0, "checked": 4_032, "unit": "triples (i, j, y)"}}
    r = Result("dista-lp", {}, _z(), "optimal", 2.7, claim="ε_pt-mDP inside each user's neighbourhood",
               diagnostics=diag)
    v = verdict(r, _ev(2_787, 3_540), label="DISTA-LP")
    assert v.level == "ok" and "kept its narrower promise: 0 of 4,032 claimed triples" in v.headline
    assert v.claim_line == ("0 of 4,032 claimed triples violated; 0.79 of all pairs (2,787 of 3,540) violated, "
                            "which this mechanism does not claim.")
    # PAnDA's claim is between users: V_pair (its leak through the uploaded anchor sets, not in Z) beats the
    # constraints the solver enforced (issue 27: the first figure is the one against the claim)
    nested = Result("panda-e", {}, _z(), "optimal", 5.0, claim="(ε, δ)-PmDP",
                    diagnostics={"violations": {"V_pair": {"violated": 3, "checked": 12},
                                                "enforced": {"violated": 0, "checked": 1_482}}})
    assert claim_check(nested) == ("violations.V_pair", 3, 12, "user pairs")
    said = verdict(nested, _ev(0, 3_540))
    assert said.level == "error" and "broke its promise: 3 of 12 claimed user pairs" in said.headline
    # a nested "enforced" check is found when it is the only one, and one broken pair is a broken promise
    enforced = Result("panda-e", {}, _z(), "optimal", 5.0, claim="(ε, δ)-PmDP",
                      diagnostics={"violations": {"enforced": {"violated": 1, "checked": 1_482}}})
    assert claim_check(enforced) == ("violations.enforced", 1, 1_482, "pairs")
    assert verdict(enforced, _ev(0, 3_540)).level == "error"


def test_unmeasured_narrower_claim_is_information_not_alarm() -> None:
    r = Result("lp-ca", {}, _z(), "optimal", 5.0, claim="representatives only: pairs of real secrets may violate")
    v = verdict(r, _ev(699, 3_540), label="LP+CA")
    assert v.level == "info" and "claims ε-mDP only on some pairs" in v.headline
    assert v.claim_line.startswith("What it claims: representatives only")
    assert not claims_all_pairs("all pairs at 2ε (literal exp(−ε·d) is not ε-mDP)")


def test_no_mechanism_time_limit_and_degenerate() -> None:
    none = verdict(Result("lp-bd", {}, None, "time limit", 5.0, bound_m=372.8, timings={"total_s": 60.2}),
                   label="Benders")
    assert none.level == "error" and none.headline == ("Benders: time limit after 1 min 0 s, no mechanism to show. "
                                                       "The best certified lower bound on the loss is 373 m.")
    # a bound and a kept point centimetres apart are told apart, not both '765 m'
    close = verdict(Result("lp-bd", {}, None, "error", 10.0, bound_m=764.618,
                           diagnostics={"feasible_objective_m": 764.6375}), label="Benders")
    assert "lower bound on the loss is 764.62 m" in close.headline and "costs 764.64 m" in close.headline
    partial = verdict(Result("lp-bd", {}, _z(), "time limit", 5.0, timings={"total_s": 60.0}), _ev(0, 6))
    assert partial.level == "warning" and partial.headline.startswith("Stopped at the time limit after 1 min 0 s")
    assert partial.plain.startswith("Stopped at the time limit after 1 min 0 s, not proven optimal: lp-bd kept its")
    for failed in ("error", "solver error (Unknown)"):  # a kept point of a failed solve is no finished mechanism
        kept = verdict(Result("lp-bd", {}, _z(), failed, 5.0, timings={"total_s": 60.0}), _ev(0, 6))
        assert kept.level == "warning" and kept.headline.startswith("Ended by a solver failure after 1 min 0 s")
    said = verdict(Result("panda-e", {}, _z(), "optimal", 5.0, degenerate="Collapsed: all 151 anchor rows merged."),
                   _ev(0, 6), label="PAnDA-e")
    assert said.level == "warning" and said.headline.startswith("PAnDA-e: Collapsed: all 151 anchor rows merged.")
    unstopped = verdict(Result("lp-bd", {}, _z(), "optimal", 5.0, degenerate="Claim covers only neighbour pairs"),
                        _ev(0, 6), label="Benders")
    assert unstopped.headline.startswith("Benders: Claim covers only neighbour pairs. Privacy: ")  # a sentence ends
    # a Z whose rows are all equal says so even when the mechanism did not
    same = verdict(Result("x", {}, _z(same=True), "optimal", 5.0), _ev(0, 6))
    assert same.level == "warning" and "every secret reports with the same distribution" in same.headline


def test_verdict_of_a_real_result() -> None:
    from mdpviz.mechanisms.em import em_matrix

    prob = build_problem("west-oakland", 30, n_outputs=10)
    z = em_matrix(prob, 5.0)
    ev = evaluate(prob, z, 5.0)
    v = verdict(Result("em", {"eps": 5.0}, z, "closed form", 5.0), ev, label="EM")
    assert v.level == "ok" and "all 870 ordered pairs" in v.headline and v.text().count("\n") == 2


def test_an_unproven_mechanism_is_never_green() -> None:
    """Issue 27: a Z whose solve stopped at an iteration limit or stalled is a feasible mechanism, not an optimum."""
    for status in ("iteration limit", "stalled", "time limit", "incomplete"):
        v = verdict(Result("lp-bd", {}, _z(), status, 5.0), _ev(0, 3_540), label="LP+BD")
        assert v.level == "warning" and "not proven optimal" in v.headline and v.short.startswith(status)


def test_pandas_claim_allows_what_delta_allows() -> None:
    """V_pair against (ε, δ)-PmDP: a few violations within δ·n + 3σ keep the claim (PAnDA's own test); more break
    it; at δ = 1e-7 any violation breaks it."""
    def panda(bad: int, delta: float) -> Result:
        return Result("panda-p", {"delta": delta}, _z(), "optimal", 5.0, claim="(ε, δ)-PmDP",
                      diagnostics={"violations": {"V_pair": {"violated": bad, "checked": 2_000}}})

    assert verdict(panda(0, 1e-7), _ev(0, 3_540)).level == "ok"
    assert verdict(panda(1, 1e-7), _ev(0, 3_540)).level == "error"
    kept = verdict(panda(300, 0.15), _ev(0, 3_540))  # δ·n = 300: within the allowance
    assert kept.level == "ok" and "within what δ = 0.15 allows" in kept.headline
    assert verdict(panda(600, 0.15), _ev(0, 3_540)).level == "error"


def test_a_collapsed_release_that_breaks_a_claim_between_users_says_the_uploads_break_it() -> None:
    """The review read "collapsed: every secret gets the same report distribution" beside "2,190 of the 2,448 user
    pairs can be told apart" as a contradiction: rows all alike can only break a pair where PAnDA's first phase (the
    uploaded anchor sets) already spends more than ε·d, and the verdict now says so; not where the rows differ."""
    def panda(same: bool) -> Result:
        return Result("panda-e", {"delta": 1e-7}, _z(same=same), "optimal", 5.0, claim="(ε, δ)-PmDP",
                      diagnostics={"violations": {"V_pair": {"violated": 300, "checked": 2_000}}})

    collapsed = verdict(panda(True), _ev(0, 6), label="PAnDA-e")
    assert collapsed.level == "error" and "collapsed" in collapsed.plain
    assert "can be told apart by more than ε allows, through the anchor sets users upload" in collapsed.plain
    assert "violate ε-mDP, through the anchor sets users upload" in collapsed.headline
    genuine = verdict(panda(False), _ev(0, 6), label="PAnDA-e")
    assert genuine.level == "error" and "upload" not in genuine.plain + genuine.headline
    kept = verdict(Result("panda-e", {"delta": 1e-7}, _z(same=True), "optimal", 5.0, claim="(ε, δ)-PmDP",
                          diagnostics={"violations": {"V_pair": {"violated": 0, "checked": 2_000}}}), _ev(0, 6))
    assert "upload" not in kept.plain + kept.headline


def test_a_claim_measured_at_a_share_of_the_budget_says_which() -> None:
    """The review saw "spends 363 km⁻¹ against the claimed ε = 7 ... and kept its narrower promise" beside "At ε =
    1.82 km⁻¹": DISTA-LP's claim is measured at its LP's share ε_pt, which the plain words now name."""
    diag = {"violations_claim": {"violated": 0, "checked": 456, "unit": "triples (i, j, y)"}}
    spent = "Budget overspent: the exact audit finds the uploads spend 362 km⁻¹, so the release spends 363 km⁻¹"
    share = Result("dista-lp", {"eps": 7.0}, _z(), "optimal", 1.82, claim="ε_pt-mDP inside each neighbourhood",
                   diagnostics=diag, degenerate=spent)
    v = verdict(share, _ev(0, 6), label="DISTA-LP")
    assert "kept its narrower promise (it protects only the 456 triples it claims, at ε = 1.82 km⁻¹)" in v.plain
    assert "Budget overspent" in v.plain
    whole = Result("dista-lp", {"eps": 1.82}, _z(), "optimal", 1.82, claim="ε_pt-mDP inside each neighbourhood",
                   diagnostics=diag)
    assert "at ε =" not in verdict(whole, _ev(0, 6), label="DISTA-LP").plain


def test_cmdp_verdict_states_its_privacy_cost_under_its_own_model() -> None:
    """C-mDP scores itself by the next location's cost: its verdict gives that model's floor and privacy cost beside
    the location marginal's (where Y = X the problem's floor is 0 and says nothing); other mechanisms do not."""
    ev = {**_ev(0, 39_800), "floor_m": 0.0}
    diag = {"loss_m": 1430.0, "floor_m": 816.0, "n_secrets": 40}
    cmdp = verdict(Result("cmdp", {}, _z(), "optimal", 1.0, diagnostics=diag), ev, label="C-mDP")
    assert "a privacy cost of 312 m above the no-privacy floor of 0 m on the location marginal" in cmdp.plain
    assert ("under its own model (the next location's cost), a privacy cost of 614 m above a floor of 816 m"
            in cmdp.plain)
    em = verdict(Result("em", {}, _z(), "closed form", 1.0), ev, label="EM")
    assert "own model" not in em.plain


def test_a_claim_at_a_larger_budget_is_not_eps_mdp_by_design() -> None:
    """The literal forms (EM's exp(−ε·d), AIPO's discretised Laplace with ε′ = ε) promise 2ε only: the mechanisms flag
    themselves degenerate, the headline says so first, never green."""
    from mdpviz.solve import solve

    prob = build_problem("rome", 40, n_outputs=20, cost="distance")
    r = solve(prob, "em", {"eps": 5.0, "scale": "literal"}, use_cache=False)
    v = verdict(r, evaluate(prob, r.Z, r.eps), label="EM")
    assert v.level == "warning" and v.headline.startswith("EM: Not ε-mDP: the literal weights")
    assert "only 2ε-mDP" in r.degenerate and r.message == r.degenerate
    assert "claims ε-mDP only at a larger budget; measured over all pairs at ε = 5 km⁻¹" in v.headline
    assert v.short.startswith("degenerate")
    lap = solve(prob, "laplace-d", {"eps": 5.0, "eps_prime": "eps"}, use_cache=False)
    assert lap.degenerate.startswith("Not ε-mDP: with ε′ = ε it is only 2ε-mDP")
    assert not solve(prob, "em", {"eps": 5.0}, use_cache=False).degenerate
