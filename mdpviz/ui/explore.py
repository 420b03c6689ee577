"""The Explore page's view: the map with its view-only controls, in a fragment so they never re-solve."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import streamlit as st

from mdpviz.cities import city_info
from mdpviz.explain import format_m, format_m_pair, radius_km
from mdpviz.geo import haversine_km
from mdpviz.mechanisms import Result
from mdpviz.metrics import Evaluation, posterior
from mdpviz.problem import Problem
from mdpviz.region import parse_region
from mdpviz.verdict import claims_all_pairs

from . import cache, continuous, diagnostics, maps, state

VIOLATION_LINES = 150  # more lines hide the map
MAP_WIDTH, MAP_HEIGHT = 600, 470  # the map column at 1280×800
# how the secrets are coloured (the radio's options, in its order)
COLOUR_PLAIN = "plain"
COLOUR_LOSS = "expected loss (m)"
COLOUR_POSTERIOR = "attacker's posterior Pr[x | y]"
COLOUR_MODES = (COLOUR_PLAIN, COLOUR_LOSS, COLOUR_POSTERIOR)


def _on_click(map_key: str) -> None:
    """Map click: a secret (or an output, which is also a secret) becomes the selected secret; in the
    attacker's view a click on an output picks the observed report instead. A click on empty map space picks
    that point of the plane when the mechanism has rows for any point, else the nearest secret."""
    ss = st.session_state
    event = ss.get(map_key)
    selection = event.get("selection") if event else None
    hit = maps.clicked_secret(selection)
    plane = maps.clicked_point(selection) if hit is None else None
    picked = region_from_click(selection, float(ss.get("pick_radius_km", 3.0))) if ss.get("pick_region") else None
    if picked is not None:
        ss["region"] = picked
        ss["pick_region"], ss["_region_ok"], ss["_full_rerun"] = False, None, True
        ss["secret"], ss["point"] = None, None
        ss["map_generation"] = ss.get("map_generation", 0) + 1
        return
    if hit is not None:
        _layer, i, k = hit
        if ss.get("colour_mode") == COLOUR_POSTERIOR and k is not None:
            ss["attack_y"] = k
        else:
            ss["secret"] = i
            ss["point"] = None
    elif plane is not None:
        lat, lon, near = plane
        if ss.get("_point_ok"):
            ss["point"] = f"{lat:.6f},{lon:.6f}"
        elif near >= 0:
            ss["secret"] = near
    else:
        return
    # a fresh chart key drops pydeck's selection, which would otherwise dim every other point on the map
    st.session_state["map_generation"] = st.session_state.get("map_generation", 0) + 1


def kept_point_choice(prob: Problem, result: Result) -> Result:
    """A solve that stopped without a mechanism may have kept a feasible point (``Result.kept_point``): a toggle
    offers to show it (a result of its own, labelled as not optimal by its status and message); returns the result
    to show."""
    kept = result.kept_point(prob)
    if kept is None:
        return result
    low, high = format_m_pair(result.bound_m or float("nan"), float(kept.objective_m or 0.0))
    bound = "" if result.bound_m is None else f", the optimum at least {low}"
    gap = (" Its loss is above the optimum by at most the gap between the two numbers." if result.bound_m is not None
           else "")
    shown = st.toggle(f"Show the feasible point it kept (not the optimum: {high} a report{bound})", key="show_kept",
                      help="The solve stopped before proving a mechanism optimal, but kept the best feasible point it "
                           f"had found. Its privacy is measured like any mechanism's, against the same claim.{gap}")
    return kept if shown else result


def clamp_secret(prob: Problem) -> int:
    """The selected secret, made valid for ``prob`` (default and fallback: the secret nearest the middle)."""
    ss = st.session_state
    central = int(np.argmin((prob.x_lat - prob.x_lat.mean()) ** 2 + (prob.x_lon - prob.x_lon.mean()) ** 2))
    raw = ss.get("secret")
    try:
        i = central if raw is None else int(raw)
    except (TypeError, ValueError):
        i = central
    if not 0 <= i < prob.k:
        st.toast(f"Secret x{i} does not exist in this problem (K = {prob.k}); showing x{central}.",
                 icon=":material/warning:")
        i = central
    ss["secret"] = i
    return i


Symbols = list[tuple[str, list[int], str]]  # (legend label, colour, shape) of the map's symbol legend


@dataclass
class Legend:
    """Legend entries of the map: symbols ``(label, colour, shape)`` and colour bars (HTML), in drawing order."""

    symbols: Symbols = field(default_factory=list)
    bars: list[str] = field(default_factory=list)

    def __add__(self, other: Legend) -> Legend:
        """This legend's entries followed by ``other``'s."""
        return Legend(self.symbols + other.symbols, self.bars + other.bars)

    def html(self) -> str:
        """The symbol legend, then the colour bars."""
        return maps.symbol_legend_html(self.symbols) + "".join(self.bars)


@st.fragment
def map_view(prob: Problem, result: Result | None, ev: Evaluation | None, key: str | None) -> None:
    """Controls for what to look at (secret, layers, attacker view), the map, its legends and a caption."""
    ss = st.session_state
    if ss.pop("_full_rerun", False):  # a region picked on the map changes the problem: rerun the whole page
        st.rerun(scope="app")
    clamp_secret(prob)
    has_z = result is not None and result.Z is not None
    pt, c1, t4 = _view_controls(prob, result, has_z)
    i = int(ss["secret"])
    layers = maps.MapLayers(secret=i, show_outputs=bool(ss["show_outputs"]), point=pt)
    legend = Legend([
        ("picked point (true location)", maps.POINT, "square") if pt else ("selected secret (true location)",
                                                                          maps.TRUE, "dot"),
        ("secrets X", maps.SECRET, "dot")] + ([("outputs Y", maps.OUTPUT_RING, "ring")] if ss["show_outputs"] else []))
    caption = (f"Secret x{i} selected. Press **Solve** to see its distribution over the outputs." if result is None
               else f"Secret x{i} selected. No mechanism to show: the verdict above says why.")
    if has_z:
        assert result is not None and key is not None
        caption, solved = _solved_layers(prob, result, ev, key, i, pt, layers, c1, t4)
        legend += solved
    _draw_map(prob, layers, legend, caption, pt, i)


def _view_controls(prob: Problem, result: Result | None, has_z: bool
                   ) -> tuple[tuple[float, float] | None, Any, Any]:
    """The selected secret, the colouring and the row of layer toggles above the map; returns the picked point
    (when the mechanism has rows for any point), the secret's column and the free toggle column."""
    ss = st.session_state
    c1, c2 = st.columns([1, 3])
    rows_ok = continuous.has_rows(result)
    ss["_point_ok"] = rows_ok
    if result is not None and result.ok and not rows_ok:
        ss["point"] = None  # a picked point needs rows for any point; this mechanism has rows for X only
    pt = continuous.parse_point(ss.get("point")) if rows_ok else None
    c1.number_input("Selected secret x (index)", step=1, key="secret", on_change=_clear_point,
                    help=f"0 to {prob.k - 1}. Or click a point on the map."
                         + (" A click on empty map space picks that point of the plane instead." if rows_ok else ""))
    ss.setdefault("colour_mode", COLOUR_PLAIN)
    if not has_z:
        ss["colour_mode"] = COLOUR_PLAIN
    c2.radio("Colour secrets by", COLOUR_MODES, key="colour_mode", horizontal=True, disabled=not has_z,
             help="Expected loss: Σ_y c(x,y)·Z[x,y] in metres. Posterior: what an attacker who sees report y "
                  "believes about the true location.")
    t1, t2, t3, t4 = st.columns([1.05, 0.9, 0.9, 1.15])  # one row of view toggles
    for name in ("show_dist", "show_outputs", "show_viol"):
        ss.setdefault(name, True)
    t1.checkbox("show Z[x,·]", key="show_dist", disabled=not has_z,
                help="The selected secret's report distribution over the outputs (size and colour: "
                     "probability). Hidden in the attacker's view.")
    t2.checkbox("outputs Y", key="show_outputs", help="Rings: every reportable location.")
    t3.checkbox("violations", key="show_viol", disabled=not has_z,
                help=f"Lines between pairs of secrets whose reports differ by more than e^(ε·d) (the worst "
                     f"{VIOLATION_LINES}): red where the mechanism claims the pair (a broken promise), grey "
                     "where it does not claim it.")
    return pt, c1, t4


