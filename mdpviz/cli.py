"""The command line: ``python -m mdpviz {cities,download,problem} ...`` (``--help`` on each)."""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import metrics
from .benchmarks.grid import check_workers
from .benchmarks.options import check_file, check_folder
from .cities import bundled_cities, default_city, download_city, list_cities, slugify
from .errors import MdpvizError, ParameterError
from .export import FORMATS, check_output, result_name, write_result
from .mechanisms import get_mechanism, mechanisms
from .problem import COST_MODELS, DEFAULT_TASKS, METRICS, PRIORS, build_problem, problem_from_points
from .reference import own_model_words, reference, with_own_lp
from .regimes.run import add_arguments as regimes_arguments
from .regimes.run import main as run_regimes
from .reproduce import DEFAULT_OUT, experiments, get_experiment, reproduce
from .reproduce.ledger import claims, find_claim, ledger, plain_text, write_claims
from .reproduce.report import SHIPPED_DIR
from .reproduce.run import check_out
from .reproduce.witness import witness_lines
from .solve import check_time_limit
from .verdict import degenerate_text, verdict


def _problem_args(p: argparse.ArgumentParser) -> None:
    """Options shared by every command that builds a problem."""
    g = p.add_argument_group("problem")
    g.add_argument("--city", default=None, help=f"bundled or cached city (default: {default_city()})")
    g.add_argument("--points", metavar="FILE.csv", help="build X from a CSV of lat,lon[,weight] instead of sampling")
    g.add_argument("--k", type=int, default=None, help="number of secrets |X| (default 500)")
    g.add_argument("--region", default=None,
                   help="where X is drawn from: whole (default, as in the papers), centre:R (km around the city "
                        "centre), LAT,LON,R (km) or S,W,N,E (degrees)")
    g.add_argument("--outputs", type=int, default=None, help="number of outputs |Y| (default min(100, K))")
    g.add_argument("--all-outputs", action="store_true", help="use Y = X")
    g.add_argument("--metric", choices=METRICS, default="haversine", help="mDP metric, in km (default haversine)")
    g.add_argument("--prior", choices=PRIORS, default="uniform", help="prior over X (default uniform)")
    g.add_argument("--prior-points", metavar="FILE.csv", help="points for --prior points")
    g.add_argument("--cost", choices=COST_MODELS, default=None,
                   help="utility cost in metres: travel to tasks or plain distance (default travel)")
    g.add_argument("--tasks", type=int, default=None, help=f"task nodes of the travel cost ({DEFAULT_TASKS})")
    g.add_argument("--seed", type=int, default=0, help="seed for X, Y and tasks (default 0)")


# the library's names of the problem settings -> the options that set them (for messages)
PROBLEM_OPTIONS = {"k": "--k", "n_outputs": "--outputs", "n_tasks": "--tasks", "seed": "--seed",
                   "prior_points": "--prior-points"}
# a preset's problem settings (``Preset.problem``) -> the attribute of the parsed options each one fills
PRESET_OPTIONS = {"city": "city", "k": "k", "region": "region", "n_outputs": "outputs", "all_outputs": "all_outputs",
                  "cost": "cost", "n_tasks": "tasks"}


def _refuse_ignored(a: argparse.Namespace) -> None:
    """Refuse options another one would silently override: ``--points`` gives the secrets (no ``--k``, ``--region``,
    ``--prior``), ``--all-outputs`` gives Y (no ``--outputs``)."""
    if a.points:
        unused = [opt for opt, given in (("--k", a.k is not None), ("--region", a.region is not None),
                                         ("--prior", a.prior != "uniform"), ("--prior-points", bool(a.prior_points)))
                  if given]
        if unused:
            raise ParameterError(f"`--points` gives the secrets and their weights, so {', '.join(unused)} would be "
                                 "ignored; drop them (or drop --points to sample a city's road nodes).")
    if a.all_outputs and a.outputs is not None:
        raise ParameterError("`--all-outputs` makes every secret an output, so `--outputs` would be ignored; give one "
                             "of them.")


