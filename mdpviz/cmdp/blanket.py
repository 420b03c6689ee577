"""Markov blanket discovery (the paper's Algorithm 1) per group of (hour, speed bin, region cell), and prediction
(Algorithm 2) from any predictor of the test outcome.

Grouping follows spec §4.2 with two labelled simplifications: the speed of a slot is its mean speed over the last Γ
hops (a fixed window, so a slot's group does not depend on the blanket being tested), and the bin widths are
parameters (the paper: 1 h, 5 mph, its city's grid; the defaults here are coarser because synthetic corpora are
small). Groups with fewer than ``min_group`` complete slots (paper: 200) are not tested; Algorithm 1 on the pooled
data gives their lookup-table blanket.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .citest import g_test
from .corpus import Slots

MPH_PER_KMH = 0.621371
MAX_MPH = 120.0


@dataclass(frozen=True)
class Grouping:
    """How slots are grouped: hours per time group, mph per speed bin, region grid cells per side."""

    hour_bin_h: int = 6
    speed_bin_mph: float = 10.0
    region_grid: int = 2

    @property
    def n_hours(self) -> int:
        """Number of hour-of-day bins."""
        return int(np.ceil(24 / self.hour_bin_h))

    @property
    def n_speeds(self) -> int:
        """Number of speed bins up to the maximum speed."""
        return int(np.ceil(MAX_MPH / self.speed_bin_mph))

    @property
    def n_regions(self) -> int:
        """Number of region cells (a square grid)."""
        return self.region_grid ** 2


def slot_features(slots: Slots, station_xy_km: NDArray[np.float64], grouping: Grouping) -> NDArray[np.int64]:
    """(n, 3) integer features per slot: hour group, speed bin (mph), region cell of the slot's station."""
    hg = slots.hour // grouping.hour_bin_h
    sb = np.clip(np.floor(slots.speed_kmh * MPH_PER_KMH / grouping.speed_bin_mph), 0, grouping.n_speeds - 1)
    lo, hi = station_xy_km.min(axis=0), station_xy_km.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    ij = np.minimum((grouping.region_grid * (station_xy_km - lo) / span).astype(np.int64), grouping.region_grid - 1)
    region = (ij[:, 1] * grouping.region_grid + ij[:, 0])[slots.station]  # row = north, column = east
    return np.column_stack([hg, sb.astype(np.int64), region]).astype(np.int64)


def _strata(lags: NDArray[np.int64], m: int, k: int) -> NDArray[np.int64]:
    """One integer per sample for the values of lags 1..m (K-ary code)."""
    code = np.zeros(len(lags), dtype=np.int64)
    for tau in range(m):
        code = code * (k + 1) + lags[:, tau] + 1
    return code


def algorithm1(station: NDArray[np.int64], lags: NDArray[np.int64], k: int, alpha: float = 0.05,
               min_per_df: float = 2.0) -> tuple[int, list[float]]:
    """Markov blanket size of X_t in its context by the paper's Algorithm 1.

    B ← {X_{t−1}}; while H0: X_t ⫫ X_{t−m−1} | B is rejected (p ≤ α), add X_{t−m−1}. Stops at Γ (the number of
    lag columns). Returns (|B|, p-values of the tests run, in order).
    """
    gamma = lags.shape[1]
    m, pvals = 1, []
    while m < gamma:
        res = g_test(station, lags[:, m], _strata(lags, m, k), min_per_df)
        pvals.append(res.p)
        if res.p > alpha:
            break
        m += 1
    return m, pvals


