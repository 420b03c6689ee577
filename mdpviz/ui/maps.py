"""pydeck maps with no external basemap: the road network is the base layer, the mechanism is drawn on top.

Every layer has an ``id`` (needed for selections); pickable layers carry a ``tip`` column for the tooltip and
``i`` (secret index) so a click can select a secret. Colour scales come with an HTML legend (units included).
"""

from __future__ import annotations

import base64
import html
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pydeck as pdk
from numpy.typing import NDArray
from pydeck.bindings.json_tools import default_serialize

from mdpviz.explain import format_m
from mdpviz.geo import haversine_km
from mdpviz.problem import Problem

from .basemap import png_bytes

# colour scales: a few stops, interpolated linearly (RGB)
SCALES: dict[str, list[tuple[int, int, int]]] = {
    "prob": [(254, 240, 217), (253, 204, 138), (252, 141, 89), (227, 74, 51), (179, 0, 0)],        # OrRd
    "loss": [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)],          # viridis
    "post": [(203, 201, 226), (158, 154, 200), (117, 107, 177), (84, 39, 143), (63, 0, 125)],      # Purples
    "heat": [(255, 255, 204), (161, 218, 180), (65, 182, 196), (44, 127, 184), (37, 52, 148)],     # YlGnBu
}
ROAD = [150, 150, 150, 110]
SECRET = [37, 99, 235, 170]
OUTPUT_RING = [120, 130, 150, 255]  # slate: visible on light and dark backgrounds
TRUE = [16, 185, 129, 255]
EXPECTED = [236, 72, 153, 255]
VIOLATION = [220, 38, 38, 150]           # a pair the mechanism claims, breaking ε-mDP: a broken promise
UNCLAIMED = [148, 163, 184, 170]         # a pair outside the mechanism's claim exceeding ε·d: not a promise broken
CLAIMED = "breaks the claimed ε-mDP"
NOT_CLAIMED = "exceeds ε·d on a pair the mechanism does not claim"
ANCHOR = [234, 179, 8, 255]
USER = [14, 165, 233, 220]  # users' sampled reports (PAnDA): sky-blue lines from x_n to y_n
LATTICE = [202, 138, 4, 170]  # anchor-lattice grid lines (amber, like the anchors)
POINT = [16, 185, 129, 255]   # a picked point of the plane (same green as the true location)
HEAT_Y = [124, 58, 237, 255]  # the output whose heat map is shown (violet ring)
OBSERVED = [124, 58, 237, 255]  # the report the attacker observes (violet ring, like the heat map's output)


# Streamlit's map element fetches a Carto basemap style unless the deck carries this sentinel as its style: with
# it, no basemap at all is drawn and no request leaves the app's own origin (the road network is our base layer)
NO_BASEMAP = "__MAP_STYLE__"