def apply_preset_problem(a: argparse.Namespace) -> list[str]:
    """Fill the problem options the user left out from ``--preset``'s problem (e.g. C-mDP's 16 stations in central
    Rome), then the usual defaults; returns the options the preset set (``--k 16``), to print."""
    _refuse_ignored(a)
    taken: list[str] = []
    if getattr(a, "preset", None) and not a.points:
        mech = get_mechanism(a.mechanism)
        try:
            problem = mech.preset(a.preset).problem_dict()
        except ParameterError as e:
            raise ParameterError(f"`--preset {a.preset}`: {e}") from None
        for name, value in problem.items():
            attr = PRESET_OPTIONS[name]
            chosen = (a.all_outputs or a.outputs is not None) if name == "all_outputs" else getattr(a, attr) is not None
            if not chosen:
                setattr(a, attr, value)
                taken.append(f"--{attr.replace('_', '-')}" + ("" if value is True else f" {value}"))
    a.k = 500 if a.k is None else a.k
    a.region = "whole" if a.region is None else a.region
    a.tasks = DEFAULT_TASKS if a.tasks is None else a.tasks
    return taken


def problem_from_args(a: argparse.Namespace) -> Any:
    """Build the Problem the shared options describe (a refusal names the option, e.g. `--outputs`)."""
    try:
        if a.points:
            return problem_from_points(a.points, a.city, n_outputs=a.outputs, all_outputs=a.all_outputs,
                                       metric=a.metric, cost=a.cost, n_tasks=a.tasks, seed=a.seed)
        return build_problem(a.city, a.k, n_outputs=a.outputs, all_outputs=a.all_outputs, metric=a.metric,
                             prior=a.prior, prior_points=a.prior_points, cost=a.cost or "travel", n_tasks=a.tasks,
                             seed=a.seed, region=a.region)
    except MdpvizError as e:
        text = str(e)
        for name, option in PROBLEM_OPTIONS.items():
            text = text.replace(f"`{name}` = ", f"`{option}` = ").replace(f"needs `{name}`", f"needs `{option}`")
        text = text.replace("pass `city=`", "give `--city`").replace("`prior='points'`", "`--prior points`")
        if text == str(e):
            raise
        raise type(e)(text) from None


def cmd_cities(a: argparse.Namespace) -> int:
    """`cities`: print every bundled city with nodes, edges, extent (km) and credit."""
    rows = list_cities()
    print(f"{'city':<14} {'nodes':>8} {'edges':>8}  {'extent E–W × N–S':<17} {'bbox (S, W, N, E) deg':<42} label")
    for i, c in enumerate(rows):
        bbox = ", ".join(f"{b:.4f}" for b in c.bbox)
        extent = "{:.1f} × {:.1f} km".format(*c.extent_km)
        tag = " (default)" if i == 0 else ("" if c.bundled else " (cached download)")
        print(f"{c.slug:<14} {c.nodes:>8,} {c.edges:>8,}  {extent:<17} {bbox:<42} {c.label}{tag}")
    print("\nOpenStreetMap data © OpenStreetMap contributors (ODbL); sources in data/ATTRIBUTION.md.")
    return 0


NETWORK_TYPES = ("drive", "drive_service", "walk", "bike", "all", "all_public")  # osmnx 2's network types


def cmd_download(a: argparse.Namespace) -> int:
    """`download`: fetch a road network with osmnx (needs internet) and save it as a city."""
    if a.place is not None and not a.place.strip():
        raise MdpvizError("`--place` is empty; give a place name, e.g. --place \"Piedmont, California, USA\".")
    if a.name is not None:
        if not any(c.isascii() and c.isalnum() for c in a.name):  # the slug keeps only a-z and 0-9
            raise MdpvizError(f"`--name` = {a.name!r} has no letters or digits; give a short name such as "
                              "--name piedmont.")
        if slugify(a.name) in {c.slug for c in bundled_cities()}:
            raise MdpvizError(f"`--name {a.name}` is the name of a bundled city, which would hide the download; "
                              "choose another name.")
    if a.bbox is not None:
        s, w, n, e = a.bbox
        if not (-90 <= s < n <= 90 and -180 <= w < e <= 180):  # NaN fails every comparison
            raise MdpvizError(f"`--bbox {' '.join(f'{b:g}' for b in a.bbox)}` is not S W N E in degrees with "
                              "-90 ≤ S < N ≤ 90 and -180 ≤ W < E ≤ 180, e.g. --bbox 37.81 -122.25 37.83 -122.22.")
    bbox = tuple(a.bbox) if a.bbox else None
    info = download_city(place=a.place, bbox=bbox, network_type=a.network_type, name=a.name)
    print(f"saved {info.slug}: {info.nodes} nodes, {info.edges} edges; load it with --city {info.slug}")
    return 0


