"""The claims ledger: every headline claim of the seed papers, one verdict each, with its measured cause.

Claims are data (``claims.json``). A claim's ``test`` is a measurement over the finished records of an experiment
(a ladder or a table) and the band the paper's claim allows; its ``cause`` is a second measurement that must hold
for the cause to count as measured. Verdicts:

- **reproduced**: in every group our mean lies in the claim's band (for ``max``, the largest run does; for a
  ``strict`` test, a claimed effect such as "A beats B", the whole 95 % interval does), and no run of the tested
  method is degenerate;
- **contradicted**: in some group the whole 95 % interval lies outside the band (or the tested release is
  degenerate), and the cause's own measurement holds (its mean in its band: the cause is then measured, shown
  with its number);
- **not reproduced, cause unknown**: otherwise: no cause is given, the cause's measurement fails, or the interval
  still meets the band (more runs needed);
- **not tested**: the ledger says why (a static reason, or a ``blocked`` measurement of ours that stands in the
  test's way, such as our solver failing where the claim's number would be read);
- **not run**: the experiment's records are missing (the evidence names the command).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MdpvizError
from ..paths import atomic_write
from ..sweep import recorded
from . import common as cm
from .base import rows_of
from .ladders import ladder_table, ledger_data, mean_ci, metric_value
from .registry import get_experiment, points_file
from .report import SHIPPED_DIR

REPRODUCED = "reproduced"
CONTRADICTED = "contradicted"
UNKNOWN = "not reproduced, cause unknown"
NOT_TESTED = "not tested"
NOT_RUN = "not run"
VERDICTS = (REPRODUCED, CONTRADICTED, UNKNOWN, NOT_TESTED, NOT_RUN)
PAIR_BY = ("seed", "param.eps", "problem.k", "problem.city")  # a change or ratio compares runs of one setting
PAPER_NAMES = {"panda": "PAnDA (CCS 2025)", "benders": "Benders decomposition (IJCAI 2024)",
               "aipo": "AIPO (arXiv 2601.09946)", "cmdp": "C-mDP (arXiv 2605.26351)", "dista": "DISTA-LP (NDSS 2027)"}


@dataclass(frozen=True)
class Estimate:
    """One group's measurement: mean and 95 % interval over the runs (or pairs of runs), and their count."""

    group: str
    mean: float
    lo: float
    hi: float
    n: int
    degenerate: int = 0  # runs of the tested method with a degenerate verdict
    exact: bool = False  # a largest run or a 0/1 fact: one run is a measurement, not an interval of width 0

    def text(self, unit: str) -> str:
        """'eps = 1.0: −66.11 [−69.31, −62.91] % (n = 10)'."""
        if self.n == 0:
            return (f"{self.group}: " if self.group else "") + "no runs with this number"
        body = _num(self.mean) + (f" [{_num(self.lo)}, {_num(self.hi)}]" if self.n > 1 and self.hi > self.lo else "")
        return (f"{self.group}: " if self.group else "") + f"{body}{(' ' + unit) if unit else ''} (n = {self.n})"


