"""Views for mechanisms over the continuous plane (``Result.rows``, AIPO today) and their contrast with the rest.

The map side: a grid of cells over the region (a click on any cell picks that point of the plane), the heat map
of z(y | x) for one output y (interpolated rows, or the nearest secret's row for mechanisms that only have Z),
and the anchor lattice. The diagnostics side: the budget-search curve and the continuous privacy check.
Nothing here decides on a mechanism's name: everything keys on ``result.rows`` and on the diagnostics present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray
from scipy.spatial import cKDTree

from mdpviz.aipo.lattice import Lattice
from mdpviz.aipo.plane_check import continuous_check
from mdpviz.geo import haversine_km, project_km
from mdpviz.mechanisms import Result
from mdpviz.problem import Problem

from . import charts

HEAT_CELLS = 80  # cells across the wider side of the region: 80 × ~60 values, one vectorised call of rows
CHECK_PAIRS = (1_000, 50_000)


def has_rows(result: Result | None) -> bool:
    """Whether the result has rows for any point of the plane (not only for the secrets)."""
    return result is not None and result.ok and result.rows is not None


def lattice_of(result: Result | None) -> Lattice | None:
    """The anchor lattice behind ``result.rows``, when its rows come from one."""
    lat = getattr(result.rows, "lattice", None) if result is not None else None
    return lat if isinstance(lat, Lattice) else None


def region(prob: Problem, result: Result | None) -> tuple[float, float, float, float]:
    """(south, north, west, east) in degrees: the secrets' bounding box, widened to the anchor lattice's
    extent when the result has one (the lattice may reach up to one cell beyond the secrets)."""
    lat, lon = prob.x_lat, prob.x_lon
    lattice = lattice_of(result)
    if lattice is not None:
        ll = lattice.anchor_latlon()
        lat, lon = np.concatenate([lat, ll[:, 0]]), np.concatenate([lon, ll[:, 1]])
    return float(lat.min()), float(lat.max()), float(lon.min()), float(lon.max())


@st.cache_resource(max_entries=8, show_spinner=False)
def plane_grid(_prob: Problem, fingerprint: str, bbox: tuple[float, float, float, float], cells: int = HEAT_CELLS
               ) -> tuple[NDArray[np.float64], NDArray[np.float64], float, NDArray[np.int64], tuple[int, int],
                          NDArray[np.bool_]]:
    """Cell centres (lat, lon in degrees; row-major from the south-west) of a square grid over ``bbox`` (see
    :func:`region`), the cell side in metres, each centre's nearest secret (planar km, so distances are those of
    the map), the grid's shape (rows, columns), and which cells lie near a secret: within twice the spacing of
    most secrets (the 90th percentile of their nearest-neighbour distance) and two cells, so a heat map follows
    the sampled city instead of filling its bounding box."""
    grid = Lattice.covering(np.array(bbox[:2]), np.array(bbox[2:]), cells)
    ll = grid.anchor_latlon()
    xy_x = project_km(_prob.x_lat, _prob.x_lon, grid.lat0, grid.lon0)
    xy_g = project_km(ll[:, 0], ll[:, 1], grid.lat0, grid.lon0)
    tree = cKDTree(xy_x)
    dist, nearest = tree.query(xy_g)
    spacing = float(np.quantile(tree.query(xy_x, k=2)[0][:, 1], 0.9)) if len(xy_x) > 1 else grid.step
    inside = dist <= max(2 * spacing, 2 * grid.step)
    return (ll[:, 0], ll[:, 1], grid.step * 1000, np.asarray(nearest, dtype=np.int64), (grid.ny, grid.nx),
            np.asarray(inside, dtype=bool))


@st.cache_resource(max_entries=4, show_spinner="Evaluating the mechanism over the plane…")
def plane_values(_prob: Problem, _result: Result, key: str, cells: int = HEAT_CELLS) -> NDArray[np.float64]:
    """Pr[y | cell centre] for every cell and output, (n_cells, M): ``rows`` in one call where the mechanism
    has them, else the nearest secret's row of Z (piecewise constant)."""
    lat, lon, _side, nearest, _shape, _inside = plane_grid(_prob, _prob.fingerprint, region(_prob, _result), cells)
    if _result.rows is not None:
        return np.asarray(_result.rows(lat, lon), dtype=float)
    assert _result.Z is not None
    rows: NDArray[np.float64] = _result.Z[nearest]
    return rows


