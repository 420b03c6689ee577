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


def test_the_tiny_grid_runs_writes_and_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "regimes"
    argv = ["regimes", "--tiny", "--only", "em", "lp", "panda-e", "--out", str(out)]
    assert main(argv) == 0
    table = load_cells(out)
    assert table is not None and set(table["method"]) == {"em", "lp", "panda-e"}
    assert (out / "README.md").read_text().startswith("# Where each mechanism wins")
    assert (out / "charts" / "panda-e.html").is_file()
    lines = (out / POINTS_FILE).read_text().splitlines()
    assert len(lines) == 12 and all("rows" in json.loads(line) for line in lines)
    grid = method_map(table, "lp", city="rome", K=40, cost="distance")
    assert list(grid.index) == ["centre:2", "whole"] and list(grid.columns) == [1.0, 5.0]
    capsys.readouterr()
    assert main(argv) == 0
    assert "0 computed, 12 reused" in capsys.readouterr().out
    assert pd.read_csv(out / CELLS_FILE).equals(table)


@pytest.mark.parametrize("argv,message", [
    (["--only", "nope"], "Unknown method"), (["--workers", "-1"], "--workers"), (["--budget", "0"], "--budget"),
    (["--out", ""], "`--out` is empty")])
def test_bad_options_are_refused_before_any_work(argv: list[str], message: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    if "--out" not in argv:
        argv = [*argv, "--out", str(tmp_path / "r")]
    assert main(["regimes", "--tiny", *argv]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "r").exists()
