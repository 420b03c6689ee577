"""Load test: N concurrent browser sessions drive Explore with different cities, mechanisms and parameters.

    python scripts/load_test.py                       # 8 sessions, prints the report
    python scripts/load_test.py --sessions 8 --out docs/benchmarks/load.md

One ``streamlit run app.py`` server (fresh result cache), one headless Debian chromium (never a Playwright
download), one browser context per session, all started at once. Each session opens Explore from a URL holding
its own city, K, |Y|, mechanism and ε, waits for the map, presses Solve and waits for the metrics. Checked, per
session: no exception box and no error on the page; the headline names its own city, K and mechanism; the URL
still holds its own settings; the utility loss shown equals the library's own value for its inputs (so no
session saw another's state or result); the server is alive at the end. Reported: p50 / p95 / max of the time
to the map and of the time to solve (s), the same for one lone session first (the baseline), peak RSS of the
server's process tree (MB), and the server's CPU use during the concurrent run (cores busy on average: about
1.0 means the sessions' script runs queue behind one another in one Python process).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mdpviz.ui.server import CHROMIUM_ARGS, chromium_path, streamlit_server  # noqa: E402

MAP = "[data-testid='stDeckGlJsonChart'] canvas"
METRIC = "[data-testid='stMetric']"
TIMEOUT_MS = 180_000

# (city, K, |Y|, mechanism, ε km⁻¹): different cities (Rome among them), mechanisms and parameters
SESSIONS = [
    ("rome", 300, 100, "em", 5.0),
    ("helsinki", 200, 50, "em-br", 3.0),
    ("rome", 200, 50, "laplace", 1.0),
    ("kotka", 150, 50, "tem", 4.0),
    ("coquimbo", 400, 100, "em", 0.5),
    ("west-oakland", 40, 20, "lp", 10.0),
    ("london", 300, 60, "em-br", 2.0),
    ("helsinki", 300, 80, "panda-e", 5.0),
]


@dataclass
class Session:
    n: int
    city: str
    k: int
    m: int
    mech: str
    eps: float
    text_s: float | None = None
    map_s: float | None = None
    solve_s: float | None = None
    shown_loss: str = ""
    received: int = 0  # bytes the server sent this session over its websocket (page deltas, map JSON)
    problems: list[str] = field(default_factory=list)

    @property
    def query(self) -> dict[str, str]:
        return {"city": self.city, "k": str(self.k), "m": str(self.m), "mech": self.mech, "eps": f"{self.eps:g}"}


def tree_pids(root: int) -> list[int]:
    """``root`` and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def rss_and_cpu(pids: list[int]) -> tuple[int, float]:
    """(summed resident set size in bytes, summed user+system CPU seconds) of ``pids``."""
    rss, cpu, tick = 0, 0.0, os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as f:
                rss += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
                cpu += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            continue
    return rss, cpu


def server_pid() -> int:
    """The ``streamlit run`` child of this process."""
    for pid in tree_pids(os.getpid())[1:]:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"streamlit" in f.read():
                    return pid
        except OSError:
            continue
    raise RuntimeError("no streamlit server process found")


