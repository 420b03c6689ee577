"""Walk every page of the dashboard in a real browser (headless Debian chromium, 1280×800) and report what a user
would see go wrong.

    python scripts/walk_ui.py                       # every page, screenshots in a temporary folder
    python scripts/walk_ui.py --only explore        # one page (its url path or title: home, which, trade-off …)
    python scripts/walk_ui.py --shots /tmp/walk     # screenshots kept in this folder

The app is started as ``scripts/measure_ui.py`` starts it (a fresh temporary result cache, a warm-up run that is
not counted). Each page is walked in a new browser session (the dashboard's defaults):

  Home           open; every example button (the dashboard's, the seeds' regime examples, the papers' settings in
                 the expander): each sets a whole problem, opens its page and solves there.
  Explore        open; Solve; one click on the map (a secret); two bad CSV uploads in "Your own points" (an
                 ``x,y`` header, garbage bytes); the first example of the sidebar.
  Which          open; the button that opens the winner of the cell on Explore.
  Compare        open; Solve all; the first example of the sidebar.
  Trade-off      open; Run sweep (the default).
  Trajectories   open (it solves); the paper's preset; the loss-against-ε curves.
  Learn          open; every tab; the link that sweeps δ on Trade-off, then Run sweep there.
  Reproduce      open (the claims ledger); the tables tab. Its "Rerun" button is not pressed (minutes of work).

Each step records the wall seconds from the click (or the page load) to the page being idle: no script run
(``stApp``'s ``data-test-script-state``), Streamlit's status widget gone (it shows only after 0.5 s of running), no
element left stale from the previous run, and the page's text unchanged for 1 s; the time is that of the last
change seen. Then what the page shows: exceptions
(``stException``), the result (verdict, metrics, status), and findings:

  contradiction   a success box beside an error box, or "kept its promise" / "holds on all pairs" beside a
                  count of violations > 0 for the same result, or a winner the table marks as breaking its claim
  raw key         a snake_case or dotted diagnostic key (``pair_cap``, ``d.shrink_t``) in visible text outside
                  code (tables' cells and headers included)
  no mechanism    an example that ends without a result (time limit, error, not solved)
  slow            an example that runs past the time its button or caption states ("about 2 s", "2.0 s (8.3 s
                  busy)", "Instant") by more than 2 s (the statements count the solve, not the page around it)
  None/nan        the word None, nan or NaN shown as a value (metrics, table cells, visible text)
  exception       a Python traceback on the page

A screenshot of each step (the whole page: the viewport is stretched to the page's height for the picture, then
set back) goes to ``--shots``. The load average of the machine is printed before and after, and per step, since
it is shared (2 cores): timings on a busy machine are not a quiet machine's.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure_ui import MAP, VIEW, wait_idle  # noqa: E402
from walk_ui_checks import (  # noqa: E402
    INSPECT,
    Step,
    contradictions,
    load1,
    no_mechanism,
    none_values,
    raw_keys,
    result_text,
    settle,
    stated_seconds,
    wait_tables,
)

from mdpviz.ui.server import CHROMIUM_ARGS, chromium_path, streamlit_server  # noqa: E402

PAGES = ("home", "explore", "which", "compare", "tradeoff", "trajectories", "learn", "reproduce")
TITLES = {"home": "Home", "explore": "Explore", "which": "Which mechanism?", "compare": "Compare",
          "tradeoff": "Trade-off", "trajectories": "Trajectories", "learn": "Learn", "reproduce": "Reproduce"}
SLACK_S = 2.0  # a stated time counts the solve; the page switch and its render come on top


# ---------------------------------------------------------------------------------------------- the walk


class Walker:
    def __init__(self, browser: Any, url: str, shots: Path) -> None:
        self.browser, self.url, self.shots = browser, url, shots
        self.steps: list[Step] = []
        self.page: Any = None
        self.ctx: Any = None
        self._example_help: dict[str, str] | None = None

    def new_session(self) -> Any:
        if self.ctx is not None:
            self.ctx.close()
        self.ctx = self.browser.new_context(viewport=VIEW)
        self.page = self.ctx.new_page()
        return self.page

    def close(self) -> None:
        if self.ctx is not None:
            self.ctx.close()

    def examples(self) -> dict[str, str]:
        """Example id → its button's description (the tooltip), from the dashboard's own list."""
        if self._example_help is None:
            import logging

            from mdpviz.ui import presets

            # "No runtime found": st.cache_data outside a server, as expected here
            logging.getLogger("streamlit.runtime.caching.cache_data_api").setLevel(logging.ERROR)
            self._example_help = {p["id"]: f"{p['label']}. {p.get('help', '')}" for p in presets.presets()}
        return self._example_help

    def step(self, page_name: str, name: str, act: Callable[[], Any], *, example: str | None = None,
             timeout_s: float = 300.0, after: Callable[[Step], None] | None = None) -> Step:
        """Run one user action, wait for the page to settle, inspect and screenshot it."""
        st = Step(page_name, name, load=load1())
        page = self.page
        t0 = time.perf_counter()
        try:
            act()
            st.seconds = settle(page, t0, timeout_s)
            wait_tables(page)
        except Exception as e:  # noqa: BLE001 - a failed step is a finding, the walk goes on
            st.status = "failed"
            st.findings.append(f"step failed: {type(e).__name__}: {_first_line(e)}")
            st.seconds = time.perf_counter() - t0
        try:
            info = page.evaluate(INSPECT)
        except Exception as e:  # noqa: BLE001
            info = {"alerts": [], "exceptions": [f"inspection failed: {e}"], "metrics": [], "tables": [],
                    "texts": [], "captions": []}
        st.result = result_text(info)
        for exc in info["exceptions"]:
            st.findings.append("exception: " + " | ".join(exc.splitlines()[:6])[:400])
        st.findings += contradictions(info) + raw_keys(info["texts"] + [c for t in info["tables"] for r in t
                                                                         for c in r]) + none_values(info)
        st.findings += self.other_tabs(st.findings)
        if example is not None:
            st.findings += no_mechanism(info)
            text = self.examples().get(example, "") if not example.startswith("text:") else example[5:]
            st.stated_s = stated_seconds(text)
            if st.stated_s is not None and st.seconds is not None and st.seconds > st.stated_s + SLACK_S:
                st.findings.append(f"slow: {st.seconds:.1f} s against the {st.stated_s:g} s it states "
                                   f"(+{SLACK_S:g} s allowed for the page)")
        if after is not None:
            after(st)
        if info["exceptions"] and st.status == "ok":
            st.status = "exception"
        elif st.status == "ok" and any(f.startswith("no mechanism") for f in st.findings):
            st.status = "no mechanism"
        st.shot = self.screenshot(f"{len(self.steps) + 1:02d}-{page_name}-{_slug(name)}")
        self.steps.append(st)
        secs = "—" if st.seconds is None else f"{st.seconds:.1f} s"
        print(f"[{len(self.steps):2d}] {page_name:<12} {name:<44} {secs:>8}  {st.status}  {st.result[:150]}",
              flush=True)
        for f in st.findings:
            print(f"       ! {f}", flush=True)
        return st

    def other_tabs(self, seen: list[str]) -> list[str]:
        """Raw keys and None values in the main area's tabs that are not shown (tabs switch in the browser, no
        rerun): each tab is opened, read, and the first one opened again."""
        page, out = self.page, []
        visible = "[data-testid='stMain'] [role='tab']:visible"
        tabs = page.locator(visible)

        def tab(name: str) -> Any:
            return page.locator(visible).filter(has_text=re.compile(f"^{re.escape(name)}$")).first

        try:
            names = [t.strip() for t in tabs.all_inner_texts()]
            if len(names) < 2:
                return []
            selected = next((n for n, t in enumerate(tabs.all()) if t.get_attribute("aria-selected") == "true"), 0)
            for n, name in enumerate(names):
                if n == selected or not tab(name).count():  # hidden by an outer tab opened meanwhile
                    continue
                tab(name).click(timeout=5_000)
                settle(page, time.perf_counter(), 60, quiet_s=0.5, min_s=0.6)  # a tab may rerun its fragment
                wait_tables(page, 3.0)
                info = page.evaluate(INSPECT)
                cells = [c for t in info["tables"] for r in t for c in r]
                for f in raw_keys(info["texts"] + cells) + none_values(info):
                    if f not in seen and f not in out:
                        out.append(f"{f} (tab “{name.strip()}”)")
            tab(names[selected]).click(timeout=5_000)
            settle(page, time.perf_counter(), 60, quiet_s=0.5, min_s=0.6)
        except Exception as e:  # noqa: BLE001 - the tabs are a bonus; the step's own checks stand
            out.append(f"tabs not read: {type(e).__name__}: {_first_line(e)}")
        return out

    def screenshot(self, stem: str) -> str:
        """The whole page: the viewport stretched to the main column's height, then set back."""
        page = self.page
        path = self.shots / f"{stem}.png"
        try:
            page.mouse.move(5, 5)
            height = page.evaluate("() => Math.max(...[...document.querySelectorAll("
                                   "'[data-testid=\"stMain\"], [data-testid=\"stSidebarContent\"]')]"
                                   ".map(e => e.scrollHeight), 800)")
            page.set_viewport_size({"width": VIEW["width"], "height": min(int(height) + 20, 7000)})
            page.wait_for_timeout(900)  # maps resize and redraw
            page.screenshot(path=str(path))
        finally:
            page.set_viewport_size(VIEW)
            page.wait_for_timeout(200)
        return str(path)

    def open(self, page_name: str, path: str = "") -> Step:
        page = self.new_session()
        return self.step(page_name, f"open /{path}", lambda: page.goto(f"{self.url}/{path}", timeout=60_000))

    def click(self, locator: Any) -> Callable[[], None]:
        def act() -> None:
            locator.scroll_into_view_if_needed(timeout=15_000)
            locator.click(timeout=15_000)
        return act

    def expand(self, label: str, sidebar: bool = False) -> None:
        """Open a collapsed expander by its label (no-op when open)."""
        root = self.page.locator("[data-testid='stSidebar']") if sidebar else self.page
        exp = root.locator("[data-testid='stExpander']").filter(has_text=label).first
        if exp.locator("details").get_attribute("open") is None:
            exp.locator("summary").click()
            self.page.wait_for_timeout(400)

    def sidebar_example(self, page_name: str) -> None:
        """The first button of the sidebar's examples (the same list as Home's)."""
        page = self.page
        self.expand("Examples: one click", sidebar=True)
        button = page.locator("[data-testid='stSidebar'] [class*='st-key-sidebar-'] button").first
        key = next(c for c in (button.locator("xpath=ancestor::*[contains(@class,'st-key-sidebar-')][1]")
                               .get_attribute("class") or "").split() if c.startswith("st-key-sidebar-"))
        preset_id = key.removeprefix("st-key-sidebar-")
        self.step(page_name, f"sidebar example {preset_id}", self.click(button), example=preset_id)

    # ------------------------------------------------------------------------------------------ pages

    def home(self) -> None:
        self.open("home")
        ids = [c.removeprefix("st-key-") for c in dict.fromkeys(self.page.evaluate(
            "() => [...document.querySelectorAll('[class*=\"st-key-home-\"]')].map(e => [...e.classList]"
            ".find(c => c.startsWith('st-key-home-')))"))]
        for key in ids:
            prefix, preset_id = next((p, key.removeprefix(p + "-")) for p in ("home-papers", "home-regime", "home")
                                     if key.startswith(p + "-"))
            page = self.new_session()
            t0 = time.perf_counter()
            page.goto(self.url, timeout=60_000)
            settle(page, t0, 60)
            if prefix == "home-papers":
                self.expand("The papers' own settings")
            self.step("home", f"example {preset_id}", self.click(page.locator(f".st-key-{key} button").first),
                      example=preset_id)

    def explore(self) -> None:
        self.open("explore", "explore")
        page = self.page
        self.step("explore", "Solve (default)", self.click(page.get_by_role("button", name="Solve", exact=True)))
        self.map_click()
        self.expand("Your own points", sidebar=True)
        for name, data in (("x,y header", b"x,y\n24.94,60.17\n24.95,60.18\n"),
                           ("garbage", bytes(range(256)) * 8)):
            upload = page.locator("[data-testid='stSidebar'] input[type='file']").first

            def act(upload: Any = upload, name: str = name, data: bytes = data) -> None:
                upload.set_input_files(files=[{"name": f"{_slug(name)}.csv", "mimeType": "text/csv", "buffer": data}])

            def shown(st: Step) -> None:
                texts = [a["text"] for a in page.evaluate(INSPECT)["alerts"] if a["kind"] == "error"]
                st.result = "error shown: " + (texts[0][:200] if texts else "NONE")
                if not texts:
                    st.findings.append("the bad upload shows no error")
            self.step("explore", f"upload bad CSV ({name})", act, after=shown)
        remove = page.locator("[data-testid='stSidebar'] [data-testid='stFileUploaderDeleteBtn'] button")
        if remove.count():
            self.step("explore", "remove the upload", self.click(remove.first))
        self.sidebar_example("explore")

    def map_click(self) -> None:
        page = self.page
        field_ = page.get_by_label("Selected secret x (index)", exact=True).and_(page.locator("input"))
        box = page.locator(MAP).first.bounding_box()
        before = field_.input_value()
        spots = [(fx, fy) for fx in (0.45, 0.3, 0.6, 0.75) for fy in (0.45, 0.3, 0.6, 0.75)]
        for n, (fx, fy) in enumerate(spots):
            def act(fx: float = fx, fy: float = fy) -> None:
                page.mouse.click(box["x"] + fx * box["width"], box["y"] + fy * box["height"])
            t0 = time.perf_counter()
            act()
            secs = settle(page, t0, 60, quiet_s=0.6, min_s=0.8)
            if field_.input_value() != before or n == len(spots) - 1:
                changed = field_.input_value() != before

                def note(st: Step, secs: float = secs, changed: bool = changed, n: int = n) -> None:
                    st.seconds = secs
                    st.result = (f"secret x{before} → x{field_.input_value()} ({n + 1} click(s) to hit one) · "
                                 + st.result) if changed else "no click on the map selected a secret"
                    if not changed:
                        st.findings.append("no click on the map selected a secret")
                self.step("explore", "click on the map (a secret)", lambda: None, after=note, timeout_s=5)
                return

    def which(self) -> None:
        self.open("which", "which")
        button = self.page.locator(".st-key-which_open button").first
        if button.count():
            self.step("which", "open the cell's winner on Explore", self.click(button),
                      example="text:" + button.inner_text())
        self.sidebar_example("which")

    def compare(self) -> None:
        self.open("compare", "compare")
        self.step("compare", "Solve all (default)",
                  self.click(self.page.get_by_role("button", name="Solve all", exact=True)))
        self.sidebar_example("compare")

    def tradeoff(self) -> None:
        self.open("tradeoff", "tradeoff")
        self.step("tradeoff", "Run sweep (default)",
                  self.click(self.page.get_by_role("button", name="Run sweep", exact=True)), timeout_s=600)
        self.sidebar_example("tradeoff")

    def trajectories(self) -> None:
        self.open("trajectories", "trajectories")
        page = self.page
        button = page.locator(".st-key-traj_preset button").first
        if button.count():
            self.step("trajectories", "the paper's preset", self.click(button), example="text:" + button.inner_text())
        page.get_by_role("tab", name="Loss vs ε").click()
        curves = page.get_by_role("button").filter(has_text=re.compile(r"loss and runtime against ε"))
        if curves.count():
            label = curves.first.inner_text()
            self.step("trajectories", "loss and runtime against ε", self.click(curves.first),
                      example="text:" + label, timeout_s=900)
        self.sidebar_example("trajectories")

    def learn(self) -> None:
        self.open("learn", "learn")
        page = self.page
        tabs = page.get_by_role("tab").all_inner_texts()
        for name in tabs[1:]:
            self.step("learn", f"tab {name}", self.click(page.get_by_role("tab", name=name, exact=True)))
        page.get_by_role("tab", name=tabs[3] if len(tabs) > 3 else tabs[0], exact=True).click()
        link = page.locator("[data-testid='stPageLink']").filter(has_text="Sweep δ")
        if link.count():
            self.step("learn", "link: sweep δ on Trade-off", self.click(link.first))
            self.step("learn", "… Run sweep there",
                      self.click(page.get_by_role("button", name="Run sweep", exact=True)), timeout_s=600)
        self.sidebar_example("learn")

    def reproduce(self) -> None:
        self.open("reproduce", "reproduce")
        self.step("reproduce", "tab Tables and reruns",
                  self.click(self.page.get_by_role("tab", name="Tables and reruns")))


