"""Helpers the experiment modules share: grouping measured rows, reading a metric, and plain-words status text."""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..benchmarks.report import machine

LOADED = ("optimal", "closed form", "sampled", "gap reached", "iteration limit")


def group(rows: Iterable[Mapping[str, Any]], *keys: str) -> dict[tuple[Any, ...], list[Mapping[str, Any]]]:
    """Rows by the values of ``keys`` (in first-seen order)."""
    out: dict[tuple[Any, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        out[tuple(r.get(k) for k in keys)].append(r)
    return dict(out)


def values(rows: Sequence[Mapping[str, Any]], get: str | Callable[[Mapping[str, Any]], Any]) -> list[float]:
    """The finite numbers ``get`` (a key or a function) reads from the rows."""
    out = []
    for r in rows:
        v = get(r) if callable(get) else r.get(get)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out.append(float(v))
    return out


def status_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """'optimal' or e.g. 'time limit (2 of 3 runs), error (1)': what the runs ended with."""
    counts: dict[str, int] = {}
    for r in rows:
        s = "error" if r.get("error") else str(r.get("status", ""))
        counts[s] = counts.get(s, 0) + 1
    if len(counts) == 1:
        (s, n), = counts.items()
        return s if n == len(rows) and s in LOADED else f"{s} ({n} of {len(rows)} runs)"
    return ", ".join(f"{s} ({n} of {len(rows)} runs)" for s, n in counts.items())


def failed(rows: Sequence[Mapping[str, Any]]) -> str:
    """'' when every run produced a mechanism; else its status and the result's own message, in plain words."""
    bad = [r for r in rows if "loss_m" not in r]
    if not bad:
        return ""
    msg = str(bad[0].get("error") or bad[0].get("message") or "")
    return f"ours: {status_text(rows)}" + (f" — {first_sentence(msg)}" if msg else "")


def first_sentence(text: str, limit: int = 240) -> str:
    """The first sentence (or clause before '; ') of a message, at most ``limit`` characters."""
    text = " ".join(str(text).split())
    for sep in (". ", "; "):
        cut = text.find(sep, 30)
        if 0 < cut < limit:
            return text[:cut]
    return text if len(text) <= limit else text[: limit - 1] + "…"


def degenerate(rows: Sequence[Mapping[str, Any]]) -> str:
    """The degenerate verdict of the first degenerate run ('' when none is)."""
    for r in rows:
        if r.get("degenerate"):
            return f"Degenerate release: {first_sentence(r['degenerate'])}"
        if r.get("d.degenerate") is True:
            return f"Degenerate release: {first_sentence(r.get('message', ''))}"
    return ""


_POINTS_MACHINE: list[str] = []  # the machine that computed the points of the report being written


@contextlib.contextmanager
def points_machine(name: str | None) -> Iterator[None]:
    """Within it, time rows name ``name`` (a rebuilt report's points were computed there), not this machine."""
    _POINTS_MACHINE.append(name or machine())
    try:
        yield
    finally:
        _POINTS_MACHINE.pop()


def hardware_reason(load: str = "") -> str:
    """What a time row can and cannot say: seconds from another machine and solver are not compared; the claims
    ledger judges timing claims by orderings and ratios measured in one run here."""
    where = _POINTS_MACHINE[-1] if _POINTS_MACHINE else machine()
    return (f"seconds are not compared across machines (the paper: MATLAB linprog on a desktop; ours: Python + HiGHS "
            f"on {where}" + (f", load {load}" if load else "") + ", one core per solve); timing claims are "
            "judged by orderings measured here (CLAIMS.md)")


def pct(a: float, b: float) -> float:
    """Change of a against b in percent (negative: a is lower)."""
    return 100.0 * (a / b - 1.0) if b else math.nan


def fmt(v: Any, digits: int = 4) -> str:
    """A value as report text: floats to ``digits`` significant digits (thousands separated), None/NaN empty."""
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return f"{v:.{digits}g}" if abs(v) < 10 ** digits else f"{v:,.0f}"
    return str(v)
