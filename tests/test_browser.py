"""One real-browser test: the Explore map really draws (AppTest renders no WebGL).

Starts ``streamlit run app.py`` on a free localhost port, drives Debian's chromium through Playwright's Python
package (never ``playwright install``), clicks Solve and checks the map canvas and the metrics. The screenshot
goes to ``docs/screenshot.png`` when ``MDPVIZ_SCREENSHOT=1``, to the test's temporary folder otherwise.
"""

from __future__ import annotations

import io
import itertools
import os
from pathlib import Path

import numpy as np
import pytest

from mdpviz.ui.server import CHROMIUM_ARGS, canvas_drawn_fraction, chromium_path, streamlit_server

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[1]
MAP = "[data-testid='stDeckGlJsonChart']"


def _reddish_share(png: bytes) -> float:
    """Share of pixels coloured like the distribution layer (orange-red), absent from roads and secrets."""
    from PIL import Image

    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3).astype(int)
    r, g, b = rgb[:, 0], rgb[:, 1], rgb[:, 2]
    return float(((r > 170) & (g < 140) & (b < 110)).mean())


def test_explore_map_draws_after_solve(tmp_path: Path) -> None:
    chromium = chromium_path()
    if chromium is None:
        pytest.skip("Debian chromium is not installed (apt-get install chromium); the map needs a real browser")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")

    shot = ROOT / "docs" / "screenshot.png" if os.environ.get("MDPVIZ_SCREENSHOT") == "1" else tmp_path / "explore.png"
    with streamlit_server({"MDPVIZ_CACHE_DIR": str(tmp_path / "cache")}) as url, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"{url}/explore", timeout=30_000)
            page.wait_for_selector("text=Not solved yet", timeout=30_000)
            page.wait_for_selector(f"{MAP} canvas", timeout=30_000)
            page.get_by_role("button", name="Solve", exact=True).click()
            page.wait_for_selector("[data-testid='stMetric']", timeout=30_000)
            metrics = page.locator("[data-testid='stMetric']").all_inner_texts()
            assert any("Utility loss (m)" in m for m in metrics), metrics
            assert any("mDP violation ratio" in m for m in metrics), metrics
            loss = next(m for m in metrics if "Utility loss" in m).split("\n")[-1]
            assert float(loss) > 0
            page.wait_for_function(
                "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=30_000)
            # deck.gl draws asynchronously: poll the canvas until the distribution layer shows up
            png = b""
            for _ in range(40):
                page.wait_for_timeout(250)
                png = page.locator(MAP).first.screenshot()
                if canvas_drawn_fraction(png) > 0.02 and _reddish_share(png) > 0.0005:
                    break
            drawn, red = canvas_drawn_fraction(png), _reddish_share(png)
            assert drawn > 0.02, f"map canvas looks empty: {drawn:.4f} of pixels differ from the background"
            assert red > 0.0005, f"no distribution points drawn on the map ({red:.5f} reddish pixels)"
            # a click on a point of the map selects that secret (pydeck on_select), and the URL follows
            box = page.locator(MAP).first.bounding_box()
            field = page.get_by_label("Selected secret x (index)", exact=True).and_(page.locator("input"))
            before = field.input_value()
            changed = None
            for fx, fy in itertools.product((0.45, 0.3, 0.6, 0.75), (0.45, 0.3, 0.6, 0.75)):
                page.mouse.click(box["x"] + fx * box["width"], box["y"] + fy * box["height"])
                page.wait_for_timeout(400)
                page.wait_for_function(
                    "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=30_000)
                if field.input_value() != before:
                    changed = field.input_value()
                    break
            assert changed is not None, "no click on the map selected a secret"
            page.wait_for_function(f"() => window.location.search.includes('secret={changed}')", timeout=10_000)
            page.mouse.move(5, 5)  # no tooltip in the screenshot
            # show the top of the sidebar (mechanism and ε) in the screenshot, not the Solve button it scrolled to
            page.evaluate("() => document.querySelector('[data-testid=\"stSidebarContent\"]')?.scrollTo(0, 0)")
            page.wait_for_timeout(300)
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot))
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()
