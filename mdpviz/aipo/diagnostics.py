"""What an AIPO result reports beside Z (``Result.diagnostics``), as named fields: the budget search, the lattice,
the bounds and, for the relaxed ablation, its own claim measured."""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from ..contract import PairCheck


class BudgetPoint(TypedDict):
    """One candidate split (ε₁, ε₂) of the budget search and what its anchor LP gave (loss None: no solution)."""

    eps1: float
    eps2: float
    loss_m: float | None
    status: str


class AipoDiagnostics(TypedDict, total=False):
    """Everything an AIPO result reports; a stop before the end fills ``budget_curve``, ``lattice``, ``anchors``
    and, when some split was solved, ``feasible_Z`` with its split."""

    budget_curve: list[BudgetPoint]
    lattice: dict[str, Any]  # nx, ny, step_km
    anchors: int
    eps1: float  # the chosen split (km⁻¹)
    eps2: float
    anchor_latlon: np.ndarray
    lower_bound_m: float | None  # the bound shown: the paper's universal bound, or the floor when that is higher
    universal_lower_bound_m: float | None
    dropped_outputs: int
    claim_check: PairCheck  # AIPO-R's own claim: anchor neighbours, before normalisation
    feasible_Z: np.ndarray
    feasible_objective_m: float
