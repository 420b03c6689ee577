"""Presets: one click to a complete, solved view for a class, a stakeholder or a reader of the papers.

A preset is data (``presets.json``), keyed like the widgets (``k``, ``mech``, ``mp.<mechanism>.<parameter>``), in
the manner of prettymapp's ``examples.json``: applying one copies its values into session state, opens its page
and solves there once. The mechanisms' own presets (``Mechanism.presets``: a paper's experiment, the authors'
code's settings, with ``params``, ``build_problem`` keywords and the ε values swept) are turned into the same
dicts and listed after these, on Explore.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import streamlit as st

from mdpviz.errors import MdpvizError
from mdpviz.mechanisms import get_mechanism, mechanisms
from mdpviz.regimes.examples import seed_examples

from . import state
from .cache import regime_cells

PAGES = {"explore": "app_pages/explore.py", "compare": "app_pages/compare.py", "tradeoff": "app_pages/tradeoff.py"}
_FILE = Path(__file__).with_name("presets.json")


# build_problem keyword → dashboard key
PROBLEM_KEYS = {"city": "city", "k": "k", "n_outputs": "m", "metric": "metric", "prior": "prior", "cost": "cost",
                "n_tasks": "tasks", "seed": "seed", "region": "region"}


# the whole problem a mechanism's preset runs on where the preset itself leaves it open (an example never keeps
# whatever problem happens to be current): the papers' city over its whole extent, at a size measured to finish
# (LP+BD as the paper writes it closes at K = 150 in 2.2 s and stops at its 60 s limit at K = 250, both on Rome,
# ε = 10 km⁻¹, distance cost, measured 2026-12-02 on the 2-core machine under load)
EXAMPLE_PROBLEM = {"city": "rome", "region": "whole", "n_outputs": 100, "cost": "distance", "n_tasks": 10, "seed": 0,
                   "metric": "haversine", "prior": "uniform"}
EXAMPLE_K = {"lp-bd": 150, "panda": 2000, "distributed": 500, "aipo": 500}
# what happens on that problem, measured on 2026-12-02 by `python -m mdpviz solve --city rome --cost distance
# --outputs 100 --k K --mechanism M --preset P --no-cache` (|Y| = 20 and ε = 1 for AIPO's): the time is the whole
# command's (start, solve and all-pairs check) on the 2-core machine, quiet and busy (another job on both cores)
# (each variant's own counts: one text for all three stated PAnDA-e's 2,190 beside PAnDA-p's 2,166 and PAnDA-l's
# 2,208 on the page; re-measured 2026-12-02 08:03 UTC, load 1.6, 2.9–3.5 s each)
# AIPO's re-measured 2026-12-06 05:05 UTC, quiet, once its universal bound moved to the structured engine (3.3 s),
# and 07:54 UTC on a slower machine (the solve's total_s 4.06; the page 6.9 s in scripts/walk_ui.py)
_PANDA_PAPER = ("What happens here (measured): the release collapses, every user reporting the same distribution, "
                "and the (ε, δ)-PmDP claim breaks for {share} of user pairs ({bad} of 2,448): Phase I alone costs "
                "ε̄ ≥ ε on {phase1} of anchor pairs (Prop. 3), so nothing is left for the LP. 3.4–4.8 s (12 s "
                "busy).")
OUTCOMES = {
    "panda-e-paper": _PANDA_PAPER.format(share="89 %", bad="2,190", phase1="96 %"),
    "panda-p-paper": _PANDA_PAPER.format(share="88 %", bad="2,166", phase1="96 %"),
    "panda-l-paper": _PANDA_PAPER.format(share="90 %", bad="2,208", phase1="97 %"),
    "panda-e-authors-code": "What happens here (measured): every one of the 2,448 user pairs breaks the (ε, δ)-PmDP "
                            "claim: the code's ε̄ keeps only the last factor of each product, which undercharges "
                            "Phase I. Its loss, 2.49 km, is above EM's 1.54 km. 4.9 s on the command line; this "
                            "page (solve, all-pairs check, PAnDA's checks, map) 7–11 s.",
    "lp-bd-paper": "What happens here (measured): certified optimal in about 2 s of solving; its claim covers only "
                   "neighbour pairs within 2 km, and 49 % of all pairs break ε-mDP (not claimed). At K = 250 plain "
                   "Benders stops at its 60 s limit: use the stabilised preset there. 2.2 s.",
    "lp-bd-stabilised": "What happens here (measured): certified optimal after 32 iterations, 3 s of solving; the "
                        "same neighbour-only claim as the paper's LP. 2.0 s (8.3 s busy).",
    "lp-bd-authors-code": "What happens here (measured): the code's slack and floor change the LP (its optimum is "
                          "not the paper's); it stops within its gap after 4 iterations. 1.5 s (4.4 s busy).",
    # at the example's ε = 7 km⁻¹ (the middle of the paper's sweep), not the mechanism's default 5: the text said
    # "255 km⁻¹ against ε = 5" beside a page showing 363 against 7 (re-measured 2026-12-02 08:02 UTC, load 1.5)
    "dista-lp-authors": "What happens here (measured, at ε = 7 km⁻¹): the exact audit finds the uploads spend "
                        "362 km⁻¹, so the release spends 363 km⁻¹ against the claimed ε = 7 (budget overspent), and "
                        "23 % of all pairs break ε-mDP. 2.4 s on the command line; this page about 3–5 s.",
    # `python -m mdpviz solve --city rome --k 500 --outputs 100 --cost travel --tasks 1 --mechanism dista-lp --preset
    # ours --eps 5 --no-cache` (EM likewise), 2026-12-02 16:50 UTC, load about 2; rerun 2026-12-06 02:03 UTC, load 0.1,
    # after the engine's tolerance change: every cell's LP optimal (4 of 8 had stalled), 573.6 m, 8.4 s; again
    # 2026-12-06 07:55 UTC on a slower machine, load 1: total_s 10.4 (the page took 13.2 s in scripts/walk_ui.py)
    "dista-lp-ours": "What happens here (measured): a report costs 574 m against the exponential mechanism's 1,091 m "
                     "(privacy cost 474 m against 992 m, above the no-privacy floor of 99 m), and the release (cell, "
                     "report) keeps ε-mDP on all 249,500 pairs; each of its 8 cells' LPs is solved to its certified "
                     "optimum. With the distance cost on the whole city it trails EM (the regime grid). 8–10 s of "
                     "solving; the page, its map and the check a few seconds more.",
    # `python -m mdpviz bench cmdp --preset ours` (docs/benchmarks/cmdp_ours.md), at the page's ε = 1.5 km⁻¹
    "cmdp-ours": "What happens here (measured, at ε = 1.5 km⁻¹): its 221 (location, context) secrets keep two- and "
                 "three-step contexts, and LP+C-mDP's next-location loss is 829 m against LP+Markov's 919 m (−9.8 %) "
                 "and the exponential mechanism's 1,620 m; the oracle blanket (LP+TrueMB) reaches 813 m. Its "
                 "promise is on (location, context) pairs: the location-only marginal breaks base-metric ε-mDP on "
                 "25 of 432 checked triples, as the paper acknowledges. About 1 s per solve.",
    "aipo-paper": "What happens here (measured, at ε = 1 km⁻¹): it keeps its promise on all pairs of the plane, "
                  "at a loss of 4.83 km, above EM's 4.44 km; the paper's universal lower bound (2,020 m) is below "
                  "the no-privacy floor (3,219 m), so the floor is shown as the bound. 3.3–4.1 s of solving "
                  "(quiet); the page, its map and the check a few seconds more.",
}


def from_mechanism(mech: Any, preset: Any) -> dict[str, Any] | None:
    """A mechanism's preset (``name``, ``label``, ``help``, ``params``, ``problem``, ``eps``) as a dashboard preset
    on Explore, its whole problem set (``EXAMPLE_PROBLEM`` where the preset leaves it open); None when it sets
    something the dashboard has no control for."""
    problem = {**EXAMPLE_PROBLEM, "k": EXAMPLE_K.get(mech.name, EXAMPLE_K.get(getattr(mech, "family", ""), 500)),
               **dict(getattr(preset, "problem", ()) or ())}
    values: dict[str, Any] = {"mech": mech.name, "region": "whole", "source": "sample"}
    for key, value in problem.items():
        if key == "all_outputs":
            continue
        if key not in PROBLEM_KEYS:
            return None
        values[PROBLEM_KEYS[key]] = value
    if problem.get("all_outputs") and "k" in values:
        values["m"] = values["k"]
    params = dict(getattr(preset, "params", ()) or ())
    eps = tuple(getattr(preset, "eps", ()) or ())
    if "eps" not in params and eps:
        params["eps"] = sorted(eps)[len(eps) // 2]  # a middle value of the paper's sweep
    values.update({f"mp.{mech.name}.{k}": v for k, v in params.items()})
    pid = f"{mech.name}-{preset.name}"
    where = (f" Runs on {values['city'].title()}, {values['region']} city" if values["region"] == "whole" else
             f" Runs on {values['city'].title()}, region {values['region']}") + (
        f", K = {values['k']:,}, |Y| = {values['m']}, {values['cost']} cost, seed {values['seed']}.")
    return {"id": pid, "label": preset.label, "audience": "research", "page": "explore",
            "help": preset.help + (f" ε swept over {', '.join(f'{e:g}' for e in eps)} km⁻¹ in the paper (Trade-off "
                                   "page)." if eps else "") + where + (f" {OUTCOMES[pid]}" if pid in OUTCOMES else ""),
            "values": values}


def regime_examples() -> list[dict[str, Any]]:
    """The seeds' examples where they win, from the committed regime grid (``mdpviz.regimes.examples``)."""
    table = regime_cells()
    return [] if table is None else seed_examples(table)