def _solved_layers(prob: Problem, result: Result, ev: Evaluation | None, key: str, i: int,
                   pt: tuple[float, float] | None, layers: maps.MapLayers, c1: Any, t4: Any) -> tuple[str, Legend]:
    """Fill ``layers`` with what a solved mechanism adds: the row of the selected secret or picked point, the
    colouring, the plane and lattice, diagnostic points, violations; returns the caption and the legend entries."""
    ss = st.session_state
    Z = result.Z
    assert Z is not None
    loss, expected = cache.per_secret(prob, result, key)
    row, who = Z[i], f"x{i}"
    point = None
    if pt is not None:
        row, who = continuous.point_row(result, *pt), "picked point"
        point = continuous.point_summary(prob, row, *pt)
        layers.expected = point[0]
    else:
        layers.expected = (float(expected[i, 0]), float(expected[i, 1]))
    legend = Legend([("expected report", maps.EXPECTED, "dot")])
    mode = ss["colour_mode"]
    if ss["show_dist"] and mode != COLOUR_POSTERIOR:
        layers.Z_row = row
        layers.row_label = who
        legend.bars.append(maps.legend_html(f"Pr[report y | true location {who}] (probability; size and colour)",
                                            "prob", "0", f"{row.max():.3g}"))
    legend += _plane_controls(prob, result, key, row, layers, t4, c1, selected=who if pt is None else pt)
    post, colouring = _colour_layers(prob, Z, i, loss, mode, layers, c1)
    legend += colouring
    legend += Legend(_diagnostic_layers(prob, result, layers) + _violation_layer(prob, result, ev, key, layers))
    return _solved_caption(prob, Z, i, float(loss[i]), layers, row, pt, point, post), legend


