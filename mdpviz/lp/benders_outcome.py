"""What a Benders run (:mod:`mdpviz.lp.benders`) hands back: its outcome and the diagnostics beside its point."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np
from numpy.typing import NDArray


class BendersDiagnostics(TypedDict, total=False):
    """What a Benders run reports beside its point: iterations and their history, the partition, the master's
    pairs and cuts, and the options it ran with (a stop during the set-up reports ``iterations`` = 0 only)."""

    iterations: int
    history: list[dict[str, float]]  # per iteration: seconds, lower and upper bound, cuts
    subsets: int
    subset_sizes: list[int]
    internal_sizes: list[int]
    boundary_count: int  # records on some subset's boundary (in the master)
    boundary_per_subset: list[int]
    master_pairs: int
    lp_pairs_between_boundary: int
    initial_cuts: int
    lp_pairs_kept_in_master: int
    cut_rule: str
    master_pair_rows_added: int
    master_component_sizes: Any
    optimality_cuts: int
    feasibility_cuts: int
    row_sum_cuts: int
    gap_m: float
    cuts_dropped: int
    stabilise: float
    floor: float
    floor_cost_m: float


@dataclass
class BendersOutcome:
    """Result of :func:`solve_benders`.

    ``Z`` is set only when the gap closed (status ``optimal`` or ``gap reached``); ``feasible_Z`` always holds the
    best feasible point found (None when no iteration gave one). Both are before the privacy repair.
    """

    Z: NDArray[np.float64] | None
    status: str
    upper: float | None
    lower: float | None
    feasible_Z: NDArray[np.float64] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    size: dict[str, int] = field(default_factory=dict)
    diagnostics: BendersDiagnostics = field(default_factory=lambda: BendersDiagnostics())
    message: str = ""
