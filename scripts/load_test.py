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
import collections
import contextlib
import datetime
import gzip
import os
import platform
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mdpviz.ui.server import CHROMIUM_ARGS, chromium_path, streamlit_server  # noqa: E402

MAP = "[data-testid='stDeckGlJsonChart'] canvas"
METRIC = "[data-testid='stMetric']"
TIMEOUT_S = 180.0
LOSS_LABEL = "Utility loss"  # the metric whose value is checked against the library

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


@dataclass
class Session:
    """One user's visit: its settings, what it measured and what went wrong."""

    n: int
    city: str
    k: int
    m: int
    mech: str
    eps: float
    kind: str = "protocol"  # or "chromium"
    server: str = ""
    text_s: float | None = None
    map_s: float | None = None
    solve_s: float | None = None
    shown_loss: str = ""
    received: int = 0  # bytes the server sent over the websocket (page deltas, map JSON)
    fetched: int = 0  # bytes of HTTP responses (page, JS, CSS, fonts, images, probes)
    requests: int = 0  # HTTP requests made
    problems: list[str] = field(default_factory=list)

    @property
    def query(self) -> dict[str, str]:
        """The URL query that opens Explore on this session's settings."""
        return {"city": self.city, "k": str(self.k), "m": str(self.m), "mech": self.mech, "eps": f"{self.eps:g}"}

    @property
    def row(self) -> tuple[str, int, int, str, float]:
        """The settings, as a key of the expected-loss memo."""
        return self.city, self.k, self.m, self.mech, self.eps


# ---------------------------------------------------------------------------------------------------- protocol client

USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) mdpviz-load-test protocol client"
ICON_FONT = re.compile(rb"[\w./-]*MaterialSymbols-Rounded\.[\w-]+\.woff2")  # the icon font the page draws with
MEDIA_URL = re.compile(r"/media/[\w.-]+")


class Http:
    """A browser's HTTP/1.1 side toward one origin: up to six keep-alive connections (h11), a cookie jar, counts."""

    def __init__(self, base: str, limit: int = 6) -> None:
        u = urlsplit(base)
        self.base, self.host, self.port = base, u.hostname or "127.0.0.1", u.port or 80
        self.slots = asyncio.Semaphore(limit)
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, Any]] = []
        self.cookies: dict[str, str] = {}
        self.bytes = 0
        self.count = 0

    async def get(self, target: str, keep: bool = False) -> tuple[int, bytes]:
        """GET ``target`` (a path with query); returns the status and, when ``keep``, the body (else b"")."""
        import h11

        async with self.slots:
            while True:
                reused = bool(self.idle)
                if reused:
                    conn = self.idle.pop()
                else:
                    reader, writer = await asyncio.open_connection(self.host, self.port)
                    conn = (reader, writer, h11.Connection(h11.CLIENT))
                try:
                    status, body, reusable = await self._exchange(conn, target, keep)
                    break
                except ConnectionError:
                    conn[1].close()
                    if not reused:
                        raise
                    # the server had closed this idle keep-alive connection (uvicorn: after 5 s) before answering:
                    # a browser sends the request again on a new one, and so do we
                except BaseException:
                    conn[1].close()
                    raise
            if reusable:
                self.idle.append(conn)
            else:
                conn[1].close()
        return status, body

    async def _exchange(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter, Any], target: str,
                        keep: bool) -> tuple[int, bytes, bool]:
        import h11

        reader, writer, h = conn
        headers = [("Host", f"{self.host}:{self.port}"), ("User-Agent", USER_AGENT), ("Accept", "*/*"),
                   ("Accept-Encoding", "gzip, deflate, br, zstd"), ("Connection", "keep-alive")]
        if self.cookies:
            headers.append(("Cookie", "; ".join(f"{k}={v}" for k, v in self.cookies.items())))
        writer.write(h.send(h11.Request(method="GET", target=target, headers=headers)) + h.send(h11.EndOfMessage()))
        await writer.drain()
        status, chunks, encoding = 0, [], b""
        while True:
            try:
                event = h.next_event()
            except h11.RemoteProtocolError as e:
                if status == 0:  # closed before any answer: the request may be sent again
                    raise ConnectionResetError(f"connection closed before an answer to GET {target}") from e
                raise RuntimeError(f"GET {target}: {e}") from e
            if event is h11.NEED_DATA:
                h.receive_data(await reader.read(1 << 16))
            elif isinstance(event, h11.Response):
                status = event.status_code
                for name, value in event.headers:
                    if name == b"content-encoding":
                        encoding = value.strip().lower()
                    if name == b"set-cookie":
                        k, _, v = value.decode("latin-1").split(";", 1)[0].partition("=")
                        self.cookies[k.strip()] = v.strip()
            elif isinstance(event, h11.Data):
                self.bytes += len(event.data)
                if keep:
                    chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                if status == 0:
                    raise ConnectionResetError(f"connection closed before an answer to GET {target}")
                raise RuntimeError(f"server closed the connection during GET {target}")
        self.count += 1
        reusable = h.our_state is h11.DONE and h.their_state is h11.DONE
        if reusable:
            h.start_next_cycle()
        body = b"".join(chunks)
        if keep and encoding == b"gzip":  # the only coding Streamlit's server uses
            body = gzip.decompress(body)
        return status, body, reusable

    def close(self) -> None:
        """Close the idle connections."""
        for _, writer, _ in self.idle:
            writer.close()
        self.idle.clear()


