"""A catalogue of bad inputs: CLI arguments, CSV files, city names, regions, URL query parameters, and every schema
parameter at and just beyond its bounds.

Each case must end in a clear library error that names the argument (exit code 2 and one ``error:`` line on
stderr for the CLI, run in-process), never a traceback, and must write nothing outside the cache folder (the tmp
folder is listed before and after). URL values fall back to defaults with a notice naming the parameter.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdpviz.cli import main
from mdpviz.errors import MdpvizError
from mdpviz.mechanisms import Param, mechanisms
from mdpviz.problem import MAX_K

BASE = ["solve", "--city", "kotka", "--k", "20", "--mechanism", "em"]


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


# id -> (argv; a callable(folder) -> path fills "{csv}"), a regex the message must contain (naming the argument)
CLI_CASES: dict[str, tuple[list[str], Any, str]] = {
    # city names, including path characters
    "city ../etc": (["solve", "--city", "../etc", "--mechanism", "em"], None, r"Unknown city `\.\./etc`"),
    "city a/b": (["solve", "--city", "a/b", "--mechanism", "em"], None, r"Unknown city `a/b`"),
    "city /etc/passwd": (["solve", "--city", "/etc/passwd", "--mechanism", "em"], None, r"Unknown city `/etc/passwd`"),
    "city ../../data/rome": (["problem", "--city", "../../data/rome"], None, r"Unknown city"),
    "city empty": (["solve", "--city", "", "--mechanism", "em"], None, r"`--city` is empty"),
    # problem sizes
    "k 0": (["problem", "--city", "kotka", "--k", "0"], None, r"`k` = 0 is out of range"),
    "k 1": (["problem", "--city", "kotka", "--k", "1"], None, r"`k` = 1 is out of range"),
    "k above the city": (["problem", "--city", "kotka", "--k", "1504"], None, r"`k` = 1504 is out of range"),
    "k above MAX_K": (["problem", "--city", "rome", "--k", str(MAX_K + 1), "--cost", "distance"], None,
                      r"K = 10,001 secrets is more than mdpviz handles"),
    "k not a number": (["problem", "--k", "abc"], None, r"argument --k: invalid int value"),
    "outputs 0": (["problem", "--city", "kotka", "--k", "20", "--outputs", "0"], None, r"`n_outputs` = 0"),
    "outputs above k": (["problem", "--city", "kotka", "--k", "20", "--outputs", "21"], None, r"`n_outputs` = 21"),
    "tasks 0": (["problem", "--city", "kotka", "--k", "20", "--tasks", "0"], None, r"`n_tasks` = 0"),
    "seed -1": (["problem", "--city", "kotka", "--k", "20", "--seed", "-1"], None, r"`seed` = -1"),
    "metric unknown": (["problem", "--metric", "manhattan"], None, r"argument --metric: invalid choice"),
    "prior points without file": (["problem", "--city", "kotka", "--k", "20", "--prior", "points"], None,
                                  r"needs `prior_points`"),
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
    "out nested missing folder": ([*BASE, "--out", "new/deeper/z.csv"], None, r"the folder `new/deeper` does not exist"),
    "out xlsx": ([*BASE, "--out", "z.xlsx"], None, r"--out `z.xlsx`: unknown format `.xlsx`"),
    "out no extension": ([*BASE, "--out", "z"], None, r"unknown format `\(no extension\)`"),
    "out is a folder": ([*BASE, "--out", "{dir}"], None, r"is a folder"),
    # CSV files of points
    "points empty name": (["solve", "--points", "", "--mechanism", "em"], None, r"`--points` is empty"),
    "csv missing": (["solve", "--points", "missing.csv", "--mechanism", "em"], None, r"Points file `missing.csv` does not"),
    "csv wrong columns": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"a,b\n1,2\n3,4\n"),
                          r"Points need a `lat` column"),
    "csv NaN": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"lat,lon\n60.17,nan\n60.18,24.94\n"),
                r"Column `lon` has 1 missing or non-numeric value\(s\), the first on CSV line 2"),
    "csv text": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"lat,lon\nabc,def\n60.1,24.9\n"),
                 r"Column `lat` has 1 missing or non-numeric"),
    "csv header only": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"lat,lon\n"), r"has no rows"),
    "csv zero bytes": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b""), r"could not be read as CSV"),
    "csv not UTF-8": (["solve", "--points", "{csv}", "--mechanism", "em"], _csv(b"lat,lon\n\xff\xfe\x00,1\n"),
                      r"could not be read as CSV \('utf-8' codec"),
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
    # other commands
    "bench unknown": (["bench", "nope"], None, r"Unknown benchmark `nope`"),
    "download box S > N": (["download", "--bbox", "10", "0", "5", "1"], None, r"`bbox` .* is not \(south, west"),
    "command unknown": (["explode"], None, r"argument command: invalid choice"),
}


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")
            if not p.relative_to(folder).as_posix().startswith("cache")}


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_cli_refuses_bad_input_clearly(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    argv, make, pattern = CLI_CASES[case]
    inputs, work = tmp_path / "in", tmp_path / "work"
    inputs.mkdir()
    work.mkdir()
    monkeypatch.chdir(work)
    csv = make(inputs) if make else None
    argv = [a.replace("{csv}", csv or "").replace("{dir}", str(inputs)) for a in argv]
    before = _files(tmp_path)
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert "Traceback" not in err + out
    assert "error:" in err and len(err.strip().splitlines()[-1]) > 20
    import re

    assert re.search(pattern, err), err
    assert "utility loss" not in out  # refused before any solve
    assert _files(tmp_path) == before  # nothing written outside the cache (and no output folder created)
    assert not Path("/nonexistent_dir").exists()


# URL query parameters (the dashboard's pure parser): a notice naming the parameter, and the default value
URL_CASES: dict[str, tuple[dict[str, str], str, str, Any]] = {  # query, key in values, notice regex, value
    "k text": ({"k": "abc"}, "k", r"`k=abc` is not a whole number", 200),
    "k negative": ({"k": "-5"}, "k", r"`k=-5` is outside", 200),
    "k huge": ({"k": "1e12"}, "k", r"`k=1e12` is outside", 200),
    "k fraction": ({"k": "20.5"}, "k", r"`k=20.5` is not a whole number", 200),
    "m zero": ({"m": "0"}, "m", r"`m=0` is outside", 50),
    "tasks zero": ({"tasks": "0"}, "tasks", r"`tasks=0` is outside", 10),
    "seed negative": ({"seed": "-1"}, "seed", r"`seed=-1` is outside", 0),
    "metric unknown": ({"metric": "manhattan"}, "metric", r"`metric=manhattan` is not one of", "haversine"),
    "prior points": ({"prior": "points"}, "prior", r"`prior=points` is not one of", "uniform"),
    "cost script": ({"cost": "<script>alert(1)</script>"}, "cost", r"`cost=<script>", "travel"),
    "city path": ({"city": "../etc"}, "city", r"Unknown city `\.\./etc`", "helsinki"),
    "city slash": ({"city": "a/b"}, "city", r"Unknown city `a/b`", "helsinki"),
    "mech unknown": ({"mech": "nope"}, "mech", r"Unknown mechanism `nope`", "em"),
    "eps text": ({"mech": "em", "eps": "abc"}, "mp.em.eps", r"`eps` = 'abc' is invalid", 5.0),
    "eps huge": ({"mech": "em", "eps": "1e9"}, "mp.em.eps", r"`eps` = '1e9' is invalid", 5.0),
    "eps nan": ({"mech": "em", "eps": "nan"}, "mp.em.eps", r"`eps` = 'nan' is invalid", 5.0),
    "param not a choice": ({"mech": "lp", "pairs": "foo"}, "mp.lp.pairs", r"`pairs` = 'foo' is invalid", "exact"),
    "int param fraction": ({"mech": "aipo", "cells": "1.5"}, "mp.aipo.cells", r"`cells` = '1.5' is invalid", 8),
    "secret negative": ({"secret": "-1"}, "secret", r"`secret=-1` is outside", None),
    "point garbage": ({"pt": "garbage"}, "point", r"`pt=garbage` is not a point", None),
    "point latitude 91": ({"pt": "91,0"}, "point", r"`pt=91,0` is not a point", None),
    "compare unknown": ({"compare": "nope,../x"}, "compare", r"`compare=nope,\.\./x` names unknown", ["em", "em-br"]),
}


@pytest.mark.parametrize("case", list(URL_CASES))
def test_url_parameters_fall_back_with_a_notice(case: str) -> None:
    from mdpviz.ui.state import parse_query

    query, key, pattern, value = URL_CASES[case]
    parsed = parse_query(query)
    import re

    assert any(re.search(pattern, n) for n in parsed.notices), parsed.notices
    assert parsed.values.get(key) == value


def test_url_time_limit_out_of_range_is_refused() -> None:
    from mdpviz.ui.state import parse_query

    for raw in ("-1", "0", "inf", "nan", "abc", "1e9"):
        parsed = parse_query({"time_limit": raw})
        assert "time_limit" not in parsed.values and any(f"time_limit={raw}" in n for n in parsed.notices)


def _bound_cases() -> list[Any]:
    """(mechanism, parameter, value, ok) at and just beyond each bound of every schema, and bad kinds."""
    out = []
    for mech in mechanisms():
        for p in mech.params:
            cases: list[tuple[str, Any, bool]] = []
            if p.kind in (int, float):
                step = (lambda v, d: v + d) if p.kind is int else (lambda v, d: float(np.nextafter(v, d * math.inf)))
                if p.low is not None:
                    cases += [("at low", p.kind(p.low), True), ("below low", step(p.low, -1), False)]
                if p.high is not None:
                    cases += [("at high", p.kind(p.high), not p.open_high), ("above high", step(p.high, 1), False)]
                    if p.open_high:
                        cases.append(("just below an open high", step(p.high, -1), True))
                cases += [("text", "many", False), ("nan", float("nan"), False), ("bool", True, False)]
                if p.kind is int:
                    cases.append(("fraction", (p.low or 0) + 0.5, False))
            elif p.kind is str:
                cases += [("not a choice", "../" + p.choices[0], False), ("a choice", p.choices[-1], True)]
            elif p.kind is bool:
                cases += [("not a boolean", "perhaps", False), ("a boolean", "false", True)]
            out += [pytest.param(mech, p, v, ok, id=f"{mech.name}-{p.name}-{what}") for what, v, ok in cases]
    return out


@pytest.mark.parametrize(("mech", "param", "value", "ok"), _bound_cases())
def test_every_parameter_at_and_beyond_its_bounds(mech: Any, param: Param, value: Any, ok: bool) -> None:
    if ok:
        assert mech.validate({param.name: value})[param.name] == param.validate(value)
        return
    with pytest.raises(MdpvizError, match=f"`{param.name}` = .* is invalid: it must be .* in "):
        mech.validate({param.name: value})
