"""One mDP instance: secrets X, outputs Y ⊂ X, the mDP metric d (km), the prior p and the cost c (metres)."""

from __future__ import annotations

import functools
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.sparse.csgraph import dijkstra

from .cities import RoadNetwork, load_city
from .errors import ProblemError
from .geo import pairwise_haversine_km, project_km
from .points import PointsSource, read_points, snap_points, snap_to_nodes
from .region import Region, parse_region
from .roads import node_distances_km

Metric = Literal["haversine", "road"]
CostModel = Literal["travel", "distance"]
PriorKind = Literal["uniform", "street_count", "points"]
METRICS: tuple[str, ...] = ("haversine", "road")
COST_MODELS: tuple[str, ...] = ("travel", "distance")
PRIORS: tuple[str, ...] = ("uniform", "street_count", "points")
DEFAULT_OUTPUTS = 100
DEFAULT_TASKS = 10
DEFAULT_SNAP_KM = 0.5
MAX_K = 10_000  # K × K float64 arrays: K = 10,000 builds in ~3.3 GB peak (London, haversine); more exhausts memory


@dataclass(frozen=True, eq=False)
class Problem:
    """An mDP instance. Arrays are read-only; build one with ``build_problem`` or ``problem_from_points``.

    Attributes
    ----------
    x_lat, x_lon
        Secrets X in degrees, shape (K,).
    x_node
        Network node index of each secret, or -1 when there is no network.
    y_index
        Outputs Y as indices into X, shape (M,).
    d
        The mDP metric between secrets, km, shape (K, K); symmetric with a zero diagonal.
    p
        Prior over X, shape (K,), sums to 1.
    c
        Cost of reporting y when the truth is x, metres, shape (K, M).
    task_index
        Task nodes of the travel cost as indices into X (empty for the distance cost).
    city
        Slug of the city, or None for free-standing points.
    settings
        The choices that built it (metric, cost, prior, seed...), shown and hashed.
    timings
        Seconds per build phase.
    """

    x_lat: NDArray[np.float64]
    x_lon: NDArray[np.float64]
    x_node: NDArray[np.int64]
    y_index: NDArray[np.int64]
    d: NDArray[np.float64]
    p: NDArray[np.float64]
    c: NDArray[np.float64]
    task_index: NDArray[np.int64]
    city: str | None
    settings: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("x_lat", "x_lon", "x_node", "y_index", "d", "p", "c", "task_index"):
            getattr(self, name).setflags(write=False)

    @property
    def k(self) -> int:
        """|X|, the number of secrets."""
        return len(self.x_lat)

    @property
    def m(self) -> int:
        """|Y|, the number of outputs."""
        return len(self.y_index)

    @property
    def y_lat(self) -> NDArray[np.float64]:
        """Latitudes of the outputs."""
        return self.x_lat[self.y_index]

    @property
    def y_lon(self) -> NDArray[np.float64]:
        """Longitudes of the outputs."""
        return self.x_lon[self.y_index]

    @property
    def d_xy(self) -> NDArray[np.float64]:
        """mDP metric from each secret to each output, km, shape (K, M)."""
        return self.d[:, self.y_index]

    @functools.cached_property
    def xy_km(self) -> NDArray[np.float64]:
        """Secrets in planar km, (K, 2): equirectangular projection around their mean (lat, lon).

        The plane in which planar mechanisms (Laplace, grids) work and their ``l1``/``l2-planar`` claims are checked.
        """
        xy = project_km(self.x_lat, self.x_lon, float(self.x_lat.mean()), float(self.x_lon.mean()))
        xy.setflags(write=False)
        return xy

    @property
    def metric(self) -> str:
        """The metric of ``d`` (``road`` or ``haversine``)."""
        return str(self.settings["metric"])

    @functools.cached_property
    def fingerprint(self) -> str:
        """SHA-256 of the content (coordinates, Y, d, p, c and settings): the cache key of this problem."""
        h = hashlib.sha256(json.dumps(self.settings, sort_keys=True, default=str).encode())
        for arr in (self.x_lat, self.x_lon, self.y_index, self.d, self.p, self.c):
            h.update(np.ascontiguousarray(arr).tobytes())
        return h.hexdigest()[:32]

    def summary(self) -> dict[str, Any]:
        """Sizes and ranges for printing: K, |Y|, metric, distance range (km), cost range (m), build time (s)."""
        off = self.d[~np.eye(self.k, dtype=bool)]
        return {"city": self.city or "(points only)", **self.settings,
                "d_min_km": float(off.min()), "d_max_km": float(off.max()),
                "cost_mean_m": float(self.c.mean()), "cost_max_m": float(self.c.max()),
                "build_s": round(sum(self.timings.values()), 3), "fingerprint": self.fingerprint}


