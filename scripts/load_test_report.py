"""The load test's report (``scripts/load_test.py``): one measured run, its Markdown section, the summary table
and the verdict against the target."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

from load_test_client import Session


def pct(xs: list[float], q: float) -> float:
    """Percentile by linear interpolation (numpy's default)."""
    import numpy as np

    return float(np.percentile(xs, q))


@dataclass
class Run:
    """One measured run: N sessions on K fresh servers."""

    n: int
    servers: int
    sessions: list[Session]
    warmup: list[Session]
    wall_s: float
    server_cpu_s: float
    client_cpu_s: float  # this process: the protocol clients, the sampler and the event loop
    chromium_cpu_s: float
    driver_cpu_s: float  # Playwright's driver
    machine_busy_s: float  # every process on the machine, ours and other jobs'
    health_ms: list[float]  # latencies of the servers' health endpoint during the run
    peak_rss: int
    alive: bool
    load_before: float
    load_after: float
    profile: str = ""

    @property
    def protocol(self) -> list[Session]:
        """The protocol-client sessions (the server-side figures)."""
        return [s for s in self.sessions if s.kind == "protocol"]

    @property
    def browsers(self) -> list[Session]:
        """The chromium sessions."""
        return [s for s in self.sessions if s.kind == "chromium"]

    @property
    def failed(self) -> list[Session]:
        """Sessions with a problem."""
        return [s for s in self.sessions if s.problems]


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _stats(xs: list[float]) -> str:
    return f"{pct(xs, 50):.2f} / {pct(xs, 95):.2f} / {max(xs):.2f}" if xs else "-"


def _ms(xs: list[float]) -> str:
    return f"{pct(xs, 50):,.0f} / {pct(xs, 95):,.0f} / {max(xs):,.0f}" if xs else "-"


def times(sessions: list[Session], name: str) -> list[float]:
    """The sessions' values of one timing (``map_s``…), leaving out the missing."""
    return [v for s in sessions if (v := getattr(s, name)) is not None]


def run_title(r: Run) -> str:
    """``N = 8, 1 server, 7 protocol + 1 chromium``."""
    kinds = f"{len(r.protocol)} protocol" + (f" + {len(r.browsers)} chromium" if r.browsers else "")
    return f"N = {r.n}, {r.servers} server{'s' if r.servers > 1 else ''}, {kinds}"


def run_report(r: Run) -> str:
    """One run: a row per session, then its figures."""
    lines = [f"### {run_title(r)}", "",
             f"load average before/after {r.load_before:.1f} / {r.load_after:.1f}; warm-up (untimed, "
             + ", ".join(f"{w.city} K={w.k}: map {_f(w.map_s)} s" + (f" ({'; '.join(w.problems)})" if w.problems
                                                                       else "") for w in r.warmup) + ")", "",
             "| # | kind | city | K | \\|Y\\| | mechanism | ε (km⁻¹) | to text (s) | to map (s) | to solve (s) | "
             "websocket (MB) | HTTP (MB, requests) | utility loss (m) | checks |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in r.sessions:
        server = f" @{r.sessions.index(s) % r.servers + 1}" if r.servers > 1 else ""
        lines.append(f"| {s.n} | {s.kind}{server} | {s.city} | {s.k} | {s.m} | {s.mech} | {s.eps:g} | "
                     f"{_f(s.text_s)} | {_f(s.map_s)} | {_f(s.solve_s)} | {s.received / 1e6:.2f} | "
                     f"{s.fetched / 1e6:.1f}, {s.requests} | {s.shown_loss or '-'} | "
                     f"{'; '.join(s.problems) if s.problems else 'ok'} |")
    p = r.protocol
    lines += ["",
              f"- protocol sessions ({len(p)}): to map p50 / p95 / max {_stats(times(p, 'map_s'))} s; to solve "
              f"{_stats(times(p, 'solve_s'))} s; to text {_stats(times(p, 'text_s'))} s"]
    for b in r.browsers:
        lines.append(f"- chromium session #{b.n} ({b.city}, K = {b.k}, {b.mech}): to map {_f(b.map_s)} s, "
                     f"to solve {_f(b.solve_s)} s")
    lines += [f"- server CPU {r.server_cpu_s:.1f} s in {r.wall_s:.1f} s wall = {r.server_cpu_s / r.wall_s:.2f} cores "
              f"busy on average ({r.servers} process{'es' if r.servers > 1 else ''}); peak server RSS "
              f"{r.peak_rss / 2**20:,.0f} MB",
              f"- server event loop: health check every 0.1 s answered in p50 / p95 / max "
              f"{_ms(r.health_ms)} ms ({len(r.health_ms)} checks)",
              f"- whole machine (every process, other jobs' too) {r.machine_busy_s:.1f} CPU s = "
              f"{r.machine_busy_s / r.wall_s:.2f} of {os.cpu_count()} cores busy on average",
              f"- load-test process (protocol clients, sampler) {r.client_cpu_s:.1f} CPU s"
              + (f"; chromium {r.chromium_cpu_s:.1f} CPU s, Playwright's driver {r.driver_cpu_s:.1f} CPU s"
                 if r.browsers else ""),
              f"- sessions with a problem: {len(r.failed)} of {r.n}; server{'s' if r.servers > 1 else ''} alive at "
              f"the end: {'yes' if r.alive else 'NO'}"]
    if r.profile:
        lines += ["", "```", r.profile, "```"]
    return "\n".join(lines) + "\n"


def summary(runs: list[Run]) -> str:
    """One line per run (protocol sessions' figures), then the chromium probes."""
    lines = ["| N | servers | sessions | wall (s) | to map p50 / p95 / max (s) | to solve p50 / p95 / max (s) | "
             "server CPU (s) | server cores busy | machine cores busy | health check p50 / max (ms) | "
             "peak server RSS (MB) | client CPU (s) | problems |", "|---" * 13 + "|"]
    for r in runs:
        p = r.protocol
        kinds = f"{len(p)} protocol" + (f" + {len(r.browsers)} chromium" if r.browsers else "")
        lines.append(f"| {r.n} | {r.servers} | {kinds} | {r.wall_s:.1f} | {_stats(times(p, 'map_s'))} | "
                     f"{_stats(times(p, 'solve_s'))} | {r.server_cpu_s:.1f} | {r.server_cpu_s / r.wall_s:.2f} | "
                     f"{r.machine_busy_s / r.wall_s:.2f} | "
                     f"{f'{pct(r.health_ms, 50):,.0f} / {max(r.health_ms):,.0f}' if r.health_ms else '-'} | "
                     f"{r.peak_rss / 2**20:,.0f} | {r.client_cpu_s:.1f} | {len(r.failed)} of {r.n} |")
    probes = [(r, b) for r in runs for b in r.browsers]
    if probes:
        lines += ["", "| N | servers | chromium session (row) | to map (s) | to solve (s) | chromium CPU (s) | "
                      "protocol sessions beside it: to map p95 (s) | checks |", "|---|---|---|---|---|---|---|---|"]
        for r, b in probes:
            lines.append(f"| {r.n} | {r.servers} | #{b.n} {b.city} K={b.k} \\|Y\\|={b.m} {b.mech} ε={b.eps:g} | "
                         f"{_f(b.map_s)} | {_f(b.solve_s)} | {r.chromium_cpu_s:.1f} | "
                         f"{_stats(times(r.protocol, 'map_s')).split(' / ')[1] if r.protocol else '-'} | "
                         f"{'; '.join(b.problems) if b.problems else 'ok'} |")
    return "\n".join(lines) + "\n"


def verdict(runs: list[Run]) -> str:
    """The target (p95 to the map ≤ 8 s with 8 sessions, server side, peak memory ≤ 1 GB) for the runs of N = 8
    with protocol sessions only."""
    out = []
    for r in runs:
        if r.n == 8 and not r.browsers:
            maps = times(r.protocol, "map_s")
            ok = len(maps) == 8 and pct(maps, 95) <= 8 and r.peak_rss <= 2**30 and not r.failed
            out.append(f"target (p95 to the map ≤ 8 s at N = 8, server side; peak memory ≤ 1 GB), {r.servers} "
                       f"server{'s' if r.servers > 1 else ''}: {'met' if ok else 'NOT met'} (p95 "
                       f"{pct(maps, 95):.2f} s, peak {r.peak_rss / 2**20:,.0f} MB)" if maps else
                       "target: no timings at N = 8 (all sessions failed)")
    return "\n".join(out)


def command_line(argv: list[str]) -> str:
    """How this report was made, as one could retype it."""
    return " ".join(["python", "scripts/load_test.py", *argv])


def full_report(runs: list[Run], argv: list[str], load_before: float, load_after: float, started: str) -> str:
    """The Markdown section: when, where, how, the summary, the verdict, then every run."""
    ns = ", ".join(str(n) for n in dict.fromkeys(r.n for r in runs))
    ks = " and ".join(str(k) for k in dict.fromkeys(r.servers for r in runs))
    probe = ", with a chromium probe" if any(r.browsers for r in runs) else ""
    head = [f"## Protocol clients, N = {ns}, {ks} server{'s' if ks != '1' else ''}{probe} ({started})", "",
            f"- command: `{command_line(argv)}`",
            f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; load "
            f"average (1 min) before/after {load_before:.1f} / {load_after:.1f} (shared machine)", "",
            summary(runs)] + ([verdict(runs), ""] if verdict(runs) else [])
    return "\n".join(head) + "\n" + "\n".join(run_report(r) for r in runs)


def insert_section(path: Path, text: str) -> None:
    """Put ``text`` first in the Markdown file at ``path``, after its title (``# …``), keeping the rest."""
    from mdpviz.paths import atomic_write

    old = path.read_text() if path.exists() else ""
    lines = old.splitlines(keepends=True)
    if lines and lines[0].startswith("# "):
        new = lines[0] + "\n" + text + "\n" + "".join(lines[1:]).lstrip("\n")
    else:
        new = text + ("\n" + old if old else "")
    atomic_write(path, lambda p: p.write_text(new))