def heat_source(result: Result) -> str:
    """How the heat map gets its values: interpolated rows, or the nearest secret's row."""
    return ("interpolated over the plane" if result.rows is not None
            else "nearest secret (piecewise constant)")


def point_row(result: Result, lat: float, lon: float) -> NDArray[np.float64]:
    """Pr[y | point] for one point of the plane (degrees)."""
    assert result.rows is not None
    row: NDArray[np.float64] = np.asarray(result.rows(np.array([lat]), np.array([lon])), dtype=float)[0]
    return row


def point_summary(prob: Problem, row: NDArray[np.float64], lat: float, lon: float
                  ) -> tuple[tuple[float, float], float, float, int, float]:
    """(expected reported (lat, lon), expected straight-line distance to the report (m), distance from the
    expected report (m), nearest secret, its distance (m))."""
    exp = (float(row @ prob.y_lat), float(row @ prob.y_lon))
    d_y = haversine_km(lat, lon, prob.y_lat, prob.y_lon) * 1000
    d_x = haversine_km(lat, lon, prob.x_lat, prob.x_lon) * 1000
    near = int(np.argmin(d_x))
    return (exp, float(row @ d_y), float(haversine_km(lat, lon, *exp)) * 1000, near, float(d_x[near]))


def lattice_latlon(lattice: Lattice) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The anchors' (lat, lon) as two (ny, nx) arrays."""
    ll = lattice.anchor_latlon()
    return ll[:, 0].reshape(lattice.ny, lattice.nx), ll[:, 1].reshape(lattice.ny, lattice.nx)


def parse_point(raw: Any) -> tuple[float, float] | None:
    """A picked point from session state or the URL (``"lat,lon"`` or a pair), or None when absent or bad.

    >>> parse_point("60.1700,24.9400")
    (60.17, 24.94)
    >>> parse_point("north") is None and parse_point([91, 0]) is None
    True
    """
    if raw is None or raw == "":
        return None
    try:
        parts = raw.split(",") if isinstance(raw, str) else list(raw)
        lat, lon = (float(x) for x in parts)
    except (TypeError, ValueError):
        return None
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        return None
    return lat, lon


# ---------------------------------------------------------------- diagnostics tab


def budget_curve_panel(result: Result) -> None:
    """The budget search: true loss (m) against ε₁ (km⁻¹), chosen point, equal split and the lower bound."""
    diag = result.diagnostics or {}
    curve = diag.get("budget_curve")
    if not isinstance(curve, list) or not curve:
        return
    chosen = (diag.get("eps1"), diag.get("eps2"))
    bound = diag.get("lower_bound_m")
    universal = diag.get("universal_lower_bound_m")
    # the bound shown is the paper's universal bound, or the no-privacy floor where that bound falls below it
    what = ("universal lower bound" if not isinstance(universal, (int, float)) or universal == bound else
            f"the no-privacy floor, above the paper's universal lower bound of {universal:.1f} m")
    solved = [c for c in curve if c.get("loss_m") is not None]
    failed = len(curve) - len(solved)
    if len(curve) < 2:  # a fixed split (equal split, relaxed variant, ℓ1): nothing was searched
        st.markdown("**Budget split**")
        if solved:
            c = solved[0]
            st.caption(f"One fixed split, no search: ε₁ = {c['eps1']:.3g} km⁻¹ (east–west), ε₂ = {c['eps2']:.3g} "
                       f"km⁻¹ (north–south); utility loss {c['loss_m']:.1f} m"
                       + (f"; no ε-mDP mechanism can go below {bound:.1f} m ({what})"
                          if isinstance(bound, (int, float)) else "") + ".")
        return
    st.markdown("**Budget search: utility loss against the east–west budget ε₁**")
    fig = charts.budget_curve(curve, chosen, bound if isinstance(bound, (int, float)) else None, result.eps,
                              bound_label="universal lower bound" if what == "universal lower bound" else
                              "no-privacy floor")
    st.plotly_chart(fig, key="budget-curve", config={"displayModeBar": False})
    parts = [f"{len(curve)} candidate splits (ε₁ east–west, ε₂ north–south) of the budget, each one anchor LP"
             + (f"; {failed} ended without a solution and are not drawn" if failed else "")]
    if solved:
        best = min(solved, key=lambda c: c["loss_m"])
        parts.append(f"chosen ε₁ = {best['eps1']:.3g}, ε₂ = {best['eps2']:.3g} km⁻¹ with loss {best['loss_m']:.1f} m")
        equal = [c for c in solved if abs(c["eps1"] - c["eps2"]) <= 1e-6 * max(result.eps, 1e-12)]
        if equal and len(solved) > 1:
            parts.append(f"equal split (AIPO-E) {equal[0]['loss_m']:.1f} m")
    if isinstance(bound, (int, float)):
        parts.append(f"no ε-mDP mechanism can go below {bound:.1f} m ({what})")
    st.caption("; ".join(parts) + ". Loss is the true utility loss over the secrets, in metres.")


