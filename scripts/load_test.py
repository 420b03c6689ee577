"""Load test: N concurrent sessions drive Explore on Rome and Helsinki, each with its own K, |Y|, mechanism and ε.

    python scripts/load_test.py                                    # 8 protocol sessions, prints the report
    python scripts/load_test.py --sessions 1 4 8 16 --browser-sessions 1 --out docs/benchmarks/load.md
    python scripts/load_test.py --sessions 8 16 --servers 1 2     # scale out: sessions split over two servers

**Sessions.** By default every session is a *protocol client*: it does what a cold browser tab does on the wire,
without rendering anything. It fetches the page (``/explore?city=…``), the JS and CSS the page references, the
icon font, favicon and the frontend's health / host-config probes, over up to six keep-alive HTTP/1.1 connections
(h11); opens Streamlit's websocket (``/_stcore/stream``, subprotocols ``streamlit`` + XSRF token, as the frontend
does) and sends a ``BackMsg.rerun_script`` with the session's URL query and page name ``explore``; reads the
``ForwardMsg`` protobufs; fetches the JS chunks the frontend loads lazily for each element type it receives (from
the Vite dependency map in the frontend's main bundle) and the app's own media URLs in the map (the road image,
fetched with every map, as chromium was seen to); resolves ``ref_hash`` messages from its own message cache; and
"presses Solve" with a rerun carrying the form's submit button trigger (the widget id read from the Solve
``button`` delta), the page hash and query the server last sent, and the hashes of the messages it has cached.
A protocol session costs the load-test process a fraction of a CPU second where a chromium session needs several
(software WebGL; figures in docs/benchmarks/load.md), so what is measured is the server. ``--browser-sessions M``
adds, for each N, a second run in which M of the N sessions are real headless Debian chromium pages (Playwright;
never a Playwright download), the others protocol clients: the probe, on a different settings row for each N.

**Times.** *To text*: until the headline naming the session's own K arrives (chromium: is shown). *To map*: until
the ``deck_gl_json_chart`` delta has arrived and the frontend chunk that draws it and the map's road image are
fetched, i.e. everything a browser needs from the server to draw the map (chromium: until the map's canvas is
on the page). *To solve*: from the Solve rerun until the first ``metric`` delta and its chunk (chromium: until a
metric is shown). All from the client's side, in seconds.

**Checks, per session**: no ``exception`` element, no error box (``st.error`` other than the verdict's own
"broken promise" box), no compile error or page-not-found, the server's last URL query still holds the session's
own settings, the page's text names its own mechanism, city, K, |Y| and ε, and the utility loss shown equals the
library's own value for its inputs (so no session saw another's state or result); the server is alive at the end.

**Each run** (one N): fresh ``streamlit run app.py`` server(s) with a fresh result cache; one untimed warm-up
session per city on settings outside the measured rows (imports, script compile, each city's road network loaded
once, as on a server that has been up a while); then the N sessions all at once, session i on server i mod K.
Reported per run: p50 / p95 / max of the times, the server tree's CPU seconds during the concurrent part (sampled
from /proc, summed over servers), how fast the servers' event loop answers a health check meanwhile (every 0.1 s,
from a thread of its own), the whole machine's busy cores (/proc/stat: other jobs on a shared machine
included), the servers' peak RSS (MB), the load-test process's own CPU and chromium's, and problems.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
import shutil
import sys
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the helper modules beside it

from load_test_client import (  # noqa: E402
    LOSS_LABEL,
    TIMEOUT_S,
    Session,
    component_name,
    expected_texts,
    lazy_chunks,
    protocol_session,
)
from load_test_measure import (  # noqa: E402
    HealthProbe,
    Sampler,
    descendants,
    machine_cpu,
    own_cpu,
    proc_table,
    profile_summary,
    server_pid,
    start_profiler,
    stop_profiler,
)
from load_test_report import Run, full_report, insert_section, run_report, summary, verdict  # noqa: E402

from mdpviz.ui.server import CHROMIUM_ARGS, chromium_path, streamlit_server  # noqa: E402

MAP = "[data-testid='stDeckGlJsonChart'] canvas"
METRIC = "[data-testid='stMetric']"

# (city, K, |Y|, mechanism, ε km⁻¹): Rome and Helsinki, every row a different K, |Y|, mechanism or ε; a run of N
# sessions uses the first N rows (the first eight keep the mix of the older eight-city rows, heavy solves included)
SESSIONS = [
    ("rome", 300, 100, "em", 5.0),
    ("helsinki", 200, 50, "em-br", 3.0),
    ("rome", 200, 50, "laplace", 1.0),
    ("helsinki", 300, 80, "panda-e", 5.0),
    ("helsinki", 150, 50, "tem", 4.0),
    ("rome", 400, 100, "em", 0.5),
    ("helsinki", 40, 20, "lp", 10.0),
    ("rome", 300, 60, "em-br", 2.0),
    ("rome", 250, 80, "panda-e", 5.0),
    ("helsinki", 120, 40, "panda-l", 6.0),
    ("rome", 120, 40, "panda-p", 2.0),
    ("helsinki", 150, 40, "aipo", 3.0),
    ("rome", 150, 60, "lp-em", 4.0),
    ("helsinki", 180, 60, "laplace-d", 2.0),
    ("rome", 60, 20, "lp", 8.0),
    ("helsinki", 220, 70, "em", 0.5),
]
# untimed, before each run: one per city, on a problem no measured row uses
WARMUP = [("rome", 100, 30, "em", 3.0), ("helsinki", 100, 30, "em", 3.0)]

# the helpers' doctests run with the script's (``doctest.testmod`` on this module, tests/test_load_client.py)
__test__ = {"lazy_chunks": lazy_chunks, "component_name": component_name}


# ---------------------------------------------------------------------------------------------------- chromium session

async def drive(browser: Any, url: str, s: Session, timeout_s: float = TIMEOUT_S) -> None:
    """One real browser user: open Explore from the session's URL, wait for the map, Solve, wait for the metrics,
    check the page (the probe among protocol clients, or every session with ``--browser-sessions N``)."""
    timeout_ms = timeout_s * 1000
    ctx = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await ctx.new_page()

    def count(ws: Any) -> None:
        ws.on("framereceived", lambda payload: setattr(s, "received", s.received + len(payload)))

    def response(r: Any) -> None:
        s.requests += 1
        with contextlib.suppress(Exception):
            s.fetched += int(r.headers.get("content-length", 0))

    page.on("websocket", count)
    page.on("response", response)
    try:
        t0 = time.perf_counter()
        await page.goto(f"{url}/explore?{urlencode(s.query)}", timeout=timeout_ms)
        await page.wait_for_selector(f"text=K = {s.k:,} secrets", timeout=timeout_ms)
        s.text_s = time.perf_counter() - t0
        await page.wait_for_selector(MAP, timeout=timeout_ms)
        s.map_s = time.perf_counter() - t0
        await _idle(page, timeout_ms)
        t0 = time.perf_counter()
        await page.get_by_role("button", name="Solve", exact=True).click()
        await page.wait_for_selector(METRIC, timeout=timeout_ms)
        s.solve_s = time.perf_counter() - t0
        await _idle(page, timeout_ms)
        metrics = await page.locator(METRIC).all_inner_texts()
        loss = next((m for m in metrics if LOSS_LABEL in m), "")
        s.shown_loss = [line.strip() for line in loss.splitlines() if line.strip()][-1] if loss else ""
        body = await page.locator("body").inner_text()
        if await page.locator("[data-testid='stException']").count():
            s.problems.append("an exception is shown on the page")
        for want in expected_texts(s):
            if want not in body:
                s.problems.append(f"page does not show its own setting {want!r}")
        for key, value in s.query.items():
            if f"{key}={value}" not in page.url.replace("%2C", ","):
                s.problems.append(f"URL lost {key}={value}: {page.url}")
    except Exception as e:  # noqa: BLE001 - a failed session is reported, not fatal to the others
        s.problems.append(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
    finally:
        await ctx.close()


async def _idle(page: Any, timeout_ms: float) -> None:
    await page.wait_for_timeout(150)
    await page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                                 timeout=timeout_ms)


# ---------------------------------------------------------------------------------------------------- sessions and runs

@cache
def expected_loss(row: tuple[str, int, int, str, float]) -> str:
    """The utility loss the library itself computes for a row's inputs, formatted as the page shows it."""
    from mdpviz import metrics
    from mdpviz.problem import build_problem
    from mdpviz.solve import solve
    from mdpviz.ui.state import DEFAULTS

    city, k, m, mech, eps = row
    pb = build_problem(city, k, n_outputs=m, metric=DEFAULTS["metric"], prior=DEFAULTS["prior"],
                       cost=DEFAULTS["cost"], n_tasks=DEFAULTS["tasks"], seed=DEFAULTS["seed"])
    r = solve(pb, mech, {"eps": eps}, use_cache=False, time_limit=DEFAULTS["time_limit"])
    if r.Z is None:
        return f"(no Z: {r.status})"
    return f"{metrics.utility_loss_m(pb, r.Z):.1f}"