def cmd_problem(a: argparse.Namespace) -> int:
    """`problem`: build a problem and print its summary (sizes, distance and cost ranges, build time)."""
    apply_preset_problem(a)
    check_problem_args(a)
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


def _parse_value(text: str) -> Any:
    """A --param value: JSON when it parses (numbers, true/false), else the raw string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def mechanism_params(a: argparse.Namespace) -> dict[str, Any]:
    """Parameters from ``--preset NAME`` (the mechanism's preset), then ``--eps`` and repeated ``--param
    name=value`` on top of it."""
    params: dict[str, Any] = {}
    if getattr(a, "preset", None):
        try:
            params.update(get_mechanism(a.mechanism).preset(a.preset).params)
        except ParameterError as e:
            raise ParameterError(f"`--preset {a.preset}`: {e}") from None
    for item in a.param or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ParameterError(f"`--param {item}` must look like name=value, e.g. --param grid=10.")
        params[name.strip()] = _parse_value(value.strip())
    if a.eps is not None:
        if any(item.partition("=")[0].strip() == "eps" for item in a.param or []):
            raise ParameterError("ε is given twice (`--eps` and `--param eps=...`); give it once, with `--eps`.")
        params["eps"] = a.eps
    return params


def cmd_mechanisms(a: argparse.Namespace) -> int:
    """`mechanisms`: print every registered mechanism with its parameters."""
    for mech in mechanisms():
        print(f"{mech.name:<10} {mech.label}")
        print(f"{'':<10} {mech.paper}")
        for p in mech.params:
            unit = ", ".join(w for w in (p.unit, "log scale" if p.log else "") if w)
            print(f"{'':<12} {p.name:<12} {p.range_text():<26} default {p.default!s:<8} {unit}  {p.help}")
        for preset in mech.presets:
            print(f"{'':<12} --preset {preset.name:<14} {preset.label}")
        print()
    return 0


def check_problem_args(a: argparse.Namespace) -> None:
    """Refuse option values that argparse lets through but that mean nothing (before any work starts)."""
    if a.city is not None and not a.city.strip():
        raise MdpvizError("`--city` is empty; give a city slug from `python -m mdpviz cities`, or leave it out.")
    if not a.region.strip():
        raise MdpvizError("`--region` is empty; give `whole` (the whole city, the default), `centre:R` (km), "
                          "`LAT,LON,R` or `S,W,N,E`, or leave it out.")
    for option, value in (("--points", a.points), ("--prior-points", a.prior_points)):
        if value is not None and not value.strip():
            raise MdpvizError(f"`{option}` is empty; give the path of a CSV file (lat, lon[, weight]).")
        if value is not None and Path(value).is_dir():
            raise MdpvizError(f"`{option} {value}` is a folder; give the path of a CSV file (lat, lon[, weight]).")


def check_solve_args(a: argparse.Namespace) -> None:
    """Validate every option of ``solve`` that can be checked before any work: output path, mechanism and its
    parameters, time limit, city."""
    check_problem_args(a)
    if a.out is not None:
        if not a.out.strip():
            raise MdpvizError(f"`--out` is empty; give a file name ending in {', '.join(FORMATS)}, or leave it out.")
        check_output(a.out, "--out")
    get_mechanism(a.mechanism).validate(mechanism_params(a))
    try:
        check_time_limit(a.time_limit)
    except MdpvizError as e:
        raise type(e)(str(e).replace("`time_limit`", "`--time-limit`")) from None


def cmd_solve(a: argparse.Namespace) -> int:
    """`solve`: build a problem, solve one mechanism, print status, loss and the privacy check; optionally write Z."""
    # local: looked up at each call, so a test can monkeypatch mdpviz.solve.solve (tests/test_bad_inputs.py)
    from .solve import solve

    from_preset = apply_preset_problem(a)
    check_solve_args(a)
    if from_preset:
        print(f"preset         {a.preset}'s problem: {' '.join(from_preset)} (any option given on the command line "
              "wins)")
    t0 = time.perf_counter()
    problem = problem_from_args(a)
    build_s = time.perf_counter() - t0

    def progress(phase: str, fraction: float | None) -> None:
        if a.verbose:
            print(f"  .. {phase}" + (f" {fraction:.0%}" if fraction is not None else ""), file=sys.stderr)

    result = solve(problem, a.mechanism, mechanism_params(a), progress=progress, time_limit=a.time_limit,
                   use_cache=not a.no_cache)
    kept = result.kept_point(problem)
    if a.kept and kept is not None:
        print("kept point     the solve stopped without a mechanism; what follows is the feasible point it kept (not "
              "the optimum)")
        result = kept
    print(f"mechanism      {result.mechanism}  {json.dumps(result.params)}")
    print(f"problem        {problem.city or 'points'}: K = {problem.k}, |Y| = {problem.m}, metric {problem.metric}, "
          f"built in {build_s:.2f} s")
    degenerate = degenerate_text(result)
    said = result.message and result.message != degenerate  # a degenerate release's own words have their line
    print(f"status         {result.status}" + (f" ({result.message})" if said else ""))
    if degenerate:
        print(f"DEGENERATE     {degenerate}")
    print("timings        " + ", ".join(f"{k} {v:.3f}" for k, v in result.timings.items()))
    if result.lp_size:
        print("LP size        " + ", ".join(f"{k} {v:,}" for k, v in result.lp_size.items()))
    if result.bound_m is not None:
        print(f"lower bound    {result.bound_m:.3f} m")
    evaluation, ref = None, None
    if result.Z is not None:
        if a.reference:
            limit = (f"its own time limit of {a.time_limit:g} s" if a.time_limit
                     else "no time limit: --time-limit sets one")
            print(f"reference      solving the exact LP at ε = {result.eps:g} km⁻¹ as the yardstick ({limit})",
                  flush=True)
        ref = with_own_lp(reference(problem, result.eps, time_limit=a.time_limit, use_cache=not a.no_cache,
                                    solve_lp=a.reference, progress=progress), problem, result)
        t1 = time.perf_counter()
        evaluation = metrics.evaluate(problem, result.Z, result.eps, result.check_metric)
        v = evaluation["violations"]
        loss = float(evaluation["utility_loss_m"])
        print(f"privacy cost   {ref.privacy_cost_m(loss):.2f} m = utility loss {loss:.2f} m − no-privacy floor "
              f"{ref.floor_m:.2f} m" + (f" ({ref.words(loss).split('; ', 1)[1]})" if "; " in ref.words(loss) else ""))
        if own := own_model_words(result):
            print(f"own model      {own}")
        print(f"adversary err  {evaluation['adversary_error_m']:.2f} m")
        print(f"violations     {v['violated_pairs']:,} / {v['checked_pairs']:,} ordered pairs "
              f"(ratio {v['ratio']:.3g}, tolerance {v['tolerance']:g}, worst loss factor {v['worst_factor']:.4f}; "
              f"claim: {result.claim})")
        print(f"evaluated in   {time.perf_counter() - t1:.2f} s")
    print(f"VERDICT        {verdict(result, evaluation, label=result_name(result)).text()}".replace(
        "\n", "\n               "))
    if result.Z is None and kept is not None:  # a stop that kept a point, without --kept
        print("kept point     the solve kept a feasible point (not the optimum): --kept evaluates it and writes it "
              "with --out")
    if a.out and result.Z is None:
        print(f"nothing written to {a.out}: the solve returned no mechanism (status {result.status}), so there is "
              "no Z to save.", file=sys.stderr)
    elif a.out:
        write_result(a.out, problem, result, evaluation, ref if a.reference else None)
        print(f"wrote          {a.out}")
    return 0 if result.Z is not None else 1


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m mdpviz`` with every subcommand."""
    parser = argparse.ArgumentParser(prog="python -m mdpviz",
                                     description="Build, solve and evaluate metric-DP mechanisms on road networks.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("cities", help="list the cities that load offline (bundled and cached)")
    p.set_defaults(func=cmd_cities)

    p = sub.add_parser("download", help="download a city with osmnx into the cache (needs network)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--place", help='a place name, e.g. "Piedmont, California, USA"')
    where.add_argument("--bbox", type=float, nargs=4, metavar=("S", "W", "N", "E"), help="a box in degrees")
    p.add_argument("--network-type", default="drive", choices=NETWORK_TYPES,
                   help="osmnx network type (default drive)")
    p.add_argument("--name", help="slug to store it under")
    p.set_defaults(func=cmd_download)

    p = sub.add_parser("problem", help="build a problem and print its summary")
    _problem_args(p)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_problem)

    p = sub.add_parser("mechanisms", help="list the registered mechanisms and their parameters")
    p.set_defaults(func=cmd_mechanisms)

    p = sub.add_parser("solve", help="solve a mechanism on a problem and print its metrics")
    _problem_args(p)
    p.add_argument("--mechanism", required=True, help="a name from `python -m mdpviz mechanisms`")
    p.add_argument("--eps", type=float, default=None, help="privacy budget ε in km⁻¹ (default: the mechanism's)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="another mechanism parameter (repeatable)")
    p.add_argument("--preset", metavar="NAME", help="start from one of the mechanism's presets (`mechanisms` lists "
                   "them: the paper's, the authors' code's, ours); --eps and --param apply on top of it")
    p.add_argument("--time-limit", type=float, default=None, help="seconds for the solver")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    p.add_argument("--reference", action="store_true",
                   help="also solve the exact LP (Optimal LP, ε-mDP on all pairs; cached, within --time-limit) and "
                        "state the privacy cost as a share of the LP's")
    p.add_argument("--out", metavar="FILE",
                   help=f"write Z and metadata, the format by extension: {', '.join(FORMATS)} (checked before "
                        "solving; the folder must exist; nothing is written when the solve gives no Z)")
    p.add_argument("--kept", action="store_true",
                   help="when the solve stops without a mechanism but kept a feasible point (the exact LP at a time "
                        "limit, ...), evaluate that point and write it with --out; its status stays the stop's and "
                        "its message says it is not the optimum")
    p.add_argument("-v", "--verbose", action="store_true", help="print progress to stderr")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("reproduce", help="rerun the seed papers' tables and write reports beside the papers' numbers")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="experiments to run (`--list` names them; `all` = every one)")
    p.add_argument("--list", action="store_true", help="list the experiments and exit")
    p.add_argument("--claims", action="store_true",
                   help="print the claims ledger (every headline claim of the five papers, its verdict and measured "
                        "cause) judged from the committed runs in docs/reproduce, or from --out's runs (then also "
                        "written to --out/CLAIMS.md)")
    p.add_argument("--json", action="store_true", help="with --claims: print the ledger as JSON")
    p.add_argument("--witness", metavar="CLAIM",
                   help="re-solve one run and print the privacy breach a claim's verdict states: the two secrets, "
                        "what tells them apart, and the ratio against e^(ε·d)")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="size", action="store_const", const="quick",
                      help="fewer seeds and smaller K (each experiment in about 2 minutes on 2 cores)")
    size.add_argument("--tiny", dest="size", action="store_const", const="tiny", help="a few seconds (CI)")
    size.add_argument("--size", dest="size", choices=("tiny", "quick", "full"), help="default full: the paper's grid")
    p.add_argument("--mode", default="paper", choices=("paper", "authors"),
                   help="PAnDA, DISTA-LP: as the paper writes it (default) or as the authors' code ran it")
    p.add_argument("--workers", type=int, default=0, help="start a Dask LocalCluster with N worker processes")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on an existing Dask cluster")
    p.add_argument("--out", default=None, help="folder of the reports (default ./mdpviz-reproduce); created if "
                   "missing, in a folder that must exist")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the solve cache")
    p.add_argument("--fresh", action="store_true", help="recompute every point (default: resume from the points file)")
    p.add_argument("--report-only", action="store_true",
                   help="compute nothing: rebuild the reports from the points file, whatever code made its records "
                        "(each report names the code stamps)")
    p.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help="stop starting points this long after the command started (experiments sharing a grid, "
                        "e.g. the three PAnDA ones, then report the same points); each report lists the points not "
                        "run, and a rerun resumes them")
    p.set_defaults(func=cmd_reproduce, size="full")

    p = sub.add_parser("regimes", help="where each mechanism wins: the regime grid (ε × region × K × cost × city)")
    regimes_arguments(p)
    p.set_defaults(func=cmd_regimes)

    p = sub.add_parser("bench", help="benchmarks that print timings (lp, panda, ...)")
    p.add_argument("suite", help="which benchmark: " + ", ".join(BENCHMARKS))
    p.add_argument("rest", nargs=argparse.REMAINDER, help="options of that benchmark (see `bench SUITE --help`)")
    p.set_defaults(func=cmd_bench)
    return parser