def _colour_layers(prob: Problem, Z: np.ndarray, i: int, loss: np.ndarray, mode: str, layers: maps.MapLayers,
                   c1: Any) -> tuple[np.ndarray | None, Legend]:
    """Colour the secrets by expected loss or by the attacker's posterior for a chosen report (its picker goes
    in ``c1``); returns the posterior in the attacker's view (else None) and the legend entries."""
    ss = st.session_state
    if mode == COLOUR_LOSS:
        layers.secret_values, layers.secret_scale = loss, "loss"
        layers.secret_value_label = "expected loss"
        return None, Legend(bars=[maps.legend_html("Expected loss of each secret (m)", "loss",
                                                   format_m(float(loss.min())), format_m(float(loss.max())))])
    if mode != COLOUR_POSTERIOR:
        return None, Legend()
    default_y = int(np.argmax(Z[i]))
    if not 0 <= int(ss.get("attack_y", default_y)) < prob.m:
        ss["attack_y"] = default_y
    ss.setdefault("attack_y", default_y)
    c1.selectbox("Observed report y (index)", list(range(prob.m)), key="attack_y",
                 format_func=lambda k: f"y{k} (= x{prob.y_index[k]})",
                 help="The attacker sees this report; secrets are coloured by Pr[x | y]. Or click an output.")
    post = posterior(prob, Z, int(ss["attack_y"]))
    layers.secret_values, layers.secret_scale = post, "post"
    layers.secret_value_label = f"Pr[x | y{ss['attack_y']}] ="
    layers.attack_y = int(ss["attack_y"])
    return post, Legend([(f"observed report y{ss['attack_y']}", maps.OBSERVED, "ring")],
                        [maps.legend_html(f"Attacker's posterior Pr[x | y{ss['attack_y']}] (probability, square-root "
                                          "colour scale)", "post", "0", f"{post.max():.3g}")])


def _diagnostic_layers(prob: Problem, result: Result, layers: maps.MapLayers) -> Symbols:
    """Toggles for points named in the diagnostics (anchors) and for simulated users' sampled reports; returns
    the legend symbols of the layers shown."""
    ss = st.session_state
    symbols: Symbols = []
    # anchors of a lattice are drawn with their grid lines (toggle above), not a second time here
    pts = (diagnostics.diagnostic_points(result.diagnostics or {}, prob) if continuous.lattice_of(result) is None
           else None)
    users = diagnostics.user_reports(result.diagnostics or {}, prob.k)
    e1, e2 = st.columns(2) if pts is not None or users is not None else (None, None)
    if pts is not None and e1 is not None:
        ss.setdefault("show_extra", True)
        if e1.checkbox(f"show {pts[0]} ({len(pts[1]):,} points)", key="show_extra",
                       help="Points named in the mechanism's diagnostics, e.g. anchors."):
            layers.extra_points = pts
            symbols.append((pts[0], maps.ANCHOR, "ring"))
    if users is not None and e2 is not None:
        ss.setdefault("show_users", True)
        if e2.checkbox(f"show users' sampled reports ({len(users[0]):,} users)", key="show_users",
                       help="Each simulated user's true location joined to the report it sampled."):
            layers.user_reports = users
            symbols.append(("user → sampled report", maps.USER, "line"))
    return symbols


