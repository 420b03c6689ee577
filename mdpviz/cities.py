"""Where road networks come from: bundled offline files in data/, or osmnx downloads kept in a disk cache."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components

from .errors import CityError
from .geo import haversine_km
from .paths import DATA_DIR, atomic_write, cache_dir


@dataclass(frozen=True)
class CityInfo:
    """One entry of the city registry.

    Attributes:
        slug: the name used by ``load_city`` and the CLI (``helsinki``).
        label: a human name (``Helsinki centre (FI)``).
        source: where the network came from.
        nodes, edges: counts in the stored, undirected, connected network.
        bbox: (south lat, west lon, north lat, east lon) in degrees.
        bundled: True for the offline files shipped in ``data/``; False for downloads in the cache.
        centre: (lat, lon) of the city's centre in degrees (a landmark for the papers' cities, else the median
            node): the centre of region presets such as "centre, 3 km".
    """

    slug: str
    label: str
    source: str
    nodes: int
    edges: int
    bbox: tuple[float, float, float, float]
    bundled: bool
    centre: tuple[float, float]

    @property
    def extent_km(self) -> tuple[float, float]:
        """(east–west, north–south) size of the bounding box, km, measured through its middle."""
        s, w, n, e = self.bbox
        mid_lat, mid_lon = (s + n) / 2, (w + e) / 2
        return (float(haversine_km(mid_lat, w, mid_lat, e)), float(haversine_km(s, mid_lon, n, mid_lon)))


@dataclass(frozen=True, eq=False)
class RoadNetwork:
    """An undirected, connected road network: node coordinates and edges with lengths in metres.

    ``centre`` is the city's centre (lat, lon in degrees), as in its ``CityInfo``.
    """

    slug: str
    label: str
    centre: tuple[float, float]
    lat: NDArray[np.float64]
    lon: NDArray[np.float64]
    street_count: NDArray[np.int32]
    u: NDArray[np.int32]
    v: NDArray[np.int32]
    length_m: NDArray[np.float64]

    @property
    def n_nodes(self) -> int:
        """Number of road nodes."""
        return len(self.lat)

    @property
    def n_edges(self) -> int:
        """Number of directed road edges."""
        return len(self.u)

    def adjacency_km(self) -> sp.csr_matrix:
        """Symmetric sparse adjacency with edge lengths in km (for ``scipy.sparse.csgraph``)."""
        n = self.n_nodes
        w = self.length_m / 1000.0
        m = sp.coo_matrix((np.concatenate([w, w]), (np.concatenate([self.u, self.v]),
                                                     np.concatenate([self.v, self.u]))), shape=(n, n))
        return m.tocsr()


def _read_info(bundled: bool, entry: dict[str, Any]) -> CityInfo:
    s, w, n, e = (float(b) for b in entry["bbox"])
    bbox = (s, w, n, e)
    lat, lon = entry.get("centre") or ((s + n) / 2, (w + e) / 2)
    return CityInfo(slug=str(entry["slug"]), label=str(entry["label"]), source=str(entry["source"]),
                    nodes=int(entry["nodes"]), edges=int(entry["edges"]),
                    bbox=bbox, bundled=bundled, centre=(float(lat), float(lon)))


def bundled_cities() -> list[CityInfo]:
    """The cities shipped in ``data/``: the default (small, fast, for teaching) first, then largest first."""
    entries = json.loads((DATA_DIR / "cities.json").read_text())
    return [_read_info(True, e) for e in entries]


def default_city() -> str:
    """Slug of the default city: the first bundled one (Helsinki centre, a fast teaching example)."""
    return bundled_cities()[0].slug


def city_info(name: str) -> CityInfo:
    """The registry entry of a bundled or cached city, by slug or label (CityError names the known ones)."""
    return _find(name)[0]


def _cities_cache() -> Path:
    return cache_dir() / "cities"


def cached_cities() -> list[CityInfo]:
    """Cities downloaded earlier with osmnx and kept in the cache (unreadable entries are skipped)."""
    root = _cities_cache()
    found = []
    for meta in sorted(root.glob("*/meta.json")) if root.exists() else []:
        try:
            found.append(_read_info(False, json.loads(meta.read_text())))
        except (OSError, ValueError, KeyError):
            continue
    return found


def list_cities() -> list[CityInfo]:
    """Every city that loads without network.

    Returns
    -------
    list of CityInfo
        The bundled cities, then the downloads kept in the cache.
    """
    bundled = bundled_cities()
    names = {c.slug for c in bundled}
    return bundled + [c for c in cached_cities() if c.slug not in names]


def _find(name: str) -> tuple[CityInfo, Path]:
    key = name.strip().lower()
    for info in list_cities():
        if key in (info.slug, info.label.lower()):
            folder = (DATA_DIR if info.bundled else _cities_cache()) / info.slug
            return info, folder
    known = ", ".join(c.slug for c in list_cities())
    msg = (f"Unknown city `{name}`. Available offline: {known}. "
           "Download another with `download_city(place=...)` or `python -m mdpviz download --place ...`.")
    raise CityError(msg)


def load_city(name: str | None = None) -> RoadNetwork:
    """Load a bundled or cached city. Needs no network.

    Parameters
    ----------
    name
        A city's slug or label (case-insensitive); None for the default city.

    Returns
    -------
    RoadNetwork
        Its nodes (lat, lon in degrees) and edges (lengths in metres), read-only.

    Raises
    ------
    CityError
        An unknown name (the message lists the cities available offline) or unreadable files.
    """
    info, folder = _find(name or default_city())
    return _load_folder(str(folder), info.slug, info.label, info.centre)


@functools.lru_cache(maxsize=8)
def _load_folder(folder: str, slug: str, label: str, centre: tuple[float, float]) -> RoadNetwork:
    try:
        nodes = pd.read_parquet(Path(folder) / "nodes.parquet")
        edges = pd.read_parquet(Path(folder) / "edges.parquet")
    except (OSError, ValueError) as e:
        msg = f"City `{slug}` is listed but its files in {folder} cannot be read ({e}). Rebuild or re-download it."
        raise CityError(msg) from e
    net = RoadNetwork(slug=slug, label=label, centre=centre,
                      lat=nodes.lat.to_numpy(np.float64), lon=nodes.lon.to_numpy(np.float64),
                      street_count=nodes.street_count.to_numpy(np.int32),
                      u=edges.u.to_numpy(np.int32), v=edges.v.to_numpy(np.int32),
                      length_m=edges.length_m.to_numpy(np.float64))
    for arr in (net.lat, net.lon, net.street_count, net.u, net.v, net.length_m):
        arr.setflags(write=False)
    return net


def slugify(text: str) -> str:
    """A file-safe lower-case name. ``slugify("Piedmont, California") == "piedmont-california"``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "city"


