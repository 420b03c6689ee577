"""The progress-callback type shared by the solver layer, the LP layer and the mechanisms, and how a person stops a
solve through it: a callback may raise :class:`Stopped`, which ``mdpviz.solve`` turns into status ``stopped``."""

from __future__ import annotations

from collections.abc import Callable

# progress(phase, fraction): fraction in [0, 1], or None when the phase's length is unknown
Progress = Callable[[str, float | None], None]


def no_progress(phase: str, fraction: float | None) -> None:
    """The default progress callback: ignores every report."""


class Stopped(Exception):
    """Raised by a progress callback when the person asked to stop the solve (``str(e)``: the phase it was in)."""
