"""What an experiment is, the paper's values it compares against, and the side-by-side comparison rows.

An ``Experiment`` turns (size, mode) into a grid of sweep ``Point`` s and turns the finished records into a
``Comparison``: one row per (paper table, setting, method, metric) with our number beside the paper's, the ratio
and, where they differ, a one-line reason. The paper's numbers come from one data file, ``paper_values.json``,
transcribed once from the specs' §7.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MdpvizError, ParameterError
from ..mechanisms import get_mechanism
from ..sweep import Point

VALUES_FILE = Path(__file__).with_name("paper_values.json")
SIZES = ("tiny", "quick", "full")
MODE_TEXT = {"paper": "as the paper writes it", "authors": "as the authors' published code ran it"}
# ratio band inside which we call a number reproduced (besides falling inside the paper's own ± band)
AGREE_BAND = (0.8, 1.25)
COLUMNS = ("table", "city", "setting", "x", "method", "metric", "unit", "ours", "ours_pm", "n", "paper", "paper_value",
           "ratio", "verdict", "reason", "paper_ref", "hardware", "series")


# ---------------------------------------------------------------- the paper's values

@functools.lru_cache(maxsize=1)
def _values_data() -> dict[str, Any]:
    # (mypy) json.loads returns Any; the file holds this dict
    return json.loads(VALUES_FILE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def paper_info(paper: str) -> dict[str, str]:
    """Title, spec file and hardware/software label of a seed paper."""
    return dict(_values_data()["papers"][paper])


def paper_values(paper: str, **match: Any) -> list[dict[str, Any]]:
    """The paper's values whose fields (or ``setting`` entries) equal every ``match`` item."""
    out = []
    for v in _values_data()["values"]:
        if v["paper"] != paper:
            continue
        if all((v.get(k) if k in v else v["setting"].get(k)) == want for k, want in match.items()):
            out.append(v)
    return out


def paper_value(paper: str, **match: Any) -> dict[str, Any] | None:
    """The one value matching ``match`` (None when the paper has none)."""
    found = paper_values(paper, **match)
    if len(found) > 1:
        raise MdpvizError(f"{len(found)} paper values match {match}; add a field to tell them apart.")
    return found[0] if found else None


# ---------------------------------------------------------------- experiments

@dataclass(frozen=True)
class Comparison:
    """The side-by-side rows, notes for the report, and our per-point rows for the chart."""

    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    chart: list[dict[str, Any]] = field(default_factory=list)
    extra_md: str = ""  # Markdown written after the notes, before the row tables (a ladder's one table)


@dataclass(frozen=True)
class ChartSpec:
    """What the chart plots: ``metric`` of the comparison rows against their ``x``, one line per method."""

    metric: str
    x_label: str
    y_label: str
    log_x: bool = False
    log_y: bool = False
    table: str = ""  # only rows of this paper table ('' = every row of the metric)


@dataclass(frozen=True)
class Experiment:
    """One reproducible experiment of a seed paper.

    Attributes:
        name: the CLI name, e.g. ``panda-table4``.
        paper: key of the paper in ``paper_values.json`` (``panda``, ``benders``, ``aipo``, ``cmdp``, ``dista``).
        title: one line naming the paper's table or figure.
        summary: what is rerun, on what, with which parameters.
        points: ``points(size, mode)`` -> the grid (``size`` in SIZES).
        compare: ``compare(records, size, mode)`` -> Comparison.
        modes: the modes offered (``paper`` first; ``authors`` where the authors' code differs).
        grid_name: experiments with the same grid share one points file (so a grid is solved once).
        chart: what the report's chart shows.
    """

    name: str
    paper: str
    title: str
    summary: str
    points: Callable[[str, str], list[Point]]
    compare: Callable[[list[dict[str, Any]], str, str], Comparison]
    chart: ChartSpec
    modes: tuple[str, ...] = ("paper",)
    grid_name: str = ""

    def check(self, size: str, mode: str) -> None:
        """Refuse an unknown size or mode with a message naming the known ones."""
        if size not in SIZES:
            raise MdpvizError(f"Size `{size}` is not one of {', '.join(SIZES)}.")
        if mode not in self.modes:
            raise MdpvizError(f"Experiment `{self.name}` has no mode `{mode}`; it has: {', '.join(self.modes)}.")


# ---------------------------------------------------------------- parameters that follow main's mechanisms