def _violation_layer(prob: Problem, result: Result, ev: Evaluation | None, key: str,
                     layers: maps.MapLayers) -> Symbols:
    """Lines for the worst violating pairs, coloured by whether the mechanism claims them; returns their legend
    symbol (none when no line is drawn)."""
    if not (st.session_state["show_viol"] and ev is not None and ev["violations"]["violated_pairs"] > 0):
        return []
    vi, vj, vf, n_viol = cache.violating_pairs(prob, result, key, limit=VIOLATION_LINES)
    layers.violations = (vi, vj, vf)
    claimed = claims_all_pairs(result.claim)
    layers.violation_kind = maps.CLAIMED if claimed else maps.NOT_CLAIMED
    what = ("mDP violation: a claimed pair breaks ε-mDP" if claimed else
            "pair over ε·d that this mechanism does not claim (not a broken promise)")
    return [(f"{what} ({min(len(vi), n_viol):,} of {n_viol:,} pairs drawn)",
             maps.violation_colour(layers.violation_kind), "line")]


def _solved_caption(prob: Problem, Z: np.ndarray, i: int, loss_i: float, layers: maps.MapLayers, row: np.ndarray,
                    pt: tuple[float, float] | None, point: tuple[Any, ...] | None, post: np.ndarray | None) -> str:
    """The line under the map: the selected secret's (or picked point's) loss and likely report, and what the
    attacker concludes in the attacker's view."""
    assert layers.expected is not None
    i_lat, i_lon = prob.x_lat[i], prob.x_lon[i]
    d_exp = float(haversine_km(i_lat, i_lon, *layers.expected)) * 1000
    caption = (f"**x{i}**: expected loss {format_m(loss_i)}; the average reported location (the map's expected "
               f"report) lies {format_m(d_exp)} from the truth; most likely report y{int(np.argmax(Z[i]))} with "
               f"Pr = {Z[i].max():.3g}.")
    if pt is not None and point is not None:
        _p_exp, p_dist, p_off, p_near, p_near_m = point
        caption = (f"**Picked point** {pt[0]:.5f}, {pt[1]:.5f} (any location of the plane; nearest secret "
                   f"x{p_near} is {format_m(p_near_m)} away): expected straight-line distance to the report "
                   f"{format_m(p_dist)}; expected report {format_m(p_off)} from the point; most likely report "
                   f"y{int(np.argmax(row))} with Pr = {row.max():.3g}. Distribution computed by the "
                   "mechanism's rows for this point, not copied from a node.")
    if post is not None:
        k = int(st.session_state["attack_y"])  # ``post`` is already Pr[x | y_k]
        guess = int(np.argmax(post))
        caption += (f" An attacker who sees **y{k}** finds x{guess} most likely (Pr = {post[guess]:.3g}); "
                    f"the selected x{i} has Pr = {post[i]:.3g}.")
    return caption


def _draw_map(prob: Problem, layers: maps.MapLayers, legend: Legend, caption: str, pt: tuple[float, float] | None,
              i: int) -> None:
    """The map (clickable), its legend beside or below it, the caption and the region picker."""
    ss = st.session_state
    # the map column is about 600 × 470 px at 1280×800; a tall city (Helsinki centre) gets a narrower, taller
    # map with its legend beside it instead of white bands left and right
    if ss.get("pick_region") and prob.city:
        layers.plane = _city_pick_grid(prob)  # clicks anywhere on the city report a point
    width_px, height_px = map_size(prob)
    deck = maps.deck(prob, cache.road_layer(prob), layers, width_px=width_px, height_px=height_px)
    map_key = f"explore_map_{ss.get('map_generation', 0)}"
    beside = width_px < MAP_WIDTH - 150
    holder, aside = st.columns([width_px, MAP_WIDTH - width_px]) if beside else (st.container(), None)
    with holder:
        st.pydeck_chart(deck, on_select=lambda: _on_click(map_key), selection_mode="single-object",
                        key=map_key, height=height_px, alt="Map of the road network, secrets, outputs and the "
                                                           "selected secret's report distribution")
    with aside if aside is not None else holder:
        st.html(legend.html())
        if prob.city:
            st.caption("Roads © OpenStreetMap contributors (ODbL).")
    st.markdown(caption)
    if pt is not None:
        st.button(f"Back to secret x{i}", key="clear_point", on_click=_clear_point, icon=":material/undo:")
    if prob.city:
        _region_picker()
    state.write_url("explore")


