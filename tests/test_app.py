"""Dashboard pages through Streamlit's AppTest: default render, a parameter change, a small solve, bad URLs.

Every test starts from ``app.py`` (the router) and switches page, as a user would. The problems are the
default small ones (K = 200, |Y| = 50) or smaller, with the instant mechanisms, so the whole file stays fast. The
maps' tests are in ``test_app_maps.py``; the UI's pure helpers, refusals, presets and glossary in
``test_app_explains.py``; the helpers shared by the three in ``app_helpers.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from app_helpers import app, metric, registered, solve_button, texts

from mdpviz.errors import ProblemError
from mdpviz.mechanisms import mechanisms
from mdpviz.ui import state

# ---------------------------------------------------------------- Home


def test_home_explains_eps_in_metres_and_opens_explore() -> None:
    at = app()
    assert "139 m" in texts(at.markdown)  # ln 2 / 5 km⁻¹
    at.select_slider(key="home_eps").set_value(10.0).run()
    assert "69 m" in texts(at.markdown) and "139 m" not in texts(at.markdown)
    next(b for b in at.button if b.label.startswith("Open Explore")).click().run()
    assert not at.exception
    assert "Not solved yet" in texts(at.info)
    assert at.session_state["mp.em.eps"] == 10.0 and at.session_state["k"] == state.DEFAULTS["k"]


def test_home_invalid_query_shows_notice() -> None:
    at = app(query={"city": "atlantis"})
    assert "Unknown city `atlantis`" in texts(at.warning)


# ---------------------------------------------------------------- Explore


def test_explore_default_render_then_small_solve() -> None:
    at = app("app_pages/explore.py")
    assert "Not solved yet" in texts(at.info)
    assert not at.metric
    solve_button(at).click().run()
    assert not at.exception
    loss = float(metric(at, "Utility loss (m)"))
    assert 0 < loss < 2000
    assert metric(at, "Violations of its claim") == "0"  # EM with exp(−εd/2): ε-mDP on all pairs
    assert "of 39,800 ordered pairs of secrets checked" in texts(at.caption)
    assert "kept its promise" in texts(at.success) and "privacy cost of" in texts(at.success)
    assert "Terms used above: ε (km⁻¹), kept its promise, no-privacy floor, privacy cost" in texts(at.caption)
    assert float(metric(at, "Adversary error (m)")) > 0
    assert "Per phase: build" in texts(at.caption)
    assert at.query_params["mech"] == "em" and at.query_params["eps"] == "5"
    # the result is cached: a fresh session with the same URL shows it without pressing Solve
    again = app("app_pages/explore.py", query={"mech": "em", "eps": "5"})
    assert metric(again, "Utility loss (m)") == metric(at, "Utility loss (m)")


def test_explore_parameter_change_lowers_loss() -> None:
    at = app("app_pages/explore.py")
    solve_button(at).click().run()
    loss5 = float(metric(at, "Utility loss (m)"))
    at.select_slider(key="mp.em.eps").set_value(20.0)  # inside the form: sent with the Solve click
    solve_button(at).click().run()
    assert not at.exception
    assert float(metric(at, "Utility loss (m)")) < loss5  # a larger ε allows a more accurate mechanism
    assert at.query_params["eps"] == "20"


def test_explore_invalid_query_values_fall_back_with_notices() -> None:
    at = app("app_pages/explore.py", query={"k": "abc", "mech": "bogus", "metric": "manhattan", "eps": "-3"})
    notices = texts(at.warning)
    assert "`k=abc` is not a whole number" in notices
    assert "Unknown mechanism `bogus`" in notices
    assert "`metric=manhattan`" in notices
    assert "`eps`" in notices
    assert at.session_state["k"] == state.DEFAULTS["k"] and at.session_state["mech"] == "em"
    assert at.session_state["mp.em.eps"] == 5.0


def test_explore_view_controls_do_not_resolve_and_show_attacker_view() -> None:
    at = app("app_pages/explore.py", query={"k": "60", "m": "20"})
    solve_button(at).click().run()
    at.number_input(key="secret").set_value(3).run()
    assert "**x3**" in texts(at.markdown)
    at.radio(key="colour_mode").set_value("attacker's posterior Pr[x | y]").run()
    assert not at.exception
    assert at.selectbox(key="attack_y").value is not None
    at.radio(key="colour_mode").set_value("expected loss (m)").run()
    assert not at.exception
    assert metric(at, "Utility loss (m)")  # still shown: the view change kept the result


def test_explore_library_error_is_a_message_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import streamlit as st

    from mdpviz.ui import cache

    def broken(*args, **kwargs):
        raise ProblemError("`k` = 7 is out of range: try another K.")

    st.cache_resource.clear()
    monkeypatch.setattr(cache, "build_problem", broken)
    at = app("app_pages/explore.py", query={"k": "77"})
    assert "out of range: try another K" in texts(at.error)
    st.cache_resource.clear()


def test_explore_warns_before_a_slow_solve() -> None:
    at = app("app_pages/explore.py", query={"mech": "lp", "k": "300"})
    assert texts(at.warning).count("may take minutes") == 1  # once, not in the sidebar and again beside the map
    assert "Not solved yet" in texts(at.info)  # nothing was solved on page load
    assert "optimal rows are dense" in texts(at.warning)  # Helsinki at ε = 5: ε·d is small


def test_explore_does_not_warn_where_the_lp_is_fast() -> None:
    # Rome at ε = 5 km⁻¹: ε·d is large between most secrets and the exact LP at K = 500 takes about a second
    at = app("app_pages/explore.py", query={"mech": "lp", "k": "500", "city": "rome", "eps": "5"})
    assert not at.exception
    assert "may take minutes" not in texts(at.warning)
    # Benders on the same problem keeps the warning: it is not the structured engine the rule was measured on
    at = app("app_pages/explore.py", query={"mech": "lp-bd", "k": "500", "city": "rome", "eps": "5"})
    assert "may take minutes" in texts(at.warning)


def test_every_registered_mechanism_gets_controls() -> None:
    at = app("app_pages/explore.py")
    for mech in mechanisms():
        at.selectbox(key="mech").set_value(mech.name).run()
        assert not at.exception, (mech.name, [e.value for e in at.exception])
        keys = {w.key for w in [*at.sidebar.select_slider, *at.sidebar.slider, *at.sidebar.selectbox,
                                *at.sidebar.checkbox, *at.sidebar.number_input]}
        for p in mech.params:
            assert state.param_key(mech.name, p.name) in keys, (mech.name, p.name)


def test_parameters_a_mode_does_not_read_are_greyed_out_and_say_why() -> None:
    """The review moved DISTA-LP's "users M" slider with the private-cell upload, where it does nothing (the
    description said so, the slider did not): with upload = cell the surrogate settings are disabled and labelled,
    and with upload = surrogate the cell settings are (from the next run: the sidebar's form holds a change until
    Solve)."""
    at = app("app_pages/explore.py")
    at.selectbox(key="mech").set_value("dista-lp").run()
    at.session_state[state.param_key("dista-lp", "upload")] = "cell"  # the sidebar's form holds it until Solve
    at.run()
    assert not at.exception

    def widget(name: str) -> Any:
        key = state.param_key("dista-lp", name)
        return next(w for w in [*at.sidebar.slider, *at.sidebar.selectbox, *at.sidebar.select_slider,
                                *at.sidebar.checkbox, *at.sidebar.number_input] if w.key == key)

    assert widget("users").disabled and widget("users").label.endswith("(unused here)")
    assert "Used only when upload is surrogate" in widget("users").help
    assert not widget("cells").disabled and not widget("eps").disabled and not widget("candidates").disabled
    at.session_state[state.param_key("dista-lp", "upload")] = "surrogate"
    at.run()
    assert not widget("users").disabled and widget("cells").disabled


def test_the_region_box_example_is_a_disc_in_the_chosen_city() -> None:
    """The review typed the box's example, a point in Rome, on the default Helsinki and lost what it typed."""
    from mdpviz.cities import city_info

    for city in ("rome", "helsinki"):
        at = app("app_pages/explore.py", query={"city": city})
        lat, lon = city_info(city).centre
        box = next(t for t in at.sidebar.text_input if t.key == "region_text")
        assert box.placeholder.startswith(f"{lat:.3f},{lon:.3f},2")