def check_panel(result: Result, key: str) -> None:
    """Button: run the continuous privacy check on random pairs of arbitrary points, then show its outcome."""
    lattice = lattice_of(result)
    rows_xy = getattr(result.rows, "rows_xy", None)
    if lattice is None or rows_xy is None:
        return
    p = int(result.params.get("p", 2))
    sub = {1: "₁", 2: "₂"}.get(p, f"_{p}")
    st.markdown("**Continuous privacy check: random pairs of arbitrary points of the plane**")
    st.caption(f"Tests |ln z(y | a) − ln z(y | b)| ≤ ε·‖a − b‖{sub} for every output y, at ε = {result.eps:g} km⁻¹, "
               "with **no additive tolerance** (only a relative 1e-9 for floating-point rounding). Pairs: uniform "
               "over the region, straddling a cell edge, and across a lattice corner (diagonal).")
    c1, c2 = st.columns([1, 2])
    n = c1.number_input("pairs of each kind (count)", min_value=CHECK_PAIRS[0], max_value=CHECK_PAIRS[1],
                        value=5_000, step=1_000, key="ccheck_pairs")
    store = st.session_state.setdefault("_ccheck", {})
    if c2.button("Run the continuous check", key="ccheck_run", icon=":material/verified_user:"):
        with st.spinner("Sampling pairs and comparing log-probabilities…"):
            store[(key, int(n))] = continuous_check(rows_xy, lattice, float(result.eps), p, int(n))
    found = store.get((key, int(n)))
    if found is None:
        return
    rows = [{"kind of pair": kind, "pairs": f"{found.pairs[kind]:,}", "violating pairs": f"{found.violations[kind]:,}",
             "ratio": f"{found.violations[kind] / found.pairs[kind]:.3g}"} for kind in found.pairs]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    verdict = "no violations" if found.total_violations == 0 else f"**{found.total_violations:,} violating pairs**"
    q = found.factor_quantiles
    st.caption(f"{verdict}. Worst factor |Δ ln z| / (ε·d{sub}) = **{found.worst_factor:.3g}** (≤ 1 is private); "
               f"median {q['q50']:.3g}, 99th percentile {q['q99']:.3g}.")
    st.plotly_chart(charts.factor_histogram(found.factors, f"ε·d{sub}"), key="ccheck-hist",
                    config={"displayModeBar": False})


def diagnostics(prob: Problem, result: Result, key: str) -> None:
    """Everything of this module that belongs in the Diagnostics tab (nothing for a result without it)."""
    if not result.ok:
        return
    budget_curve_panel(result)
    if has_rows(result):
        check_panel(result, key)
