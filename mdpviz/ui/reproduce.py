"""The Reproduce page's views: a shipped or freshly run report, the paper's numbers beside ours, and a live rerun.

Shipped reports are the committed full runs in ``docs/reproduce/`` (read once per file change, so they show at
once); a live rerun of the quick form goes to the cache folder and resumes from its points file if interrupted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from mdpviz.paths import cache_dir
from mdpviz.reproduce import Experiment, experiments, paper_info, reproduce
from mdpviz.reproduce.ladders import LEDGER_FILE, ladder_cells, ledger_data
from mdpviz.reproduce.ledger import (
    CAUSE_LABELS,
    CONTRADICTED,
    NOT_RUN,
    NOT_TESTED,
    PAPER_NAMES,
    REPRODUCED,
    UNKNOWN,
    Records,
    claim_parts,
    ledger,
)
from mdpviz.reproduce.report import SHIPPED_DIR, chart_figure, folder_name, load_report, shown_rows

from . import glossary

CAUSE_SHOWN = ("Cause", *CAUSE_LABELS.values())  # shown under the claim; the other parts one click away

# verdict -> (Streamlit colour, icon) of its badge
BADGES = {REPRODUCED: ("green", ":material/check_circle:"), CONTRADICTED: ("red", ":material/cancel:"),
          UNKNOWN: ("orange", ":material/help:"), NOT_TESTED: ("gray", ":material/block:"),
          NOT_RUN: ("gray", ":material/hourglass_empty:")}


def live_dir() -> Path:
    """Where the page's own reruns go (the per-user cache folder)."""
    return cache_dir() / "reproduce"


def by_paper() -> dict[str, list[Experiment]]:
    """The experiments grouped by paper, in registry order."""
    out: dict[str, list[Experiment]] = {}
    for e in experiments():
        out.setdefault(e.paper, []).append(e)
    return out


def paper_label(paper: str) -> str:
    """A paper's short title (after its authors' prefix)."""
    title = paper_info(paper)["title"]
    return title.split(":", 1)[-1].strip() if ":" in title else title


@st.cache_data(show_spinner=False, max_entries=64)
def _load(folder: str, stamp: float) -> dict[str, Any] | None:
    return load_report(Path(folder))


def available(exp: Experiment, mode: str, size: str = "quick") -> dict[str, Path]:
    """The reports there are for this experiment and mode: shipped (full, else quick) and the page's own rerun."""
    out = {}
    for origin, folder in (("shipped full run", SHIPPED_DIR / folder_name(exp.name, "full", mode)),
                           ("shipped quick run", SHIPPED_DIR / folder_name(exp.name, "quick", mode)),
                           (f"your {size} rerun", live_dir() / folder_name(exp.name, size, mode))):
        if (folder / "meta.json").exists():
            out[origin] = folder
    if "shipped full run" in out:
        out.pop("shipped quick run", None)
    return out


def load(folder: Path) -> dict[str, Any] | None:
    """A report folder, read once per change of its files."""
    return _load(str(folder), (folder / "meta.json").stat().st_mtime)


def _points_text(meta: dict[str, Any]) -> str:
    """How much of the grid the run covered, e.g. "60 of 176 points (54 computed, 6 saved) in 1,205 s"."""
    done = int(meta.get("computed", 0)) + int(meta.get("reused", 0))
    total = int(meta.get("points", done))
    parts = f"{meta.get('computed', 0)} computed, {meta.get('reused', 0)} from saved points"
    if not meta.get("computed") and meta.get("points_wall_s"):  # a report made from another run's points
        return f"{done} of {total} points ({parts}; {float(meta['points_wall_s']):,.0f} s of solve time when they ran)"
    return f"{done} of {total} points ({parts}) in {float(meta.get('wall_s', 0.0)):,.0f} s"


