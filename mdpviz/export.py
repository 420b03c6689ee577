"""Writing a solved mechanism to disk: Z and metadata as .npz, .csv or .json (chosen by extension)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from .errors import MdpvizError
from .mechanisms.base import Result
from .paths import atomic_write
from .problem import Problem

FORMATS = (".npz", ".csv", ".json")


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


def metadata(problem: Problem, result: Result, evaluation: dict[str, Any] | None) -> dict[str, Any]:
    """Everything but Z, JSON-ready: problem settings, parameters, status, timings, sizes, diagnostics, metrics."""
    return _jsonable({
        "mechanism": result.mechanism, "params": result.params, "status": result.status, "message": result.message,
        "eps_km_inv": result.eps, "claim": result.claim, "timings_s": result.timings, "lp_size": result.lp_size,
        "objective_m": result.objective_m, "lower_bound_m": result.bound_m, "diagnostics": result.diagnostics,
        "metrics": evaluation, "problem": problem.summary(),
    })


def result_bytes(fmt: str, problem: Problem, result: Result, evaluation: dict[str, Any] | None) -> bytes:
    """The file content for ``fmt`` (``.npz``, ``.csv`` or ``.json``); used by the CLI and download buttons."""
    meta = metadata(problem, result, evaluation)
    Z = result.Z if result.Z is not None else np.zeros((0, 0))
    if fmt == ".json":
        return json.dumps({**meta, "Z": Z.tolist(), "x_latlon": np.column_stack([problem.x_lat, problem.x_lon]).tolist(),
                           "y_index": problem.y_index.tolist()}, indent=1).encode()
    if fmt == ".csv":
        buf = io.StringIO()
        header = "x_lat,x_lon," + ",".join(f"y{k}_{lat:.6f}_{lon:.6f}" for k, (lat, lon) in
                                           enumerate(zip(problem.y_lat, problem.y_lon, strict=True)))
        rows = np.column_stack([problem.x_lat, problem.x_lon, Z]) if Z.size else np.zeros((0, 2))
        np.savetxt(buf, rows, delimiter=",", header=header, comments="", fmt="%.12g")
        return buf.getvalue().encode()
    if fmt == ".npz":
        buf2 = io.BytesIO()
        np.savez_compressed(buf2, Z=Z, x_lat=problem.x_lat, x_lon=problem.x_lon, y_lat=problem.y_lat,
                            y_lon=problem.y_lon, y_index=problem.y_index, metadata=json.dumps(meta))
        return buf2.getvalue()
    raise MdpvizError(f"Unknown output format `{fmt}`; use one of {', '.join(FORMATS)}.")


def write_result(path: str | Path, problem: Problem, result: Result, evaluation: dict[str, Any] | None) -> None:
    """Write to ``path`` atomically; the extension picks the format."""
    path = Path(path)
    data = result_bytes(path.suffix.lower(), problem, result, evaluation)
    atomic_write(path, lambda p: p.write_bytes(data))
