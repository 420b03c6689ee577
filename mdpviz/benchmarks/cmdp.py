"""``python -m mdpviz bench cmdp``: C-mDP (seed 002) against ε: loss and runtime of the six methods of Fig. 10.

Methods: LP+C-mDP (``cmdp``), LP+Markov (``cmdp-markov``), LP+TrueMB (``cmdp-truemb``), and the context-free LP
(``lp``, on the context-averaged cost: the best context-invariant mechanism, and on the no-motion cost), ConstOPT
(``lp-em``, when registered) and the exponential mechanism (``em``) run on the context-free problem of the same
corpus (``context_free_problem``). Every loss is the in-sample expected next-location loss under the same true
model (metres); ``vs_lp_pct`` is against the best context-invariant LP. The default problem is the paper's city:
K stations drawn in a Rome region a few km wide (the η = 5 km neighbour rule needs stations close together).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from typing import Any

from ..cmdp.compare import compare
from ..cmdp.pipeline import prepare
from ..mechanisms import get_mechanism
from ..mechanisms.cmdp import data_settings
from ..problem import build_problem
from . import report


PAPER_EPS = (0.5, 2.5)  # the paper's ε range, km⁻¹ (Fig. 10)


def gains_text(rows: list[dict[str, Any]]) -> str:
    """One paragraph: C-mDP's and TrueMB's gains against the best context-invariant LP inside the paper's ε range.

    >>> text = gains_text([{"eps": 1.0, "method": "cmdp", "vs_lp_pct": -3.0},
    ...                    {"eps": 2.0, "method": "cmdp", "vs_lp_pct": -6.0}, {"eps": 5.0, "method": "cmdp", "vs_lp_pct": -20.0}])
    >>> "LP+C-mDP is 3.0–6.0 %" in text
    True
    """
    def span(method: str) -> str:
        vals = [-r["vs_lp_pct"] for r in rows if r["method"] == method and r.get("vs_lp_pct") is not None
                and PAPER_EPS[0] <= r["eps"] <= PAPER_EPS[1]]
        return f"{min(vals):.1f}–{max(vals):.1f} %" if vals else "n/a"

    return (f"Inside the paper's ε range ({PAPER_EPS[0]:g}–{PAPER_EPS[1]:g} km⁻¹), LP+C-mDP is {span('cmdp')} below "
            "the best context-invariant LP (the paper reports 13–17 % below its LP); the oracle LP+TrueMB is "
            f"{span('cmdp-truemb')} below it.")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the C-mDP benchmark from the command line; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m mdpviz bench cmdp", description=__doc__)
    ap.add_argument("--city", default="rome", help="city (default rome)")
    ap.add_argument("--region", default="centre:3", help="where the stations are drawn (default centre:3, km)")
    ap.add_argument("--k", type=int, default=16, help="stations = secrets = outputs (default 16)")
    ap.add_argument("--problem-seed", type=int, default=0, help="seed of the stations and tasks (default 0)")
    ap.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 1.5, 2.0, 2.5, 5.0],
                    help="ε values in km⁻¹ (default: the paper's 0.5..2.5, plus 5 outside its range)")
    ap.add_argument("--vehicles", type=int, default=1000, help="trajectories in the corpus (default 1000)")
    ap.add_argument("--baseline-cost", choices=("no-motion", "context-averaged"), default="context-averaged",
                    help="cost ConstOPT (lp-em) optimises (default context-averaged); lp runs on both")
    ap.add_argument("--time-limit", type=float, default=300.0, help="seconds per solve (default 300)")
    ap.add_argument("--out", default="cmdp", help="name of the CSV/Markdown files in docs/benchmarks")
    a = ap.parse_args(argv)

    pb = build_problem(a.city, a.k, all_outputs=True, seed=a.problem_seed, region=a.region)
    base = {**get_mechanism("cmdp").defaults(), "vehicles": a.vehicles}
    t0 = time.perf_counter()
    data = prepare(pb, data_settings(base))
    prep_s = time.perf_counter() - t0
    rows = compare(data, base, a.eps, baseline_cost=a.baseline_cost, time_limit=a.time_limit)
    for row in rows:
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items() if k != "blankets"})
    clf = data.classifier.metrics["test"] if data.classifier is not None else None
    hist = {r["method"]: r["blankets"] for r in rows if r.get("blankets") and r["eps"] == a.eps[0]}
    for r in rows:
        r.pop("blankets", None)
    groups = data.discovery.groups
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    notes = (
        f"`python -m mdpviz bench cmdp {' '.join(argv or [])}` (city {a.city}, region {a.region}, K = |Y| = {pb.k} "
        f"stations, d up to {pb.d.max():.1f} km, problem seed {a.problem_seed}, {a.vehicles} synthetic vehicles, "
        f"default corpus and blanket settings of `cmdp`; corpus + discovery + classifier {prep_s:.2f} s, shared by "
        f"all rows; load average at the end {load} on 2 cores shared with other work). `loss_m`: in-sample expected "
        "next-location loss (Eq. 34) under the same true model for every method, metres; `heldout_loss_m`: the same "
        "on an independent corpus from the same generator (held-out slots get blankets from this corpus's model; "
        "unseen contexts fall back to shorter ones); `objective_m`: the method's own objective (a misspecified one, "
        "such as the no-motion LP's, need not track the true loss, which then need not fall monotonically in ε); "
        "`vs_lp_pct`: loss relative to the best context-invariant LP (context-averaged cost); "
        "`vs_no_motion_lp_pct` relative to the no-motion LP. Violations are (pair, output) triples over checked "
        "triples: `enforced_viol` on each method's own protected domain (must be 0), `location_viol` on locations "
        "only after marginalising contexts (may be > 0 for context-aware methods: they protect (location, context) "
        "under the augmented metric, a different target at the same ε; not a bug).\n\n"
        + gains_text(rows) + "\n\n"
        f"Blanket sizes (complete slots, size: count) at ε = {a.eps[0]}: {hist}. "
        f"Algorithm 1: {int(groups.tested.sum())} of {len(groups)} groups tested (≥ 200 slots), pooled blanket "
        f"{data.discovery.pooled_blanket}. Blanket classifier, test split: {clf}.\n\n"
        "The paper's magnitudes (real Rome/Porto taxi traces, 18–50 m) are not comparable: this corpus is synthetic "
        "(momentum walks between stations); only orderings and relative gains are meaningful.")
    path = report.write(rows, a.out, "C-mDP benchmark (seed 002): loss and runtime against ε", notes=notes)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
