"""`reproduce benders-tables`: its points sample the whole of Rome (spec 004 §6: the artifact's Rome instance spans
the city, 240 of its 500 records on a subset boundary), and Table 3 gets numbers (tiny form, seconds)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mdpviz.reproduce import reproduce
from mdpviz.reproduce.base import SIZES
from mdpviz.reproduce.benders import BD_RUNS, ETA_KM, LP_METHODS, partition_sizes, points, sample_extent
from mdpviz.sweep import params_of, problem_of


def test_every_form_samples_the_whole_city() -> None:
    for size in SIZES:
        pts = points(size, "paper")
        assert {p.problem["region"] for p in pts} == {"whole"} and {p.problem["city"] for p in pts} == {"rome"}
        assert {p.tags["label"] for p in pts} == {label for *_, label in BD_RUNS} | {label for _, label in LP_METHODS}
    full = points("full", "paper")
    assert {p.problem["k"] for p in full} == {500} and {p.problem["n_outputs"] for p in full} == {100}
    assert len({p.seed for p in full}) >= 3
    lp = [p for p in full if p.mechanism == "lp"]
    assert {(p.params["scope"], p.params["solver"], p.params["eta"]) for p in lp} == {("neighbours", "monolithic", 2.0)}
    assert {p.params["method"] for p in lp} == {"simplex", "ipm"}


def test_the_full_forms_records_span_many_km_and_half_lie_on_a_boundary() -> None:
    """Not the central 1/20 of the box (there every record was on a boundary and the master was the whole LP)."""
    point = next(p for p in points("full", "paper") if p.tags["label"] == "k-m-DV")
    pb, params = problem_of(point), params_of(point)
    xy = np.asarray(pb.xy_km)
    ext = sample_extent(pb.d, xy)
    assert min(ext["extent_x_km"], ext["extent_y_km"]) > 25.0  # the artifact's: about 43 × 39 km
    assert ext["median_km"] > 8.0 and 0.005 < ext["share_within_eta"] < 0.1  # the artifact's: 15 km, 2 %
    stats = partition_sizes(pb.d, xy, params["partitioner"], params["subsets"], params["seed"])
    assert stats["subsets"] == 25 and params["eta"] == ETA_KM
    assert 0.25 * pb.k < stats["boundary"] < 0.8 * pb.k  # the artifact's: 240 of 500
    assert stats["mp_max"] < pb.k  # the master splits into components, none of them the whole LP


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory):
    path, cmp = reproduce("benders-tables", size="tiny", out_dir=tmp_path_factory.mktemp("benders"), use_cache=False)
    return path, cmp


def test_table_3_has_a_number_for_every_method_in_tiny_form(tiny) -> None:
    _, cmp = tiny
    table3 = [r for r in cmp.rows if r["table"] == "Table 3"]
    times = {r["x"]: r for r in table3 if r["metric"] == "time"}
    assert set(times) == {label for *_, label in BD_RUNS} | {label for _, label in LP_METHODS}
    for label, row in times.items():
        assert math.isfinite(row["ours"]) and row["n"] >= 1, (label, row)
        assert "different machine" not in row["reason"]
    cpu = [r for r in table3 if r["metric"] == "cpu_time"]
    assert len(cpu) == len(times) and all(math.isfinite(r["ours"]) for r in cpu)
    its = {r["x"]: r["ours"] for r in table3 if r["metric"] == "iterations"}
    assert set(its) == {label for *_, label in BD_RUNS} and all(v >= 1 for v in its.values())
    # the ratio against the dual simplex is measured on the same instance, and said
    assert "the dual simplex's on the same instances" in times["k-m-DV"]["reason"]
    assert any(n.startswith("Measured ordering in this run") for n in cmp.notes)


def test_tiny_rows_record_status_bound_and_cpu(tiny) -> None:
    import pandas as pd

    path, _ = tiny
    frame = pd.read_csv(Path(path).parent / "points.csv")
    assert {"time_s", "cpu_s", "iterations", "gap_m", "bound_m", "master_pairs", "status"} <= set(frame.columns)
    lp = frame[frame["mechanism"] == "lp"]
    assert (lp["status"] == "optimal").all()  # the tiny LP closes on any machine
    bd = frame[frame["mechanism"] == "lp-bd"]
    assert bd["iterations"].notna().all() and bd["bound_m"].notna().all()


def test_partition_sizes_count_neighbours_and_the_largest_components_share() -> None:
    """Two rows of four records 1 km apart, 1.5 km between the rows' ends, cut into the two rows: the two end
    records form the master's one component, so it holds every boundary record; 22 ordered pairs lie within
    η = 2 km."""
    xy = np.column_stack([[0.0, 1.0, 2.0, 3.0, 4.5, 5.5, 6.5, 7.5], np.zeros(8)])
    d = np.abs(xy[:, None, 0] - xy[None, :, 0])
    stats = partition_sizes(d, xy, "kmeans-rec", 2, 0)
    assert stats["sub_max"] == 4 and stats["boundary"] == 2 and stats["mp_max"] == 2
    assert stats["mp_share"] == 1.0 and stats["degree_avg"] == 22 / 8