@cache
def lazy_chunks(main_js: bytes) -> dict[str, tuple[str, ...]]:
    """The frontend's lazily imported element chunks and their dependencies, from its main bundle's Vite map.

    Keys: the chunk's component name in lower case (``deckgljsonchart``); values: paths relative to the main
    bundle's folder, the chunk first (``./DeckGlJsonChart.Bk-DBRSw.js``, ``./recordbatch….js``, ``../css/….css``).

    >>> js = (b'__vite__mapDeps=(i,m=__vite__mapDeps,d=(m.f||(m.f=["./A.x1.js","./dep.y.js"])))=>i.map(i=>d[i]);'
    ...       b'Z=(0,U.lazy)(()=>H(()=>import(`./A.x1.js`),__vite__mapDeps([0,1]),import.meta.url))')
    >>> lazy_chunks(js)
    {'a': ('./A.x1.js', './dep.y.js')}
    """
    text = main_js.decode("utf-8", "replace")
    listed = re.search(r"m\.f=\[(.*?)\]", text)
    if listed is None:
        return {}
    files = re.findall(r'"([^"]+)"', listed.group(1))
    out: dict[str, tuple[str, ...]] = {}
    for name, deps in re.findall(r"import\(`\./([\w.-]+\.js)`\)[^;]{0,80}?__vite__mapDeps\(\[([\d,]*)\]", text):
        paths = tuple(files[int(i)] for i in deps.split(",") if i and int(i) < len(files))
        out[name.split(".")[0].lower()] = paths if paths and paths[0] == f"./{name}" else (f"./{name}", *paths)
    return out


# Element fields whose frontend component is not named after them
COMPONENTS = {"vega_lite_chart": "ArrowVegaLiteChart", "imgs": "ImageList"}


def component_name(element_type: str) -> str:
    """The frontend component of an ``Element`` field, lower case (chunk names are matched without case):
    ``deck_gl_json_chart`` → ``deckgljsonchart``, ``dataframe`` → ``dataframe`` (the chunk ``DataFrame``).

    >>> component_name("deck_gl_json_chart"), component_name("metric"), component_name("imgs")
    ('deckgljsonchart', 'metric', 'imagelist')
    """
    return COMPONENTS.get(element_type, element_type.replace("_", "")).lower()


