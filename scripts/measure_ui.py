"""Measure the dashboard in a real browser and (optionally) screenshot every page.

    python scripts/measure_ui.py                  # prints timings
    python scripts/measure_ui.py --shots DIR      # also saves a PNG of each page into DIR
    python scripts/measure_ui.py --dark --shots D # the same in the dark theme

Numbers printed (seconds, wall clock, headless Debian chromium at 1280×800, fresh result cache):
  first_render_explore : a new browser session opens Explore on the default city -> page text / map canvas
                         shown (target < 3 s)
  solve_em             : click Solve -> the metrics appear
  reload_cached        : reload the same URL (new browser session) -> metrics of the cached result shown
  rerender_cached      : in the same session, Home -> Explore -> metrics of the cached result shown (target < 1 s)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mdpviz.ui.server import CHROMIUM_ARGS, canvas_drawn_fraction, chromium_path, streamlit_server

METRIC = "[data-testid='stMetric']"
MAP = "[data-testid='stDeckGlJsonChart'] canvas"


def wait_idle(page, timeout_ms: int = 60_000) -> None:
    """Wait until Streamlit has finished running the script (its running indicator is gone)."""
    page.wait_for_timeout(150)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shots", type=Path, help="folder for one screenshot per page")
    ap.add_argument("--dark", action="store_true", help="use the dark theme")
    ap.add_argument("--repeat", type=int, default=3, help="runs per timing (the median is printed)")
    args = ap.parse_args()
    chromium = chromium_path()
    if chromium is None:
        sys.exit("chromium not found (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    cache = tempfile.mkdtemp(prefix="mdpviz-measure-")
    env = {"MDPVIZ_CACHE_DIR": cache}
    if args.dark:
        env["STREAMLIT_THEME_BASE"] = "dark"
    with streamlit_server(env) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        # warm the server process (imports, first script compile) as a user's first visit to Home would
        page.goto(url)
        page.wait_for_selector("text=What ε means in metres", timeout=30_000)
        wait_idle(page)

        def first_render() -> tuple[float, float]:
            """A new browser session opens Explore on the default city: (to the page text, to the map canvas)."""
            ctx = browser.new_context(viewport={"width": 1280, "height": 800})
            p = ctx.new_page()
            t0 = time.perf_counter()
            p.goto(f"{url}/explore")
            p.wait_for_selector("text=Not solved yet", timeout=30_000)
            t_text = time.perf_counter() - t0
            p.wait_for_selector(MAP, timeout=30_000)
            t_map = time.perf_counter() - t0
            wait_idle(p)
            ctx.close()
            return t_text, t_map

        firsts = [first_render() for _ in range(args.repeat)]

        page.goto(f"{url}/explore")
        page.wait_for_selector("text=Not solved yet", timeout=30_000)
        wait_idle(page)
        t0 = time.perf_counter()
        page.get_by_role("button", name="Solve", exact=True).click()
        page.wait_for_selector(METRIC, timeout=60_000)
        solve_s = time.perf_counter() - t0
        wait_idle(page)
        page.wait_for_timeout(800)
        drawn = canvas_drawn_fraction(page.locator("[data-testid='stDeckGlJsonChart']").first.screenshot())
        explore_url = page.url

        backs = []
        for _ in range(args.repeat):
            # in-session: leave Explore and come back (the cached result is shown without solving)
            page.get_by_role("link", name="Home").click()
            page.wait_for_selector("text=What ε means in metres", timeout=30_000)
            wait_idle(page)
            t0 = time.perf_counter()
            page.get_by_role("link", name="Explore").click()
            page.wait_for_selector(METRIC, timeout=30_000)
            t_metrics = time.perf_counter() - t0
            page.wait_for_selector(MAP, timeout=30_000)
            backs.append((t_metrics, time.perf_counter() - t0))
            wait_idle(page)

        t0 = time.perf_counter()
        page.goto(explore_url)
        page.wait_for_selector(METRIC, timeout=30_000)
        reload_metrics = time.perf_counter() - t0
        page.wait_for_selector(MAP, timeout=30_000)
        reload_map = time.perf_counter() - t0
        wait_idle(page)

        def med(xs: list[float]) -> str:
            return f"{statistics.median(xs):.2f} s (min {min(xs):.2f})"

        print(f"runs per number      {args.repeat} (median, min); load average {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} CPUs")
        print(f"first_render_explore text {med([a for a, _ in firsts])}, map canvas {med([b for _, b in firsts])}"
              " (target < 3 s)")
        print(f"solve_em             {solve_s:.2f} s (click Solve -> metrics)")
        print(f"rerender_cached      metrics {med([a for a, _ in backs])}, map canvas {med([b for _, b in backs])}"
              " (target < 1 s: Home -> Explore in the same session, cached result)")
        print(f"reload_cached        metrics {reload_metrics:.2f} s, map canvas {reload_map:.2f} s "
              "(full page reload: new session, frontend bootstrap included)")
        print(f"map_drawn_fraction   {drawn:.3f} (share of non-background pixels in the map)")
        print(f"url                  {explore_url}")

        if args.shots:
            args.shots.mkdir(parents=True, exist_ok=True)
            suffix = "-dark" if args.dark else ""
            page.wait_for_timeout(1000)
            page.screenshot(path=str(args.shots / f"explore{suffix}.png"))
            for name, path, ready in (("home", "", "text=What ε means in metres"),
                                      ("compare", "compare", "text=Compare mechanisms"),
                                      ("tradeoff", "tradeoff", "text=Trade-off"),
                                      ("learn", "learn", "text=Learn: mDP in four steps")):
                page.goto(f"{url}/{path}")
                page.wait_for_selector(ready, timeout=30_000)
                wait_idle(page)
                buttons = {"compare": "Solve all", "tradeoff": "Run sweep"}
                if name in buttons:
                    page.get_by_role("button", name=buttons[name], exact=True).click()
                    wait_idle(page, 120_000)
                page.wait_for_timeout(1500)
                page.screenshot(path=str(args.shots / f"{name}{suffix}.png"), full_page=True)
            print(f"screenshots in {args.shots}")
        browser.close()


if __name__ == "__main__":
    main()
