"""Cities: bundled networks load offline; downloads are cached; failures name the bundled cities."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mdpviz import cities
from mdpviz.errors import CityError
from mdpviz.paths import DATA_DIR

BUNDLED = [c["slug"] for c in json.loads((DATA_DIR / "cities.json").read_text())]


@pytest.mark.parametrize("slug", BUNDLED)
def test_every_bundled_city_loads_offline(slug: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def no_network(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket, "create_connection", no_network)
    info = next(c for c in cities.list_cities() if c.slug == slug)
    net = cities.load_city(slug)
    assert (net.n_nodes, net.n_edges) == (info.nodes, info.edges)
    assert info.bundled
    s, w, n, e = info.bbox
    assert (s <= net.lat.min()) and (net.lat.max() <= n) and (w <= net.lon.min()) and (net.lon.max() <= e)
    assert (net.length_m > 0).all()
    # lengths are metres along the road: never (much) shorter than the straight line between the ends
    from mdpviz.geo import haversine_km

    straight_m = 1000 * haversine_km(net.lat[net.u], net.lon[net.u], net.lat[net.v], net.lon[net.v])
    long = net.length_m > 5
    assert (net.length_m[long] >= 0.99 * straight_m[long] - 1).all()
    assert np.median(net.length_m / np.maximum(straight_m, 1e-9)) < 1.5
    assert (net.u != net.v).all()
    from scipy.sparse.csgraph import connected_components

    assert connected_components(net.adjacency_km(), directed=False)[0] == 1


def test_default_city_is_the_small_teaching_one_with_room_for_2000_secrets() -> None:
    listed = cities.bundled_cities()
    assert cities.default_city() == "helsinki" == listed[0].slug
    assert listed[0].nodes >= 2000 and max(listed[0].extent_km) < 3


@pytest.mark.parametrize(("slug", "nodes", "low_km", "high_km"), [
    ("rome", 43_160, 45, 50), ("london", 128_203, 43, 58), ("coquimbo", 15_575, 18, 29)])
def test_the_papers_cities_are_bundled_at_city_scale(slug: str, nodes: int, low_km: float, high_km: float) -> None:
    info = cities.city_info(slug)
    assert info.bundled and info.nodes == nodes
    assert all(low_km <= side <= high_km for side in info.extent_km), info.extent_km
    s, w, n, e = info.bbox
    assert s < info.centre[0] < n and w < info.centre[1] < e


def test_cities_command_lists_every_city_with_its_extent_and_credits_osm(capsys: pytest.CaptureFixture[str]) -> None:
    from mdpviz.cli import main

    assert main(["cities"]) == 0
    out = capsys.readouterr().out
    for slug in BUNDLED:
        assert slug in out
    assert "47.4 × 49.1 km" in out and "OpenStreetMap contributors" in out


def test_lookup_by_label_is_case_insensitive() -> None:
    assert cities.load_city("HELSINKI CENTRE (FI)").slug == "helsinki"


def test_unknown_city_names_the_offline_ones() -> None:
    with pytest.raises(CityError, match=r"Unknown city `atlantis`.*helsinki.*kotka"):
        cities.load_city("atlantis")


def test_download_without_network_says_so_and_writes_nothing(monkeypatch: pytest.MonkeyPatch,
                                                              _isolated_cache: Path) -> None:
    import osmnx as ox

    def offline(*args: object, **kwargs: object) -> None:
        raise ConnectionError("Max retries exceeded (name resolution failed)")

    monkeypatch.setattr(ox, "graph_from_place", offline)
    with pytest.raises(CityError, match=r"Could not download.*no network.*helsinki"):
        cities.download_city(place="Piedmont, California, USA")
    assert not (_isolated_cache / "cities").exists() or not any((_isolated_cache / "cities").iterdir())


@pytest.mark.parametrize("bbox", [(60.2, 24.9, 60.1, 25.0), (10.0, 200.0, 11.0, 201.0)])
def test_download_rejects_a_malformed_box(bbox: tuple[float, float, float, float]) -> None:
    with pytest.raises(CityError, match="south < north"):
        cities.download_city(bbox=bbox)


def test_saved_network_is_listed_and_loads_from_cache() -> None:
    net = cities.load_city("west-oakland")
    osmid = np.arange(net.n_nodes) + 1000
    info = cities.save_network("my-town", "My town", "test", osmid=osmid, lat=net.lat, lon=net.lon,
                               u=osmid[net.u], v=osmid[net.v], length_m=net.length_m)
    assert not info.bundled and info.nodes == net.n_nodes
    assert "my-town" in [c.slug for c in cities.list_cities()]
    again = cities.load_city("my-town")
    np.testing.assert_array_equal(again.length_m, net.length_m)


def test_clean_network_keeps_the_largest_component_and_the_shortest_duplicate() -> None:
    lat = np.array([0.0, 0.0, 0.0, 1.0, 1.0])
    lon = np.array([0.0, 0.001, 0.002, 0.0, 0.001])
    nodes, edges = cities.clean_network(lat, lon, np.array([0, 1, 1, 1, 3.0]), np.array([1, 0, 2, 1, 4.0]),
                                        np.array([10.0, 8.0, 12.0, 5.0, 7.0]))
    assert len(nodes) == 3  # {0,1,2}; {3,4} is the smaller component; the self-loop 1-1 is dropped
    assert sorted(edges.length_m) == [8.0, 12.0]
    assert list(nodes.street_count) == [1, 2, 1]


@pytest.mark.live
def test_live_download_is_cached(tmp_path: Path) -> None:  # pragma: no cover - needs network
    info = cities.download_city(place="Piedmont, California, USA")
    assert cities.load_city(info.slug).n_nodes == info.nodes
