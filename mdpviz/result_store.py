"""The solve cache's file format: a Result as data (one ``.npz``: numpy arrays plus a JSON tree), never code.

Loading runs no code from the file: ``numpy.load(..., allow_pickle=False)`` reads plain arrays, the rest is JSON,
and the only objects rebuilt are the dataclasses of :data:`ALLOWED` (by name, from this allowlist; nothing is
imported by a name found in the file). A loaded entry is checked against the problem it is for (shape, dtype,
row sums, entries ≥ 0, status, key and code version) and is treated as absent when any check fails.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .aipo.lattice import AnchorInterpolant, Lattice
from .contract import Result

FORMAT = 1
# statuses worth keeping: a time limit or an interruption may end differently next time
CACHEABLE = ("optimal", "closed form", "sampled", "gap reached", "iteration limit")
# the only classes an entry may rebuild (Result.rows of AIPO is an AnchorInterpolant over a Lattice)
ALLOWED: dict[str, type] = {cls.__name__: cls for cls in (Result, AnchorInterpolant, Lattice)}
ROW_SUM_TOL = 1e-9
MAX_ENTRY_BYTES = 4 << 30  # an entry claiming more than 4 GiB uncompressed is refused before reading it
_TAGS = ("__array__", "__scalar__", "__tuple__", "__dict__", "__object__")


class StoreError(Exception):
    """An entry that cannot be written as data (an unsupported type) or read back (corrupt, foreign, stale)."""


def encode(result: Result, meta: dict[str, Any]) -> bytes:
    """``result`` as the bytes of an ``.npz`` file; ``meta`` (key, code version) is stored beside it.

    Raises:
        StoreError: the result holds something other than numbers, strings, None, lists, tuples, dicts, numpy
            arrays (not of dtype object) and the allowlisted dataclasses.
    """
    arrays: dict[str, np.ndarray] = {}

    def enc(v: Any) -> Any:
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, np.generic):  # before int/float: np.float64 is a float subclass
            name = f"a{len(arrays)}"
            arrays[name] = np.asarray(v)
            return {"__scalar__": name}
        if isinstance(v, (int, float)):
            return v
        if isinstance(v, np.ndarray):
            if v.dtype.hasobject:
                raise StoreError(f"an array of dtype {v.dtype} cannot be stored as data")
            name = f"a{len(arrays)}"
            arrays[name] = v
            return {"__array__": name}
        if isinstance(v, tuple):
            return {"__tuple__": [enc(x) for x in v]}
        if isinstance(v, list):
            return [enc(x) for x in v]
        if isinstance(v, dict):
            if all(isinstance(k, str) and not k.startswith("__") for k in v):
                return {k: enc(x) for k, x in v.items()}
            return {"__dict__": [[enc(k), enc(x)] for k, x in v.items()]}
        cls = type(v)
        if ALLOWED.get(cls.__name__) is cls:
            fields = {f.name: enc(getattr(v, f.name)) for f in dataclasses.fields(v) if f.init}
            return {"__object__": cls.__name__, "fields": fields}
        raise StoreError(f"a {cls.__module__}.{cls.__qualname__} cannot be stored as data")

    tree = {"format": FORMAT, **meta, "result": enc(result)}
    buf = io.BytesIO()
    # numpy's stub lets **arrays bind the bool allow_pickle; the names are a0, a1, ... so they never do
    np.savez_compressed(buf, __meta__=np.array(json.dumps(tree, allow_nan=True)), **arrays)  # type: ignore[arg-type]
    return buf.getvalue()


def decode(data: Any, arrays: Any) -> Any:
    """Rebuild what :func:`encode` wrote from its JSON tree and its arrays (an ``NpzFile``)."""

    def dec(v: Any) -> Any:
        if isinstance(v, list):
            return [dec(x) for x in v]
        if not isinstance(v, dict):
            return v
        if len(v) == 1 and "__array__" in v:
            return arrays[_name(v["__array__"])]
        if len(v) == 1 and "__scalar__" in v:
            return arrays[_name(v["__scalar__"])][()]
        if len(v) == 1 and "__tuple__" in v:
            return tuple(dec(x) for x in v["__tuple__"])
        if len(v) == 1 and "__dict__" in v:
            return {dec(k): dec(x) for k, x in v["__dict__"]}
        if set(v) == {"__object__", "fields"}:
            cls = ALLOWED.get(v["__object__"]) if isinstance(v["__object__"], str) else None
            if cls is None:
                raise StoreError(f"class {v['__object__']!r} is not allowed in the cache")
            names = {f.name for f in dataclasses.fields(cls) if f.init}
            if not isinstance(v["fields"], dict) or not set(v["fields"]) <= names:
                raise StoreError(f"fields of {cls.__name__} do not match this version")
            return cls(**{k: dec(x) for k, x in v["fields"].items()})
        if any(k in _TAGS for k in v):
            raise StoreError("malformed tag in the cache entry")
        return {k: dec(x) for k, x in v.items()}

    return dec(data)


def _name(name: Any) -> str:
    if not isinstance(name, str) or name == "__meta__":
        raise StoreError("malformed array reference in the cache entry")
    return name


def read(path: Path) -> tuple[dict[str, Any], Result]:
    """The stored meta (key, code version, ...) and Result of the entry at ``path``.

    Raises:
        FileNotFoundError: no entry.
        StoreError: the file is not a readable entry of this format (truncated, corrupt, foreign).
    """
    try:
        with zipfile.ZipFile(path) as z:
            if sum(info.file_size for info in z.infolist()) > MAX_ENTRY_BYTES:
                raise StoreError("entry too large")
        with np.load(path, allow_pickle=False) as npz:
            tree = json.loads(str(npz["__meta__"][()]))
            if not isinstance(tree, dict) or tree.get("format") != FORMAT:
                raise StoreError("not an entry of this format")
            result = decode(tree.pop("result"), npz)
    except FileNotFoundError:
        raise
    except StoreError:
        raise
    except Exception as e:  # noqa: BLE001 - untrusted bytes (zlib, zip, json, numpy errors...): an unreadable entry
        raise StoreError(f"unreadable entry ({type(e).__name__}: {e})") from e
    if not isinstance(result, Result):
        raise StoreError("the entry holds no Result")
    return tree, result


def problems(result: Result, k: int, m: int, mechanism: str, params: dict[str, Any]) -> list[str]:
    """Why a loaded result cannot be the answer for this problem (K × M), mechanism and parameters; [] when fine."""
    out = []
    if result.mechanism != mechanism or result.params != params:
        out.append("mechanism or parameters differ")
    if result.status not in CACHEABLE:
        out.append(f"status {result.status!r} is not kept")
    Z = result.Z
    if not isinstance(Z, np.ndarray) or Z.dtype != np.float64 or Z.shape != (k, m):
        shape = getattr(Z, "shape", None)
        out.append(f"Z is {type(Z).__name__} {getattr(Z, 'dtype', '')} of shape {shape}, not float64 ({k}, {m})")
    elif not (np.isfinite(Z).all() and Z.min(initial=0.0) >= 0.0
              and np.abs(Z.sum(axis=1) - 1.0).max(initial=0.0) <= ROW_SUM_TOL):
        out.append("Z is not row-stochastic (entries ≥ 0, rows summing to 1 ± 1e-9)")
    if not (isinstance(result.eps, (int, float)) and math.isfinite(result.eps)):
        out.append("eps is not a number")
    return out
