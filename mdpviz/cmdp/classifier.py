"""The Markov-blanket predictor: L2-regularised logistic regression (numpy, Newton's method) on one-hot features.

A substitute for the paper's three-layer PyTorch network (spec §4.3): same inputs (hour group, speed bin, region,
hypothesis index m), same output (probability of "fail to reject", the positive class), same 60/20/20 split and
the Table 2 metrics. Each feature gets its own effect per m (one-hot feature × one-hot m), so the model can say
"fast vehicles need a second lag but not a third". The L2 strength is chosen on the validation split.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

L2_GRID = (0.01, 0.1, 1.0, 10.0)


def encode(x: NDArray[np.int64], sizes: tuple[int, int, int], max_lag: int) -> NDArray[np.float64]:
    """One-hot design matrix: m, and (m × hour group), (m × speed bin), (m × region)."""
    n = len(x)
    n_m = max(max_lag - 1, 1)
    m = np.clip(x[:, 3] - 1, 0, n_m - 1)
    width = 1 + sum(sizes)
    out = np.zeros((n, n_m * width))
    base = m * width
    rows = np.arange(n)
    out[rows, base] = 1.0
    offset = 1
    for j, size in enumerate(sizes):
        out[rows, base + offset + np.clip(x[:, j], 0, size - 1)] = 1.0
        offset += size
    return out


def _fit(a: NDArray[np.float64], y: NDArray[np.float64], l2: float, iters: int = 50) -> NDArray[np.float64]:
    """Newton–Raphson for L2-regularised logistic regression; returns the weights."""
    w = np.zeros(a.shape[1])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(a @ w)))
        grad = a.T @ (p - y) + l2 * w
        hess = (a * (p * (1 - p))[:, None]).T @ a + l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-9:
            break
    return w


def _bce(p: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))) if len(y) else float("nan")


def classification_metrics(y: NDArray[np.int64], p_fail: NDArray[np.float64]) -> dict[str, float]:
    """Table 2 metrics: BCE, accuracy, precision/recall/F1 with positive = "fail to reject", and the negative ones.

    >>> classification_metrics(np.array([1, 1, 0, 0]), np.array([0.9, 0.2, 0.1, 0.4]))["precision"]
    1.0
    """
    pred = (p_fail >= 0.5).astype(np.int64)

    def prf(pos: int) -> tuple[float, float, float]:
        tp = int(np.sum((pred == pos) & (y == pos)))
        npred, ntrue = int(np.sum(pred == pos)), int(np.sum(y == pos))
        prec = tp / npred if npred else float("nan")
        rec = tp / ntrue if ntrue else float("nan")
        f1 = 2 * prec * rec / (prec + rec) if npred and ntrue and (prec + rec) > 0 else float("nan")
        return prec, rec, f1

    p, r, f = prf(1)
    np_, nr, nf = prf(0)
    return {"n": len(y), "bce": _bce(p_fail, y.astype(float)),
            "accuracy": float(np.mean(pred == y)) if len(y) else float("nan"),
            "precision": p, "recall": r, "f1": f,
            "neg_precision": np_, "neg_recall": nr, "neg_f1": nf}


@dataclass(frozen=True, eq=False)
class BlanketClassifier:
    """A fitted predictor of "fail to reject" for hypothesis m in a (hour group, speed bin, region) group.

    Attributes:
        weights: logistic weights over ``encode``'s columns.
        sizes: number of hour groups, speed bins and regions; max_lag: Γ.
        l2: the chosen regularisation; metrics: per split (``train``, ``validation``, ``test``), see
            ``classification_metrics``.
    """

    weights: NDArray[np.float64]
    sizes: tuple[int, int, int]
    max_lag: int
    l2: float
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)

    def p_fail(self, x: NDArray[np.int64]) -> NDArray[np.float64]:
        """Probability of "fail to reject" for rows (hour group, speed bin, region, m)."""
        return 1.0 / (1.0 + np.exp(-(encode(x, self.sizes, self.max_lag) @ self.weights)))

    def predict_reject(self, x: NDArray[np.int64]) -> NDArray[np.bool_]:
        """True where the predicted blanket is more likely wrong than right (reject it)."""
        return self.p_fail(x) < 0.5


def train(x: NDArray[np.int64], y: NDArray[np.int64], sizes: tuple[int, int, int], max_lag: int,
          seed: int = 0) -> BlanketClassifier | None:
    """Fit on a seeded 60/20/20 split, pick L2 on validation BCE, report metrics on every split.

    Returns None when there are no labelled hypotheses (no group had enough data): use the lookup table then.
    """
    n = len(y)
    if n == 0:
        return None
    perm = np.random.default_rng(seed).permutation(n)
    n_tr = max(round(0.6 * n), 1)
    n_va = round(0.2 * n)
    tr, va, te = perm[:n_tr], perm[n_tr:n_tr + n_va], perm[n_tr + n_va:]
    a = encode(x, sizes, max_lag)
    yf = y.astype(float)
    best = None
    for l2 in L2_GRID:
        w = _fit(a[tr], yf[tr], l2)
        score = _bce(1 / (1 + np.exp(-(a[va] @ w))), yf[va]) if len(va) else float(l2 == 1.0)
        if best is None or score < best[0]:
            best = (score, l2, w)
    assert best is not None
    _, l2, w = best
    clf = BlanketClassifier(w, sizes, max_lag, l2)
    for name, idx in (("train", tr), ("validation", va), ("test", te)):
        clf.metrics[name] = classification_metrics(y[idx], clf.p_fail(x[idx]))
    return clf