def presets() -> list[dict[str, Any]]:
    """Every preset: this dashboard's (``presets.json``), the seeds' examples where they win (the regime grid),
    then the mechanisms' own (``Mechanism.presets``, the papers' settings)."""
    found = [{**p, "main": True} for p in json.loads(_FILE.read_text(encoding="utf-8"))]
    found += regime_examples()
    seen = {p["id"] for p in found} | {p["label"] for p in found}
    for mech in mechanisms():
        for preset in getattr(mech, "presets", ()) or ():
            entry = from_mechanism(mech, preset)
            # one entry per preset: variants that share their paper's preset (C-mDP's three) list it once
            if entry is not None and entry["id"] not in seen and entry["label"] not in seen:
                found.append(entry)
                seen |= {entry["id"], entry["label"]}
    return found


def by_id(preset_id: str) -> dict[str, Any] | None:
    """The bundled preset with this id, or None."""
    return next((p for p in presets() if p["id"] == preset_id), None)


def check(preset: dict[str, Any]) -> list[str]:
    """What is wrong with a preset (empty: fine): unknown page, unknown keys, mechanisms or parameter values."""
    errors = []
    if preset.get("page") not in PAGES:
        errors.append(f"page `{preset.get('page')}` is not one of {', '.join(PAGES)}")
    for key, value in preset["values"].items():
        if key.startswith("mp."):
            _, mech, name = key.split(".", 2)
            try:
                get_mechanism(mech).param(name).validate(value)
            except MdpvizError as e:
                errors.append(str(e))
        elif key not in state.SHARED_KEYS:
            errors.append(f"`{key}` is not a setting of the dashboard")
    for name in [preset["values"].get("mech"), *preset["values"].get("compare", [])]:
        if name is not None:
            try:
                get_mechanism(name)
            except MdpvizError as e:
                errors.append(str(e))
    return errors