def header(report: dict[str, Any], origin: str) -> None:
    """The report's provenance line and its verdict counts."""
    meta = report["meta"]
    st.caption(f"{origin}: {meta['date']} · {meta['machine']} · load {meta['load_start']} → {meta['load_end']} · "
               f"{meta['size']} form, {meta['mode']} mode, {meta['backend']} · {_points_text(meta)} · "
               f"`{meta['command']}`")
    if meta.get("stopped"):
        st.warning(f"A partial run: it stopped (time budget or Stop) after {_points_text(meta)}; rows for the points "
                   "it did not reach are missing (the report lists them under \"Not run\"). Rerunning its command "
                   "resumes from the saved points.")
    frame = report["comparison"]
    counts = frame["verdict"].value_counts()
    cols = st.columns(4)
    cols[0].metric("rows", len(frame))
    cols[1].metric("agree with the paper", int(counts.get("agrees", 0) + counts.get("bound holds", 0)))
    cols[2].metric("differ", int(counts.get("differs", 0) + counts.get("bound fails", 0)))
    cols[3].metric("ours only / paper only", int(sum(v for k, v in counts.items() if k.startswith(("paper", "no")))))


def tables(report: dict[str, Any]) -> None:
    """One tab per paper table: the paper's number beside ours, with the ratio, verdict and reason."""
    frame: pd.DataFrame = report["comparison"]
    names = list(dict.fromkeys(frame["table"]))
    for tab, name in zip(st.tabs(names), names, strict=True):
        with tab:
            st.dataframe(shown_rows(frame[frame["table"] == name]), hide_index=True, width="stretch")


def chart(exp: Experiment, report: dict[str, Any]) -> None:
    """The experiment's chart: our curves with the paper's points overlaid."""
    rows = report["comparison"].to_dict("records")
    fig = chart_figure(rows, exp.chart, exp.title)
    st.plotly_chart(fig, config={"displayModeBar": False}, key=f"repro_chart_{exp.name}")
    spread = ("its 95 % interval (Student t)" if exp.name.endswith("-ladder") else "± 1.96·std over seeds")
    st.caption(f"Lines: ours ({spread}). Open markers on dotted lines: the paper's numbers, which "
               f"ran on {paper_info(exp.paper)['hardware']}.")


def reasons(report: dict[str, Any]) -> None:
    """Why rows differ from the paper, grouped by reason, and the run's settings."""
    frame: pd.DataFrame = report["comparison"]
    differ = frame[frame["verdict"].isin(["differs", "bound fails"]) & frame["reason"].notna()]
    with st.expander(f"Why they differ ({len(differ)} rows)", expanded=False):
        for reason, part in differ.groupby("reason", sort=False):
            where = ", ".join(f"{m} {s}" for m, s in part[["method", "setting"]].drop_duplicates().head(6).values)
            st.markdown(f"- **{reason}** — {where}{' …' if len(part) > 6 else ''}")
    with st.expander("Settings and scope of this run", expanded=False):
        md = report["markdown"]
        start = md.find("## Settings and scope")
        end = md.find("\nVerdicts:")
        st.markdown(md[start:end] if start >= 0 else "(not recorded)")


def rerun(exp: Experiment, mode: str, size: str) -> None:
    """Run the quick form now, with a progress bar; finished points survive an interruption."""
    bar = st.progress(0.0, text=f"{exp.name}: starting the {size} form")

    def progress(rec: dict[str, Any], done: int, total: int) -> None:
        pt = rec["point"]
        what = rec.get("error") or (rec.get("rows") or [{}])[0].get("status", "")
        bar.progress(done / max(total, 1), text=f"{done}/{total} points · {pt['mechanism'] or pt['tags'].get('label')} "
                     f"K = {pt['problem'].get('k')} seed {pt['seed']}: {str(what)[:60]}")

    reproduce(exp.name, size=size, mode=mode, out_dir=live_dir(), progress=progress,
              command=f"Reproduce page: {exp.name} --size {size} --mode {mode}")
    bar.progress(1.0, text="done")


def _stamp() -> float:
    """Latest change of the ledger's inputs (the claims file and the committed points files)."""
    files = [LEDGER_FILE, *sorted((SHIPPED_DIR / "_points").glob("*.jsonl"))]
    return max(f.stat().st_mtime for f in files if f.exists())


