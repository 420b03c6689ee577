"""The road network as one raster image: the maps' base layer, as light to send and to draw for Rome's 60,000
segments or London's 160,000 as for a small city.

A vector layer of every segment made the browser parse megabytes of JSON and walk every coordinate on each rerun
(9–16 s to the first map of Rome in headless chromium); one PNG, served by Streamlit's media endpoint from the
app's own origin, is fetched once and left alone by deck.gl while its URL stays the same. The image is drawn in
Web Mercator rows (deck.gl stretches a bitmap linearly in Mercator), at about twice the map's pixel density so
it stays sharp when zoomed in once. Pillow draws the lines
on a canvas ``SUPERSAMPLE`` times finer and averages it down (anti-aliasing) and encodes the PNG. No Streamlit here
(the wrappers are in ``cache``).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from PIL import Image, ImageDraw

MAX_SIDE_PX = 4096  # texture side limit that every WebGL implementation supports
GREY = 150          # road colour (grey level) ...
ALPHA = 120         # ... and opacity of a fully covered pixel
SUPERSAMPLE = 4     # the lines are drawn on a canvas this many times finer, then averaged down


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
    y: NDArray[np.float64] = np.log(np.tan(np.pi / 4 + phi / 2))
    return y


def png_bytes(image: NDArray[np.uint8]) -> bytes:
    """An (h, w, 4) RGBA or (h, w, 2) grey+alpha uint8 image as PNG bytes.

    >>> png = png_bytes(np.zeros((1, 1, 2), dtype=np.uint8))
    >>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n", Image.open(io.BytesIO(png)).mode
    (True, 'LA')
    """
    if image.ndim != 3 or image.shape[2] not in (2, 4) or image.dtype != np.uint8:
        raise ValueError(f"png_bytes takes an (h, w, 2) or (h, w, 4) uint8 image; got {image.shape} {image.dtype}.")
    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image)).save(out, format="PNG", compress_level=6)
    return out.getvalue()


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

    Each segment is drawn ``width_px`` pixels wide on a canvas ``SUPERSAMPLE`` times finer, which is then averaged
    down, so lines come out anti-aliased at any angle.
    """
    w, s, e, n = bounds
    nx, ny = size
    k = SUPERSAMPLE
    y_top, y_bottom = float(mercator_y(n)), float(mercator_y(s))
    x0, x1 = (np.asarray(lon_u, float) - w) / (e - w) * nx * k, (np.asarray(lon_v, float) - w) / (e - w) * nx * k
    y0 = (y_top - mercator_y(lat_u)) / (y_top - y_bottom) * ny * k
    y1 = (y_top - mercator_y(lat_v)) / (y_top - y_bottom) * ny * k
    canvas = Image.new("L", (nx * k, ny * k), 0)
    draw = ImageDraw.Draw(canvas)
    line_w = max(1, round(width_px * k))
    for seg in np.column_stack([x0, y0, x1, y1]).tolist():
        draw.line(seg, fill=255, width=line_w)
    coverage = np.asarray(canvas.reduce(k), dtype=np.float64) / 255.0  # the mean of each k × k block
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
