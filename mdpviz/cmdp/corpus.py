"""Vehicle trajectories on a road network: a seeded synthetic generator, a user CSV loader, and time slots.

A *trajectory* is a sequence of GPS fixes (trajectory id, UTC timestamp, lat, lon), each snapped to a road node.
For C-mDP (seed 002) the locations are a small set of *stations* (the secrets X of a ``Problem``): every road node
belongs to the station nearest to it along the roads (a road Voronoi cell), and a trajectory becomes a sequence of
*slots* by mapping each fix to its station and merging consecutive fixes in the same station (or, with
``slot_s``, by cutting it into fixed time slots). One slot is one time step X_t of the paper; the slots before it
are its context V = (X_{t−1}, …, X_{t−Γ}).

The generator (``generate_trajectories``) is documented in its docstring: vehicles hop between neighbouring
stations along road paths, steered by a momentum term whose memory (the *order* of the walk, 1–3) is planted by a
rule on speed and region, and by a destination-seeking term. The order used for every move is recorded as the
"oracle" Markov blanket size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple, TypeAlias

import numpy as np
import pandas as pd
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.csgraph import dijkstra

from ..cities import RoadNetwork
from ..deadline import OutOfTime, check_deadline  # noqa: F401  (OutOfTime: re-exported, it was defined here)
from ..errors import ProblemError
from ..geo import haversine_km, project_km
from ..points import find_columns, read_table, snap_to_nodes

TrajectorySource: TypeAlias = str | Path | IO[str] | IO[bytes] | bytes | pd.DataFrame


MEMORY_RULES = ("mixed", "1", "2", "3")
START_UTC_S = 1_704_067_200.0  # 2024-01-01 00:00 UTC: day 0 of generated traces
_ALIASES = {"traj": ("trajectory_id", "traj_id", "trajectory", "trip_id", "id", "vehicle_id"),
            "time": ("timestamp", "time", "datetime", "t"),
            "lat": ("lat", "latitude"), "lon": ("lon", "lng", "long", "longitude")}


@dataclass(frozen=True, eq=False)
class Trajectories:
    """GPS fixes snapped to road nodes, sorted by trajectory then time.

    Attributes:
        traj: trajectory number of each fix, 0..T−1, shape (N,).
        ids: the original id of each trajectory (strings), shape (T,).
        time_s: UTC seconds since the Unix epoch, shape (N,).
        lat, lon: the fix in degrees (for generated traces: the road node's own coordinates).
        node: road-network node each fix snaps to.
        oracle_order: for generated traces, the order of the walk (1–3) used by the move that brought the
            vehicle into the fix's station; −1 when unknown (user data, or the first station of a trip).
        dest_node: for generated traces, the road node of the vehicle's current destination; −1 otherwise.
        source: ``synthetic`` or ``csv``.
        settings: the generator's settings (empty for CSV data).
    """

    traj: NDArray[np.int64]
    ids: NDArray[np.str_]
    time_s: NDArray[np.float64]
    lat: NDArray[np.float64]
    lon: NDArray[np.float64]
    node: NDArray[np.int64]
    oracle_order: NDArray[np.int64]
    dest_node: NDArray[np.int64]
    source: str
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def n_fixes(self) -> int:
        """Number of GPS fixes over all trajectories."""
        return len(self.traj)

    @property
    def n_trajectories(self) -> int:
        """Number of trajectories."""
        return len(self.ids)

    def to_frame(self) -> pd.DataFrame:
        """The fixes as a CSV-ready frame: trajectory_id, timestamp (ISO 8601 UTC), lat, lon."""
        ts = pd.to_datetime(self.time_s, unit="s", utc=True)
        return pd.DataFrame({"trajectory_id": self.ids[self.traj], "timestamp": ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
                             "lat": self.lat, "lon": self.lon})

    def polyline(self, t: int) -> tuple[list[float], list[float]]:
        """(lats, lons) of trajectory ``t``'s fixes, degrees."""
        sel = self.traj == t
        return self.lat[sel].tolist(), self.lon[sel].tolist()


# ---------------------------------------------------------------- stations: road Voronoi cells and their graph


@dataclass(frozen=True, eq=False)
class StationGraph:
    """Stations (road nodes) with road Voronoi cells, neighbours and the road paths between neighbours.

    Attributes:
        station_node: road node of each station, shape (K,).
        cell: station (0..K−1) that owns each road node: the nearest station along the roads.
        road_km: shortest road distance between stations, km, shape (K, K).
        neighbours: (K, D) station indices of each station's neighbours, −1 padded. Two stations are neighbours
            when a road edge joins their cells.
        xy_km: stations in a local planar projection (east, north), km, shape (K, 2).
    """

    station_node: NDArray[np.int64]
    cell: NDArray[np.int64]
    road_km: NDArray[np.float64]
    neighbours: NDArray[np.int64]
    xy_km: NDArray[np.float64]
    _routes: dict[tuple[int, int], tuple[NDArray[np.int64], NDArray[np.float64]]] = field(default_factory=dict)

    @property
    def k(self) -> int:
        """Number of stations."""
        return len(self.station_node)


def station_graph(network: RoadNetwork, station_node: NDArray[np.int64]) -> StationGraph:
    """Road Voronoi cells of the stations on ``network`` and the neighbour graph between cells.

    Raises:
        ProblemError: fewer than 2 stations, or two stations on the same road node.
    """
    station_node = np.asarray(station_node, dtype=np.int64)
    if len(station_node) < 2 or len(np.unique(station_node)) != len(station_node):
        raise ProblemError("C-mDP needs at least 2 stations on distinct road nodes; build the problem with k ≥ 2.")
    adj = network.adjacency_km()
    dist = dijkstra(adj, directed=False, indices=station_node)  # (K, n_nodes) km
    cell = np.argmin(dist, axis=0).astype(np.int64)
    road_km = dist[:, station_node]
    road_km = np.minimum(road_km, road_km.T)
    a, b = cell[network.u], cell[network.v]
    cross = a != b
    pairs = np.unique(np.concatenate([np.column_stack([a[cross], b[cross]]),
                                      np.column_stack([b[cross], a[cross]])]), axis=0)
    k = len(station_node)
    deg = np.bincount(pairs[:, 0], minlength=k)
    width = max(int(deg.max()), 1) if len(pairs) else 1
    neighbours = np.full((k, width), -1, dtype=np.int64)
    if len(pairs):
        slot = np.arange(len(pairs)) - np.repeat(np.cumsum(deg) - deg, deg)
        neighbours[pairs[:, 0], slot] = pairs[:, 1]
    lat0, lon0 = float(network.lat[station_node].mean()), float(network.lon[station_node].mean())
    xy = project_km(network.lat[station_node], network.lon[station_node], lat0, lon0)
    return StationGraph(station_node, cell, road_km, neighbours, xy)


def _route(network: RoadNetwork, g: StationGraph, a: int, b: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Road nodes from station a to station b inside the union of their two cells, and cumulative km along it.

    Staying inside the two cells means every node on the route maps back to a or b, so re-discretising a
    generated trace gives back the station walk exactly.
    """
    key = (a, b)
    if key in g._routes:
        return g._routes[key]
    inside = (g.cell == a) | (g.cell == b)
    keep = inside[network.u] & inside[network.v]
    nodes = np.flatnonzero(inside)
    local = np.full(network.n_nodes, -1)
    local[nodes] = np.arange(len(nodes))
    u, v, w = local[network.u[keep]], local[network.v[keep]], network.length_m[keep] / 1000.0
    sub = sp.coo_matrix((np.concatenate([w, w]), (np.concatenate([u, v]), np.concatenate([v, u]))),
                        shape=(len(nodes), len(nodes))).tocsr()
    src, dst = local[g.station_node[a]], local[g.station_node[b]]
    dist, pred = dijkstra(sub, directed=False, indices=src, return_predecessors=True)
    if not np.isfinite(dist[dst]):  # cannot happen for neighbouring cells; fall back to the straight hop
        path = np.array([src, dst])
    else:
        walk = [dst]
        while walk[-1] != src:  # walks one route (≤ a few dozen nodes), once per neighbour pair
            walk.append(pred[walk[-1]])
        path = np.array(walk[::-1])
    route = nodes[path]
    step = haversine_km(network.lat[route[:-1]], network.lon[route[:-1]], network.lat[route[1:]],
                        network.lon[route[1:]])
    out = (route.astype(np.int64), np.concatenate([[0.0], np.cumsum(step)]))
    g._routes[key] = out
    return out


# ---------------------------------------------------------------- the generator


def _hour_speed_kmh(hour: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.float64]:
    """Trip speed (km/h): slow in rush hours (7–9, 16–18 h), fast at night (22–5 h), lognormal noise."""
    h = np.floor(hour) % 24
    base = np.where(((h >= 7) & (h < 9)) | ((h >= 16) & (h < 18)), 18.0,
                    np.where((h >= 22) | (h < 5), 45.0, 30.0))
    speed: NDArray[np.float64] = np.clip(base * np.exp(rng.normal(0.0, 0.25, size=len(h))), 8.0, 90.0)
    return speed


def planted_order(memory: str, speed_kmh: NDArray[np.float64], downtown: NDArray[np.bool_]) -> NDArray[np.int64]:
    """Order of the walk (the true Markov blanket size) for each move.

    ``memory="mixed"`` (default) plants a rule on speed and region: order 1 (no momentum) for slow vehicles
    (< 25 km/h) downtown, order 3 (two-step heading) for fast vehicles (≥ 40 km/h), order 2 otherwise.
    ``"1"``, ``"2"``, ``"3"`` use that order everywhere.
    """
    if memory != "mixed":
        return np.full(len(speed_kmh), int(memory), dtype=np.int64)
    order = np.full(len(speed_kmh), 2, dtype=np.int64)
    order[(speed_kmh < 25.0) & downtown] = 1
    order[speed_kmh >= 40.0] = 3
    return order


@dataclass(frozen=True)
class _HopRoutes:
    """Road routes of every hop of every walk (one shortest-path search per distinct neighbour pair): per distinct
    pair its nodes (arrival excluded, concatenated: ``nodes[off[p]:off[p] + length[p]]``) and their km along it;
    per (vehicle, hop) its pair and km, and the km at which the hop starts along the vehicle's trip."""

    length: NDArray[np.int64]
    off: NDArray[np.int64]
    nodes: NDArray[np.int64]
    cum: NDArray[np.float64]
    pair_of: NDArray[np.int64]  # (vehicles · hops,)
    hop_km: NDArray[np.float64]  # (vehicles, hops)
    hop_start: NDArray[np.float64]  # (vehicles · hops,)

    def vehicles(self, v0: int, v1: int) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64],
                                                  NDArray[np.int64]]:
        """Per route node of vehicles v0..v1−1: its road node, its km along the vehicle's trip, its vehicle and its
        hop (the same values, element for element, as one pass over every vehicle)."""
        n_steps = self.hop_km.shape[1]
        hops = np.arange(v0 * n_steps, v1 * n_steps)
        hop_n = self.length[self.pair_of[hops]]
        rep = np.repeat(hops, hop_n)
        within = np.arange(rep.size) - np.repeat(np.cumsum(hop_n) - hop_n, hop_n)
        at = self.off[self.pair_of[rep]] + within
        return self.nodes[at], self.hop_start[rep] + self.cum[at], rep // n_steps, rep % n_steps