class Sampler(threading.Thread):
    """Every 0.2 s: the server tree's RSS (keeps the peak) and the CPU seconds of every process under this script,
    keeping the last value of each, so a browser process that exits mid-run (a closed session) is still counted."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()
        self.cpu: dict[int, float] = {}
        self.browser: set[int] = set()  # pids of chromium processes (the rest: the Playwright driver)
        self.lock = threading.Lock()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_and_cpu(tree_pids(self.pid))[0])
            with self.lock:
                for p in tree_pids(os.getpid()):
                    self.cpu[p] = rss_and_cpu([p])[1]
                    if p not in self.browser and _is_chromium(p):
                        self.browser.add(p)
            self.stop.wait(0.2)

    def cpu_split(self, exclude: set[int]) -> tuple[float, float]:
        """(chromium, other) CPU seconds of every process seen, leaving out ``exclude``."""
        with self.lock:
            seen = {p: c for p, c in self.cpu.items() if p not in exclude}
            chromium = sum(c for p, c in seen.items() if p in self.browser)
            return chromium, sum(seen.values()) - chromium


def _is_chromium(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"chrom" in f.read().split(b"\0")[0]
    except OSError:
        return False


async def drive(browser: Any, url: str, s: Session) -> None:
    """One user: open Explore from the session's URL, wait for the map, Solve, wait for the metrics, check."""
    ctx = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await ctx.new_page()

    def count(ws: Any) -> None:
        ws.on("framereceived", lambda payload: setattr(s, "received", s.received + len(payload)))

    page.on("websocket", count)
    try:
        t0 = time.perf_counter()
        await page.goto(f"{url}/explore?{urlencode(s.query)}", timeout=TIMEOUT_MS)
        await page.wait_for_selector(f"text=K = {s.k} secrets", timeout=TIMEOUT_MS)
        s.text_s = time.perf_counter() - t0
        await page.wait_for_selector(MAP, timeout=TIMEOUT_MS)
        s.map_s = time.perf_counter() - t0
        await _idle(page)
        t0 = time.perf_counter()
        await page.get_by_role("button", name="Solve", exact=True).click()
        await page.wait_for_selector(METRIC, timeout=TIMEOUT_MS)
        s.solve_s = time.perf_counter() - t0
        await _idle(page)
        metrics = await page.locator(METRIC).all_inner_texts()
        loss = next((m for m in metrics if "Utility loss" in m), "")
        s.shown_loss = [line.strip() for line in loss.splitlines() if line.strip()][-1] if loss else ""
        body = await page.locator("body").inner_text()
        if await page.locator("[data-testid='stException']").count():
            s.problems.append("an exception is shown on the page")
        from mdpviz.cities import list_cities
        from mdpviz.mechanisms import get_mechanism

        label = next(c.label for c in list_cities() if c.slug == s.city)
        for want in (get_mechanism(s.mech).label, label, f"K = {s.k} secrets", f"|Y| = {s.m} outputs",
                     f"ε = {s.eps:g} km⁻¹"):
            if want not in body:
                s.problems.append(f"page does not show its own setting {want!r}")
        for key, value in s.query.items():
            if f"{key}={value}" not in page.url.replace("%2C", ","):
                s.problems.append(f"URL lost {key}={value}: {page.url}")
    except Exception as e:  # noqa: BLE001 - a failed session is reported, not fatal to the others
        s.problems.append(f"{type(e).__name__}: {str(e).splitlines()[0]}")
    finally:
        await ctx.close()


async def _idle(page: Any) -> None:
    await page.wait_for_timeout(150)
    await page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                                 timeout=TIMEOUT_MS)


def expected_loss(s: Session) -> str:
    """The utility loss the library itself computes for the session's inputs, formatted as the page shows it."""
    from mdpviz import metrics
    from mdpviz.problem import build_problem
    from mdpviz.solve import solve
    from mdpviz.ui.state import DEFAULTS

    pb = build_problem(s.city, s.k, n_outputs=s.m, metric=DEFAULTS["metric"], prior=DEFAULTS["prior"],
                       cost=DEFAULTS["cost"], n_tasks=DEFAULTS["tasks"], seed=DEFAULTS["seed"])
    r = solve(pb, s.mech, {"eps": s.eps}, use_cache=False, time_limit=DEFAULTS["time_limit"])
    if r.Z is None:
        return f"(no Z: {r.status})"
    return f"{metrics.utility_loss_m(pb, r.Z):.1f}"


def pct(xs: list[float], q: float) -> float:
    """Percentile by linear interpolation (numpy's default)."""
    import numpy as np

    return float(np.percentile(xs, q))