# benchmark suites: name -> module under mdpviz.benchmarks exposing main(argv) -> int
BENCHMARKS = ("lp", "panda", "benders", "aipo", "cmdp", "dista", "mechanisms")


def cmd_bench(a: argparse.Namespace) -> int:
    """`bench NAME`: run one benchmark module's ``main`` with the remaining arguments."""
    if a.suite not in BENCHMARKS:
        raise MdpvizError(f"Unknown benchmark `{a.suite}`; choose one of {', '.join(BENCHMARKS)}.")
    try:
        module = importlib.import_module(f"mdpviz.benchmarks.{a.suite}")
    except ModuleNotFoundError as e:
        raise MdpvizError(f"Benchmark `{a.suite}` is not built yet ({e}).") from e
    try:
        return int(module.main(a.rest))
    except SystemExit as e:  # the suite's argparse printed its usage error (exit 2) or --help (exit 0)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)


def cmd_regimes(a: argparse.Namespace) -> int:
    """`regimes`: run the regime grid (resuming), write its cell table, charts and README."""
    return run_regimes(a, say=lambda text: print(text, flush=True))


def _witness(claim_id: str) -> int:
    """`reproduce --witness CLAIM`: the breach behind a claim's verdict, re-solved and printed."""
    claim = find_claim(claim_id)
    if not claim.get("witness"):
        with_one = [c["id"] for c in claims() if c.get("witness")]
        raise MdpvizError(f"Claim `{claim_id}` states no privacy breach; claims with a witness: {', '.join(with_one)}.")
    print(f"{claim['claim']} ({claim['where']})")
    for line in witness_lines(claim["witness"]):
        print("  " + line)
    return 0


