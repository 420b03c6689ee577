"""Caching at the edge: named Streamlit cache wrappers around library calls (networks, problems, evaluations).

Solved mechanisms come from the library's own disk cache (``mdpviz.solve``); here we only keep read-only
objects in ``st.cache_resource`` (never mutated: Problem arrays are read-only) keyed by their settings.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from mdpviz.cities import RoadNetwork, load_city
from mdpviz.errors import MdpvizError
from mdpviz.mechanisms import Result
from mdpviz.metrics import evaluate, expected_report, per_secret_loss_m
from mdpviz.problem import Problem, build_problem
from mdpviz.solve import cache_key, cached_result


@st.cache_resource(max_entries=8, show_spinner=False)
def network(slug: str) -> RoadNetwork:
    """A bundled or cached road network (read-only)."""
    return load_city(slug)


@st.cache_resource(max_entries=8, show_spinner=False)
def road_segments(slug: str) -> pd.DataFrame:
    """The road network as line segments (``s``, ``t`` = [lon, lat]) for the map's base layer."""
    net = network(slug)
    # 6 decimals of a degree is about 0.1 m: plenty for drawing, and a much smaller page
    return pd.DataFrame({"s": np.column_stack([net.lon[net.u], net.lat[net.u]]).round(6).tolist(),
                         "t": np.column_stack([net.lon[net.v], net.lat[net.v]]).round(6).tolist()})


def roads_of(prob: Problem) -> pd.DataFrame:
    """The problem's road segments, or no segments for a points-only problem (no network to draw)."""
    return road_segments(prob.city) if prob.city else pd.DataFrame({"s": [], "t": []})


@st.cache_resource(max_entries=6, show_spinner="Building the problem (secrets, outputs, distances, costs)…")
def problem(city: str, k: int, m: int, metric: str, prior: str, cost: str, tasks: int, seed: int) -> Problem:
    """The mDP problem for these settings (raises MdpvizError on bad settings; errors are not cached)."""
    return build_problem(city, k, n_outputs=m, metric=metric, prior=prior, cost=cost, n_tasks=tasks, seed=seed)


def problem_from_state() -> Problem:
    """The problem described by the shared session keys."""
    ss = st.session_state
    return problem(ss["city"], int(ss["k"]), int(min(ss["m"], ss["k"])), ss["metric"], ss["prior"], ss["cost"],
                   int(ss["tasks"]), int(ss["seed"]))


def result_key(prob: Problem, result: Result) -> str:
    return cache_key(prob, result.mechanism, result.params)


def lookup(prob: Problem, mech: str, params: dict[str, Any]) -> Result | None:
    """A result for these inputs without solving: this session's last solve, else the library's disk cache."""
    try:
        key = cache_key(prob, mech, _validated(mech, params))
    except MdpvizError:  # invalid parameters: nothing cached, the solve will report the error
        return None
    kept = st.session_state.get("_results", {})
    if key in kept:
        return kept[key]
    return cached_result(prob, mech, params)


def remember(prob: Problem, result: Result) -> None:
    """Keep a result in this session (results with a time limit are not written to the disk cache)."""
    kept = st.session_state.setdefault("_results", {})
    kept[result_key(prob, result)] = result
    while len(kept) > 24:
        kept.pop(next(iter(kept)))


def _validated(mech: str, params: dict[str, Any]) -> dict[str, Any]:
    from mdpviz.mechanisms import get_mechanism

    return get_mechanism(mech).validate(params)


@st.cache_resource(max_entries=64, show_spinner="Checking mDP on every pair and computing metrics…")
def evaluation(_prob: Problem, _result: Result, key: str) -> dict[str, Any]:
    """Every metric of a result (``key`` = its cache key, which fixes problem, mechanism and parameters)."""
    assert _result.Z is not None
    ev = evaluate(_prob, _result.Z, _result.eps, metric=_result.check_metric)
    return json.loads(json.dumps(ev, default=float))


@st.cache_resource(max_entries=64, show_spinner=False)
def per_secret(_prob: Problem, _result: Result, key: str) -> tuple[np.ndarray, np.ndarray]:
    """(expected loss per secret in metres, expected reported (lat, lon) per secret)."""
    assert _result.Z is not None
    return per_secret_loss_m(_prob, _result.Z), expected_report(_prob, _result.Z)


@st.cache_resource(max_entries=32, show_spinner=False)
def violating_pairs(_prob: Problem, _result: Result, key: str, limit: int = 300
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The worst violating ordered pairs (i, j, worst factor), at most ``limit``, and how many violate in all."""
    from mdpviz.metrics import violations

    assert _result.Z is not None
    v = violations(_prob, _result.Z, _result.eps, metric=_result.check_metric, pairs_limit=limit)
    assert v.worst_pairs is not None
    return (*v.worst_pairs, v.violated_pairs)