@dataclass
class Judged:
    """A claim with its verdict, cause and evidence."""

    claim: dict[str, Any]
    verdict: str
    measured: list[Estimate] = field(default_factory=list)
    cause: str = ""
    cause_measured: list[Estimate] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)  # measured facts shown beside the verdict

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: paper, claim, verdict, cause, evidence and the measured numbers."""
        c = self.claim
        unit = c.get("test", {}).get("unit", "") if c.get("test") else ""
        return {"id": c["id"], "paper": c["paper"], "claim": c["claim"], "where": c["where"], "verdict": self.verdict,
                "rule": rule_text(c["test"]) if c.get("test") else "",
                "measured": [e.text(unit) for e in self.measured],
                "cause": self.cause, "evidence": " ; ".join(self.evidence), "note": c.get("note", ""),
                "also_measured": self.context}


def _num(v: float) -> str:
    if not math.isfinite(v):
        return "—"
    if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
        return f"{v:.3g}"
    return f"{v:,.4g}" if abs(v) >= 1000 else f"{v:.4g}"


def rule_text(test: Mapping[str, Any]) -> str:
    """The test in words: 'change of A's loss against B's, each ε, within [−95.5, −61.1] %'."""
    lo, hi = test["band"]
    unit = test.get("unit", "")
    band = (f"≤ {_num(hi)}" if lo is None else f"≥ {_num(lo)}" if hi is None else
            f"= {_num(lo)}" if lo == hi else f"within [{_num(lo)}, {_num(hi)}]") + (f" {unit}" if unit else "")
    what = test.get("what") or test["of"]["metric"]
    stat = {"mean": "mean of", "max": "largest run of", "change_pct": "change in % of",
            "ratio": "ratio of"}[test["stat"]]
    each = f", each {', '.join(k.split('.')[-1] for k in test['each'])}" if test.get("each") else ""
    return f"{stat} {what}{each}: {band}" + (" (its whole 95 % interval)" if test.get("strict") else "")


# ---------------------------------------------------------------- records

class Records:
    """The finished rows of each experiment's full form in a reports folder (read once, whatever code made them)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._rows: dict[str, list[dict[str, Any]]] = {}

    def rows(self, experiment: str) -> list[dict[str, Any]]:
        """The experiment's rows (``rows_of``), empty when its points file is missing."""
        if experiment not in self._rows:
            exp = get_experiment(experiment)
            path = points_file(self.folder, experiment, "full")
            run = recorded(exp.points("full", "paper"), path) if path.exists() else None
            self._rows[experiment] = rows_of(run.records) if run else []
        return self._rows[experiment]


def _select(records: Records, ref: Mapping[str, Any]) -> list[dict[str, Any]]:
    where = ref.get("where", {})
    return [r for r in records.rows(ref["experiment"]) if all(r.get(k) == v for k, v in where.items())]