class CompactDeck(pdk.Deck):  # type: ignore[misc]  # pydeck has no type annotations
    """A Deck with no basemap (nothing fetched from a third party) and compact JSON (pydeck indents by 2, which
    triples the size sent to the browser)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(map_provider=None, **kwargs)
        self.map_style = NO_BASEMAP

    def to_json(self) -> str:
        """The deck as compact JSON (no indentation, sorted keys)."""
        return json.dumps(self, sort_keys=True, default=default_serialize, separators=(",", ":"))


def colours(values: NDArray[np.float64], vmin: float, vmax: float, scale: str, alpha: int = 220) -> list[list[int]]:
    """RGBA colours for ``values`` on ``scale`` between ``vmin`` and ``vmax``."""
    stops = np.array(SCALES[scale], dtype=float)
    t = np.clip((np.asarray(values, float) - vmin) / (vmax - vmin if vmax > vmin else 1.0), 0, 1)
    pos = t * (len(stops) - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, len(stops) - 1)
    frac = (pos - lo)[:, None]
    rgb = stops[lo] * (1 - frac) + stops[hi] * frac
    rgba: list[list[int]] = np.column_stack([rgb.round().astype(int), np.full(len(rgb), alpha)]).tolist()
    return rgba


def legend_html(title: str, scale: str, vmin: str, vmax: str) -> str:
    """A small horizontal colour bar with its title (units included) and end labels; legible on both themes."""
    stops = ", ".join(f"rgb{c}" for c in SCALES[scale])
    return (f'<div style="font-size:0.8rem;margin:0 0 4px 0">'
            f'<div style="font-weight:600">{html.escape(title)}</div>'
            f'<div style="height:10px;border-radius:3px;border:1px solid rgba(128,128,128,.5);'
            f'background:linear-gradient(to right, {stops})"></div>'
            f'<div style="display:flex;justify-content:space-between"><span>{html.escape(vmin)}</span>'
            f'<span>{html.escape(vmax)}</span></div></div>')


def symbol_legend_html(items: list[tuple[str, list[int], str]]) -> str:
    """Legend entries ``(label, rgba, shape)`` with shape ``dot``, ``ring``, ``square`` or ``line``."""
    parts = []
    for label, c, shape in items:
        rgb = f"rgba({c[0]},{c[1]},{c[2]},{c[3] / 255:.2f})"
        if shape == "line":
            sw = (f'<span style="display:inline-block;width:16px;height:3px;background:{rgb};'
                  'vertical-align:middle"></span>')
        elif shape == "square":
            sw = (f'<span style="display:inline-block;width:10px;height:10px;background:{rgb};'
                  f'outline:1px solid rgba(128,128,128,.8);vertical-align:middle"></span>')
        elif shape == "ring":
            sw = (f'<span style="display:inline-block;width:10px;height:10px;border-radius:50%;'
                  f'border:2px solid {rgb};vertical-align:middle"></span>')
        else:
            sw = (f'<span style="display:inline-block;width:10px;height:10px;border-radius:50%;'
                  f'background:{rgb};vertical-align:middle"></span>')
        wrap = "nowrap" if len(label) <= 40 else "normal"  # long labels wrap inside the legend's column
        parts.append(f'<span style="margin-right:12px;white-space:{wrap}">{sw} {html.escape(label)}</span>')
    return f'<div style="font-size:0.8rem;line-height:1.8">{"".join(parts)}</div>'


def view_state(prob: Problem, width_px: int = 800, height_px: int = 520) -> pdk.ViewState:
    """Centre and zoom that fit every secret."""
    lat0, lat1 = float(prob.x_lat.min()), float(prob.x_lat.max())
    lon0, lon1 = float(prob.x_lon.min()), float(prob.x_lon.max())
    clat = (lat0 + lat1) / 2
    lon_span = max(lon1 - lon0, 1e-4) * 1.05
    lat_span = max(lat1 - lat0, 1e-4) * 1.05
    # deck.gl draws the whole world 512 px wide at zoom 0
    z_lon = math.log2(width_px * 360 / (512 * lon_span))
    z_lat = math.log2(height_px * 360 * math.cos(math.radians(clat)) / (512 * lat_span))
    return pdk.ViewState(latitude=clat, longitude=(lon0 + lon1) / 2, zoom=min(z_lon, z_lat) - 0.05,
                         pitch=0, bearing=0)


@dataclass
class MapLayers:
    """What to draw on an Explore-style map (None/False: the layer is off)."""

    Z_row: NDArray[np.float64] | None = None          # distribution of the selected secret over Y
    row_label: str = ""                               # whose distribution Z_row is ("x3", "the picked point")
    secret: int | None = None                         # selected secret (index into X)
    expected: tuple[float, float] | None = None       # expected reported (lat, lon) of the selected secret
    show_secrets: bool = True
    show_outputs: bool = True
    secret_values: NDArray[np.float64] | None = None  # colour secrets by these (loss m, or posterior)
    secret_scale: str = "loss"
    secret_value_label: str = ""
    violations: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]] | None = None
    violation_kind: str = CLAIMED                     # CLAIMED (a broken promise) or UNCLAIMED (not promised)
    attack_y: int | None = None                       # output whose posterior is shown (index into Y)
    extra_points: tuple[str, NDArray[np.float64], NDArray[np.float64]] | None = None  # (name, lat, lon): anchors
    user_reports: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None  # (true secret, reported secret)
    plane: PlaneGrid | None = None                    # clickable grid over the plane, coloured when a heat map
    lattice: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None  # anchor (lat, lon), (ny, nx) each
    point: tuple[float, float] | None = None          # a picked point of the plane (lat, lon), shown as the truth
    heat_y: int | None = None                         # output whose heat map is shown (index into Y)


@dataclass
class PlaneGrid:
    """Square cells covering the region (centres in degrees, side in metres); ``values`` colour them.

    Without values the cells are drawn almost transparent: still pickable, so a click on empty map space
    reports the cell's centre (pydeck reports only picked objects, never a bare coordinate).
    """

    lat: NDArray[np.float64]                          # cell centres, row-major from the south-west corner
    lon: NDArray[np.float64]
    side_m: float
    nearest: NDArray[np.int64]                        # nearest secret of each cell centre
    shape: tuple[int, int] = (0, 0)                   # (rows south→north, columns west→east)
    values: NDArray[np.float64] | None = None         # probability per cell, or None: invisible pick grid
    vmax: float = 1.0
    label: str = ""                                   # tooltip text before the value, e.g. "z(y3 | here) ="
    inside: NDArray[np.bool_] | None = None           # cells near enough a secret to be drawn (None: all)


def violation_colour(kind: str) -> list[int]:
    """Red for broken promises, slate grey for pairs outside the claim."""
    return VIOLATION if kind == CLAIMED else UNCLAIMED


def image_layer(layer_id: str, url: str, bounds: tuple[float, float, float, float]) -> pdk.Layer:
    """A bitmap stretched over ``bounds`` = [west, south, east, north] (degrees); ``url`` of the app's origin."""
    # quoted: pydeck's JSON converter reads a bare string prop as an expression
    return pdk.Layer("BitmapLayer", id=layer_id, image=f"'{url}'", bounds=[float(b) for b in bounds],
                     pickable=False)


