"""The dashboard's words, defined once: the Learn page lists them, and every verdict gets a tooltip with the ones
it uses."""

from __future__ import annotations

import re
from typing import Any

import streamlit as st

# term -> plain definition (one or two sentences); the order is the Learn page's
GLOSSARY: dict[str, str] = {
    "mDP (metric differential privacy)": "A promise about a location report: for two true locations d km apart, "
        "the probability of any report differs by a factor of at most e^(ε·d). Near places stay confusable, far "
        "ones need not be.",
    "ε (km⁻¹)": "The privacy budget per kilometre: smaller is more private. Within ln 2/ε km, reports of two "
        "places differ by at most a factor of 2.",
    "claim": "What a mechanism promises, and over which pairs: all pairs of secrets (ε-mDP), or fewer (a "
        "narrower promise). mdpviz measures every claim with an exact check instead of taking it on trust.",
    "narrower promise": "A claim over only some pairs: neighbours within η km (Benders), pairs inside one "
        "user's neighbourhood (DISTA-LP), anchors (AIPO-R), cell representatives (LP+CA). Pairs outside it may be "
        "told apart freely.",
    "kept its promise": "Our exact check found no pair, among those the mechanism claims, whose report "
        "probabilities differ by more than e^(ε·d) (relative tolerance 10⁻⁹).",
    "broke its promise": "Our exact check found pairs the mechanism claims whose report probabilities differ "
        "by more than e^(ε·d): an attacker can tell them apart better than promised.",
    "degenerate": "A release that is technically private but useless or not what it seems: collapsed, uploads "
        "erased, or not ε-mDP by design. Never read a degenerate result as a success.",
    "collapsed": "Every secret gets the same report distribution, so a report says nothing about where the user "
        "is: perfectly private, and useless.",
    "uploads erased": "DISTA-LP: the noise added to what users upload wiped out their distances, so the server's "
        "mechanism ignores where users are inside their neighbourhoods.",
    "no-privacy floor": "The utility loss if every secret reported its cheapest output: what no privacy at all "
        "would cost. No mechanism goes below it; with few outputs it is most of the loss.",
    "privacy cost": "Utility loss minus the no-privacy floor: what privacy itself costs the user, in metres. The "
        "exact LP has the least privacy cost of all ε-mDP mechanisms.",
    "utility loss": "The expected cost of reporting y instead of the true x (metres): distance, or the error in "
        "travel to task locations.",
    "PmDP ((ε, δ)-probabilistic mDP)": "ε-mDP between users except with probability δ over the mechanism's own "
        "randomness (PAnDA's random anchor sets, DISTA-LP's noisy uploads).",
    "V_pair": "PAnDA's measured leak between two users: their reports, together with the anchor sets they "
        "uploaded, compared against the budget left after Phase I. PAnDA's claim is broken when V_pair > 0.",
    "anchor": "A PAnDA (or AIPO) stand-in location: users report through the row of a nearby anchor, so the "
        "LP is solved over anchors only, not over every secret.",
    "Phase I": "PAnDA's first step: each user picks a random set of nearby anchors; the choice itself leaks "
        "location, and costs part of ε (ε̄).",
    "blanket (Markov blanket)": "C-mDP: the earlier and later stations of a trajectory that predict the present "
        "one; the context a mechanism must protect along with the location.",
    "exact LP": "The optimal mechanism (Bordenabe et al. 2014): the least utility loss of any mechanism that is "
        "ε-mDP on all pairs of these secrets and outputs, solved exactly.",
    "exponential mechanism (EM)": "Report y with probability proportional to exp(−ε·d(x, y)/2): ε-mDP by "
        "construction, no optimisation. The yardstick every other method is measured against.",
    "ε̄ (Phase I's cost)": "PAnDA: how much of the budget the random choice of anchors spends between two "
        "users, per km (the paper's Prop. 3 gives it exactly; the authors' code counts only part of it).",
    "AnPO (anchor perturbation LP)": "PAnDA's Phase II: the LP over anchors whose rows users report from, with "
        "the budget Phase I and the safety margin leave.",
    "rung (of an ablation ladder)": "One step from a paper as written toward its authors' code, changing one "
        "thing, measured for loss, privacy and time. The rung where the paper's number appears names the cause.",
    "witness": "A concrete privacy breach re-solved and printed: two secrets, what tells them apart and by how "
        "much, against the e^(ε·d) the claim allows (`python -m mdpviz reproduce --witness CLAIM`).",
}


def _key(term: str) -> str:
    return term.split(" (")[0].lower()


def terms_in(text: str) -> list[str]:
    """The glossary terms ``text`` uses (by the words before any parenthesis, case-insensitive).

    >>> terms_in("PAnDA-e is degenerate (collapsed: ...), and broke its promise")
    ['broke its promise', 'degenerate', 'collapsed']
    """
    low = text.lower()
    return [t for t in GLOSSARY if re.search(rf"(?<![\w-]){re.escape(_key(t))}(?![\w-])", low)]


def help_for(text: str) -> str | None:
    """The definitions of the terms ``text`` uses, as one tooltip (None when it uses none)."""
    found = terms_in(text)
    if not found:
        return None
    return "\n\n".join(f"**{t}**: {GLOSSARY[t]}" for t in found) + "\n\nAll terms: the Learn page, Glossary tab."


def caption(text: str, **kwargs: Any) -> None:
    """``st.caption`` whose tooltip defines the glossary terms ``text`` uses."""
    st.caption(text, help=help_for(text), **kwargs)


def alert(kind: str, text: str, **kwargs: Any) -> None:
    """``st.success``/``st.info``/``st.warning``/``st.error`` (``kind``), then a "Terms used above" line defining
    the glossary terms ``text`` uses (an alert takes no tooltip of its own)."""
    getattr(st, kind)(text, **kwargs)
    terms_line(text)


def terms_line(text: str) -> None:
    """A small line "Terms used above" whose tooltip defines them (nothing when ``text`` uses none)."""
    tip = help_for(text)
    if tip:
        st.caption(f"Terms used above: {', '.join(terms_in(text))}", help=tip)


def glossary_page() -> None:
    """Every term with its definition, for the Learn page."""
    for term, text in GLOSSARY.items():
        st.markdown(f"**{term}**: {text}")
