"""What a result means in plain words: what the mechanism did and whether it kept its privacy promise.

One function, :func:`verdict`, turns a :class:`~mdpviz.mechanisms.Result` and its measured evaluation
(``mdpviz.metrics.evaluate``) into a short :class:`Verdict`: a level (``ok``, ``info``, ``warning``, ``error``), a
headline, and the violation count stated against the pairs the mechanism claims. The dashboard shows it above the
metrics and the CLI can print it; no Streamlit here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from .contract import Result
from .explain import format_m, format_m_pair, format_s
from .metrics import Evaluation
from .panda.evaluate import claim_refuted
from .reference import own_model

# a claim over every ordered pair of X: "all pairs", "all pairs in the planar projection", "all pairs of points of
# the plane ..." (X is part of the plane); not "all pairs at 2ε", which is a claim at another budget
_ALL_PAIRS = re.compile(r"^all pairs($|[;,.]| in | of )")
# statuses of a mechanism that was not proven optimal, in words ({took}: " after 1 min 0 s")
UNFINISHED = {"time limit": "Stopped at the time limit{took}", "interrupted": "Interrupted{took}",
              "iteration limit": "Stopped at its iteration limit{took}", "stalled": "Stalled{took}",
              "incomplete": "Incomplete{took} (some of its LPs stopped before their optimum)",
              "error": "Ended by a solver failure{took}"}
# a claim of ε-mDP at a larger budget than the ε asked for ("all pairs at 2ε = 10 km⁻¹ ..."): the mechanism's
# literal form, flagged degenerate by the mechanism itself; the promise sentence says which budget
_OTHER_BUDGET = re.compile(r"^all pairs at ")
# diagnostics that hold the measured check of a narrower claim, in order of preference: the mechanism's own claim
# check; PAnDA's V_pair (its claim is (ε, δ)-PmDP between the users' true secrets, which is what V_pair measures,
# leaks of the uploaded anchor sets included); last, the constraints the solver enforced
_CLAIM_CHECK_NAMES = ("claim", "v_pair", "enforced")


@dataclass(frozen=True)
class Verdict:
    """A result in plain words.

    Attributes:
        level: ``ok`` (the promise holds), ``info`` (a narrower claim, or nothing measured against it),
            ``warning`` (a degenerate or unfinished release), ``error`` (no mechanism, or the promise is broken).
        headline: one line: what happened and whether the mechanism kept its promise.
        claim_line: the measured violations against the pairs the mechanism claims (empty without a Z).
        meaning: what the numbers mean for a user and an attacker (empty without an evaluation).
        short: a few words for a table cell ("holds on all pairs", "broken on 70 of 39,800 pairs", ...).
        plain: at most two sentences a newcomer can read, leading with what the result is (kept its promise,
            kept a narrower promise, broke it, no mechanism; degenerate first), then what privacy costs; the
            technical account is ``headline``, ``claim_line`` and the mechanism's own message.
    """

    level: str
    headline: str
    claim_line: str = ""
    meaning: str = ""
    short: str = ""
    plain: str = ""

    def text(self) -> str:
        """Every non-empty part, one per line (for the CLI)."""
        return "\n".join(p for p in (self.headline, self.claim_line, self.meaning) if p)


def claims_all_pairs(claim: str) -> bool:
    """True when ``claim`` promises ε-mDP over every ordered pair of X (so the all-pairs check is the claim's).

    >>> claims_all_pairs("all pairs"), claims_all_pairs("all pairs in the planar projection; Z is ...")
    (True, True)
    >>> claims_all_pairs("all pairs at 2ε (literal exp(−ε·d) is not ε-mDP)"), claims_all_pairs("neighbour pairs")
    (False, False)
    """
    return bool(_ALL_PAIRS.match(claim.strip()))


def is_check(value: Any) -> bool:
    """A measured check: a dict with ``violated`` and ``checked`` counts (or ``violated_pairs``/``checked_pairs``)."""
    return isinstance(value, dict) and (({"violated", "checked"} <= value.keys())
                                        or ({"violated_pairs", "checked_pairs"} <= value.keys()))


def measured_checks(diagnostics: Mapping[str, Any]) -> Iterator[tuple[str, int, int, dict[str, Any]]]:
    """Every measured check a mechanism reports in its diagnostics, at any depth, as
    (dotted name, violated, checked, the check's dict).

    >>> list(measured_checks({"violations": {"V_pair": {"violated": 3, "checked": 12}}, "n": 5}))[0][:3]
    ('violations.V_pair', 3, 12)
    """
    def walk(prefix: str, value: Any) -> Iterator[tuple[str, int, int, dict[str, Any]]]:
        if is_check(value):
            bad = value.get("violated", value.get("violated_pairs"))
            total = value.get("checked", value.get("checked_pairs"))
            yield prefix, int(bad), int(total), value
        elif isinstance(value, dict):
            for k, v in value.items():
                yield from walk(f"{prefix}.{k}" if prefix else str(k), v)

    yield from walk("", diagnostics or {})


def claim_check(result: Result) -> tuple[str, int, int, str] | None:
    """(name, violated, checked, unit) of the check that measures a narrower claim, from the diagnostics, or None.

    A check whose name says ``claim`` wins over PAnDA's ``V_pair`` (its claim between users), which wins over one
    that says ``enforced`` (the constraints the solver enforced).
    The unit is the check's own ``unit`` (e.g. ``triples (i, j, y)``), else ``pairs``.
    """
    checks = list(measured_checks(result.diagnostics))
    for needle in _CLAIM_CHECK_NAMES:
        for name, bad, total, check in checks:
            if needle in name.lower().rsplit(".", 1)[-1] and total > 0:
                default = "user pairs" if needle == "v_pair" else "pairs"
                unit = str(check.get("unit") or default).split(" (")[0]
                return name, bad, total, unit
    return None


def pmdp_allows(result: Result, check_name: str, violated: int, checked: int) -> bool:
    """For PAnDA's V_pair (an (ε, δ)-PmDP claim): are ``violated`` of ``checked`` user pairs within what δ allows?
    Its own test decides (``panda.evaluate.claim_refuted``: more than δ·n + 3 binomial standard deviations refute
    it)."""
    delta = result.params.get("delta")
    if "v_pair" not in check_name.lower() or not isinstance(delta, (int, float)):
        return False
    return not claim_refuted(violated, checked, float(delta))


@dataclass(frozen=True)
class ClaimMeasure:
    """A result measured against its own claim: ``check`` names what measured it (``all pairs``, or the dotted
    name of the mechanism's diagnostic), ``violated`` of ``checked`` ``unit`` break ε-mDP, and ``kept`` says whether
    the claim holds (for PAnDA's (ε, δ)-PmDP, within what δ allows)."""

    check: str
    violated: int
    checked: int
    unit: str
    kept: bool


def against_claim(result: Result, evaluation: Evaluation | None) -> ClaimMeasure | None:
    """The one measurement of a result against its claim, which the verdict, exports, sweep rows and pages share:
    the all-pairs check for an all-pairs claim, else the mechanism's own check (:func:`claim_check`); None when
    nothing measures the claim (no evaluation, or a narrower claim with no check)."""
    if evaluation is None:
        return None
    if claims_all_pairs(result.claim):
        v = evaluation["violations"]
        bad, total = int(v["violated_pairs"]), int(v["checked_pairs"])
        return ClaimMeasure("all pairs", bad, total, "ordered pairs", bad == 0)
    found = claim_check(result)
    if found is None:
        return None
    name, bad, total, unit = found
    return ClaimMeasure(name, bad, total, unit, bad == 0 or pmdp_allows(result, name, bad, total))


def _pairs(n: int) -> str:
    return f"{n:,} ordered pair{'s' if n != 1 else ''}"


def _collapsed(Z: np.ndarray | None) -> bool:
    """Every secret has the same report distribution (reports carry no information, for anyone)."""
    return Z is not None and len(Z) > 1 and bool(np.allclose(Z, Z[0], rtol=1e-9, atol=0.0))


def degenerate_text(result: Result) -> str:
    """Why the release is degenerate in plain words: the mechanism's own flag (a literal form at a larger budget
    than ε says "Not ε-mDP"), else a collapse measured here; empty for a genuine mechanism."""
    if result.degenerate:
        return result.degenerate
    if _collapsed(result.Z):
        return ("Collapsed: every secret reports with the same distribution, so a report says nothing about where "
                "the user is (private, but useless).")
    return ""


# the kinds of degenerate release the mechanisms report (the words before the colon of their note), in plain words
PLAIN_DEGENERATE = {
    "collapsed": "collapsed: every secret gets the same report distribution, so a report says nothing",
    "uploads erased": "its uploads were erased: the noise wiped out what users sent, so reports ignore where "
                      "users are",
    "not ε-mdp": "it is not ε-mDP by design",
    "claim covers only": "its claim covers only some pairs",
    "no mechanism": "no mechanism came out",
}


class Note(NamedTuple):
    """One note of a result's ``degenerate`` text (or a grid cell's ``why``), "Kind: details"."""

    kind: str  # in lower case
    details: str
    text: str  # the whole note


def notes(text: str) -> list[Note]:
    """The notes of "Kind: details; Kind: details".

    >>> [(n.kind, n.details) for n in notes("Collapsed: all rows merged; Claim not met: 3 of 9 pairs break")]
    [('collapsed', 'all rows merged'), ('claim not met', '3 of 9 pairs break')]
    """
    out = []
    for note in (n.strip() for n in re.split(r"; (?=[A-Z])", text.strip())):
        if note:
            kind, _, details = note.partition(":")
            out.append(Note(kind.strip().lower(), details.strip(), note))
    return out


def plain_degenerate(text: str) -> str:
    """A degenerate note in plain words (the known kinds), else its words before the details; "" when the note
    only says the claim is not met (the promise sentence says that).

    >>> plain_degenerate("Collapsed: every user reports the same distribution (all 137 anchor rows merged)")
    'collapsed: every secret gets the same report distribution, so a report says nothing'
    >>> plain_degenerate("Claim not met: 390 of 2,442 user pairs (16%) break their bound")
    ''
    """
    words = []
    for note in notes(text):
        if note.kind == "claim not met":
            continue
        known = next((v for k, v in PLAIN_DEGENERATE.items() if note.kind.startswith(k)), None)
        words.append(known or re.split(r" \(|\. ", note.text, maxsplit=1)[0].rstrip("."))
    return "; ".join(dict.fromkeys(words))


def _plain(name: str, level: str, kind: str, degenerate: str, unfinished: str, evaluation: Evaluation,
           counts: tuple[int, int, str], own: dict[str, float] | None = None, claim_eps: float | None = None,
           how: str = "") -> str:
    """The two plain sentences of a verdict with a mechanism (see :class:`Verdict`); ``claim_eps``: the budget its
    narrower claim is measured at, where that differs from the ε asked for (DISTA-LP's ε_pt); ``how``: words on how
    a broken claim breaks (:data:`UPLOADS`)."""
    bad, total, unit = counts
    at = f", at ε = {claim_eps:.3g} km⁻¹" if claim_eps is not None else ""
    v = evaluation.get("violations") or {}
    all_bad, all_total = int(v.get("violated_pairs", 0)), max(int(v.get("checked_pairs", 0)), 1)
    what = {"all": "kept its promise: no two secrets can be told apart by more than ε allows",
            "narrower": f"kept its narrower promise (it protects only the {total:,} {unit} it claims{at})"
                        + (f"; over all pairs of secrets, which it does not claim, {all_bad / all_total:.0%} can be "
                           "told apart by more than ε allows" if all_bad else ""),
            "broken": f"broke its promise: {bad:,} of the {total:,} {unit} it protects can be told apart by more "
                      f"than ε allows{how}",
            "unmeasured": "protects only some pairs, and nothing here measures them"}[kind]
    first = f"{name} {what}."
    why = plain_degenerate(degenerate) if degenerate else ""
    if why and not (kind == "unmeasured" and why == PLAIN_DEGENERATE["claim covers only"]):
        first = f"{name} is degenerate ({why}), and {what}."
    if unfinished:  # the name keeps its capitals (PAnDA, LP)
        first = f"{unfinished.split(':')[0]}, not proven optimal: {first}"
    loss, floor = evaluation.get("utility_loss_m"), evaluation.get("floor_m")
    if not isinstance(loss, (int, float)):
        return first
    second = f"A report costs {format_m(float(loss))} on average"
    if isinstance(floor, (int, float)):
        second += (f": a privacy cost of {format_m(float(loss) - float(floor))} above the no-privacy floor of "
                   f"{format_m(float(floor))}")
    if own is not None:  # C-mDP scores itself with the next location's cost, not the problem's
        second += (f" on the location marginal; under its own model (the next location's cost), a privacy cost of "
                   f"{format_m(own['privacy_cost_m'])} above a floor of {format_m(own['floor_m'])}")
    return f"{first} {second}."


def verdict(result: Result, evaluation: Evaluation | None = None, *, label: str | None = None) -> Verdict:
    """The plain-words verdict on ``result``; ``evaluation`` is ``mdpviz.metrics.evaluate``'s dict for its Z.

    >>> from mdpviz.contract import Result
    >>> verdict(Result("lp", {}, None, "time limit", 5.0, timings={"total_s": 60.0}), label="LP").headline
    'LP: time limit after 1 min 0 s, no mechanism to show.'
    >>> waited = Result("lp", {}, None, "time limit", 5.0, timings={"total_s": 2.0, "wait_s": 58.0})
    >>> verdict(waited, label="LP").headline
    'LP: time limit after 2.0 s (and 58.0 s waiting for another solve of the same inputs), no mechanism to show.'
    """
    name = label or result.mechanism
    took = _took(result)
    if not result.ok:
        return _no_mechanism(result, name, took)
    stopped = UNFINISHED.get("error" if result.status.startswith("solver error") else result.status, "")
    unfinished = "" if not stopped else (
        f"{stopped.format(took=took)}: a feasible mechanism, not proven optimal. ")
    if evaluation is None:
        text = f"{name}: {unfinished}{result.degenerate or 'solved'}".strip()
        return Verdict("warning" if unfinished or result.degenerate else "info", text, short="not evaluated",
                       plain=f"{text.rstrip('.')}; its privacy was not checked.")
    degenerate = degenerate_text(result)
    p = _promise(result, evaluation)
    how = f", {UPLOADS}" if _leaks_by_uploads(result, evaluation, p.kind, degenerate) else ""
    if how:
        p = replace(p, promise=p.promise.rstrip(".") + f"{how}.")
    level, short = p.level, p.short
    headline = f"{name} {p.promise}"
    if degenerate:
        level = "error" if level == "error" else "warning"
        stop = "" if degenerate.rstrip().endswith((".", "!", "?")) else "."
        headline = f"{name}: {degenerate}{stop} Privacy: {p.promise}"
        short = f"degenerate; {short}"
    if unfinished:
        level = "error" if level == "error" else "warning"
        headline = f"{unfinished}{headline}"
        short = f"{result.status}; {short}"
    meaning = (f"A report costs {format_m(float(evaluation['utility_loss_m']))} on average (utility loss); an attacker "
               f"who sees it guesses the true location {format_m(float(evaluation['adversary_error_m']))} off on "
               "average (adversary error: higher is more private).")
    asked = result.params.get("eps")
    claim_eps = (result.eps if isinstance(asked, (int, float)) and not math.isclose(result.eps, float(asked))
                 else None)  # the claim is measured at another ε than the one asked for: say which
    plain = _plain(name, level, p.kind, degenerate, unfinished, evaluation, p.counts, own_model(result), claim_eps,
                   how)
    return Verdict(level, headline, p.claim_line, meaning, short, plain)


# why a collapsed release can still break a claim between users (PAnDA: its V_pair charges Phase I, the anchor set
# each user uploads, at its worst case; rows that are all alike break a pair only where that charge exceeds ε·d)
UPLOADS = "through the anchor sets users upload in its first phase (its reports are all alike)"


def _leaks_by_uploads(result: Result, evaluation: Evaluation, kind: str, degenerate: str) -> bool:
    """A broken claim between users on a collapsed release: the pairs break by what they upload, not by reports."""
    if kind != "broken" or not any(n.kind == "collapsed" for n in notes(degenerate)):
        return False
    measured = against_claim(result, evaluation)
    return measured is not None and "v_pair" in measured.check.lower()


def _took(result: Result) -> str:
    """How long the solve took, as words to append (" after 1 min 0 s", with any wait for another solve of the same
    inputs), or "" without a time."""
    total, wait = result.timings.get("total_s"), result.timings.get("wait_s")
    took = f" after {format_s(total)}" if isinstance(total, (int, float)) else ""
    if took and isinstance(wait, (int, float)) and wait != total:  # the time limit covers the wait too
        took += f" (and {format_s(wait)} waiting for another solve of the same inputs)"
    return took


def _no_mechanism(result: Result, name: str, took: str) -> Verdict:
    """The verdict on a result without a mechanism: why (its status), and the bound or feasible point it kept."""
    kept = result.diagnostics.get("feasible_objective_m")
    point = float(kept) if isinstance(kept, (int, float)) else None
    shown = None if result.status == "stopped" else point  # a stop at the user's request shows no point
    low, high = format_m_pair(result.bound_m or math.nan, math.nan if shown is None else shown)
    bound = f" The best certified lower bound on the loss is {low}." if result.bound_m else ""
    if shown is not None:
        bound += f" The best feasible point found costs {high} (kept in the diagnostics, not proven optimal)."
    what = {"time limit": f"time limit{took}, no mechanism to show.",
            "stopped": f"stopped at your request{took}, no mechanism to show.",
            "infeasible": "no mechanism exists for these settings (the LP is infeasible).",
            "error": f"the solver failed{took}; no mechanism to show."}.get(
        result.status, f"status {result.status}{took}, no mechanism to show.")
    found = ""
    if point is not None and result.status == "time limit":
        found = (f" before proving one optimal: the best it found costs {high} a report"
                 + (f", and the optimum costs at least {low}" if result.bound_m else "")
                 + " (that point is kept aside, not shown as the result)")
    plain = {"time limit": f"{name} gave no mechanism: it reached its time limit{took}"
                           + (found or " before finding one") + ".",
             "infeasible": f"{name} gave no mechanism: none exists at these settings.",
             "error": f"{name} gave no mechanism: its solver failed.",
             "stopped": f"{name} gave no mechanism: you stopped it{took}."}.get(
        result.status, f"{name} gave no mechanism ({result.status}).")
    return Verdict("error", f"{name}: {what}{bound}", short=f"no mechanism ({result.status})", plain=plain)


@dataclass(frozen=True)
class _Promise:
    """A result's measured violations against what it claims, in the verdict's words: the level, the kind of
    promise for the plain sentences (``all``, ``broken``, ``narrower``, ``unmeasured``) with its counts (violated,
    claimed, unit), the headline's promise clause, the claim line and the short form."""

    level: str
    kind: str
    counts: tuple[int, int, str]
    promise: str
    claim_line: str
    short: str


def _promise(result: Result, evaluation: Evaluation) -> _Promise:
    """How ``result`` stands against its claim: over all pairs when it claims them all, else against the check of
    its narrower claim (:func:`against_claim`), or unmeasured."""
    v = evaluation["violations"]
    bad, checked, eps = int(v["violated_pairs"]), int(v["checked_pairs"]), float(v.get("eps", result.eps))
    planar = " in the planar projection" if str(v.get("metric", "")).endswith("planar") else ""
    at_eps = f"ε = {eps:g} km⁻¹{planar}"
    if claims_all_pairs(result.claim):
        counts = (bad, checked, "pairs of secrets")
        if bad == 0:
            return _Promise("ok", "all", counts,
                            f"kept its promise: ε-mDP holds for all {_pairs(checked)} ({at_eps}).",
                            f"0 of {_pairs(checked)} violate ε-mDP, the claim of this mechanism.",
                            "holds on all pairs")
        return _Promise("error", "broken", counts,
                        f"broke its promise: ε-mDP fails on {bad:,} of {_pairs(checked)} ({at_eps}; the worst pair "
                        f"uses {float(v['worst_factor']):.3g}× the allowed ε·d).",
                        f"{bad:,} of {_pairs(checked)} violate ε-mDP ({bad / checked:.3g}), which it claims.",
                        f"broken on {bad:,} of {checked:,} pairs")
    measured = against_claim(result, evaluation)
    all_txt = (f"{bad / checked:.2g} of all pairs ({bad:,} of {checked:,})" if bad
               else f"none of all {_pairs(checked)}")
    if measured is None:
        scope = "at a larger budget" if _OTHER_BUDGET.match(result.claim.strip()) else "on some pairs"
        return _Promise("info", "unmeasured", (bad, checked, "pairs"),
                        f"claims ε-mDP only {scope}; measured over all pairs at {at_eps}, "
                        f"{all_txt} {'are' if bad else 'is'} violated.",
                        f"What it claims: {result.claim}.", "narrower claim, not measured")
    check_name, c_bad, c_total, unit = measured.check, measured.violated, measured.checked, measured.unit
    kept = measured.kept
    what = f"{c_total:,} {'enforced' if 'enforced' in check_name.lower() else 'claimed'} {unit}"
    within = f" ({c_bad:,} of them violate ε-mDP, within what δ = {result.params.get('delta')} allows)"
    promise = (f"kept its narrower promise: 0 of {what} violate ε-mDP." if c_bad == 0 else
               f"kept its narrower promise on {what}{within}." if kept else
               f"broke its promise: {c_bad:,} of {what} violate ε-mDP.")
    return _Promise("ok" if kept else "error", "narrower" if kept else "broken", (c_bad, c_total, unit), promise,
                    f"{c_bad:,} of {what} violated; {all_txt} violated, which this mechanism does not claim.",
                    f"holds on its claim ({c_bad:,} of {what})" if kept else f"broken on {c_bad:,} of {what}")
