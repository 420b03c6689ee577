"""A catalogue of bad inputs: CLI arguments, CSV files, city names, regions (URL query parameters, and every schema
parameter at and just beyond its bounds: ``test_bad_inputs_params.py``).

Each case must end in a clear library error that names the argument (exit code 2 and one ``error:`` line on
stderr for the CLI, run in-process), never a traceback, and must write nothing outside the cache folder (the tmp
folder is listed before and after, its parent and grandparent too, and the real docs/benchmarks). Every
subcommand is covered: cities, download (refused before any network), problem, mechanisms, solve, bench (each
suite; refused before any solve) and reproduce (refused before any point runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdpviz.benchmarks import benders as bench_benders
from mdpviz.benchmarks import panda as bench_panda
from mdpviz.benchmarks import report as bench_report
from mdpviz.cli import main
from mdpviz.errors import MdpvizError
from mdpviz.problem import MAX_K

BASE = ["solve", "--city", "kotka", "--k", "20", "--mechanism", "em"]
# small, valid settings of each benchmark suite: a case changes one option, so the check it meets is the one meant
# (and a missing check would run a few small solves, then fail on the exit code, not hang)
LP = ["bench", "lp", "--city", "kotka", "--ks", "20", "--methods", "em", "--time-limit", "30"]
MECH = ["bench", "mechanisms", "--city", "kotka", "--ks", "20", "--outputs", "10", "--only", "em", "--time-limit", "30"]
PANDA = ["bench", "panda", "--city", "kotka", "--k", "20", "--outputs", "10", "--variants", "e", "--modes", "paper",
         "--baselines", "em", "--users", "5", "--time-limit", "30"]
BENDERS = ["bench", "benders", "--city", "kotka", "--k", "30", "--outputs", "10", "--configs", "kmeans-dv:1:off",
           "--time-limit", "30"]
AIPO = ["bench", "aipo", "--city", "kotka", "--k", "20", "--outputs", "10", "--sweeps", "cells", "--cell-km", "2",
        "--time-limit", "30"]
CMDP = ["bench", "cmdp", "--city", "kotka", "--region", "whole", "--k", "8", "--vehicles", "10", "--eps", "1",
        "--time-limit", "30"]
DISTA = ["bench", "dista", "--city", "kotka", "--k", "20", "--outputs", "10", "--settings", "default", "--eps", "5",
         "--users", "2", "--time-limit", "30"]
REPRO = ["reproduce", "aipo-tables", "--tiny"]


def _csv(body: bytes) -> Any:
    def make(folder: Path) -> str:
        (folder / "in.csv").write_bytes(body)
        return str(folder / "in.csv")

    return make


def _huge(folder: Path) -> str:
    rng = np.random.default_rng(0)
    lat, lon = 41.8 + rng.random(MAX_K + 1) * 0.2, 12.4 + rng.random(MAX_K + 1) * 0.2
    (folder / "in.csv").write_text("lat,lon\n" + "\n".join(f"{a:.7f},{b:.7f}" for a, b in zip(lat, lon, strict=True)))
    return str(folder / "in.csv")


def _make(build: Any) -> Any:
    """A case's setup: ``build(folder)`` makes files or folders in the inputs folder; ``{csv}`` is then empty."""
    def make(folder: Path) -> str:
        build(folder)
        return ""

    return make


def _report_folder_read_only(folder: Path) -> None:
    (folder / "rep" / "aipo-tables-tiny").mkdir(parents=True)
    (folder / "rep" / "aipo-tables-tiny").chmod(0o555)


def _report_file_read_only(folder: Path) -> None:
    (folder / "rep" / "aipo-tables-tiny").mkdir(parents=True)
    (folder / "rep" / "aipo-tables-tiny" / "report.md").write_text("kept\n")
    (folder / "rep" / "aipo-tables-tiny" / "report.md").chmod(0o444)


def _points_folder_is_a_file(folder: Path) -> None:
    (folder / "rep").mkdir()
    (folder / "rep" / "_points").write_text("not a folder\n")


def _points_file_is_a_folder(folder: Path) -> None:
    (folder / "rep" / "_points" / "aipo-tables-tiny.jsonl").mkdir(parents=True)


def _notes_is_a_folder(folder: Path) -> None:
    (folder / "rep" / "NOTES.md").mkdir(parents=True)


def _docs_target_is_a_folder(folder: Path) -> None:
    (folder.parent / "docs" / "lp.md").mkdir()


def _docs_target_read_only(folder: Path) -> None:
    (folder.parent / "docs" / "lp.csv").write_text("kept\n")
    (folder.parent / "docs" / "lp.csv").chmod(0o444)


