"""``python -m mdpviz bench mechanisms``: solve time and metrics of every registered mechanism, and evaluation time.

For each K, one problem on the city (|Y| = min(outputs, K), seed 0); each mechanism is solved with its default
parameters at the given ε (cache off, time limit per solve), then evaluated: utility loss (m), violated/checked
ordered pairs in the metric of its claim, and the time of that all-pairs check.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..errors import MdpvizError
from ..mechanisms import get_mechanism, mechanisms
from ..problem import build_problem
from . import report


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mdpviz bench mechanisms", description=__doc__)
    ap.add_argument("--city", default=None, help="city (default: the bundled default)")
    ap.add_argument("--ks", type=int, nargs="+", default=[100, 500], help="K values (default 100 500)")
    ap.add_argument("--outputs", type=int, default=100, help="|Y| (default 100)")
    ap.add_argument("--eps", type=float, default=5.0, help="ε in km⁻¹ (default 5)")
    ap.add_argument("--only", nargs="+", default=None, help="mechanism names (default: all registered)")
    ap.add_argument("--time-limit", type=float, default=300.0, help="seconds per solve (default 300)")
    ap.add_argument("--out", default="mechanisms", help="name of the CSV/Markdown files in docs/benchmarks")
    a = ap.parse_args(argv)
    names = a.only or [m.name for m in mechanisms()]
    rows: list[dict[str, Any]] = []
    for k in a.ks:
        pb = build_problem(a.city, k, n_outputs=min(a.outputs, k))
        for name in names:
            row: dict[str, Any] = {"K": k, "outputs": pb.m, "mechanism": name}
            try:
                params = {"eps": a.eps} if "eps" in {p.name for p in get_mechanism(name).params} else {}
                row.update(report.timed_solve(pb, name, params, a.time_limit)[1])
            except MdpvizError as e:
                row.update(status=f"error: {e}"[:80])
            rows.append(row)
            print(row, flush=True)
    path = report.write(rows, a.out, "Solve time of every mechanism",
                        notes=f"`python -m mdpviz bench mechanisms`; ε = {a.eps} km⁻¹, default parameters, "
                              f"time limit {a.time_limit:g} s; check_s = all-pairs ε-mDP check of Z in the claim's "
                              "metric. Mechanisms with a narrower claim (lp-ca, PAnDA, AIPO-R, C-mDP, DISTA-LP) are "
                              "expected to show violations here; their own checks are in their diagnostics.")
    print(f"wrote {path}")
    return 0
