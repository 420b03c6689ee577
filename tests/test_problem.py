"""The problem builder: metric, cost, prior, determinism, points, and every bad input."""

from __future__ import annotations

import io

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from mdpviz.cities import load_city
from mdpviz.errors import MdpvizError, ProblemError
from mdpviz.geo import haversine_km
from mdpviz.problem import build_problem, problem_from_points


def test_haversine_matches_a_known_distance() -> None:
    # one degree of latitude along a meridian is 111.195 km on the mean-radius sphere
    assert float(haversine_km(60.0, 25.0, 61.0, 25.0)) == pytest.approx(111.195, abs=1e-3)
    # Paris (48.8566, 2.3522) to London (51.5074, -0.1278): about 343.5 km
    assert float(haversine_km(48.8566, 2.3522, 51.5074, -0.1278)) == pytest.approx(343.5, abs=0.5)


def test_problem_shapes_and_invariants() -> None:
    pb = build_problem("kotka", 120, n_outputs=30, seed=3)
    assert (pb.k, pb.m) == (120, 30)
    assert pb.d.shape == (120, 120) and pb.c.shape == (120, 30)
    assert np.allclose(pb.d, pb.d.T) and (np.diag(pb.d) == 0).all()
    assert pb.p.sum() == pytest.approx(1.0) and (pb.p > 0).all()
    assert len(set(pb.x_node.tolist())) == 120
    assert set(pb.y_index.tolist()) <= set(range(120))
    np.testing.assert_allclose(pb.d, haversine_km(pb.x_lat[:, None], pb.x_lon[:, None], pb.x_lat, pb.x_lon))


def test_default_outputs_is_100_or_k() -> None:
    assert build_problem("kotka", 150).m == 100
    assert build_problem("kotka", 40).m == 40
    assert build_problem("kotka", 150, all_outputs=True).m == 150


def test_road_metric_matches_networkx() -> None:
    net = load_city("west-oakland")
    pb = build_problem(net, 25, metric="road", seed=1)
    g = nx.Graph()
    for u, v, w in zip(net.u, net.v, net.length_m, strict=True):
        g.add_edge(int(u), int(v), weight=w / 1000.0)
    for i in range(0, 25, 4):
        lengths = nx.single_source_dijkstra_path_length(g, int(pb.x_node[i]))
        expected = [lengths[int(n)] for n in pb.x_node]
        np.testing.assert_allclose(pb.d[i], expected, rtol=1e-12, atol=1e-12)
    # a road distance is never shorter than the straight line (up to the metre-level error of OSM lengths)
    hav = haversine_km(pb.x_lat[:, None], pb.x_lon[:, None], pb.x_lat, pb.x_lon)
    assert (pb.d >= hav - 0.01).all()


def test_travel_cost_matches_a_direct_loop() -> None:
    net = load_city("west-oakland")
    pb = build_problem(net, 20, n_outputs=7, n_tasks=3, seed=5)
    g = nx.Graph()
    for u, v, w in zip(net.u, net.v, net.length_m, strict=True):
        g.add_edge(int(u), int(v), weight=w)
    sp = [nx.single_source_dijkstra_path_length(g, int(pb.x_node[t])) for t in pb.task_index]
    expected = np.zeros((20, 7))
    for i in range(20):
        for j, y in enumerate(pb.y_index):
            xi, yj = int(pb.x_node[i]), int(pb.x_node[y])
            expected[i, j] = sum(abs(s[xi] - s[yj]) for s in sp) / len(sp)
    np.testing.assert_allclose(pb.c, expected, rtol=1e-9, atol=1e-6)
    assert len(pb.task_index) == 3


def test_distance_cost_is_d_in_metres() -> None:
    pb = build_problem("kotka", 50, cost="distance", metric="road")
    np.testing.assert_allclose(pb.c, pb.d[:, pb.y_index] * 1000)


def test_seeded_determinism() -> None:
    a, b = build_problem("kotka", 80, seed=7), build_problem("kotka", 80, seed=7)
    assert a.fingerprint == b.fingerprint
    np.testing.assert_array_equal(a.c, b.c)
    assert build_problem("kotka", 80, seed=8).fingerprint != a.fingerprint
    # changing |Y| must not change X
    np.testing.assert_array_equal(build_problem("kotka", 80, n_outputs=10, seed=7).x_node, a.x_node)


def test_street_count_prior_and_weighted_sampling() -> None:
    net = load_city("kotka")
    pb = build_problem(net, 100, prior="street_count", sample_by_prior=True, seed=2)
    expected = net.street_count[pb.x_node] / net.street_count[pb.x_node].sum()
    np.testing.assert_allclose(pb.p, expected)


