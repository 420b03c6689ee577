"""DISTA-LP users: true records, neighbourhoods N_m ⊂ X, candidate outputs Y_m ⊂ Y and local blocks (dx, dy, cy)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import ParameterError
from ..problem import Problem

BYTES_PER_NUMBER = 8  # one float64 (or one index) on the wire, as in the paper's Table XIII


@dataclass(frozen=True)
class Blocks:
    """A user's local LP coefficient blocks in its own (unpermuted) order: row 0 is the true record.

    Attributes:
        dx: mDP distances within the neighbourhood, km, shape (n, n).
        dy: mDP distances from the neighbourhood to the candidate outputs, km, shape (n, m).
        cy: prior-weighted cost, km, shape (n, m): π_i / mean(π over N) · c(x_i, y_k) / 1000. With a uniform
            prior it is the plain cost in km, so the noise scale b (km) means the same on every block.
    """

    dx: NDArray[np.float64]
    dy: NDArray[np.float64]
    cy: NDArray[np.float64]

    def as_dict(self) -> dict[str, NDArray[np.float64]]:
        """The three blocks (distances among records, to outputs, costs) by name."""
        return {"dx": self.dx, "dy": self.dy, "cy": self.cy}


@dataclass(frozen=True)
class User:
    """One DISTA-LP user.

    Attributes:
        record: index in X of the user's true record x_m.
        hood: N_m as indices into X, nearest first (``hood[0] == record``), shape (n,).
        cand: Y_m as indices into the problem's Y (columns of ``Problem.c``), in increasing index order, shape
            (m,). The set is the m outputs nearest x_m; its order is public (the index in Y), so it carries no
            information beyond the set (listing them nearest first would tell the server, and a tie in the LP,
            which candidate is nearest the true record).
        blocks: the true local blocks (never leave the user).
    """

    record: int
    hood: NDArray[np.int64]
    cand: NDArray[np.int64]
    blocks: Blocks


def neighbourhood(problem: Problem, x: int, n: int) -> NDArray[np.int64]:
    """The ``n`` secrets nearest to secret ``x`` in the mDP metric, ``x`` first (the paper's "20 nearest")."""
    order = np.argsort(problem.d[x], kind="stable")
    order = np.concatenate([[x], order[order != x]])
    return order[:n].astype(np.int64)


def candidates(problem: Problem, x: int, m: int) -> NDArray[np.int64]:
    """The ``m`` outputs of Y nearest to secret ``x`` (indices into Y, sorted by index); all of Y when ``m`` is 0.

    >>> from mdpviz.problem import build_problem
    >>> c = candidates(build_problem("kotka", 50, n_outputs=20, seed=0), 7, 5)
    >>> bool(np.all(np.diff(c) > 0)), len(c)
    (True, 5)
    """
    order = np.argsort(problem.d[x, problem.y_index], kind="stable")  # one row, not the whole K×|Y| d_xy
    return np.sort(order if m == 0 else order[:m]).astype(np.int64)


def local_blocks(problem: Problem, hood: NDArray[np.int64], cand: NDArray[np.int64]) -> Blocks:
    """The three coefficient blocks of a user with neighbourhood ``hood`` and candidates ``cand`` (km)."""
    pi = problem.p[hood]
    weight = pi / pi.mean() if pi.mean() > 0 else np.ones_like(pi)
    return Blocks(dx=problem.d[np.ix_(hood, hood)].copy(), dy=problem.d[np.ix_(hood, problem.y_index[cand])],
                  cy=weight[:, None] * problem.c[np.ix_(hood, cand)] / 1000.0)


def canonical(user: User) -> User:
    """The same user with its candidates (and the columns of dy, cy) in increasing index order, the public order.

    A device lists its candidates this way before anything leaves it, so no upload, and no tie the server's LP
    breaks by column order, can depend on how near each candidate is to the true record.
    """
    order = np.argsort(user.cand, kind="stable")
    b = user.blocks
    return User(user.record, user.hood, user.cand[order], Blocks(b.dx, b.dy[:, order], b.cy[:, order]))


def make_user(problem: Problem, record: int, n: int, m: int) -> User:
    """A user whose true record is secret ``record``: its N_m (``n`` nearest), Y_m (``m`` nearest) and blocks."""
    hood = neighbourhood(problem, record, n)
    cand = candidates(problem, record, m)
    return User(record=int(record), hood=hood, cand=cand, blocks=local_blocks(problem, hood, cand))


def check_sizes(problem: Problem, n_users: int, hood: int, n_cand: int) -> None:
    """Raise ParameterError when the users, neighbourhoods or candidate sets do not fit the problem."""
    if n_users > problem.k:
        raise ParameterError(f"Parameter `users` = {n_users} exceeds K = {problem.k} secrets; lower it.")
    if hood > problem.k:
        raise ParameterError(f"Parameter `hood` = {hood} exceeds K = {problem.k} secrets; lower it or raise K.")
    if n_cand > problem.m:
        raise ParameterError(f"Parameter `candidates` = {n_cand} exceeds |Y| = {problem.m}; lower it (0 = all of Y) "
                             "or raise |Y|.")


def draw_users(problem: Problem, n_users: int, hood: int, n_cand: int, rng: np.random.Generator) -> list[User]:
    """``n_users`` users with distinct true records drawn from the prior p (seeded), with their blocks."""
    check_sizes(problem, n_users, hood, n_cand)
    records = rng.choice(problem.k, size=n_users, replace=False, p=problem.p)
    return [make_user(problem, int(r), hood, n_cand) for r in records]


def raw_upload_bytes(n: int, m: int) -> int:
    """Bytes of the three raw blocks: (n² + 2·n·m) numbers (the paper's 9600 B at n = m = 20)."""
    return (n * n + 2 * n * m) * BYTES_PER_NUMBER