@dataclass(frozen=True, eq=False)
class Discovery:
    """Algorithm 1 on every group with enough data, and on the pooled data.

    Attributes:
        groups: one row per group: hour_group, speed_bin, region, n, tested, blanket, p1..p{Γ−1} (NaN where a
            test was not run).
        pooled_blanket: Algorithm 1's blanket size on all complete slots.
        train_x: (rows, 4) features (hour group, speed bin, region, m) of the labelled hypotheses.
        train_y: labels: 1 = "fail to reject" (the paper's positive class), 0 = "reject".
        max_lag: Γ.
    """

    groups: pd.DataFrame
    pooled_blanket: int
    pooled_p: list[float]
    train_x: NDArray[np.int64]
    train_y: NDArray[np.int64]
    max_lag: int

    def lookup(self, features: NDArray[np.int64]) -> NDArray[np.int64]:
        """Blanket size per slot from the table: its group's Algorithm 1 result, the pooled one if untested."""
        tested = self.groups[self.groups.tested]
        table = {(int(a), int(b), int(c)): int(m) for a, b, c, m in
                 tested[["hour_group", "speed_bin", "region", "blanket"]].itertuples(index=False)}
        keys = pd.MultiIndex.from_arrays([features[:, 0], features[:, 1], features[:, 2]])
        found = pd.Series(table, dtype="float64").reindex(keys).to_numpy() if table else np.full(len(keys), np.nan)
        return np.where(np.isnan(found), self.pooled_blanket, found).astype(np.int64)


def discover(slots: Slots, features: NDArray[np.int64], k: int, *, alpha: float = 0.05, min_group: int = 200,
             min_per_df: float = 2.0) -> Discovery:
    """Run Algorithm 1 per (hour group, speed bin, region) group of complete slots and label the hypotheses.

    Labels (spec §4.2): tests before the stop are "reject" (0); the stopping test and every hypothesis with a
    larger conditioning set are "fail to reject" (1). Hypotheses are indexed by m = 1..Γ−1.
    """
    gamma = slots.max_lag
    ok = slots.complete
    st, lags, feat = slots.station[ok], slots.lags[ok], features[ok]
    pooled, pooled_p = algorithm1(st, lags, k, alpha, min_per_df) if len(st) else (1, [])
    keys, inverse, counts = np.unique(feat, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(counts)])
    rows, tx, ty = [], [], []
    for gi, key in enumerate(keys):  # one Algorithm 1 run per group (a handful of vectorised tests each)
        tested = counts[gi] >= min_group
        pv: list[float]
        blanket, pv = (1, [])
        if tested:
            idx = order[bounds[gi]:bounds[gi + 1]]
            blanket, pv = algorithm1(st[idx], lags[idx], k, alpha, min_per_df)
            for m in range(1, gamma):
                tx.append([*key, m])
                ty.append(0 if m < blanket else 1)
        row: dict[str, Any] = {"hour_group": int(key[0]), "speed_bin": int(key[1]), "region": int(key[2]),
                               "n": int(counts[gi]), "tested": bool(tested),
                               "blanket": int(blanket) if tested else None}
        for m in range(1, gamma):
            row[f"p{m}"] = pv[m - 1] if m - 1 < len(pv) else np.nan
        rows.append(row)
    groups = pd.DataFrame(rows)
    if groups.empty:
        groups = pd.DataFrame(columns=["hour_group", "speed_bin", "region", "n", "tested", "blanket"])
    return Discovery(groups=groups, pooled_blanket=int(pooled), pooled_p=[float(p) for p in pooled_p],
                     train_x=np.array(tx, dtype=np.int64).reshape(-1, 4), train_y=np.array(ty, dtype=np.int64),
                     max_lag=gamma)


def algorithm2(features: NDArray[np.int64], max_lag: int,
               predict_reject: Callable[[NDArray[np.int64]], NDArray[np.bool_]]) -> NDArray[np.int64]:
    """Blanket size per slot by the paper's Algorithm 2: extend while the predictor says "reject".

    ``predict_reject`` maps (rows, 4) features (hour group, speed bin, region, m) to booleans.
    """
    n = len(features)
    size = np.ones(n, dtype=np.int64)
    going = np.ones(n, dtype=bool)
    for m in range(1, max_lag):  # one vectorised prediction per hypothesis index
        x = np.column_stack([features, np.full(n, m)])
        going &= predict_reject(x)
        size += going
    return size