# ---------------------------------------------------------------- Compare


def test_compare_solves_two_mechanisms_side_by_side() -> None:
    at = app("app_pages/compare.py")
    assert "Not solved yet" in texts(at.info)
    solve_button(at, "Solve all").click().run()
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["mechanism"]) == ["Exponential mechanism (EM)", "EM + Bayesian remapping"]
    loss = [float(v.removesuffix(" m").replace(",", "")) for v in table["utility loss"]]
    assert all(v > 0 for v in loss) and all(str(v).endswith(" m") for v in table["privacy cost"])
    # Bayesian remapping is post-processing that picks the cheapest output: never worse on the prior's loss
    assert loss[1] <= loss[0] + 0.1
    assert "None" not in table.to_string() and "nan" not in table.to_string()
    assert at.query_params["compare"] == "em,em-br"


def test_compare_shows_one_mechanisms_error_and_keeps_the_others() -> None:
    from mdpviz.errors import SolverError

    def solve(problem, params, progress, time_limit):
        raise SolverError("A pricing LP failed (Time limit reached).")

    with registered("test-broken", "Test broken mechanism", solve):
        at = app("app_pages/compare.py", query={"compare": "em,test-broken", "k": "40", "m": "10"})
        solve_button(at, "Solve all").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert "Test broken mechanism: A pricing LP failed" in texts(at.error)
        table = at.dataframe[0].value
        assert list(table["privacy promise"]) == ["holds on all pairs", "error"]