def _groups(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> dict[str, list[Mapping[str, Any]]]:
    """``common.group`` with each group named in words: 'eps = 0.5' ('' without keys)."""
    return {", ".join(f"{k.split('.')[-1]} = {v}" for k, v in zip(keys, values, strict=True)): list(members)
            for values, members in cm.group(rows, *keys).items()}


def estimates(records: Records, test: Mapping[str, Any]) -> list[Estimate]:
    """The test's statistic in each group (``each`` keys), over the selected rows (a change or a ratio against
    ``vs`` pairs rows by ``pair_by``: PAIR_BY and the ``each`` keys unless the test names others)."""
    keys = list(test.get("each", []))
    out = []
    vs_rows = _select(records, test["vs"]) if "vs" in test else []
    for group, rows in _groups(_select(records, test["of"]), keys).items():
        metric = test["of"]["metric"]
        bad = sum(1 for r in rows if r.get("degenerate"))
        if test["stat"] in ("change_pct", "ratio"):
            pair = list(test.get("pair_by", [*PAIR_BY, *keys]))
            base: dict[tuple[Any, ...], float | None] = {}
            for vs_row in vs_rows:
                key = tuple(vs_row.get(k) for k in pair)
                if key in base:
                    raise MdpvizError(f"Two baseline runs share the pairing key {dict(zip(pair, key))} in "
                                      f"{test['vs']}; add the setting that tells them apart to `pair_by`.")
                base[key] = metric_value(vs_row, test["vs"]["metric"])
            vals = []
            for r in rows:
                a, b = metric_value(r, metric), base.get(tuple(r.get(k) for k in pair))
                if a is not None and b:
                    vals.append(100.0 * (a / b - 1.0) if test["stat"] == "change_pct" else a / b)
        else:
            vals = [v for r in rows if (v := metric_value(r, metric)) is not None]
        if test["stat"] == "max":
            top = max(vals) if vals else math.nan
            out.append(Estimate(group, top, top, top, len(vals), bad, exact=True))
        else:
            mean, lo, hi, n = mean_ci(vals)
            out.append(Estimate(group, mean, lo, hi, n, bad, exact=metric.endswith("?")))
    return out


def inside(e: Estimate, band: Sequence[float | None]) -> bool:
    """Whether the estimate's mean lies in the band (None = an open side)."""
    lo, hi = band
    return e.n > 0 and (lo is None or e.mean >= lo) and (hi is None or e.mean <= hi)


def _interval(e: Estimate) -> tuple[float, float]:
    """The estimate's 95 % interval; unbounded for a single run of a mean (one run gives no interval)."""
    return (e.lo, e.hi) if e.exact or e.n > 1 else (-math.inf, math.inf)


def within(e: Estimate, band: Sequence[float | None]) -> bool:
    """Whether the estimate's whole 95 % interval lies in the band (a "strict" test: the effect is clear)."""
    lo, hi = band
    e_lo, e_hi = _interval(e)
    return e.n > 0 and (lo is None or e_lo >= lo) and (hi is None or e_hi <= hi)


def excluded(e: Estimate, band: Sequence[float | None], margin: float = 0.0) -> bool:
    """Whether the estimate's whole 95 % interval lies outside the band, moved ``margin`` into it: the claim is
    clearly not met there. With a margin, a claimed effect ("A beats B": a change ≤ 0) is clearly absent when the
    interval rules out every effect larger than the margin."""
    lo, hi = band
    e_lo, e_hi = _interval(e)
    return e.n > 0 and ((lo is not None and e_hi < lo + margin) or (hi is not None and e_lo > hi - margin))


# ---------------------------------------------------------------- verdicts

def judge(claim: Mapping[str, Any], records: Records) -> Judged:
    """The claim's verdict from the records (see the module docstring)."""
    c = dict(claim)
    if not c.get("test"):
        return Judged(c, NOT_TESTED, cause=c.get("why", ""), evidence=list(c.get("evidence", [])))
    test = c["test"]
    exps = {test["of"]["experiment"], *([test["vs"]["experiment"]] if "vs" in test else [])}
    where = "docs/reproduce" if records.folder.resolve() == SHIPPED_DIR else str(records.folder)
    out = "" if where == "docs/reproduce" else f" --out {where}"
    evidence = [f"{where}/{e}/report.md (`python -m mdpviz reproduce {e} --workers 2{out}`)" for e in sorted(exps)]
    evidence += list(c.get("evidence", []))
    if c.get("witness"):
        evidence.append(f"`python -m mdpviz reproduce --witness {c['id']}`")
    measured = estimates(records, test)
    if (blocked := c.get("blocked")) is not None:
        # the test cannot be read: a measured fact of our run stands in its way (e.g. our solver fails there)
        est = estimates(records, blocked["check"])
        if est and all(inside(e, blocked["check"]["band"]) for e in est):
            shown = "; ".join(e.text(blocked["check"].get("unit", "")) for e in est)
            return Judged(c, NOT_TESTED, [], f"{blocked['text']} Measured: {rule_text(blocked['check'])}: {shown}.",
                          est, evidence)
    if not measured or any(e.n == 0 for e in measured):
        selected = _select(records, test["of"])
        if not selected:
            why = "no records of " + ", ".join(sorted(exps)) + f" in {where}: run the commands in the evidence"
        else:
            statuses = ", ".join(sorted({str(r.get("status") or r.get("error") or "?") for r in selected}))
            why = (f"{len(selected)} runs selected, none with a number for `{test['of']['metric']}` (their "
                   f"status: {statuses})")
        return Judged(c, NOT_RUN, measured, cause=why, evidence=evidence)
    # a degenerate release never reproduces a claim about what it achieves (loss, privacy); a claim about its
    # cost (bytes) sets ``"degenerate_blocks": false``
    degenerate = sum(e.degenerate for e in measured) if test.get("degenerate_blocks", True) else 0
    # a "strict" claim (an effect: "A beats B") needs its whole interval in the band; it is clearly absent when
    # the interval rules out every effect larger than the claim's ``margin`` (an equivalence margin)
    holds = within if test.get("strict") else inside
    if all(holds(e, test["band"]) for e in measured) and not degenerate:
        return Judged(c, REPRODUCED, measured, evidence=evidence)
    margin = float(test.get("margin", 0.0))
    clear = degenerate > 0 or any(excluded(e, test["band"], margin) for e in measured)
    cause = c.get("cause")
    if not clear:
        return Judged(c, UNKNOWN, measured, "our runs do not settle it: the mean misses the claim's band but the "
                      "95 % interval still meets it (more runs are needed)"
                      + (f"; proposed cause: {cause['text']}" if cause else ""), evidence=evidence)
    if cause is None:
        return Judged(c, UNKNOWN, measured, cause="no cause measured yet", evidence=evidence)
    checks = cause["check"] if isinstance(cause["check"], list) else [cause["check"]]
    got = [(chk, estimates(records, chk)) for chk in checks]
    shown = "; ".join(f"{rule_text(chk)}: " + "; ".join(e.text(chk.get("unit", "")) for e in est) for chk, est in got)
    measured_cause = [e for _, est in got for e in est]
    if all(est and all(inside(e, chk["band"]) for e in est) for chk, est in got):
        text = f"{cause['text']} Measured: {shown}."
        if degenerate and all(inside(e, test["band"]) for e in measured):
            text = (f"the number is in the band but {degenerate} run(s) of the tested method are degenerate. "
                    + text)
        return Judged(c, CONTRADICTED, measured, text, measured_cause, evidence)
    return Judged(c, UNKNOWN, measured, f"the proposed cause did not measure out ({cause['text']} Wanted: "
                  f"{shown or 'no runs'}).", measured_cause, evidence)


def judge_with_context(claim: Mapping[str, Any], records: Records) -> Judged:
    """``judge``, plus the claim's ``context`` measurements (facts shown beside the verdict, no band)."""
    j = judge(claim, records)
    for test in claim.get("context", []):
        est = estimates(records, test)
        j.context.append(f"{test['what']}: " + "; ".join(e.text(test.get("unit", "")) for e in est))
    return j


def claims() -> list[dict[str, Any]]:
    """The ledger's claims, in file order."""
    return list(ledger_data()["claims"])


def ledger(folder: Path | Records | None = None) -> list[Judged]:
    """Every claim judged from the records in ``folder`` (default: the committed runs in docs/reproduce), or from an
    already open ``Records`` (its points files are then not read again)."""
    records = folder if isinstance(folder, Records) else Records(folder or SHIPPED_DIR)
    return [judge_with_context(c, records) for c in claims()]


def find_claim(claim_id: str) -> dict[str, Any]:
    """The claim with this id; an error listing the ids otherwise."""
    for c in claims():
        if c["id"] == claim_id:
            return c
    raise MdpvizError(f"Unknown claim `{claim_id}`; known: {', '.join(c['id'] for c in claims())}.")


# ---------------------------------------------------------------- text

def counts(judged: Sequence[Judged]) -> dict[str, int]:
    """How many claims got each verdict."""
    out = {v: 0 for v in VERDICTS}
    for j in judged:
        out[j.verdict] += 1
    return {k: v for k, v in out.items() if v}


CAUSE_LABELS = {NOT_TESTED: "Why not tested", UNKNOWN: "Why not reproduced"}  # else "Cause"


def claim_parts(d: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A judged claim (``Judged.as_dict``) as labelled parts, in the order every view shows them: Test, Ours,
    Cause (or why not), The cause measured, Also measured (each), Note, Evidence; empty parts left out."""
    cause, _, measured = str(d["cause"]).partition(" Measured: ")
    parts = [("Test", d["rule"]), ("Ours", "; ".join(d["measured"])),
             (CAUSE_LABELS.get(d["verdict"], "Cause"), cause), ("The cause, measured", measured)]
    parts += [("Also measured", fact) for fact in d["also_measured"]]
    parts += [("Note", d["note"]), ("Evidence", d["evidence"])]
    return [(label, text) for label, text in parts if text]


def plain_text(judged: Sequence[Judged]) -> str:
    """The ledger for a terminal: per paper, each claim with its verdict, measurement and cause."""
    lines = ["Claims ledger: " + ", ".join(f"{v} {n}" for v, n in counts(judged).items())]
    for paper in PAPER_NAMES:
        mine = [j for j in judged if j.claim["paper"] == paper]
        if not mine:
            continue
        lines += ["", PAPER_NAMES[paper]]
        for j in mine:
            d = j.as_dict()
            lines.append(f"  [{j.verdict}] {d['claim']} ({d['where']}; id {d['id']})")
            lines += [f"      {label.lower()}: {text}" for label, text in claim_parts(d)]
    return "\n".join(lines) + "\n"


def markdown(judged: Sequence[Judged], records: Records) -> str:
    """docs/reproduce/CLAIMS.md: one section per paper, each claim with its verdict, then its ladder table (from
    ``records``, the runs the claims were judged on)."""
    out = ["# Claims ledger", "",
           "Written by `python -m mdpviz reproduce` (and `reproduce --claims --out FOLDER`) from the finished points "
           "in this folder and the claims in `mdpviz/reproduce/claims.json`. Each headline claim of the five seed "
           "papers gets one verdict: **reproduced**, **contradicted** (with its measured cause), **not reproduced, "
           "cause unknown**, or **not tested** (with why). Numbers are means with their 95 % interval (Student t) "
           "over the runs; a cause counts only when its own measurement holds.", "",
           "How a claim is judged: its band is the paper's stated range or bound, or 0.8–1.25× a single number (for a "
           "change in %, 0.8–1.25× the ratio 1 + change it implies). **Reproduced**: our mean lies in the band in "
           "every group (a claimed effect, \"A beats B\", needs its whole 95 % interval there) and no tested release "
           "is degenerate. **Contradicted**: the interval lies clearly outside the band (or the release is "
           "degenerate) and the cause's own measurement holds. **Not reproduced, cause unknown**: anything else "
           "(the proposed cause fails, or more runs are needed). **Not tested**: the reason is given.", "",
           "Verdicts: " + ", ".join(f"{v} {n}" for v, n in counts(judged).items()) + ".", ""]
    ladders = {name: lad for name, lad in ledger_data()["ladders"].items()}
    for paper in PAPER_NAMES:
        mine = [j for j in judged if j.claim["paper"] == paper]
        if not mine:
            continue
        out += [f"## {PAPER_NAMES[paper]}", ""]
        for j in mine:
            d = j.as_dict()
            out.append(f"- **{d['claim']}** ({d['where']}) — **{j.verdict}**.")
            out += [f"  - {label}: {text}" + ("" if text.endswith(".") else ".") for label, text in claim_parts(d)]
        for name, lad in ladders.items():
            if lad["paper"] == paper:
                rows = records.rows(name)
                if rows:
                    out += ["", f"### {lad['title']}", "", ladder_table(name, rows)]
        out.append("")
    return "\n".join(out) + "\n"


def write_claims(folder: Path) -> Path:
    """``folder/CLAIMS.md`` and ``folder/CLAIMS.json`` (the ``--claims --json`` list, for pages that show a claim
    without judging the ledger again): the ledger judged from the runs in ``folder``. Returns the Markdown's path."""
    records = Records(folder)
    judged = ledger(records)
    text = markdown(judged, records)
    data = json.dumps([j.as_dict() for j in judged], indent=1, ensure_ascii=False) + "\n"
    atomic_write(folder / "CLAIMS.json", lambda p: p.write_text(data, encoding="utf-8"))
    path = folder / "CLAIMS.md"
    atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))
    return path
