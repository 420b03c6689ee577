"""What a PAnDA result reports beside Z (``Result.diagnostics``), as named fields: the anchors, the AnPO solve, the
relaxed bound, the measured V_pair, V_cf and V_pure, the three losses and each user's release."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict, cast

import numpy as np

from ..contract import CountCheck, PairCheck, Result


class AnpoFacts(TypedDict):
    """``diagnostics["lp"]``: the AnPO solve and the pairs it clipped or left out."""

    anchors: int
    rows_after_merge: int
    pairs: int
    rounds: int
    size: dict[str, int]
    status: str
    solver: str  # the solver asked for, or "monolithic (colgen failed: …)"
    method: str
    repair_mass_added: float
    clipped_pairs: int  # ordered anchor pairs whose exponent clipped to 0
    pair_radius_km: float
    unconstrained_pairs: int  # ordered anchor pairs at least pair_radius_km apart
    clipped_fraction: float
    message: str


class RelaxedBound(TypedDict):
    """``diagnostics["relaxed"]``: the relaxed AnPO (plain ε·d exponents), a lower bound on AnPO (Prop. 10)."""

    solved: bool
    message: NotRequired[str]  # why it gave no bound, when it did not
    status: NotRequired[str]
    objective_m: NotRequired[float | None]
    bound_m: NotRequired[float]  # the larger of the solver's bound and the no-constraint bound
    solver_bound_m: NotRequired[float | None]
    no_constraint_bound_m: NotRequired[float]
    bound_source: NotRequired[str]  # "solver" or "no-constraint"
    size: NotRequired[dict[str, int]]
    solver: NotRequired[str]
    ratio: NotRequired[float | None]  # AnPO objective / bound_m
    note: NotRequired[str]


class PandaCheck(CountCheck):
    """V_pair, V_pure or V_cf: a :class:`~mdpviz.contract.CountCheck` with what it left out (V_pair and V_pure: user
    pairs with the same secret, users without a surrogate) or how it sampled (V_cf: alternatives per user)."""

    excluded_same_secret: NotRequired[int]
    users_without_surrogate: NotRequired[int]
    alternatives_per_user: NotRequired[int]
    sampled: NotRequired[bool]


class PandaViolations(TypedDict):
    """``diagnostics["violations"]``: the release measured between users (V_pair against PAnDA's own (ε, δ)-PmDP
    exponent, V_pure against plain ε·d), against alternative secrets (V_cf), and the LP's own pairs (enforced)."""

    V_pair: PandaCheck
    V_cf: PandaCheck
    V_pure: PandaCheck
    enforced: PairCheck


class PandaUtility(TypedDict):
    """``diagnostics["utility"]``: the three losses PAnDA can be scored by (metres), and what each measures."""

    user_level_m: float | None
    anchor_level_m: float
    anpo_objective_m: float | None
    labels: dict[str, str]


class PandaUsers(TypedDict):
    """``diagnostics["users"]``: per user, the secret, the anchor set, the surrogate, the report and its row
    (−1: an empty anchor set, no output)."""

    secret: np.ndarray
    anchor_sets: list[np.ndarray]
    surrogate: np.ndarray
    surrogate_km: np.ndarray
    report_y: np.ndarray  # index into Y
    report_x: np.ndarray  # index into X of the reported output
    rows: np.ndarray  # (N, M): each user's reporting distribution
    note: str


class PandaDiagnostics(TypedDict, total=False):
    """Everything a PAnDA result reports; a stop before the end fills only what was done (``variant`` always)."""

    variant: str
    decay: str
    gamma_km: float
    d_max_km: float
    floor: str
    floor_value: float
    anchors: np.ndarray  # the union A, indices into X
    anchor_fraction: float
    expected_anchor_set_size: float
    mean_anchor_set_size: float
    empty_rule: str
    empty_redraws: int
    margins: dict[str, Any]  # counts of the ξ̂ computation and P_S
    lp: AnpoFacts
    resample_extra_cost_nats: float
    eps_bar: dict[str, Any]
    xi_hat: dict[str, Any]
    budget_split: dict[str, Any]
    relaxed: RelaxedBound
    violations: PandaViolations
    utility: PandaUtility
    users: PandaUsers
    feasible_Z: np.ndarray  # set aside when a stop came after AnPO was solved
    feasible_objective_m: float | None


def panda_diagnostics(result: Result) -> PandaDiagnostics:
    """The diagnostics of a PAnDA result, with their fields named (``ValueError`` for another mechanism's)."""
    if not result.mechanism.startswith("panda-"):
        raise ValueError(f"{result.mechanism} is not PAnDA: its diagnostics have other fields")
    # written as PandaDiagnostics by ``mdpviz.panda.mechanism``; a stored result decodes to the same keys
    return cast(PandaDiagnostics, result.diagnostics)
