"""Helpers shared by the dashboard's AppTest files (``test_app.py``, ``test_app_maps.py``, ``test_app_explains.py``):
open a page of ``app.py`` as a user would, and read what it shows."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

TIMEOUT = 60
APP = str(Path(__file__).resolve().parents[1] / "app.py")


def app(page: str | None = None, query: dict[str, str] | None = None) -> AppTest:
    """The app run once from ``app.py`` with ``query`` in its URL, switched to ``page``; it shows no exception."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if query:
        at.query_params.update(query)
    if page:
        at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metric(at: AppTest, label: str) -> str:
    """The value of the metric labelled ``label``."""
    return next(m.value for m in at.metric if m.label == label)


def texts(elements) -> str:
    """The values of ``elements`` (markdown, captions, alerts ...) as one string."""
    return " ".join(str(e.value) for e in elements)


def solve_button(at: AppTest, label: str = "Solve"):
    """The sidebar's button labelled ``label``."""
    return next(b for b in at.sidebar.button if b.label == label)


@contextmanager
def registered(name: str, label: str, solve: Callable[..., Any], **extra: Any) -> Iterator[None]:
    """A mechanism made for one test (paper "(test)", the ε parameter alone unless ``params`` is given), registered
    for the block and removed after it, so that no other test sees it."""
    from mdpviz.contract import _REGISTRY, epsilon_param
    from mdpviz.mechanisms import Mechanism, register

    extra.setdefault("params", (epsilon_param(),))
    register(Mechanism(name=name, label=label, paper="(test)", info="test only", solve=solve, **extra))
    try:
        yield
    finally:
        _REGISTRY.pop(name, None)
