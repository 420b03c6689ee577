"""What a DISTA-LP result reports beside Z (``Result.diagnostics``), as named fields: the budget and its audit, the
claim measured inside the neighbourhoods and end to end, each user's upload and report, memory, and, in the
private-cell mode, the cells."""

from __future__ import annotations

from typing import Any, TypedDict, cast

import numpy as np

from ..contract import CountCheck, Result


class EndToEnd(TypedDict):
    """The whole release x_m → y_m checked over ordered pairs of the users' true records (not claimed: users whose
    candidate sets differ break it by construction)."""

    pairs: int
    breached: int
    worst_factor: float
    pairs_with_different_candidates: int
    eps: float
    definition: str


class DistaUsers(TypedDict):
    """The users' true records and the outputs they reported (indices into X)."""

    secret: np.ndarray
    report_x: np.ndarray


class DistaDiagnostics(TypedDict, total=False):
    """Everything a DISTA-LP result reports. The paper's pipeline fills the budget, audit, claim and per-user
    fields; the private-cell mode (ours) fills ``violations_claim``, ``cells``, ``eps_cell``, ``eps_pt``,
    ``cell_pick`` and ``upload``; a stop before any point fills ``budget`` only."""

    budget: dict[str, Any]
    budget_split: dict[str, dict[str, float]]
    eps_pt: float
    delta_total: float
    audit: dict[str, dict[str, Any]]
    audit_pl: dict[str, Any]
    naive_upload: Any
    audit_samples: int
    prop2_confidence: float
    prop2_samples_needed: int
    delta_t_upper_95: dict[str, float]
    gamma_km: float
    tau_km: float
    per_user: list[dict[str, Any]]
    mean: dict[str, Any]
    loss_users_m: float
    violations_claim: CountCheck  # the claim: ordered pairs of N_m × Y_m under the true metric (or the cell release)
    violations_enforced: CountCheck  # against the tightened distances the LP enforced
    memory_peak_mb: float
    memory_rss_peak_mb: float
    memory_note: str
    benders_history: list[dict[str, Any]]
    row_source: np.ndarray
    users_record: np.ndarray
    users_hood: np.ndarray
    users_cand: np.ndarray
    users_report: np.ndarray
    users: DistaUsers
    wall_s: float
    end_to_end: EndToEnd
    erased_users: dict[str, int]
    delta_vs_paper: dict[str, Any]
    feasible_Z: np.ndarray | None
    feasible_objective_m: float
    cells: list[dict[str, Any]]
    eps_cell: float
    cell_pick: np.ndarray
    upload: str


def dista_diagnostics(result: Result) -> DistaDiagnostics:
    """The diagnostics of a DISTA-LP result, with their fields named (``ValueError`` for another mechanism's)."""
    if result.mechanism != "dista-lp":
        raise ValueError(f"{result.mechanism} is not DISTA-LP: its diagnostics have other fields")
    # written as DistaDiagnostics by ``mdpviz.dista.mechanism``; a stored result decodes to the same keys
    return cast(DistaDiagnostics, result.diagnostics)
