"""``python -m mdpviz bench panda``: PAnDA runtime per phase against K, with anchor counts, written to docs/.

For each K a problem is built on the city (seeded; |Y| outputs), then each variant is solved without the cache.
Rows go to ``docs/benchmarks/panda.csv`` and a Markdown table with the date and machine to ``panda.md``.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

PHASES = ("anchors_s", "eps_bar_s", "xi_s", "lp_build_s", "lp_solve_s", "relaxed_s", "reports_s", "evaluate_s")
COLUMNS = ("city", "k", "outputs", "users", "variant", "eps", "build_problem_s", *PHASES, "total_s", "anchors",
           "anchor_fraction", "mean_anchor_set", "lp_rows", "lp_pairs", "status", "clipped_fraction",
           "phase1_pct", "margin_pct", "phase2_pct", "user_loss_m", "anchor_loss_m", "anpo_objective_m",
           "relaxed_bound_m", "relaxed_status", "ratio", "v_pair", "v_cf")
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"


def machine() -> str:
    """A one-line description of this machine (``report.machine``) and the solver stack."""
    from importlib.metadata import version

    from .report import machine as base

    return f"{base()}, numpy {np.__version__}, highspy {version('highspy')}, {platform.system()} {platform.release()}"


def run(city: str | None, ks: Sequence[int], variants: Sequence[str], users: int, outputs: int, seed: int,
        extra: dict[str, Any], time_limit: float | None, echo: bool = True) -> list[dict[str, Any]]:
    """Solve every (K, variant); one dict per run with the COLUMNS keys."""
    from ..mechanisms import get_mechanism
    from ..problem import build_problem

    rows = []
    for k in ks:
        t0 = time.perf_counter()
        problem = build_problem(city, k, n_outputs=outputs, seed=seed)
        build_s = time.perf_counter() - t0
        for v in variants:
            mech = get_mechanism(f"panda-{v}")
            params = mech.validate({"n_users": users, "seed": seed, **extra})
            t0 = time.perf_counter()
            res = mech.solve(problem, params, lambda *_: None, time_limit)
            total = time.perf_counter() - t0
            dg = res.diagnostics
            split = dg.get("budget_split", {}).get("percent", {})
            vio = dg.get("violations", {})
            util = dg.get("utility", {})
            row = {"city": problem.city, "k": k, "outputs": problem.m, "users": users, "variant": v,
                   "eps": params["eps"], "build_problem_s": build_s,
                   **{p: res.timings.get(p, 0.0) for p in PHASES}, "total_s": total,
                   "anchors": len(dg.get("anchors", [])), "anchor_fraction": dg.get("anchor_fraction"),
                   "mean_anchor_set": dg.get("mean_anchor_set_size"), "lp_rows": dg.get("lp", {}).get("rows_after_merge"),
                   "lp_pairs": dg.get("lp", {}).get("pairs"), "status": res.status,
                   "clipped_fraction": dg.get("lp", {}).get("clipped_fraction"),
                   "phase1_pct": split.get("phase1"), "margin_pct": split.get("margin"), "phase2_pct": split.get("phase2"),
                   "user_loss_m": util.get("user_level_m"), "anchor_loss_m": util.get("anchor_level_m"),
                   "anpo_objective_m": res.objective_m, "relaxed_bound_m": dg.get("relaxed", {}).get("bound_m"),
                   "relaxed_status": dg.get("relaxed", {}).get("status", "skipped"),
                   "ratio": dg.get("relaxed", {}).get("ratio"),
                   "v_pair": f"{vio['V_pair']['violated']}/{vio['V_pair']['checked']}" if "V_pair" in vio else "",
                   "v_cf": f"{vio['V_cf']['violated']}/{vio['V_cf']['checked']}" if "V_cf" in vio else ""}
            rows.append(row)
            if echo:
                phases = " ".join(f"{p[:-2]} {row[p]:.2f}" for p in PHASES)
                print(f"K={k:>5} panda-{v}: total {total:6.2f} s | {phases} | |A| = {row['anchors']} "
                      f"({100 * (row['anchor_fraction'] or 0):.1f}% of K), mean |A_n| {row['mean_anchor_set'] or 0:.1f}, "
                      f"LP rows {row['lp_rows']}, status {res.status}", flush=True)
    return rows


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return "" if value is None else str(value)


def to_markdown(rows: list[dict[str, Any]], command: str, note: str) -> str:
    """The Markdown report: header with date, machine and command, then one table row per run."""
    head = ["K", "variant", "anchors", "anchors/K", "mean A_n size", "anchor sampling s", "ε̄ s", "ξ̂ s", "LP build s",
            "LP solve s", "relaxed s", "total s", "LP rows", "Phase I %", "margin %", "Phase II %", "user loss m",
            "AnPO objective m", "relaxed bound m", "ratio ≤", "V_pair"]
    keys = ["k", "variant", "anchors", "anchor_fraction", "mean_anchor_set", "anchors_s", "eps_bar_s", "xi_s",
            "lp_build_s", "lp_solve_s", "relaxed_s", "total_s", "lp_rows", "phase1_pct", "margin_pct", "phase2_pct",
            "user_loss_m", "anpo_objective_m", "relaxed_bound_m", "ratio", "v_pair"]
    out = io.StringIO()
    out.write("# PAnDA benchmark\n\n")
    out.write(f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}\n")
    out.write(f"- machine: {machine()}\n")
    out.write(f"- command: `{command}`\n")
    if rows:
        r0 = rows[0]
        out.write(f"- city {r0['city']}, |Y| = {r0['outputs']}, N = {r0['users']} users, ε = {r0['eps']} km⁻¹; "
                  "times in seconds, single run each; problem build time (distance matrix) is not included\n")
    if note:
        out.write(f"- {note}\n")
    out.write("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")
    for r in rows:
        out.write("| " + " | ".join(_fmt(r[k]) for k in keys) + " |\n")
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    from ..cli import _parse_value
    from ..paths import atomic_write

    ap = argparse.ArgumentParser(prog="python -m mdpviz bench panda",
                                 description="PAnDA runtime per phase (anchor sampling, ε̄, ξ̂, LP build, LP solve) "
                                             "against K, with anchor counts; writes CSV and Markdown.")
    ap.add_argument("--city", default=None, help="city (default: the default city)")
    ap.add_argument("--k", type=int, nargs="+", default=[500, 1000, 2000, 5000], help="secret-domain sizes K")
    ap.add_argument("--variants", nargs="+", default=["e", "p", "l"], choices=["e", "p", "l"])
    ap.add_argument("--users", type=int, default=50, help="number of users N (default 50)")
    ap.add_argument("--outputs", type=int, default=100, help="|Y| (default 100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="another PAnDA parameter, e.g. eps=15 (repeatable)")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per solve")
    ap.add_argument("--out-dir", type=Path, default=DEFAULT_DIR, help="where panda.csv and panda.md go")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--note", default="", help="a line added to the Markdown header")
    a = ap.parse_args(list(argv) if argv is not None else None)
    extra = {}
    for item in a.param:
        name, _, value = item.partition("=")
        extra[name.strip()] = _parse_value(value.strip())
    print(f"machine: {machine()}")
    rows = run(a.city, a.k, a.variants, a.users, a.outputs, a.seed, extra, a.time_limit)
    if not a.no_write:
        shown = [x for x in (argv if argv is not None else []) if x != a.note and x != "--note"]
        command = "python -m mdpviz bench panda " + " ".join(shown)
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
        atomic_write(a.out_dir / "panda.csv", lambda p: p.write_text(buf.getvalue()))
        md = to_markdown(rows, command.strip(), a.note)
        atomic_write(a.out_dir / "panda.md", lambda p: p.write_text(md))
        print(f"wrote {a.out_dir / 'panda.csv'} and {a.out_dir / 'panda.md'}")
    return 0