def region_from_click(selection: dict[str, Any] | None, radius_km: float) -> str | None:
    """The region text of a disc of ``radius_km`` around a clicked point of the map (a cell of the pick grid or
    any drawn point), or None when the click hit nothing.

    >>> region_from_click({"objects": {"plane": [{"lat": 41.9, "lon": 12.48, "i": 3}]}}, 3.0)
    '41.90000,12.48000,3'
    >>> region_from_click({"objects": {}}, 3.0) is None
    True
    """
    objects = [o for objs in ((selection or {}).get("objects") or {}).values() for o in objs
               if isinstance(o, dict) and "lat" in o and "lon" in o]
    if not objects:
        return None
    return f"{float(objects[0]['lat']):.5f},{float(objects[0]['lon']):.5f},{radius_km:g}"


def _city_pick_grid(prob: Problem) -> maps.PlaneGrid:
    """An invisible grid of cells over the whole city: a click on the map reports the cell's centre."""
    # (mypy) the pick grid is drawn only for a problem on a city
    s, w, n, e = city_info(prob.city).bbox  # type: ignore[arg-type]
    lat, lon, side_m, nearest, shape, _inside = continuous.plane_grid(prob, prob.fingerprint, (s, n, w, e), 60)
    return maps.PlaneGrid(lat=lat, lon=lon, side_m=side_m, nearest=nearest, shape=shape)


def _region_picker() -> None:
    """Pick where the secrets come from on the map: a disc of the chosen radius around the next click."""
    ss = st.session_state
    p1, p2 = st.columns([2, 1])
    p1.toggle("Pick where the secrets come from: click the map", key="pick_region",
              help="The next click on the map becomes the centre of a disc of the radius beside; the secrets are "
                   "then drawn from the road nodes inside it (press Solve afterwards). The sidebar lists the "
                   "city's presets, such as the whole city (the papers' way).")
    ss.setdefault("pick_radius_km", 3.0)
    p2.select_slider("disc radius (km)", options=[0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0], key="pick_radius_km",
                     disabled=not ss.get("pick_region"))
    if ss.get("pick_region"):
        st.caption("Click the map where the disc should be centred.")


def map_size(prob: Problem) -> tuple[int, int]:
    """(width, height) of the Explore map in pixels: the full column, or narrower and taller for a tall area."""
    lat0, lat1 = float(prob.x_lat.min()), float(prob.x_lat.max())
    lon0, lon1 = float(prob.x_lon.min()), float(prob.x_lon.max())
    tall = (lat1 - lat0) / max((lon1 - lon0) * np.cos(np.radians((lat0 + lat1) / 2)), 1e-9)
    if tall <= MAP_HEIGHT / MAP_WIDTH * 1.25:
        return MAP_WIDTH, MAP_HEIGHT
    height = min(560, round(MAP_HEIGHT * 1.2))
    return max(280, min(MAP_WIDTH, round(height / tall * 1.08))), height


def problem_notices(prob: Problem) -> None:
    """What the problem builder changed from the settings: |Y| capped by few points, points standing alone."""
    ss = st.session_state
    if prob.settings.get("source") == "points":
        n = prob.settings.get("n_points", prob.k)
        merged = f" ({n:,} points, merged where they snap to one node)" if n != prob.k else ""
        if not prob.city and (ss["metric"] != "haversine" or ss["cost"] != "distance"):
            st.caption(f"Your points stand alone: haversine metric and distance cost are used{merged}.")
        elif merged:
            st.caption(f"Your points give K = {prob.k:,} secrets{merged}.")
        if prob.m < int(ss["m"]):
            st.caption(f"|Y| = {int(ss['m']):,} exceeds the {prob.k:,} distinct points; using |Y| = {prob.m:,}.")


def _clear_point() -> None:
    st.session_state["point"] = None