def check_loss(s: Session) -> None:
    """A problem unless the session showed the library's own utility loss for its inputs."""
    want = expected_loss(s.row)
    if s.shown_loss != want:
        s.problems.append(f"shows utility loss {s.shown_loss!r} m, the library computes {want!r} m")


def make_sessions(n: int, browser_rows: set[int]) -> list[Session]:
    """N sessions on the first N rows (rows past the table reuse it with a larger ε); ``browser_rows`` (0-based)
    become chromium sessions."""
    sessions = []
    for i in range(n):
        s = Session(i + 1, *SESSIONS[i % len(SESSIONS)])
        if i >= len(SESSIONS):
            s.eps = round(s.eps * (1.5 + 0.1 * (i - len(SESSIONS))), 3)
        if i in browser_rows:
            s.kind = "chromium"
        sessions.append(s)
    return sessions


async def measure(n: int, servers: int, browser_rows: set[int], timeout_s: float = TIMEOUT_S,
                  profile: Path | None = None) -> Run:
    """Start ``servers`` fresh servers sharing one fresh result cache, warm them, run N sessions at once."""
    load_before = os.getloadavg()[0]
    sessions = make_sessions(n, browser_rows)
    cache_dir = tempfile.mkdtemp(prefix="mdpviz-load-")
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(streamlit_server({"MDPVIZ_CACHE_DIR": cache_dir}, timeout_s=90))
                for _ in range(servers)]
        pids = [server_pid(u) for u in urls]
        sampler = Sampler(pids)
        sampler.start()
        warmup = []
        for url in urls:
            for row in WARMUP:
                w = Session(0, *row, server=url)
                await protocol_session(url, w, timeout_s)
                warmup.append(w)
        for i, s in enumerate(sessions):
            s.server = urls[i % servers]
        async with contextlib.AsyncExitStack() as browsers:
            browser = None
            if browser_rows:
                from playwright.async_api import async_playwright

                pw = await browsers.enter_async_context(async_playwright())
                browser = await pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
                browsers.push_async_callback(browser.close)
            exclude = set(descendants(proc_table(), pids)) | {os.getpid()}
            sampler.sample()
            cpu0, self0, (busy0, _) = sampler.server_cpu(), own_cpu(), machine_cpu()
            br0, drv0 = sampler.cpu_split(exclude)
            spy = start_profiler(pids[0], profile)
            probe = HealthProbe(urls)
            probe.start()
            t0 = time.perf_counter()
            await asyncio.gather(*(drive(browser, s.server, s, timeout_s) if s.kind == "chromium"
                                   else protocol_session(s.server, s, timeout_s) for s in sessions))
            wall = time.perf_counter() - t0
            busy1, _ = machine_cpu()
            probe.stop.set()
            probe.join()
            stop_profiler(spy)
            await asyncio.sleep(0.3)
            sampler.sample()
            cpu1, self1 = sampler.server_cpu(), own_cpu()
            br1, drv1 = sampler.cpu_split(exclude)
        alive = all(os.path.exists(f"/proc/{p}") for p in pids)
        sampler.stop.set()
        sampler.join()
    shutil.rmtree(cache_dir, ignore_errors=True)
    for s in sessions:
        check_loss(s)
    return Run(n, servers, sessions, warmup, wall, cpu1 - cpu0, self1 - self0, br1 - br0, drv1 - drv0,
               busy1 - busy0, probe.latencies_ms, sampler.peak, alive, load_before, os.getloadavg()[0],
               profile_summary(profile) if profile is not None and profile.exists() else "")


