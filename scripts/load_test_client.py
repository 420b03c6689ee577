"""The load test's sessions and its protocol-level client (``scripts/load_test.py``): what a session is and
measures, and a cold browser's requests and Streamlit's websocket protocol without rendering anything."""

from __future__ import annotations

import asyncio
import gzip
import re
import time
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

TIMEOUT_S = 180.0
LOSS_LABEL = "Utility loss"  # the metric whose value is checked against the library


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
