"""Benders (seed 004): Tables 1–3 on the road dataset: subset sizes, master-problem sizes and time of LP+BD with
the four partitionings, beside the classic LP.

The paper's road dataset: N = 500 nodes sampled in the central 1/20 of the Rome box (the artifact's
REGION_SCALE = 20, read as 1/20 of each side), haversine metric, neighbours within η = 2 km, ε = 10 km⁻¹,
M = 25 subsets, |Y| = 100 outputs drawn from the records, cost = travel distance error to one task node.
Tables 1 and 2 are properties of the partition of the paper's neighbour graph (computed for every point, even
when the solve stops); Table 3 is the solve time. The grid, text and synthetic datasets are not rerun (they are
not road networks; mdpviz builds problems on cities).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..errors import MdpvizError
from ..sweep import Point, params_of, problem_of, solve_point
from . import common as cm
from .base import ChartSpec, Comparison, Experiment, comparison_row, find_preset, fit_params, mean_pm, paper_value, \
    rows_of, sizes
from .registry import register

PAPER = "benders"
ETA_KM = 2.0
EPS = 10.0
SUBSETS = 25
PARTITIONERS = (("kmeans-dv", "k-m-DV"), ("kmeans-rec", "k-m-rec"), ("kmeans-adj", "k-m-adj"), ("spectral", "BSC"))
LP_METHODS = (("simplex", "LP dual-simplex"), ("ipm", "LP interior-point"))


def central_box(city: str, scale: float = 20.0) -> str:
    """The central 1/``scale`` of the city's box (each side), as a region ``S,W,N,E``."""
    from ..cities import list_cities

    info = next(c for c in list_cities() if c.slug == city)
    s, w, n, e = info.bbox
    cl, co, hl, ho = (s + n) / 2, (w + e) / 2, (n - s) / (2 * scale), (e - w) / (2 * scale)
    return f"{cl - hl:.6f},{co - ho:.6f},{cl + hl:.6f},{co + ho:.6f}"


def partition_sizes(d: np.ndarray, xy: np.ndarray, method: str, subsets: int, seed: int) -> dict[str, Any]:
    """Tables 1–2 for one partition of the neighbour graph (d ≤ η): sizes of the subsets and of the connected
    components of the master problem's graph (boundary records joined by cross-subset neighbour pairs)."""
    from ..lp.benders import partition

    n = len(d)
    pi, pj = np.nonzero((d <= ETA_KM) & ~np.eye(n, dtype=bool))
    labels = partition(method, subsets, d, xy, pi.astype(np.int64), pj.astype(np.int64), seed=seed)
    sub = np.bincount(labels)
    cross = labels[pi] != labels[pj]
    boundary = np.unique(np.concatenate([pi[cross], pj[cross]]))
    out = {"subsets": int(len(sub)), "sub_avg": float(sub.mean()), "sub_max": int(sub.max()),
           "boundary": int(len(boundary)), "neighbour_pairs": int(len(pi))}
    if len(boundary):
        g = coo_matrix((np.ones(int(cross.sum())), (pi[cross], pj[cross])), shape=(n, n))
        _, comp = connected_components(g, directed=False)
        sizes_ = np.bincount(comp[boundary])
        sizes_ = sizes_[sizes_ > 0]
        out.update(mp_avg=float(sizes_.mean()), mp_max=int(sizes_.max()), mp_components=int(len(sizes_)))
    return out


def measure(point: Point, *, use_cache: bool = True) -> dict[str, Any]:
    """Solve (``solve_point``), then add the partition's Tables 1–2 sizes (``part.*``) for LP+BD points; a solve
    the library refuses (an LP too large for memory) is a row with status 'refused' and its message, so the
    partition's sizes are still measured."""
    try:
        row = solve_point(point, use_cache=use_cache)
    except MdpvizError as e:
        row = {"status": "refused", "message": str(e)}
    if point.mechanism == "lp-bd":
        pb = problem_of(point)
        params = params_of(point)
        stats = partition_sizes(pb.d, np.asarray(pb.xy_km), params.get("partitioner", "kmeans-dv"),
                                int(params.get("subsets", SUBSETS)), int(params.get("seed", point.seed)))
        row.update({f"part.{k}": v for k, v in stats.items()})
    return row


def _settings(size: str) -> dict[str, Any]:
    return {"n": sizes(size, 30, 100, 500), "seeds": sizes(size, [0], [0], [0, 1, 2, 3, 4]),
            "time_limit": sizes(size, 3.0, 15.0, 600.0), "outputs": sizes(size, 10, 100, 100),
            "subsets": sizes(size, 4, SUBSETS, SUBSETS)}


def _wanted(mechanism: str, extra: dict[str, Any]) -> dict[str, Any]:
    """The paper's road setting for ``mechanism``: its 'paper' preset where it has one, then ε, η and the
    neighbour constraint set (under either name the mechanisms have used: ``pairs`` or ``scope``), then ``extra``."""
    preset = find_preset(mechanism, "paper")
    return {**(preset[1] if preset else {}), "eps": EPS, "eta": ETA_KM, "pairs": "neighbours", "scope": "neighbours",
            **extra}