def test_compare_parameter_change_and_bad_query() -> None:
    at = app("app_pages/compare.py", query={"compare": "em,nope"})
    assert "`compare=em,nope` names unknown mechanisms" in texts(at.warning)
    assert at.session_state["compare"] == ["em"]
    assert "at least two" in texts(at.info)
    at.multiselect(key="compare").set_value(["em", "em-br"]).run()
    at.select_slider(key="mp.em.eps").set_value(2.0)
    solve_button(at, "Solve all").click().run()
    assert not at.exception
    assert len(at.dataframe[0].value) == 2


# ---------------------------------------------------------------- Trade-off


def test_tradeoff_sweep_keeps_points_and_offers_csv() -> None:
    at = app("app_pages/tradeoff.py")
    assert "press **Run sweep**" in texts(at.info)
    at.slider(key="sweep_n").set_value(3)
    solve_button(at, "Run sweep").click().run()
    assert not at.exception
    sweep = at.session_state["sweep"]
    frame = sweep.frame()
    assert len(frame) == 6 and not sweep.running
    em = frame[frame.mechanism == "em"].sort_values("value")
    assert em.utility_loss_m.is_monotonic_decreasing  # more budget, less loss
    assert (frame.violation_ratio == 0).all()
    assert "3 of 3" not in texts(at.caption) and "6 of 6 points" in texts(at.caption)
    # what the sweep shows, in one sentence from its data; method labels, not codes; no timing panel of noise
    assert "pays the least for privacy" in texts(at.markdown) and "as much" in texts(at.markdown)
    fig = at.session_state["sweep"] and next(c for c in at.get("plotly_chart"))
    spec = fig.proto.spec
    assert "Exponential mechanism (EM)" in spec and '"name":"em"' not in spec.replace(" ", "")
    assert "Privacy cost (m)" in spec and "the fourth panel shows the utility loss instead" in texts(at.caption)
    from mdpviz.ui.sweep import summary

    broken = frame.assign(verdict=["error"] * 3 + ["ok"] * 3)  # a broken promise never "pays the least"
    sentence = summary(broken, "ε", {}, None)
    assert sentence.startswith(broken[broken.verdict == "ok"].mechanism.iloc[0]) and "as much" not in sentence


def test_tradeoff_bad_query_and_parameter_choice() -> None:
    at = app("app_pages/tradeoff.py", query={"sweep_mechs": "zzz"})
    assert "`sweep_mechs=zzz` names unknown mechanisms" in texts(at.warning)
    at.multiselect(key="sweep_mechs").set_value(["em"]).run()
    assert at.selectbox(key="sweep_param").value == "eps"
    assert not at.exception


