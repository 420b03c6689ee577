"""Every path a mechanism can end on reports the diagnostics its mechanism declares (``Mechanism.diagnostics``):
the paper-scale test checks the default settings solved to the end; these are the other engines and scopes, and
stops at a deadline that has already passed (the stop paths keep points and facts of their own)."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from diagnostics_schema import undeclared

from mdpviz.mechanisms import get_mechanism
from mdpviz.problem import Problem, build_problem
from mdpviz.solve import solve

PASSED = 1e-9  # a time limit that has passed before the first step: every mechanism takes its stop path

CASES: list[tuple[str, dict[str, Any], float | None]] = [
    ("lp", {"eps": 3.0}, PASSED),
    ("lp", {"eps": 3.0, "engine": "rows"}, PASSED),
    ("lp", {"eps": 3.0, "engine": "conic"}, None),
    ("lp", {"eps": 3.0, "solver": "monolithic"}, None),
    ("lp", {"eps": 3.0, "scope": "neighbours", "eta": 0.5}, None),
    ("lp-ca", {"eps": 3.0, "solver": "monolithic"}, None),
    ("lp-bd", {"eps": 3.0}, None),
    ("lp-bd", {"eps": 3.0}, PASSED),
    ("lp-em", {"eps": 3.0}, PASSED),
    ("dista-lp", {"eps": 5.0, "upload": "cell", "cells": 2}, None),
    ("dista-lp", {"eps": 5.0}, PASSED),
    ("panda-e", {"eps": 3.0}, PASSED),
    ("aipo", {"eps": 1.0, "budget_steps": 3, "lb_grid": 0}, PASSED),
    ("cmdp", {}, PASSED),
]


@functools.cache
def problem_for(name: str) -> Problem:
    """A small Kotka sample; C-mDP's stations all outputs (its LP takes at most 24)."""
    if name.startswith("cmdp"):
        return build_problem("kotka", 8, all_outputs=True, seed=1)
    return build_problem("kotka", 40, n_outputs=20, seed=1)


@pytest.mark.parametrize(("name", "params", "time_limit"), CASES,
                         ids=[f"{n}-{'-'.join(f'{k}={v}' for k, v in p.items())}-{'stop' if t else 'end'}"
                              for n, p, t in CASES])
def test_every_path_reports_the_declared_diagnostics(name: str, params: dict[str, Any],
                                                     time_limit: float | None) -> None:
    r = solve(problem_for(name), name, params, time_limit=time_limit, use_cache=False)
    if time_limit == PASSED:
        assert r.Z is None or r.status != "optimal", f"{name} did not stop at a passed deadline: {r.status}"
    schema = get_mechanism(name).diagnostics
    assert schema is not None
    assert undeclared(schema, r.diagnostics) == []