def _plane_controls(prob: Problem, result: Result, key: str, row: np.ndarray, layers: maps.MapLayers, h1: Any,
                    h2: Any, selected: Any = None) -> Legend:
    """The clickable grid over the plane, the heat map of z(y | x) for a chosen output, and the anchor lattice
    (toggles in ``h1``, the heat map's output in ``h2`` while the heat map is on); returns their legend entries.
    The heat map's output follows the selection: another secret or point (or another result) shows its own most
    likely report."""
    ss = st.session_state
    legend = Legend()
    rows_ok = continuous.has_rows(result)
    lattice = continuous.lattice_of(result)
    ss.setdefault("show_heat", False)
    if rows_ok and not ss.get("_heat_shown_for_rows"):  # the first continuous mechanism opens with its heat map
        ss["show_heat"] = ss["_heat_shown_for_rows"] = True
    src = continuous.heat_source(result)
    h1.checkbox("heat map z(y | x)", key="show_heat",
                help=f"Pr[report y | true x] for one output y at every point of an {continuous.HEAT_CELLS}-cell grid "
                     f"over the region ({src}). Interpolating mechanisms vary smoothly; others jump at the "
                     "borders between secrets.")
    hy = ss.get("heat_y")
    follows = (key, str(selected))
    if hy is None or not 0 <= int(hy) < prob.m or ss.get("_heat_y_for") != follows:
        ss["heat_y"] = int(np.argmax(row))  # the most likely report of what is selected now
        ss["_heat_y_for"] = follows
    if ss["show_heat"]:
        h2.selectbox("heat-map output y (index)", list(range(prob.m)), key="heat_y",
                     format_func=lambda k: f"y{k} (= x{prob.y_index[k]})",
                     help="The reported location whose probability the heat map shows (violet ring on the map).")
    if lattice is not None:
        ss.setdefault("show_lattice", True)
        h1.checkbox(f"anchor lattice ({lattice.nx} × {lattice.ny} anchors)", key="show_lattice",
                    help=f"The anchors whose distributions the LP optimises (cell side {lattice.step * 1000:,.0f} m); "
                         "every other point interpolates the four corners of its cell.")
        if ss["show_lattice"]:
            layers.lattice = continuous.lattice_latlon(lattice)
            name = f"anchor lattice ({lattice.nx * lattice.ny:,} anchors, cells of {lattice.step * 1000:,.0f} m)"
            legend.symbols += [(name, maps.LATTICE, "line"), ("anchors", maps.ANCHOR, "ring")]
    if not (rows_ok or ss["show_heat"]):
        return legend  # no pick grid: a click on a secret selects it; empty space needs rows for any point
    lat, lon, side_m, nearest, shape, inside = continuous.plane_grid(prob, prob.fingerprint,
                                                                     continuous.region(prob, result))
    grid = maps.PlaneGrid(lat=lat, lon=lon, side_m=side_m, nearest=nearest, shape=shape, inside=inside)
    if ss["show_heat"]:
        k = int(ss["heat_y"])
        values = continuous.plane_values(prob, result, key)[:, k]
        vmax = float(values.max())
        grid.values, grid.vmax = values, vmax if vmax > 0 else 1.0
        grid.label = f"z(y{k} | here) ="
        layers.heat_y = k
        legend.symbols.append((f"heat-map output y{k}", maps.HEAT_Y, "ring"))
        legend.bars.append(maps.legend_html(f"Heat map: z(y{k} | x) = Pr[report y{k} | true location x] "
                                            f"(probability), {src}; grid cells of {side_m:,.0f} m", "heat", "0",
                                            f"{vmax:.3g}"))
    layers.plane = grid
    return legend


def headline(prob: Problem, mech: Any, params: dict[str, Any]) -> str:
    """One line naming what is on screen: city and region, sizes, mechanism and ε as a radius."""
    eps = params.get("eps")
    eps_txt = (f" · ε = {eps:g} km⁻¹ (ratio ≤ 2 within {radius_km(float(eps)) * 1000:,.0f} m)"
               if isinstance(eps, (int, float)) and eps > 0 else "")
    if prob.settings.get("source") == "points":
        where = "your points" + (f" on {city_info(prob.city).label}" if prob.city else " (standing alone)")
    else:
        info = city_info(prob.city) if prob.city else None
        where = info.label if info else "your points"
        spec = prob.settings.get("region", "whole")
        if info is not None and spec != "whole":
            where += ", secrets " + parse_region(spec, info.centre).describe()
    # C-mDP takes the K secrets as stations; its own secrets are (station, context) pairs, counted in its diagnostics
    secrets = "stations (C-mDP's secrets: station and context)" if mech.name.startswith("cmdp") else "secrets"
    return (f"#### {mech.label_for(params)} · {where}\n"
            f"K = {prob.k:,} {secrets} · |Y| = {prob.m:,} outputs · metric {prob.metric} · cost "
            f"{prob.settings['cost']}{eps_txt}")