def deck(prob: Problem, roads: pdk.Layer | None, layers: MapLayers, *, height_px: int = 520,
         width_px: int = 800, small: bool = False) -> pdk.Deck:
    """The map: the road image (``cache.road_layer``), then secrets, outputs, the distribution Z[x,·], markers
    and violation lines."""
    radius_px = _secret_radius(layers, small)
    out: list[pdk.Layer] = [] if roads is None else [roads]
    out += _plane_layers(layers)
    if layers.show_secrets:
        out.append(_secrets_layer(prob, layers, radius_px))
    out += _line_layers(prob, layers)
    if layers.Z_row is not None:
        out.append(_distribution_layer(prob, layers.Z_row, layers.row_label or f"x{layers.secret}", small))
    if layers.show_outputs:
        odf = pd.DataFrame({"lon": prob.y_lon, "lat": prob.y_lat, "i": prob.y_index, "k": np.arange(prob.m)})
        odf["tip"] = [f"output y{k} (= secret x{i})" for k, i in zip(odf.k, odf.i, strict=True)]
        out.append(dots("outputs", odf, line=OUTPUT_RING, line_px=1.5, radius_px=radius_px + 3))
    out += _output_markers(prob, layers)
    out += _truth_layers(prob, layers, width_px, height_px)
    return CompactDeck(layers=out, initial_view_state=view_state(prob, width_px, height_px),
                       tooltip={"text": "{tip}"})


def _secret_radius(layers: MapLayers, small: bool) -> int:
    """Radius in pixels of the secrets' dots: larger when they are coloured, larger still for a posterior."""
    radius_px = 2 if small else 3
    if layers.show_secrets and layers.secret_values is not None:
        radius_px += 2 if layers.secret_scale == "post" else 1
    return radius_px


def _plane_layers(layers: MapLayers) -> list[pdk.Layer]:
    """The heat map image and the pick grid over the plane, then the anchor lattice (each when asked for)."""
    out: list[pdk.Layer] = []
    if layers.plane is not None and layers.plane.values is not None:
        out.append(heat_layer(layers.plane))
    if layers.plane is not None:
        out.append(plane_layer(layers.plane))
    if layers.lattice is not None:
        out.extend(lattice_layers(*layers.lattice))
    return out


