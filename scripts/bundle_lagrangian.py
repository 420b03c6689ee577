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
    python scripts/bundle_lagrangian.py --k 500 --eps 1 --iterations 15 --seed-engine cuts   # then the engine, seeded

With ``--seed-engine`` the structured engine then solves the LP to a gap of 1e-4 from the rows the bundle's weighted
cuts bind on (at an optimal μ every optimal column is a mix of its column problem's minimisers, so a pair row tight
there is tight in each minimiser mixed), its point and its bound (docs/WHAT-WE-LEARNED.md, "Nor does seeding the
engine").
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numpy.typing import NDArray

from mdpviz.lp.cone import fix_rows, floor_columns, lipschitz_repair
from mdpviz.lp.highs import INF, new_highs
from mdpviz.lp.pricing import Pricer
from mdpviz.lp.restricted import RestrictedLP
from mdpviz.lp.structured import PAIR_CAPS, TRUST_RADIUS, _cells, _first_lp, _RowAndColumnGeneration, _setup
from mdpviz.problem import build_problem
from mdpviz.progress import no_progress

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

    def mix(self, duals: Array) -> Array:
        """Each column the duals' mix of its cuts (the cuts the master had when it gave ``duals``)."""
        Z = np.zeros((self.n, self.m))
        for w, (y, v) in zip(duals, self.cuts, strict=False):
            if w > 0:
                Z[:, y] += w * v
        return Z

    def point(self, duals: Array) -> tuple[float, Array | None]:
        """The private point made from the cuts' duals and its cost (inf and None when a row has no mass)."""
        t0 = time.process_time()
        point = private_point(self.mix(duals), self.Es, self.Wn)
        self.t_points += time.process_time() - t0
        return (np.inf, None) if point is None else (float(np.sum(self.Wn * point)), point)

    def move(self, mu: Array, L: float, promised: float, at_box: float) -> None:
        """A serious step moves the centre (and may double the box); a null step halves the box."""
        if L >= self.L_centre + 0.1 * (promised - self.L_centre):
            good = L - self.L_centre > 0.5 * (promised - self.L_centre)
            if (good and at_box > 0) or (self.grow == "reached" and at_box >= 0.05):
                self.box *= 2
            self.centre, self.L_centre = mu, L
        else:
            self.box /= 2


def held_up(v: Array, Es: Array, tight: float = 1e-6) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(i, x): the entry that holds each entry x of the column v up (v_x = e^{−E[i, x]}·v_i within ``tight``, i ≠ x),
    for the entries with v_x > 0 whose pair row is within the engine's first cap."""
    P = v[:, None] * np.exp(-Es)
    np.fill_diagonal(P, -1.0)
    i = np.argmax(P, axis=0)
    x = np.arange(len(v))
    ok = (v > 1e-12) & (P[i, x] >= v * (1 - tight)) & (Es[i, x] <= PAIR_CAPS[0])
    return i[ok], x[ok]


def seed_rows(bs: Boxstep, duals: Array, mode: str, floor: float = 1e-4) -> tuple[NDArray[np.int64], ...]:
    """Pair rows (i, x, y) for the engine's first LP from the master's weighted cuts: ``cuts``, the row holding each
    entry of every weighted cut up; ``roots``, also every source of a column's weighted cuts against each entry it
    holds up to at least ``floor`` of the column's mix's largest entry."""
    weighted = [(y, v) for w, (y, v) in zip(duals, bs.cuts, strict=False) if w > 1e-12]
    found = [(*held_up(v, bs.Es), y) for y, v in weighted]
    rows = [(i, x, np.full(len(x), y)) for i, x, y in found]
    if mode == "roots":
        Z = bs.mix(duals)
        for y in range(bs.m):
            roots = np.unique(np.concatenate([i for i, _, yy in found if yy == y] + [np.zeros(0, np.int64)]))
            held = Z[roots, y][:, None] * np.exp(-bs.Es[roots])
            rr, xx = np.nonzero((held >= floor * Z[:, y].max()) & (bs.Es[roots] <= PAIR_CAPS[0]))
            rows.append((roots[rr], xx, np.full(len(xx), y)))
    return tuple(np.concatenate([r[k] for r in rows]).astype(np.int64) for k in range(3))


def seeded_engine(bs: Boxstep, duals: Array, mode: str, lb: float, ub: float, point: Array | None) -> None:
    """The structured engine (tolerance 1e-4) with its first LP seeded by ``seed_rows`` and the mix's entries, the
    bundle's point as its trust centre and first upper bound and its bound as the first lower bound; prints its
    rounds and CPU seconds."""
    c0 = time.process_time()
    lp = RestrictedLP(bs.Wn, bs.Es, tolerance=1e-7)
    reach, holder = _cells(bs.Wn, bs.Es, None)
    _first_lp(lp, reach, holder, 0, PAIR_CAPS[0])
    before = lp.n_pairs
    lp.add_vars(*np.nonzero(bs.mix(duals) > 1e-9))
    lp.add_pairs(*seed_rows(bs, duals, mode))
    print(f"engine seeded ({mode}): {lp.n_pairs - before:,} pair rows beyond the holders'", flush=True)
    run = _RowAndColumnGeneration(lp, Pricer(bs.Es), None, 1e-4, PAIR_CAPS[0], no_progress, time.perf_counter())
    run.start_trust(reach, TRUST_RADIUS)
    if point is not None and ub < run.ub:
        run.ub = ub
        lp.set_trust(point, TRUST_RADIUS)
    run.lb = max(run.lb, lb)
    status, _ = run.run(200)
    print(f"engine: {status} after {run.rounds} LP rounds, gap {run.gap:.2e}, {time.process_time() - c0:.1f} s CPU "
          f"(the bundle's not counted), {lp.n_pairs:,} pair rows", flush=True)


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
    ap.add_argument("--seed-engine", default="", choices=["", "cuts", "roots"],
                    help="after the iterations, run the structured engine seeded with the rows the bundle's "
                         "weighted cuts bind on (cuts), or with those and every root against what it holds up (roots)")
    a = ap.parse_args()
    pb = build_problem(a.city, a.k, n_outputs=a.outputs, cost=a.cost, seed=a.seed)
    Es, Wn, scale = _setup(pb.p[:, None] * pb.c, a.eps * pb.d, True)
    c0 = time.process_time()
    bs = Boxstep(Wn, Es, a.grow)
    lb, ub, best = bs.L_centre, np.inf, None
    print("it | bound (m) | point (m) | gap | box | CPU s (oracle, master, points)")
    for it in range(1, a.iterations + 1):
        mu, promised, at_box, duals = bs.solve_master()
        L, vs = bs.evaluate(mu)
        lb = max(lb, L)
        if it % 5 == 0 or it < 4 or (a.seed_engine and it == a.iterations):
            cost, point = bs.point(duals)
            if cost < ub:
                ub, best = cost, point
        bs.move(mu, L, promised, at_box)
        bs.add_cuts(list(enumerate(vs)))
        gap = (ub - lb) / ub if np.isfinite(ub) else np.inf
        point_m, gap_s = (f"{ub * scale:,.3f}", f"{gap:.2e}") if np.isfinite(ub) else ("—", "—")
        print(f"{it} | {lb * scale:,.3f} | {point_m} | {gap_s} | {bs.box:.2g} | {time.process_time() - c0:.1f} "
              f"({bs.t_oracle:.1f}, {bs.t_master:.1f}, {bs.t_points:.1f})", flush=True)
        if gap <= a.gap:
            break
    if a.seed_engine:
        seeded_engine(bs, duals, a.seed_engine, lb, ub, best)


if __name__ == "__main__":
    main()