def fit_params(mechanism: str, wanted: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The subset of ``wanted`` the mechanism's schema accepts, and a note for each setting it cannot take.

    Experiments ask for the paper's settings by name; a parameter a mechanism does not have (yet) is left out and
    said in the report, so an experiment keeps running as mechanisms gain or rename options.
    """
    mech = get_mechanism(mechanism)
    names = {p.name: p for p in mech.params}
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for name, value in wanted.items():
        if name.startswith("_"):
            kept[name] = value
            continue
        if name not in names:
            dropped.append(f"`{mechanism}` has no parameter `{name}` (wanted {value!r})")
            continue
        try:
            names[name].validate(value)
        except ParameterError as e:
            dropped.append(f"`{mechanism}`: {e}")
            continue
        kept[name] = value
    return kept, dropped


# the authors' code's settings that the specs name (used when a mechanism has no preset of its own)
AUTHORS_SETTINGS: dict[str, dict[str, Any]] = {
    "panda": {"pair_radius_km": 0.8, "floor": "w_min", "ps_rule": "one"},
    "dista-lp": {"noise": "two-sided", "tau_rule": "0.5/eps", "budget_mode": "fixed-b", "noise_mult": 1.0},
    "lp-bd": {},
}
_AUTHOR_WORDS = ("author", "artifact", "code")


def _preset_fields(preset: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(name, params, problem settings) of a preset object, whichever shape it has."""
    def as_dict(value: Any) -> dict[str, Any]:
        return dict(value) if value else {}

    params = preset.param_dict() if hasattr(preset, "param_dict") else as_dict(getattr(preset, "params", None))
    problem = preset.problem_dict() if hasattr(preset, "problem_dict") else as_dict(getattr(preset, "problem", None))
    return str(preset.name), params, problem


def find_preset(mechanism: str, word: str) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """A preset of the mechanism whose name contains ``word`` ('author', 'paper'): (name, params, problem settings).

    Looks in ``Mechanism.presets`` and, where it exists, ``mdpviz.presets.presets(name)``; None when there is none.
    """
    found: list[Any] = list(getattr(get_mechanism(mechanism), "presets", None) or ())
    try:
        found += list(importlib.import_module("mdpviz.presets").presets(mechanism))
    except (ImportError, AttributeError):
        pass
    for preset in found:
        name, params, problem = _preset_fields(preset)
        if word in name.lower():
            return name, params, problem
    return None


def authors_params(mechanism: str, family_key: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """The settings of the authors'-code variant of a mechanism, and notes on where they come from.

    A preset of the mechanism named for the authors' code wins; otherwise the specs' list ``AUTHORS_SETTINGS``
    and every string option whose choices name the authors' code or artifact.
    """
    if (found := find_preset(mechanism, "author")) is not None:
        name, params, _ = found
        kept, dropped = fit_params(mechanism, params)
        return kept, [f"`{mechanism}` preset '{name}': " + ", ".join(f"{k}={v}" for k, v in kept.items()), *dropped]
    wanted = dict(AUTHORS_SETTINGS.get(family_key or mechanism, {}))
    for p in get_mechanism(mechanism).params:
        if p.kind is str and p.name not in wanted:
            hits = [c for c in p.choices if any(w in c.lower() for w in _AUTHOR_WORDS)]
            if len(hits) == 1:
                wanted[p.name] = hits[0]
    kept, dropped = fit_params(mechanism, wanted)
    note = f"`{mechanism}` authors'-code settings " + (", ".join(f"{k}={v}" for k, v in kept.items()) or "(none)")
    return kept, [note, *dropped]


def mode_params(mechanism: str, wanted: Mapping[str, Any], mode: str,
                family_key: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """``wanted`` with, in the authors' mode, the authors'-code settings on top (``authors_params``), fitted to the
    mechanism's schema (``fit_params``); and the notes of both."""
    notes: list[str] = []
    if mode == "authors":
        extra, notes = authors_params(mechanism, family_key)
        wanted = {**wanted, **extra}
    params, dropped = fit_params(mechanism, wanted)
    return params, notes + dropped


# ---------------------------------------------------------------- aggregation and comparison rows

def mean_pm(values: Sequence[float]) -> tuple[float, float, int]:
    """Mean, 1.96·std (the papers' ± band; 0 for one run) and count of the finite values."""
    arr = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return math.nan, math.nan, 0
    return float(arr.mean()), float(1.96 * arr.std(ddof=1)) if arr.size > 1 else 0.0, int(arr.size)


def rows_of(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every measured row of the records, with its point's fields (``point.*``) and the record's error."""
    out = []
    for rec in records:
        pt = rec["point"]
        base = {"mechanism": pt["mechanism"], "seed": pt["seed"], **{f"tag.{k}": v for k, v in pt["tags"].items()},
                **{f"problem.{k}": v for k, v in pt["problem"].items()},
                **{f"param.{k}": v for k, v in pt["params"].items()},
                "error": rec.get("error", ""), "wall_s": rec.get("wall_s")}
        if rec.get("error"):
            out.append({**base, "status": "error"})
        for row in rec.get("rows", []):
            out.append({**base, **row})
    return out


BAND_COVERS_0 = "no test: the paper's ± covers 0"


def verdict(ours: float, paper: Mapping[str, Any] | None) -> tuple[str, float]:
    """('agrees' | 'differs' | 'paper has none' | 'bound holds' | 'bound fails' | 'no number' | BAND_COVERS_0,
    ratio ours/paper).

    Relations: '=' (± ``pm``), '<', '<=', '>', '>=' (a printed bound), 'abs<=' (|ours| ≤ value: "within x %"),
    'range' (a claimed interval). A '=' value whose ± band reaches 0 tests nothing by its band: only a ratio
    in AGREE_BAND agrees, and any other number is BAND_COVERS_0, never an agreement.
    """
    if paper is None:
        return "paper has none", math.nan
    if ours is None or not math.isfinite(ours):
        return "no number", math.nan
    value, rel = paper.get("value"), paper.get("relation", "=")
    if value is None:
        return "paper has none", math.nan
    ratio = ours / value if value not in (0, 0.0) else math.nan
    if rel == "range":
        lo, hi = sorted(paper["range"])
        nearest = lo if abs(ours - lo) <= abs(ours - hi) else hi
        return ("agrees" if lo <= ours <= hi else "differs"), (ours / nearest if nearest else math.nan)
    if rel in ("<", "<=", ">", ">=", "abs<="):
        ok = {"<": ours < value, "<=": ours <= value, ">": ours > value, ">=": ours >= value,
              "abs<=": abs(ours) <= value}[rel]
        return ("bound holds" if ok else "bound fails"), ratio
    pm = paper.get("pm") or 0.0
    in_ratio = math.isfinite(ratio) and AGREE_BAND[0] <= ratio <= AGREE_BAND[1]
    if value == 0:
        return ("agrees" if abs(ours) <= max(pm, 1e-12) else "differs"), ratio
    if pm >= abs(value):
        return ("agrees" if in_ratio else BAND_COVERS_0), ratio
    return ("agrees" if abs(ours - value) <= pm or in_ratio else "differs"), ratio


def comparison_row(*, table: str, city: str, setting: str, x: float | str, method: str, metric: str, unit: str,
                   ours: float | None, ours_pm: float | None = None, n: int = 0, paper: Mapping[str, Any] | None,
                   reason: str = "", note: str = "", series: str = "", degenerate: str = "") -> dict[str, Any]:
    """One side-by-side row; ``reason`` is kept where the numbers differ (or there is no number of ours).

    ``degenerate`` (the degenerate verdict of the runs, '' when none is) turns an agreement into 'degenerate': a
    release that collapsed or was erased never agrees with a paper, whatever its number."""
    ours_f = math.nan if ours is None else float(ours)
    v, ratio = verdict(ours_f, paper)
    if paper is not None and paper.get("value") is None:
        v = f"paper: {paper.get('status') or 'no number'}"
    if degenerate and v in ("agrees", "bound holds"):
        v, reason = "degenerate", degenerate
    shown_reason = reason if v not in ("agrees", "bound holds") else (note or "")
    ref = ""
    if paper is not None:
        ref = f"{paper['source']} ({paper['spec']}" + (f", p. {paper['page']}" if paper.get("page") else "") + ")"
    return {"table": table, "city": city, "setting": setting, "x": x, "method": method, "metric": metric,
            "unit": unit, "ours": ours_f, "ours_pm": math.nan if ours_pm is None else float(ours_pm), "n": n,
            "paper": paper["text"] if paper is not None else "", "paper_value": (paper or {}).get("value"),
            "ratio": ratio, "verdict": v, "reason": shown_reason, "paper_ref": ref,
            "hardware": (paper or {}).get("hardware", ""), "series": series, "paper_id": (paper or {}).get("id", "")}


def missing_row(*, table: str, city: str, setting: str, method: str, metric: str, unit: str,
                paper: Mapping[str, Any] | None, why: str, verdict_text: str = "not implemented") -> dict[str, Any]:
    """A row for a method of the paper that we do not run: the paper's number stays, ours is empty, and says why."""
    row = comparison_row(table=table, city=city, setting=setting, x=setting, method=method, metric=metric,
                         unit=unit, ours=None, paper=paper, reason=why)
    return {**row, "verdict": verdict_text, "reason": why}


def sizes(size: str, tiny: Any, quick: Any, full: Any) -> Any:
    """Pick the value for ``size``."""
    return {"tiny": tiny, "quick": quick, "full": full}[size]
