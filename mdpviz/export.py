"""Writing a solved mechanism to disk, the format chosen by extension: Z and metadata as .npz, .csv or .json, or
the secrets and outputs as map layers for a GIS (.geojson, .gpkg). Every file says first what the result is: its
verdict, whether it is degenerate, its privacy claim and the violations measured against it."""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import metrics
from .contract import Result, get_mechanism
from .errors import MdpvizError
from .metrics import Evaluation
from .paths import atomic_write, read_only
from .problem import Problem
from .reference import Reference, own_model
from .verdict import against_claim, claims_all_pairs, degenerate_text, verdict

FORMATS = (".npz", ".csv", ".json", ".geojson", ".gpkg")


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    return value


def result_name(result: Result) -> str:
    """The mechanism's name, marked where the solve ran our variant of a paper's method (its preset ``ours``)."""
    try:
        mech = get_mechanism(result.mechanism)
    except MdpvizError:  # a result of a mechanism this process has not registered: its name alone
        return result.mechanism
    ours = mech.label_for(result.params) != mech.label
    return result.mechanism + (" (our variant, not the paper's)" if ours else "")


def privacy(result: Result, evaluation: Evaluation | None) -> dict[str, Any]:
    """What the file must say about privacy: the verdict, the degenerate flag, the claim and its measured check."""
    v = verdict(result, evaluation, label=result_name(result))
    out: dict[str, Any] = {"verdict": {"level": v.level, "headline": v.headline, "claim_line": v.claim_line,
                                       "short": v.short},
                           "degenerate": bool(degenerate_text(result)), "degenerate_why": degenerate_text(result),
                           "claim": result.claim, "claim_covers_all_pairs": claims_all_pairs(result.claim)}
    if evaluation is not None:
        all_pairs = evaluation["violations"]
        out["all_pairs"] = {"violated": all_pairs["violated_pairs"], "checked": all_pairs["checked_pairs"],
                            "tolerance_relative": all_pairs["tolerance"]}
    if (measured := against_claim(result, evaluation)) is not None:
        out["against_claim"] = {"violated": measured.violated, "checked": measured.checked, "unit": measured.unit,
                                "check": measured.check}
    return out


def yardsticks(evaluation: Evaluation | None, ref: Reference | None) -> dict[str, Any]:
    """The loss read against the no-privacy floor, and against the exact LP where it was solved (``ref``)."""
    if evaluation is None:
        return {}
    loss, floor = float(evaluation["utility_loss_m"]), float(evaluation["floor_m"])
    out: dict[str, Any] = {"utility_loss_m": loss, "floor_m": floor, "privacy_cost_m": loss - floor}
    if ref is not None:
        out.update(lp_optimum_m=ref.lp_m, lp_lower_bound_m=ref.lp_bound_m, lp_status=ref.lp_status,
                   privacy_cost_vs_lp=ref.share_of_lp(loss))
    return out


def metadata(problem: Problem, result: Result, evaluation: Evaluation | None,
             ref: Reference | None = None) -> dict[str, Any]:
    """Everything but Z, JSON-ready: first the verdict and privacy (see :func:`privacy`) and what the loss is read
    against (the floor; the exact LP with ``ref``), then problem settings, parameters, status, timings, sizes,
    diagnostics, metrics."""
    meta: dict[str, Any] = _jsonable({
        **privacy(result, evaluation), **yardsticks(evaluation, ref),
        **({"own_model": own} if (own := own_model(result)) is not None else {}),
        "mechanism": result.mechanism, "params": result.params, "status": result.status, "message": result.message,
        "eps_km_inv": result.eps, "timings_s": result.timings, "lp_size": result.lp_size,
        "objective_m": result.objective_m, "lower_bound_m": result.bound_m, "diagnostics": result.diagnostics,
        "metrics": evaluation, "problem": problem.summary(),
    })
    return meta


