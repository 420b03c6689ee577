"""Reproduce the seed papers' tables: one experiment per table or figure, a registry, and a report writer.

``python -m mdpviz reproduce --list`` names them; ``reproduce NAME`` reruns one on the paper's city with the
paper's parameters (through ``mdpviz.sweep``, in process or on Dask) and writes a report folder in which every
row puts our number beside the paper's (from ``paper_values.json``), with the ratio and a reason where they differ.
"""

from __future__ import annotations

# isort: off
from . import aipo, benders, cmdp, dista, panda  # noqa: F401 - each registers its experiments
from . import ladders  # noqa: F401 - after the tables: a paper's ladder comes after its tables
# isort: on
from .base import SIZES, Comparison, Experiment, paper_info, paper_values
from .registry import experiments, get_experiment
from .run import DEFAULT_OUT, reproduce

__all__ = ["DEFAULT_OUT", "SIZES", "Comparison", "Experiment", "experiments", "get_experiment", "paper_info",
           "paper_values", "reproduce"]
