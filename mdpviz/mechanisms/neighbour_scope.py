"""The claim and the all-pairs check of an LP over neighbour pairs only (d ≤ η), the scope of the Benders paper's
LP: shared by ``lp`` (neighbour scope) and ``lp-bd``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..metrics import TOLERANCE, cone_breaches


def neighbour_claim(eta: float) -> str:
    """The claim of an LP over neighbour pairs."""
    return (f"neighbour pairs only (d ≤ {eta:g} km) at ε·d, as the paper's LP; other pairs only at ε × their "
            "shortest path through neighbours (Property 3.2), none across components: not ε-mDP for every pair")


def all_pairs_verdict(Z: np.ndarray, eps: float, d: np.ndarray, eta: float) -> tuple[str, str, dict[str, Any]]:
    """(message, degenerate, facts) of the all-pairs ε-mDP check of a neighbour-scope Z (``metrics.cone_breaches``)."""
    b = cone_breaches(Z, eps * d)
    n = len(Z)
    checked = n * (n - 1)
    facts = {"violated_pairs": int(len(b.i)), "checked_pairs": checked, "worst_factor": b.worst_factor,
             "tolerance": TOLERANCE}
    if len(b.i) == 0:
        return f"all {checked:,} ordered pairs of X also meet ε-mDP (measured)", "", facts
    share = len(b.i) / checked
    msg = (f"measured over all pairs of X: {len(b.i):,} of {checked:,} ordered pairs ({share:.1%}) break ε-mDP "
           f"(worst loss factor {b.worst_factor:.3g}); the LP constrains only pairs within η = {eta:g} km")
    verdict = (f"Claim covers only neighbour pairs (d ≤ {eta:g} km): {len(b.i):,} of {checked:,} ordered pairs of X "
               f"({share:.1%}) break ε-mDP")
    return msg, verdict, facts
