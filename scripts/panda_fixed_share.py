"""Issue 30's attempt at PAnDA with its Phase I budget held to a fixed share of ε by construction.

Phase I's exact cost (Prop. 3's ε̄, ``mdpviz.panda.budget``) sums a term per record, so holding its largest ε̄ to
a share s·ε makes each record's selection probability nearly flat over the city. This prints, for exponential
decay with no floor jump (γ = d_max, floor = h(γ)), how the largest and median ε̄ and the expected anchor-set size
E|A_n| move with λ on a Rome sample; read off the λ that keeps max ε̄ ≤ s·ε and what the anchor sets then are.

    python scripts/panda_fixed_share.py [--k 500] [--regions centre:5 whole]
"""

from __future__ import annotations

import argparse

import numpy as np

from mdpviz.panda.budget import eps_bar, phase1_cost
from mdpviz.panda.selection import make_selection
from mdpviz.problem import build_problem


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=500)
    ap.add_argument("--alpha", type=float, default=0.95)
    ap.add_argument("--regions", nargs="+", default=["centre:5", "whole"])
    ap.add_argument("--lams", type=float, nargs="+", default=[0.5, 0.05, 5e-3, 1e-3, 3e-4, 1e-4])
    a = ap.parse_args()
    print("region | λ (km⁻¹) | max ε̄ (km⁻¹) | median ε̄ (km⁻¹) | E|A_n| of K | selection probability over the city")
    for region in a.regions:
        pb = build_problem("rome", a.k, n_outputs=min(100, a.k), cost="distance", region=region, seed=0)
        off = ~np.eye(pb.k, dtype=bool)
        for lam in a.lams:
            sel = make_selection("e", a.alpha, lam, float(pb.d.max()) * 1.0001, "h_gamma")
            eb = eps_bar(phase1_cost(pb.d, sel), pb.d)[off]
            w = sel.weights(pb.d)
            print(f"{region} | {lam:g} | {eb.max():.3g} | {np.median(eb):.3g} | {w.sum(axis=1).mean():.0f} of {pb.k} | "
                  f"{w.min():.3f}–{w.max():.3f}", flush=True)


if __name__ == "__main__":
    main()