def _secrets_layer(prob: Problem, layers: MapLayers, radius_px: int) -> pdk.Layer:
    """Every secret as a clickable dot: plain, or coloured by ``layers.secret_values`` on its scale."""
    df = pd.DataFrame({"lon": prob.x_lon, "lat": prob.x_lat, "i": np.arange(prob.k)})
    if layers.secret_values is not None:
        v = layers.secret_values
        vmax = float(np.max(v)) if len(v) else 1.0
        if layers.secret_scale == "post":  # a posterior is peaked: a square-root scale shows its tail too
            df["color"] = colours(np.sqrt(v), 0.0, math.sqrt(vmax), "post", alpha=240)
        else:
            df["color"] = colours(v, float(np.min(v)), vmax, layers.secret_scale, alpha=230)
        fmt = format_m if layers.secret_scale == "loss" else (lambda x: f"{x:.3g}")
        df["tip"] = [f"secret x{i} · {layers.secret_value_label} {fmt(float(x))}" for i, x in enumerate(v)]
    else:
        df["tip"] = [f"secret x{i} (click to select)" for i in range(prob.k)]
    return dots("secrets", df, fill="color" if "color" in df else SECRET, radius_px=radius_px, auto_highlight=True)


def _line_layers(prob: Problem, layers: MapLayers) -> list[pdk.Layer]:
    """Violation lines between secrets, the diagnostics' extra points and users' lines to their sampled reports."""
    out: list[pdk.Layer] = []
    if layers.violations is not None and len(layers.violations[0]):
        vi, vj, vf = layers.violations
        vdf = pd.DataFrame({"s": np.column_stack([prob.x_lon[vi], prob.x_lat[vi]]).tolist(),
                            "t": np.column_stack([prob.x_lon[vj], prob.x_lat[vj]]).tolist(),
                            "tip": [f"x{a} → x{b}: {layers.violation_kind}; the ratio uses {f:.3g}× the allowed "
                                    "ε·d" for a, b, f in zip(vi, vj, vf, strict=True)]})
        out.append(pdk.Layer("LineLayer", id="violations", data=vdf, get_source_position="s",
                             get_target_position="t", get_color=violation_colour(layers.violation_kind),
                             get_width=1.5, width_min_pixels=1.5, pickable=True))
    if layers.extra_points is not None:
        name, elat, elon = layers.extra_points
        edf = pd.DataFrame({"lon": np.round(elon, 6), "lat": np.round(elat, 6),
                            "tip": [f"{name} #{n}" for n in range(len(elat))]})
        out.append(dots("extra", edf, line=ANCHOR, line_px=2, radius_px=5))
    if layers.user_reports is not None and len(layers.user_reports[0]):
        ui, uj = layers.user_reports
        udf = pd.DataFrame({"s": np.column_stack([prob.x_lon[ui], prob.x_lat[ui]]).round(6).tolist(),
                            "t": np.column_stack([prob.x_lon[uj], prob.x_lat[uj]]).round(6).tolist(),
                            "tip": [f"user at x{a} reported x{b}" for a, b in zip(ui, uj, strict=True)]})
        out.append(pdk.Layer("LineLayer", id="user-reports", data=udf, get_source_position="s",
                             get_target_position="t", get_color=USER, get_width=2, width_min_pixels=2,
                             pickable=True))
    return out


