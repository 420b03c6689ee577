"""Augmented secrets s = (x, b) (location, Markov-blanket context), their prior, next-location model, the
augmented distance of Eq. 13 and the utility cost of Eq. 34.

Choices (spec §1.3, §10):

* decay weights w_τ = γ^τ (γ = 0: base metric only; γ = 1: all ones; default 0.5);
* blankets of different lengths are compared over the lags both have (τ ≤ min(|b|, |b'|)), the only rule safe for
  every completion of the contexts. Two secrets at the same location whose blankets agree on the shared lags are
  then at distance 0, so the LP gives them the same row;
* the secret domain (``domain``, a labelled choice; both are safe, the guarantee holds on whatever domain is
  chosen):

  - ``prefix-free`` (default): the contexts seen at a location form a trie (x, x_{t−1}, x_{t−2}, …); a node is split
    into its children (one more lag) when at least half of its slots' blankets ask for that lag and every child
    was seen ≥ ``min_count`` times. The leaves are the secrets, so no secret's context is a prefix of another's at
    the same location, and the min-overlap rule never ties a long context to a shorter one at distance 0. Slots
    whose blanket asked for fewer lags may get more (a finer secret), and vice versa;
  - ``per-slot``: each slot keeps its own blanket size, and a rare (x, b) (seen < ``min_count`` times) loses its
    oldest lag until frequent. Simple, but a short context then sits at distance 0 from every longer one that
    extends it, so the LP gives them one row and the extra lags buy nothing.

  In both, the count threshold doubles until at most ``max_secrets`` secrets remain, and |b| ≥ 1 unless the
  blanket is empty.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

DOMAINS = ("prefix-free", "per-slot")


@dataclass(frozen=True, eq=False)
class AugmentedSecrets:
    """The secret domain 𝒮 of the reduced C-mDP LP.

    Attributes:
        station: location x of each secret (index into the problem's X), shape (S,).
        lags: (S, Γ) blanket b = (x_{t−1}, …, x_{t−|b|}) as station indices, −1 past |b|.
        size: |b| per secret (0 only for the placeholder rows of stations never observed).
        count: complete slots mapped to each secret.
        prior: p_(x,b) = count / total (0 for placeholders).
        next_prob: (S, K) p(x_{t+1} = ℓ | x, b), from counts (a placeholder's next location is itself).
        slot_secret: the secret of every complete slot, shape (n,).
        slot_size: the blanket size each complete slot ended with (after rare contexts were shortened).
    """

    station: NDArray[np.int64]
    lags: NDArray[np.int64]
    size: NDArray[np.int64]
    count: NDArray[np.int64]
    prior: NDArray[np.float64]
    next_prob: NDArray[np.float64]
    slot_secret: NDArray[np.int64]
    slot_size: NDArray[np.int64]

    @property
    def n(self) -> int:
        """Number of augmented secrets (location, context)."""
        return len(self.station)

    def station_prior(self, k: int) -> NDArray[np.float64]:
        """p_x = Σ_b p_(x,b), shape (K,)."""
        # numpy's stubs type bincount as intp even with float weights, where it returns float64
        return np.bincount(self.station, weights=self.prior, minlength=k)  # type: ignore[return-value]

    def context_given_station(self, k: int) -> NDArray[np.float64]:
        """p(b | x) for each secret (placeholders: 1), shape (S,)."""
        px = self.station_prior(k)
        return np.where(px[self.station] > 0, self.prior / np.where(px[self.station] > 0, px[self.station], 1), 1.0)


def context_keys(station: NDArray[np.int64], lags: NDArray[np.int64], size: NDArray[np.int64],
          k: int) -> NDArray[np.int64]:
    """One integer per (x, b): x and the first ``size`` lags in base K + 1 (lags past ``size`` count as absent)."""
    code = station.astype(np.int64)
    for tau in range(lags.shape[1]):
        code = code * (k + 1) + np.where(tau < size, lags[:, tau], -1) + 1
    return code


def _prefix_free_sizes(station: NDArray[np.int64], lags: NDArray[np.int64], want: NDArray[np.int64], k: int,
                       threshold: int) -> NDArray[np.int64]:
    """Blanket size per slot after splitting the context trie (see the module docstring), depth ≥ 1."""
    n, gamma = lags.shape
    size = np.ones(n, dtype=np.int64)
    active = np.ones(n, dtype=bool)  # the slot's node at the current depth was reached by splits
    for j in range(1, gamma):  # one vectorised pass per depth
        if not active.any():
            break
        node = context_keys(station[active], lags[active], np.full(int(active.sum()), j), k)
        child = context_keys(station[active], lags[active], np.full(int(active.sum()), j + 1), k)
        _, inv_node, n_node = np.unique(node, return_inverse=True, return_counts=True)
        _, inv_child, n_child = np.unique(child, return_inverse=True, return_counts=True)
        ask = np.bincount(inv_node, weights=(want[active] > j).astype(float)) / n_node
        least_child = np.full(len(n_node), np.iinfo(np.int64).max)
        np.minimum.at(least_child, inv_node, n_child[inv_child])
        split = (ask >= 0.5) & (least_child >= threshold)
        grow = np.zeros(n, dtype=bool)
        grow[active] = split[inv_node]
        size[grow] = j + 1
        active = grow
    return size


def _per_slot_sizes(station: NDArray[np.int64], lags: NDArray[np.int64], want: NDArray[np.int64], k: int,
                    threshold: int) -> NDArray[np.int64]:
    """Blanket size per slot: its own, with rare contexts shortened from the oldest lag."""
    size = want.copy()
    for _ in range(lags.shape[1] + 1):  # each pass shortens rare contexts by one lag
        keys = context_keys(station, lags, size, k)
        _, inv, cnt = np.unique(keys, return_inverse=True, return_counts=True)
        rare = (cnt[inv] < threshold) & (size > 1)
        if not rare.any():
            break
        size[rare] -= 1
    return size


def build_secrets(station: NDArray[np.int64], lags: NDArray[np.int64], next_station: NDArray[np.int64],
                  size: NDArray[np.int64], k: int, *, min_count: int = 5, max_secrets: int = 150,
                  domain: str = "prefix-free") -> AugmentedSecrets:
    """Augmented secrets of complete slots with blanket sizes ``size`` (0 = no context), prior and next model.

    Args:
        station, lags, next_station: the complete slots' X_t, (X_{t−1..t−Γ}) and X_{t+1}.
        size: requested blanket size per slot, 0..Γ (all 0: no context, the secrets are the locations).
        k: number of stations.
        min_count, max_secrets, domain: the secret-domain rule of the module docstring.
    """
    want = np.asarray(size, dtype=np.int64)
    if domain not in DOMAINS:
        raise ValueError(f"domain {domain!r} is not one of {DOMAINS}")
    if want.max(initial=0) == 0:
        size = np.zeros(len(station), dtype=np.int64)
    else:
        want = np.maximum(want, 1)
        rule = _prefix_free_sizes if domain == "prefix-free" else _per_slot_sizes
        threshold = max(int(min_count), 1)
        while True:  # double the count threshold until the domain is small enough
            size = rule(station, lags, want, k, threshold)
            n_secrets = len(np.unique(context_keys(station, lags, size, k)))
            if n_secrets <= max_secrets or not (size > 1).any():
                break
            threshold *= 2
    keys = context_keys(station, lags, size, k)
    uniq, first, inv, cnt = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
    s_station = station[first]
    s_size = size[first]
    s_lags = np.where(np.arange(lags.shape[1])[None, :] < s_size[:, None], lags[first], -1)
    nxt = np.zeros((len(uniq), k))
    np.add.at(nxt, (inv, next_station), 1.0)
    nxt /= cnt[:, None]
    prior = cnt / cnt.sum()
    # placeholder rows for stations never seen as a complete slot, so every location has a row
    missing = np.setdiff1d(np.arange(k), s_station)
    if len(missing):
        s_station = np.concatenate([s_station, missing])
        s_lags = np.vstack([s_lags, np.full((len(missing), lags.shape[1]), -1)])
        s_size = np.concatenate([s_size, np.zeros(len(missing), dtype=np.int64)])
        cnt = np.concatenate([cnt, np.zeros(len(missing), dtype=np.int64)])
        prior = np.concatenate([prior, np.zeros(len(missing))])
        eye = np.zeros((len(missing), k))
        eye[np.arange(len(missing)), missing] = 1.0
        nxt = np.vstack([nxt, eye])
    return AugmentedSecrets(station=s_station.astype(np.int64), lags=s_lags.astype(np.int64),
                            size=s_size.astype(np.int64), count=cnt.astype(np.int64), prior=prior,
                            next_prob=nxt, slot_secret=inv.astype(np.int64), slot_size=size)


def decay_weights(gamma: float, max_lag: int) -> NDArray[np.float64]:
    """w_τ = γ^τ for τ = 1..Γ (γ = 0 gives all zeros, γ = 1 all ones)."""
    return np.power(float(gamma), np.arange(1, max_lag + 1)) if max_lag else np.zeros(0)


def augmented_distance(sec: AugmentedSecrets, d: NDArray[np.float64], gamma: float) -> NDArray[np.float64]:
    """Eq. 13 over the shared lags: d_(x,b),(x',b') = d_xx' + Σ_{τ ≤ min(|b|,|b'|)} γ^τ d_{b_τ, b'_τ}, km, (S, S).

    ``d`` is the base metric between stations (km, the problem's metric).
    """
    out = d[np.ix_(sec.station, sec.station)].copy()
    for tau, w in enumerate(decay_weights(gamma, sec.lags.shape[1])):  # one vectorised term per lag
        if w == 0:
            continue
        a = sec.lags[:, tau]
        both = (a[:, None] >= 0) & (a[None, :] >= 0)
        out += np.where(both, w * d[np.ix_(np.maximum(a, 0), np.maximum(a, 0))], 0.0)
    return out


def full_context_distance(lags_a: NDArray[np.int64], lags_b: NDArray[np.int64], xa: NDArray[np.int64],
                          xb: NDArray[np.int64], d: NDArray[np.float64], gamma: float) -> NDArray[np.float64]:
    """Eq. 13 with the full Γ-lag contexts of paired slots (elementwise), km: the distance the reduced one bounds."""
    out = d[xa, xb].copy()
    for tau, w in enumerate(decay_weights(gamma, lags_a.shape[1])):
        out += w * d[lags_a[:, tau], lags_b[:, tau]]
    return out


def expected_cost(sec: AugmentedSecrets, c_next: NDArray[np.float64]) -> NDArray[np.float64]:
    """Eq. 34: c_(x,b),y = Σ_ℓ p(ℓ | x, b) · C[ℓ, y], metres, (S, M).

    ``C[ℓ, y]`` = Σ_task p_task |path(ℓ, task) − path(y, task)| is the problem's own travel cost (``Problem.c``),
    so the task set and the road paths are the problem's (the bundled networks are undirected, so the paths to a
    task equal the paths from it).
    """
    return sec.next_prob @ c_next


def neighbour_pairs(d_aug: NDArray[np.float64], d_base: NDArray[np.float64], eta: float,
                    rule: str) -> NDArray[np.bool_]:
    """Which ordered pairs of secrets are η-neighbours (S, S), the diagonal excluded.

    ``augmented`` (Eq. 14, default): d_aug ≤ η. ``base`` (Appendix B.1): the locations are η-neighbours in the base
    metric, whatever the contexts.
    """
    n = len(d_aug)
    near = d_aug <= eta if rule == "augmented" else d_base <= eta
    return near & ~np.eye(n, dtype=bool)


def prune_implied(d: NDArray[np.float64], near: NDArray[np.bool_], chunk: int = 64) -> NDArray[np.bool_]:
    """Drop a neighbour pair (i, j) when some k has (i, k) and (k, j) neighbours, d_ik > 0, d_kj > 0 and
    d_ik + d_kj ≤ d_ij. The ratio bounds on the two shorter pieces then imply the bound on (i, j) (induction on d,
    since both pieces are strictly shorter), so the LP stays exact. Pairs at distance 0 are always kept.
    """
    n = len(d)
    keep = near.copy()
    pos = near & (d > 0)
    dd = np.where(pos, d, np.inf)
    for start in range(0, n, chunk):
        rows = slice(start, min(start + chunk, n))
        via = np.full((rows.stop - start, n), np.inf)
        for k in range(n):  # min over intermediate secrets, vectorised over a block of pairs
            np.minimum(via, dd[rows, k, None] + dd[k][None, :], out=via)
        keep[rows] &= ~(pos[rows] & (via <= d[rows]))
    return keep
