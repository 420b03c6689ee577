"""Where the time of an Explore map goes, as the browser sees it (headless Debian chromium, 1280×800).

    python scripts/ui_timeline.py                 # Rome: a first render, then three cached renders
    python scripts/ui_timeline.py --city helsinki

For each render it prints, in seconds from the user's action: when the page opened its websocket to the server
(the end of Streamlit's own bootstrap in the browser), when the map component's script and the road image were
fetched (start-end), when the map's canvas appeared, when the map was drawn (as ``measure_ui.py`` detects it),
and the main thread's long tasks (start+duration, over 50 ms: script evaluation, layout, waiting for WebGL).
Each cached render is also traced by Chrome: the page's JavaScript (React rendering the page, deck.gl building its
layers), the main thread waiting in GLES2::ReadPixels (without a GPU, chromium composites in software and reads the
WebGL canvas back, waiting until the GPU process has run the frame), the GPU process (SwiftShader) running WebGL
commands, and deck.gl's first and last WebGL draw calls.
A companion of ``measure_ui.py``: that one gives the medians, this one the reasons.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure_ui import METRIC, VIEW, wait_idle, wait_map  # noqa: E402

from mdpviz.ui.server import CHROMIUM_ARGS, chromium_path, streamlit_server  # noqa: E402

# recorded in the page from its first line: long tasks, the websocket's opening, the map canvas's creation
INIT = """window.__lt = []; window.__ws = 0; window.__cv = 0;
new PerformanceObserver(l => { for (const e of l.getEntries()) window.__lt.push([e.startTime, e.duration]); })
  .observe({type: 'longtask', buffered: true});
const _WS = window.WebSocket;
window.WebSocket = function (...a) { const w = new _WS(...a);
  w.addEventListener('open', () => { window.__ws = performance.now(); }); return w; };
window.WebSocket.prototype = _WS.prototype; Object.assign(window.WebSocket, _WS);
new MutationObserver(() => { const c = document.querySelector("[data-testid='stDeckGlJsonChart'] canvas");
  window.__cv = c ? (window.__cv || performance.now()) : 0; }).observe(document, {subtree: true, childList: true});
window.__draws = []; for (const f of ['drawArrays', 'drawElements', 'drawArraysInstanced', 'drawElementsInstanced']) {
  const C = window.WebGL2RenderingContext, orig = C.prototype[f];
  C.prototype[f] = function (...a) { window.__draws.push(performance.now()); return orig.apply(this, a); }; }"""
TRACE_CATEGORIES = ["devtools.timeline", "toplevel", "gpu", "v8", "disabled-by-default-devtools.timeline"]

READ = r"""(t0) => ({ws: window.__ws - t0, cv: window.__cv - t0,
  lt: window.__lt.filter(x => x[0] >= t0).map(x => [x[0] - t0, x[1]]),
  res: performance.getEntriesByType('resource').filter(r => r.startTime >= t0
         && /DeckGlJsonChart\.[^/]*\.js$|[/]media[/][^/]*\.png$/.test(r.name) && !r.name.includes('/static/media/'))
       .map(r => [r.name.endsWith('.png') ? 'road image' : 'map script', r.startTime - t0, r.responseEnd - t0,
                  r.encodedBodySize])})"""


def _seconds_in(events: list[dict], thread: str, name: str) -> float:
    """Seconds covered by trace events ``name`` on ``thread`` ("process/thread"; nested events counted once)."""
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): f"{procs.get(e['pid'], '?')}/{e['args']['name']}" for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    total, end = 0.0, -1.0
    for a, b in sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X"
                       and e.get("name") == name and threads.get((e["pid"], e["tid"])) == thread):
        total += max(0.0, b - max(a, end))
        end = max(end, b)
    return total / 1e6


def show_trace(trace: bytes, page, t0_ms: float) -> None:
    data = json.loads(trace)
    events = data["traceEvents"] if isinstance(data, dict) else data
    main = "Renderer/CrRendererMain"
    draws = [t for t in page.evaluate("window.__draws") if t >= t0_ms]
    js = _seconds_in(events, main, "FunctionCall") + _seconds_in(events, main, "FireAnimationFrame")
    print(f"   traced: JavaScript {js:.2f} s, main thread waiting for the WebGL read-back "
          f"{_seconds_in(events, main, 'GLES2::ReadPixels'):.2f} s, GPU process running WebGL "
          f"{_seconds_in(events, 'GPU Process/CrGpuMain', 'WebGL'):.2f} s; WebGL draw calls "
          + (f"{(min(draws) - t0_ms) / 1000:.2f}-{(max(draws) - t0_ms) / 1000:.2f}" if draws else "none"))


def show(label: str, page, t0_ms: float, drawn_s: float) -> None:
    d = page.evaluate(READ, t0_ms)
    parts = [f"websocket open {d['ws'] / 1000:.2f}" if d["ws"] > 0 else "websocket open (before)"]
    parts += [f"{name} {a / 1000:.2f}-{b / 1000:.2f} ({n / 1e6:.2f} MB)" for name, a, b, n in d["res"]]
    parts += [f"canvas {d['cv'] / 1000:.2f}", f"map drawn {drawn_s:.2f}"]
    print(f"{label}: " + ", ".join(parts))
    print("   long tasks: " + " ".join(f"{a / 1000:.2f}+{b / 1000:.2f}" for a, b in d["lt"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--city", default="rome", help="bundled city slug")
    ap.add_argument("--cached", type=int, default=3, help="cached renders (Home -> Explore) after one solve")
    args = ap.parse_args()
    chromium = chromium_path()
    if chromium is None:
        sys.exit("chromium not found (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    url_of = f"/explore?city={args.city}"
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with streamlit_server({"MDPVIZ_CACHE_DIR": tempfile.mkdtemp(prefix="mdpviz-timeline-")}) as url, \
            sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        warm = browser.new_page(viewport=VIEW)  # the server's first script run (imports) is not a user's cost
        warm.goto(url + url_of)
        warm.wait_for_selector("text=Not solved yet", timeout=60_000)
        wait_idle(warm)
        warm.close()
        ctx = browser.new_context(viewport=VIEW)
        ctx.add_init_script(INIT)
        page = ctx.new_page()
        t0 = time.perf_counter()
        page.goto(url + url_of)
        page.wait_for_selector("text=Not solved yet", timeout=60_000)
        show("first render", page, 0.0, wait_map(page, t0))
        wait_idle(page)
        page.get_by_role("button", name="Solve", exact=True).click()
        page.wait_for_selector(METRIC, timeout=120_000)
        wait_idle(page)
        wait_map(page, time.perf_counter())
        for n in range(args.cached):
            page.get_by_role("link", name="Home").click()
            page.wait_for_selector("text=What ε means in metres", timeout=30_000)
            wait_idle(page)
            page.wait_for_timeout(300)
            browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
            t0_ms = page.evaluate("performance.now()")
            t0 = time.perf_counter()
            page.get_by_role("link", name="Explore").click()
            page.wait_for_selector(METRIC, timeout=30_000)
            drawn = wait_map(page, t0)
            wait_idle(page)
            trace = browser.stop_tracing()
            show(f"cached render {n + 1}", page, t0_ms, drawn)
            show_trace(trace, page, t0_ms)
        browser.close()
    print(f"load average {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