def _hop_routes(network: RoadNetwork, g: StationGraph, walk: NDArray[np.int64], deadline: float | None
                ) -> _HopRoutes:
    """The road routes of every hop of every walk (:class:`_HopRoutes`)."""
    v, n_steps, k = walk.shape[0], walk.shape[1] - 1, g.k
    a, b = walk[:, :-1].ravel(), walk[:, 1:].ravel()
    pair_key, pair_of = np.unique(a * k + b, return_inverse=True)
    routes = []
    for p in pair_key:  # one short shortest-path search per distinct neighbour pair
        check_deadline(deadline, "routing the generated trips")
        routes.append(_route(network, g, int(p // k), int(p % k)))
    r_len = np.array([len(r[0]) - 1 for r in routes])  # nodes per hop, the arrival node excluded
    r_km = np.array([r[1][-1] for r in routes])
    r_off = np.concatenate([[0], np.cumsum(r_len)])
    r_nodes = np.concatenate([r[0][:-1] for r in routes])
    r_cum = np.concatenate([r[1][:-1] for r in routes])
    hop_km = r_km[pair_of].reshape(v, n_steps)
    hop_start = (np.cumsum(hop_km, axis=1) - hop_km).ravel()
    return _HopRoutes(r_len, r_off, r_nodes, r_cum, pair_of.ravel(), hop_km, hop_start)


FIX_BLOCK = 1_000_000  # fixes and route nodes per block of vehicles (a deadline check between blocks)


def _blocks(size: NDArray[np.int64], limit: int) -> list[tuple[int, int]]:
    """Consecutive ranges [start, end) of items whose sizes add up to at most ``limit`` (at least one item each)."""
    cum = np.cumsum(size)
    out, start = [], 0
    while start < len(size):
        base = int(cum[start - 1]) if start else 0
        end = max(int(np.searchsorted(cum, base + limit, side="right")), start + 1)
        out.append((start, end))
        start = end
    return out


class _Walks(NamedTuple):
    """Every vehicle's station walk, each (vehicles, steps + 1): the station at each step, the order of the move that
    arrived there (0 at the start) and the destination the vehicle was heading to."""

    station: NDArray[np.int64]
    order: NDArray[np.int64]
    dest: NDArray[np.int64]


def _trip_starts(v: int, rng: np.random.Generator) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each vehicle's trip speed (km/h, by the hour) and start time (UTC seconds on day 0, the hour from a two-peak
    daily profile); returns (speed, start_s)."""
    peak = rng.random(v) < 0.7
    hour = np.where(peak, np.where(rng.random(v) < 0.5, rng.normal(8.0, 1.5, v),
                                   rng.normal(17.5, 1.5, v)), rng.uniform(0, 24, v)) % 24
    speed = _hour_speed_kmh(hour, rng)
    return speed, START_UTC_S + hour * 3600.0


def _walk_stations(g: StationGraph, n_steps: int, speed: NDArray[np.float64], memory: str, dependence: float,
                   dest_weight: float, rng_move: np.random.Generator, rng_dest: np.random.Generator) -> _Walks:
    """The vehicles' hops between neighbouring stations (the model of ``generate_trajectories``), one vectorised
    step for all vehicles at a time (``_Walks``)."""
    k, v = g.k, len(speed)
    centre_d = np.hypot(*(g.xy_km - g.xy_km.mean(axis=0)).T)
    downtown = centre_d <= np.median(centre_d)
    walk = np.empty((v, n_steps + 1), dtype=np.int64)
    order = np.zeros((v, n_steps + 1), dtype=np.int64)  # order of the move that arrived at walk[:, s]
    dest = np.empty((v, n_steps + 1), dtype=np.int64)
    walk[:, 0] = rng_move.integers(0, k, v)
    cur_dest = (walk[:, 0] + rng_dest.integers(1, k, v)) % k
    nb = g.neighbours
    valid_nb = nb >= 0
    nb_safe = np.where(valid_nb, nb, 0)
    for s in range(n_steps):  # one vectorised step for all vehicles
        cur = walk[:, s]
        reached = cur == cur_dest
        cur_dest = np.where(reached, (cur + rng_dest.integers(1, k, v)) % k, cur_dest)
        dest[:, s] = cur_dest
        m = planted_order(memory, speed, downtown[cur]) if dependence > 0 else np.ones(v, dtype=np.int64)
        back = s - (m - 1)  # X_{t−M} sits at walk[:, s − (M − 1)]
        has_heading = (m >= 2) & (back >= 0)
        prev = walk[np.arange(v), np.clip(back, 0, None)]
        heading = g.xy_km[cur] - g.xy_km[prev]
        cand = nb_safe[cur]  # (v, D)
        hop = g.xy_km[cand] - g.xy_km[cur][:, None, :]
        hn = np.linalg.norm(heading, axis=1)[:, None]
        cn = np.linalg.norm(hop, axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = np.where((hn > 0) & (cn > 0), np.einsum("vdk,vk->vd", hop, heading) / (hn * cn), 0.0)
            gain = (g.road_km[cur, cur_dest][:, None] - g.road_km[cand, cur_dest[:, None]]) / \
                np.maximum(g.road_km[cur[:, None], cand], 1e-9)
        logit = dependence * cos * has_heading[:, None] + dest_weight * np.clip(gain, -1.0, 1.0)
        logit = np.where(valid_nb[cur], logit, -np.inf)
        choice = np.argmax(logit + rng_move.gumbel(size=logit.shape), axis=1)  # Gumbel-max sampling
        walk[:, s + 1] = cand[np.arange(v), choice]
        order[:, s + 1] = np.where(has_heading, m, 1)
    dest[:, n_steps] = cur_dest
    return _Walks(walk, order, dest)


def _sample_fixes(network: RoadNetwork, g: StationGraph, walks: _Walks, hops: _HopRoutes,
                  speed: NDArray[np.float64], start_s: NDArray[np.float64], interval_s: float,
                  deadline: float | None) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64],
                                                   NDArray[np.float64], NDArray[np.float64], NDArray[np.int64],
                                                   NDArray[np.int64]]:
    """GPS fixes every ``interval_s`` seconds along each vehicle's arc, in blocks of vehicles (same values as one
    pass); returns per fix its vehicle, road node, UTC time, lat, lon, oracle order and destination node."""
    v, n_steps = hops.hop_km.shape
    walk, order, dest = walks
    step_km = speed * interval_s / 3600.0
    total = hops.hop_km.sum(axis=1)
    n_fix = np.floor(total / step_km).astype(np.int64) + 1
    big = float(total.max()) + 10.0
    route_n = hops.length[hops.pair_of].reshape(v, n_steps).sum(axis=1)
    fix_off = np.concatenate([[0], np.cumsum(n_fix)])
    n_all = int(fix_off[-1])
    out_traj, out_node, out_oracle, out_dest = (np.empty(n_all, dtype=np.int64) for _ in range(4))
    out_time, out_lat, out_lon = (np.empty(n_all) for _ in range(3))
    for v0, v1 in _blocks(n_fix + route_n, FIX_BLOCK):
        check_deadline(deadline, f"sampling the GPS fixes ({v0:,} of {v:,} vehicles done)")
        node_seq, arc, veh, hop_idx = hops.vehicles(v0, v1)
        f_veh = np.repeat(np.arange(v0, v1), n_fix[v0:v1])
        f_j = np.arange(f_veh.size) - np.repeat(np.cumsum(n_fix[v0:v1]) - n_fix[v0:v1], n_fix[v0:v1])
        f_arc = f_j * step_km[f_veh]
        pos = np.searchsorted(veh * big + arc, f_veh * big + f_arc, side="right") - 1
        f_node = node_seq[pos]
        f_hop = hop_idx[pos]
        f_cell = g.cell[f_node]
        arrived = f_cell == walk[f_veh, f_hop + 1]
        f_step = np.where(arrived, f_hop + 1, f_hop)  # index into the walk of the station the fix is in
        oracle = order[f_veh, f_step]
        at = slice(fix_off[v0], fix_off[v1])
        out_traj[at], out_node[at], out_time[at] = f_veh, f_node, start_s[f_veh] + f_j * interval_s
        out_lat[at], out_lon[at] = network.lat[f_node], network.lon[f_node]
        out_oracle[at] = np.where(f_step == 0, -1, oracle)
        out_dest[at] = g.station_node[dest[f_veh, f_step]]
    return out_traj, out_node, out_time, out_lat, out_lon, out_oracle, out_dest


def generate_trajectories(network: RoadNetwork, station_node: NDArray[np.int64], *, n_vehicles: int = 400,
                          n_steps: int = 60, interval_s: float = 5.0, dependence: float = 3.0,
                          dest_weight: float = 1.0, memory: str = "mixed", seed: int = 0,
                          graph: StationGraph | None = None, deadline: float | None = None) -> Trajectories:
    """Seeded synthetic vehicle traces between stations of a road network.

    Model (one vehicle = one trajectory):

    * Start: a random station at a random time on day 0; the hour follows a two-peak daily profile. The trip speed
      (km/h) depends on the hour (see ``_hour_speed_kmh``).
    * Moves: the vehicle hops ``n_steps`` times from its station X_{t−1} to a neighbouring station X_t, chosen
      with probability ∝ exp(``dependence``·cos θ + ``dest_weight``·g). θ is the angle between the hop and the
      heading X_{t−M} → X_{t−1}, where M is the order of the walk (``planted_order``; M = 1 means no heading);
      g ∈ [−1, 1] is the hop's progress toward the destination (km of road distance gained per km hopped). On
      reaching its destination the vehicle draws a new one. So with ``dependence`` > 0 the location X_t depends
      on exactly M past locations (plus the hidden destination when ``dest_weight`` > 0): the Markov blanket the
      generator *used* has size M, recorded as ``oracle_order``.
    * Roads and sampling: each hop follows the shortest road path inside the two stations' cells; the vehicle
      drives at its speed and reports a GPS fix every ``interval_s`` seconds: the last road node it passed.

    Args:
        network: the road network.
        station_node: road nodes of the stations (the problem's ``x_node``).
        n_vehicles: number of trajectories (≥ 1).
        n_steps: station hops per vehicle (≥ 2).
        interval_s: seconds between GPS fixes (> 0). Long intervals skip stations, which blurs the dependence.
        dependence: strength of the momentum term (≥ 0); 0 makes every walk first order.
        dest_weight: strength of destination seeking (≥ 0); 0 gives pure momentum walks.
        memory: ``mixed`` (order set by speed and region) or a fixed order ``1``, ``2``, ``3``.
        seed: seeds every random step.
        graph: a precomputed ``station_graph`` (saves the cell computation).
        deadline: a ``time.perf_counter()`` value; past it the generator stops with ``OutOfTime``.

    Raises:
        ProblemError: a setting out of range, or a station with no neighbour.
        OutOfTime: ``deadline`` passed.
    """
    if memory not in MEMORY_RULES:
        raise ProblemError(f"`memory` = {memory!r} is not one of {', '.join(MEMORY_RULES)}.")
    if n_vehicles < 1 or n_steps < 2 or not interval_s > 0 or dependence < 0 or dest_weight < 0:
        raise ProblemError("Need n_vehicles ≥ 1, n_steps ≥ 2, interval_s > 0, dependence ≥ 0 and dest_weight ≥ 0.")
    g = graph or station_graph(network, station_node)
    if (g.neighbours[:, 0] < 0).any():
        raise ProblemError("A station has no neighbouring cell; choose other stations.")
    rng_start, rng_move, rng_dest = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    speed, start_s = _trip_starts(n_vehicles, rng_start)
    walks = _walk_stations(g, n_steps, speed, memory, dependence, dest_weight, rng_move, rng_dest)
    hops = _hop_routes(network, g, walks.station, deadline)
    traj, node, time_s, lat, lon, oracle, dest_node = _sample_fixes(network, g, walks, hops, speed, start_s,
                                                                    interval_s, deadline)
    settings = {"n_vehicles": n_vehicles, "n_steps": n_steps, "interval_s": interval_s, "dependence": dependence,
                "dest_weight": dest_weight, "memory": memory, "seed": seed}
    return Trajectories(traj=traj, ids=np.array([f"v{i}" for i in range(n_vehicles)]), time_s=time_s, lat=lat,
                        lon=lon, node=node, oracle_order=oracle, dest_node=dest_node, source="synthetic",
                        settings=settings)


# ---------------------------------------------------------------- user CSVs


def read_trajectories(source: TrajectorySource, network: RoadNetwork, max_snap_km: float = 0.5) -> Trajectories:
    """Read a trajectory CSV (trajectory id, timestamp, lat, lon) and snap every fix to the road network.

    Column names are matched without regard to case (``trajectory_id``/``traj_id``/``trip_id``/``id``,
    ``timestamp``/``time``/``datetime``, ``lat``/``latitude``, ``lon``/``lng``/``longitude``). Timestamps are
    ISO 8601 text (a zone suffix is honoured; naive times are taken as UTC) or Unix seconds. Rows are sorted by
    trajectory and time. Nothing is written anywhere.

    Raises:
        ProblemError: unreadable file, missing columns, unparsable times or coordinates, points farther than
            ``max_snap_km`` from the network, or a trajectory with fewer than 2 fixes.
    """
    raw = read_table(source, "Trajectory", "trajectory_id, timestamp, lat, lon", dtype=str)
    cols = find_columns(raw, _ALIASES, "Trajectories")
    if len(raw) == 0:
        raise ProblemError("The trajectory file has no rows; give at least one trajectory of 2 or more fixes.")
    ids = raw[cols["traj"]].astype(str).str.strip()
    if (ids == "").any() or raw[cols["traj"]].isna().any():
        row = int(np.flatnonzero((ids == "").to_numpy() | raw[cols["traj"]].isna().to_numpy())[0]) + 2
        raise ProblemError(f"Column `{cols['traj']}` has an empty trajectory id, the first on CSV line {row}.")
    coords = {}
    for key in ("lat", "lon"):
        values = pd.to_numeric(raw[cols[key]], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        bad = ~np.isfinite(values)
        if bad.any():
            msg = (f"Column `{cols[key]}` has {int(bad.sum())} missing or non-numeric value(s), the first on CSV "
                   f"line {int(np.flatnonzero(bad)[0]) + 2}.")
            raise ProblemError(msg)
        coords[key] = values
    if not ((np.abs(coords["lat"]) <= 90).all() and (np.abs(coords["lon"]) <= 180).all()):
        raise ProblemError("Latitudes must lie in [-90, 90] and longitudes in [-180, 180] (degrees).")
    time_s = _parse_times(raw[cols["time"]], str(cols["time"]))
    order = np.lexsort((time_s, ids.to_numpy()))
    ids_sorted = ids.to_numpy()[order]
    uniq, traj, counts = np.unique(ids_sorted, return_inverse=True, return_counts=True)
    if (counts < 2).any():
        short = ", ".join(repr(str(u)) for u in uniq[counts < 2][:5])
        msg = (f"{int((counts < 2).sum())} trajectory(ies) have a single fix ({short}); C-mDP needs at least 2 "
               "fixes per trajectory (a location and its context). Drop them or merge them.")
        raise ProblemError(msg)
    lat, lon = coords["lat"][order], coords["lon"][order]
    node = snap_to_nodes(lat, lon, network.lat, network.lon, max_snap_km)
    n = len(lat)
    return Trajectories(traj=traj.astype(np.int64), ids=uniq.astype(str), time_s=time_s[order], lat=lat, lon=lon,
                        node=node, oracle_order=np.full(n, -1, dtype=np.int64), dest_node=np.full(n, -1, np.int64),
                        source="csv")


def _parse_times(col: pd.Series, name: str) -> NDArray[np.float64]:
    """UTC seconds since the epoch from ISO 8601 strings (a zone suffix is honoured, naive = UTC) or Unix seconds."""
    text = col.astype(str).str.strip()
    numeric = pd.to_numeric(text, errors="coerce")
    out: NDArray[np.float64] = numeric.to_numpy(dtype=float, na_value=np.nan).copy()
    rest = numeric.isna().to_numpy()
    if rest.any():
        try:
            parsed = pd.to_datetime(text[rest], utc=True, errors="coerce", format="ISO8601")
        except (ValueError, TypeError):
            parsed = pd.Series(pd.NaT, index=text[rest].index)
        out[rest] = (parsed - pd.Timestamp("1970-01-01", tz="UTC")).dt.total_seconds().to_numpy(dtype=float,
                                                                                                 na_value=np.nan)
    bad = ~np.isfinite(out) | col.isna().to_numpy()
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        msg = (f"Column `{name}` has {int(bad.sum())} unparsable timestamp(s), the first on CSV line {first + 2} "
               f"({col.iloc[first]!r}). Use ISO 8601 (2024-01-01T08:00:00Z) or Unix seconds.")
        raise ProblemError(msg)
    return out


# ---------------------------------------------------------------- time slots


@dataclass(frozen=True, eq=False)
class Slots:
    """Trajectories as station sequences: one row per slot (a run of fixes in one station, or
    a fixed time slot: ``to_slots``).

    Attributes:
        traj: trajectory of each slot; pos: its position in the trajectory (0 = first slot).
        station: the slot's station X_t (0..K−1); fix: index of its first fix in the Trajectories.
        time_s: UTC seconds of the first fix; hour: its hour of day (0..23, UTC).
        speed_kmh: mean speed over the last Γ hops (straight-line km between fixes / hours).
        lags: (n, Γ) stations X_{t−1..t−Γ}, −1 where the trajectory has not started yet.
        next_station: X_{t+1}, −1 for the last slot of a trajectory.
        oracle_order: the generator's order for the move into this slot (−1 unknown).
        max_lag: Γ.
    """

    traj: NDArray[np.int64]
    pos: NDArray[np.int64]
    station: NDArray[np.int64]
    fix: NDArray[np.int64]
    time_s: NDArray[np.float64]
    hour: NDArray[np.int64]
    speed_kmh: NDArray[np.float64]
    lags: NDArray[np.int64]
    next_station: NDArray[np.int64]
    oracle_order: NDArray[np.int64]
    max_lag: int

    @property
    def complete(self) -> NDArray[np.bool_]:
        """Slots with all Γ lags and a next location: the ones the statistics use."""
        return (self.lags[:, -1] >= 0) & (self.next_station >= 0) if self.max_lag else self.next_station >= 0


def to_slots(tr: Trajectories, cell: NDArray[np.int64], max_lag: int, deadline: float | None = None,
             slot_s: float = 0.0) -> Slots:
    """Map fixes to stations (``cell`` of their road node) and cut them into slots; add lags, next station, speed.

    ``slot_s`` 0 (default): one slot per station visit (runs of fixes in one station merged), so X_{t+1} is always
    the next station. ``slot_s`` > 0: fixed time slots of ``slot_s`` seconds from each trajectory's first fix (the
    first fix in each slot gives its station), runs not merged, so X_{t+1} may be X_t (the vehicle has not left the
    station's cell); the paper's X_t is "the location in time slot t", length not given.
    Past ``deadline`` (a ``time.perf_counter()`` value, checked per block of fixes) ``OutOfTime`` is raised.
    """
    check_deadline(deadline, "grouping the GPS fixes into station slots")
    st = cell[tr.node]
    new = np.ones(tr.n_fixes, dtype=bool)
    if slot_s > 0:
        start_fix = np.ones(tr.n_fixes, dtype=bool)
        start_fix[1:] = tr.traj[1:] != tr.traj[:-1]
        t0 = tr.time_s[np.maximum.accumulate(np.where(start_fix, np.arange(tr.n_fixes), 0))]
        slot = np.floor((tr.time_s - t0) / slot_s + 1e-9).astype(np.int64)
        new[1:] = (slot[1:] != slot[:-1]) | start_fix[1:]
    else:
        new[1:] = (st[1:] != st[:-1]) | (tr.traj[1:] != tr.traj[:-1])
    fix = np.flatnonzero(new)
    check_deadline(deadline, "grouping the GPS fixes into station slots")
    traj, station, time_s = tr.traj[fix], st[fix], tr.time_s[fix]
    n = len(fix)
    first = np.ones(n, dtype=bool)
    first[1:] = traj[1:] != traj[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    pos = np.arange(n) - start
    lags = np.full((n, max_lag), -1, dtype=np.int64)
    for tau in range(1, max_lag + 1):  # one vectorised shift per lag
        ok = pos >= tau
        lags[ok, tau - 1] = station[np.flatnonzero(ok) - tau]
    last = np.ones(n, dtype=bool)
    last[:-1] = traj[1:] != traj[:-1]
    next_station = np.full(n, -1, dtype=np.int64)
    next_station[~last] = station[1:][~last[:-1]]
    # cumulative straight-line km along the fixes of each trajectory
    step = np.zeros(tr.n_fixes)
    for b0 in range(1, tr.n_fixes, FIX_BLOCK):  # blocks of fixes: the same values as one pass
        check_deadline(deadline, f"measuring the slots' speeds ({b0 - 1:,} of {tr.n_fixes:,} GPS fixes done)")
        b1 = min(b0 + FIX_BLOCK, tr.n_fixes)
        same = tr.traj[b0:b1] == tr.traj[b0 - 1:b1 - 1]
        step[b0:b1] = np.where(same, haversine_km(tr.lat[b0 - 1:b1 - 1], tr.lon[b0 - 1:b1 - 1], tr.lat[b0:b1],
                                                  tr.lon[b0:b1]), 0.0)
    cum_km = np.cumsum(step)[fix]
    back = np.flatnonzero(np.ones(n)) - np.minimum(pos, max(max_lag, 1))
    dt_h = (time_s - time_s[back]) / 3600.0
    with np.errstate(invalid="ignore", divide="ignore"):
        speed = np.where(dt_h > 0, (cum_km - cum_km[back]) / dt_h, 0.0)
    hour = (np.floor(time_s / 3600.0) % 24).astype(np.int64)
    return Slots(traj=traj, pos=pos.astype(np.int64), station=station.astype(np.int64), fix=fix.astype(np.int64),
                 time_s=time_s, hour=hour, speed_kmh=speed, lags=lags, next_station=next_station,
                 oracle_order=tr.oracle_order[fix], max_lag=max_lag)
