"""Reading a user's CSV of points (lat, lon[, weight]) and snapping points to the nearest network node."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import IO, Any, TypeAlias

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.spatial import cKDTree

from .cities import RoadNetwork
from .errors import ProblemError
from .geo import project_km

PointsSource: TypeAlias = str | Path | IO[str] | IO[bytes] | pd.DataFrame
_ALIASES = {"lat": ("lat", "latitude"), "lon": ("lon", "lng", "long", "longitude"), "weight": ("weight", "w")}
# headers that do not say whether they hold degrees or planar coordinates, nor which is which
_AMBIGUOUS = ("x", "y", "easting", "northing")


def read_points(source: PointsSource) -> pd.DataFrame:
    """Read points as a DataFrame with float columns ``lat``, ``lon`` (degrees) and ``weight`` (≥ 0, default 1).

    Accepts a path, an open file, bytes from an upload, or a DataFrame. Column names are matched without regard
    to case (``latitude``/``longitude``/``lng`` are understood).

    Raises:
        ProblemError: unreadable file, missing or non-numeric columns, coordinates out of range, no rows,
            negative weights, or weights that sum to zero.
    """
    raw = read_table(source, "Points", "lat, lon[, weight]")
    cols = find_columns(raw, _ALIASES, "Points", optional=("weight",))
    if len(raw) == 0:
        raise ProblemError("The points file has no rows; give at least one point (lat, lon).")
    out = pd.DataFrame()
    for key, col in cols.items():
        values = pd.to_numeric(raw[col], errors="coerce") if col is not None else pd.Series(1.0, index=raw.index)
        bad = values.isna() | ~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0]) + 2  # +1 header, +1 one-based
            msg = f"Column `{col}` has {int(bad.sum())} missing or non-numeric value(s), the first on CSV line {row}."
            raise ProblemError(msg)
        out[key] = values.astype(float).to_numpy()
    if not ((out.lat.abs() <= 90).all() and (out.lon.abs() <= 180).all()):
        raise ProblemError("Latitudes must lie in [-90, 90] and longitudes in [-180, 180] (degrees).")
    if (out.weight < 0).any() or out.weight.sum() <= 0:
        raise ProblemError("Weights must be ≥ 0 and not all zero.")
    return out


def snap_to_nodes(lat: NDArray[np.float64], lon: NDArray[np.float64], node_lat: NDArray[np.float64],
                  node_lon: NDArray[np.float64], max_km: float) -> NDArray[np.int64]:
    """Index of the nearest node for each point; error if any point lies more than ``max_km`` from every node."""
    lat0, lon0 = float(np.mean(node_lat)), float(np.mean(node_lon))
    tree = cKDTree(project_km(node_lat, node_lon, lat0, lon0))
    dist, idx = tree.query(project_km(lat, lon, lat0, lon0))
    far = dist > max_km
    if far.any():
        worst = int(np.argmax(dist))
        msg = (f"{int(far.sum())} of {len(lat)} point(s) lie more than {max_km:g} km from the road network "
               f"(the farthest, ({lat[worst]:.5f}, {lon[worst]:.5f}), is {dist[worst]:.2f} km away). "
               "Use points inside the city, another city, or a larger snapping distance.")
        raise ProblemError(msg)
    nearest: NDArray[np.int64] = idx.astype(np.int64)
    return nearest


def snap_points(points: pd.DataFrame, network: RoadNetwork, max_km: float) -> NDArray[np.int64]:
    """Nearest network node for each point of ``read_points``'s output."""
    return snap_to_nodes(points.lat.to_numpy(), points.lon.to_numpy(), network.lat, network.lon, max_km)


def read_table(source: PointsSource, what: str, expected: str, **read_csv: Any) -> pd.DataFrame:
    """A CSV from a path, an open file, upload bytes or a DataFrame, as a DataFrame (nothing is written).

    Raises:
        ProblemError: a missing file, or one that cannot be parsed as CSV; ``what`` names the file's kind and
            ``expected`` its columns in the message.
    """
    if isinstance(source, pd.DataFrame):
        return source.copy()
    try:
        if isinstance(source, (bytes, bytearray)):
            source = io.BytesIO(source)
        return pd.read_csv(source, **read_csv)
    except FileNotFoundError as e:
        raise ProblemError(f"{what} file `{source}` does not exist.") from e
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as e:
        raise ProblemError(f"{what} file could not be read as CSV ({_why_unreadable(e)}). Expected columns "
                           f"{expected}.") from e


def _why_unreadable(e: Exception) -> str:
    """Why pandas could not read a CSV, in words (its parser's own text names C internals).

    >>> _why_unreadable(pd.errors.ParserError("Error tokenizing data. C error: Expected 1 fields in line 3, saw 2"))
    'a row has 2 fields where the header has 1 (near line 3)'
    """
    found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(e))
    if found:
        return f"a row has {found[3]} fields where the header has {found[1]} (near line {found[2]})"
    if isinstance(e, UnicodeDecodeError):
        return f"it is not UTF-8 text: byte {e.start} cannot be decoded"
    if isinstance(e, pd.errors.EmptyDataError):
        return "it is empty"
    return str(e)


def find_columns(raw: pd.DataFrame, aliases: dict[str, tuple[str, ...]], what: str,
                 optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """Map each key of ``aliases`` to the first matching column (case-insensitive); None for a missing optional.

    Raises:
        ProblemError: a required column is missing; the message lists the accepted names and the columns found.
    """
    lower = {str(c).strip().lower(): c for c in raw.columns}
    cols = {}
    for key, names in aliases.items():
        found = next((lower[n] for n in names if n in lower), None)
        if found is None and key in ("lat", "lon") and (vague := [lower[n] for n in _AMBIGUOUS if n in lower]):
            named = " and ".join(f"`{c}`" for c in vague)
            raise ProblemError(f"{what}: the columns {named} do not say which is latitude and which longitude, nor "
                               "that they are degrees (they may be planar metres); name them `lat` and `lon` "
                               "(WGS 84 degrees).")
        if found is None and key not in optional:
            msg = (f"{what} need a `{names[0]}` column (or one of {', '.join(names)}); "
                   f"found columns: {', '.join(str(c) for c in raw.columns) or 'none'}.")
            raise ProblemError(msg)
        cols[key] = found
    return cols