# ---------------------------------------------------------------------------------------------------- command line

def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line; bad values are argparse errors (a usage line, no traceback)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, nargs="+", default=[8], metavar="N",
                    help="concurrent sessions; several values make one run each (default 8)")
    ap.add_argument("--browser-sessions", type=int, default=0, metavar="M",
                    help="also run each N again with M of its sessions in real chromium, on rows that rotate from one "
                         "N to the next (default 0: protocol clients only)")
    ap.add_argument("--servers", type=int, nargs="+", default=[1], metavar="K",
                    help="streamlit servers per run, session i on server i mod K; several values make one run each "
                         "(default 1)")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S, help=f"seconds per session (default {TIMEOUT_S:g})")
    ap.add_argument("--out", type=Path, help="also write the report as the first section of this Markdown file, "
                                             "after its title, keeping the rest")
    ap.add_argument("--profile", type=Path, help="record the (first) server with py-spy during each run into "
                    "PATH.N<n>.<K>s.<0, or 1 for the run with chromium> (raw collapsed stacks) and report where its "
                    "time went (py-spy pauses the server to sample it: that run's times are worse)")
    a = ap.parse_args(argv)
    if any(n < 1 for n in a.sessions):
        ap.error("--sessions: every N must be at least 1")
    if any(k < 1 for k in a.servers):
        ap.error("--servers: every K must be at least 1")
    if a.browser_sessions < 0 or a.browser_sessions > min(a.sessions):
        ap.error(f"--browser-sessions must be between 0 and the smallest N ({min(a.sessions)})")
    if a.browser_sessions and chromium_path() is None:
        ap.error("--browser-sessions needs Debian's chromium (apt-get install chromium); never `playwright install`")
    if a.timeout <= 0:
        ap.error("--timeout must be positive")
    return a


