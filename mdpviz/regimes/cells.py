"""The regime grid's records as one row per cell and method, and the queries the page and the report ask of it.

A row aggregates a method's seeds on one cell (city, region, K, cost, ε): mean loss, floor and privacy cost (m),
the exact LP's loss on the same seeds where it was optimal, the privacy cost as a share of the LP's, the EM's loss
on the same seeds, privacy against the method's own claim and against ε-mDP on all pairs, the degenerate flag,
statuses and the median time. Each row gets one **outcome**, decided in this order:

- ``no result``: some seed gave no mechanism (time limit, error, a region too small for K);
- ``breaks its claim``: some seed violates what the method claims (measured by our exact check);
- ``degenerate``: some seed's release is degenerate (collapsed, uploads erased, not ε-mDP by design);
- ``claim not measured``: the method claims less than all pairs and reports no check of it;
- ``beats EM``: sound, and its loss is at least ``MARGIN`` (1 %) below the exponential mechanism's on every seed;
- ``trails EM``: sound, but not below EM on every seed (EM itself is ``reference``);
- ``EM not measured``: sound, but EM has no result on some of its seeds, so there is nothing to compare with.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .grid import REGIONS_KM

OUTCOMES = ("beats EM", "reference", "trails EM", "EM not measured", "claim not measured", "degenerate",
            "breaks its claim", "no result")
SOUND = ("beats EM", "reference", "trails EM", "EM not measured")  # outcomes of a method that keeps its claim
CELL = ["city", "region", "K", "cost", "eps"]
REFERENCE = "em"  # the method every other one is measured against
MARGIN = 0.01  # "beats EM": a loss at least this share below EM's on every seed (not a rounding-size difference)
LP = "lp"  # the exact LP: the least privacy cost of all ε-mDP mechanisms on X


def flat_rows(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per (cell, method, seed): the point's tags beside its measurements (an error becomes a status)."""
    rows = []
    for rec in records:
        point = rec["point"]
        row = {**point["tags"], "seed": point["seed"]}
        if rec.get("error"):
            row.update(status="error", message=str(rec["error"]))
        else:
            row.update(rec["rows"][0])
        rows.append(row)
    return pd.DataFrame(rows)


def _mean_ci(values: pd.Series) -> tuple[float, float]:
    """Mean and the half-width of its 95 % t-interval (NaN with one value)."""
    v = values.dropna().to_numpy(dtype=float)
    if len(v) == 0:
        return math.nan, math.nan
    if len(v) == 1:
        return float(v[0]), math.nan
    half = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return float(v.mean()), half


def _outcome(g: pd.DataFrame, method: str) -> str:
    has_z = g["loss_m"].notna() if "loss_m" in g else pd.Series(False, index=g.index)
    if not has_z.all():
        return "no result"
    # kept or not, as the verdict decides (PAnDA's δ allowance included); records made before ``claim_kept``
    # existed are judged by their count
    kept = g["claim_kept"] if "claim_kept" in g else pd.Series(np.nan, index=g.index)
    broken = kept.eq(False) | (kept.isna() & (g.get("claim_violated", pd.Series(0, index=g.index)).fillna(0) > 0))
    if bool(broken.any()):
        return "breaks its claim"
    if (g["degenerate"].fillna("") != "").any():
        return "degenerate"
    if "claim_checked" not in g or g["claim_checked"].isna().any():
        return "claim not measured"
    if method == REFERENCE:
        return "reference"
    if g["em_loss_m"].isna().any():  # no EM on some seed: nothing to compare with (never "trails" by default)
        return "EM not measured"
    return "beats EM" if bool((g["loss_m"] < (1 - MARGIN) * g["em_loss_m"]).all()) else "trails EM"


