"""What ``scripts/walk_ui.py`` reads from a page and finds wrong in it: waiting for the page to settle, one pass
over the page (``INSPECT``), and the checks (contradictions, raw keys, None/nan, no mechanism, stated times)."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

# busy: the script is running (the app's own test attribute), the status widget shows, or an element is still
# stale from the previous run; sig: the page's text, to see it settle
STATE = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const busy = !app || app.getAttribute('data-test-script-state') !== 'notRunning'
            || !!document.querySelector('[data-testid="stStatusWidget"]')
            || !!document.querySelector('[data-stale="true"]');
  const text = app ? app.innerText : '';
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) | 0;
  return [busy, text.length + ':' + h];
}"""

# everything the checks read, in one pass over the page
INSPECT = """() => {
  const vis = e => e && e.checkVisibility({checkOpacity: true, checkVisibilityCSS: true});
  const where = e => e.closest('[data-testid="stSidebar"]') ? 'sidebar' : 'main';
  const alerts = [...document.querySelectorAll('[data-testid="stAlertContainer"]')].filter(vis).map(e => {
    const c = e.querySelector('[data-testid^="stAlertContent"]');
    const kind = c ? c.getAttribute('data-testid').replace('stAlertContent', '').toLowerCase() : 'alert';
    return {kind, where: where(e), text: e.innerText.replace(/^\\s*[a-z_]+\\n+/, '').trim()};
  });
  const exceptions = [...document.querySelectorAll('[data-testid="stException"]')].map(e => e.innerText.trim());
  const metrics = [...document.querySelectorAll('[data-testid="stMetric"]')].filter(vis).map(e => ({
    label: (e.querySelector('[data-testid="stMetricLabel"]') || {}).innerText || '',
    value: (e.querySelector('[data-testid="stMetricValue"]') || {}).innerText || '',
    delta: (e.querySelector('[data-testid="stMetricDelta"]') || {}).innerText || ''}));
  const tables = [...document.querySelectorAll('[data-testid="stDataFrame"], [data-testid="stTable"]')]
    .filter(vis).map(t => [...t.querySelectorAll('tr')].map(r => [...r.querySelectorAll('th, td')]
      .map(c => c.textContent.trim())).filter(r => r.length));
  const texts = [];
  const walker = document.createTreeWalker(document.querySelector('[data-testid="stApp"]') || document.body,
                                           NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement, t = n.textContent.trim();
    if (!t || !p || p.closest('code, pre, kbd, script, style, [data-testid="stCode"], [data-testid="stDataFrame"],'
                             + ' [data-testid="stTable"], [data-testid="stException"], [data-testid^="stIcon"],'
                             + ' [role="img"],'
                             + ' [data-testid$="Icon"], [data-testid="stExpanderIcon"]')) continue;
    if (!vis(p)) continue;
    texts.push(t);
  }
  const captions = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')].filter(vis)
    .map(e => e.innerText.trim());
  return {alerts, exceptions, metrics, tables, texts, captions, url: location.href};
}"""

SNAKE = re.compile(r"(?<![\w./#-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/(-]|\.\w)")
DOTTED = re.compile(r"(?<![\w./])(?:[a-z]{1,6})\.[a-z][a-z0-9]*(?:_[a-z0-9]+)*(?![\w/(])")
FILE_EXT = re.compile(r"\.(py|json|jsonl|csv|md|png|svg|txt|m|npz|parquet|toml|yaml|html)$")
NOT_KEYS = {"e.g", "i.e", "et.al", "vs.lp"}  # prose, not keys
NONE_WORD = re.compile(r"(?<![\w-])(None|nan|NaN|null)(?![\w-])")
SECONDS = re.compile(r"(?:about |~)?(\d+(?:\.\d+)?)(?:\s*[–-]\s*(\d+(?:\.\d+)?))?\s*(s|seconds?|min|minutes?)\b"
                     r"(?!\s*(?:limit|time limit|per |each))")
MIN_SEC = re.compile(r"(\d+)\s*min\s+(\d+(?:\.\d+)?)\s*s\b")
NO_MECH = re.compile(r"no mechanism|gave no|time limit|failed|could not|infeasible|solver error", re.I)
OK_PROMISE = re.compile(r"kept its promise|holds on all pairs")


@dataclass
class Step:
    """One user action of the walk: how long the page took to settle, what it showed, and what was found wrong."""

    page: str
    name: str
    seconds: float | None = None
    status: str = "ok"
    result: str = ""
    load: float = 0.0
    findings: list[str] = field(default_factory=list)
    shot: str = ""
    stated_s: float | None = None


# ---------------------------------------------------------------------------------------------- waiting


