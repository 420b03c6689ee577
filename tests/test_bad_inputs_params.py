"""Bad inputs, continued from ``test_bad_inputs.py``: URL query parameters, and every schema parameter at and just
beyond its bounds.

URL values fall back to defaults with a notice naming the parameter; a schema parameter beyond its bounds (or of the
wrong kind) is a library error naming it and its range.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from mdpviz.errors import MdpvizError
from mdpviz.mechanisms import Param, mechanisms

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
