"""An anchor lattice over the plane and log-space multilinear interpolation of anchor distributions (AIPO).

Points are projected to planar km around a fixed origin; the lattice has square cells of side ``step`` km
starting at ``(x0, y0)``, with ``nx × ny`` anchors (corners). A point's four corner weights are bilinear in its
position inside its cell; points outside the lattice use the nearest point of the lattice (coordinate-wise
clamping, which never increases ℓp distances, so privacy carries over to the whole plane).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ..geo import project_km


@dataclass(frozen=True, eq=False)
class Lattice:
    """A regular anchor lattice in planar km around (lat0, lon0)."""

    lat0: float
    lon0: float
    x0: float
    y0: float
    step: float
    nx: int
    ny: int

    @classmethod
    def covering(cls, lat: NDArray[np.float64], lon: NDArray[np.float64], cells: int,
                 step_km: float = 0.0) -> Lattice:
        """The lattice over the points' bounding box with square cells of side ``step_km`` km, or (``step_km`` 0)
        with ``cells`` cells across the wider side of the box.

        >>> lat = np.array([41.80, 41.95]); lon = np.array([12.40, 12.60])   # about 17 × 17 km
        >>> lattice = Lattice.covering(lat, lon, 8)
        >>> (lattice.nx, lattice.ny), round(lattice.step, 2), Lattice.covering(lat, lon, 8, step_km=4.77).nx
        ((9, 9), 2.08, 5)
        """
        lat0, lon0 = float(np.mean(lat)), float(np.mean(lon))
        xy = project_km(lat, lon, lat0, lon0)
        lo, hi = xy.min(axis=0), xy.max(axis=0)
        step = float(step_km) if step_km > 0 else max(float((hi - lo).max()) / cells, 1e-6)
        nx, ny = (np.ceil((hi - lo) / step - 1e-9).astype(int) + 1).clip(min=2)
        return cls(lat0, lon0, float(lo[0]), float(lo[1]), step, int(nx), int(ny))

    @property
    def n_anchors(self) -> int:
        """Number of lattice anchors."""
        return self.nx * self.ny

    def closure(self, e1: float, e2: float) -> NDArray[np.float64]:
        """(n_anchors, n_anchors) min-plus closure of the neighbour exponents: step·(ε₁·|Δi| + ε₂·|Δj|).

        On a lattice graph whose edges along axis ℓ cost ε_ℓ·step, the shortest path between two anchors is
        the weighted ℓ1 distance of their indices, so the closure has this closed form.
        """
        i = np.tile(np.arange(self.nx), self.ny)
        j = np.repeat(np.arange(self.ny), self.nx)
        closed: NDArray[np.float64] = self.step * (e1 * np.abs(i[:, None] - i[None, :])
                                                   + e2 * np.abs(j[:, None] - j[None, :]))
        return closed

    def anchor_xy(self) -> NDArray[np.float64]:
        """(n_anchors, 2) planar km of the anchors; anchor id = j * nx + i."""
        i, j = np.meshgrid(np.arange(self.nx), np.arange(self.ny))
        return np.column_stack([self.x0 + i.ravel() * self.step, self.y0 + j.ravel() * self.step])

    def anchor_latlon(self) -> NDArray[np.float64]:
        """(n_anchors, 2) degrees (lat, lon) of the anchors (inverse of the equirectangular projection)."""
        xy = self.anchor_xy()
        r = 6371.0088
        lat = self.lat0 + np.degrees(xy[:, 1] / r)
        lon = self.lon0 + np.degrees(xy[:, 0] / (r * np.cos(np.radians(self.lat0))))
        return np.column_stack([lat, lon])

    def neighbour_pairs(self) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """Ordered ℓ-neighbour pairs (both directions) and their axis (0 = east–west, 1 = north–south)."""
        ids = np.arange(self.n_anchors).reshape(self.ny, self.nx)
        h = np.column_stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()])
        v = np.column_stack([ids[:-1, :].ravel(), ids[1:, :].ravel()])
        both = np.concatenate([h, v, h[:, ::-1], v[:, ::-1]])
        axis = np.concatenate([np.zeros(len(h)), np.ones(len(v)), np.zeros(len(h)), np.ones(len(v))])
        return both[:, 0].astype(np.int64), both[:, 1].astype(np.int64), axis.astype(np.int64)

    def weights_xy(self, xy: NDArray[np.float64]) -> sp.csr_matrix:
        """Sparse (n_points, n_anchors) bilinear corner weights, 4 per row, rows summing to 1."""
        fx = np.clip((xy[:, 0] - self.x0) / self.step, 0.0, self.nx - 1)
        fy = np.clip((xy[:, 1] - self.y0) / self.step, 0.0, self.ny - 1)
        i = np.minimum(fx.astype(np.int64), self.nx - 2)
        j = np.minimum(fy.astype(np.int64), self.ny - 2)
        lx, ly = fx - i, fy - j
        base = j * self.nx + i
        cols = np.column_stack([base, base + 1, base + self.nx, base + self.nx + 1])
        vals = np.column_stack([(1 - lx) * (1 - ly), lx * (1 - ly), (1 - lx) * ly, lx * ly])
        rows = np.repeat(np.arange(len(xy)), 4)
        w = sp.csr_matrix((vals.ravel(), (rows, cols.ravel())), shape=(len(xy), self.n_anchors))
        w.eliminate_zeros()  # a zero weight must not meet log(0) = −inf
        return w

    def weights(self, lat: NDArray[np.float64], lon: NDArray[np.float64]) -> sp.csr_matrix:
        """Interpolation weights of points given by latitude and longitude (rows: points, columns: anchors)."""
        return self.weights_xy(project_km(lat, lon, self.lat0, self.lon0))


def interpolate_rows(w: sp.csr_matrix, log_anchor: NDArray[np.float64]) -> NDArray[np.float64]:
    """Normalised log-space interpolation: rows ∝ exp(W · log Z_anchor). Columns that are −inf stay 0."""
    alive = np.isfinite(log_anchor).all(axis=0)
    logf = np.full((w.shape[0], log_anchor.shape[1]), -np.inf)
    logf[:, alive] = w @ log_anchor[:, alive]
    logf -= logf.max(axis=1, keepdims=True)
    f = np.exp(logf)
    rows: NDArray[np.float64] = f / f.sum(axis=1, keepdims=True)
    return rows


@dataclass(frozen=True, eq=False)
class AnchorInterpolant:
    """The continuous-domain mechanism: ``rows(lat, lon)`` gives Pr[y | point] for any points (degrees)."""

    lattice: Lattice
    log_anchor: NDArray[np.float64]  # (n_anchors, M) log anchor probabilities (−inf for dropped outputs)

    def __call__(self, lat: NDArray[np.float64], lon: NDArray[np.float64]) -> NDArray[np.float64]:
        return interpolate_rows(self.lattice.weights(np.atleast_1d(lat), np.atleast_1d(lon)), self.log_anchor)

    def rows_xy(self, xy: NDArray[np.float64]) -> NDArray[np.float64]:
        """Rows for points given in the lattice's planar km."""
        return interpolate_rows(self.lattice.weights_xy(xy), self.log_anchor)
