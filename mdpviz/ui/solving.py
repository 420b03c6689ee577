"""Solving from a page: the error guard, the solve in a worker thread with its progress box, and the
solve-or-look-up step every page uses."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import streamlit as st

from mdpviz.errors import MdpvizError
from mdpviz.explain import solve_warning
from mdpviz.mechanisms import Mechanism, Result
from mdpviz.problem import Problem
from mdpviz.progress import Stopped
from mdpviz.solve import solve

from . import cache, state


@contextmanager
def guard() -> Iterator[None]:
    """Show a library error as a message a person can act on, then stop the page (never a traceback)."""
    try:
        yield
    except MdpvizError as e:
        st.error(str(e), icon=":material/error:")
        st.stop()


def solve_hint(prob: Problem, mech: Mechanism, eps: float | None) -> str | None:
    """The slow-solve warning of ``mdpviz.explain`` (the mechanism's ``max_k``; for the exact LP its size and the
    median ε·d of the problem), and a note when the all-pairs check itself will take a while (K above
    ``state.SLOW_CHECK_K``)."""
    eps_d = None
    # the density rule was measured on the structured engine of `lp`; lp-bd and lp-em keep the size rule
    if mech.name == "lp" and eps is not None and prob.k > 1:
        n = min(prob.k, 300)  # X is a random sample: its first 300 secrets give the median well enough
        eps_d = float(eps * np.median(prob.d[:n, :n][np.triu_indices(n, 1)]))
    hint = solve_warning(prob.k, prob.m, max_k=mech.max_k, family=mech.family, exact=mech.exact,
                         time_limit_s=float(st.session_state.get("time_limit", 60.0)), eps_d_median=eps_d)
    if mech.name == "lp-bd":  # the same LP has a faster solver: say so before the user waits
        same = ("Benders (LP+BD) solves its paper's neighbour LP; **Optimal LP** with *constraint set = "
                "neighbours* solves that same LP exactly and is usually much faster (measured on Rome, K = 500, "
                "ε = 10 km⁻¹: one HiGHS solve 7.0 s against 24.7 s for Benders' stabilised preset and no result in "
                "120 s for plain Benders; docs/benchmarks/benders.md). Use LP+BD to watch the decomposition work.")
        hint = f"{hint} {same}" if hint else same
    if prob.k > state.SLOW_CHECK_K:
        pairs = prob.k * (prob.k - 1)
        check = (f"Checking ε-mDP on all {pairs:,} ordered pairs × {prob.m:,} outputs after the solve takes "
                 "a while (tens of seconds and more).")
        hint = f"{hint} {check}" if hint else check
    return hint


def run_solve(prob: Problem, mech: Mechanism, params: dict[str, Any], time_limit: float,
              label: str | None = None) -> Result:
    """Solve in a worker thread while this script shows the phase and elapsed time; returns the Result.

    The worker only records the latest phase: it never calls Streamlit (no script context there). A quick
    solve (under 0.3 s) shows no status box at all, and a longer one's box goes when it ends: the page's one
    verdict says what the solve gave (never a green "optimal" beside a collapsed or broken release).
    """
    box: dict[str, Any] = {"phase": "starting", "fraction": None}
    out: dict[str, Any] = {}
    name = label or mech.label
    cancel = threading.Event()

    def progress(phase: str, fraction: float | None) -> None:
        """Record the latest phase and fraction (called in the worker thread); stop once asked to."""
        box["phase"], box["fraction"] = phase, fraction
        if cancel.is_set():
            raise Stopped(phase)

    def work() -> None:
        """Run the solve, keeping its result or its exception for the script thread."""
        try:
            out["result"] = solve(prob, mech.name, params, progress=progress, time_limit=time_limit)
        except BaseException as e:  # noqa: BLE001 - handed to the script thread, which shows or re-raises it
            out["error"] = e

    worker = threading.Thread(target=work, name=f"mdpviz-solve-{mech.name}", daemon=True)
    t0 = time.perf_counter()
    worker.start()
    worker.join(0.3)
    if worker.is_alive():
        holder = st.empty()  # the progress box goes once the solve ends: the verdict below says what it gave
        with holder.status(f"Solving {name}…", expanded=True):
            bar = st.progress(0.0, text="starting")
            st.button("Stop this solve", icon=":material/stop:", on_click=stop, args=(cancel, name),
                      key=f"stop-solve-{id(cancel)}",
                      help="Stops at the solver's next step (a single LP finishes its current run first).")
            while worker.is_alive():
                worker.join(0.2)
                el = time.perf_counter() - t0
                frac = box["fraction"]
                shown = float(frac) if frac is not None else min(0.99, el / max(time_limit, 1e-9))
                bar.progress(min(max(shown, 0.0), 1.0),
                             text=f"{box['phase']} · {el:.1f} s elapsed (limit {time_limit:g} s)")
        holder.empty()
    if "error" in out:
        raise out["error"]
    result: Result = out["result"]
    cache.remember(prob, result)
    return result


def stop(cancel: threading.Event, name: str) -> None:
    """The Stop button's callback: ask the running solve to stop, and say so on the page that follows."""
    cancel.set()
    st.session_state["_stopped"] = name


def stopped_notice() -> None:
    """Once, after a Stop: which solve was stopped (nothing of it is kept or cached)."""
    name = st.session_state.pop("_stopped", None)
    if name:
        st.info(f"You stopped the solve of {name}; nothing of it was kept. Change the settings or press Solve "
                "again.", icon=":material/stop_circle:")


def solve_or_lookup(prob: Problem, mech: Mechanism, params: dict[str, Any], solve_now: bool,
                    time_limit: float) -> tuple[Result | None, str | None]:
    """Solve (when asked) or look up a result; a library error becomes its message instead of stopping the page."""
    try:
        if solve_now:
            return run_solve(prob, mech, params, time_limit), None
        return cache.lookup(prob, mech.name, params), None
    except MdpvizError as e:
        return None, str(e)
