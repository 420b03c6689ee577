"""DISTA-LP with a private cell in place of the surrogate uploads (ours; spec 001 §11's sound direction).

The paper's idea is kept: users never send their data in the clear, the server solves one LP per neighbourhood,
and ε is split between what a user sends and the report. What changes is the upload, the measured cause of
DISTA-LP's failure (noised surrogates that the audit's noise erases, and candidate sets that depend on the true
record):

- Public: X, Y, the prior, the costs, and M cells, each named by a centre secret (seeded k-means).
- A user's device picks cell m with probability ∝ exp(−ε_c·d(x, centre_m)/2): the exponential mechanism over the
  cell centres in the problem's metric, ε_c-mDP for every pair (ε_c = ``cell_share``·ε). It sends m, nothing else.
- For each cell the server solves, from public data only, the exact LP (``lp``'s structured engine) over every
  secret and the cell's candidate outputs Y_m (the |Y_m| outputs nearest the centre), at ε_pt = ε − ε_c, with the
  prior weighted by each secret's chance of picking m. The user reports y from its own row of Z_m.
- The release (m, y) has P(m, y | x) = P(m | x)·Z_m[x, y], so it is ε-mDP over all pairs by composition;
  ``run`` checks that joint matrix exactly, and the K × |Y| marginal is what the pages draw.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.cluster.vq import kmeans2

from ..contract import CountCheck
from ..deadline import OutOfTime
from ..metrics import violations
from ..problem import Problem
from ..progress import Progress
from ..rows import exp_rows

WEIGHT_FLOOR = 1e-9  # a cell's weights p_x·P(m | x) below this share of its largest are raised to it (scaling only)


@dataclass
class CellRun:
    """What a private-cell run produced: the marginal Z (K × |Y|), the joint release matrix (K × Σ|Y_m|) and the
    facts of each cell's LP."""

    Z: NDArray[np.float64]
    joint: NDArray[np.float64]
    eps_cell: float
    eps_pt: float
    centres: NDArray[np.int64]
    pick: NDArray[np.float64]
    cells: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def all_optimal(self) -> bool:
        """Whether every cell's LP was solved to its certified gap."""
        return all(c["status"] == "optimal" for c in self.cells)


def cell_choice(problem: Problem, n_cells: int, eps_cell: float,
                seed: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """(cell centres (M,) as secret indices, P(m | x) (K, M)). The centres are the secrets nearest a seeded k-means
    of the planar coordinates; the cell is drawn by the exponential mechanism at ``eps_cell`` in the problem's own
    metric (weights exp(−ε_c·d(x, centre)/2): by the triangle inequality every pair of secrets is ε_c-mDP)."""
    xy = problem.xy_km
    means, _ = kmeans2(xy, min(n_cells, len(xy)), seed=seed, minit="++")
    centres = np.unique(np.linalg.norm(xy[:, None, :] - means[None, :, :], axis=2).argmin(axis=0))
    return centres, exp_rows(-0.5 * eps_cell * problem.d[:, centres])


def _cell_problem(problem: Problem, weight: NDArray[np.float64], cand: NDArray[np.int64]) -> Problem:
    """The public LP of one cell: every secret, the cell's candidate outputs, the prior times P(m | x)."""
    w = np.maximum(weight, WEIGHT_FLOOR * weight.max())
    return dataclasses.replace(problem, p=w / w.sum(), y_index=problem.y_index[cand], c=problem.c[:, cand],
                               timings={})


def _em_rows(problem: Problem, cand: NDArray[np.int64], eps: float) -> NDArray[np.float64]:
    """The exponential mechanism over the cell's candidates at ``eps`` (the fallback when a cell's LP has no point)."""
    return exp_rows(-0.5 * eps * problem.d_xy[:, cand])


def run(problem: Problem, eps: float, n_cells: int, cell_share: float, candidates: int, seed: int,
        solve_lp: Any, progress: Progress, time_limit: float | None) -> CellRun:
    """Solve every cell's LP and assemble the release. ``solve_lp(problem, eps, time_limit)`` returns a Result
    (DISTA-LP passes the exact LP of :func:`mdpviz.lp.optimal.optimal_rows`).

    Each cell's LP gets an equal share of the time left. A cell whose LP stops with a kept feasible point uses it
    (exactly private, not optimal); one with no point falls back to the exponential mechanism over its candidates
    at ε_pt; ``cells`` says which.

    Raises:
        OutOfTime: the time limit passed before the first cell's LP could start.
    """
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + float(time_limit)
    eps_cell, eps_pt = cell_share * eps, (1.0 - cell_share) * eps
    centres, pick = cell_choice(problem, n_cells, eps_cell, seed)
    m_out = problem.m if candidates <= 0 else min(candidates, problem.m)
    Z = np.zeros((problem.k, problem.m))
    blocks, facts = [], []
    for m in range(len(centres)):
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0 and m == 0:
            raise OutOfTime("choosing the cells")
        progress(f"cell {m + 1}/{len(centres)}: its LP at ε_pt = {eps_pt:.3g} km⁻¹", m / len(centres))
        cand = np.sort(np.argsort(problem.d_xy[centres[m]], kind="stable")[:m_out])
        share = None if left is None else max(left / (len(centres) - m), 0.0)
        res = solve_lp(_cell_problem(problem, problem.p * pick[:, m], cand), eps_pt, share)
        block = res.Z if res.Z is not None else res.diagnostics.get("feasible_Z")
        source = "LP optimum" if res.Z is not None and res.status == "optimal" else (
            "LP's kept feasible point" if block is not None else "exponential mechanism (the LP had no point)")
        if block is None:
            block = _em_rows(problem, cand, eps_pt)
        facts.append({"cell": m, "status": res.status, "rows_from": source, "outputs": int(len(cand)),
                      "time_s": float(res.timings.get("total_s", sum(res.timings.values())))})
        joint = pick[:, m:m + 1] * block
        blocks.append(joint)
        Z[:, cand] += joint
    return CellRun(Z, np.hstack(blocks), eps_cell, eps_pt, centres, pick, facts,
                   {"total_s": time.perf_counter() - t0})


def joint_check(problem: Problem, out: CellRun, eps: float) -> CountCheck:
    """The claim measured: ε-mDP of the release (m, y) over every ordered pair of secrets, exactly."""
    v = violations(problem, out.joint, eps)
    return {"violated": v.violated_pairs, "checked": v.checked_pairs,
            "ratio": v.violated_pairs / v.checked_pairs if v.checked_pairs else 0.0, "eps": eps,
            "worst_factor": v.worst_factor, "unit": "pairs (x, x′) over every (cell, output) released",
            "definition": "P(m, y | x) = P(m | x)·Z_m[x, y] against every other secret's, at ε (this is the claim)"}
