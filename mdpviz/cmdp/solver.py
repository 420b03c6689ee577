"""The reduced C-mDP LP (Eqs. 30–33) on the project's LP layer, an exact cone repair, and violation checks.

minimise Σ_s p_s Σ_y c_sy q_sy subject to q_sy ≤ e^{ε d_ss'} q_s'y for every neighbouring ordered pair (s, s') and
every y, Σ_y q_sy = 1, 0 ≤ q ≤ 1 (``mdpviz.lp.mdp_lp.solve_mdp_lp`` builds it sparsely).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..lp.cone import exponent_closure, lipschitz_repair, make_row_stochastic
from ..lp.mdp_lp import solve_mdp_lp
from ..metrics import TOLERANCE, entry_breaches
from ..progress import Progress, no_progress
from .diagnostics import CmdpCheck

PLACEHOLDER_WEIGHT = 1e-9  # LP weight of rows for never-observed stations (prior 0), so their rows stay sensible


@dataclass(frozen=True)
class ViolationReport:
    """Measured violations of q_sy ≤ e^{ε d_ss'} q_s'y over neighbouring ordered pairs and outputs.

    ``ratio = violated / checked`` counts (pair, y) triples; ``worst_log_ratio`` is max ln(q_sy / q_s'y) / (ε d_ss')
    over pairs with d > 0 (≤ 1 means within budget); magnitudes are of (q_sy − e^{ε d} q_s'y)⁺.
    """

    domain: str
    violated: int
    checked: int
    mean_excess: float
    max_excess: float
    worst_log_ratio: float
    rtol: float
    atol: float

    @property
    def ratio(self) -> float:
        """Violated over checked pairs (0 when none were checked)."""
        return self.violated / self.checked if self.checked else 0.0

    def as_dict(self) -> CmdpCheck:
        """The report as plain values, with its ratio."""
        return CmdpCheck(violated=self.violated, checked=self.checked, ratio=self.ratio, domain=self.domain,
                         mean_excess=self.mean_excess, max_excess=self.max_excess,
                         worst_log_ratio=self.worst_log_ratio, rtol=self.rtol, atol=self.atol,
                         unit="triples (neighbouring pair of secrets, output)")


def check(q: NDArray[np.float64], d: NDArray[np.float64], near: NDArray[np.bool_], eps: float,
          domain: str) -> ViolationReport:
    """Check every neighbouring ordered pair (``near``) of rows of ``q`` (n, M) against e^{ε·d}, vectorised.

    The test is the project's one check (``metrics.entry_breaches``: log space, relative τ, no absolute slack);
    the spec's q_sy > e^{ε d}·q_s'y·(1 + 1e-6) + 1e-9 would forgive any breach by an entry below 1e-9.
    """
    pi, pj = np.nonzero(near)
    if len(pi) == 0:
        return ViolationReport(domain, 0, 0, 0.0, 0.0, 0.0, TOLERANCE, 0.0)
    bound = np.exp(np.minimum(eps * d[pi, pj], 700.0))[:, None] * q[pj]  # magnitudes only (no inf·0 = NaN)
    excess = q[pi] - bound
    bad = entry_breaches(q[pi], q[pj], eps * d[pi, pj])
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.where(q[pi] > 0, np.log(q[pi]) - np.log(q[pj]), -np.inf)
        pos = d[pi, pj] > 0
        worst = float(np.max(lr[pos].max(axis=1) / (eps * d[pi, pj][pos]))) if pos.any() else 0.0
    pos_excess = np.maximum(excess, 0.0)
    return ViolationReport(domain, int(bad.sum()), int(bad.size), float(pos_excess.mean()),
                           float(pos_excess.max()), max(worst, 0.0) if np.isfinite(worst) else worst, TOLERANCE, 0.0)


def cone_repair(q: NDArray[np.float64], expo: NDArray[np.float64], near: NDArray[np.bool_],
                weighted_cost: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
    """Raise entries so every enforced ratio holds exactly, then make the rows sum to 1 inside the cone.

    With E* the shortest-path closure of the exponents ε·d over the neighbour graph, q'_sy = max_s' q_s'y e^{−E*_s's}
    satisfies q'_s'y ≤ e^{ε d_s's} q'_sy on every neighbouring pair (E* obeys the triangle inequality even when
    the augmented distance does not). Solver tolerances leave only tiny gaps, so little mass is added. Dividing
    each row by its own sum would break a pair by the ratio of the two sums, so the rows are fixed by
    ``cone.make_row_stochastic`` (one shrink factor, each row's deficit on the cheapest output under
    ``weighted_cost``, prior × cost). Returns the repaired rows and the largest row-sum excess before the fix.
    """
    closure = exponent_closure(np.where(near, expo, np.inf))
    with np.errstate(divide="ignore"):
        logq = np.log(q)
    lifted = np.exp(lipschitz_repair(logq, closure)[0])  # (S, M): max over sources s' (chunked), capped at 1
    sums = lifted.sum(axis=1)
    fixed, _facts = make_row_stochastic(lifted, closure, weighted_cost)
    return fixed, float(np.max(sums) - 1.0)


def solve_reduced_lp(prior: NDArray[np.float64], cost: NDArray[np.float64], d_aug: NDArray[np.float64],
                     near: NDArray[np.bool_], keep: NDArray[np.bool_], eps: float, *, method: str = "ipm",
                     time_limit: float | None = None,
                     progress: Progress = no_progress) -> tuple[NDArray[np.float64] | None, dict[str, Any]]:
    """Solve Eqs. 30–33 over the kept pairs (``keep`` ⊆ ``near``, see ``augmented.prune_implied``).

    Returns (Q (S, M) or None, facts: status, objective (m), solve time, LP size, pairs, repair mass).
    """
    weights = np.where(prior > 0, prior, PLACEHOLDER_WEIGHT)
    pi, pj = np.nonzero(keep)
    q, out = solve_mdp_lp(weights, cost, pi.astype(np.int64), pj.astype(np.int64), eps * d_aug[pi, pj],
                          method=method, time_limit=time_limit, progress=progress)
    facts: dict[str, Any] = {"status": out.status, "solve_s": out.solve_s, "lp_size": out.size,
                             "pairs_enforced": int(near.sum()), "pairs_in_lp": len(pi), "message": out.message}
    if q is None:
        return None, facts
    q, added = cone_repair(q, eps * d_aug, near, prior[:, None] * cost)
    facts["repair_mass_added"] = added
    facts["objective_m"] = float(np.sum(prior[:, None] * cost * q))
    return q, facts