def test_tradeoff_stopped_sweep_can_resume() -> None:
    at = app("app_pages/tradeoff.py")
    at.slider(key="sweep_n").set_value(2)
    solve_button(at, "Run sweep").click().run()
    sweep = at.session_state["sweep"]
    first = dict(sweep.rows)
    # as if Stop had been pressed after one point: drop the others and mark the sweep stopped
    keep = next(iter(first))
    sweep.rows = {keep: first[keep]}
    sweep.running = False
    at.run()
    resume = next(b for b in at.button if b.label.startswith("Resume sweep"))
    assert "3 points left" in resume.label
    resume.click().run()
    assert not at.exception
    assert at.session_state["sweep"].done == 4


# ---------------------------------------------------------------- Learn


def test_learn_live_examples() -> None:
    at = app("app_pages/learn.py")
    lines = [m.value for m in at.markdown if m.value.startswith(("EM: ", "LP: "))]
    em_loss = float(lines[0].split("**")[1].split()[0])
    lp_loss = float(lines[1].split("**")[1].split()[0])
    assert lp_loss < em_loss  # the optimal LP beats EM under the same ε
    at.select_slider(key="learn_eps2").set_value(12.0).run()
    assert not at.exception
    at.select_slider(key="learn_delta").set_value(0.01).run()
    assert "24.5" in texts(at.markdown)  # 50·49·0.01 expected failing pairs


def test_learn_bad_query_notice() -> None:
    at = app("app_pages/learn.py", query={"seed": "-1"})
    assert "URL parameter `seed=-1` is outside [0, 2,147,483,647] for the seed; using 0." in texts(at.warning)
    assert at.session_state["seed"] == 0


# ---------------------------------------------------------------- each mechanism's own panels and outcomes on the pages


def test_diagnostics_render_generically_for_a_new_mechanism() -> None:
    """A mechanism registered with anchors, a budget split, a float array and a history shows up with no page
    change: controls from its schema, a histogram, a split bar and anchor points on the map."""
    from mdpviz.contract import _REGISTRY
    from mdpviz.mechanisms import Mechanism, Param, Result, register
    from mdpviz.mechanisms.em import em_matrix

    def solve(problem, params, progress, time_limit):
        progress("anchor sampling", 0.5)
        Z = em_matrix(problem, params["eps"])
        diag = {"anchors": np.arange(0, problem.k, 4), "budget_split": {"phase I": 24.0, "margin": 9.0,
                                                                         "phase II": 67.0},
                "eps_bar": np.linspace(0.1, 2.0, 50), "history": np.column_stack([np.arange(5.0), np.ones(5)]),
                "gamma_km": 0.05, "lower_bound_m": None}
        return Result("test-anchored", params, Z, "closed form", params["eps"], diagnostics=diag,
                      timings={"anchor sampling_s": 0.01, "lp_s": 0.02})

    register(Mechanism(name="test-anchored", label="Test anchored mechanism", paper="(test)", info="test only",
                       params=(Param("eps", float, 5.0, "budget", low=0.1, high=50.0, log=True, unit="km⁻¹",
                                     label="ε"),
                               Param("delta", float, 1e-7, "failure probability", low=1e-7, high=0.15, log=True,
                                     label="δ"),
                               Param("alpha", float, 0.95, "scale", low=0.25, high=1.0, open_high=True,
                                     label="α")),
                       solve=solve, family="test", exact=False))
    try:
        at = app("app_pages/explore.py", query={"mech": "test-anchored", "k": "40", "m": "15", "delta": "0.01"})
        assert at.session_state["mp.test-anchored.delta"] == 0.01
        solve_button(at).click().run()
        assert not at.exception, [e.value for e in at.exception]
        captions = texts(at.caption)
        assert "**10** anchors (25.0% of K = 40)" in captions
        assert at.checkbox(key="show_extra").value  # anchors drawn on the map
        table = at.dataframe[0].value
        assert "γ (km)" in set(table["diagnostic"]) and "gamma_km" not in set(table["diagnostic"])  # no raw key
        assert dict(zip(table["diagnostic"], table["value"], strict=True))["lower bound (m)"] == "–"  # not "None"
        # the charts are titled in words too: no raw key, no "column 0"
        import json

        titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")
                  if "title" in json.loads(c.proto.spec)["layout"]]
        assert "Phase I cost ε̄ (50 values)" in titles and not any("eps_bar" in t for t in titles), titles
        assert "Iteration history (one point per round)" in titles, titles
        split = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                     if "Budget split" in json.loads(c.proto.spec)["layout"].get("title", {}).get("text", ""))
        # PAnDA's keys in the Learn page's words (phase1 → Phase I …); other names are kept
        assert [t["name"] for t in split["data"]] == ["phase I", "safety margin", "phase II"]
    finally:
        _REGISTRY.pop("test-anchored", None)