# Every case's inputs folder ("{in}", also "{dir}") holds: ro/ (an empty read-only folder, 0o555), file.txt (a file),
# ro.jsonl (a read-only file, 0o444) and sub/ (an empty folder). Benchmarks write to docs/ beside it (report.DOCS).
# id -> (argv; a callable(folder) -> path fills "{csv}"), a regex the message must contain (naming the argument)
CLI_CASES: dict[str, tuple[list[str], Any, str]] = {
    # city names, including path characters
    "city ../etc": (["solve", "--city", "../etc", "--mechanism", "em"], None, r"Unknown city `\.\./etc`"),
    "city a/b": (["solve", "--city", "a/b", "--mechanism", "em"], None, r"Unknown city `a/b`"),
    "city /etc/passwd": (["solve", "--city", "/etc/passwd", "--mechanism", "em"], None, r"Unknown city `/etc/passwd`"),
    "city ../../data/rome": (["problem", "--city", "../../data/rome"], None, r"Unknown city"),
    "city empty": (["solve", "--city", "", "--mechanism", "em"], None, r"`--city` is empty"),
    # problem sizes
    "k 0": (["problem", "--city", "kotka", "--k", "0"], None, r"`--k` = 0 is out of range"),
    "k 1": (["problem", "--city", "kotka", "--k", "1"], None, r"`--k` = 1 is out of range"),
    "k above the city": (["problem", "--city", "kotka", "--k", "1504"], None, r"`--k` = 1504 is out of range"),
    "k above MAX_K": (["problem", "--city", "rome", "--k", str(MAX_K + 1), "--cost", "distance"], None,
                      r"K = 10,001 secrets is more than mdpviz handles"),
    "k not a number": (["problem", "--k", "abc"], None, r"argument --k: invalid int value"),
    "outputs 0": (["problem", "--city", "kotka", "--k", "20", "--outputs", "0"], None, r"`--outputs` = 0"),
    "outputs above k": (["problem", "--city", "kotka", "--k", "20", "--outputs", "21"], None, r"`--outputs` = 21"),
    "tasks 0": (["problem", "--city", "kotka", "--k", "20", "--tasks", "0"], None, r"`--tasks` = 0"),
    "seed -1": (["problem", "--city", "kotka", "--k", "20", "--seed", "-1"], None, r"`--seed` = -1"),
    "metric unknown": (["problem", "--metric", "manhattan"], None, r"argument --metric: invalid choice"),
    # options another one would silently override
    "points with k": (["solve", "--points", "{csv}", "--k", "50", "--mechanism", "em"],
                      _csv(b"lat,lon\n60.17,24.94\n60.18,24.95\n"), r"`--points` gives the secrets .* so --k would"),
    "points with region and prior": (["problem", "--points", "{csv}", "--region", "centre:1", "--prior",
                                      "street_count"], _csv(b"lat,lon\n60.17,24.94\n60.18,24.95\n"),
                                     r"so --region, --prior would be ignored"),
    "all outputs with outputs": (["problem", "--city", "kotka", "--k", "20", "--all-outputs", "--outputs", "5"],
                                 None, r"`--all-outputs` makes every secret an output"),
    "eps twice": (["solve", "--city", "kotka", "--k", "20", "--mechanism", "em", "--eps", "5", "--param", "eps=3"],
                  None, r"ε is given twice"),
    "road metric on points": (["solve", "--points", "{csv}", "--metric", "road", "--mechanism", "em"],
                              _csv(b"lat,lon\n60.17,24.94\n60.18,24.95\n"), r"need a road network; give `--city`"),
    "prior points without file": (["problem", "--city", "kotka", "--k", "20", "--prior", "points"], None,
                                  r"needs `--prior-points`"),
    # regions (mdpviz/region.py)
    "region centre:abc": (["problem", "--city", "rome", "--k", "20", "--region", "centre:abc"], None,
                          r"Region `centre:abc`: `abc` is not a number"),
    "region two numbers": (["problem", "--city", "rome", "--k", "20", "--region", "1,2"], None,
                           r"Region `1,2` is not understood"),
    "region latitude 91": (["problem", "--city", "rome", "--k", "20", "--region", "91,0,1"], None,
                           r"Region `91,0,1`: .* not a latitude"),
    "region radius -1": (["problem", "--city", "rome", "--k", "20", "--region", "41.9,12.5,-1"], None,
                         r"radius must be > 0 km"),
    "region radius 0": (["problem", "--city", "rome", "--k", "20", "--region", "centre:0"], None,
                        r"radius must be > 0 km"),
    "region box S > N": (["problem", "--city", "rome", "--k", "20", "--region", "42,12,41,13"], None,
                         r"Region `42,12,41,13` is not a box"),
    "region NaN": (["problem", "--city", "rome", "--k", "20", "--region", "nan,1,2"], None, r"not a finite number"),
    "region with no nodes": (["problem", "--city", "rome", "--k", "20", "--region", "0,0,1"], None,
                             r"has 0 road node\(s\); an mDP problem needs at least 2\. .*its centre is 41\.89"),
    "region shell text": (["problem", "--city", "rome", "--k", "20", "--region", "whole;rm -rf /"], None,
                          r"Region `whole;rm -rf /`"),
    # mechanism and its parameters
    "mechanism unknown": (["solve", "--mechanism", "nope"], None, r"Unknown mechanism `nope`"),
    "mechanism missing": (["solve", "--city", "kotka"], None, r"the following arguments are required: --mechanism"),
    "param without =": ([*BASE, "--param", "scale"], None, r"`--param scale` must look like name=value"),
    "param unknown": ([*BASE, "--param", "colour=3"], None, r"has no parameter\(s\) \['colour'\]"),
    "param not a choice": ([*BASE, "--param", "scale=double"], None, r"`scale` = 'double' is invalid"),
    "eps text": ([*BASE, "--param", "eps=abc"], None, r"`eps` = 'abc' is invalid"),
    "eps 0": ([*BASE, "--eps", "0"], None, r"`eps` = 0.0 is invalid"),
    "eps inf": ([*BASE, "--eps", "inf"], None, r"`eps` = inf is invalid"),
    "eps nan": ([*BASE, "--eps", "nan"], None, r"`eps` = nan is invalid"),
    "eps not a number": ([*BASE, "--eps", "five"], None, r"argument --eps: invalid float value"),
    "time limit -1": ([*BASE, "--time-limit", "-1"], None, r"`--time-limit` = -1.0 is invalid"),
    "time limit 0": ([*BASE, "--time-limit", "0"], None, r"`--time-limit` = 0.0 is invalid"),
    "time limit nan": ([*BASE, "--time-limit", "nan"], None, r"`--time-limit` = nan is invalid"),
    # outputs: refused before the solve, no folder created
    "out in a missing folder": ([*BASE, "--out", "/nonexistent_dir/z.npz"], None,
                                r"--out `/nonexistent_dir/z.npz`: the folder `/nonexistent_dir` does not exist"),
    "out nested missing folder": ([*BASE, "--out", "new/deeper/z.csv"], None,
                                  r"the folder `new/deeper` does not exist"),
    "out xlsx": ([*BASE, "--out", "z.xlsx"], None, r"--out `z.xlsx`: unknown format `.xlsx`"),
    "out no extension": ([*BASE, "--out", "z"], None, r"unknown format `\(no extension\)`"),
    "out is a folder": ([*BASE, "--out", "{dir}"], None, r"is a folder"),
    # CSV files of points
    "points empty name": (["solve", "--points", "", "--mechanism", "em"], None, r"`--points` is empty"),
    "csv missing": (["solve", "--points", "missing.csv", "--mechanism", "em"], None,
                    r"Points file `missing.csv` does not"),
    "csv wrong columns": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"a,b\n1,2\n3,4\n"),
                          r"Points need a `lat` column"),
    "csv x,y header": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"x,y\n24.94,60.17\n24.95,60.18\n"),
                       r"the columns `x` and `y` do not say which is latitude and which longitude"),
    "csv NaN": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"lat,lon\n60.17,nan\n60.18,24.94\n"),
                r"Column `lon` has 1 missing or non-numeric value\(s\), the first on CSV line 2"),
    "csv text": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"lat,lon\nabc,def\n60.1,24.9\n"),
                 r"Column `lat` has 1 missing or non-numeric"),
    "csv header only": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"lat,lon\n"), r"has no rows"),
    "csv zero bytes": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b""), r"could not be read as CSV"),
    "csv not UTF-8": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"lat,lon\n\xff\xfe\x00,1\n"),
                      r"could not be read as CSV \(it is not UTF-8 text: byte \d+ cannot be decoded\)"),
    "csv row too long": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"lat\n60.1\n60.2,24.9\n"),
                         r"could not be read as CSV \(a row has 2 fields where the header has 1 \(near line 3\)\)"),
    "csv binary": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(bytes(range(256)) * 8),
                   r"Points (need|file)"),
    "csv latitude 95": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"lat,lon\n95,24.9\n60,24\n"),
                        r"Latitudes must lie in \[-90, 90\]"),
    "csv longitude 200": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"lat,lon\n60,200\n60,24\n"),
                          r"longitudes in \[-180, 180\]"),
    "csv duplicates only": (["solve", "--points", "{csv}", "--mechanism", "em"],
                            _csv(b"lat,lon\n60.17,24.94\n60.17,24.94\n60.17,24.94\n"), r"1 distinct location\(s\)"),
    "csv single point": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"lat,lon\n60.17,24.94\n"),
                         r"1 distinct location\(s\); an mDP problem needs at least 2"),
    "csv negative weight": (["solve", "--points", "{csv}", "--mechanism", "em"],
                            _csv(b"lat,lon,weight\n60.17,24.94,-1\n60.18,24.95,1\n"), r"Weights must be ≥ 0"),
    "csv far from the city": (["solve", "--points", "{csv}", "--city", "helsinki", "--mechanism", "em"],
                              _csv(b"lat,lon\n0,0\n0.001,0.001\n"), r"2 of 2 point\(s\) lie more than 0.5 km"),
    "csv huge": (["solve", "--points", "{csv}", "--mechanism", "em"], _huge, r"K = 10,001 secrets is more than"),
    "prior points csv broken": (["problem", "--city", "kotka", "--k", "20", "--prior", "points", "--prior-points",
                                 "{csv}"], _csv(b"x;y\n"), r"Points need a `lat` column"),
    "region empty (problem)": (["problem", "--city", "kotka", "--k", "20", "--region", ""], None,
                               r"`--region` is empty"),
    "region blank (solve)": ([*BASE, "--region", "  "], None, r"`--region` is empty"),
    "points a folder (solve)": (["solve", "--points", "{in}", "--mechanism", "em"], None, r"`--points .*` is a folder"),
    "points a folder (problem)": (["problem", "--points", "{in}/sub"], None, r"`--points .*` is a folder"),
    "prior points a folder": (["problem", "--city", "kotka", "--k", "20", "--prior", "points", "--prior-points",
                               "{in}"], None, r"`--prior-points .*` is a folder"),
    "out in a read-only folder (solve)": ([*BASE, "--out", "{in}/ro/z.npz"], None, r"--out .*ro.* is read-only"),
    "out a read-only file (solve)": ([*BASE, "--out", "{in}/ro.jsonl.json"], _make(
        lambda f: ((f / "ro.jsonl.json").write_text("{}"), (f / "ro.jsonl.json").chmod(0o444))), r"read-only"),
    "out empty (solve)": ([*BASE, "--out", ""], None, r"`--out` is empty"),
    # other commands: cities, mechanisms, download (refused before any network)
    "cities extra argument": (["cities", "rome"], None, r"unrecognized arguments: rome"),
    "cities unknown option": (["cities", "--json"], None, r"unrecognized arguments: --json"),
    "mechanisms unknown option": (["mechanisms", "--eps", "5"], None, r"unrecognized arguments: --eps 5"),
    "mechanisms extra argument": (["mechanisms", "em"], None, r"unrecognized arguments: em"),
    "command unknown": (["explode"], None, r"argument command: invalid choice"),
    "download box S > N": (["download", "--bbox", "10", "0", "5", "1"], None, r"`--bbox 10 0 5 1` is not S W N E"),
    "download box NaN": (["download", "--bbox", "nan", "0", "5", "1"], None, r"`--bbox nan 0 5 1` is not S W N E"),
    "download box longitude 200": (["download", "--bbox", "0", "0", "1", "200"], None, r"`--bbox .*` is not S W N E"),
    "download box text": (["download", "--bbox", "a", "0", "5", "1"], None, r"argument --bbox: invalid float value"),
    "download box three numbers": (["download", "--bbox", "0", "0", "1"], None, r"argument --bbox: expected 4"),
    "download nothing": (["download"], None, r"one of the arguments --place --bbox is required"),
    "download place and box": (["download", "--place", "x", "--bbox", "0", "0", "1", "1"], None,
                               r"argument --bbox: not allowed with argument --place"),
    "download place empty": (["download", "--place", ""], None, r"`--place` is empty"),
    "download name empty": (["download", "--place", "Somewhere", "--name", ""], None, r"`--name` = '' has no"),
    "download name punctuation": (["download", "--place", "Somewhere", "--name", "../.."], None,
                                  r"`--name` = '\.\./\.\.' has no letters or digits"),
    "download name of a bundled city": (["download", "--place", "Somewhere", "--name", "Rome"], None,
                                        r"`--name Rome` is the name of a bundled city"),
    "download network type unknown": (["download", "--place", "Somewhere", "--network-type", "car"], None,
                                      r"argument --network-type: invalid choice: 'car'"),
    # bench: the suite's name, then every suite's options, each refused before any solve
    "bench unknown": (["bench", "nope"], None, r"Unknown benchmark `nope`"),
    "bench empty name": (["bench", ""], None, r"Unknown benchmark ``"),
    "bench lp eps abc": ([*LP, "--eps", "abc"], None, r"argument --eps: `abc` is not a number"),
    "bench lp ks abc": ([*LP, "--ks", "abc"], None, r"argument --ks: `abc` is not a whole number"),
    "bench lp ks empty": ([*LP, "--ks", ""], None, r"argument --ks: '' gives no value"),
    "bench lp ks 1": ([*LP, "--ks", "20,1"], None, r"`--ks` = 1 is invalid: K must lie in \[2, 1,503\]"),
    "bench lp ks above the city": ([*LP, "--ks", "1504"], None, r"`--ks` = 1504 is invalid"),
    "bench lp eps 0": ([*LP, "--eps", "0"], None, r"`--eps` = 0.0 is invalid: it must be a number in \[0.01, 100\]"),
    "bench lp eps nan": ([*LP, "--eps", "5,nan"], None, r"`--eps` = nan is invalid"),
    "bench lp outputs 0": ([*LP, "--outputs", "0"], None, r"`--outputs` = 0 is invalid"),
    "bench lp seed -1": ([*LP, "--seed", "-1"], None, r"`--seed` = -1 is invalid"),
    "bench lp gap-tol 0": ([*LP, "--gap-tol", "0"], None, r"`--gap-tol` = 0.0 is invalid"),
    "bench lp monolithic-max-k -1": ([*LP, "--monolithic-max-k", "-1"], None, r"`--monolithic-max-k` = -1 is invalid"),
    "bench lp methods unknown": ([*LP, "--methods", "em,nope"], None, r"`--methods em,nope`: unknown method\(s\) nope"),
    "bench lp methods empty": ([*LP, "--methods", ","], None, r"`--methods ,`: no method"),
    "bench lp metric unknown": ([*LP, "--metric", "manhattan"], None, r"argument --metric: invalid choice"),
    "bench lp city empty": ([*LP, "--city", ""], None, r"`--city` is empty"),
    "bench lp city unknown": ([*LP, "--city", "atlantis"], None, r"`--city`: Unknown city `atlantis`"),
    "bench lp time limit -1": ([*LP, "--time-limit", "-1"], None, r"`--time-limit` = -1 is invalid"),
    "bench lp time limit inf": ([*LP, "--time-limit", "inf"], None, r"`--time-limit` = inf is invalid"),
    "bench lp out ../../../x": ([*LP, "--out", "../../../x"], None, r"`--out \.\./\.\./\.\./x`: `\.\.` is not allowed"),
    "bench lp out ../../x": ([*LP, "--out", "../../x"], None, r"`\.\.` is not allowed"),
    "bench lp out a/../../x": ([*LP, "--out", "sub/../../x"], None, r"`\.\.` is not allowed"),
    "bench lp out empty": ([*LP, "--out", ""], None, r"`--out` = '' gives no file name"),
    "bench lp out a folder": ([*LP, "--out", "{in}/sub"], None, r"`--out .*sub` is a folder"),
    "bench lp out ends in /": ([*LP, "--out", "{in}/sub/"], None, r"gives no file name"),
    "bench lp out in a missing folder": ([*LP, "--out", "{in}/new/deeper/x"], None,
                                         r"the folder `.*new/deeper` does not exist \(it is not created"),
    "bench lp out a folder in docs": ([*LP, "--out", "lp"], _make(_docs_target_is_a_folder),
                                      r"`--out lp`: `.*docs/lp\.md` is a folder"),
    "bench lp out a read-only file in docs": ([*LP, "--out", "lp.md"], _make(_docs_target_read_only),
                                              r"lp\.csv` exists and is read-only"),
    "bench lp points a folder": ([*LP, "--points", "{in}"], None, r"`--points .*` is a folder"),
    "bench lp points empty": ([*LP, "--points", ""], None, r"`--points` is empty"),
    "bench lp points in a missing folder": ([*LP, "--points", "{in}/new/p.jsonl"], None,
                                            r"`--points .*`: the folder `.*new` does not exist"),
    "bench lp points read-only": ([*LP, "--points", "{in}/ro.jsonl"], None, r"ro\.jsonl` exists and is read-only"),
    "bench lp workers -1": ([*LP, "--workers", "-1"], None, r"`--workers` = -1 is invalid"),
    "bench lp workers abc": ([*LP, "--workers", "abc"], None, r"argument --workers: invalid int value"),
    "bench lp scheduler no port": ([*LP, "--scheduler", "localhost"], None, r"`--scheduler` = 'localhost' is not"),
    "bench lp scheduler empty": ([*LP, "--scheduler", ""], None, r"`--scheduler` = '' is not"),
    "bench lp unknown option": ([*LP, "--colour", "red"], None, r"unrecognized arguments: --colour red"),
    "bench mechanisms out read-only folder": ([*MECH, "--out", "{in}/ro/survey"], None,
                                              r"`--out .*/ro/survey`: the folder `.*/ro` is read-only"),
    "bench mechanisms out read-only docs": ([*MECH, "--out", "survey"],
                                            _make(lambda f: (f.parent / "docs").chmod(0o555)),
                                            r"`--out survey`: the folder `.*docs` is read-only"),
    "bench mechanisms out ../../../x": ([*MECH, "--out", "../../../x"], None, r"`\.\.` is not allowed"),
    "bench mechanisms out control character": ([*MECH, "--out", "a\nb"], None, r"holds control characters"),
    "bench mechanisms time limit -1": ([*MECH, "--time-limit", "-1"], None, r"`--time-limit` = -1 is invalid"),
    "bench mechanisms time limit 0": ([*MECH, "--time-limit", "0"], None, r"`--time-limit` = 0 is invalid"),
    "bench mechanisms time limit nan": ([*MECH, "--time-limit", "nan"], None, r"`--time-limit` = nan is invalid"),
    "bench mechanisms ks 1": ([*MECH, "--ks", "1"], None, r"`--ks` = 1 is invalid"),
    "bench mechanisms ks abc": ([*MECH, "--ks", "abc"], None, r"argument --ks: invalid int value: 'abc'"),
    "bench mechanisms eps -1": ([*MECH, "--eps", "-1"], None, r"`--eps` = -1.0 is invalid"),
    "bench mechanisms eps 1e9": ([*MECH, "--eps", "1e9"], None, r"`--eps` = 1000000000.0 is invalid"),
    "bench mechanisms outputs -3": ([*MECH, "--outputs", "-3"], None, r"`--outputs` = -3 is invalid"),
    "bench mechanisms only unknown": ([*MECH, "--only", "em", "nope"], None, r"`--only`: Unknown mechanism `nope`"),
    "bench mechanisms costs unknown": ([*MECH, "--costs", "walking"], None, r"argument --costs: invalid choice"),
    "bench mechanisms city unknown": ([*MECH, "--city", "../rome"], None, r"`--city`: Unknown city `\.\./rome`"),
    "bench mechanisms points a folder": ([*MECH, "--points", "{in}/sub"], None, r"`--points .*` is a folder"),
    "bench panda time limit 0": ([*PANDA, "--time-limit", "0"], None, r"`--time-limit` = 0 is invalid"),
    "bench panda users 0": ([*PANDA, "--users", "0"], None, r"`--users` = 0 is invalid"),
    "bench panda users abc": ([*PANDA, "--users", "abc"], None, r"argument --users: invalid int value"),
    "bench panda k 1": ([*PANDA, "--k", "1"], None, r"`--k` = 1 is invalid"),
    "bench panda outputs above k": ([*PANDA, "--outputs", "21"], None, r"`--outputs` = 21 is invalid: .* smallest K"),
    "bench panda eps 0": ([*PANDA, "--eps", "0"], None, r"`--eps` = 0.0 is invalid"),
    "bench panda lp-max-k -1": ([*PANDA, "--lp-max-k", "-1"], None, r"`--lp-max-k` = -1 is invalid"),
    "bench panda check-max-k -1": ([*PANDA, "--check-max-k", "-1"], None, r"`--check-max-k` = -1 is invalid"),
    "bench panda variant unknown": ([*PANDA, "--variants", "x"], None, r"argument --variants: invalid choice"),
    "bench panda name ../x": ([*PANDA, "--name", "../x"], None, r"`--name \.\./x`: `\.\.` is not allowed"),
    "bench panda name empty": ([*PANDA, "--name", " "], None, r"`--name` = ' ' gives no file name"),
    "bench panda points a folder": ([*PANDA, "--points", "{in}"], None, r"`--points .*` is a folder"),
    "bench benders time limit -1": ([*BENDERS, "--time-limit", "-1"], None, r"`--time-limit` = -1 is invalid"),
    "bench benders eta 0": ([*BENDERS, "--eta", "0"], None, r"`--eta` = 0.0 is invalid"),
    "bench benders eps 200": ([*BENDERS, "--eps", "200"], None, r"`--eps` = 200.0 is invalid"),
    "bench benders configs unknown": ([*BENDERS, "--configs", "foo"], None, r"argument --configs: --configs 'foo'"),
    "bench benders configs lambda 2": ([*BENDERS, "--configs", "kmeans-dv:2:on"], None, r"λ = 2 is outside"),
    "bench benders k abc": ([*BENDERS, "--k", "abc"], None, r"argument --k: invalid int value"),
    "bench benders name ../../x": ([*BENDERS, "--name", "../../x"], None, r"`\.\.` is not allowed"),
    "bench benders points a folder": ([*BENDERS, "--points", "{in}"], None, r"`--points .*` is a folder"),
    "bench aipo time limit nan": ([*AIPO, "--time-limit", "nan"], None, r"`--time-limit` = nan is invalid"),
    "bench aipo cell-km -1": ([*AIPO, "--cell-km", "-1"], None, r"`--cell-km` = -1.0 is invalid"),
    "bench aipo cells-eps 0": ([*AIPO, "--cells-eps", "0"], None, r"`--cells-eps` = 0.0 is invalid"),
    "bench aipo k 1": ([*AIPO, "--k", "1"], None, r"`--k` = 1 is invalid"),
    "bench aipo lp-max-k -1": ([*AIPO, "--lp-max-k", "-1"], None, r"`--lp-max-k` = -1 is invalid"),
    "bench aipo preset unknown": ([*AIPO, "--preset", "authors"], None, r"argument --preset: invalid choice"),
    "bench aipo out read-only folder": ([*AIPO, "--out", "{in}/ro/a"], None, r"is read-only"),
    "bench aipo points a folder": ([*AIPO, "--points", "{in}"], None, r"`--points .*` is a folder"),
    "bench cmdp time limit -1": ([*CMDP, "--time-limit", "-1"], None, r"`--time-limit` = -1 is invalid"),
    "bench cmdp region empty": ([*CMDP, "--region", ""], None, r"`--region` is empty"),
    "bench cmdp region malformed": ([*CMDP, "--region", "centre:abc"], None, r"`--region`: Region `centre:abc`"),
    "bench cmdp vehicles 0": ([*CMDP, "--vehicles", "0"], None, r"`--vehicles` = 0 is invalid"),
    "bench cmdp k 1": ([*CMDP, "--k", "1"], None, r"`--k` = 1 is invalid"),
    "bench cmdp k above the region": ([*CMDP, "--region", "centre:0.3", "--k", "200"], None,
                                      r"`--k` = 200 is out of range \[2, \d+\]: .* within 0.3 km"),
    "bench cmdp problem seed -1": ([*CMDP, "--problem-seed", "-1"], None, r"`--problem-seed` = -1 is invalid"),
    "bench cmdp eps 0": ([*CMDP, "--eps", "0"], None, r"`--eps` = 0.0 is invalid"),
    "bench cmdp out ..": ([*CMDP, "--out", ".."], None, r"`\.\.` is not allowed"),
    "bench cmdp points a folder": ([*CMDP, "--points", "{in}"], None, r"`--points .*` is a folder"),
    "bench dista time limit 0": ([*DISTA, "--time-limit", "0"], None, r"`--time-limit` = 0 is invalid"),
    "bench dista users 0": ([*DISTA, "--users", "0"], None, r"`--users` = 0 is invalid"),
    "bench dista users 501": ([*DISTA, "--users", "501"], None, r"`--users` = 501 is invalid"),
    "bench dista settings unknown": ([*DISTA, "--settings", "nope"], None, r"argument --settings: invalid choice"),
    "bench dista eps nan": ([*DISTA, "--eps", "nan"], None, r"`--eps` = nan is invalid"),
    "bench dista outputs above k": ([*DISTA, "--outputs", "21"], None, r"`--outputs` = 21 is invalid"),
    "bench dista seed -1": ([*DISTA, "--seed", "-1"], None, r"`--seed` = -1 is invalid"),
    "bench dista points a folder": ([*DISTA, "--points", "{in}"], None, r"`--points .*` is a folder"),
    # reproduce: refused before any point runs
    "reproduce unknown": (["reproduce", "nope", "--out", "{in}/rep"], None, r"Unknown experiment `nope`"),
    "reproduce all with another": (["reproduce", "all", "aipo-tables", "--out", "{in}/rep"], None,
                                   r"Unknown experiment `all`"),
    "reproduce out an existing file": ([*REPRO, "--out", "{in}/file.txt"], None, r"`--out .*file\.txt` is a file"),
    "reproduce out read-only folder": ([*REPRO, "--out", "{in}/ro"], None, r"`--out .*ro`: the folder .* is read-only"),
    "reproduce out in a read-only folder": ([*REPRO, "--out", "{in}/ro/rep"], None, r"the folder `.*ro` is read-only"),
    "reproduce out nested missing": ([*REPRO, "--out", "{in}/new/deeper"], None,
                                     r"the folder `.*new` does not exist \(it is not created"),
    "reproduce out empty": ([*REPRO, "--out", ""], None, r"`--out` is empty"),
    "reproduce report folder read-only": ([*REPRO, "--out", "{in}/rep"], _make(_report_folder_read_only),
                                          r"aipo-tables-tiny` is read-only"),
    "reproduce report file read-only": ([*REPRO, "--out", "{in}/rep"], _make(_report_file_read_only),
                                        r"report\.md` exists and is read-only"),
    "reproduce points folder is a file": ([*REPRO, "--out", "{in}/rep"], _make(_points_folder_is_a_file),
                                          r"_points` is a file where the run writes a folder"),
    "reproduce points file is a folder": ([*REPRO, "--out", "{in}/rep"], _make(_points_file_is_a_folder),
                                          r"aipo-tables-tiny\.jsonl` is a folder"),
    "reproduce notes a folder": ([*REPRO, "--out", "{in}/rep"], _make(_notes_is_a_folder), r"NOTES\.md` is not a file"),
    "reproduce budget 0": ([*REPRO, "--budget", "0", "--out", "{in}/rep"], None, r"`--budget` = 0 s is invalid"),
    "reproduce budget -5": ([*REPRO, "--budget", "-5", "--out", "{in}/rep"], None, r"`--budget` = -5 s is invalid"),
    "reproduce budget nan": ([*REPRO, "--budget", "nan", "--out", "{in}/rep"], None, r"`--budget` = nan s is invalid"),
    "reproduce budget inf": ([*REPRO, "--budget", "inf", "--out", "{in}/rep"], None, r"`--budget` = inf s is invalid"),
    "reproduce budget abc": ([*REPRO, "--budget", "abc"], None, r"argument --budget: invalid float value"),
    "reproduce workers -1": ([*REPRO, "--workers", "-1", "--out", "{in}/rep"], None, r"`--workers` = -1 is invalid"),
    "reproduce scheduler no port": ([*REPRO, "--scheduler", "tcp://host", "--out", "{in}/rep"], None,
                                    r"`--scheduler` = 'tcp://host' is not the address"),
    "reproduce mode unknown": ([*REPRO, "--mode", "code"], None, r"argument --mode: invalid choice"),
    "reproduce mode not of this experiment": ([*REPRO, "--mode", "authors", "--out", "{in}/rep"], None,
                                              r"`--mode authors`: Experiment `aipo-tables` has no mode `authors`"),
    "reproduce size unknown": (["reproduce", "aipo-tables", "--size", "huge"], None,
                               r"argument --size: invalid choice"),
    "preset unknown": (["solve", "--city", "kotka", "--k", "20", "--mechanism", "lp-bd", "--preset", "nope"], None,
                       r"`--preset nope`: Mechanism `lp-bd` has no preset `nope`; it has: paper, stabilised"),
    # regimes: refused before any point runs
    "regimes method unknown": (["regimes", "--tiny", "--only", "nope", "--out", "{in}/reg"], None,
                               r"Unknown method\(s\) \['nope'\]"),
    "regimes out an existing file": (["regimes", "--tiny", "--out", "{in}/file.txt"], None,
                                     r"`--out .*file\.txt` is a file"),
    "regimes out read-only folder": (["regimes", "--tiny", "--out", "{in}/ro"], None, r"`--out .*ro` is read-only"),
    "regimes out nested missing": (["regimes", "--tiny", "--out", "{in}/new/deeper"], None,
                                   r"the folder `.*new` does not exist"),
    "regimes budget -1": (["regimes", "--tiny", "--budget", "-1", "--out", "{in}/reg"], None,
                          r"`--budget` = -1 s is invalid"),
    "regimes size unknown": (["regimes", "--size", "huge"], None, r"argument --size: invalid choice"),
}