def _distribution_layer(prob: Problem, z: NDArray[np.float64], who: str, small: bool) -> pdk.Layer:
    """The report distribution ``z`` of ``who`` over the outputs: dots sized and coloured by probability (the
    negligible ones left out, the likeliest drawn last)."""
    zmax = float(z.max()) if z.max() > 0 else 1.0
    keep = z > zmax * 1e-3
    ydf = pd.DataFrame({"lon": prob.y_lon[keep], "lat": prob.y_lat[keep],
                        "i": prob.y_index[keep], "k": np.flatnonzero(keep), "z": z[keep]})
    ydf["r"] = 3 + (14 if not small else 9) * np.sqrt(ydf.z / zmax)
    ydf["color"] = colours(ydf.z.to_numpy(), 0.0, zmax, "prob", alpha=210)
    ydf["tip"] = [f"output y{k} · Pr[report | {who}] = {v:.3g}" for k, v in zip(ydf.k, ydf.z, strict=True)]
    ydf = ydf.sort_values("z")
    return dots("dist", ydf, fill="color", line=[60, 60, 60, 160], line_px=1, radius_px="r")


def _output_markers(prob: Problem, layers: MapLayers) -> list[pdk.Layer]:
    """Rings at the attacker's observed report and at the heat map's output (each when set)."""
    out: list[pdk.Layer] = []
    if layers.attack_y is not None:
        k = layers.attack_y
        adf = pd.DataFrame({"lon": [prob.y_lon[k]], "lat": [prob.y_lat[k]], "tip": [f"observed report y{k}"]})
        out.append(dots("attack", adf, line=OBSERVED, line_px=3, radius_px=12))
    if layers.heat_y is not None:
        k = layers.heat_y
        hdf = pd.DataFrame({"lon": [prob.y_lon[k]], "lat": [prob.y_lat[k]], "tip": [f"heat-map output y{k}"]})
        out.append(dots("heat-y", hdf, line=HEAT_Y, line_px=3, radius_px=10))
    return out


def _truth_layers(prob: Problem, layers: MapLayers, width_px: int, height_px: int) -> list[pdk.Layer]:
    """The true location (a picked point, else the selected secret) with the line to its expected report."""
    out: list[pdk.Layer] = []
    if layers.point is not None:
        plat, plon = layers.point
        if layers.expected is not None:
            out += _expected_report(prob, (plat, plon), layers.expected, "Pr[y | point]", width_px, height_px)
        pdf = pd.DataFrame({"lon": [plon], "lat": [plat], "tip": [f"picked point {plat:.5f}, {plon:.5f}"]})
        # a white-edged square, unlike the round secrets: this is a location of the plane, not a node
        out.append(pdk.Layer("ColumnLayer", id="point", data=pdf, get_position=["lon", "lat"], disk_resolution=4,
                             angle=45, radius=_px_to_m(prob, 9), extruded=False, filled=True, stroked=True,
                             get_fill_color=POINT, get_line_color=[255, 255, 255, 255], line_width_min_pixels=2,
                             pickable=True))
    elif layers.secret is not None:
        i = layers.secret
        tdf = pd.DataFrame({"lon": [prob.x_lon[i]], "lat": [prob.x_lat[i]], "i": [i],
                            "tip": [f"true location x{i}"]})
        if layers.expected is not None:
            out += _expected_report(prob, (float(prob.x_lat[i]), float(prob.x_lon[i])), layers.expected, "Z[x,·]",
                                    width_px, height_px)
        out.append(dots("true", tdf, fill=TRUE, line=[255, 255, 255, 255], line_px=2, radius_px=8))
    return out


def dots(layer_id: str, df: pd.DataFrame, *, fill: list[int] | str | None = None, line: list[int] | None = None,
         line_px: float = 0.0, radius_px: float | str = 3.0, pickable: bool = True,
         auto_highlight: bool = False) -> pdk.Layer:
    """A ScatterplotLayer of points sized in pixels: filled with ``fill`` (a colour or a column of colours; None:
    a ring only), edged with ``line`` ``line_px`` wide; ``radius_px`` a number or a column.

    Every scatter layer of the maps reads the same four per-point columns (``_fill``, ``_line``, ``_lw``, ``_r``),
    whatever is constant: without a GPU (SwiftShader), each distinct set of vertex attributes is one more pipeline
    that the browser compiles every time the map is mounted (``scripts/ui_timeline.py``).
    """
    n = len(df)
    df = df.assign(_fill=df[fill] if isinstance(fill, str) else [list(fill or (0, 0, 0, 0))] * n,
                   _line=[list(line or (0, 0, 0, 0))] * n, _lw=float(line_px) if line else 0.0,
                   _r=df[radius_px] if isinstance(radius_px, str) else float(radius_px))
    return pdk.Layer("ScatterplotLayer", id=layer_id, data=df, get_position=["lon", "lat"], get_fill_color="_fill",
                     get_line_color="_line", get_line_width="_lw", line_width_units="'pixels'", get_radius="_r",
                     radius_units="'pixels'", filled=fill is not None, stroked=line is not None, pickable=pickable,
                     auto_highlight=auto_highlight)


