"""Classic mechanisms, exact evaluation, export and the cached solver layer (spec 000 §8.4)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mdpviz import metrics
from mdpviz.cli import main
from mdpviz.errors import ParameterError
from mdpviz.mechanisms import get_mechanism
from mdpviz.problem import Problem, build_problem, problem_from_points
from mdpviz.solve import cache_key, cached_result, solve

CLASSIC = ["em", "em-br", "laplace", "lp", "lp-ca"]


@pytest.fixture(scope="module")
def small() -> Problem:
    return build_problem("kotka", 14, n_outputs=7, seed=4)


@pytest.mark.parametrize("name", CLASSIC)
def test_rows_are_distributions(small: Problem, name: str) -> None:
    r = solve(small, name, {"eps": 3.0}, use_cache=False)
    assert r.Z is not None and r.Z.shape == (small.k, small.m)
    assert r.Z.min() >= 0.0
    np.testing.assert_allclose(r.Z.sum(axis=1), 1.0, atol=1e-9)


@pytest.mark.parametrize("name", ["em", "em-br", "laplace", "lp"])
def test_exact_mechanisms_have_no_violations(small: Problem, name: str) -> None:
    for eps in (1.0, 8.0):
        r = solve(small, name, {"eps": eps}, use_cache=False)
        v = metrics.violations(small, r.Z, eps, metric=r.check_metric)
        assert v.violated_pairs == 0, (name, eps, v)
        assert v.checked_pairs == small.k * (small.k - 1)
        assert v.worst_factor <= 1.0 + 1e-6


def test_literal_em_violates_eps_but_not_two_eps() -> None:
    # three points on a line: the middle one's normaliser differs most from the ends'
    pts = pd.DataFrame({"lat": [60.0, 60.0, 60.0], "lon": [25.0, 25.01, 25.03]})
    pb = problem_from_points(pts, all_outputs=True)
    eps = 10.0
    Z = solve(pb, "em", {"eps": eps, "scale": "literal"}, use_cache=False).Z
    assert metrics.violations(pb, Z, eps).violated_pairs > 0
    assert metrics.violations(pb, Z, 2 * eps).violated_pairs == 0
    assert metrics.violations(pb, solve(pb, "em", {"eps": eps}).Z, eps).violated_pairs == 0


def test_two_point_lp_has_the_closed_form_optimum() -> None:
    pts = pd.DataFrame({"lat": [60.0, 60.0], "lon": [25.0, 25.004]})
    pb = problem_from_points(pts, all_outputs=True)
    D, eps = float(pb.d[0, 1]), 4.0
    r = solve(pb, "lp", {"eps": eps}, use_cache=False)
    expected = np.exp(eps * D) / (1 + np.exp(eps * D))
    np.testing.assert_allclose(np.diag(r.Z), expected, rtol=1e-7)
    np.testing.assert_allclose(metrics.utility_loss_m(pb, r.Z), pb.c[0, 1] / (1 + np.exp(eps * D)), rtol=1e-7)


def test_loss_ordering_lp_emb_em(small: Problem) -> None:
    for eps in (2.0, 6.0):
        loss = {n: metrics.utility_loss_m(small, solve(small, n, {"eps": eps}).Z) for n in ("lp", "em-br", "em")}
        assert loss["lp"] <= loss["em-br"] + 1e-6 <= loss["em"] + 2e-6, loss


def test_lp_loss_is_non_increasing_in_eps(small: Problem) -> None:
    losses = [metrics.utility_loss_m(small, solve(small, "lp", {"eps": e}).Z) for e in (0.5, 1, 2, 4, 8, 16)]
    assert all(b <= a + 1e-6 for a, b in zip(losses, losses[1:], strict=False)), losses
    assert losses[-1] < losses[0]


def test_lp_ca_shares_rows_within_a_cell_and_can_violate() -> None:
    pb = build_problem("kotka", 60, n_outputs=20, seed=2)
    r = solve(pb, "lp-ca", {"eps": 5.0, "grid": 3})
    cell_of = r.diagnostics["cell_of"]
    for cell in np.unique(cell_of):
        rows = r.Z[cell_of == cell]
        np.testing.assert_allclose(rows, np.broadcast_to(rows[0], rows.shape))
    # secrets in different cells: their rows are private at the representatives' distance, not at their own
    assert metrics.violations(pb, r.Z, 5.0).violated_pairs > 0
    n_cells = len(r.diagnostics["representatives"])
    assert r.degenerate.startswith(f"Claim covers only the {n_cells} cell representatives")
    assert r.degenerate in r.message


def test_laplace_matches_monte_carlo() -> None:
    from scipy.spatial import cKDTree

    from mdpviz.geo import project_km

    pb = build_problem("kotka", 20, n_outputs=8, seed=1)
    eps = 5.0
    r = solve(pb, "laplace", {"eps": eps})
    assert r.diagnostics["integration_error_max"] < 1e-3
    xy = project_km(pb.x_lat, pb.x_lon, pb.x_lat.mean(), pb.x_lon.mean())
    rng = np.random.default_rng(0)
    n = 200_000
    radius, angle = rng.gamma(2.0, 1.0 / eps, n), rng.uniform(0, 2 * np.pi, n)
    _, cell = cKDTree(xy[pb.y_index]).query(xy[5] + np.column_stack([radius * np.cos(angle),
                                                                       radius * np.sin(angle)]))
    empirical = np.bincount(cell, minlength=pb.m) / n
    np.testing.assert_allclose(r.Z[5], empirical, atol=4 * np.sqrt(0.25 / n))


def test_fan_integrals_match_adaptive_quadrature_far_and_near() -> None:
    """The per-edge integrals of the Laplace cell masses, against scipy's adaptive quadrature (in log space for T).

    A far edge (T ≈ e^{-600}, below what a linear G form can resolve), a long edge passing 0.3 km from x (G varies
    sharply near its ends) and an ordinary one.
    """
    from scipy.integrate import quad

    from mdpviz.mechanisms.laplace import _gauss, fan_integrals

    eps = 15.0
    a = np.array([[40.0, -3.0], [0.3, -5.0], [2.0, 1.0]])
    b = np.array([[41.0, 2.0], [0.3, 5.0], [1.0, 2.0]])
    s, w = _gauss(8, 6)
    delta, g, lt = fan_integrals(np.zeros((1, 2)), a, b, eps, s, np.log(w))
    for e in range(len(a)):
        edge = b[e] - a[e]
        normal = np.array([edge[1], -edge[0]]) / np.linalg.norm(edge)
        h = abs(a[e] @ normal)
        th_a, th_b = np.arctan2(a[e][1], a[e][0]), np.arctan2(b[e][1], b[e][0])
        phi0 = np.arctan2(*(np.sign(a[e] @ normal) * normal)[::-1])

        def rho(th: float, h: float = h, phi0: float = phi0) -> float:
            return h / np.cos(th - phi0)

        shift = eps * h  # T scaled by e^{εh} so that quad sees numbers near 1
        t_ref = quad(lambda th, shift=shift: (1 + eps * rho(th)) * np.exp(-eps * rho(th) + shift), th_a, th_b,
                     epsabs=0, epsrel=1e-13, limit=200)[0] / (2 * np.pi)
        g_ref = quad(lambda th: 1 - (1 + eps * rho(th)) * np.exp(-eps * rho(th)), th_a, th_b,
                     epsabs=0, epsrel=1e-13, limit=200)[0] / (2 * np.pi)
        np.testing.assert_allclose(delta[0, e], th_b - th_a, rtol=1e-12)
        np.testing.assert_allclose(lt[0, e], np.log(abs(t_ref)) - shift, rtol=0, atol=1e-7)  # relative 1e-7
        np.testing.assert_allclose(g[0, e], g_ref, rtol=1e-9, atol=1e-15)


def test_violation_check_against_a_direct_loop(small: Problem) -> None:
    rng = np.random.default_rng(0)
    Z = rng.dirichlet(np.ones(small.m), size=small.k)
    Z[3, 2] = 0.0
    eps = 2.0
    bad = triples = 0
    bad_set = set()
    worst = 0.0
    for i in range(small.k):
        for j in range(small.k):
            if i == j:
                continue
            limit = (1 + metrics.TOLERANCE) * np.exp(eps * small.d[i, j]) * Z[j]
            bad += bool((Z[i] > limit).any())
            triples += int((Z[i] > limit).sum())
            if (Z[i] > limit).any():
                bad_set.add((i, j))
            with np.errstate(divide="ignore"):
                worst = max(worst, float(np.max(np.log(Z[i] / Z[j]))) / (eps * small.d[i, j]))
    v = metrics.violations(small, Z, eps)
    assert (v.violated_pairs, v.checked_pairs) == (bad, small.k * (small.k - 1))
    assert v.violated_triples == triples > 0
    assert v.worst_factor == pytest.approx(worst) and np.isinf(v.worst_factor)  # Z[j, 2] = 0 < Z[i, 2]
    listed = metrics.violations(small, Z, eps, pairs_limit=10**6).worst_pairs
    assert set(zip(listed[0].tolist(), listed[1].tolist(), strict=True)) == bad_set
    assert list(listed[2]) == sorted(listed[2], reverse=True)  # worst first
    assert v.worst_pairs is None  # listed only when asked


def test_violation_check_sees_breaches_of_tiny_entries_and_survives_huge_exponents() -> None:
    # an absolute slack (the old check had 1e-12) would hide the first pair; e^{ε·d} overflows for the second
    Z = np.array([[1 - 2e-300, 1e-300, 1e-300], [1 - 2e-310, 1e-310, 1e-310], [0.2, 0.3, 0.5]])
    E = np.array([[0.0, 1.0, 900.0], [1.0, 0.0, 900.0], [900.0, 900.0, 0.0]])
    b = metrics.cone_breaches(Z, E)
    assert set(zip(b.i.tolist(), b.j.tolist(), strict=True)) == {(0, 1)}  # ln(1e-300/1e-310) = 23 > 1
    assert b.worst_factor == pytest.approx(10 * np.log(10), rel=1e-6)
    assert metrics.cone_breaches(Z, np.where(E == 1.0, 24.0, E)).i.size == 0
    Z[1, 2] = 0.0  # a zero under a positive entry is an infinite breach, whatever the exponent
    assert np.isinf(metrics.cone_breaches(Z, np.where(E == 1.0, 24.0, E)).worst_factor)


def test_adversary_error_and_posterior_against_a_direct_loop(small: Problem) -> None:
    Z = solve(small, "em", {"eps": 2.0}).Z
    total = 0.0
    for k in range(small.m):
        joint = small.p * Z[:, k]
        total += min(float(joint @ small.d[g]) for g in range(small.k))
        post = metrics.posterior(small, Z, k)
        np.testing.assert_allclose(post, joint / joint.sum())
    assert metrics.adversary_error_m(small, Z) == pytest.approx(total * 1000)
    truthful = np.zeros((small.k, small.m))
    truthful[small.y_index, np.arange(small.m)] = 1  # outputs report themselves exactly
    assert metrics.utility_loss_m(small, truthful) >= 0


@pytest.mark.parametrize(("params", "match"), [
    ({"eps": -1}, r"`eps` = -1 is invalid: it must be a number in \[0.01, 100\]"),
    ({"eps": "abc"}, "`eps` = 'abc' is invalid"),
    ({"eps": float("nan")}, "`eps` = nan is invalid"),
    ({"eps": True}, "`eps` = True is invalid"),
    ({"grid": 2.5}, r"`grid` = 2.5 is invalid: it must be a whole number in \[2, 20\]"),
    ({"method": "magic"}, "one of ipm, simplex"),
    ({"colour": 3}, r"has no parameter\(s\) \['colour'\]"),
])
def test_bad_parameters_raise_the_library_error(small: Problem, params: dict[str, object], match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        solve(small, "lp-ca", params)


def test_unknown_mechanism(small: Problem) -> None:
    with pytest.raises(ParameterError, match=r"Unknown mechanism `nope`; known: .*\bem\b"):
        solve(small, "nope")


def test_cache_returns_identical_results_and_recovers_from_corruption(small: Problem, _isolated_cache: Path) -> None:
    first = solve(small, "lp", {"eps": 3.0})
    assert cached_result(small, "lp", {"eps": 3.0}) is not None
    again = solve(small, "lp", {"eps": 3.0})
    np.testing.assert_array_equal(first.Z, again.Z)
    assert again.timings == first.timings  # the stored result itself, not a re-solve
    path = _isolated_cache / "results" / f"{cache_key(small, 'lp', get_mechanism('lp').validate({'eps': 3.0}))}.npz"
    assert path.exists()
    path.write_bytes(b"not an npz file")
    assert cached_result(small, "lp", {"eps": 3.0}) is None
    healed = solve(small, "lp", {"eps": 3.0})
    np.testing.assert_allclose(healed.Z, first.Z, atol=1e-9)
    assert path.read_bytes()[:2] == b"PK"  # rewritten as an .npz (zip) entry; tests/test_solve.py has the rest
    # a different parameter is a different entry; no-cache neither reads nor writes
    solve(small, "lp", {"eps": 4.0}, use_cache=False)
    assert cached_result(small, "lp", {"eps": 4.0}) is None


def test_time_limit_gives_an_honest_status() -> None:
    pb = build_problem("kotka", 60, n_outputs=60, seed=0)
    r = solve(pb, "lp", {"eps": 5.0, "pairs": "all"}, time_limit=1e-9)  # passed at once: no wall clock
    assert r.status == "time limit" and r.Z is None
    assert cached_result(pb, "lp", {"eps": 5.0, "pairs": "all"}) is None  # a time limit is not cached


def test_cli_solve_writes_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for ext in (".npz", ".csv", ".json"):
        out = tmp_path / f"z{ext}"
        assert main(["solve", "--city", "kotka", "--k", "30", "--mechanism", "em-br", "--eps", "4",
                     "--out", str(out)]) == 0
        assert out.exists()
    text = capsys.readouterr().out
    assert "utility loss" in text and "violations     0 / 870 ordered pairs" in text
    npz = np.load(tmp_path / "z.npz")
    assert npz["Z"].shape == (30, 30) and "violations" in json.loads(str(npz["metadata"]))["metrics"]
    data = json.loads((tmp_path / "z.json").read_text())
    assert data["params"] == {"eps": 4.0} and len(data["Z"]) == 30
    table = pd.read_csv(tmp_path / "z.csv", comment="#")  # the verdict, claim and privacy come first, as # lines
    np.testing.assert_allclose(table.iloc[:, 2:].sum(axis=1), 1.0)
    assert main(["solve", "--city", "kotka", "--k", "30", "--mechanism", "em", "--param", "scale"]) == 2
    assert "name=value" in capsys.readouterr().err
    assert main(["mechanisms"]) == 0
    assert "km⁻¹" in capsys.readouterr().out


def test_problem_from_a_points_file_end_to_end(tmp_path: Path) -> None:
    csv = tmp_path / "pts.csv"
    csv.write_text("lat,lon\n60.1700,24.9400\n60.1710,24.9450\n60.1690,24.9480\n")
    assert main(["solve", "--points", str(csv), "--mechanism", "em", "--no-cache"]) == 0
    assert problem_from_points(io.StringIO(csv.read_text())).k == 3


def test_an_lp_too_large_for_memory_is_refused_before_it_is_built(small: Problem,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mdpviz.lp.highs.MAX_PAIR_ROWS", 50)
    for name, params in (("lp", {"solver": "monolithic"}), ("lp-bd", {})):
        with pytest.raises(ParameterError, match=r"constraint rows \(limit 50: more would exhaust memory\)"):
            solve(small, name, params, use_cache=False)


def test_a_papers_module_imported_alone_solves_without_the_catalogue() -> None:
    """DISTA-LP's private-cell mode solves an exact LP per cell: imported alone (not the catalogue, which the
    registry does not load behind anyone's back), it must still solve (the review of the package move found
    `Unknown mechanism 'lp'` when it looked the LP up in the registry)."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from mdpviz.dista.mechanism import DISTA_LP\n"
            "from mdpviz.problem import build_problem\n"
            "pb = build_problem('kotka', 12, n_outputs=6, seed=1)\n"
            "r = DISTA_LP.solve(pb, DISTA_LP.validate({'upload': 'cell', 'eps': 5.0, 'cells': 2}), "
            "lambda *a: None, 60.0)\n"
            "assert r.Z is not None and r.diagnostics['violations_claim']['violated'] == 0, r.message\n"
            "print('mdpviz.mechanisms' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"  # the catalogue was not needed
