"""Where the secrets come from: the whole city (the papers' way) or a region the user picks.

A region is written as a short text, the same in the CLI (``--region``), the library, the dashboard's URL and the
problem's fingerprint:

* ``whole``: every node of the city (default; the seed papers draw K random nodes of the whole city);
* ``centre:R``: within R km of the city's centre (a landmark for the papers' cities, else the median node);
* ``LAT,LON,R``: within R km of a point (degrees, km);
* ``S,W,N,E``: inside a bounding box (degrees).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .cities import CityInfo
from .errors import ProblemError
from .geo import haversine_km

WHOLE = "whole"


@dataclass(frozen=True)
class Region:
    """A parsed region: ``kind`` is ``whole``, ``circle`` (lat, lon, radius km) or ``bbox`` (S, W, N, E)."""

    kind: str
    values: tuple[float, ...] = ()

    @property
    def spec(self) -> str:
        """The canonical text (round-trips through :func:`parse_region`), used in fingerprints and URLs.

        >>> parse_region(" 41.9, 12.5 ,3 ").spec
        '41.9,12.5,3'
        """
        if self.kind == WHOLE:
            return WHOLE
        return ",".join(f"{v:.6g}" for v in self.values)

    def contains(self, lat: NDArray[np.float64], lon: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Which of the points (degrees) lie in the region."""
        if self.kind == WHOLE:
            return np.ones(len(lat), dtype=bool)
        if self.kind == "circle":
            clat, clon, radius = self.values
            return haversine_km(lat, lon, clat, clon) <= radius
        s, w, n, e = self.values
        return (lat >= s) & (lat <= n) & (lon >= w) & (lon <= e)

    def describe(self) -> str:
        """A phrase for messages and captions, with units."""
        if self.kind == WHOLE:
            return "the whole city"
        if self.kind == "circle":
            clat, clon, radius = self.values
            return f"within {radius:g} km of ({clat:.4f}, {clon:.4f})"
        s, w, n, e = self.values
        return f"the box S {s:.4f}, W {w:.4f}, N {n:.4f}, E {e:.4f}"


def parse_region(text: str | None, centre: tuple[float, float] | None = None) -> Region:
    """Parse a region text (module docstring); ``centre:R`` needs the city's ``centre`` (lat, lon in degrees).

    Raises:
        ProblemError: malformed text, a radius ≤ 0, latitudes or longitudes out of range, or an empty box.

    >>> parse_region("41.8,12.4,42.0,12.6").kind
    'bbox'
    """
    raw = (text or WHOLE).strip().lower()
    if raw in (WHOLE, "all", ""):
        return Region(WHOLE)
    example = "`whole`, `centre:3` (km), `41.9,12.48,3` (lat, lon, radius km) or `41.8,12.4,42.0,12.6` (S, W, N, E)"
    if raw.startswith(("centre:", "center:")):
        if centre is None:
            raise ProblemError(f"Region `{text}` means the centre of a city; give a city, or a point: {example}.")
        radius = _number(raw.split(":", 1)[1], text, example)
        values: tuple[float, ...] = (*centre, radius)
    else:
        values = tuple(_number(part, text, example) for part in raw.split(","))
    if len(values) == 3:
        lat, lon, radius = values
        _check_lat_lon(lat, lon, text)
        if radius <= 0:
            raise ProblemError(f"Region `{text}`: the radius must be > 0 km, got {radius:g}.")
        return Region("circle", values)
    if len(values) == 4:
        s, w, n, e = values
        _check_lat_lon(s, w, text)
        _check_lat_lon(n, e, text)
        if not (s < n and w < e):
            raise ProblemError(f"Region `{text}` is not a box S, W, N, E with S < N and W < E (degrees).")
        return Region("bbox", values)
    raise ProblemError(f"Region `{text}` is not understood; write {example}.")


def _number(part: str, text: str | None, example: str) -> float:
    try:
        value = float(part.strip().removesuffix("km"))
    except ValueError:
        raise ProblemError(f"Region `{text}`: `{part.strip()}` is not a number; write {example}.") from None
    if not math.isfinite(value):
        raise ProblemError(f"Region `{text}`: `{part.strip()}` is not a finite number.")
    return value


def _check_lat_lon(lat: float, lon: float, text: str | None) -> None:
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        raise ProblemError(f"Region `{text}`: ({lat:g}, {lon:g}) is not a latitude in [-90, 90] and a longitude "
                           "in [-180, 180] (degrees).")


def region_presets(city: CityInfo) -> list[tuple[str, str]]:
    """(label, region text) choices for a city: the whole city, then centre discs that fit inside it."""
    name = city.label.split(" (")[0]
    width_km = min(city.extent_km)
    whole = f"{name}: whole city" + (" (as in the papers)" if city.slug in ("rome", "london") else "")
    discs = [(f"{name}: centre, {r:g} km", f"centre:{r:g}") for r in (1, 3, 10) if 2 * r < width_km]
    return [(whole, WHOLE), *discs]