def points(size: str, mode: str) -> list[Point]:
    """The Benders experiment's grid (Tables 1–3) for ``size`` and ``mode``."""
    s = _settings(size)
    problem = {"city": "rome", "k": s["n"], "n_outputs": s["outputs"], "cost": "travel", "n_tasks": 1,
               "metric": "haversine", "region": central_box("rome")}
    out = []
    for name, label in PARTITIONERS:
        params, _ = fit_params("lp-bd", _wanted("lp-bd", {"subsets": s["subsets"], "partitioner": name}))
        out += [Point(problem, "lp-bd", params, seed, task="mdpviz.reproduce.benders:measure",
                      time_limit=s["time_limit"], tags={"label": label}) for seed in s["seeds"]]
    for method, label in LP_METHODS:
        params, _ = fit_params("lp", _wanted("lp", {"solver": "monolithic", "method": method}))
        out += [Point(problem, "lp", params, seed, task="mdpviz.reproduce.benders:measure",
                      time_limit=s["time_limit"], tags={"label": label}) for seed in s["seeds"]]
    return out


def _notes(size: str) -> list[str]:
    s = _settings(size)
    notes = [f"Rome, region {central_box('rome')} (central 1/20 of each side of the box), N = {s['n']} "
             f"(the paper: 500), {len(s['seeds'])} instance(s) (the paper: 10), |Y| = {s['outputs']}, "
             f"ε = {EPS:g} km⁻¹, "
             f"η = {ETA_KM:g} km, M = {s['subsets']} subsets, {s['time_limit']:g} s per solve (the paper: 1,800 s, "
             "and MaxIter = 10,000 for linprog).",
             "Tables 1–2 are computed on the partition of the paper's neighbour graph (pairs within η), with the "
             "partitioner's seed; the subset size is |R_l| (what the artifact saves).",
             "Not rerun: the grid-map, text and synthetic datasets (rows kept in the paper values file)."]
    for mech in ("lp-bd", "lp"):
        kept, dropped = fit_params(mech, _wanted(mech, {}))
        preset = find_preset(mech, "paper")
        notes.append(f"`{mech}` settings: " + ", ".join(f"{k}={v}" for k, v in kept.items())
                     + (f" (its '{preset[0]}' preset, then the table's settings)" if preset else ""))
        notes += [f"{mech}: {n}" for n in dropped if "scope" not in n and "pairs" not in n]
        if not {"pairs", "scope"} & set(kept):
            notes.append(f"`{mech}` has no neighbour-only constraint set: it solves another LP than the paper's")
    return notes


def _reason_time(runs: Sequence[Mapping[str, Any]], label: str) -> str:
    if why := cm.failed(runs):
        return why
    parts = [cm.hardware_reason()]
    its = cm.values(runs, "d.iterations")
    if its:
        parts.append(f"{np.mean(its):.0f} Benders iterations (gap {runs[0].get('param.gap', '')})")
    if "neighbours" not in (runs[0].get("param.pairs"), runs[0].get("param.scope")):
        parts.append("ours solves the all-pairs LP here (no neighbour-only option), not the paper's neighbour LP")
    return "; ".join(parts)


def compare(records: list[dict[str, Any]], size: str, mode: str) -> Comparison:
    """Our Benders numbers beside the paper's Tables 1–3, with the reason where they differ."""
    rows = [r for r in rows_of(records) if r.get("tag.label")]
    out: list[dict[str, Any]] = []
    n = _settings(size)["n"]
    setting = f"N = {n}" + ("" if n == 500 else " (paper: N = 500)")
    for (label,), runs in cm.group(rows, "tag.label").items():
        if label.startswith("k-m") or label == "BSC":
            for table, key, metric in (("Table 1", "part.sub_avg", "subproblem_size:avg"),
                                       ("Table 1", "part.sub_max", "subproblem_size:max"),
                                       ("Table 2", "part.mp_avg", "master_component_size:avg"),
                                       ("Table 2", "part.mp_max", "master_component_size:max")):
                mean, pm, k = mean_pm(cm.values(runs, key))
                paper = paper_value(PAPER, source=table, dataset="road", method=label, metric=metric)
                bnd = cm.values(runs, "part.boundary")
                reason = (f"{np.mean(bnd):.0f} of {n} records are boundary records here; subset sizes follow the "
                          "sample's density and the partitioner's k-means seeds" if bnd else cm.failed(runs))
                out.append(comparison_row(table=table, city="rome", setting=setting, x=label, method=label,
                                          metric=metric, unit="records", ours=mean, ours_pm=pm, n=k, paper=paper,
                                          reason=reason))
            paper_label = f"BD {label}"
        else:
            paper_label = label
        mean, pm, k = mean_pm(cm.values(runs, lambda r: r.get("time_s") if "loss_m" in r else None))
        paper = paper_value(PAPER, source="Table 3", dataset="road", method=paper_label)
        out.append(comparison_row(table="Table 3", city="rome", setting=setting, x=label, method=paper_label,
                                  metric="time", unit="s", ours=mean, ours_pm=pm, n=k, paper=paper,
                                  reason=_reason_time(runs, label)))
        loss = mean_pm(cm.values(runs, "loss_m"))
        out.append(comparison_row(table="Table 3", city="rome", setting=setting, x=label, method=paper_label,
                                  metric="utility_loss", unit="m", ours=loss[0], ours_pm=loss[1], n=loss[2],
                                  paper=None, reason=cm.status_text(runs)))
    return Comparison(out, _notes(size), chart=[r for r in out if r["metric"] == "time"])


TABLES = register(Experiment(
    name="benders-tables", paper=PAPER, title="Benders Tables 1–3: subset sizes, master size and time (road data)",
    summary=__doc__.split("\n\n")[1].replace("\n", " "), points=points, compare=compare,
    chart=ChartSpec("time", "method", "time (s)", log_y=True, table="Table 3")))
