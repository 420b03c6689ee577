"""The dashboard explains itself: its pure helpers (URL parsing, diagnostics in words), verdicts and messages for
every outcome, refusals, presets and examples, and a glossary for the words its pages use (through Streamlit's
AppTest, as in ``test_app.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from app_helpers import APP, TIMEOUT, app, metric, registered, solve_button, texts

from mdpviz.ui import state
from mdpviz.ui.diagnostics import split_diagnostics

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
        "anchors": np.array([1, 5, 9]), "eps_bar": np.array([0.1, 0.2, 0.4, 0.8, 1.6]),
        "pooled_p": np.array([0.25, 0.5]),
        "budget_split": {"phase1": 23.9, "margin": 9.1, "phase2": 67.0}, "status": "ok", "grid": np.eye(2)})
    assert set(arrays) == {"eps_bar"}  # a histogram needs a few values; two are listed instead
    assert scalars["pooled_p"] == "0.25, 0.5"
    assert scalars["budget_split.phase1"] == 23.9 and scalars["anchors"] == "3 whole numbers (in the downloads)"
    assert other == {"grid": "a 2 × 2 table (in the downloads)"}


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
        ("violations · V_pair (between users)", "3", "12", "0.25"),
        ("LP · against its LP's constraints", "0", "6", "0")]
    scalars, arrays, _other = split_diagnostics(diag)
    assert set(scalars) == {"eps_bar.median"} and not arrays


def test_iteration_histories_have_named_columns() -> None:
    """The LP engines' histories are drawn with their columns' names (the walk of the dashboard found "history"
    and "column 0 … column 4" on Explore's diagnostics); an unknown 2-D diagnostic is numbered from 1."""
    from mdpviz.ui.charts import columns_chart
    from mdpviz.ui.diagnostics import array_columns

    structured = {"history": [(0.1, 15.0, 14.0, 3000, 14000)] * 3, "pair_cap": 15.0}
    names = array_columns(structured, "history", 5)
    assert names == ["seconds since start", "best objective (m)", "best bound (m)", "LP variables", "LP pair rows"]
    assert array_columns({"history": [], "atoms_final": 1}, "history", 4)[-1] == "atoms"
    assert array_columns({"history": []}, "history", 5) == [f"column {j}" for j in range(1, 6)]
    fig = columns_chart(np.asarray(structured["history"], float), "Iteration history", names)
    assert [a.text for a in fig.layout.annotations] == names


def test_trajectory_curves_table_has_words_not_keys() -> None:
    """Trajectories' loss-against-ε table: readable column names (the library's rows say ``vs_lp_pct``,
    ``heldout_loss_m``, ``wall_s``) and "–" for a method without a value, never None or NaN."""
    import pandas as pd

    from mdpviz.ui.trajectories import curves_table, violations_text

    rows = pd.DataFrame([{"eps": 0.5, "method": "cmdp", "label": "LP+C-mDP", "status": "optimal", "loss_m": 1325.1234,
                          "heldout_loss_m": 1325.7, "objective_m": 1325.1, "wall_s": 2.54321, "vs_lp_pct": -5.1},
                         {"eps": 0.5, "method": "em", "label": "ExpMech", "status": "time limit", "wall_s": 60.0,
                          "heldout_loss_m": None}])
    shown = curves_table(rows)
    assert not [c for c in shown.columns if "_" in c or c == "method" and "LP+C-mDP" not in set(shown[c])]
    assert {"ε (km⁻¹)", "expected loss (m)", "held-out loss (m)", "wall time (s)", "vs best LP (%)"} <= set(
        shown.columns)
    assert shown["method"].tolist() == ["LP+C-mDP", "ExpMech"]
    assert shown.iloc[1]["expected loss (m)"] == "–" and shown.iloc[1]["held-out loss (m)"] == "–"
    assert shown.iloc[0]["expected loss (m)"] == 1325.1 and shown.iloc[0]["wall time (s)"] == 2.543  # no noise digits
    assert not shown.isna().any().any()
    assert violations_text({"violated": 352, "checked": 3552}) == "352 / 3,552"


def test_doctests_of_the_dashboard_helpers() -> None:
    """mdpviz/ui is left out of the doctest run (importing pages needs Streamlit); its pure helpers' examples
    are run here."""
    import doctest

    from mdpviz.ui import basemap, charts, compare, diagnostics, explore, learn, metrics_panel, sweep

    for module in (basemap, charts, compare, diagnostics, explore, learn, metrics_panel, sweep):
        failed, tried = doctest.testmod(module)
        assert tried and not failed, module.__name__


# ---------------------------------------------------------------- issue 17: explains itself, refusals, presets


def test_verdict_and_message_shown_for_every_status() -> None:
    """The verdict box sits above the metrics; the mechanism's message shows even when the status is optimal."""
    from mdpviz.mechanisms import Result
    from mdpviz.mechanisms.em import em_matrix

    def solve(problem, params, progress, time_limit):
        return Result("test-said", params, em_matrix(problem, params["eps"]), "optimal", params["eps"],
                      message="Phase I used the whole budget.", degenerate="Collapsed: every user reports the same.")

    with registered("test-said", "Test degenerate mechanism", solve):
        at = app("app_pages/explore.py", query={"mech": "test-said", "k": "30", "m": "10"})
        solve_button(at).click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert ("Test degenerate mechanism is degenerate (collapsed: every secret gets the same report "
                "distribution, so a report says nothing), and kept its promise") in texts(at.warning)
        assert "Test degenerate mechanism: Collapsed: every user reports the same." in texts(at.caption)
        assert "**What happened:** Phase I used the whole budget." in texts(at.caption)
        assert metric(at, "Utility loss (m)")  # the metrics still show below the verdict


def test_derived_metrics_follow_the_result_not_the_inputs() -> None:
    """Issue 18 item 3: a time-limited result and a full one of the same parameters never share metrics."""
    from mdpviz.mechanisms import Result
    from mdpviz.mechanisms.em import em_matrix

    def solve(problem, params, progress, time_limit):
        if time_limit is not None and time_limit < 5:  # as if the solver stopped early with a worse mechanism
            return Result("test-limited", params, em_matrix(problem, params["eps"] / 4), "time limit", params["eps"])
        return Result("test-limited", params, em_matrix(problem, params["eps"]), "optimal", params["eps"])

    with registered("test-limited", "Test limited mechanism", solve, family="lp"):
        at = app("app_pages/explore.py", query={"mech": "test-limited", "k": "40", "m": "10", "time_limit": "2"})
        solve_button(at).click().run()
        limited = float(metric(at, "Utility loss (m)"))
        assert "Stopped at the time limit" in texts(at.warning)
        at.number_input(key="time_limit").set_value(60.0)
        solve_button(at).click().run()
        full = float(metric(at, "Utility loss (m)"))
        assert full < limited  # the full solve's own loss, not the earlier result's
        assert "kept its promise" in texts(at.success)


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


def test_panda_floor_controls_read_in_words() -> None:
    """The walk found PAnDA's `w_min` shown as code: its label and the floor's choices read in words."""
    from mdpviz.mechanisms import get_mechanism

    params = {p.name: p for p in get_mechanism("panda-e").params}
    assert "w_min" not in params["w_min"].display
    for choice in params["floor"].choices:
        assert "_" not in params["floor"].shown(choice).split("(")[0]


# ---------------------------------------------------------------- the glossary


def test_learn_has_a_glossary_of_the_words_verdicts_use() -> None:
    from mdpviz.ui.glossary import GLOSSARY, help_for

    at = app("app_pages/learn.py")
    shown = texts(at.markdown)
    assert all(f"**{term}**" in shown for term in GLOSSARY)
    tip = help_for("PAnDA-e is degenerate (collapsed: ...), and broke its promise")
    assert tip is not None and "**collapsed**: Every secret gets the same" in tip and "Glossary tab" in tip
    assert help_for("nothing defined here") is None


def test_learns_delta_tab_has_a_live_example() -> None:
    at = app("app_pages/learn.py")
    assert "Live, PAnDA-p on 100 secrets of Helsinki" in texts(at.markdown)
    at.select_slider(key="learn_delta").set_value(0.15).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = texts(at.markdown)
    assert "at δ = 0.15 the safety margin takes **0 %**" in shown and "(at δ = 10⁻⁷: 0.48 %)" in shown


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


def test_compare_bars_name_mechanisms_by_label() -> None:
    """The review saw raw registry names (``em``, ``panda-e``) under Compare's bars beside a table of labels."""
    import pandas as pd

    from mdpviz.ui.charts import SWEEP_METRICS, metric_bars

    df = pd.DataFrame({"mechanism": ["em", "panda-e"], "label": ["Exponential mechanism", "PAnDA-e"],
                       **{col: [1.0, 2.0] for col, _ in SWEEP_METRICS}})
    assert all(list(trace.x) == ["Exponential mechanism", "PAnDA-e"] for trace in metric_bars(df).data)


def test_compare_reads_violations_against_each_claim_as_its_verdict_does() -> None:
    """The review saw DISTA-LP "holds on its claim (0 of 45,600 claimed triples)" beside the only non-zero bar of an
    all-pairs "mDP violation ratio" chart, and a broken PAnDA at 0: the table now gives the claim's count first and
    the chart its ratio, with the all-pairs count kept as its own column."""
    import numpy as np
    import pandas as pd

    from mdpviz.mechanisms import Result, get_mechanism
    from mdpviz.ui.charts import metric_bars
    from mdpviz.ui.compare import metrics_row, shown_table

    ev = {"utility_loss_m": 300.0, "adversary_error_m": 250.0, "privacy_cost_m": 100.0,
          "violations": {"violated_pairs": 57, "checked_pairs": 90, "ratio": 57 / 90, "worst_factor": 3.0,
                         "tolerance": 1e-9, "eps": 5.0, "metric": "haversine"}}
    narrow = Result("dista-lp", {}, np.full((10, 2), 0.5), "optimal", 5.0, claim="ε-mDP inside each neighbourhood",
                    diagnostics={"violations_claim": {"violated": 0, "checked": 456, "unit": "triples (i, j, y)"}})
    row = metrics_row(get_mechanism("dista-lp"), narrow, ev)
    assert row["claim_violation_ratio"] == 0.0 and row["violation_ratio"] == 57 / 90
    assert row["violated / claimed"] == "0 / 456 triples" and row["violated / all pairs"] == "57 / 90"
    table = shown_table([row])
    assert list(table.columns).index("violated / claimed") < list(table.columns).index("violated / all pairs")
    fig = metric_bars(pd.DataFrame([row]))
    titles = [a.text for a in fig.layout.annotations]
    assert "Violation ratio of its own claim" in titles and list(fig.data[titles.index(
        "Violation ratio of its own claim")].y) == [0.0]


def test_compare_bars_lead_with_the_privacy_cost_when_the_table_has_it() -> None:
    """A loss is read against the no-privacy floor: Compare's first panel is the privacy cost, as its table's."""
    import pandas as pd

    from mdpviz.ui.charts import SWEEP_METRICS, metric_bars

    df = pd.DataFrame({"mechanism": ["em", "lp"], "label": ["EM", "LP"], "privacy_cost_m": [162.0, 15.0],
                       **{col: [1.0, 2.0] for col, _ in SWEEP_METRICS}})
    fig = metric_bars(df)
    assert fig.layout.annotations[0].text.startswith("Privacy cost (m)") and list(fig.data[0].y) == [162.0, 15.0]


def test_the_headline_counts_c_mdps_stations_as_stations() -> None:
    """The review read "K = 8 secrets" beside C-mDP's "n secrets 221": C-mDP takes the K secrets as stations and
    makes its own secrets of (station, context) pairs; the headline now says stations for it, secrets for others."""
    from mdpviz.mechanisms import get_mechanism
    from mdpviz.problem import build_problem
    from mdpviz.ui.explore import headline

    prob = build_problem("helsinki", 8, n_outputs=8, seed=0)
    assert "K = 8 stations (C-mDP's secrets: station and context)" in headline(prob, get_mechanism("cmdp"), {})
    assert "K = 8 secrets ·" in headline(prob, get_mechanism("em"), {"eps": 5.0})


def test_aipos_dropped_outputs_are_explained() -> None:
    """The review read "dropped outputs 89" (of |Y| = 100) with no word of what was dropped."""
    from mdpviz.ui.diagnostics import key_label

    assert key_label("dropped_outputs").startswith("outputs never reported")
