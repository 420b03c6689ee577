"""The real-browser test: maps really draw (AppTest renders no WebGL), a preset explains itself, and no page
makes a request outside the app's own origin.

Starts ``streamlit run app.py`` on a free localhost port and drives Debian's chromium through Playwright's
Python package (never ``playwright install``). Every request of the browser is recorded; any host other than the
app's fails the test. The Explore screenshot goes to the test's temporary folder (``scripts/measure_ui.py
--shots docs`` regenerates the README's).
"""

from __future__ import annotations

import io
import itertools
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from mdpviz.reproduce.report import SHIPPED_DIR
from mdpviz.ui.server import CHROMIUM_ARGS, canvas_drawn_fraction, chromium_path, streamlit_server

pytestmark = pytest.mark.browser
MAP = "[data-testid='stDeckGlJsonChart']"
IDLE = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"


def _reddish_share(png: bytes) -> float:
    """Share of pixels coloured like the distribution layer (orange-red), absent from roads and secrets."""
    from PIL import Image

    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3).astype(int)
    r, g, b = rgb[:, 0], rgb[:, 1], rgb[:, 2]
    return float(((r > 170) & (g < 140) & (b < 110)).mean())


def _idle(page, timeout_ms: int = 60_000) -> None:
    page.wait_for_timeout(200)
    page.wait_for_function(IDLE, timeout=timeout_ms)


def _drawn_map(page, need_red: bool) -> bytes:
    """Poll the first map until deck.gl has drawn it (roads; the distribution layer when ``need_red``)."""
    png = b""
    for _ in range(60):
        page.wait_for_timeout(250)
        png = page.locator(MAP).first.screenshot()
        if canvas_drawn_fraction(png) > 0.02 and (not need_red or _reddish_share(png) > 0.0005):
            break
    assert canvas_drawn_fraction(png) > 0.02, "map canvas looks empty"
    if need_red:
        assert _reddish_share(png) > 0.0005, "no distribution points drawn on the map"
    return png


def test_pages_draw_explain_and_stay_on_their_origin(tmp_path: Path) -> None:
    chromium = chromium_path()
    if chromium is None:
        pytest.skip("Debian chromium is not installed (apt-get install chromium); the map needs a real browser")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")

    with streamlit_server({"MDPVIZ_CACHE_DIR": str(tmp_path / "cache")}) as url, sync_api.sync_playwright() as pw:
        origin = urlsplit(url).netloc
        requested: list[str] = []
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            context.on("request", lambda r: requested.append(r.url))
            page = context.new_page()
            _home_preset_explains_itself(page, url)
            _explore_solves_draws_and_selects_on_click(page, url, tmp_path)
            _refusals_are_visible(page, url)
            _other_pages_load(page, url)
        finally:
            browser.close()
    foreign = sorted({u for u in requested if urlsplit(u).scheme in ("http", "https", "ws", "wss")
                      and urlsplit(u).netloc != origin})
    assert not foreign, f"requests outside the app's origin: {foreign}"
    assert len(requested) > 20  # the recording did see the page's own requests


def _home_preset_explains_itself(page, url: str) -> None:
    """A person who has never seen mDP: Home, one click on a preset, and the page says what happened."""
    page.goto(url, timeout=30_000)
    page.get_by_role("button", name="Teach: EM vs LP on 30 points").click()
    page.wait_for_selector("text=Privacy promise", timeout=60_000)
    _idle(page)
    captions = " ".join(page.locator("[data-testid='stCaptionContainer']").all_inner_texts())
    assert "Privacy promise: holds on all pairs" in captions, captions
    _drawn_map(page, need_red=True)


def _explore_solves_draws_and_selects_on_click(page, url: str, tmp_path: Path) -> None:
    """Explore: solve, the verdict above the metrics, the map, a click selects a secret (then a screenshot)."""
    page.goto(f"{url}/explore", timeout=30_000)
    page.wait_for_selector("text=Not solved yet", timeout=30_000)
    page.get_by_role("button", name="Solve", exact=True).click()
    page.wait_for_selector("[data-testid='stMetric']", timeout=30_000)
    assert "kept its promise: no two secrets can be told apart by more than ε allows" in page.locator(
        "[data-testid='stAlert']").first.inner_text()
    metrics = page.locator("[data-testid='stMetric']").all_inner_texts()
    loss = next(m for m in metrics if "Utility loss" in m).split("\n")[-1]
    assert float(loss) > 0
    _idle(page)
    _drawn_map(page, need_red=True)
    box = page.locator(MAP).first.bounding_box()
    field = page.get_by_label("Selected secret x (index)", exact=True).and_(page.locator("input"))
    before, changed = field.input_value(), None
    for fx, fy in itertools.product((0.45, 0.3, 0.6, 0.75), (0.45, 0.3, 0.6, 0.75)):
        page.mouse.click(box["x"] + fx * box["width"], box["y"] + fy * box["height"])
        page.wait_for_timeout(400)
        page.wait_for_function(IDLE, timeout=30_000)
        if field.input_value() != before:
            changed = field.input_value()
            break
    assert changed is not None, "no click on the map selected a secret"
    page.wait_for_function(f"() => window.location.search.includes('secret={changed}')", timeout=10_000)
    page.mouse.move(5, 5)
    page.screenshot(path=str(tmp_path / "explore.png"))


def _refusals_are_visible(page, url: str) -> None:
    """Refusals are visible: an unknown page, a misspelt URL key, an out-of-range K."""
    page.goto(f"{url}/nonsense?mechanism=lp&k=99999", timeout=30_000)
    page.wait_for_selector("text=There is no page", timeout=30_000)
    body = page.locator("body").inner_text()
    assert "did you mean `mech`" in body.replace("\n", " ") or "did you mean mech" in body
    assert "k=99999 is outside [2, 5,878]" in body  # the same limits as the K box; the default is used


def _other_pages_load(page, url: str) -> None:
    """The other pages load (their charts included): Learn, and Reproduce with its claims ledger and, in its second
    tab, a report (the shipped full run where there is one) with its chart."""
    page.goto(f"{url}/learn", timeout=30_000)
    page.wait_for_selector("text=Learn: mDP in four steps", timeout=30_000)
    _idle(page)
    page.goto(f"{url}/reproduce", timeout=30_000)
    page.wait_for_selector("text=Every headline claim of the five seed papers", timeout=30_000)
    assert page.locator("text=PAnDA (CCS 2025)").first.is_visible()
    page.get_by_role("tab", name="Tables and reruns").click()
    page.wait_for_selector("h4:has-text('PAnDA Table 2')", timeout=30_000)
    _idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    if (SHIPPED_DIR / "panda-table2" / "meta.json").exists():
        assert "shipped full run" in page.locator("body").inner_text()
        page.wait_for_selector(".js-plotly-plot .scatterlayer .trace", timeout=30_000)
