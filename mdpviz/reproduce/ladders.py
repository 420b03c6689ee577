"""Ablation ladders: from a paper as written to its authors' code, one change at a time, each rung measured.

A ladder is data (``claims.json``, key ``ladders``): a problem, the ε values, and rungs. A rung names a mechanism
(or a measuring task) and its parameters; ``from`` makes it inherit another rung's parameters and problem, so each
rung states only what it changes. Headline rungs (the paper's method and its baseline) run on ``headline_seeds``
(10 in the full form, for the claims' 95 % intervals), the others on ``seeds``. Each ladder is registered as an
experiment (``python -m mdpviz reproduce panda-ladder``); its report holds one row per rung, ε and metric. The
claims ledger (``ledger.py``) reads the ladders' records to judge the papers' claims and to measure their causes.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import t as student_t

from .. import metrics
from ..geo import pairwise_haversine_km
from ..sweep import Point, problem_of
from . import common as cm
from .base import ChartSpec, Comparison, Experiment, comparison_row, paper_value, rows_of
from .benders import dataset_records, partition_sizes
from .registry import register

LEDGER_FILE = Path(__file__).with_name("claims.json")
NO_SOLVE = ("closed form", "sampled", "measured")  # statuses of results without an optimisation


@functools.lru_cache(maxsize=1)
def ledger_data() -> dict[str, Any]:
    """The ledger file: ``ladders`` (name -> ladder) and ``claims`` (list)."""
    # (mypy) json.loads returns Any; the file holds this dict
    return json.loads(LEDGER_FILE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


# ---------------------------------------------------------------- reading a metric from a measured row

def metric_value(row: Mapping[str, Any], metric: str) -> float | None:
    """The number ``metric`` names in a measured row, or None.

    ``a|b``: the first of a, b the row has; ``a/b``: a divided by b; ``degenerate?``: 1 when the release is
    degenerate (collapsed, erased, or its claim not met), else 0; ``optimal?``: 1 when the solve ended optimal, 0
    when it ended otherwise, None for a mechanism that solves nothing (closed form, sampled, a measuring task).
    """
    if "|" in metric:
        for part in metric.split("|"):
            if (v := metric_value(row, part)) is not None:
                return v
        return None
    if "/" in metric:
        num, den = (metric_value(row, part) for part in metric.split("/", 1))
        return num / den if num is not None and den else None
    if metric == "degenerate?":
        return 1.0 if row.get("degenerate") else 0.0
    if metric == "optimal?":  # of a solve; None for a mechanism without one (closed form, sampled, measured)
        status = row.get("status")
        return None if status in NO_SOLVE else (1.0 if status == "optimal" else 0.0)
    v = row.get(metric)
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    return None


# ---------------------------------------------------------------- the ladder as data

@dataclass(frozen=True)
class Rung:
    """One rung: ``label``, what it ``change`` s (plain words), and the point settings it stands for (a rung may
    run on fewer ``seeds`` or ``eps`` values than the ladder, in the full form)."""

    label: str
    change: str
    mechanism: str
    params: dict[str, Any]
    problem: dict[str, Any]
    task: str
    headline: bool
    seeds: tuple[int, ...] | None  # None: the ladder's seeds
    baseline: bool = False  # not a step of the ladder (EM, the LP): charted as its own point
    eps: tuple[float, ...] | None = None  # None: the ladder's ε values (full form)
    paper: Mapping[str, Mapping[str, Any]] | None = None  # metric -> the paper value it is read against (its fields)


def rungs(ladder: Mapping[str, Any]) -> list[Rung]:
    """The ladder's rungs with inherited settings resolved (a rung's ``from`` must come earlier)."""
    done: dict[str, Rung] = {}
    out = []
    for r in ladder["rungs"]:
        base = done[r["from"]] if r.get("from") else None
        params = {**(base.params if base else ladder.get("params", {})), **r.get("params", {})}
        problem = {**(base.problem if base else {}), **r.get("problem", {})}
        rung = Rung(r["label"], r["change"], r.get("mechanism", base.mechanism if base else ""), params, problem,
                    r.get("task", base.task if base else ladder.get("task", "")), bool(r.get("headline")),
                    tuple(r["seeds"]) if "seeds" in r else None, bool(r.get("baseline")),
                    tuple(r["eps"]) if "eps" in r else None, r.get("paper"))
        done[rung.label] = rung
        out.append(rung)
    return out


def _form(ladder: Mapping[str, Any], size: str) -> dict[str, Any]:
    """Problem, ε values, seeds and time limit of one form (tiny: the ``tiny`` overrides, which win over every
    rung's problem, one seed, one ε)."""
    tiny = ladder.get("tiny", {})
    return {"problem": {**ladder["problem"], **(tiny.get("problem", {}) if size == "tiny" else {})},
            "problem_over": tiny.get("problem", {}) if size == "tiny" else {},
            "params": tiny.get("params", {}) if size == "tiny" else {},
            "eps": ladder["eps"][:1] if size == "tiny" else ladder["eps"],
            "seeds": ladder["seeds"] if size == "full" else [0],
            "headline_seeds": ladder["headline_seeds"] if size == "full" else [0],
            "time_limit": tiny.get("time_limit", 20.0) if size == "tiny" else ladder.get("time_limit", 600.0)}


def points(name: str, size: str) -> list[Point]:
    """The ladder's grid: rung × ε × seed (headline rungs on the headline seeds); the rungs in order."""
    ladder = ledger_data()["ladders"][name]
    form = _form(ladder, size)
    out = []
    for n, rung in enumerate(rungs(ladder)):
        problem = {**ladder["problem"], **rung.problem, **form["problem_over"]}
        seeds = rung.seeds if rung.seeds is not None and size == "full" else (
            form["headline_seeds"] if rung.headline else form["seeds"])
        for eps in (rung.eps if rung.eps is not None and size == "full" else form["eps"]):
            params = {**rung.params, **{k: v for k, v in form["params"].items() if k in rung.params}, "eps": eps}
            task = {"task": rung.task} if rung.task else {}
            out += [Point(problem, rung.mechanism, params, seed, time_limit=form["time_limit"],
                          tags={"label": rung.label, "rung": n}, **task) for seed in seeds]
    return out


# ---------------------------------------------------------------- summaries

def mean_ci(values: Sequence[float]) -> tuple[float, float, float, int]:
    """Mean and its 95 % interval (Student t over the runs; the mean itself for one run), and the count."""
    arr = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return math.nan, math.nan, math.nan, 0
    mean = float(arr.mean())
    if arr.size == 1:
        return mean, mean, mean, 1
    half = float(student_t.ppf(0.975, arr.size - 1) * arr.std(ddof=1) / math.sqrt(arr.size))
    return mean, mean - half, mean + half, int(arr.size)


def _shown(mean: float, lo: float, hi: float, k: int) -> str:
    """'1,234 [1,200, 1,268]' (the 95 % interval when there are several runs), '' without a number."""
    if k == 0:
        return ""
    return cm.fmt(mean) + (f" [{cm.fmt(lo)}, {cm.fmt(hi)}]" if k > 1 and hi > lo else "")


def _why(runs: Sequence[Mapping[str, Any]]) -> str:
    """What ended badly in these runs: an error or a stop (its first sentence), else a degenerate verdict, else ''."""
    bad = [r for r in runs if r.get("error") or r.get("status") in ("error", "refused", "time limit", "infeasible")]
    if bad:
        msg = str(bad[0].get("error") or bad[0].get("message") or bad[0].get("status"))
        return f"{len(bad)} of {len(runs)} runs: {cm.first_sentence(msg)}"
    return cm.degenerate(runs)


@functools.cache
def _claims_reading(name: str, label: str) -> tuple[str, ...]:
    """The ids of the claims whose test, cause or context reads rung ``label`` of ladder ``name`` (the ledger file
    is read once per rung, not once per row of the report)."""
    def refs(test: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        return [test[k] for k in ("of", "vs") if k in test]

    out = []
    for c in ledger_data()["claims"]:
        cause = (c.get("cause") or {}).get("check", [])
        tests = [*([c["test"]] if c.get("test") else []), *(cause if isinstance(cause, list) else [cause]),
                 *c.get("context", [])]
        if any(r["experiment"] == name and r.get("where", {}).get("tag.label") == label for t in tests
               for r in refs(t)):
            out.append(c["id"])
    return tuple(out)


def _rung_reason(name: str, rung: Rung, runs: Sequence[Mapping[str, Any]]) -> str:
    """Why a rung's number may differ from the paper's: what ended badly, else the claims that explain it, else what
    the rung changes."""
    if why := _why(runs):
        return why
    if ids := _claims_reading(name, rung.label):
        return f"read in the claims ledger ({', '.join(ids)}: `python -m mdpviz reproduce --claims`)"
    return f"this rung: {rung.change}"


def ladder_cells(name: str, rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The ladder as a table of text: a line per rung (and ε, and method of a multi-method task), a column per
    metric (mean [95 % interval]), the runs' count and what ended degenerate or failed. Returns (header, lines)."""
    ladder = ledger_data()["ladders"][name]
    metrics = ladder["metrics"]
    multi = any(r.get("label") for r in rows)
    head = ["rung", "ε (km⁻¹)", *(["method"] if multi else []),
            *[text + (f" ({unit})" if unit else "") for _, text, unit in metrics], "runs", "degenerate or failed"]
    lines = []
    for n, rung in enumerate(rungs(ladder)):
        for (eps, method), runs in cm.group([r for r in rows if r.get("tag.label") == rung.label],
                                            "param.eps", "label").items():
            if multi and ladder.get("chart_rows") and method not in ladder["chart_rows"]:
                continue
            cells = [f"{n}. {rung.label}", cm.fmt(eps), *([str(method)] if multi else [])]
            cells += [_shown(*mean_ci([v for r in runs if (v := metric_value(r, m)) is not None]))
                      for m, _, _ in metrics]
            lines.append(cells + [str(len({r.get("seed") for r in runs})), _why(runs)])
    return head, lines


def ladder_table(name: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """``ladder_cells`` as a Markdown table."""
    head, lines = ladder_cells(name, rows)
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(c.replace("|", "/") for c in cells) + " |" for cells in lines]
    return "\n".join(out) + "\n"


def _compare(name: str, records: list[dict[str, Any]], size: str, mode: str) -> Comparison:
    ladder = ledger_data()["ladders"][name]
    rows = rows_of(records)
    the_rungs = rungs(ladder)
    order = {r.label: n for n, r in enumerate(the_rungs)}
    out: list[dict[str, Any]] = []
    chart: list[dict[str, Any]] = []
    for (label, eps, method), runs in cm.group(rows, "tag.label", "param.eps", "label").items():
        n = order.get(label)
        if n is None:
            continue
        for metric, text, unit in ladder["metrics"]:
            vals = [v for r in runs if (v := metric_value(r, metric)) is not None]
            if not vals:
                continue
            mean, lo, hi, k = mean_ci(vals)
            spec = (the_rungs[n].paper or {}).get(metric)
            paper = paper_value(ladder["paper"], **spec) if spec else None
            row = comparison_row(table=f"Ladder: {text}", city=str(runs[0].get("problem.city", "")),
                                 setting=f"{n}. {label}; ε = {eps:g} km⁻¹", x=n, method=str(method or label),
                                 metric=text, unit=unit, ours=mean, ours_pm=(hi - lo) / 2 if k > 1 else None, n=k,
                                 paper=paper, reason=_rung_reason(name, the_rungs[n], runs),
                                 series=f"ε = {eps:g}" if len(ladder["eps"]) > 1 else "")
            if paper is None:
                row["verdict"] = "measured"
            out.append(row)
            if metric == ladder["metrics"][0][0] and (not ladder.get("chart_rows") or method in ladder["chart_rows"]):
                line = label if the_rungs[n].baseline else str(method or ladder.get("series", "measured"))
                chart.append({**row, "method": line})
    notes = [f"Rung {n}. **{r.label}**: {r.change}" for n, r in enumerate(the_rungs)]
    form = _form(ladder, size)
    notes.append(f"Problem {form['problem']}, ε ∈ {form['eps']} km⁻¹; headline rungs on {len(form['headline_seeds'])} "
                 f"seed(s), the others on {len(form['seeds'])}; ± is the half-width of the 95 % interval (Student t).")
    return Comparison(out, notes, chart=chart, extra_md="## The ladder\n\n" + ladder_table(name, rows))


def _register(name: str, ladder: Mapping[str, Any]) -> Experiment:
    return register(Experiment(
        name=name, paper=ladder["paper"], title=ladder["title"], summary=ladder["summary"],
        points=lambda size, mode: points(name, size),
        compare=lambda records, size, mode: _compare(name, records, size, mode),
        chart=ChartSpec(ladder["metrics"][0][1], "rung (one change at a time)", ladder["metrics"][0][1]
                        + (f" ({ladder['metrics'][0][2]})" if ladder["metrics"][0][2] else ""),
                        log_y=bool(ladder.get("log_y")))))


LADDERS = {name: _register(name, ladder) for name, ladder in ledger_data()["ladders"].items()}


# ---------------------------------------------------------------- a measuring task of the AIPO ladder

def em_other_outputs(point: Point, *, use_cache: bool = True) -> dict[str, Any]:
    """EM as the AIPO artifact scores it: weights toward |Y| other records drawn at random (``randi`` per test),
    loss read on the problem's own outputs' cost columns (the cached ``loss_matrix_orig``).

    The release is still EM (ε-mDP, checked); only its scoring mixes two output sets. Spec 003 §10.
    """
    t0 = time.perf_counter()
    pb = problem_of(point)
    eps = float(point.params["eps"])
    rng = np.random.default_rng(point.seed + 7919)
    other = rng.choice(pb.k, size=pb.m, replace=False)
    logits = -0.5 * eps * pb.d[:, other]  # the library's EM: exp(−ε·d/2) is ε-mDP
    Z = np.exp(logits - logits.max(axis=1, keepdims=True))
    Z /= Z.sum(axis=1, keepdims=True)
    v = metrics.violations(pb, Z, eps)
    return {"status": "closed form", "loss_m": float(pb.p @ np.einsum("ij,ij->i", pb.c, Z)),
            "floor_m": metrics.floor_m(pb), "violated_pairs": v.violated_pairs, "checked_pairs": v.checked_pairs,
            "violation_ratio": v.ratio, "time_s": time.perf_counter() - t0,
            "message": "EM over other records' locations, scored on the real outputs' cost columns"}


# ---------------------------------------------------------------- a measuring task of the Benders ladder

def benders_partition(point: Point, *, use_cache: bool = True) -> dict[str, Any]:
    """Tables 1–2 of the Benders paper for one sample, on the true haversine or (``distance`` = 'swapped') on the
    haversine with latitude and longitude swapped, as the artifact's stored distance matrix has it (spec 004 §6):
    the k-m-DV partition's subset and master-component sizes, boundary records and neighbour pairs within η.
    ``kmeans_iters`` caps the Lloyd iterations of k-means (default 10, as lp-bd's partition; 100 = MATLAB's
    ``kmeans`` default, which in these samples runs to convergence). ``kmeans_runs`` > 1 partitions the one sample
    that many times (k-means seeds seed, seed + 1000, ...), as ten runs of the artifact on its one fixed sample
    would: the sizes are then means over the runs, with the spread of the largest master component
    (``part.mp_max_sd``) and whether its mean is at most 50 records (``part.mp_max_below_50``)."""
    t0 = time.perf_counter()
    pb = problem_of(point)
    prm = point.params
    d = pb.d
    if prm.get("distance") == "swapped":
        d = pairwise_haversine_km(pb.x_lon, pb.x_lat, pb.x_lon, pb.x_lat)
    runs = [partition_sizes(d, np.asarray(pb.xy_km), str(prm.get("partitioner", "kmeans-dv")),
                            int(prm.get("subsets", 25)), point.seed + 1000 * r, int(prm.get("kmeans_iters", 10)))
            for r in range(int(prm.get("kmeans_runs", 1)))]
    common = set(runs[0]).intersection(*runs)  # a run whose partition leaves no boundary has no master sizes
    stats: dict[str, Any] = {k: float(np.mean([run[k] for run in runs])) for k in sorted(common)}
    if len(runs) > 1:  # one sample, several k-means runs (as the artifact's fixed sample): their spread
        largest = [run["mp_max"] for run in runs if "mp_max" in run]
        stats.update(mp_max_sd=float(np.std(largest, ddof=1)), mp_max_below_50=float(np.mean(largest) <= 50))
    with np.errstate(invalid="ignore", divide="ignore"):
        stretch = np.median((d / pb.d)[pb.d > 0])
    return {"status": "measured", **{f"part.{k}": v for k, v in stats.items()},
            "part.median_stretch": float(stretch), "time_s": time.perf_counter() - t0}


def benders_dataset_partition(point: Point, *, use_cache: bool = True) -> dict[str, Any]:
    """Tables 1–2 of the Benders paper on one of its non-road datasets (``dataset``: the paper's grid, the
    artifact's grid, or 3-D Gaussian vectors; ``mdpviz.reproduce.benders.dataset_records``), ``problem['k']``
    records, Euclidean distance: the partition's subset and master-component sizes (k-means seeded by the point's
    seed), and the larger of the largest subproblem (internal records) and the largest master component
    (``part.largest``: the claim bounds both)."""
    t0 = time.perf_counter()
    prm = point.params
    d, xy = dataset_records(str(prm["dataset"]), int(point.problem["k"]), point.seed)
    stats = partition_sizes(d, xy, str(prm.get("partitioner", "kmeans-dv")), int(prm.get("subsets", 25)), point.seed,
                            int(prm.get("kmeans_iters", 10)))
    out: dict[str, Any] = {"status": "measured", **{f"part.{k}": v for k, v in stats.items()},
                           "time_s": time.perf_counter() - t0}
    out["part.largest"] = max(stats["int_max"], stats.get("mp_max", 0))
    return out
