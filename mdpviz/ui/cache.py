"""Caching at the edge: named Streamlit cache wrappers around library calls (networks, problems, evaluations).

Solved mechanisms come from the library's own disk cache (``mdpviz.solve``); here we keep read-only objects in
``st.cache_resource`` (never mutated: Problem arrays are read-only). Everything derived from a result (metrics,
per-secret arrays, violating pairs, heat maps) is keyed by :func:`result_key`, a hash of the result itself (its
status and Z, besides problem, mechanism and parameters), never by the inputs alone: two results of the same
inputs (a time-limited solve and a full one) never share derived numbers.
"""

from __future__ import annotations

import base64
import hashlib
import json
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pydeck as pdk
import streamlit as st
from streamlit import runtime

from mdpviz.cities import RoadNetwork, city_info, load_city
from mdpviz.errors import MdpvizError
from mdpviz.mechanisms import Result, get_mechanism
from mdpviz.metrics import Evaluation, evaluate, expected_report, per_secret_loss_m, violations
from mdpviz.problem import Problem, build_problem, problem_from_points
from mdpviz.reference import Reference, cached_reference
from mdpviz.regimes.report import CELLS_FILE, load_cells
from mdpviz.regimes.report import SHIPPED_DIR as REGIMES_DIR
from mdpviz.solve import cache_key, cached_result, entry_path

from . import basemap, maps


@st.cache_resource(max_entries=8, show_spinner=False)
def network(slug: str) -> RoadNetwork:
    """A bundled or cached road network (read-only)."""
    return load_city(slug)


@st.cache_resource(max_entries=24, show_spinner="Drawing the road network…")
def _road_image(slug: str, bounds: tuple[float, float, float, float], px_per_deg: float) -> basemap.RoadImage:
    net = network(slug)
    return basemap.road_image(net.lon[net.u], net.lat[net.u], net.lon[net.v], net.lat[net.v], bounds, px_per_deg)


def media_url(data: bytes, mimetype: str, name: str) -> str:
    """A URL of the app's own origin serving ``data`` (Streamlit's media endpoint, shared by sessions); a data URL
    when no server runs (AppTest, bare mode)."""
    if runtime.exists():
        try:
            return runtime.get_instance().media_file_mgr.add(data, mimetype, f"mdpviz.{name}")
        except Exception:  # noqa: BLE001 - an internal API of Streamlit: fall back to inline data, never fail
            pass
    return f"data:{mimetype};base64,{base64.b64encode(data).decode()}"


def road_layer(prob: Problem, width_px: int = 600, height_px: int = 470) -> pdk.Layer | None:
    """The problem's road network as one image layer (None for points without a city: nothing to draw).

    The image covers the secrets with a margin, clipped to the network, at twice the map's initial pixel
    density; maps of the same problem at other sizes share it.
    """
    if not prob.city:
        return None
    info = city_info(prob.city)
    s, w, n, e = info.bbox
    vw, vs, ve, vn = basemap.view_bounds(prob.x_lat, prob.x_lon)
    bounds = (max(vw, w), max(vs, s), min(ve, e), min(vn, n))
    if not (bounds[0] < bounds[2] and bounds[1] < bounds[3]):
        return None
    zoom = maps.view_state(prob, 600, 470).zoom
    px_per_deg = 2 * 512 * 2 ** zoom / 360
    # rounded so that problems of the same place share one image
    key = tuple(round(b, 4) for b in bounds)
    # (mypy) key holds the four rounded bounds
    img = _road_image(prob.city, key, float(f"{px_per_deg:.3g}"))  # type: ignore[arg-type]
    url = media_url(img.png, "image/png", f"roads.{prob.city}.{hashlib.sha1(img.png).hexdigest()[:12]}")
    return maps.image_layer("roads", url, img.bounds)


@st.cache_resource(max_entries=6, show_spinner="Building the problem (secrets, outputs, distances, costs)…")
def problem(city: str, k: int, m: int, metric: str, prior: str, cost: str, tasks: int, seed: int,
            region: str = "whole") -> Problem:
    """The mDP problem for these settings (raises MdpvizError on bad settings; errors are not cached)."""
    return build_problem(city, k, n_outputs=m, metric=metric, prior=prior, cost=cost, n_tasks=tasks, seed=seed,
                         region=region)


@st.cache_resource(max_entries=4, show_spinner="Building the problem from your points…")
def points_problem(digest: str, _data: bytes, city: str | None, m: int, metric: str, cost: str, tasks: int,
                   seed: int) -> Problem:
    """The problem whose secrets are an uploaded CSV's points (``digest`` = SHA-256 of ``_data`` keys it).

    ``city`` None: the points stand alone (haversine metric, distance cost). Nothing is written to disk.
    """
    kw: dict[str, Any] = {"metric": metric if city else "haversine", "cost": cost if city else "distance",
                          "n_tasks": tasks, "seed": seed}
    try:
        return problem_from_points(_data, city, n_outputs=m, **kw)
    except MdpvizError as e:
        if "n_outputs" not in str(e):
            raise
        return problem_from_points(_data, city, all_outputs=True, **kw)  # fewer distinct points than |Y|: Y = X


