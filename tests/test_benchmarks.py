"""``bench lp`` and ``bench benders`` on the one sweep runner: their rows, a rerun that computes nothing, and the
same rows from a Dask LocalCluster (whose workers fork each isolated solve)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mdpviz.benchmarks import benders, lp, report

LP_ARGV = ["--city", "helsinki", "--ks", "20,40", "--outputs", "10", "--methods", "structured,monolithic",
           "--monolithic-max-k", "20", "--time-limit", "20", "--eps", "5"]
BD_ARGV = ["--city", "helsinki", "--k", "30", "--outputs", "10", "--eta", "0.5", "--configs", "kmeans-dv:0.5:on",
           "--time-limit", "20"]
SAME = ["eps", "K", "outputs", "method", "status", "violated_pairs", "checked_pairs", "iterations", "bound_m"]


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_bench_lp_runs_by_k_stage_on_the_sweep_runner_and_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(report, "DOCS", tmp_path)
    points = tmp_path / "points.jsonl"
    argv = [*LP_ARGV, "--points", str(points), "--out", "lp_test"]
    assert lp.main(argv) == 0
    rows = pd.read_csv(tmp_path / "lp_test.csv")
    assert list(zip(rows.K, rows.method)) == [(20, "structured"), (20, "monolithic"), (40, "structured"),
                                              (40, "monolithic")]
    assert list(rows.status[:3]) == ["optimal"] * 3 and rows.status[3].startswith("not run (K > --monolithic-max-k")
    done = rows[rows.status == "optimal"]
    assert (done.violated_pairs == 0).all() and list(done.checked_pairs) == [20 * 19, 20 * 19, 40 * 39]
    structured, mono = done.objective_m[0], done.objective_m[1]
    assert abs(structured - mono) <= 1e-4 * mono  # the certified gap asked of the structured engine
    assert rows.speedup[0] > 0 and pd.isna(rows.speedup[1])  # monolithic's time over structured's, same instance
    assert rows.speedup_cpu[0] > 0 and pd.isna(rows.speedup_cpu[1])  # the same in CPU time
    assert _lines(points) == 3  # the row that was not run is no point
    assert "Run by the sweep runner (in-process)" in (tmp_path / "lp_test.md").read_text()
    capsys.readouterr()
    assert lp.main(argv) == 0
    out = capsys.readouterr().out
    assert "2 of 2 points reused" in out and "1 of 1 points reused" in out
    assert _lines(points) == 3  # nothing recomputed
    again = pd.read_csv(tmp_path / "lp_test.csv")
    assert again[SAME].equals(rows[SAME]) and again.objective_m.equals(rows.objective_m)


def test_bench_lp_skips_a_method_at_larger_k_after_it_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "DOCS", tmp_path)
    # an unknown HiGHS method: refused at K = 20, so not run again at K = 40
    monkeypatch.setattr(lp, "METHODS", {**lp.METHODS, "monolithic": ("lp", {"solver": "monolithic", "pairs": "all",
                                                                            "method": "no-such-method"})})
    assert lp.main([*LP_ARGV, "--methods", "monolithic", "--monolithic-max-k", "100", "--out", "lp_skip"]) == 0
    rows = pd.read_csv(tmp_path / "lp_skip.csv")
    assert list(rows.K) == [20, 40]
    assert rows.status[0].startswith("refused") and rows.status[1].startswith("skipped (over the limit or refused")


def test_bench_benders_rows_and_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(benders, "DOCS", tmp_path)
    points = tmp_path / "points.jsonl"
    argv = [*BD_ARGV, "--points", str(points), "--name", "bd"]
    assert benders.main(argv) == 0
    rows = pd.read_csv(tmp_path / "bd.csv")
    assert list(rows.solver) == ["monolithic HiGHS (dual simplex)", benders.NEIGHBOUR_LP,
                                 "lp-bd kmeans-dv λ = 0.5 + row-sum cuts"]
    assert list(rows.status) == ["optimal", "optimal", "optimal"] and "kind" not in rows.columns
    mono, near, bd = rows.objective_m
    # Benders certifies its point within ξ = 0.01 m of the optimum (its last rounds separate 1e-5 inside, which
    # costs about 1e-5 of the exponential mechanism's excess): the monolithic optimum lies in [bound, point]
    assert rows.bound_m[2] <= mono * (1 + 1e-9) and -1e-6 * mono <= bd - mono <= 0.01
    assert rows.vs_monolithic_m[2] == pytest.approx(bd - mono, abs=1e-9)
    assert abs(near - mono) <= 1e-4 * mono and rows.bound_m[1] <= mono * (1 + 1e-9)  # same LP, certified within 1e-4
    md = (tmp_path / "bd.md").read_text()
    verdict = md.split("## Does Benders overtake the solvers it decomposes?", 1)[1].split("\n\n")[1]
    assert verdict.startswith("- K = 30, by CPU time to a certified optimum: ") and "Benders' fastest" in verdict
    parts = md.split("## Partitions", 1)[1]
    assert all(f"| 30 | {name} |" in parts for name in ("kmeans-dv", "kmeans-rec", "kmeans-adj", "spectral"))
    assert _lines(points) == 4  # partitions (one point, four rows), monolithic, lp (neighbours), one lp-bd config
    capsys.readouterr()
    assert benders.main(argv) == 0
    assert "4 of 4 points reused" in capsys.readouterr().out and _lines(points) == 4


def test_both_benchmarks_give_the_in_process_rows_on_a_dask_cluster(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # Streamlit's AppTest (earlier test files) leaves a page script as __main__, which spawned workers would re-run
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    monkeypatch.setattr(report, "DOCS", tmp_path)
    monkeypatch.setattr(benders, "DOCS", tmp_path)
    import dask
    from dask.distributed import LocalCluster

    # one cluster for both (as --workers 2 starts, non-daemonic so that bench lp's task may fork its solve)
    with dask.config.set({"distributed.worker.daemon": False}), LocalCluster(
            n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=":0", silence_logs=40) as cluster:
        on = ["--scheduler", cluster.scheduler_address]
        assert lp.main([*LP_ARGV, "--out", "lp_here"]) == 0
        assert lp.main([*LP_ARGV, "--out", "lp_dask", *on]) == 0
        assert benders.main([*BD_ARGV, "--name", "bd_here"]) == 0
        assert benders.main([*BD_ARGV, "--name", "bd_dask", *on]) == 0
    here, there = pd.read_csv(tmp_path / "lp_here.csv"), pd.read_csv(tmp_path / "lp_dask.csv")
    assert there[SAME].equals(here[SAME]) and list(there.status) == ["optimal"] * 3 + [there.status[3]]
    assert there.objective_m.fillna(0).tolist() == pytest.approx(here.objective_m.fillna(0).tolist(), rel=1e-9)
    assert f"dask scheduler {cluster.scheduler_address}" in (tmp_path / "lp_dask.md").read_text()
    here, there = pd.read_csv(tmp_path / "bd_here.csv"), pd.read_csv(tmp_path / "bd_dask.csv")
    keep = ["K", "solver", "status", "pairs", "rows", "iterations", "boundary", "master_pairs", "optimality_cuts",
            "feasibility_cuts", "row_sum_cuts", "message"]
    assert there[keep].equals(here[keep])
    for col in ("objective_m", "bound_m", "vs_monolithic_m"):
        assert there[col].fillna(0).tolist() == pytest.approx(here[col].fillna(0).tolist(), rel=1e-9, abs=1e-9)


def test_bench_lp_runs_a_closed_form_method_at_every_k(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "DOCS", tmp_path)
    assert lp.main([*LP_ARGV, "--methods", "em", "--out", "lp_em"]) == 0
    rows = pd.read_csv(tmp_path / "lp_em.csv")
    assert list(rows.K) == [20, 40] and list(rows.status) == ["closed form"] * 2  # EM is not "skipped" at K = 40
    assert (rows.violated_pairs == 0).all()


def test_the_benders_ordering_says_whether_benders_overtakes() -> None:
    """Issue 28: the bench's verdict ranks the certified runs by CPU time and compares Benders' fastest with the
    fastest solver it decomposes; runs that did not certify are left out of the ranking."""
    rows = [{"K": 500, "solver": benders.MONOLITHIC, "status": "optimal", "cpu_s": 8.0},
            {"K": 500, "solver": benders.NEIGHBOUR_LP, "status": "optimal", "cpu_s": 2.0},
            {"K": 500, "solver": "lp-bd kmeans-dv λ = 1", "status": "time limit", "cpu_s": 1.0},
            {"K": 500, "solver": "lp-bd spectral λ = 1", "status": "optimal", "cpu_s": 3.0},
            {"K": 1000, "solver": benders.MONOLITHIC, "status": "optimal", "cpu_s": 70.0},
            {"K": 1000, "solver": "lp-bd spectral λ = 1", "status": "optimal", "cpu_s": 35.0},
            {"K": 2000, "solver": benders.MONOLITHIC, "status": "time limit", "cpu_s": 900.0}]
    k500, k1000, k2000 = benders.ordering(rows)
    assert "; not certified: lp-bd kmeans-dv λ = 1 (time limit)." in k500
    assert k500.endswith(f"takes 1.5× the CPU time of {benders.NEIGHBOUR_LP}: Benders does not overtake it here, "
                         f"and 0.38× that of {benders.MONOLITHIC}.")
    assert k1000.endswith("takes 0.5× the CPU time of monolithic HiGHS (dual simplex): Benders overtakes it here.")
    assert k2000 == "K = 2,000: no solver reached a certified optimum (monolithic HiGHS (dual simplex) (time limit))."


def test_the_benders_speedup_per_thread() -> None:
    """Issue 28: a config run with 1 and 2 subproblem threads gives its wall-time speed-up, also per thread; a run
    that did not certify gives none."""
    label = "lp-bd spectral λ = 1"
    rows = [{"K": 500, "solver": label, "threads": 1, "status": "optimal", "wall_s": 6.0},
            {"K": 500, "solver": f"{label}, 2 threads", "threads": 2, "status": "optimal", "wall_s": 4.0},
            {"K": 1000, "solver": label, "threads": 1, "status": "optimal", "wall_s": 9.0},
            {"K": 1000, "solver": f"{label}, 2 threads", "threads": 2, "status": "time limit", "wall_s": 60.0}]
    assert benders.speedups(rows) == [f"K = 500, {label}: 2 threads take 4 s wall against 6 s with one, a speed-up "
                                      "of 1.5× (0.75 per thread)."]


def test_bench_lp_reads_as_a_k_by_eps_table() -> None:
    """Issue 28, item 4: the README's table comes from the bench's rows: CPU and wall seconds of each structured run,
    how a stopped run ended with its certified gap, and monolithic's CPU time beside it."""
    rows = [{"eps": 1.0, "K": 100, "method": "structured", "status": "optimal", "cpu_s": 3.8, "wall_s": 5.8},
            {"eps": 1.0, "K": 100, "method": "monolithic", "status": "optimal", "cpu_s": 93.5, "wall_s": 150.0},
            {"eps": 1.0, "K": 500, "method": "structured", "status": "time limit", "cpu_s": 149.0, "wall_s": 300.0,
             "certified_gap": 0.091},
            {"eps": 5.0, "K": 100, "method": "structured", "status": "optimal", "cpu_s": 0.035, "wall_s": 0.058},
            {"eps": 5.0, "K": 500, "method": "structured",
             "status": "skipped (over the limit or refused at a smaller K)"}]
    assert lp.by_k_and_eps(rows).splitlines() == [
        "| K | ε = 1 km⁻¹ | ε = 5 km⁻¹ |", "|---|---|---|",
        "| 100 | 3.8 s CPU (5.8 s wall); monolithic 93.5 s CPU | 0.035 s CPU (0.058 s wall) |",
        "| 500 | time limit after 149 s CPU (300 s wall), gap 9.1% | not run |"]