def apply(preset_id: str) -> str | None:
    """Copy a preset's values into session state and mark its page to solve once; returns the page file, or
    None (with a notice) for an unknown preset."""
    preset = by_id(preset_id)
    if preset is None:
        state.notify(f"Unknown preset `{preset_id}`; known: {', '.join(p['id'] for p in presets())}.")
        return None
    return apply_values(preset["values"], preset["page"], preset["label"])


def apply_values(values: dict[str, Any], page: str, label: str) -> str:
    """Copy dashboard settings (keyed like the widgets) into session state and mark ``page`` to open and solve
    once (a preset, or a cell of the regime grid); returns the page file."""
    ss = st.session_state
    # every parameter of the mechanisms it opens starts from the schema's default, so nothing of an earlier
    # example or setting is kept (the values below then set what this one says, ε included)
    for name in [values.get("mech"), *values.get("compare", [])]:
        if name is not None:
            for p, v in get_mechanism(name).defaults().items():
                ss[state.param_key(name, p)] = v
    for key, value in values.items():
        ss[key] = list(value) if isinstance(value, list) else value
    ss["source"] = "sample"
    ss["secret"] = None
    ss["point"] = None
    ss["_auto_solve"] = page
    ss["_preset"] = label
    ss["_switch_to"] = PAGES[page]
    return PAGES[page]


def follow() -> None:
    """In the router, before any page runs: open the page a preset asked for (``st.switch_page`` cannot run in
    a button's callback, where the preset's values are set before any widget exists)."""
    requested = st.session_state.pop("_preset_request", None)
    if requested:  # ?preset=<id> in a shared link
        apply(str(requested))
    page = st.session_state.pop("_switch_to", None)
    if page:
        st.switch_page(page)


def take_auto_solve(page: str) -> bool:
    """True once after a preset opened ``page``: the page solves as if its button had been pressed."""
    if st.session_state.get("_auto_solve") == page:
        del st.session_state["_auto_solve"]
        return True
    return False


def buttons(key_prefix: str, columns: int = 1, main: bool | None = None, regime: bool | None = None) -> None:
    """One button per preset (with its description as help); a click applies it, and the router opens its page.

    ``main``: True for this dashboard's own four, False for the mechanisms' presets (the papers' settings), None
    for all; ``regime``: True for the seeds' examples where they win (from the regime grid) only.
    """
    chosen = [p for p in presets() if (main is None or bool(p.get("main")) == main)
              and (regime is None or bool(p.get("regime")) == regime)]
    cols = st.columns(columns) if columns > 1 else [st.container()]
    for n, p in enumerate(chosen):
        with cols[n % len(cols)]:
            st.button(p["label"], key=f"{key_prefix}-{p['id']}", help=p.get("help"), width="stretch",
                      # streamlit types on_click as returning None; it discards the page apply returns
                      icon=":material/play_circle:", on_click=apply, args=(p["id"],))  # type: ignore[arg-type]
