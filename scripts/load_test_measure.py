"""The load test's measurements (``scripts/load_test.py``): CPU and memory of process trees from /proc, the
servers' event-loop latency, the whole machine's busy cores, and an optional py-spy profile of a server."""

from __future__ import annotations

import collections
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit


def proc_table() -> dict[int, tuple[int, float, int]]:
    """Every process: pid → (parent pid, user+system CPU seconds, resident set size in bytes), one /proc pass."""
    tick, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    out: dict[int, tuple[int, float, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick, int(fields[21]) * page)
        except (OSError, IndexError, ValueError):
            continue
    return out


def descendants(table: dict[int, tuple[int, float, int]], roots: Iterable[int]) -> list[int]:
    """The ``roots`` that exist and all their descendants."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    for pid, (ppid, _, _) in table.items():
        children[ppid].append(pid)
    out, todo = [], [r for r in roots if r in table]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_pids(root: int) -> list[int]:
    """``root`` and all its descendants (from /proc)."""
    return descendants(proc_table(), [root])


def rss_and_cpu(pids: list[int]) -> tuple[int, float]:
    """(summed resident set size in bytes, summed user+system CPU seconds) of ``pids``."""
    table = proc_table()
    rows = [table[p] for p in pids if p in table]
    return sum(r[2] for r in rows), sum(r[1] for r in rows)


def server_pid(url: str) -> int:
    """The ``streamlit run`` child of this process that serves ``url`` (its port is on its command line)."""
    port = str(urlsplit(url).port).encode()
    for pid in tree_pids(os.getpid())[1:]:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(args) and port in args:
            return pid
    raise RuntimeError(f"no streamlit server process found for {url}")


class Sampler(threading.Thread):
    """Every 0.25 s, one pass over /proc: the servers' trees' summed RSS (keeps the peak), and the CPU seconds of
    every process under this script, keeping the last value of each, so a browser process that exits mid-run (a
    closed session) is still counted."""

    def __init__(self, servers: list[int]) -> None:
        super().__init__(daemon=True)
        self.servers, self.peak, self.stop = servers, 0, threading.Event()
        self.cpu: dict[int, float] = {}
        self.browser: set[int] = set()  # pids of chromium processes (the rest: Playwright's driver)
        self.lock = threading.Lock()

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(0.25)

    def sample(self) -> None:
        """One pass (also called once more at the end of a run)."""
        table = proc_table()
        self.peak = max(self.peak, sum(table[p][2] for p in descendants(table, self.servers)))
        with self.lock:
            for p in descendants(table, [os.getpid()]):
                self.cpu[p] = table[p][1]
                if p not in self.browser and _is_chromium(p):
                    self.browser.add(p)

    def server_cpu(self) -> float:
        """CPU seconds used so far by the servers' trees (processes alive now)."""
        table = proc_table()
        return sum(table[p][1] for p in descendants(table, self.servers))

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


class HealthProbe(threading.Thread):
    """Every 0.1 s, ``GET /_stcore/health`` on one kept-alive connection to each server, from a thread of its own
    (not the sessions' event loop): the answer's latency is how long the server's event loop, which also serves
    the files and the websockets, takes to get to a request."""

    def __init__(self, urls: list[str]) -> None:
        super().__init__(daemon=True)
        self.urls, self.stop, self.latencies_ms = urls, threading.Event(), list[float]()

    def run(self) -> None:
        import http.client

        conns = [http.client.HTTPConnection(urlsplit(u).hostname or "127.0.0.1", urlsplit(u).port, timeout=60)
                 for u in self.urls]
        try:
            while not self.stop.is_set():
                for c in conns:
                    t0 = time.perf_counter()
                    try:
                        c.request("GET", "/_stcore/health")
                        c.getresponse().read()
                    except (OSError, http.client.HTTPException):
                        c.close()  # reconnects at the next request
                        continue
                    self.latencies_ms.append(1000 * (time.perf_counter() - t0))
                self.stop.wait(0.1)
        finally:
            for c in conns:
                c.close()


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, all cores, from /proc/stat (idle and iowait are
    not busy): what every process, ours and other jobs', used."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    total = sum(ticks[:8])  # user nice system idle iowait irq softirq steal (guest time is inside user)
    return (total - idle) / tick, total / tick


def own_cpu() -> float:
    """CPU seconds (user + system) of this process so far: the protocol clients, the sampler, the event loop."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def start_profiler(pid: int, path: Path | None) -> subprocess.Popen[bytes] | None:
    """py-spy (``pip install py-spy``) sampling the server's Python stacks while the sessions run, if asked."""
    if path is None:
        return None
    exe = shutil.which("py-spy")
    if exe is None:
        sys.exit("--profile needs py-spy (pip install py-spy)")
    return subprocess.Popen([exe, "record", "-p", str(pid), "-r", "50", "-f", "raw", "-o", str(path), "-s", "--gil"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_profiler(spy: subprocess.Popen[bytes] | None) -> None:
    """Stop py-spy (it writes its profile on SIGINT), if it was started."""
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(60)


PLUMBING = ("<frozen runpy>", "click/", "threading.py", "asyncio/", "web/cli.py", "web/bootstrap.py",
            "streamlit/__main__.py", "futures/thread.py", "_backends/_asyncio.py", "tornado/ioloop.py")


def profile_summary(path: Path, top: int = 12) -> str:
    """Where the server's GIL-holding samples went: the heaviest functions by self and by inclusive share
    (py-spy's raw format: one ``frame;frame;... count`` line per distinct stack; event-loop plumbing left out)."""
    total, inclusive, own = 0, collections.Counter[str](), collections.Counter[str]()

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
    if not total:
        return f"{path}: no samples"
    lines = [f"server samples holding the GIL: {total:,} at 50 Hz (≈ {total / 50:.1f} s of Python running)",
             "self:"] + [f"  {100 * n / total:5.1f} %  {f}" for f, n in own.most_common(top)]
    lines += ["inclusive:"] + [f"  {100 * n / total:5.1f} %  {f}" for f, n in inclusive.most_common(top)]
    return "\n".join(lines)
