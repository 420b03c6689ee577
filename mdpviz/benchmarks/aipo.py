"""``python -m mdpviz bench aipo``: AIPO's runtime and loss against the lattice size and against K, beside the LP.

The exact LP runs on the same problems (skipped above ``--lp-max-k`` or when it passes ``--time-limit``). AIPO's
loss is its true (interpolated) loss on the secrets; the LP's is the optimum over the same X and Y.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..problem import build_problem
from . import report


def _run(pb: Any, mechanism: str, params: dict[str, Any], time_limit: float) -> dict[str, Any]:
    r, row = report.timed_solve(pb, mechanism, params, time_limit)
    return {**row, "anchors": r.diagnostics.get("anchors"), "lower_bound_m": r.bound_m}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mdpviz bench aipo", description=__doc__)
    ap.add_argument("--city", default=None, help="city (default: the bundled default)")
    ap.add_argument("--eps", type=float, default=5.0, help="ε in km⁻¹ (default 5)")
    ap.add_argument("--outputs", type=int, default=100, help="|Y| (default 100)")
    ap.add_argument("--cells", type=int, nargs="+", default=[2, 4, 8, 12, 16], help="lattice sizes for the sweep")
    ap.add_argument("--ks", type=int, nargs="+", default=[100, 500, 1000, 2000], help="K values for the sweep")
    ap.add_argument("--k-for-cells", type=int, default=500, help="K of the lattice sweep (default 500)")
    ap.add_argument("--lp-max-k", type=int, default=500, help="skip the exact LP above this K (default 500)")
    ap.add_argument("--time-limit", type=float, default=300.0, help="seconds per solve (default 300)")
    ap.add_argument("--out", default="aipo", help="name of the CSV/Markdown files in docs/benchmarks")
    a = ap.parse_args(argv)

    rows: list[dict[str, Any]] = []
    pb = build_problem(a.city, a.k_for_cells, n_outputs=min(a.outputs, a.k_for_cells))
    for cells in a.cells:
        row = {"sweep": "cells", "K": pb.k, "cells": cells, "method": "aipo",
               **_run(pb, "aipo", {"eps": a.eps, "cells": cells, "lb_grid": 0}, a.time_limit)}
        rows.append(row)
        print(row, flush=True)
    for k in a.ks:
        pb = build_problem(a.city, k, n_outputs=min(a.outputs, k))
        for method, params in (("aipo", {"eps": a.eps, "lb_grid": 0}), ("em", {"eps": a.eps}),
                               ("laplace", {"eps": a.eps}), ("lp", {"eps": a.eps})):
            if method == "lp" and k > a.lp_max_k:
                continue
            row = {"sweep": "K", "K": k, "cells": 8 if method == "aipo" else None, "method": method,
                   **_run(pb, method, params, a.time_limit)}
            rows.append(row)
            print(row, flush=True)
    path = report.write(rows, a.out, "AIPO benchmark",
                        notes=f"ε = {a.eps} km⁻¹, |Y| = {a.outputs}; `python -m mdpviz bench aipo`. Each "
                              "mechanism's violations are checked in the metric of its claim (planar ℓ2 for AIPO and "
                              "Laplace, haversine for the others).")
    print(f"wrote {path}")
    return 0
