"""Privacy witnesses: for a breach the ledger states, the two secrets, what tells them apart and by how much,
against the e^(ε·d) the claim allows; printed by ``python -m mdpviz reproduce --witness CLAIM``.

A witness re-solves one point of a ladder (through the solve cache) and reads the breach off the result:
- ``panda-phase1``: PAnDA's Phase I (each record joins the user's anchor set independently with probability
  w(d)). For two users' true secrets i, j the anchor set A* of the records likelier under i than under j is
  e^(ε̄·d) times likelier under i (Prop. 3, exact); where ε̄ > ε, Phase I alone spends more than the whole budget
  and no Phase II can meet the claim's exponent (ε − ε̄)·d (V_pair).
- ``cone``: the release matrix Z itself: the pair of secrets and the output with the worst ratio Z[i,y]/Z[j,y].
- ``dista-end-to-end``: DISTA-LP's whole release. Each user reports from the candidate outputs nearest their true
  record, so an output in one user's candidates and not in the other's has probability > 0 under one secret and 0
  under the other: an infinite ratio.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import product
from typing import Any

import numpy as np

from .. import metrics
from ..contract import Result
from ..dista.diagnostics import dista_diagnostics
from ..errors import MdpvizError
from ..panda.budget import phase1_cost_direct, phase1_cost_last_factor_direct
from ..panda.diagnostics import panda_diagnostics
from ..panda.selection import Selection
from ..solve import solve
from ..sweep import Point, params_of, problem_of
from .ladders import points


def witness_point(spec: Mapping[str, Any], size: str = "full") -> Point:
    """The ladder point a witness re-solves: ``spec`` names ``ladder``, ``rung`` and ``seed`` (first ε)."""
    for p in points(spec["ladder"], size):
        if p.tags.get("label") == spec["rung"] and p.seed == spec.get("seed", 0):
            return p
    raise MdpvizError(f"Ladder `{spec['ladder']}` has no rung `{spec['rung']}` with seed {spec.get('seed', 0)}.")


def _where(pb: Any, i: int) -> str:
    return f"record {i} ({pb.x_lat[i]:.5f}, {pb.x_lon[i]:.5f})"


def _panda_phase1(pb: Any, result: Result, name: str, eps: float) -> list[str]:
    prm, dg = result.params, panda_diagnostics(result)
    sel = Selection(dg["variant"], prm["alpha"], prm["lam"], dg["gamma_km"], dg["floor"], dg["floor_value"])
    users = np.unique(np.asarray(dg["users"]["secret"], dtype=np.int64))
    w = sel.weights(pb.d[users])  # (users, K)
    a, b = np.nonzero(~np.eye(len(users), dtype=bool))
    d = pb.d[users[a], users[b]]
    # ln Pr[A* | a] / Pr[A* | b] for the worst anchor set of "a over b": A* = the records with w_a > w_b
    log_in = np.log(w[a]) - np.log(w[b])
    log_out = np.log1p(-w[a]) - np.log1p(-w[b])
    ratio_all = np.maximum(log_in, log_out).sum(axis=1)
    excess = np.where(d > 0, ratio_all - eps * d, -np.inf)
    n = int(np.argmax(excess))
    i, j = int(users[a[n]]), int(users[b[n]])
    star, ratio = w[a[n]] > w[b[n]], float(ratio_all[n])
    if not excess[n] > 0:
        return [f"no pair of this run's {len(users)} users has ε̄ > ε: Phase I stays within the budget here (largest "
                f"ε̄·d − ε·d = {float(excess[n]):.3f} nats)"]
    true = float(phase1_cost_direct(w[a[n]], w[b[n]]))  # Prop. 3's ε̄·d (both directions): at least ``ratio``
    # (ε, δ)-PmDP asks that Phase I's loss exceed ε·d with probability at most δ: that probability, exactly, over
    # the anchor-set patterns of the records whose selection probabilities differ (the others cancel)
    differ = np.flatnonzero(~np.isclose(w[a[n]], w[b[n]], rtol=1e-12, atol=0.0))
    tail = ""
    if len(differ) <= 16:
        wi, wj = w[a[n]][differ], w[b[n]][differ]
        p_over = 0.0
        for pattern in product((False, True), repeat=len(differ)):
            chosen = np.array(pattern)
            loss = float(np.sum(np.where(chosen, np.log(wi) - np.log(wj), np.log1p(-wi) - np.log1p(-wj))))
            if loss > eps * d[n] + 1e-12:
                p_over += float(np.prod(np.where(chosen, wi, 1.0 - wi)))
        tail = (f"; the probability that Phase I alone leaks more than ε·d for the first user is {p_over:.3g} "
                f"(exact, over the {len(differ)} records whose selection probabilities differ), against the "
                f"claim's δ = {prm['delta']:g}")
    v = dg["violations"]["V_pair"]
    lines = [f"users' true secrets: {_where(pb, i)} and {_where(pb, j)}, d = {pb.d[i, j]:.3f} km",
             f"Phase I: the anchor set A* = the {int(star.sum())} records likelier for the first user than for the "
             f"second is e^{ratio:.3f} = {math.exp(min(ratio, 700)):.4g} times likelier under the first secret "
             "(product over every record of w_i/w_j if in A*, else (1 − w_i)/(1 − w_j); Prop. 3's ε̄·d, exact)",
             f"the whole budget allows e^(ε·d) = e^{eps * pb.d[i, j]:.3f} = "
             f"{math.exp(eps * pb.d[i, j]):.4g}: Phase I alone exceeds it by a factor "
             f"{math.exp(min(ratio - eps * pb.d[i, j], 700)):.4g}, so the claim's Phase II exponent "
             "(ε − ε̄)·d is negative and no anchor rows can meet it" + tail,
             f"Prop. 3's ε̄·d for the pair (both directions) is {true:.3f}; in this run {int((excess > 0).sum()):,} "
             f"of {len(a):,} ordered user pairs have ε̄ > ε; V_pair (the "
             f"claim's own check) breaks {v['violated']:,} of {v['checked']:,}"]
    if prm.get("eps_bar") == "authors-code":
        charged = phase1_cost_last_factor_direct(w[a[n]], w[b[n]])
        lines.append(f"the authors' ε̄ charged this pair only e^{charged:.3f} (the last factor of each product)")
    return lines


def _dista_end_to_end(pb: Any, result: Result, name: str, eps: float) -> list[str]:
    dg = dista_diagnostics(result)
    rec = np.asarray(dg["users_record"], dtype=np.int64)
    cand = np.asarray(dg["users_cand"], dtype=np.int64)
    assert result.Z is not None  # witnesses are drawn for results with a mechanism only
    rows = result.Z[rec]  # each user's report distribution over Y (its own candidates)
    best: tuple[float, int, int, int] | None = None  # (d, m, n, y) of the closest pair with a one-sided output
    for m in range(len(rec)):
        for n in range(len(rec)):
            if m == n or rec[m] == rec[n]:
                continue
            only = np.flatnonzero((rows[m] > 0) & (rows[n] <= 0))
            if only.size:
                y = int(only[np.argmax(rows[m][only])])
                if best is None or pb.d[rec[m], rec[n]] < best[0]:  # the closest such pair
                    best = (float(pb.d[rec[m], rec[n]]), m, n, y)
    e2e = dg["end_to_end"]
    if best is None:
        return [f"no user pair of this run has an output one secret can report and the other cannot; end to end "
                f"{e2e['breached']:,} of {e2e['pairs']:,} user pairs breach ε (worst factor {e2e['worst_factor']:.4g})"]
    _, m, n, y = best
    i, j, p = int(rec[m]), int(rec[n]), float(rows[m][y])
    return [f"users' true secrets: {_where(pb, i)} and {_where(pb, j)}, d = {pb.d[i, j]:.3f} km",
            f"output y = {y} (record {int(pb.y_index[y])}) is among the first user's {len(set(cand[m]))} candidate "
            f"outputs and not the second's: Pr[y | first] = {p:.4g}, Pr[y | second] = 0",
            f"ratio ∞ against the e^(ε·d) = {math.exp(eps * pb.d[i, j]):.4g} the claim allows (the candidates "
            "are the outputs nearest each user's true record, so they depend on the secret)",
            f"end to end, {e2e['breached']:,} of {e2e['pairs']:,} ordered user pairs breach ε in this run"]


def _cone(pb: Any, result: Any, name: str, eps: float) -> list[str]:
    v = metrics.violations(pb, result.Z, eps, metric=result.check_metric, pairs_limit=1)
    if not v.violated_pairs or v.worst_pairs is None:
        return [f"no pair of secrets breaks ε-mDP in this release ({v.checked_pairs:,} ordered pairs checked)"]
    i, j = int(v.worst_pairs[0][0]), int(v.worst_pairs[1][0])
    zi, zj = (np.where(result.Z[x] > FLOOR, result.Z[x], 0.0) for x in (i, j))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.where(zi > 0, np.log(zi) - np.log(zj), -np.inf)
    y = int(np.argmax(log_ratio))
    d = float(metrics.check_distance(pb, result.check_metric)[i, j])
    ratio = "∞" if zj[y] <= 0 else f"{math.exp(min(float(log_ratio[y]), 700)):.4g}"
    return [f"secrets: {_where(pb, i)} and {_where(pb, j)}, d = {d:.3f} km",
            f"output y = {y} (record {int(pb.y_index[y])}): Pr[y | first] = {zi[y]:.4g}, Pr[y | second] = {zj[y]:.4g}, "
            f"ratio {ratio} against the e^(ε·d) = {math.exp(min(eps * d, 700)):.4g} ε-mDP allows",
            f"{v.violated_pairs:,} of {v.checked_pairs:,} ordered pairs of secrets break ε-mDP in this release"]


FLOOR = 1e-250  # entries at the solvers' floor (about 1e-300) are zeros for a witness: the ratio is then infinite


KINDS = {"panda-phase1": _panda_phase1, "dista-end-to-end": _dista_end_to_end, "cone": _cone}


def witness_lines(spec: Mapping[str, Any], size: str = "full") -> list[str]:
    """The witness of ``spec`` (``kind``, ``ladder``, ``rung``, ``seed``): what it re-solves, then the breach
    (``size`` 'tiny' re-solves the ladder's tiny form, for tests)."""
    kind = spec["kind"]
    if kind not in KINDS:
        raise MdpvizError(f"Unknown witness kind `{kind}`; known: {', '.join(KINDS)}.")
    point = witness_point(spec, size)
    pb = problem_of(point)
    mechanism = point.mechanism
    if not mechanism:
        raise MdpvizError(f"Rung `{spec['rung']}` of `{spec['ladder']}` runs a measuring task, not one mechanism: a "
                          "witness needs a rung that solves a mechanism.")
    params = {k: v for k, v in params_of(point).items() if not k.startswith("_")}
    result = solve(pb, mechanism, params, time_limit=point.time_limit)
    if result.Z is None:
        raise MdpvizError(f"The witness solve ended '{result.status}' without a mechanism: {result.message}")
    eps = float(point.params["eps"])  # the release's whole budget (DISTA-LP's LP runs at a part of it)
    head = [f"{spec['ladder']}, rung '{spec['rung']}', seed {point.seed}: {mechanism} at ε = {eps:g} km⁻¹ on "
            f"{pb.k:,} {pb.city} records"]
    return head + KINDS[kind](pb, result, mechanism, eps)