def _start_profiler(pid: int, path: Path | None) -> subprocess.Popen[bytes] | None:
    """py-spy (``pip install py-spy``) sampling the server's Python stacks while the sessions run, if asked."""
    if path is None:
        return None
    exe = shutil.which("py-spy")
    if exe is None:
        sys.exit("--profile needs py-spy (pip install py-spy)")
    return subprocess.Popen([exe, "record", "-p", str(pid), "-r", "50", "-f", "raw", "-o", str(path), "-s", "--gil"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop_profiler(spy: subprocess.Popen[bytes] | None) -> None:
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(60)


PLUMBING = ("<frozen runpy>", "click/", "threading.py", "asyncio/", "web/cli.py", "web/bootstrap.py",
            "streamlit/__main__.py", "futures/thread.py", "_backends/_asyncio.py", "tornado/ioloop.py")


def profile_summary(path: Path, top: int = 12) -> str:
    """Where the server's GIL-holding samples went: the heaviest functions by self and by inclusive share
    (py-spy's raw format: one ``frame;frame;... count`` line per distinct stack; event-loop plumbing left out)."""
    total, inclusive, own = 0, collections.Counter(), collections.Counter()

    def name(frame: str) -> str:
        func, _, where = frame.partition(" (")
        return f"{func} ({'/'.join(where.split(':')[0].rsplit('/', 2)[-2:])})"

    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [f for f in stack.split(";") if " (" in f]
        if not count.isdigit() or not frames:
            continue
        n = int(count)
        total += n
        own[name(frames[-1])] += n
        for frame in {name(f) for f in frames if not any(p in f for p in PLUMBING)}:
            inclusive[frame] += n
    lines = [f"server samples holding the GIL: {total:,} at 50 Hz (≈ {total / 50:.1f} s of Python running)",
             "self:"] + [f"  {100 * n / total:5.1f} %  {f}" for f, n in own.most_common(top)]
    lines += ["inclusive:"] + [f"  {100 * n / total:5.1f} %  {f}" for f, n in inclusive.most_common(top)]
    return "\n".join(lines)


async def run(n: int, profile: Path | None = None) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    chromium = chromium_path()
    if chromium is None:
        sys.exit("chromium not found (apt-get install chromium); never `playwright install`")
    cache = tempfile.mkdtemp(prefix="mdpviz-load-")
    with streamlit_server({"MDPVIZ_CACHE_DIR": cache}, timeout_s=60) as url:
        pid = server_pid()
        sampler = Sampler(pid)
        sampler.start()
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            # warm the server as a first visitor would (imports, first script compile), then one lone session
            warm = Session(0, "helsinki", 200, 50, "em", 5.0)
            await drive(browser, url, warm)
            lone = Session(0, "kotka", 120, 40, "em", 4.0)
            await drive(browser, url, lone)
            sessions = [Session(i + 1, *SESSIONS[i % len(SESSIONS)]) for i in range(n)]
            for i, s in enumerate(sessions[len(SESSIONS):]):  # more sessions than settings: vary the seedless ones
                s.eps = round(s.eps * (1.5 + 0.1 * i), 3)
            server = set(tree_pids(pid))
            _, cpu0 = rss_and_cpu(list(server))
            br0, drv0 = sampler.cpu_split(exclude=server | {os.getpid()})
            spy = _start_profiler(pid, profile)
            t0 = time.perf_counter()
            await asyncio.gather(*(drive(browser, url, s) for s in sessions))
            wall = time.perf_counter() - t0
            _stop_profiler(spy)
            await asyncio.sleep(0.3)  # one more sample of every process
            _, cpu1 = rss_and_cpu(list(server))
            br1, drv1 = sampler.cpu_split(exclude=server | {os.getpid()})
            await browser.close()
        alive = os.path.exists(f"/proc/{pid}")
        sampler.stop.set()
        sampler.join()
    for s in sessions:
        want = expected_loss(s)
        if s.shown_loss != want:
            s.problems.append(f"shows utility loss {s.shown_loss!r} m, the library computes {want!r} m")
    return {"sessions": sessions, "lone": lone, "warm": warm, "wall_s": wall, "server_cpu_s": cpu1 - cpu0,
            "client_cpu_s": br1 - br0, "driver_cpu_s": drv1 - drv0,
            "peak_rss": sampler.peak, "alive": alive}


def report(out: dict[str, Any], n: int) -> str:
    sessions: list[Session] = out["sessions"]
    maps = [s.map_s for s in sessions if s.map_s is not None]
    texts = [s.text_s for s in sessions if s.text_s is not None]
    solves = [s.solve_s for s in sessions if s.solve_s is not None]
    lone: Session = out["lone"]
    failed = [s for s in sessions if s.problems]
    lines = [
        f"date        {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"machine     {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; load average "
        f"before/after {out['load_before']:.1f} / {os.getloadavg()[0]:.1f} (shared machine)",
        f"command     python scripts/load_test.py --sessions {n}",
        "",
        "| # | city | K | \\|Y\\| | mechanism | ε (km⁻¹) | to text (s) | to map (s) | to solve (s) | received (MB) "
        "| utility loss (m) | checks |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in sessions:
        lines.append(f"| {s.n} | {s.city} | {s.k} | {s.m} | {s.mech} | {s.eps:g} | "
                     f"{_f(s.text_s)} | {_f(s.map_s)} | {_f(s.solve_s)} | {s.received / 1e6:.1f} | "
                     f"{s.shown_loss or '-'} | "
                     f"{'; '.join(s.problems) if s.problems else 'ok'} |")
    lines += [
        "",
        f"lone session (before the others): to text {_f(lone.text_s)} s, to map {_f(lone.map_s)} s, "
        f"to solve {_f(lone.solve_s)} s"
        + (f" ({'; '.join(lone.problems)})" if lone.problems else ""),
        f"{n} concurrent sessions: to map p50 {pct(maps, 50):.2f} s, p95 {pct(maps, 95):.2f} s, max {max(maps):.2f} s; "
        f"to page text p50 {pct(texts, 50):.2f} s, p95 {pct(texts, 95):.2f} s; "
        f"to solve p50 {pct(solves, 50):.2f} s, p95 {pct(solves, 95):.2f} s, max {max(solves):.2f} s"
        if maps and solves else f"{n} concurrent sessions: no timings (all failed)",
        f"peak server memory (RSS of the streamlit process tree): {out['peak_rss'] / 2**20:,.0f} MB",
        f"server CPU during the concurrent run: {out['server_cpu_s']:.1f} s in {out['wall_s']:.1f} s wall "
        f"= {out['server_cpu_s'] / out['wall_s']:.2f} cores busy on average; browser (chromium, all sessions): "
        f"{out['client_cpu_s']:.1f} s = {out['client_cpu_s'] / out['wall_s']:.2f} cores; Playwright's driver "
        f"{out['driver_cpu_s']:.1f} s",
        f"CPU bound: server and browsers together used {out['server_cpu_s'] + out['client_cpu_s']:.1f} CPU s in the "
        f"concurrent run (maps and solves), at least "
        f"{(out['server_cpu_s'] + out['client_cpu_s']) / (os.cpu_count() or 1):.1f} s of wall time on "
        f"{os.cpu_count()} CPUs",
        f"sessions with a problem: {len(failed)} of {n}; server alive at the end: {'yes' if out['alive'] else 'NO'}",
        "targets (issue 18): p95 to map ≤ 8 s with 8 sessions, peak memory ≤ 1 GB: "
        + ("met" if maps and pct(maps, 95) <= 8 and out["peak_rss"] <= 2**30 else "NOT met"),
    ]
    return "\n".join(lines) + "\n"


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=8, help="concurrent browser sessions (default 8)")
    ap.add_argument("--out", type=Path, help="also append the report to this Markdown file")
    ap.add_argument("--profile", type=Path, help="record the server with py-spy during the concurrent run into this "
                    "file (raw collapsed stacks) and print where its time went")
    a = ap.parse_args()
    load_before = os.getloadavg()[0]
    out = asyncio.run(run(a.sessions, a.profile))
    out["load_before"] = load_before
    text = report(out, a.sessions)
    if a.profile:
        text += "\n" + profile_summary(a.profile) + "\n"
    print(text)
    if a.out:
        from mdpviz.paths import atomic_write

        old = a.out.read_text() if a.out.exists() else ""
        atomic_write(a.out, lambda p: p.write_text(old + ("\n" if old else "") + "```\n" + text + "```\n"))
    ok = all(not s.problems for s in out["sessions"]) and out["alive"]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