class Browserless:
    """One protocol-level session: a cold browser's requests and Streamlit's websocket protocol, no rendering."""

    def __init__(self, base: str, s: Session, timeout_s: float) -> None:
        self.base, self.s, self.deadline = base, s, time.perf_counter() + timeout_s
        self.http = Http(base)
        self.fetches: dict[str, asyncio.Task[None]] = {}  # every URL fetched once, like a browser's cache ...
        self.chunks: dict[str, tuple[str, ...]] = {}
        self.js_base = base + "/static/js/"
        self.cached: dict[str, bytes] = {}  # ForwardMsg cache: hash → serialised message
        self.page_hash, self.query = "", urlencode(s.query)
        self.text: list[str] = []  # the current run's text (markdown, alerts, metrics)
        self.solve_id: str | None = None
        self.map_ready: asyncio.Task[None] | None = None
        self.metric_ready: asyncio.Task[None] | None = None
        self.verdict_icons = _verdict_icons()

    # --- HTTP
    def fetch(self, url: str, again: bool = False, may_fail: bool = False) -> asyncio.Task[None]:
        """Start (once, or again when ``again``) fetching ``url`` (absolute, or a path on the server); an error
        status is a problem unless ``may_fail``."""
        url = urljoin(self.base + "/", url)
        if url in self.fetches and not again:
            return self.fetches[url]
        split = urlsplit(url)

        async def get() -> None:
            status, _ = await self.http.get(split.path + (f"?{split.query}" if split.query else ""))
            if status >= 400 and not may_fail:
                self.s.problems.append(f"GET {split.path} answered {status}")

        task = asyncio.ensure_future(get())
        self.fetches[url] = task
        return task

    def fetch_then(self, url: str, then: Any) -> asyncio.Task[None]:
        """Fetch ``url`` once, keeping its body for ``then(url, body)`` (which may start more fetches)."""
        url = urljoin(self.base + "/", url)
        if url not in self.fetches:
            async def get() -> None:
                status, body = await self.http.get(urlsplit(url).path, keep=True)
                if status >= 400:
                    self.s.problems.append(f"GET {urlsplit(url).path} answered {status}")
                then(url, body)

            self.fetches[url] = asyncio.ensure_future(get())
        return self.fetches[url]

    async def shell(self) -> None:
        """The page and what it references, in a cold browser's order: the HTML; its scripts, styles and preloaded
        font at once (the app starts when the scripts are in); the icon font the stylesheet names; then the
        frontend's health and host-config probes and the favicon (the frontend tries the page's path first)."""
        page = f"/explore?{self.query}"
        status, html_bytes = await self.http.get(page, keep=True)
        if status != 200:
            raise RuntimeError(f"GET {page} answered {status}")
        page_url = self.base + page
        scripts, others = [], []
        for tag in re.findall(r"<(?:script|link)\b[^>]*>", html_bytes.decode("utf-8", "replace")):
            href = re.search(r'\s(?:src|href)="([^"]+)"', tag)
            rel = re.search(r'\srel="([^"]+)"', tag)
            if href is None:
                continue
            if tag.startswith("<script") or (rel and rel.group(1) == "modulepreload"):
                scripts.append(urljoin(page_url, href.group(1)))
            elif rel and rel.group(1) in ("stylesheet", "preload"):
                others.append(urljoin(page_url, href.group(1)))

        def main_bundle(url: str, body: bytes) -> None:
            self.js_base, self.chunks = urljoin(url, "."), lazy_chunks(body)

        def stylesheet(url: str, body: bytes) -> None:
            for font in sorted({m.decode() for m in ICON_FONT.findall(body)}):
                self.fetch(urljoin(url, font))

        waits = [self.fetch_then(scripts[0], main_bundle)] + [self.fetch(u) for u in scripts[1:]]
        for url in others:
            self.fetch_then(url, stylesheet) if url.endswith(".css") else self.fetch(url)
        await _all(waits)
        for path in ("/explore/_stcore/health", "/explore/_stcore/host-config"):  # 404: the page is no base path
            self.fetch(path, may_fail=True)
        for path in ("/favicon.png", "/_stcore/health", "/_stcore/host-config"):
            self.fetch(path)

    def element_chunk(self, element_type: str) -> asyncio.Task[None] | None:
        """Fetch the lazily loaded frontend chunk (with its dependencies) that renders ``element_type``, if any."""
        paths = self.chunks.get(component_name(element_type))
        if not paths:
            return None
        tasks = [self.fetch(urljoin(self.js_base, p)) for p in paths]
        return tasks[0] if len(tasks) == 1 else asyncio.ensure_future(_all(tasks))

    # --- websocket
    def rerun(self, first: bool) -> bytes:
        """A ``BackMsg.rerun_script`` as the frontend sends it: the first one names the page from the URL path; a
        later one (Solve) carries the page hash, the server's last query, the Solve trigger and the cached hashes."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        rs = msg.rerun_script
        rs.query_string = self.query
        if first:
            rs.page_name = "explore"
        else:
            rs.page_script_hash = self.page_hash
            assert self.solve_id is not None
            w = rs.widget_states.widgets.add()
            w.id, w.trigger_value = self.solve_id, True
            rs.cached_message_hashes.extend(self.cached)
        ctx = rs.context_info
        ctx.timezone, ctx.timezone_offset, ctx.locale = "UTC", 0, "en-US"
        ctx.url, ctx.is_embedded, ctx.color_scheme = f"{self.base}/explore?{self.query}", False, "light"
        return bytes(msg.SerializeToString())

    async def run(self) -> None:
        """Open Explore, wait for the map, press Solve, wait for the metrics; timings and problems into ``s``."""
        from websockets.asyncio.client import connect
        from websockets.typing import Origin, Subprotocol

        s = self.s
        t0 = time.perf_counter()
        await asyncio.wait_for(self.shell(), self._left())
        xsrf = self.http.cookies.get("_streamlit_xsrf", "PLACEHOLDER_AUTH_TOKEN")
        headers = {"User-Agent": USER_AGENT}
        if self.http.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.http.cookies.items())
        ws_url = "ws" + self.base.removeprefix("http") + "/_stcore/stream"
        async with connect(ws_url, subprotocols=[Subprotocol("streamlit"), Subprotocol(xsrf)],
                           origin=Origin(self.base), additional_headers=headers, max_size=None,
                           open_timeout=self._left()) as ws:
            await ws.send(self.rerun(first=True))
            await self.until_finished(ws, t0, first=True)
            if self.map_ready is None:
                s.problems.append("no map (deck_gl_json_chart) in the page")
                return
            await asyncio.wait_for(self.map_ready, self._left())
            if self.solve_id is None:
                s.problems.append("no Solve button in the page")
                return
            t1 = time.perf_counter()
            await ws.send(self.rerun(first=False))
            await self.until_finished(ws, t1, first=False)
            if self.metric_ready is None:
                s.problems.append("no metric after Solve")
            else:
                await asyncio.wait_for(self.metric_ready, self._left())
        await asyncio.wait_for(_all(list(self.fetches.values())), self._left())
        self.check_text()

    async def until_finished(self, ws: Any, t0: float, first: bool) -> None:
        """Read ForwardMsgs until the script run finishes successfully (a run cut short for a rerun is followed)."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        while True:
            data = await asyncio.wait_for(ws.recv(), self._left())
            self.s.received += len(data)
            msg = ForwardMsg()
            msg.ParseFromString(data)
            if msg.HasField("ref_hash"):  # the server knows we cached it: take ours, with the new metadata
                cached = ForwardMsg()
                cached.ParseFromString(self.cached[msg.ref_hash])
                cached.metadata.CopyFrom(msg.metadata)
                msg = cached
            elif msg.metadata.cacheable and msg.hash:
                self.cached[msg.hash] = data
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                self.page_hash = msg.new_session.page_script_hash or self.page_hash
                self.text = []
            elif kind == "navigation" and msg.navigation.page_script_hash:
                self.page_hash = msg.navigation.page_script_hash
            elif kind == "page_info_changed":
                self.query = msg.page_info_changed.query_string
            elif kind == "page_not_found":
                self.s.problems.append(f"page not found: {msg.page_not_found.page_name!r}")
            elif kind == "session_event" and msg.session_event.HasField("script_compilation_exception"):
                self.s.problems.append("script compilation error: "
                                       f"{msg.session_event.script_compilation_exception.message[:200]}")
            elif kind == "delta":
                delta = msg.delta
                which = delta.WhichOneof("type")
                if which == "new_element":
                    self.element(delta.new_element, t0, first)
                elif which == "new_transient":
                    for el in delta.new_transient.elements:
                        self.element(el, t0, first)
            elif kind == "script_finished":
                status = msg.script_finished
                if status == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    self.s.problems.append("the script did not compile")
                    return
                if status == ForwardMsg.FINISHED_SUCCESSFULLY:
                    return

    def element(self, el: Any, t0: float, first: bool) -> None:
        """Note one element: fetch its chunk, time the map and the metrics, find Solve, collect text, spot errors."""
        s = self.s
        kind = el.WhichOneof("type")
        if kind is None:
            return
        chunk = self.element_chunk(kind)
        if kind == "markdown":
            self.text.append(el.markdown.body)
            if first and s.text_s is None and f"K = {s.k:,} secrets" in el.markdown.body:
                s.text_s = time.perf_counter() - t0
        elif kind == "deck_gl_json_chart":
            # the map needs its chunk and its images (fetched with every map, as chromium does)
            media = [self.fetch(u, again=True) for u in sorted(set(MEDIA_URL.findall(el.deck_gl_json_chart.json)))]
            if first and self.map_ready is None:
                self.map_ready = asyncio.ensure_future(self._mark(t0, "map_s", [*media, *([chunk] if chunk else [])]))
        elif kind == "metric":
            self.text.append(f"{el.metric.label}\n{el.metric.body}")
            if not first and self.metric_ready is None:
                self.metric_ready = asyncio.ensure_future(self._mark(t0, "solve_s", [chunk] if chunk else []))
            if el.metric.label.startswith(LOSS_LABEL):
                s.shown_loss = el.metric.body
        elif kind == "button" and el.button.is_form_submitter and el.button.label == "Solve":
            self.solve_id = el.button.id
        elif kind == "alert":
            self.text.append(el.alert.body)
            if el.alert.format == 1 and el.alert.icon not in self.verdict_icons:  # Alert.ERROR
                s.problems.append(f"error shown: {el.alert.body[:200]}")
        elif kind == "exception":
            s.problems.append(f"exception shown: {el.exception.type}: {el.exception.message[:200]}")

    async def _mark(self, t0: float, name: str, waits: list[asyncio.Task[None]]) -> None:
        await _all(waits)
        setattr(self.s, name, time.perf_counter() - t0)

    def check_text(self) -> None:
        """The final page names the session's own settings, and the server's URL query still holds them."""
        s = self.s
        body = "\n".join(self.text)
        for want in expected_texts(s):
            if want not in body:
                s.problems.append(f"page does not show its own setting {want!r}")
        got = dict(parse_qsl(self.query))
        for key, value in s.query.items():
            if got.get(key) != value:
                s.problems.append(f"URL lost {key}={value}: {self.query}")

    def _left(self) -> float:
        left = self.deadline - time.perf_counter()
        if left <= 0:
            raise TimeoutError("session deadline passed")
        return left


