"""Where each mechanism wins: the regime grid, its cell table, and the answer to "which mechanism?".

``grid`` defines the grid (every registered mechanism and its presets × ε × region × K × cost × city × seed, in
three sizes), run on the one sweep runner (``mdpviz.sweep``); ``cells`` turns its records into one row per cell
and method (loss, the no-privacy floor, privacy cost, the exact LP's share, privacy against the method's own
claim and against ε-mDP on all pairs, degenerate, status, time) and answers queries on it; ``report`` writes the
committed grid under ``docs/regimes/`` with one chart per method. ``python -m mdpviz regimes`` runs it.
"""

from .cells import OUTCOMES, cell_table, method_map, rank
from .grid import SIZES, regime_points

__all__ = ["OUTCOMES", "SIZES", "cell_table", "method_map", "rank", "regime_points"]
