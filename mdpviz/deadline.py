"""One overall deadline shared by every phase of a solve, and the exception a long loop raises when it passes.

A deadline is a ``time.perf_counter()`` value (None: no limit). Long loops (quadrature blocks, per-column repairs,
per-user fits, ...) call :func:`check_deadline` once per block of work, so a solve stops within about a block's time
of its deadline; the mechanism catches :class:`OutOfTime` and returns status ``time limit`` with a message naming
the phase. The clock is read through ``time.perf_counter`` at call time, so a test can substitute a CPU clock.
"""

from __future__ import annotations

import time

# seconds past the deadline a solve may spend repairing the best point of an LP that the deadline stopped, to keep it
# in its diagnostics (``feasible_Z``, never as Z); the contract is to stop within 1 s of the deadline
KEEP_GRACE_S = 0.5
# the words a stopped solve's message uses for the point it kept aside; ``Result.kept_point`` turns them into "the
# point shown is" when that point is shown
KEPT_AT = "diagnostics['feasible_Z'] holds"


class OutOfTime(Exception):
    """The deadline passed while ``what`` was running (``str(e)`` is that phase, in words)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def deadline_of(time_limit: float | None) -> float | None:
    """The deadline ``time_limit`` seconds from now (None without a limit)."""
    return None if time_limit is None else time.perf_counter() + float(time_limit)


def time_left(deadline: float | None) -> float | None:
    """Seconds left until ``deadline`` (negative once it passed), None without a deadline."""
    return None if deadline is None else deadline - time.perf_counter()


def passed(deadline: float | None) -> bool:
    """Has ``deadline`` passed?"""
    return deadline is not None and time.perf_counter() > deadline


def with_grace(deadline: float | None) -> float | None:
    """The deadline for keeping a stopped LP's best point (``KEEP_GRACE_S`` later)."""
    return None if deadline is None else deadline + KEEP_GRACE_S


def check_deadline(deadline: float | None, what: str) -> None:
    """Raise :class:`OutOfTime` naming ``what`` once ``deadline`` has passed."""
    if deadline is not None and time.perf_counter() > deadline:
        raise OutOfTime(what)


def would_overrun(t0: float, done: int, total: int, deadline: float) -> bool:
    """Whether work begun at ``t0``, ``done`` (> 0) of ``total`` units so far, ends past ``deadline`` at its pace so
    far; judged only once a twentieth of the work or 50 ms has passed (a first block's pace can mislead)."""
    elapsed = time.perf_counter() - t0
    if 20 * done < total and elapsed < 0.05:
        return False
    return t0 + elapsed * total / done > deadline
