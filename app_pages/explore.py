"""Explore: one mechanism on one problem: the map, the metrics, the mechanism's diagnostics and downloads."""

import streamlit as st

from mdpviz.ui import cache, controls, explore, state, views

with st.sidebar:
    mech = controls.mechanism_picker()
    st.caption(mech.info)
    with st.form("explore_form", border=False):
        st.markdown(f"**{mech.label}: parameters**")
        controls.mechanism_params(mech)
        controls.time_limit_control()
        st.markdown("**Problem**")
        controls.problem_controls()
        solve_clicked = st.form_submit_button("Solve", type="primary", width="stretch", icon=":material/play_arrow:")

with views.guard():
    prob = cache.problem_from_state()
    params = state.params_of(mech)
    hint = views.solve_hint(prob.k, prob.m, mech)
    if hint:
        st.sidebar.warning(hint, icon="⏳")
    result = (views.run_solve(prob, mech, params, float(st.session_state["time_limit"])) if solve_clicked
              else cache.lookup(prob, mech.name, params))

st.markdown(explore.headline(prob, mech, params))
state.show_notices()
map_col, side_col = st.columns([3, 1], gap="medium")
ev = key = None
if result is not None and result.ok:
    key = cache.result_key(prob, result)
    ev = cache.evaluation(prob, result, key)
with side_col:
    if hint and result is None:
        st.warning(hint, icon="⏳")
    if result is None:
        st.info("Not solved yet for these settings. Press **Solve** in the sidebar.", icon="▶️")
    else:
        views.status_line(result)
        if ev is not None:
            views.metrics_panel(prob, result, ev)
with map_col:
    explore.map_view(prob, result, ev, key)
if result is not None:
    views.details_tabs(prob, result, ev, "explore")
state.write_url("explore")