def _first_line(e: BaseException) -> str:
    return (str(e).splitlines() or [""])[0][:200]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:50]


def page_of(name: str) -> str:
    """A page's walk from its url path or title (any case)."""
    n = name.lower().strip("/ ?")
    for p, title in TITLES.items():
        if n in (p, title.lower().strip("?"), _slug(title)):
            return p
    raise SystemExit(f"unknown page {name!r}; pages: {', '.join(PAGES)}")


def table(steps: list[Step]) -> str:
    rows = [("#", "page", "step", "seconds", "stated", "load", "status", "findings")]
    for n, s in enumerate(steps, 1):
        rows.append((str(n), s.page, s.name[:44], "—" if s.seconds is None else f"{s.seconds:.1f}",
                     "" if s.stated_s is None else f"{s.stated_s:g}", f"{s.load:.1f}", s.status,
                     str(len(s.findings)) if s.findings else ""))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) if i in (1, 2, 6) else c.rjust(w) for i, (c, w) in
                               enumerate(zip(r, widths, strict=True))).rstrip() for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help=f"walk one page ({', '.join(PAGES)}; or its title), or several, comma-separated")
    ap.add_argument("--shots", type=Path, help="folder for the screenshots (default: a new temporary folder)")
    args = ap.parse_args()
    chromium = chromium_path()
    if chromium is None:
        sys.exit("chromium not found (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    pages = [page_of(p) for p in args.only.split(",")] if args.only else list(PAGES)
    shots = args.shots or Path(tempfile.mkdtemp(prefix="mdpviz-walk-"))
    shots.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    cache = tempfile.mkdtemp(prefix="mdpviz-walk-cache-")
    started = time.perf_counter()
    with streamlit_server({"MDPVIZ_CACHE_DIR": cache}) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        warm = browser.new_page(viewport=VIEW)  # the server's first script run (imports) is not a user's cost
        warm.goto(url)
        warm.wait_for_selector("text=What ε means in metres", timeout=60_000)
        wait_idle(warm)
        warm.close()
        walker = Walker(browser, url, shots)
        try:
            for p in pages:
                print(f"-- {TITLES[p]}", flush=True)
                try:
                    getattr(walker, p)()
                except Exception as e:  # noqa: BLE001 - one page's broken walk does not stop the others
                    walker.steps.append(Step(p, "walk aborted", status="failed",
                                             findings=[f"{type(e).__name__}: {_first_line(e)}"]))
                    print(f"       ! walk of {p} aborted: {e}", flush=True)
        finally:
            walker.close()
            browser.close()
    load_after = os.getloadavg()
    steps = walker.steps
    print()
    print(f"headless chromium {VIEW['width']}×{VIEW['height']}, fresh result cache; {len(steps)} steps in "
          f"{time.perf_counter() - started:.0f} s; load average {load_before[0]:.1f} before, {load_after[0]:.1f} "
          f"after (1/5/15 min: {' '.join(f'{v:.1f}' for v in load_before)} → "
          f"{' '.join(f'{v:.1f}' for v in load_after)}), on {os.cpu_count()} CPUs")
    print(table(steps))
    findings = [(n, s, f) for n, s in enumerate(steps, 1) for f in s.findings]
    print(f"\nfindings ({len(findings)}):" if findings else "\nno findings")
    for n, s, f in findings:
        print(f"  [{n}] {s.page} / {s.name}: {f}")
    print(f"\nscreenshots in {shots}")


if __name__ == "__main__":
    main()