def _files(folder: Path) -> set[tuple[str, int]]:
    """Every file and folder under ``folder`` (but the cache) with its modification time in ns."""
    return {(p.relative_to(folder).as_posix(), p.lstat().st_mtime_ns) for p in folder.rglob("*")
            if not p.relative_to(folder).as_posix().startswith("cache")}


def _entries(folder: Path) -> set[str]:
    """The names directly in ``folder`` (the tmp folder's parent and grandparent, the real docs/benchmarks)."""
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def _inputs(folder: Path) -> None:
    """The fixtures every case may name: a read-only folder, a file, a read-only file, an empty folder."""
    (folder / "ro").mkdir()
    (folder / "ro").chmod(0o555)
    (folder / "file.txt").write_text("a file, not a folder\n")
    (folder / "ro.jsonl").write_text("")
    (folder / "ro.jsonl").chmod(0o444)
    (folder / "sub").mkdir()


@pytest.fixture()
def cli_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """tmp/in (the inputs), tmp/work (the current folder) and tmp/docs (where the benchmarks write), made writable
    again afterwards so that pytest can remove them."""
    inputs, work, docs = tmp_path / "in", tmp_path / "work", tmp_path / "docs"
    for folder in (inputs, work, docs):
        folder.mkdir()
    monkeypatch.chdir(work)
    for module in (bench_report, bench_panda, bench_benders):
        monkeypatch.setattr(module, "DOCS", docs)
    _inputs(inputs)
    yield inputs
    for p in [tmp_path, *tmp_path.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)


