"""Helpers shared by the dashboard's AppTest files (``test_app.py``, ``test_app_maps.py``, ``test_app_explains.py``):
open a page of ``app.py`` as a user would, and read what it shows."""

from __future__ import annotations

from pathlib import Path

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
