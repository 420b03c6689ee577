"""What the exact LP engines report: :class:`StructuredOutcome` (:func:`mdpviz.lp.structured.solve_structured` and
:func:`mdpviz.lp.conic.solve_conic`) and :class:`RowsFacts` (an LP over some rows, as the LP mechanisms and
:func:`mdpviz.lp.neighbours.solve_by_components` pass it on)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray


@dataclass
class StructuredOutcome:
    """Result of :func:`solve_structured`.

    Attributes:
        Z: (n, m) row-stochastic, every column exactly in the cone (a stop before any LP returns the cells'
            starting point).
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
    diagnostics: dict[str, Any] = field(default_factory=dict)
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
    diagnostics: dict[str, Any] = field(default_factory=dict)
