"""Measure the dashboard in a real browser (headless Debian chromium, 1280×800) and optionally screenshot it.

    python scripts/measure_ui.py                          # Helsinki and Rome, 3 runs per number
    python scripts/measure_ui.py --city rome --repeat 5
    python scripts/measure_ui.py --shots docs             # also regenerate docs/screenshot-*.png (the README's)

Every number is wall-clock seconds from the user's action to what they see, the median of ``--repeat`` runs
(min and max beside it); the load average of the machine is printed before and after, since it is shared.

  first_render   a new browser session opens Explore on the city: page text, then the map drawn (the road
                 network's pixels on the canvas). Target ≤ 3 s to the map.
  solve          press Solve (EM, the default) -> metrics shown.
  cached         in the same session, Home -> Explore with a solved result: metrics, then the map redrawn.
                 Target ≤ 1 s.
  reload         a new browser session opens the result's URL (cached on disk): metrics, map.
  toggle_*       view-only controls on a solved result (colour by expected loss, violations off, another
                 secret): until the map's pixels change. Target ≤ 1 s.

"Map drawn" is detected by sampling the map's canvas (drawn into a small 2-D canvas every ~30 ms, no screenshots,
which would make the page repaint): the first sample that shows the final picture. The server's result cache is a
fresh temporary folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from datetime import UTC

from mdpviz.ui.server import CHROMIUM_ARGS, chromium_path, streamlit_server

METRIC = "[data-testid='stMetric']"
MAP = "[data-testid='stDeckGlJsonChart']"
VIEW = {"width": 1280, "height": 800}
IDLE = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"


def wait_idle(page, timeout_ms: int = 120_000) -> None:
    """Wait until Streamlit has finished running the script (its running indicator is gone)."""
    page.wait_for_timeout(100)
    page.wait_for_function(IDLE, timeout=timeout_ms)


# the map canvas drawn into a 128 × 128 2-D canvas (cheap: no screenshot, which would make the page repaint):
# [share of drawn pixels, a coarse signature of the picture]; -1 before the canvas exists
SNAPSHOT = """() => { const c = document.querySelector("[data-testid='stDeckGlJsonChart'] canvas");
  if (!c) return [-1, ""];
  const n = 128, o = document.createElement('canvas'); o.width = n; o.height = n;
  const g = o.getContext('2d'); g.drawImage(c, 0, 0, n, n); const d = g.getImageData(0, 0, n, n).data;
  let drawn = 0, sig = []; for (let i = 0; i < d.length; i += 4) { if (d[i + 3] > 0) drawn++;
    sig.push((d[i] >> 5) * 64 + (d[i + 1] >> 5) * 8 + (d[i + 2] >> 5) + (d[i + 3] > 0 ? 512 : 0)); }
  return [drawn / (n * n), sig.join(",")]; }"""


def _snapshot(page) -> tuple[float, list[int]]:
    drawn, sig = page.evaluate(SNAPSHOT)
    return float(drawn), [int(v) for v in sig.split(",")] if sig else []


def _differs(a: list[int], b: list[int]) -> bool:
    """More than 0.1 % of the sampled pixels changed (a redraw, not noise)."""
    return len(a) != len(b) or sum(x != y for x, y in zip(a, b, strict=True)) > 0.001 * len(a)


def wait_map(page, t0: float, before: list[int] | None = None, timeout_s: float = 60.0) -> float:
    """Seconds from ``t0`` until the map shows its final picture.

    The canvas is sampled until Streamlit is idle and the picture has stopped changing; the time is that of the
    first sample showing the final picture (with drawn roads, and different from ``before`` when given).
    """
    samples: list[tuple[float, list[int]]] = []
    stable, changed = 0, before is None
    while time.perf_counter() - t0 < timeout_s:
        drawn, sig = _snapshot(page)
        t = time.perf_counter() - t0
        if drawn > 0.05:
            stable = stable + 1 if samples and not _differs(sig, samples[-1][1]) else 0
            changed = changed or _differs(sig, before)  # type: ignore[arg-type]
            samples.append((t, sig))
            if changed and stable >= 8 and page.evaluate(IDLE):
                break
        page.wait_for_timeout(25)
    else:
        raise TimeoutError("the map did not settle" if changed else "the map did not change")
    final = samples[-1][1]
    return next(t for t, sig in samples if not _differs(sig, final))


def measure_city(browser, url: str, city: str, repeat: int, shots: Path | None) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        out.setdefault(name, []).append(value)

    for _ in range(repeat):
        ctx = browser.new_context(viewport=VIEW)
        p = ctx.new_page()
        t0 = time.perf_counter()
        p.goto(f"{url}/explore?city={city}")
        p.wait_for_selector("text=Not solved yet", timeout=60_000)
        add("first_render text", time.perf_counter() - t0)
        add("first_render map", wait_map(p, t0))
        wait_idle(p)
        ctx.close()

    page = browser.new_page(viewport=VIEW)
    page.goto(f"{url}/explore?city={city}")
    page.wait_for_selector("text=Not solved yet", timeout=60_000)
    wait_idle(page)
    t0 = time.perf_counter()
    page.get_by_role("button", name="Solve", exact=True).click()
    page.wait_for_selector(METRIC, timeout=120_000)
    add("solve metrics", time.perf_counter() - t0)
    wait_idle(page)
    wait_map(page, time.perf_counter())
    result_url = page.url

    for _ in range(repeat):
        page.get_by_role("link", name="Home").click()
        page.wait_for_selector("text=What ε means in metres", timeout=30_000)
        wait_idle(page)
        t0 = time.perf_counter()
        page.get_by_role("link", name="Explore").click()
        page.wait_for_selector(METRIC, timeout=30_000)
        add("cached metrics", time.perf_counter() - t0)
        add("cached map", wait_map(page, t0))
        wait_idle(page)

    for _ in range(repeat):
        ctx = browser.new_context(viewport=VIEW)
        p = ctx.new_page()
        t0 = time.perf_counter()
        p.goto(result_url)
        p.wait_for_selector(METRIC, timeout=60_000)
        add("reload metrics", time.perf_counter() - t0)
        add("reload map", wait_map(p, t0))
        wait_idle(p)
        ctx.close()

    if shots is not None:  # the solved view, before the toggles below change it
        page.mouse.move(5, 5)
        page.evaluate("() => document.querySelector('[data-testid=\"stSidebarContent\"]')?.scrollTo(0, 0)")
        page.wait_for_timeout(800)
        page.screenshot(path=str(shots / f"screenshot-explore-{city}.png"))
    toggles: list[tuple[str, Callable[[int], None]]] = [
        ("toggle colour", lambda n: page.locator("[data-testid='stRadio'] label").filter(
            has_text=("expected loss (m)", "plain")[n % 2]).click()),
        ("toggle outputs", lambda n: page.locator("[data-testid='stCheckbox']").filter(has_text="outputs Y").click()),
        ("toggle secret", lambda n: _set_secret(page, n)),
    ]
    for name, act in toggles:
        for n in range(repeat):
            page.wait_for_timeout(300)
            before = _snapshot(page)[1]
            t0 = time.perf_counter()
            act(n)
            add(name, wait_map(page, t0, before))
            wait_idle(page)
    page.close()
    return out


def _set_secret(page, n: int) -> None:
    field = page.get_by_label("Selected secret x (index)", exact=True).and_(page.locator("input"))
    field.fill(str(3 + n))
    field.press("Enter")


def other_pages(browser, url: str, shots: Path) -> None:
    """One screenshot per page (solving where the page has a button), for the README."""
    page = browser.new_page(viewport=VIEW)
    for name, path, ready, button in (("home", "", "text=What ε means in metres", None),
                                      ("compare", "?preset=teach-em-vs-lp", "text=Privacy promise", None),
                                      ("tradeoff", "tradeoff", "text=Trade-off", "Run sweep"),
                                      ("learn", "learn", "text=Learn: mDP in four steps", None)):
        page.goto(f"{url}/{path}")
        page.wait_for_selector(ready, timeout=60_000)
        wait_idle(page)
        if button:
            page.get_by_role("button", name=button, exact=True).click()
            wait_idle(page, 300_000)
        if page.locator(MAP).count():
            wait_map(page, time.perf_counter(), timeout_s=120)
        page.wait_for_timeout(1500)
        page.screenshot(path=str(shots / f"screenshot-{name}.png"), full_page=True)
    page.close()


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):5.2f} s (min {min(values):.2f}, max {max(values):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--city", nargs="+", default=["helsinki", "rome"], help="cities to measure (bundled slugs)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per number (the median is printed)")
    ap.add_argument("--shots", type=Path, help="folder for screenshots (docs/ regenerates the README's)")
    ap.add_argument("--out", type=Path, help="also write the report (with date, machine and load) to this file")
    args = ap.parse_args()
    chromium = chromium_path()
    if chromium is None:
        sys.exit("chromium not found (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    cache = tempfile.mkdtemp(prefix="mdpviz-measure-")
    with streamlit_server({"MDPVIZ_CACHE_DIR": cache}) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        warm = browser.new_page(viewport=VIEW)  # the server's first script run (imports) is not a user's cost
        for city in args.city:
            warm.goto(f"{url}/explore?city={city}")
            warm.wait_for_selector("text=Not solved yet", timeout=60_000)
            wait_idle(warm)
        warm.close()
        results = {city: measure_city(browser, url, city, args.repeat, args.shots) for city in args.city}
        if args.shots:
            other_pages(browser, url, args.shots)
        browser.close()
    load_after = os.getloadavg()
    lines = [f"headless chromium {VIEW['width']}×{VIEW['height']}, {args.repeat} runs per number (median, min, max); "
             f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after, on {os.cpu_count()} CPUs"]
    for city, res in results.items():
        lines.append(f"-- {city}")
        lines += [f"   {name:<20} {summary(values)}" for name, values in res.items()]
    print("\n".join(lines))
    if args.shots:
        print(f"screenshots in {args.shots}")
    if args.out:
        from datetime import datetime

        from mdpviz.benchmarks.report import machine
        from mdpviz.paths import atomic_write

        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        cmd = "python scripts/measure_ui.py " + " ".join(sys.argv[1:])
        text = (f"# Dashboard timings in headless chromium\n\n{stamp} on {machine()}.\n\n`{cmd}`\n\n```\n"
                + "\n".join(lines) + "\n```\n")
        atomic_write(args.out, lambda p: p.write_text(text, encoding="utf-8"))


if __name__ == "__main__":
    main()
