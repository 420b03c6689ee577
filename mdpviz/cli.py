"""The command line: ``python -m mdpviz {cities,download,problem} ...`` (``--help`` on each)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from .errors import MdpvizError


def _problem_args(p: argparse.ArgumentParser) -> None:
    """Options shared by every command that builds a problem."""
    from .cities import default_city
    from .problem import COST_MODELS, DEFAULT_TASKS, METRICS, PRIORS

    g = p.add_argument_group("problem")
    g.add_argument("--city", default=None, help=f"bundled or cached city (default: {default_city()})")
    g.add_argument("--points", metavar="FILE.csv", help="build X from a CSV of lat,lon[,weight] instead of sampling")
    g.add_argument("--k", type=int, default=500, help="number of secrets |X| (default 500)")
    g.add_argument("--outputs", type=int, default=None, help="number of outputs |Y| (default min(100, K))")
    g.add_argument("--all-outputs", action="store_true", help="use Y = X")
    g.add_argument("--metric", choices=METRICS, default="haversine", help="mDP metric, in km (default haversine)")
    g.add_argument("--prior", choices=PRIORS, default="uniform", help="prior over X (default uniform)")
    g.add_argument("--prior-points", metavar="FILE.csv", help="points for --prior points")
    g.add_argument("--cost", choices=COST_MODELS, default=None,
                   help="utility cost in metres: travel to tasks or plain distance (default travel)")
    g.add_argument("--tasks", type=int, default=DEFAULT_TASKS, help=f"task nodes of the travel cost ({DEFAULT_TASKS})")
    g.add_argument("--seed", type=int, default=0, help="seed for X, Y and tasks (default 0)")


def problem_from_args(a: argparse.Namespace) -> Any:
    """Build the Problem the shared options describe."""
    from .problem import build_problem, problem_from_points

    if a.points:
        return problem_from_points(a.points, a.city, n_outputs=a.outputs, all_outputs=a.all_outputs,
                                   metric=a.metric, cost=a.cost, n_tasks=a.tasks, seed=a.seed)
    return build_problem(a.city, a.k, n_outputs=a.outputs, all_outputs=a.all_outputs, metric=a.metric,
                         prior=a.prior, prior_points=a.prior_points, cost=a.cost or "travel", n_tasks=a.tasks,
                         seed=a.seed)


def cmd_cities(a: argparse.Namespace) -> int:
    from .cities import list_cities

    rows = list_cities()
    print(f"{'city':<16} {'nodes':>7} {'edges':>7}  {'bbox (S, W, N, E) deg':<44} source")
    for i, c in enumerate(rows):
        bbox = ", ".join(f"{b:.4f}" for b in c.bbox)
        tag = " (default)" if i == 0 else ("" if c.bundled else " (cached download)")
        print(f"{c.slug:<16} {c.nodes:>7} {c.edges:>7}  {bbox:<44} {c.source}{tag}")
    return 0


def cmd_download(a: argparse.Namespace) -> int:
    from .cities import download_city

    bbox = tuple(a.bbox) if a.bbox else None
    info = download_city(place=a.place, bbox=bbox, network_type=a.network_type, name=a.name)  # type: ignore[arg-type]
    print(f"saved {info.slug}: {info.nodes} nodes, {info.edges} edges; load it with --city {info.slug}")
    return 0


def cmd_problem(a: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    problem = problem_from_args(a)
    summary = problem.summary()
    summary["wall_s"] = round(time.perf_counter() - t0, 3)
    if a.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        width = max(len(k) for k in summary)
        for key, value in summary.items():
            shown = f"{value:.4g}" if isinstance(value, float) else value
            print(f"{key:<{width}}  {shown}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mdpviz",
                                     description="Build, solve and evaluate metric-DP mechanisms on road networks.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("cities", help="list the cities that load offline (bundled and cached)")
    p.set_defaults(func=cmd_cities)

    p = sub.add_parser("download", help="download a city with osmnx into the cache (needs network)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--place", help='a place name, e.g. "Piedmont, California, USA"')
    where.add_argument("--bbox", type=float, nargs=4, metavar=("S", "W", "N", "E"), help="a box in degrees")
    p.add_argument("--network-type", default="drive", help="osmnx network type (default drive)")
    p.add_argument("--name", help="slug to store it under")
    p.set_defaults(func=cmd_download)

    p = sub.add_parser("problem", help="build a problem and print its summary")
    _problem_args(p)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_problem)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except MdpvizError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
