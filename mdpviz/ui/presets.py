"""Presets: one click to a complete, solved view for a class, a stakeholder or a reader of the papers.

A preset is data (``presets.json``), keyed like the widgets (``k``, ``mech``, ``mp.<mechanism>.<parameter>``), in
the manner of prettymapp's ``examples.json``: applying one copies its values into session state, opens its page
and solves there once. Presets that other parts of mdpviz publish as data (``mdpviz.presets.PRESETS``, a list of
the same dicts, when that module exists) are listed after these.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import streamlit as st

from mdpviz.errors import MdpvizError
from mdpviz.mechanisms import get_mechanism

from . import state

PAGES = {"explore": "app_pages/explore.py", "compare": "app_pages/compare.py", "tradeoff": "app_pages/tradeoff.py"}
_FILE = Path(__file__).with_name("presets.json")


def presets() -> list[dict[str, Any]]:
    """Every preset: this dashboard's (``presets.json``), then any the library publishes."""
    found = json.loads(_FILE.read_text(encoding="utf-8"))
    try:
        extra = importlib.import_module("mdpviz.presets").PRESETS
    except (ImportError, AttributeError):
        extra = []
    ids = {p["id"] for p in found}
    return found + [dict(p) for p in extra if isinstance(p, dict) and p.get("id") not in ids and "values" in p]


def by_id(preset_id: str) -> dict[str, Any] | None:
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
    ss = st.session_state
    for key, value in preset["values"].items():
        ss[key] = list(value) if isinstance(value, list) else value
    ss.setdefault("source", "sample")
    ss["source"] = "sample"
    ss["secret"] = None
    ss["point"] = None
    ss["_auto_solve"] = preset["page"]
    ss["_preset"] = preset["label"]
    ss["_switch_to"] = PAGES[preset["page"]]
    return PAGES[preset["page"]]


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


def buttons(key_prefix: str, columns: int = 1) -> None:
    """One button per preset (with its description as help); a click applies it, and the router opens its page."""
    cols = st.columns(columns) if columns > 1 else [st.container()]
    for n, p in enumerate(presets()):
        with cols[n % len(cols)]:
            st.button(p["label"], key=f"{key_prefix}-{p['id']}", help=p.get("help"), width="stretch",
                      icon=":material/play_circle:", on_click=apply, args=(p["id"],))
