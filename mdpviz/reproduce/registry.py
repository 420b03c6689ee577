"""The experiment registry: each experiment module registers its experiments at import."""

from __future__ import annotations

from pathlib import Path

from ..errors import MdpvizError
from .base import Experiment

_EXPERIMENTS: dict[str, Experiment] = {}
PAPER_ORDER = ("panda", "benders", "aipo", "cmdp", "dista")


def register(experiment: Experiment) -> Experiment:
    """Add an experiment (its name must be new); returns it."""
    if experiment.name in _EXPERIMENTS:
        raise ValueError(f"experiment {experiment.name!r} is registered twice")
    _EXPERIMENTS[experiment.name] = experiment
    return experiment


def experiments() -> list[Experiment]:
    """Every experiment, by paper (PAPER_ORDER), then registration order."""
    rank = {p: i for i, p in enumerate(PAPER_ORDER)}
    return sorted(_EXPERIMENTS.values(), key=lambda e: rank.get(e.paper, len(rank)))


def get_experiment(name: str) -> Experiment:
    """The experiment called ``name``; an error listing the known names otherwise."""
    try:
        return _EXPERIMENTS[name]
    except KeyError:
        raise MdpvizError(f"Unknown experiment `{name}`; known: {', '.join(e.name for e in experiments())} "
                          "(`python -m mdpviz reproduce --list`).") from None


def points_file(out_dir: Path, experiment: str, size: str) -> Path:
    """Where an experiment's finished points live (shared by experiments with the same grid)."""
    exp = get_experiment(experiment)
    return out_dir / "_points" / f"{exp.grid_name or exp.name}-{size}.jsonl"