def download_city(place: str | None = None, bbox: tuple[float, float, float, float] | None = None,
                  network_type: str = "drive", name: str | None = None) -> CityInfo:
    """Download a road network with osmnx and keep it in the cache, so later loads need no network.

    Parameters
    ----------
    place
        A place name that OSM's geocoder knows (``"Piedmont, California, USA"``).
    bbox
        Or a box (south lat, west lon, north lat, east lon) in degrees.
    network_type
        The osmnx network type (``drive``, ``walk``, ``all``...).
    name
        The slug to store it under (default: from the place name or the box).

    Returns
    -------
    CityInfo
        The stored city's slug, label, centre and size.

    Raises
    ------
    CityError
        No place or box, a bad box, or no network (the message names the bundled cities).
    """
    if (place is None) == (bbox is None):
        raise CityError("Give exactly one of `place` (a name) or `bbox` (south, west, north, east).")
    if bbox is not None:
        s, w, n, e = bbox
        if not (-90 <= s < n <= 90 and -180 <= w < e <= 180):
            msg = f"`bbox` {bbox} is not (south, west, north, east) in degrees with south < north and west < east."
            raise CityError(msg)
    # (mypy) bbox is set whenever place is None (exactly one of them, checked above)
    slug = slugify(name or place or "bbox-" + "-".join(f"{b:.3f}" for b in bbox))  # type: ignore[union-attr]
    import osmnx as ox  # local: osmnx (and geopandas) load slowly; only a download needs them

    try:
        if place is not None:
            g = ox.graph_from_place(place, network_type=network_type)
        else:
            # (mypy) bbox is set on this branch
            s, w, n, e = bbox  # type: ignore[misc]
            g = ox.graph_from_bbox((w, s, e, n), network_type=network_type)
    except Exception as e:  # osmnx raises many kinds (HTTP, geocoding, empty response)
        offline = ", ".join(c.slug for c in bundled_cities())
        msg = (f"Could not download `{place or bbox}` with osmnx: {type(e).__name__}: {e}. "
               f"If this machine has no network, use a bundled city instead: {offline}.")
        raise CityError(msg) from e
    g = ox.convert.to_undirected(g)
    nodes, edges = ox.graph_to_gdfs(g)
    edges = edges.reset_index()
    return save_network(slug, place or f"bbox {bbox}", f"osmnx download, network_type={network_type!r}",
                        osmid=nodes.index.to_numpy(), lat=nodes.y.to_numpy(float), lon=nodes.x.to_numpy(float),
                        u=edges.u.to_numpy(), v=edges.v.to_numpy(), length_m=edges["length"].to_numpy(float))