async def run_all(a: argparse.Namespace) -> list[Run]:
    """Every run the command asks for: per server count, per N, protocol only, then with the chromium probe."""
    for s in make_sessions(max(a.sessions), set()):  # the library's own losses first, outside every timed run
        expected_loss(s.row)
    runs = []
    for k in a.servers:
        for i, n in enumerate(a.sessions):
            plans = [set[int]()] + ([{(i + j) % n for j in range(a.browser_sessions)}] if a.browser_sessions else [])
            for j, rows in enumerate(plans):
                prof = a.profile.with_name(f"{a.profile.name}.N{n}.{k}s.{j}") if a.profile else None
                r = await measure(n, k, rows, a.timeout, prof)
                print(run_report(r), flush=True)
                runs.append(r)
    return runs


def main(argv: list[str] | None = None) -> int:
    """Run, print, optionally write the Markdown section; exit status 1 when any session had a problem."""
    argv = sys.argv[1:] if argv is None else argv
    a = parse_args(argv)
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_before = os.getloadavg()[0]
    runs = asyncio.run(run_all(a))
    text = full_report(runs, argv, load_before, os.getloadavg()[0], started)
    print(summary(runs))
    print(verdict(runs))
    if a.out:
        insert_section(a.out, text)
    ok = all(not r.failed and r.alive for r in runs)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
