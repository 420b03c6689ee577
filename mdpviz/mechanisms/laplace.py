"""Planar Laplace (Andrés et al. 2013) followed by remapping to the nearest output, integrated numerically.

The planar Laplace density around x is f(z) = ε²/(2π)·e^{−ε|z − x|}. Reporting the nearest output makes
Z[x, y] the mass of y's Voronoi cell (in a local planar projection, km). Each cell is a convex polygon (clipped to
a box so wide that the mass outside it is below 1e-20 of any cell's); its mass is a sum over its edges a→b of
signed integrals over the fan from x, with either of two integrands:

    mass = (1/2π) Σ_edges ∫_{θ_a}^{θ_b} G(ρ(θ)) dθ = w − (1/2π) Σ_edges ∫_{θ_a}^{θ_b} T(ρ(θ)) dθ,
    G(ρ) = 1 − (1 + ερ)e^{−ερ} (mass of the disc of radius ρ),  T = 1 − G (mass beyond ρ),

where ρ(θ) is the distance from x to the edge's line in direction θ and w the winding number of the cell around x
(1 for x's own cell, 0 for the others). A cell far from x has a mass like e^{−ε·50 km} = 1e-109 at ε = 5 km⁻¹
(below float64's range at ε = 15): the G form would subtract numbers near 1 and round it to 0, an infinite mDP
breach. So the T form is evaluated in log space (ln T = ln(1 + ερ) − ερ, signed log-sum-exp over a cell's edges)
wherever its terms are smaller than the G form's; the G form (no cancellation in x's own cell, nor near x at small
ερ) is used elsewhere. The integrals along each edge are composite Gauss–Legendre after a change of variables
(``fan_integrals``); the same integral at half the resolution gives the stated integration error (relative, as
|Δ ln Z|).

The integral is a close approximation of an exactly ε-mDP mechanism, but the mDP check has a relative tolerance
of 1e-9, which quadrature cannot promise for pairs near the bound. So the computed Z is checked against the
ε-mDP cone of the planar metric and, where quadrature left a pair outside it, repaired with the exact cone repair
(``lp.cone.repair_into_cone``); the breach before the repair is reported (``breach_before_repair``, a
log-ratio; 0: none, the integral is released as computed) and the message says when a repair happened.
"""

from __future__ import annotations

import time
from typing import Any, TypedDict

import numpy as np
import shapely
from numpy.typing import NDArray

from ..contract import Mechanism, Param, Progress, Result, epsilon_param, register
from ..deadline import OutOfTime, check_deadline, deadline_of
from ..lp.cone import floor_columns, repair_into_cone
from ..metrics import check_distance
from ..problem import Problem

TAIL_RADII = 50.0  # the clipping box reaches 50/ε beyond the points: (1 + 50)e^{-50} ≈ 1e-20 of mass outside


class LaplaceDiagnostics(TypedDict):
    """What the planar Laplace mechanism reports: the error of its numerical integral (full against half angular
    resolution) and how far the integral was outside the ε-mDP cone before the exact repair."""

    integration_error_max: float
    integration_log_error_max: float
    integration_error_note: str
    breach_before_repair: float  # largest log-ratio above ε·d (0: none)
    repaired: bool
    entries_raised: int


def voronoi_edges(y_xy: NDArray[np.float64], margin: float) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                                                       NDArray[np.int64]]:
    """Edges (a, b, owner) of the Voronoi cells of the outputs, clipped to their box grown by ``margin`` km.

    Each cell's boundary is oriented counter-clockwise, so signed fan integrals add up to the cell's mass; the
    edges of one cell are contiguous and cells come in output order.
    """
    lo, hi = y_xy.min(axis=0) - margin, y_xy.max(axis=0) + margin
    box = shapely.box(lo[0], lo[1], hi[0], hi[1])
    cells = shapely.voronoi_polygons(shapely.multipoints(y_xy), extend_to=box, ordered=True)
    polys = shapely.intersection(np.asarray(shapely.get_parts(cells)), box)
    polys = shapely.orient_polygons(polys)  # counter-clockwise exteriors
    a_list, b_list, owner = [], [], []
    for k, poly in enumerate(polys):  # one polygon per output (M of them), not per pair
        ring = np.asarray(poly.exterior.coords)
        a_list.append(ring[:-1])
        b_list.append(ring[1:])
        owner.append(np.full(len(ring) - 1, k))
    return np.concatenate(a_list), np.concatenate(b_list), np.concatenate(owner)


