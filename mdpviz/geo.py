"""Small geometric helpers: great-circle distances and a local planar projection (km)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

EARTH_RADIUS_KM = 6371.0088


def haversine_km(lat1: ArrayLike, lon1: ArrayLike, lat2: ArrayLike, lon2: ArrayLike) -> NDArray[np.float64]:
    """Great-circle distance in km between points given in degrees (broadcasts like numpy).

    >>> round(float(haversine_km(60.1699, 24.9384, 59.4370, 24.7536)), 1)  # Helsinki to Tallinn
    82.1
    """
    la1, lo1, la2, lo2 = (np.radians(np.asarray(a, dtype=np.float64)) for a in (lat1, lon1, lat2, lon2))
    h = np.sin((la2 - la1) / 2) ** 2 + np.cos(la1) * np.cos(la2) * np.sin((lo2 - lo1) / 2) ** 2
    d: NDArray[np.float64] = 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))
    return d


def pairwise_haversine_km(lat_a: NDArray[np.float64], lon_a: NDArray[np.float64],
                          lat_b: NDArray[np.float64], lon_b: NDArray[np.float64]) -> NDArray[np.float64]:
    """Matrix of great-circle distances (km) between every point of A (rows) and of B (columns)."""
    return haversine_km(lat_a[:, None], lon_a[:, None], lat_b[None, :], lon_b[None, :])


def project_km(lat: ArrayLike, lon: ArrayLike, lat0: float, lon0: float) -> NDArray[np.float64]:
    """Equirectangular projection around (lat0, lon0): an (n, 2) array of (east, north) km.

    Accurate to well under 1 % over a city; used for nearest-node look-ups and grids, never for privacy.
    """
    lat_r = np.radians(np.asarray(lat, dtype=np.float64))
    lon_r = np.radians(np.asarray(lon, dtype=np.float64))
    east = (lon_r - np.radians(lon0)) * np.cos(np.radians(lat0)) * EARTH_RADIUS_KM
    north = (lat_r - np.radians(lat0)) * EARTH_RADIUS_KM
    return np.column_stack([east, north])