def problem_from_state() -> Problem:
    """The problem described by the shared session keys (an uploaded points file when the source is points)."""
    ss = st.session_state
    m = int(min(ss["m"], ss["k"]))
    upload = ss.get("_points") if ss.get("source") == "points" else None
    if upload is not None:
        city = ss["city"] if ss.get("points_snap", True) else None
        return points_problem(upload["digest"], upload["data"], city, int(ss["m"]), ss["metric"], ss["cost"],
                              int(ss["tasks"]), int(ss["seed"]))
    return problem(ss["city"], int(ss["k"]), m, ss["metric"], ss["prior"], ss["cost"], int(ss["tasks"]),
                   int(ss["seed"]), str(ss.get("region") or "whole"))


_Z_DIGESTS: weakref.WeakKeyDictionary[Result, str] = weakref.WeakKeyDictionary()


def result_key(prob: Problem, result: Result) -> str:
    """A key of this very result: problem, mechanism, parameters, status, ε, checked metric and a hash of Z.

    Two results of the same inputs that differ in anything they carry (a time-limited run and a full one) get
    different keys, so metrics and arrays derived from one are never shown for the other.
    """
    digest = _Z_DIGESTS.get(result)
    if digest is None:
        z = b"" if result.Z is None else np.ascontiguousarray(result.Z).tobytes()
        digest = hashlib.sha256(z).hexdigest()[:24]
        _Z_DIGESTS[result] = digest
    blob = json.dumps([prob.fingerprint, result.mechanism, result.params, result.status, result.eps,
                       result.check_metric, None if result.Z is None else list(result.Z.shape), digest],
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def input_key(prob: Problem, mech: str, params: dict[str, Any]) -> str | None:
    """The solve cache's key of these inputs (None for invalid parameters: nothing can be cached for them)."""
    try:
        return cache_key(prob, mech, get_mechanism(mech).validate(params))
    except MdpvizError:
        return None


def lookup(prob: Problem, mech: str, params: dict[str, Any]) -> Result | None:
    """A result for these inputs without solving: this session's last solve, else the library's disk cache."""
    key = input_key(prob, mech, params)
    if key is None:  # invalid parameters: nothing cached, the solve will report the error
        return None
    kept: dict[str, Result] = st.session_state.get("_results", {})
    if key in kept:
        return kept[key]
    return cached_result(prob, mech, params)


def remember(prob: Problem, result: Result) -> None:
    """Keep a result in this session under its inputs (results with a time limit are not in the disk cache)."""
    key = input_key(prob, result.mechanism, result.params)
    if key is None:
        return
    kept = st.session_state.setdefault("_results", {})
    kept.pop(key, None)
    kept[key] = result
    while len(kept) > 24:
        kept.pop(next(iter(kept)))


@st.cache_resource(max_entries=64, show_spinner="Checking mDP on every pair and computing metrics…")
def evaluation(_prob: Problem, _result: Result, key: str) -> Evaluation:
    """Every metric of a result (``key`` = :func:`result_key`, which fixes the problem and the result itself), as
    plain Python numbers (numpy scalars converted)."""
    assert _result.Z is not None
    ev = evaluate(_prob, _result.Z, _result.eps, metric=_result.check_metric)
    plain: Evaluation = json.loads(json.dumps(ev, default=float))
    return plain


@st.cache_resource(max_entries=64, show_spinner=False)
def per_secret(_prob: Problem, _result: Result, key: str) -> tuple[np.ndarray, np.ndarray]:
    """(expected loss per secret in metres, expected reported (lat, lon) per secret)."""
    assert _result.Z is not None
    return per_secret_loss_m(_prob, _result.Z), expected_report(_prob, _result.Z)


@st.cache_resource(max_entries=32, show_spinner=False)
def violating_pairs(_prob: Problem, _result: Result, key: str, limit: int = 300
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The worst violating ordered pairs (i, j, worst factor), at most ``limit``, and how many violate in all."""
    assert _result.Z is not None
    v = violations(_prob, _result.Z, _result.eps, metric=_result.check_metric, pairs_limit=limit)
    assert v.worst_pairs is not None
    return (*v.worst_pairs, v.violated_pairs)



@st.cache_resource(max_entries=32, show_spinner=False)
def _reference(_prob: Problem, fingerprint: str, eps: float, stamp: float) -> Reference:
    return cached_reference(_prob, eps)


def reference(prob: Problem, eps: float) -> Reference:
    """The floor, and the exact LP's optimum when it is in the disk cache: read once per problem, ε and version of
    that cache entry (its modification time), not on every rerun of a page."""
    try:
        stamp = entry_path(prob, "lp", {"eps": float(eps)}).stat().st_mtime
    except OSError:
        stamp = 0.0  # no LP solved for these inputs (yet)
    return _reference(prob, prob.fingerprint, float(eps), stamp)


@st.cache_data(show_spinner=False)
def _regime_cells(folder: str, mtime: float) -> pd.DataFrame | None:
    return load_cells(Path(folder))


def regime_cells(folder: Path = REGIMES_DIR) -> pd.DataFrame | None:
    """The regime grid's cell table (``docs/regimes/cells.csv`` by default; None when there is none): read once per
    version of the file, for the Which mechanism? page, Home and the examples alike."""
    path = folder / CELLS_FILE
    return _regime_cells(str(folder), path.stat().st_mtime if path.is_file() else 0.0)
