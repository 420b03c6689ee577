"""What a loss is read against: the no-privacy floor and the exact LP's optimum.

The **floor** is the loss with no privacy at all: every secret reports its cheapest output, Σ_x p_x min_y c(x, y)
(metres). No mechanism, private or not, goes below it, and on a sparse set of outputs it is most of the loss: on
Rome, K = 500, |Y| = 100, distance cost, the floor is about 1.26 km of a loss of 1.28 km (LP) or 1.43 km (EM).
The **privacy cost** of a mechanism is its loss minus the floor: what privacy costs the user. The **exact LP**
(ε-mDP over all pairs of X in the problem's metric, the mechanism of least loss with that claim) has the least
privacy cost of all, so a mechanism's privacy cost is also stated as a share of the LP's (LP = 100 %).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .contract import Result
from .explain import format_m
from .mechanisms import get_mechanism
from .metrics import floor_m, utility_loss_m
from .problem import Problem
from .progress import Progress, no_progress
from .solve import cached_result, solve


@dataclass(frozen=True)
class Reference:
    """A loss's yardsticks on one problem at one ε.

    Attributes:
        floor_m: the no-privacy floor (m).
        lp_m: the exact LP's optimal loss (m), None when it was not solved to optimality in the time allowed.
        lp_bound_m: a certified lower bound on the LP's loss (m) when it stopped early, else None.
        lp_status: the LP solve's status (``optimal``, ``time limit``, ``not solved`` ...).
    """

    floor_m: float
    lp_m: float | None = None
    lp_bound_m: float | None = None
    lp_status: str = "not solved"

    def privacy_cost_m(self, loss_m: float) -> float:
        """loss − floor, metres."""
        return loss_m - self.floor_m

    def share_of_lp(self, loss_m: float) -> float | None:
        """The privacy cost as a fraction of the LP's (1.0 = the LP's own); None without an LP optimum, or when
        the LP pays (almost) nothing for privacy (below 1 mm)."""
        if self.lp_m is None or self.lp_m - self.floor_m < 1e-3:
            return None
        return (loss_m - self.floor_m) / (self.lp_m - self.floor_m)

    def words(self, loss_m: float) -> str:
        """One line: ``privacy cost 162 m above the no-privacy floor of 1,263 m; 10.8× the exact LP's (15 m)``."""
        cost = self.privacy_cost_m(loss_m)
        text = f"privacy cost {format_m(cost)} above the no-privacy floor of {format_m(self.floor_m)}"
        share = self.share_of_lp(loss_m)
        if share is not None and self.lp_m is not None:
            lp_cost = format_m(self.lp_m - self.floor_m)
            text += (f"; {share:.0%} of the exact LP's ({lp_cost})" if share < 10 else
                     f"; {share:.3g}× the exact LP's ({lp_cost})")
        elif self.lp_bound_m is not None:
            text += f"; the exact LP's loss is at least {format_m(self.lp_bound_m)} ({self.lp_status})"
        return text


def own_model(result: Result) -> dict[str, float] | None:
    """A mechanism's own loss model, when it scores itself with another cost than the problem's: C-mDP's
    next-location travel loss of Eq. 34 over (location, context) secrets, its floor under that model and the
    privacy cost (metres); None for every other mechanism (the problem's cost is then its own)."""
    d = result.diagnostics
    loss, floor = d.get("loss_m"), d.get("floor_m")
    if not isinstance(loss, (int, float)) or not isinstance(floor, (int, float)) or "n_secrets" not in d:
        return None
    return {"utility_loss_m": float(loss), "floor_m": float(floor), "privacy_cost_m": float(loss) - float(floor)}


def own_model_words(result: Result) -> str | None:
    """One line for :func:`own_model`, saying that the problem's cost scores only the location marginal."""
    own = own_model(result)
    if own is None:
        return None
    return (f"under C-mDP's own model (Eq. 34: the cost of the next location, over (location, context) secrets): "
            f"utility loss {format_m(own['utility_loss_m'])}, no-privacy floor {format_m(own['floor_m'])}, privacy "
            f"cost {format_m(own['privacy_cost_m'])}. The problem's cost scores only the location marginal.")


def reference(problem: Problem, eps: float, *, time_limit: float | None = None, use_cache: bool = True,
              solve_lp: bool = True, progress: Progress = no_progress) -> Reference:
    """The floor, and (with ``solve_lp``) the exact LP at ``eps`` solved through the cached solver layer within
    ``time_limit`` seconds (reported to ``progress``): its optimum, or its certified lower bound when it stops
    early."""
    floor = floor_m(problem)
    if not solve_lp or not math.isfinite(eps):
        return Reference(floor)
    return _with_lp(problem, floor, solve(problem, "lp", {"eps": float(eps)}, time_limit=time_limit,
                                          use_cache=use_cache, progress=progress))


def cached_reference(problem: Problem, eps: float) -> Reference:
    """The floor, and the exact LP's optimum only if it is already in the solve cache (never solves)."""
    floor = floor_m(problem)
    r = cached_result(problem, "lp", {"eps": float(eps)})
    return Reference(floor) if r is None else _with_lp(problem, floor, r)


def with_own_lp(ref: Reference, problem: Problem, result: Result) -> Reference:
    """``ref``, or, when it holds nothing of the exact LP and ``result`` is the exact LP's own solve at its default
    settings (a stop's kept point, or a solve not in the cache), what that solve certifies."""
    if ref.lp_m is not None or ref.lp_bound_m is not None or result.mechanism != "lp":
        return ref
    if result.params != get_mechanism("lp").validate({"eps": float(result.eps)}):
        return ref
    return _with_lp(problem, ref.floor_m, result)


def _with_lp(problem: Problem, floor: float, r: Result) -> Reference:
    """The floor with what an exact LP's result certifies: its loss when optimal, else its lower bound."""
    if r.status == "optimal" and r.Z is not None:
        return Reference(floor, utility_loss_m(problem, r.Z), None, r.status)
    return Reference(floor, None, r.bound_m, r.status)
