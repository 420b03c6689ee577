"""The claims ledger: verdict rules, the committed ledger's shape, ladders, witnesses and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mdpviz.cli import main
from mdpviz.errors import MdpvizError
from mdpviz.reproduce.ladders import ledger_data, metric_value, rungs
from mdpviz.reproduce.ledger import (
    CONTRADICTED,
    NOT_RUN,
    NOT_TESTED,
    REPRODUCED,
    UNKNOWN,
    VERDICTS,
    Records,
    claims,
    judge,
    ledger,
)


class FakeRecords(Records):
    """Rows given by hand, as ``rows_of`` would give them."""

    def __init__(self, rows: dict[str, list[dict[str, Any]]]) -> None:
        super().__init__(Path("."))
        self._rows = rows


def _rows(label: str, values: list[float], **extra: Any) -> list[dict[str, Any]]:
    return [{"tag.label": label, "seed": s, "loss_m": v, **extra} for s, v in enumerate(values)]


def _claim(band: list[float | None], cause_band: list[float | None] | None = None) -> dict[str, Any]:
    ref = {"experiment": "x", "metric": "loss_m"}
    claim: dict[str, Any] = {"id": "c", "paper": "panda", "claim": "A is 50 % below B", "where": "T1",
                             "test": {"stat": "change_pct", "of": {**ref, "where": {"tag.label": "A"}},
                                      "vs": {**ref, "where": {"tag.label": "B"}}, "band": band, "unit": "%"}}
    if cause_band is not None:
        check = {"stat": "mean", "of": {**ref, "where": {"tag.label": "C"}}, "band": cause_band}
        claim["cause"] = {"text": "C explains it.", "check": check}
    return claim


ROWS = {"x": _rows("A", [50.0, 52.0, 48.0, 51.0]) + _rows("B", [100.0, 100.0, 100.0, 100.0])
        + _rows("C", [7.0, 7.5, 6.5, 7.0])}


def test_a_claim_whose_mean_lies_in_its_band_is_reproduced() -> None:
    j = judge(_claim([-60, -40]), FakeRecords(ROWS))
    assert j.verdict == REPRODUCED and abs(j.measured[0].mean + 49.75) < 1e-9 and j.measured[0].n == 4


def test_a_clear_miss_is_contradicted_only_when_its_cause_measures_out() -> None:
    assert judge(_claim([-90, -70], [5, 10]), FakeRecords(ROWS)).verdict == CONTRADICTED
    failed = judge(_claim([-90, -70], [20, 30]), FakeRecords(ROWS))
    assert failed.verdict == UNKNOWN and "did not measure out" in failed.cause
    assert judge(_claim([-90, -70]), FakeRecords(ROWS)).verdict == UNKNOWN  # no cause given


def test_an_interval_that_still_meets_the_band_is_no_contradiction() -> None:
    noisy = {"x": _rows("A", [10.0, 90.0]) + _rows("B", [100.0, 100.0]) + _rows("C", [7.0, 7.0])}
    j = judge(_claim([-90, -70], [5, 10]), FakeRecords(noisy))  # mean −50 %, interval reaches the band
    assert j.verdict == UNKNOWN and "more runs" in j.cause


def test_a_claimed_effect_needs_its_whole_interval_in_the_band() -> None:
    noisy_gain = {"x": _rows("A", [90.0, 110.0, 85.0, 96.0]) + _rows("B", [100.0] * 4) + _rows("C", [7.0] * 4)}
    claim = _claim([None, 0], [5, 10])
    assert judge(claim, FakeRecords(noisy_gain)).verdict == REPRODUCED  # the mean is below 0 ...
    claim["test"]["strict"] = True  # ... but "A beats B" needs the whole interval below 0: not settled
    assert judge(claim, FakeRecords(noisy_gain)).verdict == UNKNOWN
    no_gain = {"x": _rows("A", [99.9, 100.1, 99.8, 100.0]) + _rows("B", [100.0] * 4) + _rows("C", [7.0] * 4)}
    assert judge(claim, FakeRecords(no_gain)).verdict == UNKNOWN  # an interval around 0, no margin: not settled
    claim["test"]["margin"] = 1.0  # every gain above 1 % ruled out: the claimed effect is clearly absent
    assert judge(claim, FakeRecords(no_gain)).verdict == CONTRADICTED


def test_one_run_of_a_mean_is_no_interval() -> None:
    one = {"x": _rows("A", [20.0]) + _rows("B", [100.0]) + _rows("C", [7.0])}
    assert judge(_claim([-60, -40], [5, 10]), FakeRecords(one)).verdict == UNKNOWN  # −80 % once: not settled


def test_pairs_that_cannot_be_told_apart_are_refused() -> None:
    twice = {"x": _rows("A", [50.0]) + _rows("B", [100.0]) + _rows("B", [90.0])}  # two B runs of seed 0
    with pytest.raises(MdpvizError, match="pairing key"):
        judge(_claim([-60, -40]), FakeRecords(twice))


def test_a_degenerate_release_is_never_reproduced() -> None:
    rows = {"x": [{**r, "degenerate": "Collapsed"} if r["tag.label"] == "A" else r for r in ROWS["x"]]}
    j = judge(_claim([-60, -40], [5, 10]), FakeRecords(rows))
    assert j.verdict == CONTRADICTED and "degenerate" in j.cause


def test_missing_records_and_untested_claims_say_so() -> None:
    assert judge(_claim([-60, -40]), FakeRecords({"x": []})).verdict == NOT_RUN
    j = judge({"id": "n", "paper": "cmdp", "claim": "c", "where": "w", "why": "data not bundled"}, FakeRecords({}))
    assert j.verdict == NOT_TESTED and j.cause == "data not bundled"


def test_metric_expressions() -> None:
    row = {"a": 6.0, "b": 3.0, "status": "optimal", "degenerate": ""}
    assert metric_value(row, "a/b") == 2.0 and metric_value(row, "missing|b") == 3.0
    assert metric_value(row, "optimal?") == 1.0 and metric_value(row, "degenerate?") == 0.0
    assert metric_value(row, "missing") is None


def test_the_ledger_file_holds_at_least_three_claims_per_paper_with_their_sources() -> None:
    per_paper: dict[str, int] = {}
    ids = [c["id"] for c in claims()]
    assert len(ids) == len(set(ids))
    for c in claims():
        per_paper[c["paper"]] = per_paper.get(c["paper"], 0) + 1
        assert c["claim"] and c["where"]
        assert c.get("test") or c.get("why"), c["id"]  # judged, or says why not
    assert all(per_paper.get(p, 0) >= 3 for p in ("panda", "aipo", "cmdp", "dista", "benders")), per_paper
    for lad in ledger_data()["ladders"].values():  # a rung inherits only from an earlier one
        assert len(rungs(lad)) == len(lad["rungs"])


def test_the_committed_ledger_gives_every_claim_a_verdict_and_a_measured_cause() -> None:
    judged = ledger()
    assert len(judged) == len(claims())
    for j in judged:
        d = j.as_dict()
        assert d["verdict"] in VERDICTS and d["verdict"] != NOT_RUN and d["evidence"], d["id"]
        if d["verdict"] != REPRODUCED:
            assert d["cause"], d["id"]
        assert "different machine" not in (d["cause"] + d["evidence"])


def test_cli_prints_the_ledger_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--claims", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"paper", "claim", "verdict", "cause", "evidence"} <= set(data[0]) and len(data) == len(claims())
    assert main(["reproduce", "--json"]) == 2  # --json goes with --claims
    assert main(["reproduce", "--witness", "no-such-claim"]) == 2
    assert main(["reproduce", "--witness", "aipo-vs-em"]) == 2  # states no breach


@pytest.mark.parametrize("name", list(ledger_data()["ladders"]))
def test_a_tiny_ladder_writes_its_table_and_the_folder_its_claims(name: str, tmp_path: Path) -> None:
    assert main(["reproduce", name, "--tiny", "--out", str(tmp_path)]) == 0
    report = (tmp_path / f"{name}-tiny" / "report.md").read_text()
    assert "## The ladder" in report
    table = report.split("## The ladder", 1)[1]
    for n, rung in enumerate(ledger_data()["ladders"][name]["rungs"]):
        assert f"| {n}. {rung['label']} |" in table  # every rung measured, in order
    assert not (tmp_path / "CLAIMS.md").exists()  # the ledger judges full forms: a tiny run writes none


def test_claims_out_judges_that_folder_and_writes_its_ledger(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--claims", "--out", str(tmp_path)]) == 0  # an empty folder: nothing was run there
    text = (tmp_path / "CLAIMS.md").read_text()
    assert text.startswith("# Claims ledger") and "not run" in text and f"--out {tmp_path}" in text
    assert main(["reproduce", "--claims", "--out", str(tmp_path / "missing")]) == 2


def test_the_committed_claims_md_is_what_the_ledger_writes() -> None:
    from mdpviz.reproduce.ledger import markdown
    from mdpviz.reproduce.report import SHIPPED_DIR

    records = Records(SHIPPED_DIR)
    assert (SHIPPED_DIR / "CLAIMS.md").read_text(encoding="utf-8") == markdown(ledger(records), records)


def test_the_dista_witness_names_two_secrets_and_an_output_only_one_can_report() -> None:
    from mdpviz.reproduce.ledger import find_claim
    from mdpviz.reproduce.witness import witness_lines

    lines = witness_lines(find_claim("dista-private")["witness"], "tiny")
    text = "\n".join(lines)
    assert "users' true secrets" in text and "Pr[y | second] = 0" in text and "ratio ∞" in text
    panda = witness_lines(find_claim("panda-private")["witness"], "tiny")
    assert len(panda) >= 2  # a breach, or a plain statement that this tiny run has none
    cone = "\n".join(witness_lines(find_claim("panda-loss-vs-em")["witness"], "tiny"))
    assert "ordered pairs of secrets break ε-mDP" in cone and "Pr[y | first]" in cone  # the authors' code leaks


def _refs(node: Any) -> list[dict[str, Any]]:
    """Every {experiment, where, metric} reference inside a claim."""
    if isinstance(node, dict):
        own = [node] if {"experiment", "metric"} <= set(node) else []
        return own + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_every_reference_of_the_ledger_names_an_experiment_and_a_rung_that_exist() -> None:
    """A typo in claims.json would otherwise read as "not run"."""
    from mdpviz.reproduce import get_experiment

    ladders = ledger_data()["ladders"]
    for c in claims():
        for ref in _refs(c):
            get_experiment(ref["experiment"])  # raises for an unknown name
            label = ref.get("where", {}).get("tag.label")
            if ref["experiment"] in ladders and label is not None:
                assert label in {r["label"] for r in ladders[ref["experiment"]]["rungs"]}, (c["id"], label)
        if c.get("witness"):
            w = c["witness"]
            assert w["rung"] in {r["label"] for r in ladders[w["ladder"]]["rungs"]}, c["id"]


def test_the_committed_claims_json_is_the_ledger_and_home_shows_its_verdicts() -> None:
    from streamlit.testing.v1 import AppTest

    from mdpviz.reproduce.report import SHIPPED_DIR

    data = json.loads((SHIPPED_DIR / "CLAIMS.json").read_text(encoding="utf-8"))
    assert data == [j.as_dict() for j in ledger()]
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception
    box = next(e for e in at.expander if e.label.startswith("What the papers claim"))
    text = " ".join(m.value for m in box.markdown)
    panda = next(j for j in data if j["id"] == "panda-loss-vs-em")
    assert panda["claim"] in text and f"**{panda['verdict']}**" in text