def _csv_comments(meta: dict[str, Any]) -> str:
    """The lines a CSV starts with (``#``: skipped by ``numpy.loadtxt`` and ``pandas.read_csv(comment="#")``)."""
    lines = [f"verdict: {meta['verdict']['headline']}", f"degenerate: {meta['degenerate_why'] or 'no'}",
             f"status: {meta['status']}", f"claim: {meta['claim']}"]
    if against := meta.get("against_claim"):
        lines.append(f"against the claim: {against['violated']} of {against['checked']} {against['unit']} violate "
                     f"epsilon-mDP ({against['check']})")
    return "".join(f"# {line}\n" for line in lines)


def geo_frames(problem: Problem, result: Result) -> tuple[Any, Any]:
    """(secrets, outputs) as point layers in WGS 84 for a GIS.

    Secrets: index, prior, expected loss (m), the most likely report (its output index, position and
    probability), and ``breaches``: the ordered pairs (this secret, another) whose ratio exceeds e^{ε·d} in the
    claim's metric (all pairs; for a narrower claim some of them are outside it, see the file's ``claim``).
    Outputs: index and the probability that a report is this output.
    """
    # local: geopandas loads in about 0.15 s; only the GIS formats need it (kept off the CLI's and dashboard's start)
    import geopandas as gpd

    if result.Z is None:
        raise MdpvizError(f"There is no mechanism to export (status {result.status}).")
    Z = result.Z
    top = Z.argmax(axis=1)
    b = metrics.cone_breaches(Z, result.eps * metrics.check_distance(problem, result.check_metric))
    secrets = gpd.GeoDataFrame({
        "secret": np.arange(problem.k), "lat": problem.x_lat, "lon": problem.x_lon, "prior": problem.p,
        "expected_loss_m": metrics.per_secret_loss_m(problem, Z), "likely_report": top,
        "likely_report_lat": problem.y_lat[top], "likely_report_lon": problem.y_lon[top],
        "likely_report_prob": Z[np.arange(problem.k), top],
        "breaches": np.bincount(b.i, minlength=problem.k)},
        geometry=gpd.points_from_xy(problem.x_lon, problem.x_lat), crs="EPSG:4326")
    outputs = gpd.GeoDataFrame({"output": np.arange(problem.m), "lat": problem.y_lat, "lon": problem.y_lon,
                                "report_prob": problem.p @ Z},
                               geometry=gpd.points_from_xy(problem.y_lon, problem.y_lat), crs="EPSG:4326")
    return secrets, outputs


def _geo_bytes(fmt: str, problem: Problem, result: Result, meta: dict[str, Any]) -> bytes:
    """GeoJSON (one collection: secrets, then outputs, ``kind`` telling them apart; the metadata as a foreign
    member ``mdpviz``) or GeoPackage (layers ``secrets`` and ``outputs``; the metadata as its JSON in the dataset
    metadata item ``mdpviz``)."""
    secrets, outputs = geo_frames(problem, result)
    if fmt == ".geojson":
        both = pd.concat([secrets.assign(kind="secret"), outputs.assign(kind="output")], ignore_index=True)
        for column in ("secret", "likely_report", "breaches", "output"):  # whole numbers, not the concat's floats
            both[column] = both[column].astype("Int64")
        collection = json.loads(both.to_json(na="drop", drop_id=True))
        return json.dumps({"type": collection.pop("type"), "mdpviz": meta, **collection}).encode()
    with tempfile.TemporaryDirectory(prefix="mdpviz-gpkg-") as folder:
        path = Path(folder) / "result.gpkg"
        secrets.to_file(path, layer="secrets", driver="GPKG", engine="pyogrio",
                        dataset_metadata={"mdpviz": json.dumps(meta)})
        outputs.to_file(path, layer="outputs", driver="GPKG", engine="pyogrio", append=False)
        return path.read_bytes()