REAL_DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_cli_refuses_bad_input_clearly(case: str, tmp_path: Path, cli_folders: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    argv, make, pattern = CLI_CASES[case]
    inputs = cli_folders
    csv = make(inputs) if make else None
    argv = [a.replace("{csv}", csv or "").replace("{dir}", str(inputs)).replace("{in}", str(inputs)) for a in argv]
    before = _files(tmp_path), _entries(tmp_path.parent), _entries(tmp_path.parent.parent), _entries(REAL_DOCS)
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert "Traceback" not in err + out
    assert "error:" in err and len(err.strip().splitlines()[-1]) > 20
    assert len([line for line in err.splitlines() if "error:" in line]) == 1, err  # one error line
    import re

    assert re.search(pattern, err), err
    assert "utility loss" not in out  # refused before any solve
    assert "wrote" not in out and "[1/" not in out  # no benchmark point or reproduce point ran, no report
    # nothing written outside the cache (no output folder created), beside the tmp folder or in docs/benchmarks
    assert (_files(tmp_path), _entries(tmp_path.parent), _entries(tmp_path.parent.parent),
            _entries(REAL_DOCS)) == before
    assert not Path("/nonexistent_dir").exists()


def test_every_subcommand_has_bad_input_cases() -> None:
    """The table covers each subcommand and bench suite; bench, reproduce, mechanisms and download have ≥ 40."""
    counts: dict[str, int] = {}
    for argv, _, _ in CLI_CASES.values():
        key = argv[0] + (f" {argv[1]}" if argv[0] == "bench" else "")
        counts[key] = counts.get(key, 0) + 1
    import argparse

    from mdpviz.cli import BENCHMARKS, build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert {"cities", "download", "problem", "mechanisms", "solve", "reproduce", "regimes", "bench"} <= set(sub.choices)
    for command in (*(c for c in sub.choices if c != "bench"), *(f"bench {suite}" for suite in BENCHMARKS)):
        assert counts.get(command, 0) >= 1, command
    assert sum(n for k, n in counts.items() if k.split()[0] in ("bench", "reproduce", "mechanisms", "download")) >= 40


def test_broken_pipe_ends_quietly() -> None:
    """`python -m mdpviz mechanisms | head -1`: the reader takes one line and goes; no traceback, nothing on stderr.

    The pipe is made small (4 KiB), so that the listing is still being written when the reader closes it."""
    import fcntl
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    if hasattr(fcntl, "F_SETPIPE_SZ"):
        fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 4096)
    else:  # pragma: no cover - Linux has it (Python ≥ 3.10)
        fcntl.fcntl(write, 1031, 4096)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.Popen([sys.executable, "-m", "mdpviz", "mechanisms"], stdout=write, stderr=subprocess.PIPE,
                            cwd=root, env=env)
    os.close(write)
    with os.fdopen(read, "rb") as reader:
        first = reader.readline()
    with proc:  # closes its stderr pipe
        err = proc.stderr.read().decode() if proc.stderr else ""
        code = proc.wait(timeout=120)
    assert first.startswith(b"em ")
    assert err == "" and "Traceback" not in err and "BrokenPipeError" not in err
    assert code in (0, 141)  # 141: ended as by SIGPIPE (the pipe closed mid-listing), as C tools are