def _gauss(n_sub: int, n_nodes: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Composite Gauss–Legendre nodes and weights on [0, 1]."""
    t, w = np.polynomial.legendre.leggauss(n_nodes)
    starts = np.arange(n_sub) / n_sub
    nodes = (starts[:, None] + (t[None, :] + 1) / (2 * n_sub)).ravel()
    return nodes, np.tile(w / (2 * n_sub), n_sub)


def fan_integrals(x: NDArray[np.float64], a: NDArray[np.float64], b: NDArray[np.float64], eps: float,
                  s: NDArray[np.float64], log_w: NDArray[np.float64]) -> tuple[NDArray[np.float64],
                                                                         NDArray[np.float64], NDArray[np.float64]]:
    """Signed fan integrals from points ``x`` (n, 2) over edges a→b (E, 2), km; quadrature nodes ``s`` on [0, 1].

    Returns (δ, G, ln T), each (n, E): δ the signed angle the edge spans seen from x; G = (1/2π)∫_0^δ G(ρ) dθ
    (signed, linear) and ln T = ln((1/2π)∫ T(ρ) dθ) over the same angles (unsigned, log space).

    With h the distance from x to the edge's line and s the position along it from the foot of the
    perpendicular, s = h·sinh τ gives ρ = h·cosh τ and dθ = dτ / cosh τ exactly; a second map
    τ = τ0 + w·sinh σ (τ0 the foot, or the nearer end; w = min(1, 1/√(εh))) spreads the nodes where e^{−ερ}
    peaks, so a fixed number of Gauss nodes resolves both a far edge (e^{−ερ} narrow around the foot) and an
    edge passing close to x (G varying near the ends).
    """
    edge = b - a
    unit = edge / np.maximum(np.linalg.norm(edge, axis=1), 1e-300)[:, None]
    va, vb = a[None] - x[:, None], b[None] - x[:, None]  # (n, E, 2)
    th_a = np.arctan2(va[..., 1], va[..., 0])
    delta = np.angle(np.exp(1j * (np.arctan2(vb[..., 1], vb[..., 0]) - th_a)))  # signed, in (−π, π]
    h_raw = np.abs(va[..., 0] * unit[:, 1] - va[..., 1] * unit[:, 0])
    on_line = h_raw < 1e-12  # x on the edge's line (1e-12 km): a degenerate fan of zero area
    h = np.where(on_line, 1.0, h_raw)
    ta = np.arcsinh(np.einsum("bed,ed->be", va, unit) / h)
    tb = np.arcsinh(np.einsum("bed,ed->be", vb, unit) / h)
    lo, hi = np.minimum(ta, tb), np.maximum(ta, tb)
    t0 = np.clip(0.0, lo, hi)
    width = np.minimum(1.0, 1.0 / np.sqrt(eps * h))
    s_lo, s_hi = np.arcsinh((lo - t0) / width), np.arcsinh((hi - t0) / width)
    sig = s_lo[..., None] + (s_hi - s_lo)[..., None] * s  # (n, E, Q)
    tau = t0[..., None] + width[..., None] * np.sinh(sig)
    with np.errstate(divide="ignore"):
        log_wt = np.log(width * (s_hi - s_lo))[..., None] + np.log(np.cosh(sig)) - np.log(np.cosh(tau)) + log_w
    er = eps * h[..., None] * np.cosh(tau)  # ερ at each node
    g = -np.expm1(-er) - er * np.exp(-er)  # G = 1 − (1 + ερ)e^{−ερ}, accurate near 0
    g_int = np.where(on_line, 0.0, np.sign(delta) * (g * np.exp(log_wt)).sum(axis=2) / (2 * np.pi))
    lt = np.log1p(er) - er + log_wt  # ln T + ln(weight) at each node
    top = lt.max(axis=2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        lt_int = top[..., 0] + np.log(np.exp(lt - top).sum(axis=2)) - np.log(2 * np.pi)
        lt_int = np.where(on_line, np.log(np.abs(delta) / (2 * np.pi)), lt_int)  # T(0) = 1 over the fan's angle
    return delta, g_int, np.where(np.isnan(lt_int), -np.inf, lt_int)


def laplace_log_matrix(problem: Problem, eps: float, n_sub: int = 8, n_nodes: int = 6,
                       progress: Progress | None = None, deadline: float | None = None,
                       what: str = "integrating the Laplace mass of each Voronoi cell") -> NDArray[np.float64]:
    """ln Z (K, M) of planar Laplace + nearest-output remap (module docstring), rows normalised; −inf: no mass.

    Past ``deadline`` (a ``time.perf_counter()`` value, checked before each block of rows) ``OutOfTime`` is raised,
    naming ``what`` and how many rows were done.
    """
    if problem.m == 1:
        return np.zeros((problem.k, 1))
    xy = problem.xy_km
    y_xy = xy[problem.y_index]
    a, b, owner = voronoi_edges(y_xy, TAIL_RADII / eps + float(np.ptp(xy, axis=0).max()))
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])  # first edge of each cell (cells in order)
    s, w = _gauss(n_sub, n_nodes)
    log_w = np.log(w)
    logZ = np.empty((problem.k, problem.m))
    chunk = max(1, 1_000_000 // (len(a) * len(s)))
    for start in range(0, problem.k, chunk):
        check_deadline(deadline, f"{what} ({start:,} of {problem.k:,} secrets done)")
        delta, g_int, lt_int = fan_integrals(xy[start:start + chunk], a, b, eps, s, log_w)
        sign = np.sign(delta)
        # G form, linear: the sum of its terms' magnitudes bounds its rounding error
        mass_g = np.add.reduceat(g_int, starts, axis=1)
        size_g = np.add.reduceat(np.abs(g_int), starts, axis=1)
        # T form outside the cell (winding number 0): −Σ_e sign_e e^{lt_e}, as a signed log-sum-exp per cell
        cell_top = np.maximum.reduceat(lt_int, starts, axis=1)  # (b, M)
        ref = np.where(np.isfinite(cell_top), cell_top, 0.0)
        signed = np.add.reduceat(-sign * np.exp(lt_int - ref[:, owner]), starts, axis=1)
        wind = np.add.reduceat(delta, starts, axis=1) / (2 * np.pi)  # 1 in x's own cell, 0 outside, ½ on its edge
        with np.errstate(divide="ignore", invalid="ignore"):
            log_t = ref + np.log(signed)
            log_g = np.log(np.clip(mass_g, 0.0, None))
        use_t = (np.abs(wind) < 0.25) & (np.exp(cell_top) < size_g) & (signed > 0)
        logZ[start:start + chunk] = np.where(use_t, log_t, log_g)
        if progress is not None:
            progress("integrating", min(1.0, (start + chunk) / problem.k))
    row_top = logZ.max(axis=1, keepdims=True)
    log_rows: NDArray[np.float64] = logZ - (row_top + np.log(np.exp(logZ - row_top).sum(axis=1, keepdims=True)))
    return log_rows


def _solve_laplace(problem: Problem, params: dict[str, Any], progress: Progress, time_limit: float | None) -> Result:
    eps = params["eps"]
    deadline = deadline_of(time_limit)
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    try:
        log_z = laplace_log_matrix(problem, eps, params["n_sub"], 6, progress, deadline)
        t1 = time.perf_counter()
        timings["integrate_s"] = t1 - t0
        n_sub = params["n_sub"]  # the error estimate: half the panels (or half the nodes of a single panel)
        log_half = laplace_log_matrix(problem, eps, max(n_sub // 2, 1), 6 if n_sub > 1 else 3, deadline=deadline,
                                      what="estimating the integration error at half resolution")
        t2 = time.perf_counter()
        timings["error_estimate_s"] = t2 - t1
        Z = floor_columns(np.exp(log_z))
        progress("check and repair", None)
        check_deadline(deadline, "checking the integral against the ε-mDP cone")
        Es = eps * check_distance(problem, "l2-planar")
        repaired, facts = repair_into_cone(Z, Es, problem.p[:, None] * problem.c, report_breach=True,
                                           deadline=deadline)
    except OutOfTime as e:  # nothing checked yet: no Z
        return Result("laplace", params, None, "time limit", eps, timings=timings,
                      message=f"Time limit ({time_limit:g} s) while {e}: no mechanism is returned, since the "
                              "integral is released only after its ε-mDP check and repair. Raise the time limit, "
                              "lower `n_sub` or K.")
    breach = facts["breach_before_repair"]
    if breach > 0.0:  # the integral left the cone (quadrature error at a pair near the bound): use the repair
        Z = repaired
    floor = np.log(1e-300)
    shown = (log_z > floor) & (log_half > floor)
    rel = float(np.abs(log_z - log_half)[shown].max()) if shown.any() else 0.0
    message = (f"The integral broke ε-mDP by a log-ratio of {breach:.2g} before the repair (quadrature error); "
               f"{facts['entries_raised']} entries were raised into the ε-mDP cone." if breach > 0.0 else "")
    return Result("laplace", params, Z, "closed form", eps,
                  claim="all pairs in the planar projection; Z is a numerical integral (see integration error)",
                  check_metric="l2-planar", message=message,
                  timings={**timings, "repair_s": time.perf_counter() - t2},
                  diagnostics=LaplaceDiagnostics(
                      integration_error_max=float(np.abs(np.exp(log_z) - np.exp(log_half)).max()),
                      integration_log_error_max=rel,
                      integration_error_note="max |Z − Z_half| and max |ln Z − ln Z_half| (entries above 1e-300) "
                                             "between full and half angular resolution",
                      breach_before_repair=float(breach), repaired=bool(breach > 0.0),
                      entries_raised=int(facts["entries_raised"])))


LAPLACE = register(Mechanism(
    name="laplace", label="Planar Laplace + nearest output", family="baseline",
    paper="Andrés, Bordenabe, Chatzikokolakis, Palamidessi: Geo-indistinguishability (CCS 2013)",
    info="Adds planar Laplace noise (ε-mDP in the plane) and reports the nearest output. Z[x, y] is the Laplace "
         "mass of y's Voronoi cell, integrated numerically in log space (tiny masses of far cells stay positive); "
         "the integration error (full vs half resolution) is reported, and a breach of ε-mDP left by quadrature "
         "is repaired exactly.",
    params=(epsilon_param(),
            Param("n_sub", int, 8, "angular sub-intervals per Voronoi edge (6 Gauss nodes each)", low=1, high=64,
                  unit="panels per edge", label="quadrature")),
    solve=_solve_laplace, diagnostics=LaplaceDiagnostics))