def settle(page: Any, t0: float, timeout_s: float = 300.0, quiet_s: float = 1.0, min_s: float = 1.5) -> float:
    """Seconds from ``t0`` to the last change seen before the page went quiet (no script run, no status widget,
    nothing stale, the text unchanged for ``quiet_s`` and over at least 8 samples: a browser busy drawing answers
    late, and one late answer is not a quiet second); waits at least ``min_s`` so that a run which has not
    started yet is not taken for idle."""
    last_sig, last_change, quiet = None, t0, 0
    while True:
        now = time.perf_counter()
        if now - t0 > timeout_s:
            raise TimeoutError(f"the page was still busy after {timeout_s:g} s")
        try:
            busy, sig = page.evaluate(STATE)
        except Exception:  # noqa: BLE001 - a navigation in progress: the page is not idle
            busy, sig = True, None
        now = time.perf_counter()
        if busy or sig != last_sig:
            last_change, last_sig, quiet = now, sig, 0
        else:
            quiet += 1
            if quiet >= 8 and now - last_change >= quiet_s and now - t0 >= min_s:
                return last_change - t0
        page.wait_for_timeout(100)


def wait_tables(page: Any, timeout_s: float = 5.0) -> None:
    """Until every table shows its cells (the grid fills its accessible copy, which the checks read, a little
    after it is drawn)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout_s and page.evaluate(
            "() => [...document.querySelectorAll('[data-testid=\"stDataFrame\"]')].some(t => t.checkVisibility()"
            " && !t.querySelector('td'))"):
        page.wait_for_timeout(100)


def load1() -> float:
    """The machine's 1-minute load average."""
    return os.getloadavg()[0]


# ---------------------------------------------------------------------------------------------- checks


def stated_seconds(text: str) -> float | None:
    """The longest duration a text states ("about 2 s", "3.4–4.8 s (12 s busy)", "1 min 44 s", "2 minutes",
    "Instant").

    >>> stated_seconds("2.0 s (8.3 s busy)"), stated_seconds("about 1 min 44 s"), stated_seconds("a 60 s limit")
    (8.3, 104.0, None)
    >>> stated_seconds("The solve takes 0.1 s; the page, its map and the check a few seconds more.")
    5.1
    """
    found = []
    for m in MIN_SEC.finditer(text):  # "1 min 44 s" (explain.format_s)
        found.append(60 * float(m.group(1)) + float(m.group(2)))
    text = MIN_SEC.sub(" ", text)
    for m in SECONDS.finditer(text):
        value = float(m.group(2) or m.group(1))
        found.append(value * 60 if m.group(3).startswith("min") else value)
    if not found and re.search(r"\binstant(ly)?\b", text, re.I):
        found.append(1.0)
    if found and re.search(r"a few seconds more", text):  # "the solve takes 0.1 s; the page … a few seconds more"
        found.append(max(found) + 5.0)
    return max(found) if found else None


def raw_keys(texts: list[str]) -> list[str]:
    """Snake_case and dotted diagnostic keys in visible texts, with a few words of context."""
    out: dict[str, str] = {}
    for t in texts:
        if t.startswith(("http", "python ", "mdpviz ")) or "://" in t:
            continue
        for rx in (SNAKE, DOTTED):
            for m in rx.finditer(t):
                token = m.group(0)
                if token in NOT_KEYS or FILE_EXT.search(token) or token in out:
                    continue
                if rx is DOTTED and not ("_" in token or token.startswith(("d.", "mp.", "ss.", "ev."))):
                    continue  # "0.5 km" and sentence ends are not keys
                lo = max(m.start() - 30, 0)
                out[token] = t[lo:m.end() + 30].replace("\n", " ")
    return [f"raw key `{k}` in “…{ctx}…”" for k, ctx in out.items()]


def none_values(info: dict[str, Any]) -> list[str]:
    """The words None, nan or NaN shown as a value: in metrics, table cells and visible text."""
    out = []
    for m in info["metrics"]:
        for part in (m["value"], m["delta"]):
            if NONE_WORD.search(part):
                out.append(f"None/nan in metric “{m['label']}”: {part!r}")
    for n, table in enumerate(info["tables"]):
        header = table[0] if table else []
        for row in table[1:]:
            for col, cell in enumerate(row):
                if NONE_WORD.fullmatch(cell) or NONE_WORD.search(cell):
                    name = header[col] if col < len(header) else col
                    out.append(f"None/nan in table {n + 1}, column “{name}”, row “{row[0][:40]}”: {cell!r}")
                    break
    for t in info["texts"]:
        if NONE_WORD.search(t):
            out.append(f"None/nan in text “{t[:120]}”")
    return list(dict.fromkeys(out))


