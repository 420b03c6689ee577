"""Where a cached Explore map spends its time in headless chromium: one Chrome trace of Home -> Explore.

    python scripts/trace_ui.py                 # Rome, 3 page switches traced
    python scripts/trace_ui.py --city helsinki

Solves EM on the city once, then switches Home -> Explore (the "cached" number of ``measure_ui.py``) while Chrome
traces, and prints per switch (medians):

  js_s            JavaScript on the page's main thread (React rendering the page, deck.gl building its layers)
  readback_s      the main thread waiting in GLES2::ReadPixels: without a GPU, chromium composites in software and
                  reads the WebGL canvas back, waiting until the GPU process has run the frame's WebGL commands
  gpu_webgl_s     the GPU process (SwiftShader) running WebGL command buffers
  first_draw_s    click -> deck.gl's first WebGL draw call; last_draw_s: click -> its last (the road image drawn)

Numbers are wall-clock seconds on a shared machine: compare them within one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure_ui import METRIC, VIEW, wait_idle, wait_map  # noqa: E402

from mdpviz.ui.server import CHROMIUM_ARGS, chromium_path, streamlit_server  # noqa: E402

CATEGORIES = ["devtools.timeline", "toplevel", "gpu", "v8", "disabled-by-default-devtools.timeline"]
DRAW_HOOK = """(() => { window.__draws = []; const C = window.WebGL2RenderingContext; if (!C) return;
  for (const f of ['drawArrays', 'drawElements', 'drawArraysInstanced', 'drawElementsInstanced']) {
    const orig = C.prototype[f]; C.prototype[f] = function (...a) { window.__draws.push(performance.now());
      return orig.apply(this, a); }; } })();"""


def _threads(events: list[dict]) -> dict[tuple[int, int], str]:
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    return {(e["pid"], e["tid"]): f"{names.get(e['pid'], '?')}/{e['args']['name']}" for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name"}


def _sum(events: list[dict], threads: dict[tuple[int, int], str], thread: str, name: str) -> float:
    """Seconds in top-level ``name`` events on ``thread`` (nested events of the same name counted once)."""
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X" and e.get("name") == name
                   and threads.get((e["pid"], e["tid"])) == thread)
    total, end = 0.0, -1.0
    for a, b in spans:
        if a >= end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total / 1e6


def trace_switch(browser, page) -> dict[str, float]:
    page.get_by_role("link", name="Home").click()
    page.wait_for_selector("text=What ε means in metres", timeout=30_000)
    wait_idle(page)
    page.wait_for_timeout(500)
    browser.start_tracing(page=page, categories=CATEGORIES)
    t0_page = page.evaluate("(() => { window.__draws = []; return performance.now(); })()")
    t0 = time.perf_counter()
    page.get_by_role("link", name="Explore").click()
    page.wait_for_selector(METRIC, timeout=30_000)
    map_s = wait_map(page, t0)
    wait_idle(page)
    draws = page.evaluate("window.__draws")
    events = json.loads(browser.stop_tracing())
    events = events["traceEvents"] if isinstance(events, dict) else events
    threads = _threads(events)
    main = "Renderer/CrRendererMain"
    return {"map_s": map_s,
            "js_s": _sum(events, threads, main, "FunctionCall") + _sum(events, threads, main, "FireAnimationFrame"),
            "readback_s": _sum(events, threads, main, "GLES2::ReadPixels"),
            "gpu_webgl_s": _sum(events, threads, "GPU Process/CrGpuMain", "WebGL"),
            "first_draw_s": (min(draws) - t0_page) / 1000 if draws else float("nan"),
            "last_draw_s": (max(draws) - t0_page) / 1000 if draws else float("nan")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--city", default="rome", help="bundled city (default rome)")
    ap.add_argument("--repeat", type=int, default=3, help="page switches traced (default 3)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with streamlit_server({"MDPVIZ_CACHE_DIR": tempfile.mkdtemp(prefix="mdpviz-trace-")}) as url, \
            sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport=VIEW)
        context.add_init_script(DRAW_HOOK)
        page = context.new_page()
        page.goto(f"{url}/explore?city={args.city}")
        page.wait_for_selector("text=Not solved yet", timeout=60_000)
        wait_idle(page)
        page.get_by_role("button", name="Solve", exact=True).click()
        page.wait_for_selector(METRIC, timeout=120_000)
        wait_idle(page)
        wait_map(page, time.perf_counter())
        runs = [trace_switch(browser, page) for _ in range(args.repeat)]
        browser.close()
    print(f"{args.city}: Home -> Explore with a solved result, {args.repeat} switches (median, min, max)")
    for key in runs[0]:
        values = [r[key] for r in runs]
        print(f"  {key:<14} {statistics.median(values):5.2f} s ({min(values):.2f}–{max(values):.2f})")


if __name__ == "__main__":
    main()