def _check_int(name: str, value: object, low: int, high: int | None, hint: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ProblemError(f"`{name}` must be a whole number, got {value!r}.")
    if value < low or (high is not None and value > high):
        span = f"[{low}, {high}]" if high is not None else f"≥ {low}"
        raise ProblemError(f"`{name}` = {value} is out of range {span}: {hint}")
    return int(value)


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ProblemError(f"`{name}` = {value!r} is not one of {', '.join(allowed)}.")
    return value


def _spawn(seed: int, n: int) -> list[np.random.Generator]:
    """Independent generators per random step, so changing |Y| never changes X."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]


def _node_weights(network: RoadNetwork, prior: str, points_nodes: NDArray[np.int64] | None,
                  point_weights: NDArray[np.float64] | None) -> NDArray[np.float64]:
    if prior == "uniform":
        return np.ones(network.n_nodes, dtype=np.float64)
    if prior == "street_count":
        return network.street_count.astype(np.float64)
    assert points_nodes is not None and point_weights is not None
    return np.bincount(points_nodes, weights=point_weights, minlength=network.n_nodes).astype(np.float64)


def _finish(network: RoadNetwork | None, x_node: NDArray[np.int64], x_lat: NDArray[np.float64],
            x_lon: NDArray[np.float64], p: NDArray[np.float64], n_outputs: int | None, all_outputs: bool,
            metric: str, cost: str, n_tasks: int, seed: int, settings: dict[str, Any],
            timings: dict[str, float]) -> Problem:
    """Shared tail of both builders: choose Y, compute d and c, wrap it up."""
    k = len(x_lat)
    if k > MAX_K:
        raise ProblemError(f"K = {k:,} secrets is more than mdpviz handles (at most {MAX_K:,}): the K × K distance "
                           f"matrix alone would need {8 * k * k / 1e9:,.0f} GB. Lower `k`, use a smaller region, or "
                           "give fewer distinct points (with a city, points on the same road node merge).")
    _, ry, rt = _spawn(seed, 3)
    m = k if all_outputs else (min(DEFAULT_OUTPUTS, k) if n_outputs is None else n_outputs)
    m = _check_int("n_outputs", m, 1, k, f"|Y| must lie between 1 and K = {k}; lower it or raise K.")
    y_index = np.arange(k) if m == k else np.sort(ry.choice(k, size=m, replace=False))

    t0 = time.perf_counter()
    if (metric == "road" or cost == "travel") and network is None:
        raise ProblemError("The road metric and the travel cost need a road network; pass `city=`.")
    if metric == "haversine":
        d = pairwise_haversine_km(x_lat, x_lon, x_lat, x_lon)
        np.fill_diagonal(d, 0.0)
    else:
        # (mypy) the road metric without a network was refused above
        d = node_distances_km(network, x_node)  # type: ignore[arg-type]
    timings["metric_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    if cost == "travel":
        task_index = np.sort(rt.choice(k, size=min(n_tasks, k), replace=False))
        if metric == "road":
            to_task_m = d[task_index] * 1000.0  # (T, K): the road distances are there already
        else:  # one multi-source Dijkstra: road km from every task node to every network node
            # (mypy) the travel cost without a network was refused above
            task_km = dijkstra(network.adjacency_km(), directed=False, indices=x_node[task_index])  # type: ignore[union-attr]
            to_task_m = task_km[:, x_node] * 1000.0
        c = np.abs(to_task_m[:, :, None] - to_task_m[:, None, y_index]).mean(axis=0)
    else:
        task_index = np.zeros(0, dtype=np.int64)
        c = d[:, y_index] * 1000.0
    timings["cost_s"] = time.perf_counter() - t0
    settings = {**settings, "metric": metric, "cost": cost, "n_outputs": m, "seed": seed,
                "n_tasks": len(task_index) if cost == "travel" else 0}
    return Problem(x_lat=x_lat, x_lon=x_lon, x_node=x_node, y_index=y_index.astype(np.int64), d=d,
                   p=p / p.sum(), c=c, task_index=task_index.astype(np.int64),
                   city=network.slug if network is not None else None, settings=settings, timings=timings)


def build_problem(city: str | RoadNetwork | None = None, k: int = 500, *, n_outputs: int | None = None,
                  all_outputs: bool = False, metric: str = "haversine", prior: str = "uniform",
                  sample_by_prior: bool = False, prior_points: PointsSource | None = None, cost: str = "travel",
                  n_tasks: int = DEFAULT_TASKS, seed: int = 0, max_snap_km: float = DEFAULT_SNAP_KM,
                  region: str | Region | None = None) -> Problem:
    """Build an mDP problem on a road network.

    Parameters
    ----------
    city
        A city slug or label, a loaded ``RoadNetwork``, or None for the default city.
    k
        |X|, the number of secret road nodes, sampled without replacement (2 ≤ k ≤ nodes in the region).
    n_outputs
        |Y|, a seeded subset of X (default min(100, k)). Ignored when ``all_outputs``.
    all_outputs
        Use Y = X.
    metric
        The mDP metric d: ``haversine`` (great-circle km) or ``road`` (shortest-path km).
    prior
        p over X: ``uniform``, ``street_count`` (node degree in OSM) or ``points`` (counts of ``prior_points``
        snapped to their nearest secret).
    sample_by_prior
        Draw X with probability proportional to the prior's node weights, not uniformly.
    prior_points
        CSV path, file or DataFrame of (lat, lon[, weight]) for ``prior="points"``.
    cost
        ``travel`` (mean |SP(x, task) − SP(y, task)| over ``n_tasks`` seeded task nodes, metres) or ``distance``
        (d(x, y) in metres).
    n_tasks
        Number of task nodes T of the travel cost (≥ 1).
    seed
        Seeds every random step (X, Y, tasks); the same inputs give the same problem.
    max_snap_km
        Points farther than this from the network are an error.
    region
        Where X is drawn from (``mdpviz.region``): ``whole`` (default, the papers' way: the whole city),
        ``centre:R``, ``LAT,LON,R`` (km) or ``S,W,N,E``. Part of the fingerprint.

    Returns
    -------
    Problem
        The instance: secrets, outputs, distances (km), prior and costs (m), with its fingerprint.

    Raises
    ------
    ProblemError
        For any setting out of range, with what to change.
    """
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    network = city if isinstance(city, RoadNetwork) else load_city(city)
    timings["load_s"] = time.perf_counter() - t0
    _check_choice("metric", metric, METRICS)
    _check_choice("cost", cost, COST_MODELS)
    _check_choice("prior", prior, PRIORS)
    seed = _check_int("seed", seed, 0, None, "use a non-negative seed.")
    n_tasks = _check_int("n_tasks", n_tasks, 1, None, "the travel cost needs at least one task node.")
    if not isinstance(region, Region):
        region = parse_region(region, network.centre)
    inside = np.flatnonzero(region.contains(network.lat, network.lon))
    where = network.label if region.kind == "whole" else f"{network.label} {region.describe()}"
    if len(inside) < 2:
        raise ProblemError(f"{where} has {len(inside)} road node(s); an mDP problem needs at least 2. Choose a larger "
                           f"region or one inside the city (its centre is {network.centre[0]:.4f}, "
                           f"{network.centre[1]:.4f}).")
    k = _check_int("k", k, 2, len(inside),
                   f"{where} has {len(inside)} nodes; choose 2 ≤ K ≤ {len(inside)}"
                   + ("." if region.kind == "whole" else " or a larger region."))
    if n_outputs is not None and not all_outputs:
        _check_int("n_outputs", n_outputs, 1, k, f"|Y| must lie between 1 and K = {k}; lower it or raise K.")

    t0 = time.perf_counter()
    pts_nodes = pts_w = None
    if prior == "points":
        if prior_points is None:
            raise ProblemError("`prior='points'` needs `prior_points` (a CSV of lat, lon[, weight]).")
        pts = read_points(prior_points)
        pts_nodes, pts_w = snap_points(pts, network, max_snap_km), pts.weight.to_numpy()
    weights = _node_weights(network, prior, pts_nodes, pts_w)
    rx = _spawn(seed, 3)[0]
    if sample_by_prior:
        w_in = weights[inside]
        positive = int((w_in > 0).sum())
        if positive < k:
            msg = (f"Only {positive} nodes have a positive prior weight, fewer than K = {k}; "
                   "lower K or sample X uniformly.")
            raise ProblemError(msg)
        x_node = inside[rx.choice(len(inside), size=k, replace=False, p=w_in / w_in.sum())]
    else:
        x_node = inside[rx.choice(len(inside), size=k, replace=False)]
    x_node = np.sort(x_node).astype(np.int64)
    if prior == "points":
        # every point counts towards its nearest secret (not only points that snap onto a secret's node)
        owner = snap_to_nodes(network.lat[pts_nodes], network.lon[pts_nodes],
                              network.lat[x_node], network.lon[x_node], max_km=np.inf)
        p = np.bincount(owner, weights=pts_w, minlength=k).astype(np.float64)
    else:
        p = weights[x_node]
    if p.sum() <= 0:
        raise ProblemError("The prior gives zero weight to every sampled secret; choose another prior.")
    timings["sample_s"] = time.perf_counter() - t0
    settings = {"k": k, "prior": prior, "sample_by_prior": sample_by_prior, "region": region.spec}
    return _finish(network, x_node, network.lat[x_node], network.lon[x_node], p.astype(np.float64), n_outputs,
                   all_outputs, metric, cost, n_tasks, seed, settings, timings)


def problem_from_points(points: PointsSource, city: str | RoadNetwork | None = None, *,
                        snap: bool = True, n_outputs: int | None = None, all_outputs: bool = False,
                        metric: str = "haversine", cost: str | None = None, n_tasks: int = DEFAULT_TASKS,
                        seed: int = 0, max_snap_km: float = DEFAULT_SNAP_KM) -> Problem:
    """Build a problem whose secret domain X is a user's own points (POIs, check-ins...).

    Parameters
    ----------
    points
        A CSV path, file or DataFrame of (lat, lon[, weight]) rows; the weights (default 1) become the prior.
    city
        With ``snap``, each point is snapped to this city's nearest road node (points on one node merge, their
        weights add up). None: the points stand alone (haversine metric and distance cost only).
    snap
        Snap the points to the city's road nodes.
    n_outputs, all_outputs, metric, n_tasks, seed, max_snap_km
        As in :func:`build_problem`.
    cost
        ``travel`` or ``distance``; default ``travel`` with a city and ``distance`` without.

    Returns
    -------
    Problem
        The instance over the user's points.

    Raises
    ------
    ProblemError
        Malformed or empty CSV, fewer than 2 distinct locations, points far from the network, or a road metric or
        travel cost requested without a network.
    """
    pts = read_points(points)
    seed = _check_int("seed", seed, 0, None, "use a non-negative seed.")
    n_tasks = _check_int("n_tasks", n_tasks, 1, None, "the travel cost needs at least one task node.")
    _check_choice("metric", metric, METRICS)
    timings: dict[str, float] = {}
    network = None
    if city is not None and snap:
        t0 = time.perf_counter()
        network = city if isinstance(city, RoadNetwork) else load_city(city)
        timings["load_s"] = time.perf_counter() - t0
        nodes = snap_points(pts, network, max_snap_km)
        x_node, owner = np.unique(nodes, return_inverse=True)
        x_lat, x_lon = network.lat[x_node], network.lon[x_node]
    else:
        keys = pts.lat.round(7).astype(str) + "," + pts.lon.round(7).astype(str)
        _, first, owner = np.unique(keys.to_numpy(), return_index=True, return_inverse=True)
        x_lat, x_lon = pts.lat.to_numpy()[first], pts.lon.to_numpy()[first]
        x_node = np.full(len(first), -1, dtype=np.int64)
    cost = cost or ("travel" if network is not None else "distance")
    _check_choice("cost", cost, COST_MODELS)
    p = np.bincount(owner, weights=pts.weight.to_numpy(), minlength=len(x_lat)).astype(np.float64)
    if len(x_lat) < 2:
        raise ProblemError(f"The points give {len(x_lat)} distinct location(s); an mDP problem needs at least 2.")
    if p.sum() <= 0:
        raise ProblemError("The points' weights sum to zero; give positive weights.")
    settings = {"k": len(x_lat), "prior": "points", "source": "points", "n_points": len(pts)}
    return _finish(network, x_node.astype(np.int64), x_lat, x_lon, p, n_outputs, all_outputs, metric, cost,
                   n_tasks, seed, settings, timings)