def test_bench_lp_says_how_each_run_stands_against_issue_28s_target() -> None:
    """Issue 28's done-when: a miss says by how much. Each structured run at a target's ε and K is met or missed
    (with the factor); a run stopped by a time limit of at least the target misses it, one stopped under it does not
    decide; a run that ends otherwise without the optimum, crashes, or breaks privacy misses."""
    def run(eps: float, k: int, status: str, cpu: float | None, **more: Any) -> dict[str, Any]:
        return {"eps": eps, "K": k, "method": "structured", "status": status, "cpu_s": cpu, "wall_s": cpu,
                "violated_pairs": 0, **more}

    def verdict(*args: Any, limit: float = 300.0, **more: Any) -> str | None:
        return lp.against_target(run(*args, **more), limit)
    assert verdict(2.0, 500, "optimal", 3.1) == "target ≤ 20 s CPU: met"
    assert verdict(1.0, 500, "optimal", 219.4) == "target ≤ 60 s CPU: missed, 3.7× the target"
    assert verdict(1.0, 1000, "time limit", 600.0) == "target ≤ 300 s CPU: missed, not optimal after 2.0× the target"
    assert verdict(2.0, 2000, "time limit", 297.0) == (
        "target ≤ 300 s CPU: missed, stopped by its 300 s time limit (wall) at 297 s CPU")
    assert verdict(1.0, 500, "time limit", 29.0, limit=30.0) == (
        "target ≤ 60 s CPU: not decided (stopped at its 30 s time limit, under the target)")
    assert verdict(2.0, 500, "stalled", 15.0) == "target ≤ 20 s CPU: missed (stalled)"
    assert verdict(2.0, 500, "died (exit code -9)", None) == "target: missed (died (exit code -9))"
    assert verdict(2.0, 500, "skipped (over the limit or refused at a smaller K)", None) == "target: not run"
    assert verdict(2.0, 500, "optimal", 3.1, violated_pairs=4) == "target: missed, pairs violated"
    for unchecked in (None, float("nan")):  # NaN: an empty cell read back from a report
        assert verdict(2.0, 500, "optimal", 3.1, violated_pairs=unchecked) == (
            "target: not decided (privacy not checked)")
    assert verdict(1.0, 100, "optimal", 2.5, speedup=428.0) == "target ≥ 100× monolithic: met (428×)"
    assert verdict(1.0, 100, "optimal", 2.5, speedup=23.0) == "target ≥ 100× monolithic: missed (23×)"
    assert verdict(1.0, 100, "time limit", 2.5) == "target ≥ 100× monolithic: missed (time limit)"
    assert "not measured" in str(verdict(1.0, 100, "optimal", 2.5))
    # the bench's own rows carry the CPU-time ratio, the issue's unit, and the verdict is on it
    assert verdict(1.0, 100, "optimal", 2.5, speedup=120.0, speedup_cpu=90.0) == (
        "target ≥ 100× monolithic: missed (90× CPU, 120× wall)")
    assert verdict(5.0, 500, "optimal", 0.3) is None  # no target there
    assert lp.against_target({**run(1.0, 500, "optimal", 9.0), "method": "monolithic"}, 300.0) is None
    row = {**run(1.0, 500, "optimal", 219.4, wall_s=216.0), "target": "target ≤ 60 s CPU: missed, 3.7× the target"}
    skipped = {**run(1.0, 1000, "skipped (over the limit or refused at a smaller K)", None),
               "target": "target: not run"}
    assert lp.by_k_and_eps([row, skipped]).splitlines()[-2:] == [
        "| 500 | 219 s CPU (216 s wall); target ≤ 60 s CPU: missed, 3.7× the target |",
        "| 1,000 | not run; target: not run |"]


def test_bench_lp_targets_only_issue_28s_instances() -> None:
    """The targets hold for whole-city Rome with |Y| = 100, the haversine metric and a gap of at most 1e-4."""
    a = lp._parser().parse_args(["--city", "rome"])
    assert lp.has_targets(a)
    for other in (["--city", "london"], ["--city", "rome", "--outputs", "50"], ["--city", "rome", "--metric", "road"],
                  ["--city", "rome", "--gap-tol", "1e-3"], []):
        assert not lp.has_targets(lp._parser().parse_args(other)), other