def _count(text: str) -> int | None:
    """The number a text starts with ("1,234 of ..."), or None."""
    m = re.match(r"\s*([\d,]+)", text)
    return int(m.group(1).replace(",", "")) if m else None


def contradictions(info: dict[str, Any]) -> list[str]:
    """A success beside an error, a kept promise beside violations of it, a winner the table says breaks its claim."""
    out = []
    main = [a for a in info["alerts"] if a["where"] == "main"]
    ok = [a for a in main if a["kind"] == "success"]
    bad = [a for a in main if a["kind"] == "error"]
    for s in ok:
        for e in bad:
            out.append(f"contradiction: success “{s['text'][:100]}” beside error “{e['text'][:100]}”")
    # a verdict that the result kept its promise on all pairs, beside a count of violations of that claim > 0
    page_text = " ".join(a["text"] for a in main) + " " + " ".join(info["captions"])
    kept_all = bool(re.search(r"kept its promise", page_text))
    for m in info["metrics"]:
        if m["label"].startswith("Violations of its claim") and kept_all:
            n = _count(m["value"].split("/")[0])
            if n:
                out.append(f"contradiction: “kept its promise” beside “{m['label']}” = {m['value']}")
    # Compare's table: a promise that holds on all pairs beside violated pairs > 0 in the same row
    for table in info["tables"]:
        if not table or "privacy promise" not in table[0] or "violated / checked pairs" not in table[0]:
            continue
        ip, iv = table[0].index("privacy promise"), table[0].index("violated / checked pairs")
        for row in table[1:]:
            if len(row) > max(ip, iv) and OK_PROMISE.search(row[ip]) and (_count(row[iv]) or 0) > 0:
                out.append(f"contradiction: {row[0]} “{row[ip]}” beside {row[iv]} violated pairs")
    # Which mechanism?: the winner named in the success box must keep its claim in the table
    for s in ok:
        m = re.match(r"(.+?) has the least privacy cost", s["text"])
        for table in info["tables"]:
            if not m or not table or "verdict here" not in table[0]:
                continue
            iv = table[0].index("verdict here")
            for row in table[1:]:
                if row and row[0] == m.group(1).strip() and row[iv] in ("breaks its claim", "degenerate",
                                                                        "no result", "claim not measured"):
                    out.append(f"contradiction: “{m.group(1)}” named the winner, the table says “{row[iv]}”")
    return out


def no_mechanism(info: dict[str, Any]) -> list[str]:
    """Signs that an example ended without a mechanism (time limit, error, not solved)."""
    out = []
    for c in info["captions"]:
        if c.startswith("Status:") and re.search(r"time limit|infeasible|error|failed|stopped", c):
            out.append(f"no mechanism: {c}")
        if c.startswith("no mechanism"):
            out.append(f"no mechanism: a map says “{c}”")
    for a in info["alerts"]:
        # an error box is "no mechanism" when it says so; "broke its promise" is a result (a broken claim)
        if a["where"] == "main" and a["kind"] == "error" and NO_MECH.search(a["text"]):
            out.append(f"no mechanism: error “{a['text'][:140]}”")
        if a["where"] == "main" and a["text"].startswith("Not solved yet"):
            out.append("no mechanism: “Not solved yet” after the example")
    for table in info["tables"]:
        if table and "privacy promise" in table[0]:
            ip = table[0].index("privacy promise")
            out += [f"no mechanism: {r[0]} is “{r[ip]}”" for r in table[1:] if r[ip] in ("error", "not solved")]
    return list(dict.fromkeys(out))


def result_text(info: dict[str, Any]) -> str:
    """What the step shows as its result, in one line."""
    parts = []
    main = [a for a in info["alerts"] if a["where"] == "main"]
    verdict = next((a for a in main if re.search(r"promise|claim|least privacy cost|beats", a["text"])), None)
    if verdict:
        parts.append(f"[{verdict['kind']}] {verdict['text'].splitlines()[0][:110]}")
    keep = ("Utility loss", "Violations", "Privacy cost", "C-mDP loss", "Solve time")
    parts += [f"{m['label']} = {m['value']}" for m in info["metrics"] if m["label"].startswith(keep)][:4]
    parts += [c for c in info["captions"] if c.startswith("Status:")][:1]
    for table in info["tables"]:
        if table and "privacy promise" in table[0] and "utility loss" in table[0]:
            ip, il = table[0].index("privacy promise"), table[0].index("utility loss")
            parts += [f"{r[0]}: {r[il]}, {r[ip]}" for r in table[1:]]
    parts += [c for c in info["captions"] if re.match(r"\d+ of \d+ points", c)][:1]
    if not parts and main:
        parts.append(f"[{main[0]['kind']}] {main[0]['text'].splitlines()[0][:110]}")
    return " · ".join(parts)
