"""Small pure helpers that explain mDP in plain numbers: ε as a radius in metres, two-point examples, LP sizes.

Used by the dashboard's Home and Learn pages and by its solve-time warnings; no Streamlit here.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .geo import EARTH_RADIUS_KM

LN2 = math.log(2.0)


def ratio_bound(eps_per_km: float, r_km: float) -> float:
    """Largest probability ratio ε-mDP allows between two secrets ``r_km`` km apart: e^{ε·r}.

    >>> round(ratio_bound(5.0, 0.2), 4)   # ε = 5 km⁻¹, 200 m apart
    2.7183
    >>> ratio_bound(5.0, 0.0)
    1.0
    """
    return math.exp(eps_per_km * r_km)


def radius_km(eps_per_km: float, ratio: float = 2.0) -> float:
    """Distance (km) within which any two secrets stay indistinguishable up to ``ratio``: ln(ratio)/ε.

    >>> round(radius_km(5.0) * 1000)       # ε = 5 km⁻¹: ratio ≤ 2 within ≈ 139 m
    139
    >>> round(radius_km(1.0, ratio=math.e), 6)
    1.0
    """
    if eps_per_km <= 0:
        raise ValueError(f"`eps_per_km` must be positive, got {eps_per_km!r}.")
    if ratio <= 1:
        raise ValueError(f"`ratio` must exceed 1, got {ratio!r}.")
    return math.log(ratio) / eps_per_km


def eps_for_radius(radius_m: float, ratio: float = 2.0) -> float:
    """The ε (km⁻¹) whose ratio-``ratio`` radius is ``radius_m`` metres (inverse of :func:`radius_km`).

    >>> round(eps_for_radius(139), 2)
    4.99
    """
    return math.log(ratio) / (radius_m / 1000.0)


def two_point_keep(eps_per_km: float, d_km: float) -> float:
    """Optimal two-point randomised response: Pr[report the truth] = e^{εD}/(1 + e^{εD}) for points D km apart.

    This is the optimum of the mDP LP on X = Y = {a, b} with uniform prior and symmetric cost.

    >>> two_point_keep(5.0, 0.0)
    0.5
    >>> round(two_point_keep(5.0, 0.2), 4)
    0.7311
    """
    # 1 / (1 + e^{-εD}) is the same value, stable for large εD
    return 1.0 / (1.0 + math.exp(-eps_per_km * d_km))


def two_point_loss_m(eps_per_km: float, d_km: float, cost_m: float | None = None) -> float:
    """Expected loss (m) of the optimal two-point mechanism: c/(1 + e^{εD}); the cost defaults to D in metres.

    >>> round(two_point_loss_m(5.0, 0.2), 1)
    53.8
    """
    c = d_km * 1000.0 if cost_m is None else cost_m
    return c * (1.0 - two_point_keep(eps_per_km, d_km))


def local_dp_eps(eps_per_km: float, diameter_km: float) -> float:
    """The plain (local) DP ε that treats every pair as neighbours: ε·diameter, the worst pair's budget.

    >>> local_dp_eps(5.0, 2.0)
    10.0
    """
    return eps_per_km * diameter_km


def lp_size(k: int, m: int, pairs: int | None = None) -> dict[str, int]:
    """Size of the full mDP LP on K secrets and M outputs: K·M variables, one inequality per (ordered pair, y).

    ``pairs`` overrides the number of constrained ordered pairs (default all K(K−1)).

    >>> lp_size(100, 50)
    {'variables': 5000, 'inequalities': 495000, 'equalities': 100}
    """
    n_pairs = k * (k - 1) if pairs is None else pairs
    return {"variables": k * m, "inequalities": n_pairs * m, "equalities": k}


# the structured LP engine is slow where a row's mass spreads over many outputs, i.e. where ε·d is small between most
# secrets; measured (CPU seconds, |Y| = 100, `python -m mdpviz bench lp`, docs/benchmarks/lp_*.md): Helsinki at
# ε = 5 (median ε·d ≈ 5) K = 100 in 8 s, K = 200 in 65 s; Rome at ε = 1 (≈ 14) K = 100 in 5 s, K = 200 in 43 s;
# Rome at ε = 5 (≈ 70) K = 2,000 in 17 s
DENSE_EPS_D = 25.0  # median ε·d (nats) below which the LP counts as dense
DENSE_LP_K = 150  # a dense exact LP above this K may take minutes
SPARSE_LP_K = 2000  # a sparse one above this K


def solve_warning(k: int, m: int, *, max_k: int | None, family: str, exact: bool,
                  time_limit_s: float | None, eps_d_median: float | None = None) -> str | None:
    """A sentence warning that a solve may be slow, or None when it should be quick.

    Above the mechanism's own ``max_k`` a solve may be slow. The exact LP (family ``lp``, exact) is judged by its
    size and, when ``eps_d_median`` (the median of ε·d over pairs of secrets, nats) is given, by how dense its
    optimal rows are: below ``DENSE_EPS_D`` it may take minutes above K = ``DENSE_LP_K``, otherwise above
    ``SPARSE_LP_K`` (measured points above). Without ``eps_d_median``, any exact LP over 200,000 constraints
    K(K−1)·|Y| gets the warning.

    >>> solve_warning(200, 50, max_k=None, family="baseline", exact=True, time_limit_s=60) is None
    True
    >>> "minutes" in solve_warning(300, 50, max_k=150, family="lp", exact=True, time_limit_s=60)
    True
    >>> solve_warning(1000, 100, max_k=None, family="lp", exact=True, time_limit_s=60, eps_d_median=60.0) is None
    True
    >>> "dense" in solve_warning(200, 100, max_k=None, family="lp", exact=True, time_limit_s=60, eps_d_median=5.0)
    True
    """
    limit = "" if time_limit_s is None else f" The solve stops after the time limit of {time_limit_s:g} s."
    if max_k is not None and k > max_k:
        return (f"K = {k} is above {max_k}, the size this mechanism solves interactively; "
                f"it may take minutes.{limit}")
    if family != "lp" or not exact:
        return None
    size = lp_size(k, m)["inequalities"]
    if eps_d_median is None:
        if size > 200_000:
            return f"The exact LP has about {size:,} constraints (K(K−1)·|Y|); it may take minutes.{limit}"
        return None
    if eps_d_median < DENSE_EPS_D and k > DENSE_LP_K:
        return (f"ε·d is small between most secrets (median {eps_d_median:.2g}: a typical pair's report "
                f"probabilities may differ only by a factor e^{eps_d_median:.2g} ≈ {math.exp(eps_d_median):,.0f}), so "
                f"the optimal rows are dense (each secret reports many outputs) and the exact LP ({size:,} "
                f"constraints) may take minutes at K = {k}.{limit}")
    if k > SPARSE_LP_K:
        return f"The exact LP has about {size:,} constraints (K(K−1)·|Y|); it may take minutes.{limit}"
    return None


def log_grid(low: float, high: float, extra: tuple[float, ...] = ()) -> list[float]:
    """Readable log-spaced values between ``low`` and ``high`` (1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8 per decade).

    Values in ``extra`` inside the range are added, so a default or a value from a URL is always selectable.

    >>> log_grid(1, 10)
    [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0]
    >>> log_grid(0.1, 0.3, extra=(0.123,))
    [0.1, 0.123, 0.15, 0.2, 0.25, 0.3]
    """
    if not 0 < low < high:
        raise ValueError(f"need 0 < low < high, got low={low!r}, high={high!r}")
    mantissas = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)
    values = {float(low), float(high)}
    for e in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
        for mant in mantissas:
            v = float(f"{mant * 10.0 ** e:.12g}")
            if low <= v <= high:
                values.add(v)
    values.update(float(v) for v in extra if low <= v <= high)
    return sorted(values)


def sweep_values(low: float, high: float, n: int, log: bool) -> NDArray[np.float64]:
    """``n`` sweep points from ``low`` to ``high``, log-spaced when ``log``, rounded to readable values.

    Log sweeps keep 2 significant digits (1, 1.5, 2.4 ...), linear ones 4; duplicates after rounding are dropped.

    >>> sweep_values(1, 100, 3, log=True).tolist()
    [1.0, 10.0, 100.0]
    >>> sweep_values(1, 20, 8, log=True).tolist()
    [1.0, 1.5, 2.4, 3.6, 5.5, 8.5, 13.0, 20.0]
    >>> sweep_values(0.25, 0.95, 3, log=False).tolist()
    [0.25, 0.6, 0.95]
    """
    if n < 1:
        raise ValueError(f"`n` must be at least 1, got {n!r}.")
    if n == 1:
        return np.array([float(low)])
    raw = np.geomspace(low, high, n) if log else np.linspace(low, high, n)
    digits = 2 if log else 4
    return np.unique([float(f"{v:.{digits}g}") for v in raw])


def format_m(metres: float) -> str:
    """Metres as a short label: ``'139 m'``, ``'1.25 km'``.

    >>> format_m(138.6), format_m(1250.0), format_m(float('nan'))
    ('139 m', '1.25 km', '–')
    """
    if not math.isfinite(metres):
        return "–"
    return f"{metres / 1000:.3g} km" if abs(metres) >= 1000 else f"{metres:.0f} m"


def format_m_pair(a: float, b: float) -> tuple[str, str]:
    """Two lengths as :func:`format_m` labels, with as many more digits (up to a tenth of a millimetre) as it takes
    to tell them apart: a bound and a point that differ by centimetres must not both read '765 m'.

    >>> format_m_pair(764.618, 764.6375), format_m_pair(1264.749, 1264.7537), format_m_pair(138.6, 1250.0)
    (('764.62 m', '764.64 m'), ('1.2647 km', '1.2648 km'), ('139 m', '1.25 km'))
    >>> format_m_pair(5.0, 5.0), format_m_pair(5.0, 5.000001)
    (('5 m', '5 m'), ('5 m', '5 m'))
    """
    fa, fb = format_m(a), format_m(b)
    if fa != fb or not (math.isfinite(a) and math.isfinite(b)):
        return fa, fb
    km = abs(a) >= 1000
    for extra in range(1, 5):
        pa, pb = ((f"{x / 1000:.{3 + extra}f} km" if km else f"{x:.{extra}f} m") for x in (a, b))
        if pa != pb:
            return pa, pb
    return fa, fb


def format_s(seconds: float) -> str:
    """Seconds as a short label: ``'4 ms'``, ``'1.3 s'``, ``'2 min 5 s'``.

    >>> format_s(0.0042), format_s(1.26), format_s(125), format_s(0.00042)
    ('4 ms', '1.3 s', '2 min 5 s', '0.42 ms')
    """
    if seconds < 0.001:
        return f"{seconds * 1000:.2g} ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def expected_failing_pairs(n_users: int, delta: float) -> float:
    """Expected number of ordered user pairs whose ε-mDP guarantee fails under (ε, δ)-PmDP: N(N−1)·δ.

    >>> expected_failing_pairs(50, 1e-7)
    0.000245
    """
    return n_users * (n_users - 1) * delta


def line_points(positions_km: list[float], lat0: float = 60.17, lon0: float = 24.94) -> pd.DataFrame:
    """Points on a north-south line at the given km offsets (lat, lon in degrees): a tiny example domain.

    >>> round(float(line_points([0.0, 1.0]).lat.diff().iloc[1]), 5)
    0.00899
    """
    deg_per_km = 180.0 / (math.pi * EARTH_RADIUS_KM)
    return pd.DataFrame({"lat": [lat0 + p * deg_per_km for p in positions_km], "lon": [lon0] * len(positions_km)})
