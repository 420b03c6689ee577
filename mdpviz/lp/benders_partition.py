"""The partition of the records into the subsets of the Benders decomposition (:mod:`mdpviz.lp.benders`): the
paper's k-means on the distance matrix, and the variants we compare it with."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.cluster.vq import kmeans2

from ..errors import ParameterError

PARTITIONERS = ("kmeans-dv", "kmeans-rec", "kmeans-adj", "spectral")


def partition(method: str, n_parts: int, d: NDArray[np.float64], coords: NDArray[np.float64] | None,
              pair_i: NDArray[np.int64], pair_j: NDArray[np.int64], seed: int = 0,
              iters: int = 10) -> NDArray[np.int64]:
    """Subset label (0..M'−1, empty subsets removed) of each row.

    Methods (spec 004 §3.6): ``kmeans-dv`` k-means on rows of the distance matrix (the paper's k-m-DV),
    ``kmeans-rec`` on the records' coordinates (km), ``kmeans-adj`` on rows of the 0/1 adjacency of the pair
    graph, ``spectral`` balanced spectral clustering (k-means on the M smallest eigenvectors of the unnormalised
    Laplacian; on a graph with several components these eigenvectors are component indicators, so the subsets
    follow the components). k-means runs ``iters`` Lloyd iterations from a k-means++ start (10, scipy's default;
    MATLAB's ``kmeans``, which the paper used, iterates until no record moves, at most 100 times).
    """
    n = len(d)
    k = int(min(max(n_parts, 1), n))
    adj = sp.coo_matrix((np.ones(len(pair_i)), (pair_i, pair_j)), shape=(n, n)).tocsr()
    adj = ((adj + adj.T) > 0).astype(np.float64)
    if method == "kmeans-dv":
        data = d
    elif method == "kmeans-rec":
        if coords is None:
            raise ParameterError("`kmeans-rec` needs the records' coordinates.")
        data = coords
    elif method == "kmeans-adj":
        data = adj.toarray()
    elif method == "spectral":
        L = sp.diags(np.asarray(adj.sum(axis=1)).ravel()) - adj
        _, v = np.linalg.eigh(L.toarray())
        data = v[:, :k]
    else:
        raise ParameterError(f"Unknown partitioner `{method}`; choose one of {', '.join(PARTITIONERS)}.")
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    _, labels = kmeans2(np.asarray(data, dtype=np.float64), k, iter=int(iters), minit="++",
                        seed=np.random.default_rng(seed))
    _, labels = np.unique(labels, return_inverse=True)
    return labels.astype(np.int64)
