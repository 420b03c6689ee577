"""Examples that follow the regime map: for each seed paper's method, the committed grid's cell where it beats the
exponential mechanism by the widest margin while keeping its claim, as a one-click dashboard example that sets the
whole problem; the same for our variant of the seed (a preset named ``ours``), apart; and, for a seed whose own
methods win nowhere, what happens to them most often and why."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..verdict import notes, plain_degenerate
from .grid import Method, methods
from .report import region_label

# the seed papers' own methods in the grid (C-mDP runs on trajectories, outside it)
SEEDS = {"PAnDA": ("panda-",), "DISTA-LP": ("dista-lp",),
         "AIPO": ("aipo", "aipo-e", "aipo:"), "Benders": ("lp-bd",)}


def is_ours(name: str) -> bool:
    """Whether a grid method is our variant of a seed (its preset ``ours``), not the paper's."""
    return name.endswith(":ours")


def _of_seed(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or (p.endswith(("-", ":")) and name.startswith(p)) or name.startswith(p + ":")
               for p in prefixes)


def cell_values(row: Any, method: Method) -> dict[str, Any]:
    """The dashboard settings of one cell of the grid (``row``: a row of the cell table) with ``method``: its whole
    problem (seed 0), the mechanism, its preset's parameters and ε."""
    k = int(row["K"])
    outputs = row.get("outputs")
    return {"city": row["city"], "region": row["region"], "k": k,
            "m": int(outputs) if pd.notna(outputs) else min(100, k), "cost": row["cost"],
            "tasks": 1 if row["cost"] == "travel" else 10, "seed": 0, "metric": "haversine", "prior": "uniform",
            "mech": method.mechanism, f"mp.{method.mechanism}.eps": float(row["eps"]),
            **{f"mp.{method.mechanism}.{name}": value for name, value in method.params}}


def seed_examples(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Dashboard examples per seed from ``table`` (the cell table of the grid): the best cell (lowest loss relative
    to EM's) where the paper's methods beat EM, and apart the best where our variant does, each with the problem,
    the method's preset parameters and ε set."""
    by_name = {m.name: m for m in methods()}
    names = table["method"].astype(str)
    winning = (table["outcome"] == "beats EM").to_numpy()
    out = []
    for seed, prefixes in SEEDS.items():
        for ours in (False, True):
            mine = np.array([_of_seed(n, prefixes) and is_ours(n) == ours for n in names], dtype=bool)
            rows = table[mine & winning]
            if rows.empty:
                continue
            best = rows.sort_values(["vs_em", "time_s"]).iloc[0]
            method = by_name.get(str(best["method"]))
            if method is None:
                continue
            out.append(_example(seed, ours, best, method, rows, table))
    return out


def _example(seed: str, ours: bool, best: Any, method: Method, rows: pd.DataFrame,
             table: pd.DataFrame) -> dict[str, Any]:
    """One example: the cell ``best`` of ``method``, with how often it wins."""
    where = (f"{str(best['city']).title()}, {region_label(str(best['region']))}, K = {int(best['K']):,}, "
             f"{best['cost']} cost, ε = {best['eps']:g} km⁻¹")
    who = f"{seed.split(' (')[0]}, our variant," if ours else seed.split(" (")[0]
    return {
        "id": f"regime-{str(best['method']).replace(':', '-')}", "page": "explore", "audience": "research",
        "regime": True, "ours": ours, "label": f"{who} where it wins: {where}",  # shown full width
        "help": (f"From the committed regime grid (docs/regimes/): {method.label} keeps its claim here and its "
                 f"loss is {best['vs_em']:.2f}× the exponential mechanism's ({best['loss_m']:,.0f} m against "
                 f"{best['em_loss_m']:,.0f} m; privacy cost {best['privacy_cost_m']:,.0f} m). It beats EM in "
                 f"{int((rows['method'] == best['method']).sum())} of "
                 f"{int((table['method'] == best['method']).sum())} cells of the grid. Its solve "
                 f"took {best['time_s']:.1f} s there (median over seeds, on the 2-core machine); the page, its map and "
                 "the all-pairs check a few seconds more."
                 + (" Ours, not the paper's: the paper's own version stands beside it." if ours else "")),
        "values": cell_values(best, method)}


# an outcome as a verb phrase after "it"
OUTCOME_VERBS = {"trails EM": "trails EM", "EM not measured": "has no EM to compare with",
                 "claim not measured": "has no measured claim", "degenerate": "is degenerate",
                 "breaks its claim": "breaks its claim", "no result": "gives no mechanism"}


def nowhere(table: pd.DataFrame) -> list[tuple[str, str, int, int, str]]:
    """The seeds whose own methods (our variants aside) beat EM in no cell: (seed, their most common outcome as a
    verb phrase, its count, cells, why in plain words)."""
    out = []
    for seed, prefixes in SEEDS.items():
        rows = table[np.array([_of_seed(str(n), prefixes) and not is_ours(str(n)) for n in table["method"]],
                              dtype=bool)]
        if rows.empty or (rows["outcome"] == "beats EM").any():
            continue
        counts = rows["outcome"].value_counts()
        top = str(counts.index[0])
        whys = [str(w) for w in rows[rows["outcome"] == top]["why"].fillna("") if w]
        out.append((seed, OUTCOME_VERBS.get(top, top), int(counts.iloc[0]), len(rows), reason(top, whys)))
    return out


def reason(outcome: str, whys: list[str]) -> str:
    """Why cells have ``outcome``, in plain words, from their notes (``why``): for "breaks its claim" the break
    measured in one of them (a collapse noted beside it is a degeneracy of its own, not the break), else the
    degenerate kind in plain words or the first note's words."""
    if outcome == "breaks its claim":
        broken = next((n.details for why in whys for n in notes(why) if n.kind == "claim not met" and n.details), "")
        if broken:
            return f"in one of them {broken}"
    why = whys[0] if whys else ""
    return plain_degenerate(why) or why.split(" (")[0].split("; ")[0]
