"""DISTA-LP budget accounting: ε_dx + ε_dy + ε_cy + ε_pt ≤ ε (Eq. 20) and the PmDP δ (Prop. 1, Prop. 2)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ParameterError

UPLOADS = ("dx", "dy", "cy")
PAPER_DELTA = 1e-4  # the paper's audit threshold δ (spec 001 §1.5)


@dataclass(frozen=True)
class Budget:
    """The split of the end-to-end budget, km⁻¹.

    Attributes:
        eps: the overall ε.
        eps_t: audited loss of each upload (dx, dy, cy).
        delta_t: audited violation probability of each upload (share of audit samples whose loss exceeds ε_t).
    """

    eps: float
    eps_t: dict[str, float]
    delta_t: dict[str, float]
    nominal_pt: float | None = None

    @property
    def eps_upload(self) -> float:
        """ε spent by the three uploads together, km⁻¹."""
        return float(sum(self.eps_t.values()))

    @property
    def eps_pt(self) -> float:
        """ε_pt = ε − (ε_dx + ε_dy + ε_cy): what the final perturbation may spend (Eq. 20, not the §V typo).

        In the authors' recipe (``nominal_pt`` set) the LP gets that nominal share instead, whatever the audit
        found; ``eps_spent`` then says what the release really spends.
        """
        return self.eps - self.eps_upload if self.nominal_pt is None else self.nominal_pt

    @property
    def eps_spent(self) -> float:
        """The end-to-end budget really spent: audited uploads plus ε_pt, km⁻¹ (≤ ε unless overspent)."""
        return self.eps_upload + self.eps_pt

    @property
    def overspent(self) -> bool:
        """True when the audited spending exceeds ε (beyond rounding)."""
        return self.eps_spent > self.eps * (1 + 1e-9)

    @property
    def delta_total(self) -> float:
        """δ of the composition (Prop. 1): Σ_t δ_t; the final perturbation is exact (δ_pt = 0)."""
        return float(sum(self.delta_t.values()))

    def as_dict(self) -> dict[str, float]:
        """The budget as plain numbers, with the paper's δ for comparison."""
        out = {"eps": self.eps, **{f"eps_{t}": v for t, v in self.eps_t.items()}, "eps_pt": self.eps_pt,
               "eps_spent": self.eps_spent, **{f"delta_{t}": v for t, v in self.delta_t.items()},
               "delta_total": self.delta_total, "delta_paper": PAPER_DELTA}
        return {k: float(v) for k, v in out.items()}


def account(eps: float, eps_t: dict[str, float], delta_t: dict[str, float], min_eps_pt: float = 1e-3,
            nominal_pt: float | None = None) -> Budget:
    """Compose the uploads' audited losses; raise ParameterError when nothing is left for the final report.

    With ``nominal_pt`` (the authors' recipe: the LP gets a fixed share of ε) nothing is refused: the Budget
    reports what the audit found beside it (``eps_spent``, ``overspent``).

    Raises:
        ParameterError: when ε − Σ ε_t < ``min_eps_pt`` (km⁻¹), naming each ε_t and what to change; or when
            Σ δ_t ≥ 1 (the composition is void).
    """
    budget = Budget(eps, dict(eps_t), dict(delta_t), nominal_pt)
    if nominal_pt is not None:
        return budget
    if not math.isfinite(budget.eps_upload) or budget.eps_pt < min_eps_pt:
        parts = " + ".join(f"ε_{t} {v:.3g}" for t, v in budget.eps_t.items())
        msg = (f"The audited uploads spend {parts} = {budget.eps_upload:.3g} km⁻¹ of ε = {eps:.3g} km⁻¹, leaving "
               f"ε_pt = {budget.eps_pt:.3g} km⁻¹ for the final report (needs ≥ {min_eps_pt:g}). Raise ε, raise the "
               "upload noise (`noise_mult`), or let the auditor fit the noise to a share of ε "
               "(`budget_mode` = 'target' with `upload_share` < 1).")
        raise ParameterError(msg)
    if budget.delta_total >= 1.0:
        parts = " + ".join(f"δ_{t} {v:.3g}" for t, v in budget.delta_t.items())
        msg = (f"The audited uploads have {parts} = {budget.delta_total:.3g} ≥ 1: their losses exceed ε_t so often "
               "that the PmDP composition (Prop. 1) guarantees nothing. Raise the upload noise (`noise_mult`), use "
               "`budget_mode` = 'target' (which caps each δ_t by `delta_max`), or use two-sided noise.")
        raise ParameterError(msg)
    return budget


def prop2_confidence(samples: int, delta: float, xi: float = 0.0) -> float:
    """Prop. 2's confidence 1 − 2·exp(−2·S·(1−ξ)²·δ²) that the true violation probability is ≤ δ.

    Negative values mean the bound says nothing (the paper's S = 100, δ = 10⁻⁴ gives ≈ −1).

    >>> round(prop2_confidence(100, 1e-4), 3)
    -1.0
    """
    return 1.0 - 2.0 * math.exp(-2.0 * samples * (1.0 - xi) ** 2 * delta ** 2)


def prop2_samples_needed(delta: float, xi: float = 0.0, beta: float = 0.05) -> int:
    """Samples S for Prop. 2 to certify p ≤ δ at confidence 1 − β: ln(2/β) / (2(1−ξ)²δ²).

    >>> prop2_samples_needed(1e-4)
    184443973
    """
    return math.ceil(math.log(2.0 / beta) / (2.0 * (1.0 - xi) ** 2 * delta ** 2))
