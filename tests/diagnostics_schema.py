"""Checking a result's diagnostics against the TypedDict its mechanism declares (``Mechanism.diagnostics``), at
run time: mypy checks the keys a mechanism writes in its code, this checks what a solve actually returns."""

from __future__ import annotations

from collections.abc import Mapping
from types import UnionType
from typing import Any, NotRequired, Union, get_args, get_origin, get_type_hints, is_typeddict


def undeclared(schema: Any, value: Any, path: str = "diagnostics") -> list[str]:
    """Where ``value`` departs from the TypedDict ``schema``: keys it does not declare, required keys missing, and
    the same inside every value (or list item) whose declared type is itself a TypedDict; None passes where the
    type allows it. (Python 3.11 computes ``__required_keys__`` wrongly under postponed annotations, so the
    required keys are read from the hints: every key of a total TypedDict that is not ``NotRequired``.)"""
    if not isinstance(value, Mapping):
        return [f"{path} is a {type(value).__name__}, not a mapping"]
    hints = get_type_hints(schema, include_extras=True)
    optional = {k for k, t in hints.items() if get_origin(t) is NotRequired}
    required = set(hints) - optional if schema.__total__ else set()
    found = [f"{path}[{k!r}] is not declared in {schema.__name__}" for k in value if k not in hints]
    found += [f"{path}[{k!r}] is required by {schema.__name__} but missing" for k in required if k not in value]
    for key, item in value.items():
        hint = hints.get(key)
        hint = get_args(hint)[0] if get_origin(hint) is NotRequired else hint
        if item is None or hint is None:
            continue
        if get_origin(hint) is list and is_typeddict(get_args(hint)[0]):
            for n, element in enumerate(item):
                found += undeclared(get_args(hint)[0], element, f"{path}[{key!r}][{n}]")
            continue
        inner = [t for t in (get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,))
                 if is_typeddict(t)]
        if inner:  # a union of TypedDicts: the value must fit one of them
            tries = [undeclared(t, item, f"{path}[{key!r}]") for t in inner]
            found += min(tries, key=len)
    return found
