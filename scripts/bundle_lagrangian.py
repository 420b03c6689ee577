"""Issue 28's suggested design for the exact LP at small ε, measured: a bundle method on the duals of the K row sums.

Dualising the row sums Σ_y z[x, y] = 1 with multipliers μ leaves one problem per output, min (W[:, y] − μ)·v over
the cone ∩ [0, 1]^K, so the dual function is L(μ) = Σ μ + Σ_y φ_y(μ). Each φ_y is bounded from below by the
certified pricer of ``mdpviz.lp.pricing`` (exactly, when its transportation LP solves), whose duals give the
minimiser: v = 1 − α on the rows that want mass, then their envelope max_s v_s·e^{−E[s, x]}, which lies in the cone.
The method keeps one cutting-plane model per output and maximises their sum in a box around the best dual point
(boxstep: one HiGHS LP, kept warm; the box is halved after a null step and doubled after a serious step that gains
at least half of what the model promised and takes some multiplier to the box, or with ``--grow reached`` after
every serious step that takes at least 5 % of them there). In iterations 1–3 and every fifth a private point is made
from the master's cut duals (each column the duals' mix of its cuts, in the cone; rows divided by their sums, raised
back into the cone and balanced by ``mdpviz.lp.cone.fix_rows``). It prints, per iteration, the best certified bound
so far, the best private point, their gap and the CPU seconds. Results and the comparison with the structured
engine: docs/WHAT-WE-LEARNED.md ("The Lagrangian on the K row sums").

    python scripts/bundle_lagrangian.py --k 500 --eps 1 [--cost distance] [--iterations 80] [--grow good]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numpy.typing import NDArray

from mdpviz.lp.cone import fix_rows, floor_columns, lipschitz_repair
from mdpviz.lp.highs import INF, new_highs
from mdpviz.lp.pricing import Pricer
from mdpviz.lp.structured import _setup
from mdpviz.problem import build_problem

Array = NDArray[np.float64]


def column_minimum(pricer: Pricer, g: Array) -> tuple[float, Array]:
    """The certified pricer's lower bound on min g·v over the cone ∩ [0, 1]^n, and a minimiser built from its
    transportation LP's duals (every source at 1 where it solved none): the envelope of the sources' values."""
    priced = pricer.price(g)
    return priced.bound, pricer.minimiser(priced, g)


def private_point(Z: Array, Es: Array, Wn: Array) -> Array | None:
    """An exactly private, row-stochastic point from columns in the cone whose rows sum to about 1 (None if a row
    has no mass)."""
    rows = Z.sum(axis=1)
    if rows.min() <= 0:
        return None
    with np.errstate(divide="ignore"):
        u, _ = lipschitz_repair(np.log(Z / rows[:, None]), Es)
    out, _ = fix_rows(floor_columns(np.exp(u)), Es, Wn, balance_until=time.perf_counter() + 10.0)
    return out


class Boxstep:
    """The master: one cutting-plane model per output, maximised in a box around the centre (one warm HiGHS LP)."""

    def __init__(self, Wn: Array, Es: Array, grow: str) -> None:
        self.Wn, self.Es, self.grow = Wn, Es, grow
        self.pricer = Pricer(Es)
        self.n, self.m = Wn.shape
        self.t_oracle = self.t_master = self.t_points = 0.0
        self.cuts: list[tuple[int, Array]] = []
        self.h = new_highs()
        self.h.setOptionValue("solver", "simplex")
        self.h.setOptionValue("presolve", "off")
        self.centre = Wn.min(axis=1)  # the no-privacy floor's duals
        self.L_centre, vs = self.evaluate(self.centre)
        self.box = max(0.5 * float(np.abs(self.centre).max()), 1e-3)
        theta_low = 10.0 * float(np.abs(Wn).sum()) + 10.0  # a floor for each θ_y far below any φ_y met here (φ_y ≤ 0)
        n, m = self.n, self.m
        self.h.addVars(n + m, np.concatenate([self.centre - self.box, np.full(m, -theta_low)]),
                       np.concatenate([self.centre + self.box, np.zeros(m)]))
        self.h.changeColsCost(n + m, np.arange(n + m, dtype=np.int32), -np.ones(n + m))  # maximise Σ μ + Σ θ
        self.add_cuts([(y, np.zeros(n)) for y in range(m)] + list(enumerate(vs)))

    def evaluate(self, mu: Array) -> tuple[float, list[Array]]:
        """A certified lower bound on L(μ) (Σ μ plus each output's pricing bound) and the minimisers."""
        t0 = time.process_time()
        G = self.Wn - mu[:, None]
        parts = [column_minimum(self.pricer, G[:, y]) for y in range(self.m)]
        self.t_oracle += time.process_time() - t0
        return float(mu.sum()) + sum(p[0] for p in parts), [p[1] for p in parts]

    def add_cuts(self, new: list[tuple[int, Array]]) -> None:
        """θ_y + μ·v ≤ W_y·v for each (y, v)."""
        for y, v in new:
            nz = np.flatnonzero(v > 1e-12)
            idx = np.concatenate([nz, [self.n + y]]).astype(np.int32)
            self.h.addRow(-INF, float(self.Wn[:, y] @ v), len(idx), idx, np.concatenate([v[nz], [1.0]]))
            self.cuts.append((y, v))

    def solve_master(self) -> tuple[Array, float, float, Array]:
        """The master's μ, its promised value, the share of μ at the box, and the cuts' duals."""
        t0 = time.process_time()
        n = self.n
        self.h.changeColsBounds(n, np.arange(n, dtype=np.int32), self.centre - self.box, self.centre + self.box)
        self.h.run()
        x = np.array(self.h.getSolution().col_value)
        duals = -np.array(self.h.getSolution().row_dual)
        self.t_master += time.process_time() - t0
        at_box = float(np.mean(np.abs(x[:n] - self.centre) >= self.box * (1 - 1e-9)))
        return x[:n], float(x.sum()), at_box, duals

    def point_cost(self, duals: Array) -> float:
        """The cost of the private point made from the cuts' duals (inf when a row has no mass)."""
        t0 = time.process_time()
        Z = np.zeros((self.n, self.m))
        for k, (y, v) in enumerate(self.cuts):
            if duals[k] > 0:
                Z[:, y] += duals[k] * v
        point = private_point(Z, self.Es, self.Wn)
        self.t_points += time.process_time() - t0
        return np.inf if point is None else float(np.sum(self.Wn * point))

    def move(self, mu: Array, L: float, promised: float, at_box: float) -> None:
        """A serious step moves the centre (and may double the box); a null step halves the box."""
        if L >= self.L_centre + 0.1 * (promised - self.L_centre):
            good = L - self.L_centre > 0.5 * (promised - self.L_centre)
            if (good and at_box > 0) or (self.grow == "reached" and at_box >= 0.05):
                self.box *= 2
            self.centre, self.L_centre = mu, L
        else:
            self.box /= 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--city", default="rome")
    ap.add_argument("--k", type=int, default=200)
    ap.add_argument("--outputs", type=int, default=100)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--cost", default="distance", choices=["distance", "travel"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--iterations", type=int, default=80)
    ap.add_argument("--gap", type=float, default=1e-4)
    ap.add_argument("--grow", default="good", choices=["good", "reached"])
    a = ap.parse_args()
    pb = build_problem(a.city, a.k, n_outputs=a.outputs, cost=a.cost, seed=a.seed)
    Es, Wn, scale = _setup(pb.p[:, None] * pb.c, a.eps * pb.d, True)
    c0 = time.process_time()
    bs = Boxstep(Wn, Es, a.grow)
    lb, ub = bs.L_centre, np.inf
    print("it | bound (m) | point (m) | gap | box | CPU s (oracle, master, points)")
    for it in range(1, a.iterations + 1):
        mu, promised, at_box, duals = bs.solve_master()
        L, vs = bs.evaluate(mu)
        lb = max(lb, L)
        if it % 5 == 0 or it < 4:
            ub = min(ub, bs.point_cost(duals))
        bs.move(mu, L, promised, at_box)
        bs.add_cuts(list(enumerate(vs)))
        gap = (ub - lb) / ub if np.isfinite(ub) else np.inf
        point_m, gap_s = (f"{ub * scale:,.3f}", f"{gap:.2e}") if np.isfinite(ub) else ("—", "—")
        print(f"{it} | {lb * scale:,.3f} | {point_m} | {gap_s} | {bs.box:.2g} | {time.process_time() - c0:.1f} "
              f"({bs.t_oracle:.1f}, {bs.t_master:.1f}, {bs.t_points:.1f})", flush=True)
        if gap <= a.gap:
            break


if __name__ == "__main__":
    main()