async def _all(tasks: Iterable[Awaitable[Any]]) -> None:
    for t in tasks:
        await t


@cache
def _verdict_icons() -> frozenset[str]:
    """Icons of the verdict box: its red "broken promise" box is a result, not an error of the page."""
    from mdpviz.ui.metrics_panel import VERDICT_BOX

    return frozenset(icon for _, icon in VERDICT_BOX.values())


def expected_texts(s: Session) -> list[str]:
    """What the page must say about the session's own settings (the headline's words)."""
    from mdpviz.cities import list_cities
    from mdpviz.mechanisms import get_mechanism

    label = next(c.label for c in list_cities() if c.slug == s.city)
    return [get_mechanism(s.mech).label, label, f"K = {s.k:,} secrets", f"|Y| = {s.m:,} outputs",
            f"ε = {s.eps:g} km⁻¹"]


async def protocol_session(base: str, s: Session, timeout_s: float = TIMEOUT_S) -> None:
    """Run one protocol-level session against the server at ``base``; never raises (failures go to problems)."""
    client = Browserless(base, s, timeout_s)
    try:
        await client.run()
    except Exception as e:  # noqa: BLE001 - a failed session is reported, not fatal to the others
        s.problems.append(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
    finally:
        for task in client.fetches.values():
            task.cancel()
        client.http.close()
        s.fetched, s.requests = client.http.bytes, client.http.count


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


# ---------------------------------------------------------------------------------------------------- measurement

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
            spy = _start_profiler(pids[0], profile)
            probe = HealthProbe(urls)
            probe.start()
            t0 = time.perf_counter()
            await asyncio.gather(*(drive(browser, s.server, s, timeout_s) if s.kind == "chromium"
                                   else protocol_session(s.server, s, timeout_s) for s in sessions))
            wall = time.perf_counter() - t0
            busy1, _ = machine_cpu()
            probe.stop.set()
            probe.join()
            _stop_profiler(spy)
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


# ---------------------------------------------------------------------------------------------------- report

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
