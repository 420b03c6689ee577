"""The sweep runner: the same numbers in process and on a Dask LocalCluster, and a stopped or crashed sweep resumes
without solving its finished points again."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pandas as pd
import pytest

import mdpviz.solve
from mdpviz.errors import MdpvizError
from mdpviz.sweep import Point, ResultsFile, comparable, grid, run_sweep

PROBLEM = {"city": "west-oakland", "k": 24, "n_outputs": 8}


def small_grid() -> list[Point]:
    return grid([PROBLEM], [("em", {"eps": 5.0}), ("em-br", {"eps": 5.0}), ("tem", {"eps": 3.0})], seeds=[0, 1])


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the mechanisms solved (in this process) while the test runs."""
    calls: list[str] = []
    real = mdpviz.solve.solve

    def counting(problem, mechanism, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(mechanism)
        return real(problem, mechanism, *args, **kwargs)

    monkeypatch.setattr(mdpviz.solve, "solve", counting)
    return calls


def test_in_process_and_local_cluster_give_the_same_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Streamlit's AppTest (earlier test files) leaves a page script as __main__, which spawned workers would re-run
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    points = small_grid()
    local = run_sweep(points, tmp_path / "a.jsonl", use_cache=False)
    dask = run_sweep(points, tmp_path / "b.jsonl", workers=2, use_cache=False)
    assert local.backend == "in-process" and dask.backend.startswith("dask LocalCluster")
    assert local.computed == dask.computed == len(points)
    assert [r["key"] for r in local.records] == [r["key"] for r in dask.records]
    for a, b in zip(local.records, dask.records):
        assert not a["error"] and not b["error"]
        assert comparable(a) == comparable(b)  # every measured number, bit for bit
    # the workers were other processes, and each point's rows hold real measurements
    assert {r["worker"] for r in dask.records}.isdisjoint({r["worker"] for r in local.records})
    row = local.records[0]["rows"][0]
    assert row["loss_m"] > 0 and row["checked_pairs"] == 24 * 23 and row["violated_pairs"] == 0


def test_a_stopped_sweep_resumes_without_solving_finished_points(tmp_path: Path, counted: list[str]) -> None:
    points = small_grid()
    path = tmp_path / "points.jsonl"
    done: list[str] = []
    first = run_sweep(points, path, use_cache=False, stop=lambda: len(done) >= 2,
                      on_record=lambda rec, n, total: done.append(rec["key"]))
    assert first.stopped and first.computed == 2 and len(counted) == 2 and first.total == len(points)
    assert set(ResultsFile(path).records()) == set(done)
    second = run_sweep(points, path, use_cache=False)
    assert second.reused == 2 and second.computed == len(points) - 2
    assert len(counted) == len(points)  # each point solved exactly once over both runs
    assert [r["key"] for r in second.records] == [p.key for p in points]


def test_a_crash_mid_sweep_loses_no_finished_point(tmp_path: Path, counted: list[str]) -> None:
    points = small_grid()
    path = tmp_path / "points.jsonl"

    def crash(rec: dict, n: int, total: int) -> None:
        if n == 3:
            raise KeyboardInterrupt("simulated kill after 3 points")

    with pytest.raises(KeyboardInterrupt):
        run_sweep(points, path, use_cache=False, on_record=crash)
    assert len(ResultsFile(path).records()) == 3
    with path.open("a") as f:  # a kill in the middle of writing leaves a torn last line
        f.write('{"key": "torn')
    again = run_sweep(points, path, use_cache=False)
    assert again.reused == 3 and again.computed == 3 and len(counted) == 6
    assert len(ResultsFile(path).records()) == 6  # the torn line is skipped, the next record starts a new line


def test_errors_are_recorded_and_retried_and_other_code_is_recomputed(tmp_path: Path, counted: list[str]) -> None:
    path = tmp_path / "points.jsonl"
    bad = Point(PROBLEM, "em", {"eps": -1.0})
    run = run_sweep([bad], path, use_cache=False)
    assert "ParameterError" in run.records[0]["error"] and "eps" in run.records[0]["error"]
    good = Point(PROBLEM, "em", {"eps": 2.0})
    run_sweep([good], path, use_cache=False)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records[-1]["code"] = "from other code"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    again = run_sweep([bad, good], path, use_cache=False)
    assert again.computed == 2  # the error is retried, the record made by other code recomputed


def test_bad_backend_arguments_are_refused() -> None:
    with pytest.raises(MdpvizError, match="workers"):
        run_sweep(small_grid(), None, workers=-1)
    run = run_sweep([Point(PROBLEM, "em", task="mdpviz.nowhere:nothing")], None)
    assert "cannot be imported" in run.records[0]["error"]


def test_a_problem_built_here_runs_in_process_only() -> None:
    from mdpviz.problem import build_problem
    from mdpviz.sweep import local_problem

    pb = build_problem("west-oakland", 20, n_outputs=5)
    point = Point(local_problem(pb), "em", {"eps": 4.0})
    run = run_sweep([point], None, use_cache=False)
    row = run.records[0]["rows"][0]
    assert row["k"] == 20 and row["loss_m"] > 0 and row["adversary_error_m"] > 0 and row["violated_pairs"] == 0
    elsewhere = Point({"_local": "not-in-this-process"}, "em", {"eps": 4.0})
    assert "another process" in run_sweep([elsewhere], None).records[0]["error"]


def test_bench_mechanisms_runs_on_the_sweep_runner_and_resumes(tmp_path, monkeypatch, capsys) -> None:
    from mdpviz.benchmarks import mechanisms as bench
    from mdpviz.benchmarks import report

    monkeypatch.setattr(report, "DOCS", tmp_path)
    argv = ["--city", "helsinki", "--ks", "30", "--outputs", "10", "--only", "em", "--time-limit", "20",
            "--points", str(tmp_path / "points.jsonl"), "--out", "survey"]
    assert bench.main(argv) == 0
    assert len((tmp_path / "points.jsonl").read_text().splitlines()) == 1
    rows = pd.read_csv(tmp_path / "survey.csv")
    assert list(rows.mechanism) == ["em"] and list(rows.status) == ["closed form"]
    assert rows.checked_pairs[0] == 30 * 29 and rows.violated_pairs[0] == 0
    capsys.readouterr()
    assert bench.main(argv) == 0
    assert "1 of 1 points reused" in capsys.readouterr().out
    assert len((tmp_path / "points.jsonl").read_text().splitlines()) == 1  # nothing recomputed
