"""Compare: two to four mechanisms on the same problem, side by side."""

import streamlit as st

from mdpviz.mechanisms import get_mechanism, mechanisms
from mdpviz.ui import cache, compare, controls, presets, solving, state

with st.sidebar:
    st.multiselect("Mechanisms (2 to 4)", [m.name for m in mechanisms()], key="compare",
                   format_func=controls.mechanism_label, max_selections=compare.MAX_MECHS,
                   help="Each is solved on the same problem with the parameters below.")
    chosen = [get_mechanism(n) for n in st.session_state["compare"]]
    with st.form("compare_form", border=False):
        for mech in chosen:
            with st.expander(f"{mech.label}: parameters", expanded=len(chosen) <= 2):
                controls.mechanism_params(mech)
        controls.time_limit_control()
        st.markdown("**Problem**")
        controls.problem_controls()
        solve_clicked = st.form_submit_button("Solve all", type="primary", width="stretch",
                                              icon=":material/play_arrow:", disabled=len(chosen) < 2)
solve_clicked = presets.take_auto_solve("compare") or solve_clicked

st.markdown("#### Compare mechanisms on the same problem")
solving.stopped_notice()
state.show_notices()
if len(chosen) < 2:
    st.info("Choose at least two mechanisms in the sidebar.", icon=":material/arrow_back:")
    st.stop()
with solving.guard():
    prob = cache.problem_from_state()
    items, errors = [], {}
    for mech in chosen:
        params = state.params_of(mech)
        # one mechanism's error (bad parameter, solver failure) is shown and the others still run
        limit = float(st.session_state["time_limit"])
        result, error = solving.solve_or_lookup(prob, mech, params, solve_clicked, limit)
        if result is None and not error and (hint := solving.solve_hint(prob, mech, params.get("eps"))):
            st.warning(f"{mech.label}: {hint}", icon=":material/hourglass_top:")
        if error:
            st.error(f"{mech.label}: {error}", icon=":material/error:")
        items.append((mech, result))
        errors[mech.name] = error
    items = compare.kept_points_choice(prob, items)
    rows, evs = [], {}
    for mech, result in items:
        ev = cache.evaluation(prob, result, cache.result_key(prob, result)) if result and result.ok else None
        evs[mech.name] = ev
        rows.append(compare.metrics_row(mech, result, ev, errors[mech.name]))
st.caption(f"{controls.city_label(prob.city)} · K = {prob.k} secrets · |Y| = {prob.m} outputs · metric {prob.metric}")
unsolved = sum(r is None and not errors[mech.name] for mech, r in items)
if unsolved:  # one of them solved (e.g. cached) and another not: its empty map and row need this too
    what = "Not solved yet" if unsolved == len(items) else f"{unsolved} of the {len(items)} mechanisms not solved yet"
    st.info(f"{what} for these settings. Press **Solve all** at the foot of the sidebar.", icon=":material/play_arrow:")
if summary := compare.summary(rows):
    st.markdown(summary)
compare.maps_view(prob, items, evs)
compare.table_and_bars(rows)
state.write_url("compare")
