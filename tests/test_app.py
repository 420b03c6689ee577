"""Dashboard pages through Streamlit's AppTest: default render, a parameter change, a small solve, bad URLs.

Every test starts from ``app.py`` (the router) and switches page, as a user would. The problems are the
default small ones (K = 200, |Y| = 50) or smaller, with the instant mechanisms, so the whole file stays fast.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from mdpviz.errors import ProblemError
from mdpviz.mechanisms import mechanisms
from mdpviz.ui import state
from mdpviz.ui.diagnostics import split_diagnostics
from mdpviz.ui.maps import clicked_secret, colours

TIMEOUT = 60
APP = str(Path(__file__).resolve().parents[1] / "app.py")


def app(page: str | None = None, query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if query:
        at.query_params.update(query)
    if page:
        at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def texts(elements) -> str:
    return " ".join(str(e.value) for e in elements)


def solve_button(at: AppTest, label: str = "Solve"):
    return next(b for b in at.sidebar.button if b.label == label)


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
    from mdpviz.mechanisms import Mechanism, register
    from mdpviz.mechanisms.base import epsilon_param
    from mdpviz.mechanisms.registry import _REGISTRY

    def solve(problem, params, progress, time_limit):
        raise SolverError("A pricing LP failed (Time limit reached).")

    register(Mechanism(name="test-broken", label="Test broken mechanism", paper="(test)", info="test only",
                       params=(epsilon_param(),), solve=solve))
    try:
        at = app("app_pages/compare.py", query={"compare": "em,test-broken", "k": "40", "m": "10"})
        solve_button(at, "Solve all").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert "Test broken mechanism: A pricing LP failed" in texts(at.error)
        table = at.dataframe[0].value
        assert list(table["privacy promise"]) == ["holds on all pairs", "error"]
    finally:
        _REGISTRY.pop("test-broken", None)


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


# ---------------------------------------------------------------- pure helpers of the UI


def test_parse_query_refuses_bad_values() -> None:
    parsed = state.parse_query({"k": "5.5", "m": "20", "mech": "em", "eps": "7", "scale": "weird",
                                "secret": "x", "mechanism": "lp"})
    assert parsed.values["k"] == state.DEFAULTS["k"]
    assert parsed.values["mp.em.eps"] == 7.0 and parsed.values["mp.em.scale"] == "half"
    assert parsed.values["secret"] is None
    assert len(parsed.notices) == 4
    assert any("`mechanism=lp` is not one this dashboard reads; did you mean `mech`?" in n for n in parsed.notices)


def test_one_rule_for_k_and_outputs() -> None:
    """K lies in [2, nodes in the region] (and the dashboard's cap), |Y| in [1, K]; each change is said."""
    fixed, notes = state.clamp_problem({"city": "west-oakland", "region": "whole", "k": 0, "m": 999, "tasks": 10,
                                        "seed": 0})
    assert fixed["k"] == 2 and fixed["m"] == 2 and len(notes) == 2
    assert "K = 0 is below 2" in notes[0] and "|Y| = 999 exceeds K = 2" in notes[1]
    fixed, notes = state.clamp_problem({"city": "rome", "region": "whole", "k": 99_999, "m": 100, "tasks": 99,
                                        "seed": -4})
    assert fixed["k"] == state.K_MAX and fixed["tasks"] == state.TASKS_RANGE[1] and fixed["seed"] == 0
    assert f"K = 99,999 is above {state.K_MAX:,}, the most mdpviz handles" in notes[0] and "43,160 nodes" in notes[0]
    lo, hi, why = state.k_range("rome", "centre:3")
    assert lo == 2 and 100 < hi < 43_160 and "region `centre:3`" in why


def test_split_diagnostics_sorts_scalars_and_histograms() -> None:
    scalars, arrays, other = split_diagnostics({
        "anchors": np.array([1, 5, 9]), "eps_bar": np.array([0.1, 0.2, 0.4]),
        "budget_split": {"phase1": 23.9, "margin": 9.1, "phase2": 67.0}, "status": "ok", "grid": np.eye(2)})
    assert set(arrays) == {"eps_bar"}
    assert scalars["budget_split.phase1"] == 23.9 and "3 integers" in scalars["anchors"]
    assert other == {"grid": "array of shape (2, 2)"}


def test_clicked_secret_reads_pydeck_selection() -> None:
    assert clicked_secret(None) is None
    sel = {"indices": {"dist": [0]}, "objects": {"dist": [{"i": 17, "k": 4, "lat": 0, "lon": 0}]}}
    assert clicked_secret(sel) == ("dist", 17, 4)
    assert clicked_secret({"objects": {"secrets": [{"i": 3}]}}) == ("secrets", 3, None)


def test_colour_scale_ends() -> None:
    c = colours(np.array([0.0, 1.0]), 0.0, 1.0, "loss")
    assert c[0][:3] == [68, 1, 84] and c[1][:3] == [253, 231, 37]


def test_anchor_and_budget_helpers() -> None:
    from mdpviz.ui.diagnostics import anchor_count, budget_parts

    assert anchor_count({"anchors": np.array([2, 7, 9])}) == ("anchors", 3)
    assert anchor_count({"anchors": 63}) == ("anchors", 63)
    assert anchor_count({"cells": 4}) is None
    assert budget_parts({"budget_split": {"phase1": 23.9, "margin": 9.1, "phase2": 67.0}}) == (
        [("phase1", 23.9), ("margin", 9.1), ("phase2", 67.0)], "% of ε")
    nested = {"budget_split": {"pairs": 12, "km_inv": {"phase1": 1.2, "phase2": 3.8}, "percent": {"phase1": 24.0,
                                                                                              "phase2": 76.0}}}
    assert budget_parts(nested) == ([("phase1", 24.0), ("phase2", 76.0)], "% of ε")


def test_binned_histograms_and_checks_are_found_anywhere() -> None:
    from mdpviz.ui.diagnostics import binned_histograms, check_rows, split_diagnostics

    diag = {"eps_bar": {"hist": {"counts": np.array([1, 2]), "edges": np.array([0.1, 1.0, 10.0]),
                                 "log10_edges": True}, "median": 0.5},
            "violations": {"V_pair": {"violated": 3, "checked": 12, "exponent": "ε·d"}},
            "lp": {"enforced": {"violated_pairs": 0, "checked_pairs": 6}}}
    assert list(binned_histograms(diag)) == ["eps_bar.hist"]
    rows = check_rows(diag)
    assert [(r["check"], r["violated"], r["checked"], r["ratio"]) for r in rows] == [
        ("violations · V_pair (between users)", "3", "12", "0.25"), ("LP · enforced", "0", "6", "0")]
    scalars, arrays, _other = split_diagnostics(diag)
    assert set(scalars) == {"eps_bar.median"} and not arrays


def test_iteration_histories_have_named_columns() -> None:
    """The LP engines' histories are drawn with their columns' names (the walk of the dashboard found "history"
    and "column 0 … column 4" on Explore's diagnostics); an unknown 2-D diagnostic is numbered from 1."""
    from mdpviz.ui.charts import columns_chart
    from mdpviz.ui.diagnostics import array_columns

    structured = {"history": [(0.1, 15.0, 14.0, 3000, 14000)] * 3, "pair_cap": 15.0}
    names = array_columns(structured, "history", 5)
    assert names == ["seconds since start", "best objective", "best bound", "LP variables", "LP pair rows"]
    assert array_columns({"history": [], "atoms_final": 1}, "history", 4)[-1] == "atoms"
    assert array_columns({"history": []}, "history", 5) == [f"column {j}" for j in range(1, 6)]
    fig = columns_chart(np.asarray(structured["history"], float), "Iteration history", names)
    assert [a.text for a in fig.layout.annotations] == names


def test_trajectory_curves_table_has_words_not_keys() -> None:
    """Trajectories' loss-against-ε table: readable column names (the library's rows say ``vs_lp_pct``,
    ``heldout_loss_m``, ``wall_s``) and "–" for a method without a value, never None or NaN."""
    import pandas as pd

    from mdpviz.ui.trajectories import curves_table, violations_text

    rows = pd.DataFrame([{"eps": 0.5, "method": "cmdp", "label": "LP+C-mDP", "status": "optimal", "loss_m": 1325.1,
                          "heldout_loss_m": 1325.7, "objective_m": 1325.1, "wall_s": 2.5, "vs_lp_pct": -5.1},
                         {"eps": 0.5, "method": "em", "label": "ExpMech", "status": "time limit", "wall_s": 60.0,
                          "heldout_loss_m": None}])
    shown = curves_table(rows)
    assert not [c for c in shown.columns if "_" in c or c == "method" and "LP+C-mDP" not in set(shown[c])]
    assert {"ε (km⁻¹)", "expected loss (m)", "held-out loss (m)", "wall time (s)", "vs best LP (%)"} <= set(
        shown.columns)
    assert shown["method"].tolist() == ["LP+C-mDP", "ExpMech"]
    assert shown.iloc[1]["expected loss (m)"] == "–" and shown.iloc[1]["held-out loss (m)"] == "–"
    assert not shown.isna().any().any()
    assert violations_text({"violated": 352, "checked": 3552}) == "352 / 3,552"


def test_diagnostics_render_generically_for_a_new_mechanism() -> None:
    """A mechanism registered with anchors, a budget split, a float array and a history shows up with no page
    change: controls from its schema, a histogram, a split bar and anchor points on the map."""
    from mdpviz.mechanisms import Mechanism, Param, Result, register
    from mdpviz.mechanisms.em import em_matrix
    from mdpviz.mechanisms.registry import _REGISTRY

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
    from mdpviz.mechanisms import Mechanism, Result, register
    from mdpviz.mechanisms.base import epsilon_param
    from mdpviz.mechanisms.registry import _REGISTRY

    def solve(problem, params, progress, time_limit):
        return Result("test-slow", params, None, "time limit", params["eps"], message="stopped after 1 s.",
                      timings={"solve_s": 1.0})

    register(Mechanism(name="test-slow", label="Test slow mechanism", paper="(test)", info="test only",
                       params=(epsilon_param(),), solve=solve, family="lp"))
    try:
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
    finally:
        _REGISTRY.pop("test-slow", None)


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


# ---------------------------------------------------------------- continuous-domain mechanisms (Result.rows)

AIPO_QUERY = {"mech": "aipo", "k": "40", "m": "12", "cells": "3", "budget_steps": "3", "lb_grid": "2"}


def html_text(at: AppTest) -> str:
    return " ".join(h.proto.body for h in at.get("html"))


def test_aipo_explore_picks_any_point_heat_map_lattice_and_budget_curve() -> None:
    from mdpviz.problem import build_problem
    from mdpviz.solve import solve

    at = app("app_pages/explore.py", query=AIPO_QUERY)
    solve_button(at).click().run()
    assert not at.exception, [e.value for e in at.exception]
    # diagnostics: the budget-search curve, and no PAnDA wording for a lattice
    assert "Budget search: utility loss against the east–west budget ε₁" in texts(at.markdown)
    assert "anchors on a" in texts(at.caption) and "PAnDA" not in texts(at.caption)
    assert "chosen ε₁ = " in texts(at.caption) and "(universal lower bound)" in texts(at.caption)
    # map: lattice toggle with its legend entry, heat map on by default for rows, output picker works
    assert at.checkbox(key="show_lattice").value and "anchor lattice (" in html_text(at)
    assert at.checkbox(key="show_heat").value
    at.selectbox(key="heat_y").set_value(3).run()
    assert not at.exception
    assert "z(y3 | x) = Pr[report y3 | true location x] (probability), interpolated over the plane" in html_text(at)
    at.checkbox(key="show_lattice").uncheck().run()
    assert "anchor lattice (" not in html_text(at)
    # an arbitrary point (not a node) gives the mechanism's own row there
    prob = build_problem(at.session_state["city"], 40, n_outputs=12)
    lat, lon = float(prob.x_lat.mean()) + 1e-4, float(prob.x_lon.mean()) - 2e-4
    at.session_state["point"] = f"{lat:.6f},{lon:.6f}"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    result = solve(prob, "aipo", {"eps": 5.0, "p": 2, "cells": 3, "budget_steps": 3, "lb_grid": 2})  # cached
    row = result.rows(np.array([lat]), np.array([lon]))[0]
    caption = next(m.value for m in at.markdown if m.value.startswith("**Picked point**"))
    assert f"most likely report y{int(np.argmax(row))} with Pr = {row.max():.3g}" in caption
    assert at.query_params["pt"] == f"{lat:.6f},{lon:.6f}"
    assert "Pr[report y | true location picked point]" in html_text(at)
    # the continuous privacy check: pairs of arbitrary points, no additive tolerance
    at.number_input(key="ccheck_pairs").set_value(1000).run()
    at.button(key="ccheck_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(df.value for df in at.dataframe if "kind of pair" in df.value.columns)
    assert list(table["kind of pair"]) == ["uniform", "edge", "diagonal"] and set(table["violating pairs"]) == {"0"}
    assert "no violations" in texts(at.caption) and "no additive tolerance" in texts(at.caption)
    # back to the secret: the point is dropped from the state and the URL
    at.button(key="clear_point").click().run()
    assert at.session_state["point"] is None and "pt" not in at.query_params


def test_relaxed_variant_shows_its_fixed_split_and_fails_the_continuous_check() -> None:
    at = app("app_pages/explore.py", query={"mech": "aipo-r", "k": "40", "m": "12", "cells": "3"})
    solve_button(at).click().run()
    assert "One fixed split, no search: ε₁ = 5 km⁻¹" in texts(at.caption)
    at.number_input(key="ccheck_pairs").set_value(1000).run()
    at.button(key="ccheck_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "violating pairs**. Worst factor" in texts(at.caption)  # AIPO-R is not ε-mDP


def test_point_from_url_and_nearest_secret_heat_map_for_a_matrix_mechanism() -> None:
    at = app("app_pages/explore.py", query={**AIPO_QUERY, "pt": "north"})
    assert "`pt=north` is not a point" in texts(at.warning)
    # a mechanism with Z only: the heat map uses the nearest secret's row, and a picked point is not kept
    at = app("app_pages/explore.py", query={"mech": "em", "k": "40", "m": "12", "pt": "60.17,24.94"})
    solve_button(at).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["point"] is None and not at.checkbox(key="show_heat").value
    at.checkbox(key="show_heat").check().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "nearest secret (piecewise constant)" in html_text(at)
    assert not [c for c in at.checkbox if c.key == "show_lattice"]
    # the heat map follows the selected secret: another secret shows its own most likely report
    from mdpviz.problem import build_problem
    from mdpviz.solve import solve

    prob = build_problem(at.session_state["city"], 40, n_outputs=12)
    Z = solve(prob, "em", {"eps": 5.0}).Z
    for secret in (3, 17):
        at.number_input(key="secret").set_value(secret).run()
        assert at.session_state["heat_y"] == int(np.argmax(Z[secret]))


def test_the_heat_map_is_see_through_and_clipped_to_where_secrets_are() -> None:
    import base64
    import io

    from PIL import Image

    from mdpviz.ui.maps import PlaneGrid, heat_layer

    values = np.array([0.0, 0.001, 0.5, 1.0, 1.0, 0.8])
    inside = np.array([True, True, True, True, False, True])
    g = PlaneGrid(lat=np.repeat([60.0, 60.01], 3), lon=np.tile([24.0, 24.01, 24.02], 2), side_m=500.0,
                  nearest=np.zeros(6, dtype=np.int64), shape=(2, 3), values=values, vmax=1.0, inside=inside)
    url = heat_layer(g).image.strip("'").split(",", 1)[1]
    alpha = np.asarray(Image.open(io.BytesIO(base64.b64decode(url))))[::-1, :, 3].ravel()  # back to south first
    assert alpha[0] == alpha[1] == 0  # nothing and almost nothing: not drawn, the roads show through
    assert 0 < alpha[2] < alpha[3] <= 210  # the opacity grows with the value and never hides the map
    assert alpha[4] == 0 and alpha[5] > 0  # outside the sampled area: not drawn, even at the top value


def test_clicked_point_and_parse_point() -> None:
    from mdpviz.ui.continuous import parse_point
    from mdpviz.ui.maps import clicked_point

    assert clicked_point(None) is None and clicked_point({"objects": {"secrets": [{"i": 2}]}}) is None
    assert clicked_point({"objects": {"plane": [{"lat": 60.1, "lon": 24.9, "i": 7}]}}) == (60.1, 24.9, 7)
    assert parse_point("60.1,24.9") == (60.1, 24.9) and parse_point("1,2,3") is None and parse_point("") is None


def test_heat_map_image_is_a_valid_png_of_the_grid() -> None:
    import base64
    import io

    from PIL import Image

    from mdpviz.ui.maps import png_data_url

    rgba = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    png = base64.b64decode(png_data_url(rgba).split(",", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 3  # width
    decoded = Image.open(io.BytesIO(png))
    assert decoded.mode == "RGBA" and np.array_equal(np.asarray(decoded), rgba)  # every pixel as given, losslessly


# ---------------------------------------------------------------- issue 17: explains itself, refusals, presets


def test_verdict_and_message_shown_for_every_status() -> None:
    """The verdict box sits above the metrics; the mechanism's message shows even when the status is optimal."""
    from mdpviz.mechanisms import Mechanism, Result, register
    from mdpviz.mechanisms.base import epsilon_param
    from mdpviz.mechanisms.em import em_matrix
    from mdpviz.mechanisms.registry import _REGISTRY

    def solve(problem, params, progress, time_limit):
        return Result("test-said", params, em_matrix(problem, params["eps"]), "optimal", params["eps"],
                      message="Phase I used the whole budget.", degenerate="Collapsed: every user reports the same.")

    register(Mechanism(name="test-said", label="Test degenerate mechanism", paper="(test)", info="test only",
                       params=(epsilon_param(),), solve=solve))
    try:
        at = app("app_pages/explore.py", query={"mech": "test-said", "k": "30", "m": "10"})
        solve_button(at).click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert ("Test degenerate mechanism is degenerate (collapsed: every secret gets the same report "
                "distribution, so a report says nothing), and kept its promise") in texts(at.warning)
        assert "Test degenerate mechanism: Collapsed: every user reports the same." in texts(at.caption)
        assert "**What happened:** Phase I used the whole budget." in texts(at.caption)
        assert metric(at, "Utility loss (m)")  # the metrics still show below the verdict
    finally:
        _REGISTRY.pop("test-said", None)


def test_derived_metrics_follow_the_result_not_the_inputs() -> None:
    """Issue 18 item 3: a time-limited result and a full one of the same parameters never share metrics."""
    from mdpviz.mechanisms import Mechanism, Result, register
    from mdpviz.mechanisms.base import epsilon_param
    from mdpviz.mechanisms.em import em_matrix
    from mdpviz.mechanisms.registry import _REGISTRY

    def solve(problem, params, progress, time_limit):
        if time_limit is not None and time_limit < 5:  # as if the solver stopped early with a worse mechanism
            return Result("test-limited", params, em_matrix(problem, params["eps"] / 4), "time limit", params["eps"])
        return Result("test-limited", params, em_matrix(problem, params["eps"]), "optimal", params["eps"])

    register(Mechanism(name="test-limited", label="Test limited mechanism", paper="(test)", info="test only",
                       params=(epsilon_param(),), solve=solve, family="lp"))
    try:
        at = app("app_pages/explore.py", query={"mech": "test-limited", "k": "40", "m": "10", "time_limit": "2"})
        solve_button(at).click().run()
        limited = float(metric(at, "Utility loss (m)"))
        assert "Stopped at the time limit" in texts(at.warning)
        at.number_input(key="time_limit").set_value(60.0)
        solve_button(at).click().run()
        full = float(metric(at, "Utility loss (m)"))
        assert full < limited  # the full solve's own loss, not the earlier result's
        assert "kept its promise" in texts(at.success)
    finally:
        _REGISTRY.pop("test-limited", None)


def test_presets_are_valid_and_one_click_solves() -> None:
    from mdpviz.ui import presets

    for p in presets.presets():
        assert not presets.check(p), (p["id"], presets.check(p))
    at = app()
    next(b for b in at.button if b.label == "Teach: EM vs LP on 30 points").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert list(table["mechanism"]) == ["Exponential mechanism (EM)", "Optimal LP"]
    assert (table["privacy promise"] == "holds on all pairs").all()
    loss = [float(v.removesuffix(" m").replace(",", "")) for v in table["utility loss"]]
    assert loss[1] < loss[0]  # the optimal LP loses less
    assert at.session_state["k"] == 30 and at.query_params["compare"] == "em,lp"
    # a shared link names the preset
    again = app(query={"preset": "teach-em-vs-lp"})
    assert list(again.dataframe[0].value["mechanism"]) == ["Exponential mechanism (EM)", "Optimal LP"]
    assert "Unknown preset `nope`" in texts(app(query={"preset": "nope"}).warning)


def test_advanced_parameters_fold_into_an_expander() -> None:
    from mdpviz.mechanisms import get_mechanism
    from mdpviz.ui.controls import split_params

    panda = get_mechanism("panda-e")
    shown, advanced = split_params(panda)
    assert {"eps", "delta", "alpha"} <= {p.name for p in shown} and len(shown) <= 6 and advanced
    at = app("app_pages/explore.py", query={"mech": "panda-e"})
    assert any(e.label == f"Advanced parameters ({len(advanced)})" for e in at.sidebar.expander)


def test_region_preset_typed_region_and_bad_region() -> None:
    from mdpviz.geo import haversine_km

    at = app("app_pages/explore.py", query={"city": "helsinki", "region": "centre:0.4", "k": "50", "m": "10"})
    assert not at.exception and at.session_state["region"] == "centre:0.4"
    assert "secrets within 0.4 km of" in texts(at.markdown)
    solve_button(at).click().run()
    assert not at.exception
    bad = app("app_pages/explore.py", query={"region": "north-ish", "k": "50", "m": "10"})
    assert "Region `north-ish`" in texts(bad.warning) and bad.session_state["region"] == "whole"
    typed = app("app_pages/explore.py", query={"k": "50", "m": "10"})
    typed.text_input(key="region_text").set_value("60.17,24.94,0.3")
    solve_button(typed).click().run()
    assert not typed.exception and typed.session_state["region"] == "60.17,24.94,0.3"
    prob = __import__("mdpviz.ui.cache", fromlist=["x"]).problem("helsinki", 50, 10, "haversine", "uniform",
                                                                "travel", 10, 0, "60.17,24.94,0.3")
    assert float(haversine_km(prob.x_lat, prob.x_lon, 60.17, 24.94).max()) <= 0.3


def test_points_upload_is_validated_and_used() -> None:
    from mdpviz.ui import controls

    class Upload:
        def __init__(self, name: str, data: bytes) -> None:
            self.name, self._data = name, data

        def getvalue(self) -> bytes:
            return self._data

    ss: dict = {}
    csv = b"lat,lon,weight\n60.170,24.941,1\n60.172,24.945,2\n60.168,24.950,1\n60.175,24.939,3\n"
    controls.check_points(ss, Upload("pts.csv", csv))
    assert ss["source"] == "points" and ss["_points"]["rows"] == 4 and "_points_error" not in ss
    controls.check_points(ss, Upload("bad.csv", b"lat,lon\n60.1,abc\n"))
    assert ss["source"] == "sample" and "`bad.csv`: Column `lon` has 1 missing or non-numeric" in ss["_points_error"]
    controls.check_points(ss, Upload("big.csv", b"lat,lon\n" + b"60.1,24.9\n" * 300_000))
    assert f"up to {controls.MAX_UPLOAD_MB} MB" in ss["_points_error"]
    # the uploaded points become the secrets, snapped to the city or standing alone
    at = app("app_pages/explore.py")
    at.session_state["_points"] = {"digest": "test-4", "data": csv, "name": "pts.csv", "rows": 4}
    at.session_state["source"] = "points"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "your points on Helsinki centre (FI)" in texts(at.markdown)
    assert "|Y| = 50 exceeds the" in texts(at.caption)
    at.session_state["points_snap"] = False
    at.run()
    solve_button(at).click().run()
    assert not at.exception and "your points (standing alone)" in texts(at.markdown) and metric(at, "Utility loss (m)")
    # a bad upload after a solve: its error in the main area, in place of the old result (not only in the sidebar)
    at.session_state["_points_error"] = "`bad.csv`: Column `lon` has 1 missing or non-numeric value."
    at.session_state["source"] = "sample"
    at.run()
    assert not at.exception and not at.metric and not at.success
    assert any("Your points were not loaded: `bad.csv`" in e.value for e in at.main.error)


def test_cosmetics_a_test_can_see() -> None:
    from mdpviz.ui import charts
    from mdpviz.ui.metrics_panel import lp_size_text

    fig = charts.sweep_curves(__import__("pandas").DataFrame(
        {"mechanism": ["em"] * 4, "value": [1.0, 2.7, 7.4, 20.0], "utility_loss_m": [9.0, 5.0, 3.0, 2.0],
         "violation_ratio": [0.0] * 4, "adversary_error_m": [1.0] * 4, "solve_s": [0.1] * 4}), "ε", None, True)
    assert list(fig.layout.xaxis.tickvals) == [1.0, 2.0, 5.0, 10.0, 20.0]  # not the sampled 2.7, 7.4
    assert list(fig.layout.yaxis2.range) == [0, 1] and fig.layout.yaxis2.tickformat == charts.RATIO_FORMAT
    assert "wem_entries" not in lp_size_text({"wem_entries": 0, "pricing_rows_mean": 813})
    assert "rows per pricing LP (mean)" in lp_size_text({"pricing_rows_mean": 813})
    log = charts.line(np.array([1.0, 2.0]), {"a": np.array([10.0, 1e6])}, "x", "y", log_y=True)
    assert log.layout.yaxis.dtick == 1 and log.layout.yaxis.exponentformat == "power"
    learn = app("app_pages/learn.py")
    assert "399,800,000" in texts(learn.markdown) and "two hundred million" not in texts(learn.markdown)


def test_no_emoji_and_ascii_map_labels() -> None:
    """Icons are Material symbols (emoji render as empty boxes without an emoji font); deck.gl's text atlas is
    ASCII, so map labels are too."""
    import re

    root = Path(APP).parent
    emoji = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B50\u23F0-\u23FF\uFE0F]")
    for path in [root / "app.py", *(root / "app_pages").glob("*.py"), *(root / "mdpviz" / "ui").glob("*.py")]:
        assert not emoji.search(path.read_text(encoding="utf-8")), path
    from mdpviz.ui.trajectories import trajectory_deck

    prob = __import__("mdpviz.problem", fromlist=["x"]).build_problem("west-oakland", 10, all_outputs=True)
    ex = {"polyline_lon": list(prob.x_lon[:3]), "polyline_lat": list(prob.x_lat[:3]), "trajectory": 0,
          "context": [{"lag": 1, "node": 1, "in_blanket": True, "lon": float(prob.x_lon[1]),
                       "lat": float(prob.x_lat[1])}], "lon": float(prob.x_lon[0]), "lat": float(prob.x_lat[0]),
          "next_lon": float(prob.x_lon[2]), "next_lat": float(prob.x_lat[2]), "task_lon": float(prob.x_lon[3]),
          "task_lat": float(prob.x_lat[3]), "station": 0, "next_station": 2, "task": 3}
    labels = [row["label"] for layer in trajectory_deck(prob, None, ex).layers if layer.type == "TextLayer"
              for row in layer.data]
    assert labels == ["t-1"] and all(label.isascii() for label in labels)


def test_road_image_draws_the_network() -> None:
    import base64
    import io

    from PIL import Image

    from mdpviz.ui import basemap

    img = basemap.road_image(np.array([24.0]), np.array([60.0]), np.array([24.01]), np.array([60.0]),
                             (23.99, 59.99, 24.02, 60.01), px_per_deg_lon=10_000)
    assert img.png[:8] == b"\x89PNG\r\n\x1a\n" and img.size[0] == 300
    width, height = img.size
    decoded = Image.open(io.BytesIO(img.png))
    assert decoded.mode == "LA" and decoded.size == (width, height)
    alpha = np.asarray(decoded)[:, :, 1]
    row = int(np.argmax(alpha.sum(axis=1)))
    assert abs(row - height / 2) <= 2  # the segment lies on the middle latitude
    assert (alpha[row, 110:190] > 0).all() and alpha[:, :90].max() == 0  # drawn from lon 24.00 to 24.01 only
    assert base64.b64encode(img.png)  # a data URL is possible without a server


def test_example_descriptions_state_the_epsilon_the_example_runs() -> None:
    """An example's description that names its ε ("claimed ε = 7", "at ε = 1 km⁻¹") names the ε it sets (the walk
    of the dashboard found DISTA-LP's saying "255 km⁻¹ against the claimed ε = 5" while the page ran ε = 7), and
    each PAnDA variant's text states its own counts."""
    import re

    from mdpviz.ui import presets

    checked = 0
    for p in presets.presets():
        stated = {float(v) for v in re.findall(r"(?:claimed ε|at ε) = ([\d.]+)", p.get("help", ""))}
        mech = p["values"].get("mech")
        if stated and mech:
            assert stated == {float(p["values"][f"mp.{mech}.eps"])}, (p["id"], stated)
            checked += 1
    assert checked >= 2  # DISTA-LP's and AIPO's
    texts = {presets.OUTCOMES[f"panda-{v}-paper"] for v in "epl"}
    assert len(texts) == 3


def test_mechanism_presets_become_dashboard_presets() -> None:
    """A mechanism's own preset (Mechanism.presets: params, build_problem keywords, the ε swept) opens Explore."""
    from types import SimpleNamespace

    from mdpviz.ui import presets

    mech = SimpleNamespace(name="aipo", family="aipo")
    paper = SimpleNamespace(name="paper", label="AIPO paper", help="The paper's settings.",
                            params=(("lb_grid", 12),), problem=(("n_outputs", 20), ("cost", "distance"),
                                                                ("city", "rome"), ("k", 40)), eps=(0.2, 1.0, 1.6))
    entry = presets.from_mechanism(mech, paper)
    assert entry is not None and entry["page"] == "explore" and entry["id"] == "aipo-paper"
    # the whole problem is set: what the preset leaves open comes from presets.EXAMPLE_PROBLEM
    assert entry["values"] == {"mech": "aipo", "region": "whole", "source": "sample", "m": 20, "cost": "distance",
                               "city": "rome", "k": 40, "tasks": 10, "seed": 0, "metric": "haversine",
                               "prior": "uniform", "mp.aipo.lb_grid": 12, "mp.aipo.eps": 1.0}
    assert "Runs on Rome, whole city, K = 40, |Y| = 20, distance cost, seed 0." in entry["help"]
    assert not presets.check(entry) and "0.2, 1, 1.6 km⁻¹" in entry["help"]
    odd = SimpleNamespace(name="x", label="x", help="", params=(), problem=(("sample_by_prior", True),), eps=())
    assert presets.from_mechanism(mech, odd) is None  # no control for it: not offered


def test_doctests_of_the_dashboard_helpers() -> None:
    """mdpviz/ui is left out of the doctest run (importing pages needs Streamlit); its pure helpers' examples
    are run here."""
    import doctest

    from mdpviz.ui import basemap, charts, compare, diagnostics, explore, learn, metrics_panel, sweep

    for module in (basemap, charts, compare, diagnostics, explore, learn, metrics_panel, sweep):
        failed, tried = doctest.testmod(module)
        assert tried and not failed, module.__name__


def test_every_scatter_layer_of_a_map_reads_the_same_columns() -> None:
    """All points of a map go through one scatter pipeline: the same accessors, whatever is constant, so a browser
    without a GPU compiles one shader program for them (scripts/ui_timeline.py: the WebGL read-back wait of a cached
    Rome map went from 0.61 to 0.40 s)."""
    import json

    from mdpviz.problem import build_problem
    from mdpviz.ui import maps

    pb = build_problem("helsinki", 40, n_outputs=10)
    z = np.full(pb.m, 1.0 / pb.m)
    layers = maps.MapLayers(Z_row=z, secret=3, expected=(float(pb.x_lat[5]), float(pb.x_lon[5])),
                            secret_values=np.linspace(0, 1, pb.k), attack_y=2, heat_y=1,
                            extra_points=("anchor", pb.x_lat[:3], pb.x_lon[:3]),
                            lattice=(pb.x_lat[:4].reshape(2, 2), pb.x_lon[:4].reshape(2, 2)))
    deck = json.loads(maps.deck(pb, None, layers).to_json())
    scatter = [lay for lay in deck["layers"] if lay["@@type"] == "ScatterplotLayer"]
    assert {lay["id"] for lay in scatter} >= {"secrets", "dist", "outputs", "attack", "heat-y", "expected",
                                              "expected-line", "true", "extra", "lattice-anchors"}
    assert [lay["@@type"] for lay in deck["layers"]].count("LineLayer") == 1  # the lattice; the bias line is dots
    accessors = {lay["id"]: sorted(k for k in lay if k.startswith("get")) for lay in scatter}
    assert len({tuple(v) for v in accessors.values()}) == 1, accessors
    for lay in scatter:
        row = lay["data"][0]
        assert len(row["_fill"]) == 4 and len(row["_line"]) == 4 and row["_r"] > 0
        assert lay["getRadius"] == "@@=_r" and lay["radiusUnits"] == "pixels"


def test_learn_has_a_glossary_of_the_words_verdicts_use() -> None:
    from mdpviz.ui.glossary import GLOSSARY, help_for

    at = app("app_pages/learn.py")
    shown = texts(at.markdown)
    assert all(f"**{term}**" in shown for term in GLOSSARY)
    tip = help_for("PAnDA-e is degenerate (collapsed: ...), and broke its promise")
    assert tip is not None and "**collapsed**: Every secret gets the same" in tip and "Glossary tab" in tip
    assert help_for("nothing defined here") is None


def test_lp_bd_starts_at_a_setting_that_finishes_and_names_the_faster_solver() -> None:
    from mdpviz.mechanisms import get_mechanism

    at = app("app_pages/explore.py", query={"mech": "lp-bd", "k": "40", "m": "10"})
    stabilised = dict(get_mechanism("lp-bd").preset("stabilised").params)
    assert at.session_state["mp.lp-bd.stabilise"] == stabilised["stabilise"] != get_mechanism("lp-bd").defaults()[
        "stabilise"]
    assert "Starts at its **stabilised** preset" in texts(at.sidebar.caption)
    assert "solves that same LP exactly and is usually much faster" in texts(at.warning)


def test_an_example_keeps_nothing_of_the_one_before() -> None:
    """The paper's PAnDA example after the authors'-code one: every parameter back at the paper's defaults."""
    from mdpviz.mechanisms import get_mechanism
    from mdpviz.ui import presets

    ss: dict = {"mp.panda-e.eps_bar": "authors-code", "mp.panda-e.pair_radius_km": 0.8, "mp.panda-e.eps": 12.0}
    import streamlit as st

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(st, "session_state", ss)
        presets.apply("panda-e-paper")
    defaults = get_mechanism("panda-e").defaults()
    assert ss["mp.panda-e.eps_bar"] == defaults["eps_bar"] and ss["mp.panda-e.pair_radius_km"] == 0.0
    assert ss["mp.panda-e.eps"] == defaults["eps"] and ss["k"] == 2000 and ss["city"] == "rome"


def test_learns_delta_tab_has_a_live_example() -> None:
    at = app("app_pages/learn.py")
    assert "Live, PAnDA-p on 100 secrets of Helsinki" in texts(at.markdown)
    at.select_slider(key="learn_delta").set_value(0.15).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = texts(at.markdown)
    assert "at δ = 0.15 the safety margin takes **0 %**" in shown and "(at δ = 10⁻⁷: 0.48 %)" in shown


def test_panda_floor_controls_read_in_words() -> None:
    """The walk found PAnDA's `w_min` shown as code: its label and the floor's choices read in words."""
    from mdpviz.mechanisms import get_mechanism

    params = {p.name: p for p in get_mechanism("panda-e").params}
    assert "w_min" not in params["w_min"].display
    for choice in params["floor"].choices:
        assert "_" not in params["floor"].shown(choice).split("(")[0]


PAGES = ("home", "explore", "which", "compare", "tradeoff", "trajectories", "learn", "reproduce")


@pytest.mark.parametrize("page", PAGES)
def test_every_glossary_term_a_page_shows_is_defined_there(page: str) -> None:
    """Issue 27: a term from the glossary (claim, collapsed, V_pair, ...) is defined on the page that uses it, in a
    tooltip (``glossary.help_for``) or, on Learn, in the glossary itself. ε is left out: every ε control defines
    it."""
    from streamlit.testing.v1 import AppTest

    from mdpviz.ui.glossary import GLOSSARY, terms_in

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown, defined = [], []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "metric"):
        for element in getattr(at, kind):
            shown.append(str(getattr(element, "value", None) or getattr(element, "label", "")))
            defined.append(str(getattr(element, "help", None) or ""))
    where = " ".join(defined + shown)
    missing = {t for text in shown for t in terms_in(text) if t != "ε (km⁻¹)" and GLOSSARY[t] not in where}
    assert not missing, f"{page}: no definition on the page for {sorted(missing)}"


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
