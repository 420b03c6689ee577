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
from mdpviz.mechanisms import get_mechanism

from . import state

PAGES = {"explore": "app_pages/explore.py", "compare": "app_pages/compare.py", "tradeoff": "app_pages/tradeoff.py"}
_FILE = Path(__file__).with_name("presets.json")


# build_problem keyword → dashboard key
PROBLEM_KEYS = {"city": "city", "k": "k", "n_outputs": "m", "metric": "metric", "prior": "prior", "cost": "cost",
                "n_tasks": "tasks", "seed": "seed", "region": "region"}


def from_mechanism(mech: Any, preset: Any) -> dict[str, Any] | None:
    """A mechanism's preset (``name``, ``label``, ``help``, ``params``, ``problem``, ``eps``) as a dashboard preset
    on Explore; None when it sets something the dashboard has no control for."""
    problem = dict(getattr(preset, "problem", ()) or ())
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
    return {"id": f"{mech.name}-{preset.name}", "label": preset.label, "audience": "research", "page": "explore",
            "help": preset.help + (f" ε swept over {', '.join(f'{e:g}' for e in eps)} km⁻¹ in the paper (Trade-off "
                                   "page)." if eps else ""), "values": values}


def presets() -> list[dict[str, Any]]:
    """Every preset: this dashboard's (``presets.json``), then the mechanisms' own (``Mechanism.presets``)."""
    from mdpviz.mechanisms import mechanisms

    found = [{**p, "main": True} for p in json.loads(_FILE.read_text(encoding="utf-8"))]
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


def buttons(key_prefix: str, columns: int = 1, main: bool | None = None) -> None:
    """One button per preset (with its description as help); a click applies it, and the router opens its page.

    ``main``: True for this dashboard's own four, False for the mechanisms' presets, None for all.
    """
    chosen = [p for p in presets() if main is None or bool(p.get("main")) == main]
    cols = st.columns(columns) if columns > 1 else [st.container()]
    for n, p in enumerate(chosen):
        with cols[n % len(cols)]:
            st.button(p["label"], key=f"{key_prefix}-{p['id']}", help=p.get("help"), width="stretch",
                      icon=":material/play_circle:", on_click=apply, args=(p["id"],))