def _expected_report(prob: Problem, origin: tuple[float, float], expected: tuple[float, float], row: str,
                     width_px: int, height_px: int) -> list[pdk.Layer]:
    """The expected reported location ((lat, lon), the mean of the distribution ``row``) and the line to it from
    ``origin``, the true location."""
    elat, elon = expected
    tip = f"expected reported location (mean of {row})"
    return [dotted_line(prob, origin, expected, EXPECTED, width_px, height_px),
            dots("expected", pd.DataFrame({"lon": [elon], "lat": [elat], "tip": [tip]}), fill=EXPECTED, radius_px=6)]


def dotted_line(prob: Problem, start: tuple[float, float], end: tuple[float, float], colour: list[int],
                width_px: int, height_px: int, step_px: float = 0.75, max_dots: int = 800) -> pdk.Layer:
    """A segment from ``start`` to ``end`` ((lat, lon)) drawn as 2-px dots ``step_px`` apart on a map of
    ``width_px`` × ``height_px`` at its initial zoom: they overlap into a solid line, and stay within 3 px of each
    other two zoom steps in (at most ``max_dots``).

    Drawn with the scatter program the map already uses: without a GPU (SwiftShader), every other layer type costs
    the browser one more shader compilation each time the map is mounted (``scripts/ui_timeline.py``).
    """
    (alat, alon), (blat, blon) = start, end
    length_m = float(haversine_km(alat, alon, blat, blon)) * 1000
    n = int(np.clip(np.ceil(length_m / _px_to_m(prob, step_px, width_px, height_px)), 1, max_dots))
    t = np.linspace(0.0, 1.0, n + 1)
    return dots("expected-line", pd.DataFrame({"lon": alon + t * (blon - alon), "lat": alat + t * (blat - alat)}),
                fill=colour, radius_px=1.0, pickable=False)


def _px_to_m(prob: Problem, px: float, width_px: int = 600, height_px: int = 470) -> float:
    """About ``px`` screen pixels in metres at the initial zoom (for shapes whose size is set in metres)."""
    vs = view_state(prob, width_px, height_px)
    # deck.gl draws the world 512 px wide at zoom 0: 78,272 m per pixel on the equator
    return float(px * 78_271.52 * math.cos(math.radians(vs.latitude)) / 2 ** vs.zoom)


def png_data_url(rgba: NDArray[np.uint8]) -> str:
    """An (h, w, 4) uint8 image as a ``data:image/png;base64,...`` URL."""
    return "data:image/png;base64," + base64.b64encode(png_bytes(rgba)).decode()


def heat_layer(g: PlaneGrid) -> pdk.Layer:
    """The heat map as one image, a pixel per cell (nearest-pixel sampling: exactly the computed values, no
    seams between cells), stretched over the grid's extent."""
    assert g.values is not None
    ny, nx = g.shape
    rgba = np.asarray(colours(g.values, 0.0, g.vmax, "heat", alpha=200), dtype=np.uint8)
    # see-through: the opacity grows with the value (under 2 % of the top: not drawn), and nothing is drawn
    # where no secret is near (outside the city's sampled area), so the roads stay visible under it
    t = np.clip(g.values / (g.vmax if g.vmax > 0 else 1.0), 0.0, 1.0)
    alpha = np.where(t < 0.02, 0, 60 + 150 * np.sqrt(t))
    if g.inside is not None:
        alpha = np.where(g.inside, alpha, 0)
    rgba[:, 3] = alpha.astype(np.uint8)
    rgba = rgba.reshape(ny, nx, 4)[::-1]
    lat, lon = g.lat.reshape(ny, nx), g.lon.reshape(ny, nx)
    half_lat = (lat[1, 0] - lat[0, 0]) / 2 if ny > 1 else 0.0
    half_lon = (lon[0, 1] - lon[0, 0]) / 2 if nx > 1 else 0.0
    bounds = [float(lon.min() - half_lon), float(lat.min() - half_lat), float(lon.max() + half_lon),
              float(lat.max() + half_lat)]
    # quoted: pydeck's JSON converter reads a bare string prop as an expression
    return pdk.Layer("BitmapLayer", id="heat", image=f"'{png_data_url(rgba)}'", bounds=bounds, pickable=False,
                     texture_parameters={"minFilter": "nearest", "magFilter": "nearest"})


