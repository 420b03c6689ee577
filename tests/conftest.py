"""Shared test setup: an isolated cache folder per test, and opt-in network tests (``--runlive``)."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Module- and session-scoped fixtures run before the per-test cache below: give them a private cache too,
    so no test ever reads or writes the user's real cache."""
    import os
    import tempfile

    os.environ["MDPVIZ_CACHE_DIR"] = tempfile.mkdtemp(prefix="mdpviz-test-cache-")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runlive", action="store_true", help="run tests that need the network")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runlive"):
        return
    skip = pytest.mark.skip(reason="needs network: run with --runlive")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own empty cache folder, so no test sees another's downloads or results."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("MDPVIZ_CACHE_DIR", str(cache))
    return cache
