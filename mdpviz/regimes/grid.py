"""The regime grid: which methods run on which problems, in three sizes.

A **method** is a registered mechanism with its default parameters, or one of its presets whose parameters differ
(``panda-e:authors-code``, ``lp-bd:stabilised`` ...); a preset's own problem settings are ignored: the cell
decides the problem. A **cell** is one problem setting: city × region (a disc around the centre, or the whole
city) × K × cost, at one ε; each method runs on it once per seed (X, Y and tasks drawn anew).

Sizes:
- ``full``: the grid as specified (ε ∈ {0.5, 1, 2, 5, 10, 15} km⁻¹; discs of 2, 5 and 15 km and the whole city;
  K ∈ {200, 500, 2,000} and 5,000 for the methods built for it; distance cost, and the travel cost of the
  authors' artifact: the discrepancy of road travel to one task node; Rome and London; 3 seeds). Hundreds of CPU
  hours: for a cluster (``--scheduler``).
- ``committed``: what ``docs/regimes/`` holds, shrunk to a few hours on 2 workers (see ``COMMITTED_LEFT_OUT``).
- ``tiny``: a few seconds per method, for CI.

C-mDP is left out of every size: it runs on vehicle trajectories over at most 24 stations (its own page and
``bench cmdp``), not on K road nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import MdpvizError
from ..mechanisms import mechanisms
from ..sweep import Point

REGIONS_KM = {"centre:2": 2.0, "centre:5": 5.0, "centre:15": 15.0, "whole": float("inf")}  # region -> radius


@dataclass(frozen=True)
class Size:
    """One form of the grid. ``large_ks`` run only for methods whose ``max_k`` allows them (or that have none)."""

    name: str
    cities: tuple[str, ...]
    regions: tuple[str, ...]
    ks: tuple[int, ...]
    large_ks: tuple[int, ...]
    eps: tuple[float, ...]
    costs: tuple[str, ...]
    seeds: tuple[int, ...]
    outputs: int = 100
    time_limit: float = 60.0
    only: tuple[str, ...] = ()  # methods to run (empty: all)
    skip: tuple[str, ...] = ()  # methods left out


FULL = Size("full", ("rome", "london"), tuple(REGIONS_KM), (200, 500, 2000), (5000,), (0.5, 1.0, 2.0, 5.0, 10.0, 15.0),
            ("distance", "travel"), (0, 1, 2), time_limit=600.0)
COMMITTED = Size("committed", ("rome", "london"), tuple(REGIONS_KM), (200, 500), (), (0.5, 1.0, 2.0, 5.0, 10.0, 15.0),
                 ("distance", "travel"), (0,), time_limit=20.0, skip=("lp-bd", "lp-bd:authors-code"))
TINY = Size("tiny", ("rome",), ("centre:2", "whole"), (40,), (), (1.0, 5.0), ("distance",), (0,), outputs=20,
            time_limit=30.0, only=("em", "em-br", "laplace", "lp", "panda-e", "panda-e:authors-code", "aipo-e",
                                   "dista-lp"))
SIZES = {s.name: s for s in (TINY, COMMITTED, FULL)}
COMMITTED_LEFT_OUT = ("K = 2,000 and 5,000 (only K = 200 and 500; 500 is the papers' common size); seeds 1 and 2 "
                      "(one seed, so no intervals; the full form has three); Benders' "
                      "plain and authors'-code presets (only `lp-bd:stabilised`, the one that finishes soonest: the "
                      "three solve the same neighbour LP); a 20 s limit per solve instead of 600 s, so slow methods "
                      "(the LP at small ε, Benders, AIPO's budget search) end in 'time limit' where a longer run "
                      "might finish")


@dataclass(frozen=True)
class Method:
    """A mechanism with the parameters of its default or of one preset; ``name`` is ``mech`` or ``mech:preset``."""

    name: str
    mechanism: str
    params: tuple[tuple[str, Any], ...]
    label: str
    max_k: int | None


def methods() -> list[Method]:
    """Every registered mechanism (C-mDP aside) and each preset that changes its parameters (ε aside)."""
    out = []
    for mech in mechanisms():
        if mech.family == "cmdp":
            continue
        out.append(Method(mech.name, mech.name, (), mech.label, mech.max_k))
        defaults = mech.defaults()
        for preset in mech.presets:
            params = tuple((k, v) for k, v in preset.params if k != "eps")
            if any(defaults.get(k) != v for k, v in params):
                label = preset.label if preset.name == "ours" else f"{mech.label}, preset '{preset.name}'"
                out.append(Method(f"{mech.name}:{preset.name}", mech.name, params, label, mech.max_k))
    return out


def method_labels() -> dict[str, str]:
    """Method name -> readable label, for tables and charts."""
    return {m.name: m.label for m in methods()}


def regime_points(size: Size | str, only: Sequence[str] = (), ks: Sequence[int] = ()) -> list[Point]:
    """The grid of ``size`` as sweep Points (tags name the cell and the method; the problem's seed is the point's).

    ``only`` (method names) and ``ks`` (values of K) narrow it further. A region too small for K is left out (the
    page says so).
    """
    size = SIZES[size] if isinstance(size, str) else size
    wanted = set(only or size.only)
    unknown = wanted - {m.name for m in methods()}
    if unknown:
        raise MdpvizError(f"Unknown method(s) {sorted(unknown)}; `python -m mdpviz regimes --list` names them.")
    chosen = [m for m in methods() if (not wanted or m.name in wanted) and m.name not in size.skip]
    points = []
    # cell by cell (every method of a cell together), so a run stopped by its budget leaves whole cells, the
    # cities side by side
    for cost in size.costs:
        for region in size.regions:
            for k in (k for k in (*size.ks, *size.large_ks) if not ks or k in ks):
                for eps in size.eps:
                    for city in size.cities:
                        for method in chosen:
                            if k not in size.ks and method.max_k is not None and k > method.max_k:
                                continue
                            for seed in size.seeds:
                                problem = {"city": city, "k": k, "n_outputs": min(size.outputs, k), "cost": cost,
                                           "region": region, **({"n_tasks": 1} if cost == "travel" else {})}
                                tags = {"method": method.name, "city": city, "region": region, "K": k, "cost": cost,
                                        "eps": eps}
                                points.append(Point(problem, method.mechanism, {**dict(method.params), "eps": eps},
                                                    seed=seed, time_limit=size.time_limit, tags=tags))
    return points
