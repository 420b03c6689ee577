"""The road network as one raster image: the maps' base layer, as light to send and to draw for Rome's 60,000
segments or London's 160,000 as for a small city.

A vector layer of every segment made the browser parse megabytes of JSON and walk every coordinate on each rerun
(9–16 s to the first map of Rome in headless chromium); one PNG, served by Streamlit's media endpoint from the
app's own origin, is fetched once and left alone by deck.gl while its URL stays the same. The image is drawn in
Web Mercator rows (deck.gl stretches a bitmap linearly in Mercator), anti-aliased by splatting samples along
each segment, at about twice the map's pixel density so it stays sharp when zoomed in once. No Streamlit here
(the wrappers are in ``cache``), and no imaging library: numpy and zlib.
"""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

MAX_SIDE_PX = 4096  # texture side limit that every WebGL implementation supports
GREY = 150          # road colour (grey level) ...
ALPHA = 120         # ... and opacity of a fully covered pixel


@dataclass(frozen=True)
class RoadImage:
    """A PNG of the roads inside ``bounds`` = [west, south, east, north] (degrees), as BitmapLayer takes it."""

    png: bytes
    bounds: tuple[float, float, float, float]
    size: tuple[int, int]  # (width, height) in pixels


def mercator_y(lat: NDArray[np.float64] | float) -> NDArray[np.float64]:
    """Web Mercator y (radians of the projection) of latitudes in degrees.

    >>> abs(float(mercator_y(0.0))) < 1e-12, round(float(mercator_y(60.0)), 4)
    (True, 1.317)
    """
    phi = np.radians(np.asarray(lat, dtype=float))
    return np.log(np.tan(np.pi / 4 + phi / 2))


def png_bytes(image: NDArray[np.uint8]) -> bytes:
    """An (h, w, 4) RGBA or (h, w, 2) grey+alpha uint8 image as PNG bytes.

    >>> png_bytes(np.zeros((1, 1, 2), dtype=np.uint8))[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    h, w, channels = image.shape
    colour_type = {4: 6, 2: 4}[channels]
    rows = np.concatenate([np.zeros((h, 1), dtype=np.uint8), np.ascontiguousarray(image).reshape(h, w * channels)],
                          axis=1)  # filter type 0 before every row

    def chunk(kind: bytes, data: bytes) -> bytes:
        """One PNG chunk: length, type, data and CRC-32."""
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, colour_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))


def image_size(bounds: tuple[float, float, float, float], px_per_deg_lon: float) -> tuple[int, int]:
    """(width, height) in pixels of an image of ``bounds`` at ``px_per_deg_lon``, capped at ``MAX_SIDE_PX``."""
    w, s, e, n = bounds
    width = (e - w) * px_per_deg_lon
    height = float(mercator_y(n) - mercator_y(s)) * 180 / math.pi * px_per_deg_lon
    scale = min(1.0, MAX_SIDE_PX / max(width, height, 1.0))
    return max(2, round(width * scale)), max(2, round(height * scale))


def draw_roads(lon_u: NDArray[np.float64], lat_u: NDArray[np.float64], lon_v: NDArray[np.float64],
               lat_v: NDArray[np.float64], bounds: tuple[float, float, float, float], size: tuple[int, int],
               width_px: float = 1.6) -> NDArray[np.uint8]:
    """Coverage of the segments (u → v, degrees) on a (height, width) grid of ``bounds``, as grey+alpha pixels.

    Each segment is sampled every half pixel and each sample spreads over its four nearest pixels (bilinear), so
    lines come out anti-aliased, about ``width_px`` pixels wide, at any angle.
    """
    w, s, e, n = bounds
    nx, ny = size
    y_top, y_bottom = float(mercator_y(n)), float(mercator_y(s))
    x0, x1 = (np.asarray(lon_u, float) - w) / (e - w) * nx, (np.asarray(lon_v, float) - w) / (e - w) * nx
    y0 = (y_top - mercator_y(lat_u)) / (y_top - y_bottom) * ny
    y1 = (y_top - mercator_y(lat_v)) / (y_top - y_bottom) * ny
    steps = np.maximum(1, np.ceil(np.hypot(x1 - x0, y1 - y0) * 2).astype(np.int64))
    seg = np.repeat(np.arange(len(steps)), steps + 1)
    t = (np.arange(len(seg)) - np.repeat(np.cumsum(steps + 1) - (steps + 1), steps + 1)) / np.repeat(steps, steps + 1)
    px = x0[seg] + (x1 - x0)[seg] * t - 0.5
    py = y0[seg] + (y1 - y0)[seg] * t - 0.5
    acc = np.zeros((ny + 2) * (nx + 2))
    ix, iy = np.floor(px).astype(np.int64), np.floor(py).astype(np.int64)
    fx, fy = px - ix, py - iy
    inside = (ix >= -1) & (ix < nx) & (iy >= -1) & (iy < ny)
    ix, iy, fx, fy = ix[inside] + 1, iy[inside] + 1, fx[inside], fy[inside]
    for dx, dy, wgt in ((0, 0, (1 - fx) * (1 - fy)), (1, 0, fx * (1 - fy)), (0, 1, (1 - fx) * fy), (1, 1, fx * fy)):
        acc += np.bincount((iy + dy) * (nx + 2) + ix + dx, weights=wgt, minlength=acc.size)
    # two samples per pixel of length: a pixel crossed by one line gathers about 2 × (its share of the line)
    coverage = np.clip(acc.reshape(ny + 2, nx + 2)[1:-1, 1:-1] * (width_px / 2), 0, 1)
    out = np.empty((ny, nx, 2), dtype=np.uint8)
    out[..., 0] = GREY
    out[..., 1] = np.round(coverage * ALPHA).astype(np.uint8)
    return out


def view_bounds(lat: NDArray[np.float64], lon: NDArray[np.float64], margin: float = 0.6
                ) -> tuple[float, float, float, float]:
    """[west, south, east, north] around the points, widened by ``margin`` of their span on every side (so a
    map can be panned or zoomed out a little before the image ends), at least 200 m wide."""
    s, n = float(np.min(lat)), float(np.max(lat))
    w, e = float(np.min(lon)), float(np.max(lon))
    half_lat = max(n - s, 0.0018) * (0.5 + margin)
    half_lon = max(e - w, 0.0018 / max(math.cos(math.radians((s + n) / 2)), 0.1)) * (0.5 + margin)
    clat, clon = (s + n) / 2, (w + e) / 2
    return (clon - half_lon, max(clat - half_lat, -85.0), clon + half_lon, min(clat + half_lat, 85.0))


def road_image(lon_u: NDArray[np.float64], lat_u: NDArray[np.float64], lon_v: NDArray[np.float64],
               lat_v: NDArray[np.float64], bounds: tuple[float, float, float, float], px_per_deg_lon: float
               ) -> RoadImage:
    """The roads inside ``bounds`` drawn at ``px_per_deg_lon`` (capped so neither side exceeds 4,096 px)."""
    w, s, e, n = bounds
    keep = ~(((lon_u < w) & (lon_v < w)) | ((lon_u > e) & (lon_v > e)) | ((lat_u < s) & (lat_v < s))
             | ((lat_u > n) & (lat_v > n)))
    size = image_size(bounds, px_per_deg_lon)
    pixels = draw_roads(lon_u[keep], lat_u[keep], lon_v[keep], lat_v[keep], bounds, size)
    return RoadImage(png_bytes(pixels), bounds, size)
