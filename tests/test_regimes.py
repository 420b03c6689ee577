"""The regime grid (issue 26): outcomes decided from measured records, the ranking, and the command end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mdpviz.cli import main
from mdpviz.regimes import cell_table, method_map, rank, regime_points
from mdpviz.regimes.grid import methods
from mdpviz.regimes.report import CELLS_FILE, POINTS_FILE, load_cells

CELL = {"city": "rome", "region": "whole", "K": 500, "cost": "distance", "eps": 5.0}


def record(method: str, seed: int, **row: Any) -> dict[str, Any]:
    """A sweep record as the runner writes it (only what the cell table reads)."""
    base = {"status": "optimal", "floor_m": 1000.0, "degenerate": "", "message": "", "claim_violated": 0,
            "claim_checked": 100, "violation_ratio": 0.0, "time_s": 1.0}
    base.update(row)
    if "loss_m" in base and "privacy_cost_m" not in base:
        base["privacy_cost_m"] = base["loss_m"] - base["floor_m"]
    return {"point": {"tags": {**CELL, "method": method}, "seed": seed}, "rows": [base]}


def records() -> list[dict[str, Any]]:
    out = []
    for seed, em in ((0, 1400.0), (1, 1500.0)):
        out += [record("em", seed, loss_m=em, status="closed form"),
                record("lp", seed, loss_m=1010.0 + seed),
                record("good", seed, loss_m=em * 0.9),
                record("close", seed, loss_m=em * 0.995),  # under 1 % below EM: not a win
                record("leaky", seed, loss_m=1100.0, claim_violated=3 * seed),
                record("collapsed", seed, loss_m=9000.0, degenerate="Collapsed: every secret ..."),
                record("unmeasured", seed, loss_m=1200.0, claim_checked=None, claim_violated=None)]
    out.append(record("slow", 0, status="time limit", message="Time limit after 60 s"))
    out.append({"point": {"tags": {**CELL, "method": "slow"}, "seed": 1}, "error": "ValueError: boom"})
    return out


def test_each_cell_gets_the_outcome_its_measurements_earn() -> None:
    table = cell_table(records()).set_index("method")
    assert table.loc["em", "outcome"] == "reference" and table.loc["lp", "outcome"] == "beats EM"
    assert table.loc["good", "outcome"] == "beats EM" and table.loc["good", "vs_em"] == pytest.approx(0.9)
    assert table.loc["close", "outcome"] == "trails EM"
    assert table.loc["leaky", "outcome"] == "breaks its claim"  # one seed of two breaks it: that is enough
    assert table.loc["collapsed", "outcome"] == "degenerate" and "Collapsed" in table.loc["collapsed", "why"]
    assert table.loc["unmeasured", "outcome"] == "claim not measured"
    assert table.loc["slow", "outcome"] == "no result" and "Time limit" in table.loc["slow", "why"]
    # the LP's share: its own privacy cost is 100 %; "good" pays (0.9·EM − floor) / (LP − floor)
    assert table.loc["lp", "share_of_lp"] == pytest.approx(1.0)
    assert table.loc["good", "share_of_lp"] == pytest.approx(((1260 - 1000) / 10 + (1350 - 1000) / 11) / 2)
    assert table.loc["em", "loss_ci95_m"] > 0 and table.loc["em", "seeds"] == 2


def test_without_em_on_a_seed_nothing_is_said_to_trail_it() -> None:
    recs = [r for r in records() if not (r["point"]["tags"]["method"] == "em" and r["point"]["seed"] == 1)]
    table = cell_table(recs).set_index("method")
    assert table.loc["good", "outcome"] == table.loc["lp", "outcome"] == "EM not measured"
    assert table.loc["leaky", "outcome"] == "breaks its claim"  # the claim is judged whatever EM did


def test_ranking_puts_sound_methods_first_by_privacy_cost() -> None:
    order = list(rank(cell_table(records()), **CELL)["method"])
    assert order[:4] == ["lp", "good", "close", "em"]
    assert order[4:] == ["unmeasured", "collapsed", "leaky", "slow"]


def test_the_grid_covers_every_mechanism_and_preset_but_cmdp() -> None:
    names = {m.name for m in methods()}
    assert {"em", "lp", "lp-bd", "lp-bd:stabilised", "panda-e:authors-code", "aipo:paper", "dista-lp"} <= names
    assert not any(n.startswith("cmdp") for n in names)
    full = regime_points("full", only=["panda-e", "lp"])
    ks = {(p.mechanism, p.problem["k"]) for p in full}
    assert ("panda-e", 5000) in ks and ("lp", 5000) not in ks  # K = 5,000 only for the methods built for it
    assert {p.tags["eps"] for p in full} == {0.5, 1.0, 2.0, 5.0, 10.0, 15.0} and {p.seed for p in full} == {0, 1, 2}
    # `--k` narrows the values of K a run solves
    assert {p.problem["k"] for p in regime_points("full", only=["panda-e"], ks=[200, 5000])} == {200, 5000}


TINY = ["regimes", "--tiny", "--only", "em", "lp", "panda-e"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny grid of three methods, run once through the command."""
    out = tmp_path_factory.mktemp("grid") / "regimes"
    assert main([*TINY, "--out", str(out)]) == 0
    return out