def test_time_limit_without_mechanism_is_explained() -> None:
    """A solve that ends without a mechanism (status 'time limit', Z None) is a warning, not a crash."""
    from mdpviz.mechanisms import Result

    def solve(problem, params, progress, time_limit):
        return Result("test-slow", params, None, "time limit", params["eps"], message="stopped after 1 s.",
                      timings={"solve_s": 1.0})

    with registered("test-slow", "Test slow mechanism", solve, family="lp"):
        at = app("app_pages/explore.py", query={"mech": "test-slow", "k": "40", "m": "10"})
        solve_button(at).click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert "Test slow mechanism gave no mechanism: it reached its time limit after" in texts(at.error)
        assert "Solved" not in texts(at.markdown)
        assert "**What happened:** stopped after 1 s." in texts(at.caption)  # one click away, in the expander
        assert "no mechanism to show" in texts(at.caption)
        assert not at.metric
        at.switch_page("app_pages/compare.py").run()
        at.multiselect(key="compare").set_value(["em", "test-slow"]).run()
        solve_button(at, "Solve all").click().run()
        assert not at.exception, [e.value for e in at.exception]
        table = at.dataframe[0].value
        assert list(table["privacy promise"]) == ["holds on all pairs", "no mechanism (time limit)"]
        assert list(table["utility loss"])[1] == "–"


def test_a_stop_that_kept_a_feasible_point_offers_to_show_it_labelled() -> None:
    """Issue 28: a stop's feasible, private point is one toggle away, shown as not optimal (status, verdict,
    message) and measured like any mechanism; off, the page is the no-mechanism page."""
    from mdpviz.mechanisms import Result
    from mdpviz.mechanisms.em import em_matrix

    def solve(problem, params, progress, time_limit):
        Z = em_matrix(problem, params["eps"])
        cost = float(np.sum(problem.p[:, None] * problem.c * Z))
        return Result("test-kept", params, None, "time limit", params["eps"], bound_m=0.5 * cost,
                      message="time limit in LP round 3", timings={"total_s": 1.0},
                      diagnostics={"feasible_Z": Z, "feasible_objective_m": cost})

    with registered("test-kept", "Test kept point", solve, family="lp"):
        at = app("app_pages/explore.py", query={"mech": "test-kept", "k": "40", "m": "10"})
        solve_button(at).click().run()
        assert not at.exception, [e.value for e in at.exception]
        toggle = at.toggle(key="show_kept")
        assert not toggle.value and "not the optimum" in toggle.label and "the optimum at least" in toggle.label
        assert "Test kept point gave no mechanism" in texts(at.error) and not at.metric
        toggle.set_value(True).run()
        assert not at.exception, [e.value for e in at.exception]
        said = "Stopped at the time limit after 1.0 s, not proven optimal: Test kept point kept its promise"
        assert said in texts(at.warning)
        assert metric(at, "Utility loss (m)")
        assert "**What happened:** Shown: the feasible point the solve kept when it stopped (" in texts(at.caption)
        assert "certified bound); time limit in LP round 3" in texts(at.caption)
        # the Compare page offers the same point, beside a finished mechanism
        at.switch_page("app_pages/compare.py").run()
        at.multiselect(key="compare").set_value(["em", "test-kept"]).run()
        solve_button(at, "Solve all").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert list(at.dataframe[0].value["privacy promise"]) == ["holds on all pairs", "no mechanism (time limit)"]
        toggle = at.toggle(key="compare_show_kept")
        assert not toggle.value and "(Test kept point): not the optimum" in toggle.label
        toggle.set_value(True).run()
        assert not at.exception, [e.value for e in at.exception]
        table = at.dataframe[0].value
        assert list(table["privacy promise"]) == ["holds on all pairs", "time limit; holds on all pairs"]
        assert list(table["utility loss"])[1] != "–"