def test_points_prior_counts_points_at_their_nearest_secret() -> None:
    net = load_city("kotka")
    base = build_problem(net, 30, seed=1)
    i = 4
    pts = pd.DataFrame({"lat": [base.x_lat[i]] * 3, "lon": [base.x_lon[i]] * 3})
    pb = build_problem(net, 30, seed=1, prior="points", prior_points=pts)
    assert pb.p[i] == pytest.approx(1.0) and pb.p.sum() == pytest.approx(1.0)


def test_problem_from_points_snapped_merges_duplicates() -> None:
    net = load_city("kotka")
    csv = "lat,lon,weight\n" + "\n".join(f"{net.lat[j]},{net.lon[j]},{w}" for j, w in
                                         [(10, 1), (10, 2), (200, 1), (400, 4), (800, 2)])
    pb = problem_from_points(io.StringIO(csv), net)
    assert pb.k == 4
    np.testing.assert_allclose(sorted(pb.p), sorted(np.array([3, 1, 4, 2]) / 10))
    assert pb.settings["cost"] == "travel"


def test_problem_from_points_standalone_uses_haversine_and_distance() -> None:
    pts = pd.DataFrame({"latitude": [60.0, 60.01, 60.02], "Longitude": [25.0, 25.0, 25.01]})
    pb = problem_from_points(pts)
    assert pb.city is None and pb.settings["cost"] == "distance" and pb.k == 3
    np.testing.assert_allclose(pb.c, pb.d[:, pb.y_index] * 1000)
    with pytest.raises(ProblemError, match="need a road network"):
        problem_from_points(pts, metric="road")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"city": "atlantis"}, "Unknown city"),
    ({"k": 1}, r"`k` = 1 is out of range \[2, 1503\]"),
    ({"k": 10**6}, r"choose 2 ≤ K ≤ 1503"),
    ({"k": 2.5}, "must be a whole number"),
    ({"k": 50, "n_outputs": 51}, r"\|Y\| must lie between 1 and K = 50"),
    ({"k": 50, "n_outputs": 0}, r"\|Y\| must lie between 1 and K = 50"),
    ({"n_tasks": 0}, "at least one task"),
    ({"seed": -1}, "non-negative seed"),
    ({"metric": "euclid"}, "not one of haversine, road"),
    ({"prior": "points"}, "needs `prior_points`"),
])
def test_bad_settings_raise_problem_errors(kwargs: dict[str, object], match: str) -> None:
    args = {"city": "kotka", **kwargs}
    with pytest.raises(MdpvizError, match=match):
        build_problem(**args)  # type: ignore[arg-type]


def test_sample_by_prior_needs_enough_positive_weights() -> None:
    net = load_city("kotka")
    pts = pd.DataFrame({"lat": net.lat[:5], "lon": net.lon[:5]})
    with pytest.raises(ProblemError, match="Only 5 nodes have a positive prior weight"):
        build_problem(net, 10, prior="points", prior_points=pts, sample_by_prior=True)


@pytest.mark.parametrize(("csv", "match"), [
    ("", r"could not be read as CSV \(it is empty\)"),
    ("lat,lon\n", "has no rows"),
    ("latitude,foo\n1,2\n", "need a `lon` column"),
    ("lat,lon\n60.5,abc\n", "`lon` has 1 missing or non-numeric value.*line 2"),
    ("lat,lon\n95,27\n", r"Latitudes must lie in \[-90, 90\]"),
    ("lat,lon,weight\n60.53,26.95,-1\n", "Weights must be ≥ 0"),
    ("lat,lon\n60.53,26.95\n60.53,26.95\n", "1 distinct location"),
    ("lat,lon\n60.53,26.95\n48.85,2.35\n", r"1 of 2 point\(s\) lie more than 0.5 km"),
])
def test_bad_points_files_raise_problem_errors(csv: str, match: str) -> None:
    with pytest.raises(ProblemError, match=match):
        problem_from_points(io.StringIO(csv), "kotka")


def test_missing_points_file() -> None:
    with pytest.raises(ProblemError, match="does not exist"):
        problem_from_points("/nonexistent/points.csv")


def test_cli_problem_and_cities(capsys: pytest.CaptureFixture[str]) -> None:
    from mdpviz.cli import main

    assert main(["cities"]) == 0
    assert "helsinki" in capsys.readouterr().out
    assert main(["problem", "--city", "kotka", "--k", "60", "--json"]) == 0
    assert '"k": 60' in capsys.readouterr().out
    assert main(["problem", "--city", "kotka", "--k", "1"]) == 2
    assert "out of range" in capsys.readouterr().err