def _claims(a: argparse.Namespace) -> int:
    """`reproduce --claims [--json] [--out DIR]`: the ledger, judged from the committed runs or DIR's."""
    if a.out is not None and not a.out.strip():
        raise MdpvizError("`--out` is empty; give the folder of the reports, or leave it out (the committed runs).")
    folder = Path(a.out) if a.out else SHIPPED_DIR
    if not folder.is_dir():
        raise MdpvizError(f"`--out {folder}` is not a folder of reproduce runs (`python -m mdpviz reproduce NAME "
                          f"--out {folder}` makes one).")
    judged = ledger(folder)
    if a.out:
        check_folder(folder, f"`--out {folder}`")
        check_file(folder / "CLAIMS.md", f"`--out {folder}`")
        check_file(folder / "CLAIMS.json", f"`--out {folder}`")
        write_claims(folder)
    if a.json:
        print(json.dumps([j.as_dict() for j in judged], indent=1, ensure_ascii=False))
    else:
        print(plain_text(judged), end="")
        if a.out:
            print(f"wrote {folder / 'CLAIMS.md'}")
    return 0


def cmd_reproduce(a: argparse.Namespace) -> int:
    """`reproduce`: list the papers' experiments, or rerun the named ones and write their reports."""
    if a.json and not a.claims:
        raise MdpvizError("`--json` goes with `--claims` (`python -m mdpviz reproduce --claims --json`).")
    if (a.claims or a.witness is not None) and (a.names or a.size != "full"):
        raise MdpvizError("`--claims` and `--witness` judge the committed full runs: give no experiment names and no "
                          "--tiny/--quick/--size.")
    if a.claims and a.witness is not None:
        raise MdpvizError("Give `--claims` or `--witness CLAIM`, not both.")
    if a.witness is not None:
        return _witness(a.witness)
    if a.claims:
        return _claims(a)
    if a.list or not a.names:
        for e in experiments():
            print(f"{e.name:<20} {e.title}" + (f"  [modes: {', '.join(e.modes)}]" if len(e.modes) > 1 else ""))
        return 0
    names = [e.name for e in experiments()] if a.names == ["all"] else list(dict.fromkeys(a.names))
    for name in names:  # unknown names, sizes and modes fail before anything runs
        exp = get_experiment(name)
        try:
            exp.check(a.size, a.mode)
        except MdpvizError as e:
            raise MdpvizError(f"`--mode {a.mode}`: {e}" if a.mode not in exp.modes else str(e)) from None
    if a.budget is not None and not (math.isfinite(a.budget) and a.budget > 0):
        raise MdpvizError(f"`--budget` = {a.budget:g} s is invalid: give a positive, finite number of seconds (or "
                          "leave it out: no budget).")
    check_workers(a.workers, a.scheduler)
    if a.out is not None and not a.out.strip():
        raise MdpvizError("`--out` is empty; give the folder of the reports, or leave it out (./mdpviz-reproduce).")
    out_dir = Path(a.out) if a.out is not None else DEFAULT_OUT
    check_out(out_dir, names, a.size, a.mode, "--out")
    if not out_dir.exists():
        out_dir.mkdir()  # only the folder named: its parent exists (checked above)
        print(f"created the folder {out_dir}", flush=True)
    t_start = time.perf_counter()
    for name in names:
        t0 = time.perf_counter()

        def progress(rec: dict[str, Any], done: int, total: int, t0: float = t0) -> None:
            pt, rows = rec["point"], rec.get("rows") or [{}]
            what = rec.get("error") or rows[0].get("status", "")
            print(f"  [{done}/{total}] {pt['mechanism'] or pt['task'].rsplit(':', 1)[-1]} "
                  f"{pt['tags'].get('label', '')} K={pt['problem'].get('k')} seed {pt['seed']}: {str(what)[:90]} "
                  f"({rec.get('wall_s', 0):.1f} s; {time.perf_counter() - t0:.0f} s elapsed)", flush=True)

        command = f"python -m mdpviz reproduce {name} --size {a.size} --mode {a.mode}" + (
            f" --workers {a.workers}" if a.workers else "") + (f" --scheduler {a.scheduler}" if a.scheduler else "") + (
            f" --budget {a.budget:g}" if a.budget else "") + (" --report-only" if a.report_only else "")
        stop = None if a.budget is None else (lambda: time.perf_counter() - t_start > a.budget)
        print(f"{name}: {a.size} form, {a.mode} mode", flush=True)
        path, cmp = reproduce(name, size=a.size, mode=a.mode, out_dir=out_dir, workers=a.workers,
                              scheduler=a.scheduler, use_cache=not a.no_cache, fresh=a.fresh,
                              report_only=a.report_only, command=command,
                              progress=progress, stop=stop)
        counts: dict[str, int] = {}
        for row in cmp.rows:
            counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
        print(f"wrote {path} ({len(cmp.rows)} rows: " + ", ".join(f"{k} {v}" for k, v in counts.items()) +
              f"; {time.perf_counter() - t0:.0f} s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (2 for bad input, with the reason on stderr, never a traceback)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # argparse has printed the usage error (or --help); hand back its code
        return e.code if isinstance(e.code, int) else 2
    try:
        return int(args.func(args))
    except MdpvizError as e:
        print("error: " + " ".join(line.strip() for line in str(e).splitlines() if line.strip()), file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`... | head -1`): stop quietly, as well-behaved CLIs do
        quiet_stdout()
        return 128 + 13  # the shell's code for a process ended by SIGPIPE


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush into a closed pipe raises nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real file descriptor (captured in tests): nothing to flush
        pass