def result_bytes(fmt: str, problem: Problem, result: Result, evaluation: Evaluation | None,
                 ref: Reference | None = None) -> bytes:
    """The file content for ``fmt`` (one of :data:`FORMATS`); used by the CLI and download buttons.

    Every format carries the verdict, the degenerate flag, the claim and the privacy measured against it: in its
    metadata (JSON, NPZ, GeoJSON, GeoPackage) or as ``#`` lines before the header (CSV).
    """
    meta = metadata(problem, result, evaluation, ref)
    if fmt in (".geojson", ".gpkg"):
        return _geo_bytes(fmt, problem, result, meta)
    Z = result.Z if result.Z is not None else np.zeros((0, 0))
    if fmt == ".json":
        latlon = np.column_stack([problem.x_lat, problem.x_lon]).tolist()
        return json.dumps({**meta, "Z": Z.tolist(), "x_latlon": latlon,
                           "y_index": problem.y_index.tolist()}, indent=1).encode()
    if fmt == ".csv":
        buf = io.StringIO()
        header = "x_lat,x_lon," + ",".join(f"y{k}_{lat:.6f}_{lon:.6f}" for k, (lat, lon) in
                                           enumerate(zip(problem.y_lat, problem.y_lon, strict=True)))
        rows = np.column_stack([problem.x_lat, problem.x_lon, Z]) if Z.size else np.zeros((0, 2))
        np.savetxt(buf, rows, delimiter=",", header=_csv_comments(meta) + header, comments="", fmt="%.12g")
        return buf.getvalue().encode()
    if fmt == ".npz":
        buf2 = io.BytesIO()
        np.savez_compressed(buf2, Z=Z, x_lat=problem.x_lat, x_lon=problem.x_lon, y_lat=problem.y_lat,
                            y_lon=problem.y_lon, y_index=problem.y_index, metadata=json.dumps(meta))
        return buf2.getvalue()
    raise MdpvizError(f"Unknown output format `{fmt}`; use one of {', '.join(FORMATS)}.")


def check_output(path: str | Path, what: str = "output") -> Path:
    """``path`` as a Path if a result can be written there; call it before the work that produces the result.

    Raises:
        MdpvizError: an unknown extension, a folder that does not exist (it is not created), a path that is a
            folder, a folder this user cannot write, or an existing file that is read-only; the message names
            ``what`` (e.g. ``--out``) and the path.
    """
    path = Path(path)
    if path.is_dir():
        raise MdpvizError(f"{what} `{path}` is a folder; give a file name ending in {', '.join(FORMATS)}.")
    if path.suffix.lower() not in FORMATS:
        raise MdpvizError(f"{what} `{path}`: unknown format `{path.suffix or '(no extension)'}`; "
                          f"use one of {', '.join(FORMATS)}.")
    folder = path.parent
    if not folder.is_dir():
        raise MdpvizError(f"{what} `{path}`: the folder `{folder}` does not exist (it is not created for you); "
                          "create it first or choose another path.")
    if read_only(folder) or not os.access(folder, os.X_OK):
        raise MdpvizError(f"{what} `{path}`: the folder `{folder}` is read-only; nothing is written there.")
    if path.is_file() and read_only(path):  # a rename would replace it even so: respect its read-only bits
        raise MdpvizError(f"{what} `{path}` exists and is read-only; it is not replaced. Choose another path or "
                          "make it writable first.")
    return path


def write_result(path: str | Path, problem: Problem, result: Result, evaluation: Evaluation | None,
                 ref: Reference | None = None) -> None:
    """Write to ``path`` atomically; the extension picks the format. The folder must exist (see ``check_output``)."""
    path = check_output(path)
    data = result_bytes(path.suffix.lower(), problem, result, evaluation, ref)
    try:
        atomic_write(path, lambda p: p.write_bytes(data), make_parents=False)
    except OSError as e:  # full disk, permissions changed meanwhile...: nothing half-written is left behind
        raise MdpvizError(f"Could not write `{path}` ({type(e).__name__}: {e}); nothing was written.") from e