def test_out_of_range_k_is_brought_into_range_with_a_notice() -> None:
    at = app("app_pages/explore.py", query={"city": "west-oakland", "k": "100", "m": "20"})
    at.number_input(key="k").set_value(500)
    solve_button(at).click().run()
    assert not at.exception
    assert "K = 500 is above 205, the 205 nodes of West Oakland (US); using K = 205." in texts(at.warning)
    assert at.session_state["k"] == 205 and metric(at, "Utility loss (m)")  # solved with what was used
    at2 = app("app_pages/explore.py", query={"city": "west-oakland", "k": "500"})
    assert "`k=500` is outside [2, 205] for K = |X| (at most the 205 nodes of West Oakland (US)); using 200." in (
        texts(at2.warning))


def test_panda_internals_panel() -> None:
    """PAnDA's diagnostics become the anchors/budget panel, the checks table, histograms and map layers."""
    at = app("app_pages/explore.py", query={"mech": "panda-p", "k": "80", "m": "20", "eps": "15"})
    solve_button(at).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Anchors and privacy budget" in texts(at.markdown)
    assert "anchors (" in texts(at.caption) and "% of K = 80)" in texts(at.caption)
    checks = next(df.value for df in at.dataframe if "check" in df.value.columns)
    assert {"violations · V_pair (between users)", "violations · V_cf (counterfactual anchors)",
            "violations · V_pure (pure ε-mDP between users)"} <= set(checks["check"])
    assert at.checkbox(key="show_users").value and at.checkbox(key="show_extra").value


def test_tradeoff_sweeps_delta_for_panda() -> None:
    at = app("app_pages/tradeoff.py", query={"sweep_mechs": "panda-e", "k": "60", "m": "15",
                                              "sweep_param": "delta"})
    assert at.selectbox(key="sweep_param").value == "delta"
    assert not at.exception
    at.slider(key="sweep_n").set_value(2)
    solve_button(at, "Run sweep").click().run()
    assert not at.exception, [e.value for e in at.exception]
    frame = at.session_state["sweep"].frame()
    assert list(frame.param.unique()) == ["delta"] and len(frame) == 2


def test_dista_lp_gets_its_own_panel() -> None:
    at = app("app_pages/explore.py", query={"mech": "dista-lp", "k": "60", "m": "25"})
    solve_button(at).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "DISTA-LP: users, neighbourhoods and reports" in texts(at.markdown)


def test_the_private_cell_variant_solves_on_explore_with_its_own_panel() -> None:
    """Issue 30: DISTA-LP's `ours` variant has no users or uploads: Explore shows its own panel (the budget split,
    the exact check of the release, its cells), not the surrogate panel, and no exception."""
    at = app("app_pages/explore.py", query={"mech": "dista-lp", "k": "80", "m": "30", "city": "rome", "eps": "5",
                                            "upload": "cell", "cells": "3"})
    solve_button(at).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "**DISTA-LP with a private cell (ours, not the paper's)**" in texts(at.markdown)
    assert "DISTA-LP (distributed, private uploads), our variant (not the paper's)" in texts(at.markdown)
    assert "The release (cell, report) breaks ε-mDP on 0 of 6,320 ordered pairs" in texts(at.caption)
    table = next(d.value for d in at.dataframe if "LP status" in d.value.columns)
    assert len(table) == 3 and set(table["rows from"]) <= {"LP optimum", "LP's kept feasible point"}


def test_cmdp_on_explore_states_its_floor_under_its_own_model() -> None:
    """Issue 26: C-mDP scores itself by the next location's cost over (location, context) secrets, not by the
    problem's cost; Explore states its floor and privacy cost under that model beside the generic ones (here Y = X,
    so the generic floor is 0)."""
    at = app("app_pages/explore.py", query={"mech": "cmdp", "k": "10", "m": "10", "city": "rome",
                                            "region": "centre:3", "eps": "1", "vehicles": "250", "steps": "40"})
    solve_button(at).click().run()
    assert not at.exception, [e.value for e in at.exception]
    captions = texts(at.caption)
    assert "− no-privacy floor 0.0 m" in captions
    assert "Under C-mDP's own model (Eq. 34: the cost of the next location" in captions
    assert "The problem's cost scores only the location marginal." in captions
