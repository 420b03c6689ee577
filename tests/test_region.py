"""Regions: where the secrets are drawn from (the whole city or a part the user picks), and road distances."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import dijkstra

from mdpviz import build_problem, load_city
from mdpviz.cities import city_info
from mdpviz.errors import ProblemError
from mdpviz.geo import haversine_km
from mdpviz.region import parse_region, region_presets
from mdpviz.roads import node_distances_km


@pytest.mark.parametrize(("text", "kind"), [(None, "whole"), ("whole", "whole"), ("41.9,12.48,3", "circle"),
                                             ("41.8, 12.4, 42.0, 12.6", "bbox"), ("centre:3", "circle")])
def test_region_texts_parse_and_round_trip(text: str | None, kind: str) -> None:
    region = parse_region(text, centre=(41.896, 12.4823))
    assert region.kind == kind
    assert parse_region(region.spec).spec == region.spec


@pytest.mark.parametrize(("text", "match"), [
    ("41.9,12.48,-1", "radius must be > 0"), ("42.0,12.4,41.8,12.6", "S < N"), ("95,12,3", "latitude"),
    ("a,b,c", "not a number"), ("1,2", "not understood"), ("centre:x", "not a number"), ("41,12,nan", "finite")])
def test_bad_regions_say_what_to_write(text: str, match: str) -> None:
    with pytest.raises(ProblemError, match=match):
        parse_region(text, centre=(41.896, 12.4823))


def test_centre_needs_a_city() -> None:
    with pytest.raises(ProblemError, match="centre of a city"):
        parse_region("centre:3")


def test_whole_city_sample_spans_rome_and_a_centre_disc_stays_inside() -> None:
    whole = build_problem("rome", k=200, cost="distance", seed=1)
    assert whole.d.max() > 40  # the papers' scale: secrets spread over the whole city
    centre = build_problem("rome", k=200, cost="distance", seed=1, region="centre:3")
    lat, lon = city_info("rome").centre
    assert haversine_km(centre.x_lat, centre.x_lon, lat, lon).max() <= 3.0
    assert centre.settings["region"] != whole.settings["region"]
    assert centre.fingerprint != whole.fingerprint


def test_a_region_with_too_few_nodes_is_refused_with_its_size() -> None:
    with pytest.raises(ProblemError, match=r"has \d+ nodes; choose 2 ≤ K ≤ \d+ or a larger region"):
        build_problem("rome", k=5000, region="centre:1")


def test_presets_offer_the_papers_whole_city_and_discs_that_fit() -> None:
    labels = dict(region_presets(city_info("rome")))
    assert labels["Rome: whole city (as in the papers)"] == "whole"
    assert labels["Rome: centre, 3 km"] == "centre:3"
    assert all(spec == "whole" or float(spec.split(":")[1]) < 1 for spec in dict(region_presets(
        city_info("helsinki"))).values())


def test_reduced_road_distances_equal_dijkstra_on_the_whole_network() -> None:
    net = load_city("rome")
    nodes = np.random.default_rng(3).choice(net.n_nodes, size=60, replace=False)
    expected = dijkstra(net.adjacency_km(), directed=False, indices=nodes)[:, nodes]
    got = node_distances_km(net, nodes)
    np.testing.assert_allclose(got, np.minimum(expected, expected.T), rtol=1e-12, atol=1e-12)
    assert (got == got.T).all() and (np.diag(got) == 0).all()
