"""C-mDP end to end: problem + trajectories → slots → blanket discovery and prediction → augmented LP → Result parts.

The stations are the problem's secrets X (road nodes); outputs are its Y; the next-location cost matrix is the
problem's travel cost ``Problem.c`` (Eq. 34's |path(ℓ, task) − path(y, task)| averaged over its task nodes).
Every loss reported here is in-sample: the average over the complete slots of the corpus of the expected
|path(x_{t+1}, task) − path(y, task)|, which is exactly the reduced LP's objective (Proposition 3) and the
true-model loss of every method, context-aware or not (spec §6.4).
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ..cities import RoadNetwork, load_city
from ..deadline import OutOfTime, check_deadline
from ..errors import ProblemError
from ..metrics import floor_m
from ..problem import Problem
from ..progress import Progress, no_progress
from . import classifier as clf_mod
from .augmented import (
    AugmentedSecrets,
    augmented_distance,
    build_secrets,
    context_keys,
    expected_cost,
    neighbour_pairs,
    prune_implied,
)
from .blanket import Discovery, Grouping, algorithm2, discover, slot_features
from .corpus import (
    Slots,
    StationGraph,
    Trajectories,
    generate_trajectories,
    station_graph,
    to_slots,
)
from .diagnostics import CmdpDiagnostics
from .solver import ViolationReport, check, solve_reduced_lp

# The largest K (stations = secrets of the problem) C-mDP accepts: the schema's ``Mechanism.max_k`` of every cmdp
# variant, so the dashboard's warning and this refusal name one number. Measured with ``python -m mdpviz solve --city
# rome --k K --all-outputs --region centre:3 --mechanism cmdp --eps 1`` at load ≈ 6–10: K = 24 in 46 s (33 s of LP);
# K = 40 gives ~770k LP rows and did not finish in 600 s.
MAX_STATIONS = 24
HOLDOUT_SEED_OFFSET = 1_000_003  # the held-out corpus's seed is the corpus seed plus this
CONTEXTS = ("predicted", "first-order", "oracle", "none")
CAVEAT = ("C-mDP protects (location, blanket context) pairs under the augmented metric of Eq. 13; context-free "
          "methods protect locations under the base metric. At the same ε they protect different targets, so "
          "compare losses as trade-offs, not as like for like. The location-only view marginalises C-mDP's rows "
          "over contexts; its violations are expected and are not a bug.")


@dataclass(frozen=True)
class DataSettings:
    """Everything that fixes the corpus and the blanket model (not ε, η or the metric weights)."""

    n_vehicles: int = 1000
    n_steps: int = 60
    interval_s: float = 5.0
    dependence: float = 3.0
    dest_weight: float = 1.0
    memory: str = "mixed"
    seed: int = 0
    max_lag: int = 3
    alpha: float = 0.05
    min_group: int = 200
    hour_bin_h: int = 6
    speed_bin_mph: float = 10.0
    region_grid: int = 2
    min_per_df: float = 2.0
    slot_s: float = 0.0


@dataclass(eq=False)
class CmdpData:
    """The corpus and the blanket model for one problem: shared by every C-mDP variant and baseline."""

    problem: Problem
    network: RoadNetwork
    graph: StationGraph
    trajectories: Trajectories
    slots: Slots
    features: NDArray[np.int64]
    discovery: Discovery
    classifier: clf_mod.BlanketClassifier | None
    settings: DataSettings
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def complete(self) -> NDArray[np.bool_]:
        """Slots with a full context (all Γ previous slots known)."""
        return self.slots.complete

    def sizes(self, context: str, *, predictor: str = "classifier", oracle: str = "generator",
              slots: Slots | None = None, features: NDArray[np.int64] | None = None) -> tuple[NDArray[np.int64], str]:
        """Blanket size of every complete slot for a context mode, and a note on how it was obtained.

        ``predicted``: Algorithm 2 with the classifier (``predictor="classifier"``) or the Algorithm 1 lookup
        table (``"lookup"``; also the fallback when no group had enough data to train on). ``first-order``: 1.
        ``oracle``: the generator's recorded order (``oracle="generator"``) or Algorithm 1's per-group result
        (``"ci-test"``, the paper's LP+TrueMB; also the fallback for user data, which has no generator).
        ``none``: 0 (no context: the plain mDP LP). ``slots``/``features``: other slots (a held-out corpus)
        judged by this corpus's blanket model; default: this corpus's own.
        """
        slots = self.slots if slots is None else slots
        features = self.features if features is None else features
        ok = slots.complete
        feat = features[ok]
        gamma = self.settings.max_lag
        if context == "none":
            return np.zeros(int(ok.sum()), dtype=np.int64), "no context"
        if context == "first-order":
            return np.ones(int(ok.sum()), dtype=np.int64), "fixed blanket {X_t−1}"
        if context == "oracle":
            rec = slots.oracle_order[ok]
            if oracle == "generator" and (rec > 0).all():
                return np.clip(rec, 1, gamma), "generator's recorded order (oracle)"
            note = "Algorithm 1 per group (CI-test oracle)"
            if oracle == "generator":
                note += ": no generator record for these trajectories"
            return self.discovery.lookup(feat), note
        if predictor == "classifier" and self.classifier is not None:
            return algorithm2(feat, gamma, self.classifier.predict_reject), "Algorithm 2 with the classifier"
        note = "Algorithm 1 lookup table" + (" (no group had enough data to train the classifier)"
                                             if predictor == "classifier" else "")
        return self.discovery.lookup(feat), note

    @functools.cached_property
    def holdout(self) -> tuple[Slots, NDArray[np.int64]]:
        """A held-out corpus: same generator settings, an independent seed (slots and their features).

        Raises:
            ProblemError: for user trajectories, which have no generator to draw a held-out corpus from.
        """
        return self.holdout_by(None)

    def holdout_by(self, deadline: float | None) -> tuple[Slots, NDArray[np.int64]]:
        """``holdout``, generated only if ``deadline`` (a ``time.perf_counter()`` value) does not pass first
        (``OutOfTime`` then, and nothing is kept); once generated it is kept like the property's.

        Raises:
            ProblemError: for user trajectories, which have no generator to draw a held-out corpus from.
            OutOfTime: ``deadline`` passed.
        """
        if "holdout" in self.__dict__:  # the cached property's value
            # (mypy) the cached property stored the declared tuple
            return self.__dict__["holdout"]  # type: ignore[no-any-return]
        if self.trajectories.source != "synthetic":
            raise ProblemError("A held-out corpus is only generated for synthetic trajectories.")
        s = self.settings
        tr = generate_trajectories(self.network, self.problem.x_node, n_vehicles=s.n_vehicles, n_steps=s.n_steps,
                                   interval_s=s.interval_s, dependence=s.dependence, dest_weight=s.dest_weight,
                                   memory=s.memory, seed=s.seed + HOLDOUT_SEED_OFFSET, graph=self.graph,
                                   deadline=deadline)
        slots = to_slots(tr, self.graph.cell, s.max_lag, deadline, s.slot_s)
        grouping = Grouping(s.hour_bin_h, s.speed_bin_mph, s.region_grid)
        check_deadline(deadline, "generating the held-out corpus")
        self.__dict__["holdout"] = out = (slots, slot_features(slots, self.graph.xy_km, grouping))
        return out


def _network(problem: Problem) -> RoadNetwork:
    if problem.city is None or (problem.x_node < 0).any():
        raise ProblemError("C-mDP needs a problem on a road network (build it with a city, not free points).")
    if problem.k > MAX_STATIONS:
        msg = (f"C-mDP takes at most K = {MAX_STATIONS} stations (the problem's secrets); this problem has K = "
               f"{problem.k}. Its LP has a row per pair of (location, context) secrets and output, so it grows like "
               f"K³: build the problem with k ≤ {MAX_STATIONS}, for example `--k {MAX_STATIONS} --all-outputs "
               "--region centre:3` on Rome (stations within a few km of each other, as the paper's η = 5 km "
               "neighbour rule expects).")
        raise ProblemError(msg)
    return load_city(problem.city)


def prepare(problem: Problem, settings: DataSettings = DataSettings(), trajectories: Trajectories | None = None,
            progress: Progress = no_progress, deadline: float | None = None) -> CmdpData:
    """Corpus (generated unless ``trajectories`` is given), slots, Algorithm 1 per group and the classifier.

    Generated corpora are memoised per (problem, settings), so C-mDP variants and sweeps over ε share one corpus.
    ``deadline`` (a ``time.perf_counter()`` value) stops the preparation with ``OutOfTime`` once it passes; an
    unfinished corpus is not memoised.

    Raises:
        ProblemError: no road network, too many stations, or trajectories with no complete slot.
        OutOfTime: ``deadline`` passed.
    """
    if trajectories is None:
        return _prepare_generated(problem, settings, deadline)
    return _prepare(problem, settings, trajectories, progress, deadline)


@functools.lru_cache(maxsize=8)
def _prepare_cached(fingerprint: str, settings: DataSettings, problem_ref: Any) -> CmdpData:
    return _prepare(problem_ref.problem, settings, None, no_progress, problem_ref.deadline)


class _Ref:
    """Carries a Problem (and a deadline) into the memo without making it part of the key (the fingerprint is)."""

    def __init__(self, problem: Problem, deadline: float | None = None) -> None:
        self.problem = problem
        self.deadline = deadline

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Ref)


def _prepare_generated(problem: Problem, settings: DataSettings, deadline: float | None = None) -> CmdpData:
    return _prepare_cached(problem.fingerprint, settings, _Ref(problem, deadline))


def _prepare(problem: Problem, settings: DataSettings, trajectories: Trajectories | None,
             progress: Progress, deadline: float | None = None) -> CmdpData:
    timings: dict[str, float] = {}
    network = _network(problem)
    t0 = time.perf_counter()
    graph = station_graph(network, problem.x_node)
    timings["stations_s"] = time.perf_counter() - t0
    check_deadline(deadline, "finding the stations' road cells")
    t0 = time.perf_counter()
    if trajectories is None:
        progress("generating trajectories", None)
        trajectories = generate_trajectories(
            network, problem.x_node, n_vehicles=settings.n_vehicles, n_steps=settings.n_steps,
            interval_s=settings.interval_s, dependence=settings.dependence, dest_weight=settings.dest_weight,
            memory=settings.memory, seed=settings.seed, graph=graph, deadline=deadline)
    timings["trajectories_s"] = time.perf_counter() - t0
    slots = to_slots(trajectories, graph.cell, settings.max_lag, deadline, settings.slot_s)
    if not slots.complete.any():
        msg = (f"No trajectory visits more than {settings.max_lag + 1} stations in a row, so no location has a full "
               f"context; give longer trajectories, more stations, or a smaller max_lag.")
        raise ProblemError(msg)
    grouping = Grouping(settings.hour_bin_h, settings.speed_bin_mph, settings.region_grid)
    features = slot_features(slots, graph.xy_km, grouping)
    progress("Markov blanket discovery", None)
    t0 = time.perf_counter()
    disc = discover(slots, features, graph.k, alpha=settings.alpha, min_group=settings.min_group,
                    min_per_df=settings.min_per_df)
    timings["discovery_s"] = time.perf_counter() - t0
    check_deadline(deadline, "discovering the Markov blankets")
    t0 = time.perf_counter()
    clf = clf_mod.train(disc.train_x, disc.train_y, (grouping.n_hours, grouping.n_speeds, grouping.n_regions),
                        settings.max_lag, seed=settings.seed)
    timings["classifier_s"] = time.perf_counter() - t0
    return CmdpData(problem, network, graph, trajectories, slots, features, disc, clf, settings, timings)


@dataclass(eq=False)
class CmdpSolution:
    """One solved C-mDP variant.

    Attributes:
        secrets: the augmented secret domain; d_aug: its Eq. 13 distances (km); near: the enforced pairs.
        Q: (S, M) rows q_(x,b),·, or None when the LP failed; Z: (K, M) location marginal Σ_b p(b|x) q_(x,b),·.
        loss_m: in-sample expected loss (m); facts: LP facts; enforced, location: the two violation views.
        floor_m: the no-privacy floor of this secret domain (m): every (station, context) secret reporting its
            cheapest output under the same model; loss − floor is what privacy costs.
    """

    secrets: AugmentedSecrets
    d_aug: NDArray[np.float64]
    near: NDArray[np.bool_]
    Q: NDArray[np.float64] | None
    Z: NDArray[np.float64] | None
    loss_m: float | None
    facts: dict[str, Any]
    enforced: ViolationReport | None
    location: ViolationReport | None
    sizes_note: str
    raw_sizes: NDArray[np.int64]
    domain: str = "prefix-free"
    floor_m: float | None = None


def solve_context(data: CmdpData, sizes: NDArray[np.int64], eps: float, *, eta: float = 5.0, decay: float = 0.5,
                  neighbours: str = "augmented", min_count: int = 5, max_secrets: int = 150,
                  domain: str = "prefix-free", method: str = "ipm",
                  time_limit: float | None = None, progress: Progress = no_progress,
                  note: str = "") -> CmdpSolution:
    """Build the augmented secrets for blanket sizes ``sizes`` (one per complete slot) and solve Eqs. 30–33.

    Args:
        eps: ε, km⁻¹. eta: neighbour threshold η, km. decay: γ of the weights w_τ = γ^τ.
        neighbours: ``augmented`` (Eq. 14) or ``base`` (Appendix B.1 rule).
        min_count, max_secrets, domain: the secret-domain rule (``augmented`` module docstring).
    """
    pb, sl = data.problem, data.slots
    ok = sl.complete
    t0 = time.perf_counter()
    sec = build_secrets(sl.station[ok], sl.lags[ok], sl.next_station[ok], sizes, pb.k, min_count=min_count,
                        max_secrets=max_secrets, domain=domain)
    d_aug = augmented_distance(sec, pb.d, decay)
    cost = expected_cost(sec, pb.c)
    near = neighbour_pairs(d_aug, pb.d[np.ix_(sec.station, sec.station)], eta, neighbours)
    keep = prune_implied(d_aug, near)
    build_s = time.perf_counter() - t0
    progress("C-mDP LP", None)
    Q, facts = solve_reduced_lp(sec.prior, cost, d_aug, near, keep, eps, method=method, time_limit=time_limit,
                                progress=progress)
    facts["build_s"] = build_s
    floor = float(np.sum(sec.prior * cost.min(axis=1)))
    if Q is None:
        return CmdpSolution(sec, d_aug, near, None, None, None, facts, None, None, note, sizes, domain, floor)
    weight = sec.context_given_station(pb.k)
    Z = np.zeros((pb.k, pb.m))
    np.add.at(Z, sec.station, weight[:, None] * Q)
    Z /= Z.sum(axis=1, keepdims=True)
    enforced = check(Q, d_aug, near, eps, "enforced: (x, b) secrets, augmented metric (Eq. 13)")
    near_x = (pb.d <= eta) & ~np.eye(pb.k, dtype=bool)
    location = check(Z, pb.d, near_x, eps, "location only: marginal over contexts, base metric")
    loss = float(np.sum(sec.prior[:, None] * cost * Q))
    return CmdpSolution(sec, d_aug, near, Q, Z, loss, facts, enforced, location, note, sizes, domain, floor)


def rows_for_slots(sec: AugmentedSecrets, station: NDArray[np.int64], lags: NDArray[np.int64],
                   size: NDArray[np.int64] | None, k: int) -> NDArray[np.int64]:
    """The secret (row of Q) each slot reports from.

    ``size`` None (the ``prefix-free`` domain): the leaf of the context trie on the slot's path (longest known
    context first). ``size`` given (the ``per-slot`` domain): the slot's (x, b) with that blanket size, shortened
    from the oldest lag until known. Either way, a slot with no known context at all uses the most frequent secret
    at its location.
    """
    keys = context_keys(sec.station, sec.lags, sec.size, k)
    order = np.argsort(keys)
    sorted_keys = keys[order]
    rows = np.full(len(station), -1, dtype=np.int64)
    gamma = lags.shape[1]
    cur = np.full(len(station), gamma, dtype=np.int64) if size is None else np.asarray(size, np.int64).copy()
    for _ in range(gamma + 1):  # one vectorised look-up per blanket length
        want = context_keys(station, lags, cur, k)
        at = np.minimum(np.searchsorted(sorted_keys, want), len(keys) - 1)
        hit = (sorted_keys[at] == want) & (rows < 0)
        rows[hit] = order[at[hit]]
        cur = np.maximum(cur - 1, 0)
    if (rows < 0).any():
        best = np.full(k, -1, dtype=np.int64)
        by_prior = np.argsort(sec.prior, kind="stable")  # later (more frequent) secrets overwrite earlier ones
        best[sec.station[by_prior]] = by_prior
        rows = np.where(rows < 0, best[station], rows)
    return rows


def holdout_loss(data: CmdpData, Q: NDArray[np.float64], sec: AugmentedSecrets | None, context: str = "none",
                 domain: str = "prefix-free", deadline: float | None = None, **size_options: str) -> float:
    """Expected next-location loss (m) on the held-out corpus, its true next locations, every task.

    The held-out corpus is generated at the first call (``OutOfTime`` if ``deadline`` passes meanwhile).

    ``sec`` None: Q is a context-free Z (K, M) indexed by location. Otherwise held-out slots report from
    ``rows_for_slots``: in the ``per-slot`` domain with blanket sizes from this corpus's model (``context``,
    ``size_options`` as in ``CmdpData.sizes``), in the ``prefix-free`` domain from the trie leaf on their path.
    """
    slots, feat = data.holdout_by(deadline)
    ok = slots.complete
    pb = data.problem
    if sec is None:
        rows = slots.station[ok]
    else:
        size = data.sizes(context, slots=slots, features=feat, **size_options)[0] if domain == "per-slot" else None
        rows = rows_for_slots(sec, slots.station[ok], slots.lags[ok], size, pb.k)
    # Σ_y Q[row, y] C[next, y], averaged over held-out slots
    return float(np.mean(np.einsum("ij,ij->i", Q[rows], pb.c[slots.next_station[ok]])))


def context_free_problem(data: CmdpData, cost: str = "context-averaged") -> Problem:
    """The context-free Problem on the same corpus, for the existing mechanisms (``lp``, ``em``...).

    X, Y and d are the problem's; the prior is the corpus's location frequency p_x. ``cost``:
    ``context-averaged`` (default): c̄_xy = Σ_ℓ p(ℓ | x) C[ℓ, y], the next-location cost averaged over contexts,
    so the context-free LP is the best context-invariant mechanism under the true model;
    ``no-motion``: C[x, y], the spec §3.4 reading of Appendix D (the next location is taken to be x).
    """
    if cost not in ("context-averaged", "no-motion"):
        raise ProblemError(f"`cost` = {cost!r} is not one of context-averaged, no-motion.")
    pb, sl = data.problem, data.slots
    ok = sl.complete
    sec = build_secrets(sl.station[ok], sl.lags[ok], sl.next_station[ok], np.zeros(int(ok.sum()), np.int64), pb.k)
    order = np.argsort(sec.station)
    p = sec.prior[order]
    c = expected_cost(sec, pb.c)[order] if cost == "context-averaged" else np.array(pb.c)
    settings = {**pb.settings, "cmdp_corpus": asdict(data.settings), "cmdp_baseline_cost": cost,
                "prior": "trajectories"}
    return replace(pb, p=p, c=c, settings=settings, timings={})


def true_loss_context_free(data: CmdpData, Z: NDArray[np.float64]) -> float:
    """In-sample expected loss (m) of a context-free mechanism Z (K, M) under the true next-location model."""
    cf = context_free_problem(data, "context-averaged")
    return float(cf.p @ np.einsum("ij,ij->i", cf.c, Z))


def blanket_histogram(sizes: NDArray[np.int64], max_lag: int) -> dict[str, int]:
    """Counts of complete slots per blanket size 0..Γ (JSON-friendly keys)."""
    counts = np.bincount(sizes, minlength=max_lag + 1)
    return {str(i): int(c) for i, c in enumerate(counts)}


def examples(data: CmdpData, sol: CmdpSolution, n: int = 12, seed: int = 0) -> list[dict[str, Any]]:
    """Example reports for a Trajectories page: polyline, current node, blanket nodes by lag, next node, task, row.

    Coordinates are degrees; ``row`` indexes ``Q`` (the secret the report is drawn from).
    """
    pb, sl, tr, net = data.problem, data.slots, data.trajectories, data.network
    idx_complete = np.flatnonzero(sl.complete)
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(idx_complete), size=min(n, len(idx_complete)), replace=False))
    tasks = pb.task_index if len(pb.task_index) else np.arange(pb.k)
    node = pb.x_node
    out = []
    gamma = data.settings.max_lag
    for j in pick:  # a dozen examples for display
        i = idx_complete[j]
        s = int(sol.secrets.slot_secret[j])
        size = int(sol.secrets.size[s])
        first = i - min(int(sl.pos[i]), gamma + 2)
        last_fix = sl.fix[i + 1] if i + 1 < len(sl.fix) and sl.traj[i + 1] == sl.traj[i] else sl.fix[i]
        fixes = np.arange(sl.fix[first], last_fix + 1)
        task = int(tasks[rng.integers(len(tasks))])
        lags = [{"lag": t + 1, "node": int(node[sl.lags[i, t]]), "lat": float(net.lat[node[sl.lags[i, t]]]),
                 "lon": float(net.lon[node[sl.lags[i, t]]]), "in_blanket": t < size} for t in range(gamma)]
        out.append({"trajectory": str(tr.ids[sl.traj[i]]), "time_utc_s": float(sl.time_s[i]),
                    "hour": int(sl.hour[i]), "speed_kmh": float(sl.speed_kmh[i]),
                    "polyline_lat": tr.lat[fixes].tolist(), "polyline_lon": tr.lon[fixes].tolist(),
                    "station": int(sl.station[i]), "lat": float(pb.x_lat[sl.station[i]]),
                    "lon": float(pb.x_lon[sl.station[i]]), "blanket_size": size, "context": lags,
                    "next_station": int(sl.next_station[i]), "next_lat": float(pb.x_lat[sl.next_station[i]]),
                    "next_lon": float(pb.x_lon[sl.next_station[i]]), "task": task,
                    "task_lat": float(pb.x_lat[task]), "task_lon": float(pb.x_lon[task]), "row": s,
                    "oracle_order": int(sl.oracle_order[i])})
    return out


def context_labels(sec: AugmentedSecrets) -> list[str]:
    """Each secret's blanket as text, newest lag first: ``"5>3"`` is x_{t−1} = station 5, x_{t−2} = station 3."""
    return [">".join(str(int(v)) for v in row[:n]) for row, n in zip(sec.lags, sec.size)]


