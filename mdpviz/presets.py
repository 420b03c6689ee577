"""Named parameter presets of the seed methods: "as the paper writes it" and "as the authors' code ran it".

A preset is data, keyed like the mechanism's own parameters (``Mechanism.validate`` accepts its ``params``), so the
dashboard can offer it as a one-click choice and the CLI can apply it. The defaults of every mechanism already follow
its paper; a preset spells out a paper's experimental setting or the authors' published code, with what that code
changes in plain words (``note``) so the measured privacy cost can be read next to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import ParameterError


@dataclass(frozen=True)
class Preset:
    """One named setting of a mechanism.

    Attributes:
        name: short id (``paper``, ``authors-code``), unique per mechanism.
        label: what the dashboard shows.
        params: parameter values to apply on top of the mechanism's defaults.
        note: what the preset changes and what that costs, in plain words.
    """

    name: str
    label: str
    params: dict[str, Any] = field(default_factory=dict)
    note: str = ""


_PANDA_CODE = Preset(
    "authors-code", "As in the authors' code",
    {"eps_bar": "authors-code", "pair_radius_km": 0.8, "s_rule": "half-gamma", "ps_rule": "one", "floor": "w_min",
     "w_min": 1e-4, "max_lp_rows": 2000, "anpo_solver": "monolithic"},
    "The authors' MATLAB code (paopao128/CCS-2025-PAnDA): ε̄ from get_epsilon_nmw.m, whose loop keeps only the last "
    "factor of each product (it under-counts Phase I); mDP constraints only between anchors closer than 0.8 km; S_x "
    "= the records within γ/2; P_S = 1; a small floor 1e-4 beyond γ. Privacy is still measured with Prop. 3's ε̄, "
    "so V_pair shows what these choices cost. Not reproduced: the code's own decay constants (e.g. e^(−0.4λd)) and "
    "its γ = d_max/c with c from 80 to 220 depending on K.")

PRESETS: dict[str, tuple[Preset, ...]] = {
    **{f"panda-{v}": (Preset("paper", "As in the paper (defaults)", {},
                             "Prop. 3's exact Phase I cost ε̄, every anchor pair constrained (Eq. 31), S_x = the Γ "
                             "nearest records (Eq. 29)."), _PANDA_CODE) for v in "epl"},
    "lp-bd": (
        Preset("paper", "As in the paper (road data)", {"eps": 10.0, "scope": "neighbours", "eta": 2.0, "subsets": 25,
                                                        "partitioner": "kmeans-dv", "gap_m": 0.01},
               "The paper's LP (ε-mDP between neighbours within η = 2 km) at its road-data setting ε = 10 km⁻¹, 25 "
               "subsets by k-means on distance rows, stop at a certified gap of ξ = 0.01."),
        Preset("authors-code", "As in the authors' code", {"eps": 10.0, "scope": "neighbours", "eta": 2.0,
                                                           "subsets": 25, "slack": 0.01, "floor": 0.001,
                                                           "max_iter": 100, "gap_m": 0.001},
               "The authors' MATLAB code (chenxiunt/MetricDP_BendersDecomposition): an additive slack δ = 0.01 on "
               "every mDP row and master entries ≥ 0.001 (with |Y| = 100 that spreads 10% of each boundary row "
               "uniformly), an absolute gap of 0.001; both change the LP, so the result is not the paper's optimum "
               "(its rows are repaired into the cone afterwards)."),
    ),
}


def presets(mechanism: str) -> tuple[Preset, ...]:
    """The presets of ``mechanism`` (empty when it has none)."""
    return PRESETS.get(mechanism, ())


def apply_preset(mechanism: str, name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """``params`` with preset ``name`` of ``mechanism`` applied on top (not validated: pass it to ``solve``)."""
    for preset in presets(mechanism):
        if preset.name == name:
            return {**(params or {}), **preset.params}
    known = ", ".join(p.name for p in presets(mechanism)) or "none"
    raise ParameterError(f"Mechanism `{mechanism}` has no preset `{name}`; its presets: {known}.")
