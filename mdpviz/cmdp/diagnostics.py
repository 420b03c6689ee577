"""What a C-mDP result reports beside Z (``Result.diagnostics``), as named fields: the mechanism proper Q over
augmented secrets, its measured checks, the losses, the blankets and the corpus they came from."""

from __future__ import annotations

from typing import Any, TypedDict, cast

import numpy as np

from ..contract import CountCheck, Result


class CmdpCheck(CountCheck):
    """Violations of q_sy ≤ e^{ε·d_ss'} q_s'y over neighbouring ordered pairs and outputs (``violated`` and
    ``checked`` count (pair, y) triples), with how far the worst ones go.

    Attributes
    ----------
    domain
        The secret domain the rows are over.
    mean_excess, max_excess
        Of (q_sy − e^{ε·d} q_s'y)⁺ over the violated triples.
    worst_log_ratio
        max ln(q_sy / q_s'y) / (ε·d) over pairs with d > 0 (≤ 1: within the budget).
    rtol, atol
        The check's relative and absolute slack.
    """

    domain: str
    mean_excess: float
    max_excess: float
    worst_log_ratio: float
    rtol: float
    atol: float


class CmdpDiagnostics(TypedDict, total=False):
    """Everything a C-mDP result reports; Q is the mechanism, Z its location marginal."""

    context: str
    blankets: str
    secret_domain: str
    rows: str
    caveat: str
    secret_station: np.ndarray
    secret_size: np.ndarray
    secret_prior: np.ndarray
    secret_context: list[str]
    Q: np.ndarray | None  # (S, M): one row per augmented secret (location, blanket)
    n_secrets: int
    loss_m: float | None
    floor_m: float | None
    privacy_cost_m: float | None
    floor_without_context_m: float
    blanket_hist_predicted: dict[str, int]
    blanket_hist: dict[str, int]
    violations_enforced: CmdpCheck | None  # over the augmented secrets: the claim
    violations_location: CmdpCheck | None  # Z over locations (not claimed)
    groups: list[dict[str, Any]]
    pooled_blanket: Any
    pooled_p: Any
    classifier: dict[str, dict[str, float]] | None
    corpus: dict[str, Any]
    lp: dict[str, Any]
    examples: list[dict[str, Any]]
    heldout_loss_m: float
    heldout_skipped: str
    blanket_hist_oracle: dict[str, int]
    blanket_agreement_with_oracle: float


def cmdp_diagnostics(result: Result) -> CmdpDiagnostics:
    """The diagnostics of a C-mDP result, with their fields named (``ValueError`` for another mechanism's)."""
    if not result.mechanism.startswith("cmdp"):
        raise ValueError(f"{result.mechanism} is not C-mDP: its diagnostics have other fields")
    # written as CmdpDiagnostics by ``mdpviz.cmdp.pipeline.diagnostics``; a stored result decodes to the same keys
    return cast(CmdpDiagnostics, result.diagnostics)