def diagnostics(data: CmdpData, sol: CmdpSolution, context: str, holdout: bool = True,
                deadline: float | None = None, **size_options: str) -> CmdpDiagnostics:
    """JSON-friendly diagnostics of a solved variant (arrays where large), for the dashboard and the bench.

    ``size_options`` (``predictor``, ``oracle``) are those the blankets were obtained with; they also choose the
    held-out slots' blankets for ``heldout_loss_m`` (synthetic corpora only; ``holdout`` False skips it, as
    generating the held-out corpus costs as much as the corpus itself; so does a ``deadline`` that passes while it
    is generated: ``heldout_loss_m`` is then missing and ``heldout_skipped`` says why).
    """
    sec = sol.secrets
    disc = data.discovery
    diag: CmdpDiagnostics = {
        "context": context, "blankets": sol.sizes_note, "secret_domain": sol.domain,
        "rows": "Z[x, y] = Σ_b p(b|x) q_(x,b),y: the location marginal (population average over contexts); "
                "the mechanism itself is Q (one row per augmented secret, see secret_*)",
        "caveat": CAVEAT,
        "secret_station": sec.station, "secret_size": sec.size, "secret_prior": sec.prior,
        "secret_context": context_labels(sec),
        "Q": sol.Q, "n_secrets": sec.n, "loss_m": sol.loss_m, "floor_m": sol.floor_m,
        "privacy_cost_m": None if sol.loss_m is None or sol.floor_m is None else sol.loss_m - sol.floor_m,
        "floor_without_context_m": floor_m(context_free_problem(data, "context-averaged")),
        "blanket_hist_predicted": blanket_histogram(sol.raw_sizes, data.settings.max_lag),
        "blanket_hist": blanket_histogram(sec.slot_size, data.settings.max_lag),
        "violations_enforced": sol.enforced.as_dict() if sol.enforced else None,
        "violations_location": sol.location.as_dict() if sol.location else None,
        "groups": disc.groups.to_dict(orient="records"), "pooled_blanket": disc.pooled_blanket,
        "pooled_p": disc.pooled_p,
        "classifier": data.classifier.metrics if data.classifier is not None else None,
        "corpus": {"source": data.trajectories.source, "trajectories": data.trajectories.n_trajectories,
                   "fixes": data.trajectories.n_fixes, "slots": len(data.slots.station),
                   "complete_slots": int(data.complete.sum()), **asdict(data.settings)},
        "lp": {k: v for k, v in sol.facts.items() if k != "lp_size"},
    }
    if sol.Q is not None:
        diag["examples"] = examples(data, sol, seed=data.settings.seed)
        if data.trajectories.source == "synthetic" and holdout:
            try:
                diag["heldout_loss_m"] = holdout_loss(data, sol.Q, sol.secrets, context, sol.domain, deadline,
                                                      **size_options)
            except OutOfTime as e:
                diag["heldout_skipped"] = f"time limit while {e}"
    oracle = data.slots.oracle_order[data.complete]
    if (oracle > 0).all():
        diag["blanket_hist_oracle"] = blanket_histogram(np.clip(oracle, 1, data.settings.max_lag),
                                                        data.settings.max_lag)
        diag["blanket_agreement_with_oracle"] = float(np.mean(np.clip(oracle, 1, data.settings.max_lag)
                                                              == sol.raw_sizes))
    return diag


def groups_frame(data: CmdpData) -> pd.DataFrame:
    """The per-group Algorithm 1 table (hour group, speed bin, region, n, tested, blanket, p-values)."""
    return data.discovery.groups.copy()