def test_the_tiny_grid_runs_writes_and_resumes(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = load_cells(tiny)
    assert table is not None and set(table["method"]) == {"em", "lp", "panda-e"}
    assert (tiny / "README.md").read_text().startswith("# Where each mechanism wins")
    assert (tiny / "charts" / "panda-e.html").is_file()
    lines = (tiny / POINTS_FILE).read_text().splitlines()
    assert len(lines) == 12 and all("rows" in json.loads(line) for line in lines)
    grid = method_map(table, "lp", city="rome", K=40, cost="distance")
    assert list(grid.index) == ["centre:2", "whole"] and list(grid.columns) == [1.0, 5.0]
    capsys.readouterr()
    assert main([*TINY, "--out", str(tiny)]) == 0
    assert "0 computed, 12 reused" in capsys.readouterr().out
    assert pd.read_csv(tiny / CELLS_FILE).equals(table)
    # a point that stopped at its time limit (a busy machine) is computed again on request, and the new one wins
    first = json.loads(lines[0])
    first["rows"][0]["status"] = "time limit"
    with open(tiny / POINTS_FILE, "a") as f:
        f.write(json.dumps(first) + "\n")
    capsys.readouterr()
    assert main([*TINY, "--out", str(tiny), "--retry-limits"]) == 0
    assert "1 computed, 11 reused" in capsys.readouterr().out
    again = pd.read_csv(tiny / CELLS_FILE)
    assert again[["method", "outcome", "loss_m"]].equals(table[["method", "outcome", "loss_m"]])
    # `--only` and `--k` narrow what is solved, not the report: the other points in the file stay in it
    assert main(["regimes", "--tiny", "--only", "em", "--out", str(tiny)]) == 0
    assert set(pd.read_csv(tiny / CELLS_FILE)["method"]) == {"em", "lp", "panda-e"}
    capsys.readouterr()
    assert main([*TINY, "--k", "40", "--out", str(tiny)]) == 0
    assert "0 computed, 12 reused" in capsys.readouterr().out


def test_the_which_page_ranks_a_cell_and_says_where_a_method_never_wins(tiny: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from mdpviz.ui import which

    monkeypatch.setattr(which, "SHIPPED_DIR", tiny)
    st.cache_data.clear()
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    at.switch_page("app_pages/which.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Optimal LP" in at.success[0].value and "least privacy cost" in at.success[0].value
    ranked = at.dataframe[0].value
    assert list(ranked["method"])[0] == "Optimal LP" and "privacy cost" in ranked.columns
    assert at.selectbox(key="which_method").value != "panda-e"  # it opens on a method that wins somewhere
    assert any("beats the exponential mechanism in" in s.value for s in at.success[1:])
    at.selectbox(key="which_method").set_value("panda-e").run()
    assert any("PAnDA-e" in w.value and "beats the exponential mechanism in no cell" in w.value for w in at.warning)
    at.selectbox(key="which_eps").set_value(1.0).run()
    assert not at.exception and "ε = 1 km⁻¹" in at.success[0].value
    next(b for b in at.button if b.key == "which_open").click().run()
    assert not at.exception and at.session_state["mech"] == "lp" and at.session_state["mp.lp.eps"] == 1.0
    st.cache_data.clear()


@pytest.mark.parametrize("argv,message", [
    (["--only", "nope"], "Unknown method"), (["--workers", "-1"], "--workers"), (["--budget", "0"], "--budget"),
    (["--out", ""], "`--out` is empty")])
def test_bad_options_are_refused_before_any_work(argv: list[str], message: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    if "--out" not in argv:
        argv = [*argv, "--out", str(tmp_path / "r")]
    assert main(["regimes", "--tiny", *argv]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "r").exists()


def test_report_only_rebuilds_from_the_points_file_without_solving(tiny: Path, capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import mdpviz.regimes.run as run

    monkeypatch.setattr(run, "run_sweep", lambda *a, **k: pytest.fail("--report-only must not solve"))
    assert main([*TINY, "--out", str(tiny), "--report-only"]) == 0
    assert "0 computed, 12 reused" in capsys.readouterr().out
    assert "library version(s)" in (tiny / "README.md").read_text()


def test_examples_follow_the_map(tiny: Path) -> None:
    """A seed's example is its best cell where it beats EM, with the whole problem set; a seed that wins nowhere
    is listed with its most common outcome and the reason."""
    from mdpviz.regimes.examples import nowhere, seed_examples
    from mdpviz.ui.presets import check

    table = load_cells(tiny)
    good = pd.DataFrame([{**CELL, "method": "aipo-e", "outcome": "beats EM", "vs_em": 0.8, "time_s": 2.0,
                          "outputs": 100, "loss_m": 800.0, "em_loss_m": 1000.0, "privacy_cost_m": 50.0}])
    examples = seed_examples(pd.concat([table, good], ignore_index=True))
    aipo = next(e for e in examples if e["id"] == "regime-aipo-e")
    assert aipo["values"]["city"] == "rome" and aipo["values"]["k"] == 500 and aipo["values"]["m"] == 100
    assert aipo["values"]["mp.aipo-e.eps"] == 5.0 and "0.80× the exponential mechanism's" in aipo["help"]
    assert not check(aipo)
    panda = [n for n in nowhere(table) if n[0].startswith("PAnDA")]
    assert panda and panda[0][1] in ("breaks its claim", "is degenerate", "gives no mechanism", "trails EM")
    # our variant of a seed (issue 30) is an example of its own, and does not hide that the paper's version fails
    ours = pd.DataFrame([{**CELL, "method": "dista-lp:ours", "outcome": "beats EM", "vs_em": 0.9, "time_s": 9.0,
                          "outputs": 100, "loss_m": 900.0, "em_loss_m": 1000.0, "privacy_cost_m": 60.0},
                         {**CELL, "method": "dista-lp", "outcome": "degenerate", "why": "Uploads erased: all"}])
    with_ours = pd.concat([table, ours], ignore_index=True)
    variant = next(e for e in seed_examples(with_ours) if e["id"] == "regime-dista-lp-ours")
    assert variant["ours"] and "our variant" in variant["label"] and "Ours, not the paper's" in variant["help"]
    assert variant["values"]["mp.dista-lp.upload"] == "cell" and not check(variant)
    assert any(n[0].startswith("DISTA-LP") for n in nowhere(with_ours))


def test_a_seed_that_breaks_its_claim_is_told_why_by_the_measured_break_not_by_a_collapse_beside_it() -> None:
    """Where cells break their claim and also collapsed, Home's reason is the measured break (the collapse is a
    degeneracy of its own); a degenerate outcome keeps its plain kind."""
    from mdpviz.regimes.examples import nowhere

    both = "Collapsed: every user reports the same distribution (all 9 anchor rows merged); Claim not met: 5 of 9 " \
           "user pairs (56%) break their (ε, δ)-PmDP bound (δ = 1e-07)"
    table = pd.DataFrame([{**CELL, "method": "panda-e", "outcome": "breaks its claim", "why": both},
                          {**CELL, "method": "dista-lp", "outcome": "degenerate", "why": "Uploads erased: all"}])
    reasons = {seed.split(" ")[0]: (verb, why) for seed, verb, _, _, why in nowhere(table)}
    assert reasons["PAnDA"] == ("breaks its claim", "in one of them 5 of 9 user pairs (56%) break their "
                                "(ε, δ)-PmDP bound (δ = 1e-07)")
    assert reasons["DISTA-LP"][0] == "is degenerate" and "uploads were erased" in reasons["DISTA-LP"][1]


def test_a_claim_within_what_delta_allows_is_not_broken_in_the_grid() -> None:
    """The cell table follows the verdict (verdict.against_claim), not a raw count: PAnDA's V_pair within δ keeps
    its claim; a record made before ``claim_kept`` existed is judged by its count."""
    recs = [record("em", 0, loss_m=1400.0, status="closed form"),
            record("within", 0, loss_m=1300.0, claim_violated=3, claim_kept=True),
            record("old", 0, loss_m=1300.0, claim_violated=3)]
    table = cell_table(recs).set_index("method")
    assert table.loc["within", "outcome"] == "beats EM" and table.loc["old", "outcome"] == "breaks its claim"