@st.cache_resource(show_spinner=False, max_entries=2)
def _records(stamp: float) -> Records:
    """The committed runs' records, read once per change of the files (the ledger and the ladders share them)."""
    return Records(SHIPPED_DIR)


@st.cache_data(show_spinner="Judging the claims from the committed runs…", max_entries=4)
def _ledger(stamp: float) -> list[dict[str, Any]]:
    return [j.as_dict() for j in ledger(_records(stamp))]


@st.cache_data(show_spinner=False, max_entries=8)
def _ladder(name: str, stamp: float) -> pd.DataFrame | None:
    rows = _records(stamp).rows(name)
    if not rows:
        return None
    head, lines = ladder_cells(name, rows)
    return pd.DataFrame(lines, columns=head)


# how the ledger judges a claim, for the page's legend
JUDGED = (
    "- **The band** is the paper's stated range or bound, or 0.8–1.25× a single number (for a change in %, "
    "0.8–1.25× the ratio it implies: \"76 % lower\" is a ratio of 0.24, so 0.19–0.30).\n"
    "- **Reproduced**: our mean lies in the band for every setting tested; a claimed effect (\"A beats B\") "
    "needs its whole 95 % interval there; a degenerate release (collapsed, erased) never reproduces.\n"
    "- **Contradicted**: our interval lies clearly outside the band, and the cause's own measurement (a "
    "rung of the ablation ladder, a privacy witness, a solver fact) holds.\n"
    "- **Not reproduced, cause unknown**: the proposed cause did not measure out, or more runs are needed.\n"
    "- **Not tested**: the reason is given (data we do not hold, or our own solver failing where the number "
    "would be read).\n"
    "- **Ladder**: the paper's method as written, then one change at a time toward the authors' published "
    "code; the rung where the paper's number appears, and its measured privacy, is the cause.")


def ledger_view() -> None:
    """The claims ledger: one card per paper, each claim in plain words with its verdict and cause; its test,
    measurements, evidence and the paper's ablation ladder in an expander."""
    stamp = _stamp()
    judged = _ledger(stamp)
    tally = counts_of(judged)
    st.markdown("Every headline claim of the five seed papers, judged from the committed full runs: "
                + ", ".join(f"**{n} {v}**" for v, n in tally.items()) + ". A cause counts only when its own "
                "measurement holds; numbers are means with their 95 % interval over the runs.")
    with st.expander("How a claim is judged", expanded=False):
        st.markdown(JUDGED, help=glossary.help_for(JUDGED))
    ladders = ledger_data()["ladders"]
    for paper, title in PAPER_NAMES.items():
        mine = [j for j in judged if j["paper"] == paper]
        if not mine:
            continue
        with st.container(border=True):
            st.markdown(f"##### {title}")
            for j in mine:
                colour, icon = BADGES[j["verdict"]]
                st.markdown(f":{colour}-badge[{icon} {j['verdict']}] **{j['claim']}** · {j['where']}",
                            help=glossary.help_for(j["claim"]))
                parts = claim_parts(j)
                for label, text in parts:
                    if label in CAUSE_SHOWN:  # its terms defined in the tooltip
                        st.markdown(f":gray[{label}: {text}]", help=glossary.help_for(text))
                with st.expander("Test, numbers and evidence", expanded=False):
                    for label, text in parts:
                        if label not in CAUSE_SHOWN:
                            st.markdown(f"**{label}**: {text}", help=glossary.help_for(text))
            for name, lad in ladders.items():
                if lad["paper"] == paper and (table := _ladder(name, stamp)) is not None:
                    with st.expander(f"Ladder: {lad['title']}", expanded=False):
                        st.caption(lad["summary"] + " Means with their 95 % interval over the runs.")
                        st.dataframe(table, hide_index=True, width="stretch")


def counts_of(judged: list[dict[str, Any]]) -> dict[str, int]:
    """How many claims got each verdict (verdict order)."""
    out: dict[str, int] = {}
    for v in BADGES:
        if n := sum(1 for j in judged if j["verdict"] == v):
            out[v] = n
    return out
