"""Writing a solved mechanism to disk: Z and metadata as .npz, .csv or .json (chosen by extension)."""

from __future__ import annotations

import io
import json
import os
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


def check_output(path: str | Path, what: str = "output") -> Path:
    """``path`` as a Path if a result can be written there; call it before the work that produces the result.

    Raises:
        MdpvizError: an unknown extension, a folder that does not exist (it is not created), a path that is a
            folder, or a folder this user cannot write; the message names ``what`` (e.g. ``--out``) and the path.
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
    if not os.access(folder, os.W_OK | os.X_OK):
        raise MdpvizError(f"{what} `{path}`: the folder `{folder}` is not writable by this user.")
    return path


def write_result(path: str | Path, problem: Problem, result: Result, evaluation: dict[str, Any] | None) -> None:
    """Write to ``path`` atomically; the extension picks the format. The folder must exist (see ``check_output``)."""
    path = check_output(path)
    data = result_bytes(path.suffix.lower(), problem, result, evaluation)
    try:
        atomic_write(path, lambda p: p.write_bytes(data), make_parents=False)
    except OSError as e:  # full disk, permissions changed meanwhile...: nothing half-written is left behind
        raise MdpvizError(f"Could not write `{path}` ({type(e).__name__}: {e}); nothing was written.") from e