def cell_table(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per (cell, method): see the module docstring for the columns and the outcome."""
    flat = flat_rows(records)
    if flat.empty:
        return pd.DataFrame(columns=[*CELL, "method", "outcome"])
    for col in ("loss_m", "floor_m", "privacy_cost_m", "claim_violated", "claim_checked", "violation_ratio",
                "time_s", "degenerate", "message"):
        if col not in flat:
            flat[col] = np.nan if col not in ("degenerate", "message") else ""
    key = [*CELL, "seed"]
    em = flat[flat["method"] == REFERENCE].set_index(key)["loss_m"].rename("em_loss_m")
    lp = flat[(flat["method"] == LP) & (flat["status"] == "optimal")].set_index(key)["loss_m"].rename("lp_loss_m")
    flat = flat.join(em, on=key).join(lp, on=key)
    lp_cost = flat["lp_loss_m"] - flat["floor_m"]
    flat["share_of_lp"] = np.where(lp_cost > 1e-3, (flat["loss_m"] - flat["floor_m"]) / lp_cost, np.nan)
    out = []
    for (*cell, method), g in flat.groupby([*CELL, "method"], sort=False, dropna=False):
        loss, loss_ci = _mean_ci(g["loss_m"])
        cost, cost_ci = _mean_ci(g["privacy_cost_m"])
        statuses = ", ".join(f"{s} ×{n}" if n > 1 else str(s) for s, n in g["status"].value_counts().items())
        reason = next((t for t in (*g["degenerate"].fillna(""), *g["message"].fillna("")) if t), "")
        outputs = g["m"].dropna() if "m" in g else pd.Series(dtype=float)
        out.append({**dict(zip(CELL, cell, strict=True)), "method": method, "seeds": len(g),
                    "outputs": int(outputs.max()) if len(outputs) else None,
                    "outcome": _outcome(g, str(method)), "loss_m": loss, "loss_ci95_m": loss_ci,
                    "floor_m": g["floor_m"].mean(), "privacy_cost_m": cost, "privacy_cost_ci95_m": cost_ci,
                    "lp_loss_m": g["lp_loss_m"].mean(), "share_of_lp": g["share_of_lp"].mean(),
                    "em_loss_m": g["em_loss_m"].mean(),
                    "vs_em": (g["loss_m"] / g["em_loss_m"]).mean() if g["em_loss_m"].notna().any() else math.nan,
                    "claim_violated": g["claim_violated"].max(), "claim_checked": g["claim_checked"].max(),
                    "all_pairs_violation_ratio": g["violation_ratio"].mean(), "time_s": g["time_s"].median(),
                    "status": statuses, "why": str(reason)[:300]})
    return pd.DataFrame(out)


def rank(table: pd.DataFrame, **cell: Any) -> pd.DataFrame:
    """The methods of one cell (``city``, ``region``, ``K``, ``cost``, ``eps``), sound ones first by privacy cost,
    then the others by outcome."""
    mask = np.ones(len(table), dtype=bool)
    for name, value in cell.items():
        mask &= (table[name] == value).to_numpy()
    rows = table[mask].copy()
    sound = rows["outcome"].isin(SOUND)
    rows["_order"] = np.where(sound, 0, 1 + rows["outcome"].map({o: i for i, o in enumerate(OUTCOMES)}))
    return rows.sort_values(["_order", "privacy_cost_m"], na_position="last").drop(columns="_order")


def method_map(table: pd.DataFrame, method: str, **fixed: Any) -> pd.DataFrame:
    """One method's outcomes over ε × region (rows: regions from small to whole; columns: ε), for the other cell
    settings in ``fixed`` (city, K, cost)."""
    mask = (table["method"] == method).to_numpy().copy()
    for name, value in fixed.items():
        mask &= (table[name] == value).to_numpy()
    rows = table[mask]
    order = sorted(rows["region"].unique(), key=lambda r: REGIONS_KM.get(r, math.inf))
    return rows.pivot_table(index="region", columns="eps", values="outcome", aggfunc="first").reindex(order)
