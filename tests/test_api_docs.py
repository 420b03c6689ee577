"""The public API (what ``mdpviz`` and the mechanism registry export, and ``solve``) documents itself in numpydoc
sections: Parameters and Returns for functions, Attributes for classes."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import mdpviz
import mdpviz.mechanisms
import mdpviz.solve


def public_api() -> list[tuple[str, Any]]:
    """(name, object) of every documented export: functions and classes, not constants or type aliases."""
    names = [(f"mdpviz.{n}", getattr(mdpviz, n)) for n in mdpviz.__all__]
    names += [(f"mdpviz.mechanisms.{n}", getattr(mdpviz.mechanisms, n)) for n in mdpviz.mechanisms.__all__]
    names.append(("mdpviz.solve.solve", mdpviz.solve.solve))
    return [(n, o) for n, o in names if inspect.isclass(o) or callable(o) and hasattr(o, "__wrapped__")
            or inspect.isfunction(o)]


def sections(doc: str) -> set[str]:
    """The numpydoc section titles of a docstring (a title line followed by a line of dashes)."""
    lines = [line.strip() for line in inspect.cleandoc(doc).splitlines()]
    return {a for a, b in zip(lines, lines[1:]) if b and set(b) == {"-"} and len(b) >= len(a)}


@pytest.mark.parametrize("name,obj", public_api(), ids=lambda v: v if isinstance(v, str) else "")
def test_public_api_has_numpydoc_sections(name: str, obj: Any) -> None:
    found = sections(obj.__doc__ or "")
    if inspect.isclass(obj):
        if issubclass(obj, Exception):
            return  # an exception documents itself in a sentence
        assert "Attributes" in found, f"{name}: no Attributes section"
        return
    fn = inspect.unwrap(obj)
    if inspect.signature(fn).parameters:
        assert "Parameters" in found, f"{name}: no Parameters section"
    assert "Returns" in found, f"{name}: no Returns section"


def test_the_public_api_is_all_checked() -> None:
    checked = {n for n, _ in public_api()}
    assert {"mdpviz.build_problem", "mdpviz.Problem", "mdpviz.mechanisms.Result", "mdpviz.solve.solve",
            "mdpviz.code_version", "mdpviz.mechanisms.get_mechanism"} <= checked
