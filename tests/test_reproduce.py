"""`reproduce`: one experiment per seed paper, each runs in its tiny form and writes a report that puts our numbers
beside the paper's, read from the one data file of the paper's values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from mdpviz.cli import main
from mdpviz.reproduce import experiments, get_experiment, reproduce
from mdpviz.reproduce.base import VALUES_FILE, comparison_row, fit_params, paper_value, verdict
from mdpviz.reproduce.report import load_report

VALUES = json.loads(VALUES_FILE.read_text(encoding="utf-8"))
BY_ID = {v["id"]: v for v in VALUES["values"]}


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the module: experiments sharing a grid (PAnDA's three) solve it once."""
    return tmp_path_factory.mktemp("reproduce")


def test_every_seed_paper_has_an_experiment(capsys: pytest.CaptureFixture[str]) -> None:
    assert {e.paper for e in experiments()} == set(VALUES["papers"]) == {"panda", "benders", "aipo", "cmdp", "dista"}
    assert main(["reproduce", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(e.name in listed for e in experiments())


def test_the_paper_values_file_says_where_each_number_comes_from() -> None:
    for v in VALUES["values"]:
        assert v["source"] and v["spec"] and v["hardware"] and v["paper"] in VALUES["papers"]
        assert v["value"] is not None or v["status"], v  # a number, or the paper's word for the empty cell
        if v["relation"] == "range":
            assert len(v["range"]) == 2
    table4 = paper_value("panda", source="Table 4", city="rome", K=500, method="PAnDA-e")
    assert table4 is not None and table4["value"] == 238.77 and table4["pm"] == 39.76  # spec 000 §7.3
    assert paper_value("benders", source="Table 3", dataset="road", method="BD k-m-DV")["value"] == 290.7


@pytest.mark.parametrize("name", [e.name for e in experiments() if not e.name.endswith("-ladder")])
def test_each_experiment_runs_tiny_and_cites_the_papers_numbers(name: str, out_dir: Path) -> None:
    exp = get_experiment(name)
    path, cmp = reproduce(name, size="tiny", out_dir=out_dir)
    report = load_report(path.parent)
    assert report is not None and (path.parent / "chart.html").stat().st_size > 1000
    assert (out_dir / "plotly.min.js").exists()  # the chart's script is local: it opens offline
    frame = report["comparison"]
    assert len(frame) == len(cmp.rows) > 0
    cited = frame[frame["paper_id"].notna() & (frame["paper_id"] != "")]
    assert len(cited) > 0, f"{name} compares against no paper number"
    for row in cited.itertuples(index=False):
        paper = BY_ID[row.paper_id]  # every cited number is in the data file, as the report prints it
        assert paper["paper"] == exp.paper and str(row.paper) == paper["text"]
        assert paper["text"] in report["markdown"]
    measured = frame[frame["ours"].notna()]
    assert len(measured) > 0, f"{name} measured nothing"
    # a row that differs from the paper says why
    differs = frame[frame["verdict"] == "differs"]
    assert differs["reason"].fillna("").str.len().gt(0).all()
    meta = report["meta"]
    assert meta["machine"] and meta["load_start"] and meta["points"] > 0 and meta["errors"] == 0
    assert f"[{path.parent.name}]({path.parent.name}/report.md)" in (out_dir / "README.md").read_text()


def test_a_rerun_reuses_the_points_file(out_dir: Path) -> None:
    path, _ = reproduce("aipo-tables", size="tiny", out_dir=out_dir)
    meta = load_report(path.parent)["meta"]
    assert meta["computed"] == 0 and meta["reused"] == meta["points"]


def test_settings_a_mechanism_lacks_are_dropped_and_said() -> None:
    kept, notes = fit_params("em", {"eps": 2.0, "scale": "nonsense", "pairs": "neighbours"})
    assert kept == {"eps": 2.0}
    assert any("scale" in n for n in notes) and any("no parameter `pairs`" in n for n in notes)


def test_verdicts_follow_the_papers_band_and_bounds() -> None:
    paper = {"value": 100.0, "pm": 10.0, "relation": "="}
    assert verdict(105.0, paper)[0] == "agrees" and verdict(200.0, paper)[0] == "differs"
    assert verdict(1e-9, {"value": 1e-7, "relation": "<"})[0] == "bound holds"
    assert verdict(0.2, {"value": 1e-7, "relation": "<"})[0] == "bound fails"
    row = comparison_row(table="T", city="rome", setting="K = 1", x=1, method="m", metric="loss", unit="m",
                         ours=200.0, paper={**paper, "text": "100±10", "source": "Table 4", "spec": "s", "id": "x"},
                         reason="why")
    assert row["verdict"] == "differs" and row["reason"] == "why" and math.isclose(row["ratio"], 2.0)


def test_cli_runs_an_experiment_and_prints_where_the_report_is(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "dista-tables", "--tiny", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "wrote" in out and (tmp_path / "dista-tables-tiny" / "report.md").exists()
    assert main(["reproduce", "no-such-table", "--tiny"]) == 2
    frame = pd.read_csv(tmp_path / "dista-tables-tiny" / "comparison.csv")
    assert {"ours", "paper", "ratio", "reason"} <= set(frame.columns)
    assert main(["reproduce", "aipo-tables", "--tiny", "--budget", "-1"]) == 2


def test_a_run_stopped_by_its_budget_lists_what_it_left_out(tmp_path: Path) -> None:
    assert main(["reproduce", "aipo-tables", "--tiny", "--budget", "1e-9", "--out", str(tmp_path)]) == 0
    report = load_report(tmp_path / "aipo-tables-tiny")
    meta = report["meta"]
    assert meta["stopped"] and meta["computed"] == 0 < meta["points"] and meta["not_run"]
    assert "## Not run" in report["markdown"] and meta["not_run"][0] in report["markdown"]
    assert f"{meta['points']} of {meta['points']} points not run" in (tmp_path / "README.md").read_text()
    assert main(["reproduce", "aipo-tables", "--tiny", "--out", str(tmp_path)]) == 0  # resumes the rest
    meta = load_report(tmp_path / "aipo-tables-tiny")["meta"]
    assert meta["computed"] == meta["points"] and not meta["not_run"] and "## Not run" not in (
        tmp_path / "aipo-tables-tiny" / "report.md").read_text()
    assert "did not cover their whole grid" not in (tmp_path / "README.md").read_text()


def test_reproduce_page_shows_a_report_and_reruns_live() -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.switch_page("app_pages/reproduce.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="repro_paper").set_value("dista").run()
    assert "DISTA-LP" in at.markdown[0].value or any("DISTA-LP" in m.value for m in at.markdown)
    at.session_state["repro_size"] = "tiny"  # the button reruns the quick form; tiny keeps the test short
    at.button(key="repro_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("your tiny rerun" in c.value for c in at.caption)
    assert len(at.dataframe) >= 1 and len(at.tabs) >= 3  # Table IV, budgets, time, bytes
    assert any(m.label == "rows" for m in at.metric)


def test_chart_leaves_out_lower_bars_that_a_log_axis_cannot_show() -> None:
    from mdpviz.reproduce.base import ChartSpec
    from mdpviz.reproduce.report import chart_figure

    rows = [{"metric": "time", "table": "", "method": "LP", "city": "rome", "x": 500, "ours": 2.0, "ours_pm": 3.0,
             "paper_value": None, "paper": ""},
            {"metric": "time", "table": "", "method": "LP", "city": "rome", "x": 1000, "ours": 8.0, "ours_pm": 1.0,
             "paper_value": None, "paper": ""}]
    for log_y, want in ((True, [0.0, 1.0]), (False, [3.0, 1.0])):
        fig = chart_figure(rows, ChartSpec("time", "K", "s", log_y=log_y), "t")
        bars = fig.data[0].error_y
        assert list(bars.array) == [3.0, 1.0] and list(bars.arrayminus) == want


def test_a_band_reaching_0_is_no_test_and_a_within_claim_is_one_sided() -> None:
    from mdpviz.reproduce.base import BAND_COVERS_0

    wide = {"value": 10.0, "pm": 22.35, "relation": "="}  # PAnDA London K = 3,000's ± band
    assert verdict(0.0025, wide)[0] == BAND_COVERS_0  # was 'agrees': the band covers 0
    assert verdict(11.0, wide)[0] == "agrees"  # a ratio inside [0.8, 1.25] still agrees
    within = {"value": 2.0, "relation": "abs<="}  # C-mDP: "within 1–2 % of TrueMB"
    assert verdict(0.05, within)[0] == verdict(-0.09, within)[0] == "bound holds"
    assert verdict(3.5, within)[0] == "bound fails"


def test_a_degenerate_release_never_agrees() -> None:
    paper = {"value": 100.0, "pm": 10.0, "relation": "=", "text": "100", "source": "T", "spec": "s", "id": "x"}
    row = comparison_row(table="T", city="rome", setting="s", x=1, method="m", metric="loss", unit="m", ours=101.0,
                         paper=paper, degenerate="Degenerate release: every user reports the same distribution")
    assert row["verdict"] == "degenerate" and "same distribution" in row["reason"]


def test_cmdp_rows_find_every_method_the_comparison_emits() -> None:
    from mdpviz.cmdp_comparison import BEST_LP_LABEL, NO_MOTION_LP_LABEL
    from mdpviz.reproduce.cmdp import LABELS

    assert {BEST_LP_LABEL, NO_MOTION_LP_LABEL} <= set(LABELS)  # the LP rows had "no number": labels differed


def test_report_only_rebuilds_a_report_from_its_points_without_computing(tmp_path: Path) -> None:
    assert main(["reproduce", "aipo-tables", "--tiny", "--out", str(tmp_path)]) == 0
    first = load_report(tmp_path / "aipo-tables-tiny")
    points = tmp_path / "_points" / "aipo-tables-tiny.jsonl"
    lines = points.read_text().splitlines()
    for line in lines:  # records of other code are never reused by a run, but a report-only rebuild reads them
        assert json.loads(line)["code"]
    points.write_text("\n".join(line.replace(json.loads(line)["code"], "other-code") for line in lines) + "\n")
    meta_file = tmp_path / "aipo-tables-tiny" / "meta.json"  # as if the points were computed on another machine
    meta_file.write_text(json.dumps({**json.loads(meta_file.read_text()), "machine": "the machine that ran them"}))
    first["meta"]["machine"] = "the machine that ran them"
    assert main(["reproduce", "aipo-tables", "--tiny", "--report-only", "--out", str(tmp_path)]) == 0
    again = load_report(tmp_path / "aipo-tables-tiny")
    assert again["meta"]["codes"] == ["other-code"] and "--report-only" in again["meta"]["rebuilt"]
    for kept in ("command", "date", "machine", "wall_s", "computed"):  # the run that computed the points
        assert again["meta"][kept] == first["meta"][kept]
    assert again["comparison"]["ours"].equals(first["comparison"]["ours"])
    assert "`other-code`" in again["markdown"] and "rebuilt from the points file" in again["markdown"]


def test_time_rows_of_a_rebuilt_report_name_the_machine_that_computed_its_points() -> None:
    from mdpviz.reproduce import common as cm

    with cm.points_machine("the machine that ran them"):
        assert "HiGHS on the machine that ran them" in cm.hardware_reason()
    assert "the machine that ran them" not in cm.hardware_reason()


def test_a_panda_row_over_fewer_runs_says_what_the_others_ended_with() -> None:
    """Rome, K = 500: one of two LP runs stalled; the row's mean is over the other, and its reason says so."""
    from mdpviz.reproduce.panda import _reason_loss

    base = {"problem.city": "rome", "problem.k": 500, "tag.label": "LP"}
    runs = [{**base, "status": "optimal", "loss_m": 142.8},
            {**base, "status": "stalled", "message": "nothing left to add to the LP; certified gap 3.1e-04"}]
    text = _reason_loss("LP", runs, 142.8, None, 1000.0)
    assert text.startswith("ours: optimal (1 of 2 runs), stalled (1 of 2 runs) — nothing left to add to the LP")
    assert "against EM" in text
    assert not _reason_loss("LP", runs[:1], 142.8, None, 1000.0).startswith("ours:")
