"""The load test's protocol-level client (``scripts/load_test.py``) against a real ``streamlit run app.py``.

One session on a small city, as the load test runs it: the page and its static files, Streamlit's websocket, the
map, Solve, the metrics. Asserts what the session reached and checked, never how fast (CI machines are loaded).
"""

from __future__ import annotations

import asyncio
import doctest
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from mdpviz.ui.server import streamlit_server

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "load_test.py"


def _load_test() -> ModuleType:
    """``scripts/load_test.py`` as a module (scripts/ is no package)."""
    if "load_test" in sys.modules:
        return sys.modules["load_test"]
    spec = importlib.util.spec_from_file_location("load_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["load_test"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_one_protocol_session_reaches_the_map_and_the_right_loss(tmp_path: Path) -> None:
    lt = _load_test()
    s = lt.Session(1, "west-oakland", 40, 20, "em", 10.0)
    with streamlit_server({"MDPVIZ_CACHE_DIR": str(tmp_path / "server-cache")}, timeout_s=60) as url:
        asyncio.run(lt.protocol_session(url, s, timeout_s=90))
    lt.check_loss(s)
    assert s.problems == [], s.problems  # no exception or error box, own settings shown and kept, loss checked
    assert s.text_s is not None and s.map_s is not None, "the map never arrived"
    assert s.solve_s is not None, "no metric after Solve"
    assert s.shown_loss == lt.expected_loss(s.row) != ""
    assert s.received > 0  # the page came over the websocket ...
    assert s.requests > 5 and s.fetched > 0  # ... and the page, its scripts and the map's chunk and image over HTTP


def test_bad_flags_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    lt = _load_test()
    for argv in (["--sessions", "0"], ["--sessions", "2", "--browser-sessions", "3"], ["--servers", "0"],
                 ["--sessions", "x"]):
        with pytest.raises(SystemExit) as e:
            lt.parse_args(argv)
        assert e.value.code == 2
        assert "Traceback" not in capsys.readouterr().err


def test_doctests() -> None:
    result = doctest.testmod(_load_test())
    assert result.attempted > 0 and result.failed == 0