def test_reproduce_skips_unreadable_lines_of_its_points_file(tmp_path: Path, cli_folders: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A points file with a line that is not UTF-8 (a 0xff byte) and a torn last line: both are skipped, counted and
    said (on stdout and in the report), never a traceback. A budget that has run out before the first point keeps the
    test fast: nothing is solved."""
    out_dir = cli_folders / "rep"
    (out_dir / "_points").mkdir(parents=True)
    (out_dir / "_points" / "aipo-tables-tiny.jsonl").write_bytes(b'{"key": "k1", "rows": []}\n\xff\xfe not UTF-8\n'
                                                                  b'{"key": "torn')
    before = _entries(tmp_path.parent)
    rc = main([*REPRO, "--budget", "1e-9", "--out", str(out_dir)])
    out, err = capsys.readouterr()
    assert rc == 0, (out, err)
    assert "Traceback" not in out + err and "error:" not in err
    assert "skipped 2 unreadable line(s) of" in out
    assert "2 unreadable line(s) skipped" in (out_dir / "aipo-tables-tiny" / "report.md").read_text()
    assert {p.name for p in out_dir.iterdir()} == {"_points", "aipo-tables-tiny", "README.md", "plotly.min.js"}
    assert _entries(tmp_path.parent) == before and _entries(tmp_path / "work") == set()


def test_results_file_counts_the_lines_it_skips(tmp_path: Path) -> None:
    from mdpviz.sweep import ResultsFile

    path = tmp_path / "points.jsonl"
    path.write_bytes(b'{"key": "a"}\n\xff\n[1, 2]\n\n{"key": "b"}\r\n{"key": "c')
    store = ResultsFile(path)
    assert set(store.records()) == {"a", "b"} and store.skipped == 3
    with pytest.raises(MdpvizError, match="points file .* cannot be read"):
        ResultsFile(tmp_path).records()


def test_a_failed_solve_writes_no_out_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A solve that returns no Z (time limit, infeasible) exits 1, writes no (0, 0) Z, and says why."""
    import mdpviz.solve
    from mdpviz.contract import Result

    def no_z(problem: Any, mechanism: str, params: Any, **_: Any) -> Result:
        return Result(mechanism=mechanism, params=dict(params), Z=None, status="time limit", eps=5.0,
                      message="stopped at the time limit before a feasible point")

    monkeypatch.setattr(mdpviz.solve, "solve", no_z)
    monkeypatch.chdir(tmp_path)
    for name in ("z.npz", "z.csv", "z.json"):
        rc = main([*BASE, "--time-limit", "5", "--out", name])
        out, err = capsys.readouterr()
        assert rc == 1, (out, err)
        assert not (tmp_path / name).exists() and "wrote" not in out
        assert f"nothing written to {name}: the solve returned no mechanism (status time limit)" in err
        assert "Traceback" not in out + err
