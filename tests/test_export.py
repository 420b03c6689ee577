"""Exported files say what the result is (issue 29, item 4): the verdict, the degenerate flag, the claim and the
privacy measured against it, in every format; and a GIS user can take secrets and outputs into QGIS."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pytest

from mdpviz import metrics
from mdpviz.cli import main
from mdpviz.errors import MdpvizError
from mdpviz.export import FORMATS, check_output, result_bytes
from mdpviz.mechanisms import Result
from mdpviz.problem import Problem, build_problem
from mdpviz.solve import solve


@pytest.fixture(scope="module")
def pb() -> Problem:
    return build_problem("kotka", 25, n_outputs=8, cost="distance", seed=3)


def collapsed(pb: Problem) -> Result:
    """Every secret reports with the same distribution: private, useless, and it reads 'optimal'."""
    return Result("panda-e", {"eps": 5.0}, np.full((pb.k, pb.m), 1 / pb.m), "optimal", 5.0,
                  claim="(ε, δ)-PmDP over anchors",
                  diagnostics={"violations": {"claim": {"violated": 7, "checked": 40, "unit": "user pairs"}}})


def meta_of(fmt: str, data: bytes, tmp_path: Path) -> dict:
    """The metadata a file of ``fmt`` carries, read back the way a user of that format would."""
    if fmt == ".json":
        return json.loads(data)
    if fmt == ".npz":
        return json.loads(str(np.load(io.BytesIO(data))["metadata"]))
    if fmt == ".geojson":
        return json.loads(data)["mdpviz"]
    if fmt == ".gpkg":
        path = tmp_path / "r.gpkg"
        path.write_bytes(data)
        return json.loads(pyogrio.read_info(path, layer="secrets")["dataset_metadata"]["mdpviz"])
    raise AssertionError(fmt)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != ".csv"])
def test_a_collapsed_release_never_reads_as_a_plain_optimum(pb: Problem, fmt: str, tmp_path: Path) -> None:
    r = collapsed(pb)
    ev = metrics.evaluate(pb, r.Z, r.eps)
    meta = meta_of(fmt, result_bytes(fmt, pb, r, ev), tmp_path)
    assert meta["degenerate"] is True and meta["degenerate_why"].startswith("Collapsed")
    assert meta["verdict"]["level"] == "error" and "Collapsed" in meta["verdict"]["headline"]
    assert meta["claim"] == "(ε, δ)-PmDP over anchors" and meta["claim_covers_all_pairs"] is False
    assert meta["against_claim"] == {"violated": 7, "checked": 40, "unit": "user pairs",
                                     "check": "violations.claim"}
    assert meta["all_pairs"]["checked"] == pb.k * (pb.k - 1) and meta["all_pairs"]["tolerance_relative"] == 1e-9


def test_the_csv_says_it_in_comment_lines_that_readers_skip(pb: Problem) -> None:
    r = collapsed(pb)
    text = result_bytes(".csv", pb, r, metrics.evaluate(pb, r.Z, r.eps)).decode()
    head = text.splitlines()[:5]
    assert head[0].startswith("# verdict: panda-e: Collapsed") and head[1].startswith("# degenerate: Collapsed")
    assert head[2] == f"# status: {r.status}"
    assert head[3] == "# claim: (ε, δ)-PmDP over anchors"
    assert head[4] == "# against the claim: 7 of 40 user pairs violate epsilon-mDP (violations.claim)"
    table = pd.read_csv(io.StringIO(text), comment="#")
    assert table.shape == (pb.k, 2 + pb.m) and np.allclose(table.iloc[:, 2:].sum(axis=1), 1.0)
    assert np.loadtxt(io.StringIO(text), delimiter=",", skiprows=6).shape == (pb.k, 2 + pb.m)


def test_an_unfinished_solve_says_so_in_every_file(pb: Problem) -> None:
    """A mechanism whose LPs stopped before their optimum (status ``incomplete``) is not a plain success anywhere."""
    r = dataclasses.replace(solve(pb, "em", {"eps": 2.0}), status="incomplete")
    evaluation = metrics.evaluate(pb, r.Z, r.eps)
    meta = json.loads(result_bytes(".json", pb, r, evaluation))
    assert meta["verdict"]["level"] == "warning" and meta["verdict"]["headline"].startswith("Incomplete")
    assert "# status: incomplete" in result_bytes(".csv", pb, r, evaluation).decode().splitlines()[:4]


def test_files_name_our_variant_and_geojson_leads_with_the_verdict(pb: Problem) -> None:
    from mdpviz.contract import get_mechanism

    params = {**get_mechanism("dista-lp").defaults(), **dict(get_mechanism("dista-lp").preset("ours").params)}
    r = solve(pb, "dista-lp", params, use_cache=False)
    evaluation = metrics.evaluate(pb, r.Z, r.eps)
    meta = json.loads(result_bytes(".json", pb, r, evaluation))
    assert meta["verdict"]["headline"].startswith("dista-lp (our variant, not the paper's)")
    geo = json.loads(result_bytes(".geojson", pb, r, evaluation))
    assert list(geo)[:2] == ["type", "mdpviz"] and geo["mdpviz"]["verdict"] == meta["verdict"]
    first, last = geo["features"][0]["properties"], geo["features"][-1]["properties"]
    assert isinstance(first["secret"], int) and isinstance(first["breaches"], int) and isinstance(last["output"], int)


def test_a_sound_release_says_it_kept_its_promise(pb: Problem) -> None:
    r = solve(pb, "em", {"eps": 2.0})
    meta = json.loads(result_bytes(".json", pb, r, metrics.evaluate(pb, r.Z, r.eps)))
    assert meta["degenerate"] is False and meta["degenerate_why"] == "" and meta["verdict"]["level"] == "ok"
    assert meta["floor_m"] == pytest.approx(metrics.floor_m(pb)) and meta["privacy_cost_m"] > 0
    from mdpviz.reference import reference

    with_lp = json.loads(result_bytes(".json", pb, r, metrics.evaluate(pb, r.Z, r.eps), reference(pb, 2.0)))
    assert with_lp["lp_status"] == "optimal" and with_lp["privacy_cost_vs_lp"] > 1  # EM pays more than the LP
    assert meta["against_claim"]["violated"] == 0 and meta["against_claim"]["check"] == "all pairs"


def _breaches_by_loops(Z: np.ndarray, E: np.ndarray) -> np.ndarray:
    """Per secret i: the j ≠ i with some y where Z[i,y] > e^{E[i,j]}·Z[j,y]·(1 + 1e-9) (independent loops)."""
    out = np.zeros(len(Z), dtype=int)
    for i in range(len(Z)):
        for j in range(len(Z)):
            if i != j and any(Z[i, y] > np.exp(E[i, j]) * Z[j, y] * (1 + 1e-9) for y in range(Z.shape[1])):
                out[i] += 1
    return out


@pytest.mark.parametrize("fmt", [".geojson", ".gpkg"])
def test_gis_layers_hold_each_secrets_loss_report_and_breaches(pb: Problem, fmt: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    Z = rng.random((pb.k, pb.m)) ** 4
    Z /= Z.sum(axis=1, keepdims=True)  # a broken mechanism, so that breaches are there to count
    r = Result("em", {"eps": 5.0}, Z, "closed form", 5.0)
    path = tmp_path / f"r{fmt}"
    path.write_bytes(result_bytes(fmt, pb, r, metrics.evaluate(pb, Z, 5.0)))
    if fmt == ".geojson":
        both = gpd.read_file(path)
        secrets, outputs = both[both["kind"] == "secret"], both[both["kind"] == "output"]
    else:
        assert sorted(pyogrio.list_layers(path)[:, 0]) == ["outputs", "secrets"]
        secrets, outputs = gpd.read_file(path, layer="secrets"), gpd.read_file(path, layer="outputs")
    assert secrets.crs.to_epsg() == 4326 and len(secrets) == pb.k and len(outputs) == pb.m
    np.testing.assert_allclose(secrets.geometry.y, pb.x_lat)
    np.testing.assert_allclose(secrets.geometry.x, pb.x_lon)
    np.testing.assert_allclose(secrets["expected_loss_m"], (pb.c * Z).sum(axis=1), rtol=1e-12)
    assert (secrets["likely_report"].to_numpy() == Z.argmax(axis=1)).all()
    np.testing.assert_allclose(secrets["likely_report_lat"], pb.y_lat[Z.argmax(axis=1)])
    expected = _breaches_by_loops(Z, 5.0 * pb.d)
    assert expected.sum() > 0 and (secrets["breaches"].to_numpy() == expected).all()
    np.testing.assert_allclose(outputs["report_prob"].sum(), 1.0)


def test_cli_writes_a_geopackage_and_refuses_to_replace_a_read_only_file(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.gpkg"
    argv = ["solve", "--city", "kotka", "--k", "25", "--outputs", "8", "--seed", "3", "--mechanism", "em",
            "--out", str(out)]
    assert main(argv) == 0 and len(gpd.read_file(out, layer="secrets")) == 25
    out.chmod(0o444)
    before = out.read_bytes()
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out") and "read-only" in err and out.read_bytes() == before
    with pytest.raises(MdpvizError, match="read-only"):
        check_output(out)


def test_there_is_no_map_of_a_mechanism_that_does_not_exist(pb: Problem) -> None:
    r = Result("lp", {"eps": 5.0}, None, "time limit", 5.0)
    with pytest.raises(MdpvizError, match="no mechanism to export"):
        result_bytes(".geojson", pb, r, None)


def test_the_cli_says_a_collapsed_release_is_degenerate_in_its_verdict(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """PAnDA-e in the paper's setting on the whole of Rome collapses (status 'optimal'): the CLI and the file say so."""
    out = tmp_path / "panda.json"
    assert main(["solve", "--city", "rome", "--k", "500", "--outputs", "100", "--cost", "distance", "--mechanism",
                 "panda-e", "--eps", "5", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "\nDEGENERATE     Collapsed" in text and "\nVERDICT        panda-e: Collapsed" in text
    assert "broke its promise" in text.split("VERDICT", 1)[1]
    assert "privacy cost" in text and "no-privacy floor" in text
    meta = json.loads(out.read_text())
    assert meta["status"] == "optimal" and meta["degenerate"] is True and meta["verdict"]["level"] == "error"
    assert meta["against_claim"]["check"] == "violations.V_pair" and meta["against_claim"]["violated"] > 0


def test_the_cli_states_a_literal_forms_flag_once_before_its_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    """EM's literal form flags itself degenerate with its message: the DEGENERATE line says it, the status line does
    not say it again."""
    assert main(["solve", "--city", "rome", "--k", "40", "--outputs", "20", "--cost", "distance", "--mechanism",
                 "em", "--param", "scale=literal", "--eps", "1", "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    status = next(line for line in lines if line.startswith("status"))
    assert status.split() == ["status", "closed", "form"]
    assert sum(line.startswith("DEGENERATE     Not ε-mDP: the literal weights") for line in lines) == 1


def test_solve_runs_a_mechanisms_preset(capsys: pytest.CaptureFixture[str]) -> None:
    """`--preset NAME` starts from the mechanism's preset; --eps and --param apply on top; `mechanisms` lists them."""
    assert main(["solve", "--city", "rome", "--k", "60", "--outputs", "20", "--cost", "distance", "--mechanism",
                 "lp-bd", "--preset", "stabilised", "--eps", "8", "--no-cache"]) in (0, 1)
    out = capsys.readouterr().out
    assert '"stabilise": 0.3' in out and '"row_cuts": true' in out and '"eps": 8.0' in out
    assert main(["mechanisms"]) == 0
    assert "--preset stabilised" in capsys.readouterr().out


def test_a_preset_sets_its_problem_and_cmdp_states_its_own_floor(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """C-mDP's `--preset paper` builds the paper's problem (Rome, stations in a 3 km disc, Y = X) where the user gave
    no option (`--k` given wins); the CLI and the export state the floor and privacy cost under C-mDP's own model,
    which differ from the location marginal's under the problem's cost (Y = X: a floor of 0 there)."""
    out = tmp_path / "c.json"
    assert main(["solve", "--mechanism", "cmdp", "--preset", "paper", "--k", "10", "--eps", "1", "--param",
                 "vehicles=250", "--param", "steps=40", "--no-cache", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "--city rome --all-outputs --region centre:3" in text and "--k 16" not in text
    assert "problem        rome: K = 10, |Y| = 10" in text
    assert "no-privacy floor 0.00 m" in text and "\nown model      under C-mDP's own model" in text
    own = json.loads(out.read_text())["own_model"]
    assert 0 < own["floor_m"] < own["utility_loss_m"]
    assert own["privacy_cost_m"] == pytest.approx(own["utility_loss_m"] - own["floor_m"])
    assert main(["solve", "--city", "rome", "--k", "20", "--outputs", "10", "--mechanism", "em", "--eps", "5",
                 "--no-cache", "--out", str(tmp_path / "e.json")]) == 0
    assert "own model" not in capsys.readouterr().out
    assert "own_model" not in json.loads((tmp_path / "e.json").read_text())


def test_kept_writes_a_stops_feasible_point_labelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``solve --kept``: a stop that kept a feasible point has it evaluated and written, its status the stop's and
    its file saying it is not the optimum; without a kept point nothing is written, as without ``--kept``."""
    import mdpviz.solve
    from mdpviz.mechanisms.em import em_matrix

    base = ["solve", "--city", "kotka", "--k", "20", "--mechanism", "em", "--time-limit", "5", "--kept"]

    def stopped(problem: Problem, mechanism: str, params: dict, **_: object) -> Result:
        return Result(mechanism=mechanism, params=dict(params), Z=None, status="time limit", eps=5.0, bound_m=1.0,
                      diagnostics={"feasible_Z": em_matrix(problem, 5.0)})

    monkeypatch.setattr(mdpviz.solve, "solve", stopped)
    monkeypatch.chdir(tmp_path)
    assert main([*base[:-1], "--out", "no.csv"]) == 1  # without --kept: nothing written, and --kept is named
    out, err = capsys.readouterr()
    assert "--kept evaluates it" in out and not (tmp_path / "no.csv").exists()
    rc = main([*base, "--out", "z.csv"])
    out, err = capsys.readouterr()
    assert rc == 0 and "kept point     the solve stopped without a mechanism" in out, (out, err)
    head = (tmp_path / "z.csv").read_text().splitlines()[:3]
    assert head[0].startswith("# verdict: Stopped at the time limit") and "not proven optimal" in head[0]
    assert head[2] == "# status: time limit"
    assert main([*base, "--out", "z.json"]) == 0
    capsys.readouterr()
    meta = json.loads((tmp_path / "z.json").read_text())
    assert meta["message"].startswith("Shown: the feasible point the solve kept when it stopped (")
    assert "m a report), not the optimum, which costs at least 1.0 m (certified bound)" in meta["message"]
    assert meta["objective_m"] == pytest.approx(meta["metrics"]["utility_loss_m"], rel=1e-9)  # the point's own cost

    def bare(problem: Problem, mechanism: str, params: dict, **_: object) -> Result:  # a stop that kept nothing
        return Result(mechanism=mechanism, params=dict(params), Z=None, status="time limit", eps=5.0)

    monkeypatch.setattr(mdpviz.solve, "solve", bare)
    rc = main([*base, "--out", "none.csv"])
    out, err = capsys.readouterr()
    assert rc == 1 and not (tmp_path / "none.csv").exists() and "kept point" not in out
    assert "nothing written to none.csv" in err
