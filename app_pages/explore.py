"""Explore: one mechanism on one problem: the verdict, the map, the metrics, the diagnostics and downloads."""

import streamlit as st

from mdpviz.ui import cache, controls, details, explore, glossary, metrics_panel, presets, solving, state

ss = st.session_state
with st.sidebar:
    mech = controls.mechanism_picker()
    st.caption(mech.info)
    if mech.name in state.DASHBOARD_PRESETS:
        st.caption(f"Starts at its **{state.DASHBOARD_PRESETS[mech.name]}** preset ("
                   f"{mech.preset(state.DASHBOARD_PRESETS[mech.name]).label}), which finishes where the paper's "
                   "plain setting often does not; the paper's own is among the presets on this page.")
    controls.points_upload()
    with st.form("explore_form", border=False):
        st.markdown(f"**{mech.label}: parameters**")
        controls.mechanism_params(mech)
        controls.time_limit_control()
        st.markdown("**Problem**")
        controls.problem_controls()
        solve_clicked = st.form_submit_button("Solve", type="primary", width="stretch", icon=":material/play_arrow:")
solve_now = presets.take_auto_solve("explore") or solve_clicked

with solving.guard():
    prob = cache.problem_from_state()
params = state.params_of(mech)
upload_error = ss.get("_points_error")
result, error = (None, None) if upload_error and not solve_now else solving.solve_or_lookup(
    prob, mech, params, solve_now, float(ss["time_limit"]))

heading = explore.headline(prob, mech, params)
st.markdown(heading, help=glossary.help_for(heading))
solving.stopped_notice()
if result is not None and not result.ok:
    result = explore.kept_point_choice(prob, result)
if upload_error and result is None:  # in the main area, in place of the previous result
    st.error(f"Your points were not loaded: {upload_error} Fix the file or remove it in the sidebar; Solve runs on "
             "the sampled road nodes meanwhile.", icon=":material/upload_file:")
state.show_notices()
explore.problem_notices(prob)
ev = key = None
if result is not None and result.ok:
    key = cache.result_key(prob, result)
    ev = cache.evaluation(prob, result, key)
if error:
    st.error(f"{mech.label}: {error}", icon=":material/error:")
elif result is not None:
    metrics_panel.verdict_box(result, ev, mech.label_for(result.params))
map_col, side_col = st.columns([3, 1], gap="medium")
with side_col:
    if result is None:
        if hint := solving.solve_hint(prob, mech, params.get("eps")):
            st.warning(hint, icon=":material/hourglass_top:")
        if not error:
            st.info("Not solved yet for these settings. Press **Solve** at the foot of the sidebar.",
                    icon=":material/play_arrow:")
    elif ev is not None:
        metrics_panel.metrics_panel(prob, result, ev)
with map_col:
    explore.map_view(prob, result, ev, key)
if result is not None:
    details.details_tabs(prob, result, ev, "explore")
state.write_url("explore")
