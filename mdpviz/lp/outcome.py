"""What the exact LP engines report: :class:`StructuredOutcome` (:func:`mdpviz.lp.structured.solve_structured` and
:func:`mdpviz.lp.conic.solve_conic`) and :class:`RowsFacts` (an LP over some rows, as the LP mechanisms and
:func:`mdpviz.lp.neighbours.solve_by_components` pass it on)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np
from numpy.typing import NDArray

from .cone import RepairFacts, RowFix


class EngineDiagnostics(TypedDict, total=False):
    """What the exact LP engines report beside Z (``Result.diagnostics`` of ``lp`` and ``lp-ca``), by engine:
    the row-and-column engine (``engine`` = ``rows``), the conic engine (``conic``) and the monolithic LP, the
    row fix-up of the returned point and, on a stop, the point set aside.
    """

    engine: str  # "rows" or "conic"
    iterations: int
    history: list[Any]  # per round: seconds, best objective, best bound, LP variables, LP pair rows
    gap: float  # certified relative gap of the returned point
    bound_from: str  # where the certified bound came from, in words
    point_from: str  # where the returned point came from, in words
    # the row-and-column engine
    priced_rounds: int
    pair_cap: float  # largest exponent kept on a pair row
    lp_retries: int
    held_entries: int  # entries solved as held by their cell's row (that pair row a bound), 0 once rebuilt unheld
    lp_rebuilt: bool  # HiGHS failed on the held form and the LP was rebuilt with every pair row a row
    cold_rounds: int  # rounds solved cold by interior point because they grew a large LP by a tenth or more
    pooled_rows: int  # pair rows moved out of HiGHS while slack (``RestrictedLP.pool_slack_rows``), counted each time
    pool_returns: int  # pooled rows taken back because a solution broke them
    trust_radius: float  # the trust box's radius around the best point (0: no box)
    trust_lifted: int  # the round after which the box was lifted (nothing to add, or a boxed solve failed); 0: never
    lp_tolerance: float  # HiGHS's feasibility tolerance at the end (tightened when nothing was left to add)
    lp_rounds: list[tuple[float, int, int, int, int]]  # per round: LP seconds, simplex and interior-point
    # iterations, pooled rows taken back, pair rows held as rows after it
    pricing_retries: int
    pricing_failures: int
    # the conic engine
    atoms_final: NDArray[np.float64]
    atom_owner_final: NDArray[np.int64]
    pricing_pairs: list[NDArray[np.int64]]
    outputs_used: int
    box_dropped: bool
    row_fix: RowFix | RepairFacts  # how the point's rows were made to sum to 1 (a stop's cells point: its repair)
    # the monolithic LP and its repair into the cone
    pairs: int
    cone_repair: RepairFacts
    # the mechanism's own additions
    components: int  # neighbour scope: the components solved one by one
    all_pairs: dict[str, Any]  # neighbour scope: the point measured over all pairs of X
    feasible_Z: NDArray[np.float64]  # a stop: the feasible, exactly private point found, not the optimum
    feasible_objective_m: float | None
    cells: int  # lp-ca
    representatives: NDArray[np.int64]
    cell_of: NDArray[np.int64]


@dataclass
class StructuredOutcome:
    """Result of :func:`solve_structured`.

    Attributes:
        Z: (n, m) row-stochastic, every column exactly in the cone (a stop before any LP returns a cells' point,
            or the best constant mechanism).
        status: ``optimal`` (certified gap ≤ tol); otherwise ``time limit``, ``iteration limit``, ``stalled`` or
            ``solver error (…)``, and Z is a feasible, exactly private point that is not certified optimal.
        objective: Σ W·Z of the returned Z (W's unit, e.g. metres).
        bound: certified lower bound on the optimum (same unit): the no-privacy floor before the first LP.
        gap: (objective − bound) / objective, the certified relative gap of the returned Z.
        history: per round (seconds since start, best objective, best bound, LP variables, LP pair rows).
    """

    Z: NDArray[np.float64] | None
    status: str
    objective: float | None
    bound: float | None
    timings: dict[str, float] = field(default_factory=dict)
    size: dict[str, int] = field(default_factory=dict)
    diagnostics: EngineDiagnostics = field(default_factory=lambda: EngineDiagnostics())
    message: str = ""
    gap: float | None = None


@dataclass(frozen=True)
class RowsFacts:
    """What a solve of the optimal rows of an mDP LP found, beside its Z (or None when it has no mechanism).

    Attributes:
        status: ``optimal``, or the stop (``time limit``, ``iteration limit``, ``stalled``, a solver error).
        objective: Σ W·Z of the returned Z (W's unit, e.g. metres); None without a Z.
        bound: a certified lower bound on the optimum (same unit), or None where the engine certifies none.
        size: LP sizes (variables, rows, ...), summed over components.
        message: what happened, in words (empty when nothing needs saying).
        diagnostics: the engine's own facts (history, sizes, labelled feasible points).
    """

    status: str
    objective: float | None = None
    bound: float | None = None
    size: dict[str, int] = field(default_factory=dict)
    message: str = ""
    diagnostics: EngineDiagnostics = field(default_factory=lambda: EngineDiagnostics())
