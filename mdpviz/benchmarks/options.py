"""Checks of the benchmarks' command-line options, run by each suite's ``main`` before any work.

A bad value ends in one ``error:`` line that names the option as it is spelled on the command line (an
``MdpvizError``, which ``python -m mdpviz`` prints with exit code 2), never in a report whose rows all say
"refused" or "crashed" after the work, and never in a traceback. Output files are checked by ``report.out_stem``
and the sweep runner's options by ``grid.check_options``.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..cities import city_info, default_city
from ..errors import MdpvizError, ParameterError
from ..mechanisms import get_mechanism
from ..paths import read_only
from ..problem import MAX_K
from ..region import parse_region


def check_folder(folder: Path, what: str) -> None:
    """Refuse a folder that is missing (it is not created), is a file, or is read-only; ``what`` opens the message."""
    if not folder.exists():
        raise MdpvizError(f"{what}: the folder `{folder}` does not exist (it is not created for you); create it "
                          "first or choose another path.")
    if not folder.is_dir():
        raise MdpvizError(f"{what}: `{folder}` is a file, not a folder.")
    if read_only(folder) or not os.access(folder, os.X_OK):
        raise MdpvizError(f"{what}: the folder `{folder}` is read-only; nothing is written there.")


def check_file(path: Path, what: str) -> None:
    """Refuse a file path that is a folder or an existing read-only file (it would be replaced)."""
    if path.is_dir():
        raise MdpvizError(f"{what}: `{path}` is a folder; it cannot be written as a file.")
    if path.exists() and read_only(path):
        raise MdpvizError(f"{what}: `{path}` exists and is read-only; it is not replaced. Choose another name or "
                          "make it writable first.")


def check_time_limit(value: float, option: str = "--time-limit") -> None:
    """Refuse a time limit that is not a finite number of seconds > 0 (``-1``, ``0``, ``nan``, ``inf``)."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise MdpvizError(f"`{option}` = {value:g} is invalid: give a positive, finite number of seconds per solve.")


def check_whole(value: int, option: str, low: int, what: str) -> None:
    """Refuse a whole number below ``low`` (``what`` says what the option counts)."""
    if value < low:
        raise MdpvizError(f"`{option}` = {value} is invalid: {what} must be ≥ {low}.")


def check_param(mechanism: str, param: str, values: float | Iterable[float], option: str) -> None:
    """Refuse a value outside the range of ``mechanism``'s parameter ``param`` (its schema), naming ``option``."""
    spec = next(p for p in get_mechanism(mechanism).params if p.name == param)
    for value in [values] if isinstance(values, (int, float)) else values:
        try:
            spec.validate(value)
        except ParameterError as e:
            raise MdpvizError(str(e).replace(f"Parameter `{param}`", f"`{option}`", 1)) from None


def check_city(city: str | None, option: str = "--city") -> Any:
    """The ``CityInfo`` of ``city`` (None: the default city); an empty or unknown name is refused."""
    if city is not None and not city.strip():
        raise MdpvizError(f"`{option}` is empty; give a city slug from `python -m mdpviz cities`, or leave it out.")
    try:
        return city_info(default_city() if city is None else city)
    except MdpvizError as e:
        raise MdpvizError(f"`{option}`: {e}") from None


def check_ks(ks: Sequence[int], info: Any, option: str) -> None:
    """Refuse no K at all, or a K outside [2, nodes of the city] (and above what mdpviz handles)."""
    if not ks:
        raise MdpvizError(f"`{option}` gives no K; give at least one number of secrets, e.g. {option} 100.")
    top = min(info.nodes, MAX_K)
    for k in ks:
        if not 2 <= k <= top:
            raise MdpvizError(f"`{option}` = {k} is invalid: K must lie in [2, {top:,}] ({info.slug} has "
                              f"{info.nodes:,} road nodes; mdpviz handles at most {MAX_K:,} secrets).")


def check_outputs(outputs: int, ks: Sequence[int], option: str = "--outputs", clamped: bool = True) -> None:
    """Refuse |Y| < 1; unless ``clamped`` (the suite uses min(outputs, K)), also |Y| above the smallest K."""
    check_whole(outputs, option, 1, "|Y|")
    if not clamped and ks and outputs > min(ks):
        raise MdpvizError(f"`{option}` = {outputs} is invalid: |Y| must not exceed the smallest K ({min(ks)}); "
                          f"lower {option} or raise K.")


def check_region(region: str, info: Any, option: str = "--region") -> None:
    """Refuse an empty or malformed region (``mdpviz.region``); ``whole`` is the whole city."""
    if not region.strip():
        raise MdpvizError(f"`{option}` is empty; give `whole`, `centre:R` (km), `LAT,LON,R` or `S,W,N,E`.")
    try:
        parse_region(region, info.centre)
    except MdpvizError as e:
        raise MdpvizError(f"`{option}`: {e}") from None


def build_first(build: Callable[[], Any], names: dict[str, str]) -> Any:
    """``build()`` (a problem, built before any solve); a refusal names the options (``names``: the library's name of
    a setting -> its option, e.g. ``{"k": "--k"}``) instead of the library's settings."""
    try:
        return build()
    except MdpvizError as e:
        text = str(e)
        for name, option in names.items():
            text = text.replace(f"`{name}` = ", f"`{option}` = ")
        raise type(e)(text) from None


def comma_list(kind: Callable[[str], Any], what: str, example: str) -> Callable[[str], list[Any]]:
    """An argparse type: comma-separated values of ``kind``, at least one (``what`` names one value in the message,
    ``example`` shows a good list); repeated values are kept once."""
    def parse(text: str) -> list[Any]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{text!r} gives no value; write comma-separated values, e.g. {example}")
        out = []
        for item in items:
            try:
                out.append(kind(item))
            except ValueError:
                raise argparse.ArgumentTypeError(f"`{item}` is not {what}; write comma-separated values, e.g. "
                                                 f"{example}") from None
        return list(dict.fromkeys(out))

    return parse
