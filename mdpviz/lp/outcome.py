"""What the exact structured LP engines return (:func:`mdpviz.lp.structured.solve_structured` and
:func:`mdpviz.lp.conic.solve_conic`)."""

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