def save_network(slug: str, label: str, source: str, *, osmid: NDArray[np.int64], lat: NDArray[np.float64],
                 lon: NDArray[np.float64], u: NDArray[np.int64], v: NDArray[np.int64],
                 length_m: NDArray[np.float64]) -> CityInfo:
    """Store a network (node ids, coordinates, edges in metres) in the cache as a loadable city."""
    index = pd.Series(np.arange(len(osmid)), index=osmid)
    nodes, edges = clean_network(lat, lon, index.reindex(u).to_numpy(), index.reindex(v).to_numpy(), length_m)
    if len(nodes) < 2:
        raise CityError(f"The network for `{label}` has fewer than 2 connected nodes; try a larger area.")
    meta = write_city(_cities_cache() / slug, nodes, edges, slug=slug, label=label, source=source)
    _load_folder.cache_clear()
    return _read_info(False, meta)


def write_city(folder: Path, nodes: pd.DataFrame, edges: pd.DataFrame, *, slug: str, label: str,
               source: str, centre: tuple[float, float] | None = None) -> dict[str, object]:
    """Write a cleaned network as ``nodes.parquet``, ``edges.parquet`` and ``meta.json``; return the metadata.

    ``centre`` (lat, lon) defaults to the median node.
    """
    atomic_write(folder / "nodes.parquet", lambda p: nodes.to_parquet(p, compression="zstd", index=False))
    atomic_write(folder / "edges.parquet", lambda p: edges.to_parquet(p, compression="zstd", index=False))
    meta: dict[str, object] = {
        "slug": slug, "label": label, "source": source, "nodes": len(nodes), "edges": len(edges),
        "bbox": [float(nodes.lat.min()), float(nodes.lon.min()), float(nodes.lat.max()), float(nodes.lon.max())],
        "centre": list(centre or (float(nodes.lat.median()), float(nodes.lon.median())))}
    atomic_write(folder / "meta.json", lambda p: p.write_text(json.dumps(meta, indent=2) + "\n"))
    return meta


def clean_network(lat: NDArray[np.float64], lon: NDArray[np.float64], iu: NDArray[np.float64],
                  iv: NDArray[np.float64], length_m: NDArray[np.float64]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Undirected simple graph on the largest connected component, nodes renumbered 0..n-1.

    ``iu``/``iv`` are node positions (NaN where an edge names an unknown node; such edges are dropped).
    ``street_count`` is the node's degree in the result.
    """
    iu, iv = np.asarray(iu, dtype=float), np.asarray(iv, dtype=float)
    length_m = np.asarray(length_m, dtype=float)
    keep = ~(np.isnan(iu) | np.isnan(iv)) & np.isfinite(length_m) & (length_m > 0)
    keep &= iu != iv
    a = np.minimum(iu[keep], iv[keep]).astype(np.int64)
    b = np.maximum(iu[keep], iv[keep]).astype(np.int64)
    edges = (pd.DataFrame({"u": a, "v": b, "length_m": length_m[keep]})
             .groupby(["u", "v"], as_index=False)["length_m"].min())
    n = len(lat)
    adj = sp.coo_matrix((np.ones(len(edges)), (edges.u, edges.v)), shape=(n, n))
    _, labels = connected_components(adj, directed=False)
    kept = np.flatnonzero(labels == np.bincount(labels).argmax())
    renumber = np.full(n, -1)
    renumber[kept] = np.arange(len(kept))
    edges = edges[np.isin(edges.u, kept) & np.isin(edges.v, kept)]
    edges = pd.DataFrame({"u": renumber[edges.u].astype(np.int32), "v": renumber[edges.v].astype(np.int32),
                          "length_m": edges.length_m.to_numpy(float)})
    degree = np.bincount(np.concatenate([edges.u, edges.v]), minlength=len(kept))
    nodes = pd.DataFrame({"lat": np.asarray(lat, float)[kept], "lon": np.asarray(lon, float)[kept],
                          "street_count": degree.astype(np.int32)})
    return nodes, edges