def plane_layer(g: PlaneGrid) -> pdk.Layer:
    """The plane's cells as invisible flat squares (a ColumnLayer with 4 corners turned 45°): a click on empty
    map space picks a cell, and its centre is the clicked point; over a heat map the tooltip gives the value."""
    # 5 decimals of a degree is about 1 m, well below a cell; this layer is the largest part of the page
    df = pd.DataFrame({"lon": np.round(g.lon, 5), "lat": np.round(g.lat, 5), "i": g.nearest})
    df["tip"] = [f"{g.label} {v:.3g}" for v in g.values] if g.values is not None else ""  # "": no tooltip
    return pdk.Layer("ColumnLayer", id="plane", data=df, get_position=["lon", "lat"], disk_resolution=4, angle=45,
                     radius=g.side_m / math.sqrt(2), extruded=False, get_fill_color=[255, 255, 255, 1],
                     pickable=True)  # alpha 1/255: invisible, but deck.gl still picks it


def lattice_layers(lat: NDArray[np.float64], lon: NDArray[np.float64]) -> list[pdk.Layer]:
    """Grid lines between neighbouring anchors and rings at the anchors; ``lat``/``lon`` are (ny, nx)."""
    ny, nx = lat.shape
    rows = [[[lon[j, 0], lat[j, 0]], [lon[j, -1], lat[j, -1]]] for j in range(ny)]
    cols = [[[lon[0, i], lat[0, i]], [lon[-1, i], lat[-1, i]]] for i in range(nx)]
    segs = np.round(np.asarray(rows + cols, dtype=float), 6)
    ldf = pd.DataFrame({"s": segs[:, 0].tolist(), "t": segs[:, 1].tolist()})
    adf = pd.DataFrame({"lon": np.round(lon.ravel(), 6), "lat": np.round(lat.ravel(), 6)})
    adf["tip"] = [f"anchor #{n} (row {n // nx}, column {n % nx})" for n in range(len(adf))]
    return [pdk.Layer("LineLayer", id="lattice-lines", data=ldf, get_source_position="s", get_target_position="t",
                      get_color=LATTICE, get_width=1, width_min_pixels=1, pickable=False),
            dots("lattice-anchors", adf, line=ANCHOR, line_px=2, radius_px=4)]


def clicked_point(selection: dict[str, Any] | None) -> tuple[float, float, int] | None:
    """(lat, lon, nearest secret) of a click on the plane grid (empty map space), or None."""
    if not selection:
        return None
    objs = (selection.get("objects", {}) or {}).get("plane") or []
    if not objs or "lat" not in objs[0]:
        return None
    o = objs[0]
    return float(o["lat"]), float(o["lon"]), int(o.get("i", -1))


def clicked_secret(selection: dict[str, Any] | None) -> tuple[str, int, int | None] | None:
    """(layer id, secret index, output index or None) of a pydeck click, or None."""
    if not selection:
        return None
    objects = selection.get("objects", {}) or {}
    for layer_id in ("true", "dist", "outputs", "secrets"):
        objs = objects.get(layer_id) or []
        if objs and "i" in objs[0]:
            k = objs[0].get("k")
            return layer_id, int(objs[0]["i"]), None if k is None else int(k)
    return None
