"""Rows of a mechanism from log-weights: the exponential mechanism's normalisation, written once."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def exp_rows(logw: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each row of ``exp(logw)`` divided by its sum, computed stably (each row's largest weight becomes 1 before
    the division, so no row underflows to all zeros however large ε·d is).

    >>> exp_rows(np.array([[0.0, -np.log(3.0)], [-1000.0, -1000.0]])).round(3).tolist()
    [[0.75, 0.25], [0.5, 0.5]]
    """
    w = np.exp(logw - logw.max(axis=1, keepdims=True))
    rows: NDArray[np.float64] = w / w.sum(axis=1, keepdims=True)
    return rows
