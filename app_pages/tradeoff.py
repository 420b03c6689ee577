"""Trade-off: sweep ε (or δ, α, λ where a mechanism has them) and plot loss, violations, adversary error, time."""

import streamlit as st

from mdpviz.mechanisms import get_mechanism, mechanisms
from mdpviz.ui import cache, charts, controls, solving, state, sweep

ss = st.session_state
with st.sidebar:
    st.multiselect("Mechanisms", [m.name for m in mechanisms()], key="sweep_mechs", max_selections=4,
                   format_func=controls.mechanism_label, help="Other parameters keep their current values.")
    chosen = [get_mechanism(n) for n in ss["sweep_mechs"]]
    options = sweep.sweepable(chosen)
    if not options:
        st.info("Choose at least one mechanism.")
        st.stop()
    if ss.get("sweep_param") not in options:
        if ss.get("sweep_param"):
            st.warning(f"The chosen mechanisms have no parameter `{ss['sweep_param']}`; sweeping "
                       f"{next(iter(options))} instead.", icon=":material/warning:")
        ss["sweep_param"] = next(iter(options))
    st.selectbox("Parameter to sweep", list(options), key="sweep_param", format_func=lambda n: options[n].display)
    p = options[ss["sweep_param"]]
    with st.form("sweep_form", border=False):
        controls.range_control(p, f"sweep_range.{p.name}", sweep.default_range(p))
        ss.setdefault("sweep_n", 8)
        st.slider("Points per mechanism (count)", 2, 25, key="sweep_n")
        controls.time_limit_control()
        st.markdown("**Problem**")
        controls.problem_controls()
        run_clicked = st.form_submit_button("Run sweep", type="primary", width="stretch",
                                            icon=":material/play_arrow:")

st.markdown(f"#### Trade-off: metrics against {p.display}")
state.show_notices()
with solving.guard():
    prob = cache.problem_from_state()
    if run_clicked:
        low, high = ss[f"sweep_range.{p.name}"]
        ss["sweep"] = sweep.plan(state.settings_json(), chosen, p, float(low), float(high), int(ss["sweep_n"]))
    sw = sweep.current(ss.get("sweep"))
    if sw is not None and sw.running:
        stop_slot = st.empty()
        if stop_slot.button("Stop sweep (finished points are kept)", icon=":material/stop:", key="stop_sweep_button"):
            sw.running = False
            st.rerun()
        sweep.run_pending(prob, sw, float(ss["time_limit"]))
        stop_slot.empty()
if sw is None:
    st.info("Choose mechanisms, a parameter and a range in the sidebar, then press **Run sweep** at its foot.",
            icon=":material/play_arrow:")
    st.stop()
if sw.skipped:
    st.caption(f"Skipped (no parameter `{sw.param}`): {', '.join(sw.skipped)}.")
if sw.problem_key != state.settings_json():
    st.warning("These results were computed on different problem settings; press **Run sweep** to redo them.")
df = sw.frame()
st.caption(f"{sw.done} of {len(sw.points)} points · {controls.city_label(prob.city)} · K = {prob.k} · |Y| = {prob.m}")
resume_label = f"Resume sweep ({len(sw.points) - sw.done} points left)"
if not sw.running and sw.done < len(sw.points) and st.button(resume_label, icon=":material/play_arrow:"):
    sw.running = True
    st.rerun()
first = next((get_mechanism(m) for m in sw.base), None)
cur = state.params_of(first).get(sw.param) if first else None
labels = {m.name: m.label for m in mechanisms()}
if sentence := sweep.summary(df, sw.label, labels, cur):
    st.markdown(sentence)
shown = df.assign(mechanism=df["mechanism"].map(lambda m: labels.get(m, m)))
panels = [*charts.TRADEOFF_METRICS, ("solve_s", "Solve time (s)") if sweep.times_differ(df) else
          ("utility_loss_m", "Utility loss (m)")]
st.plotly_chart(charts.sweep_curves(shown, sw.label, cur, sw.log, panels), config={"displayModeBar": False},
                key="sweep_fig")
st.caption("Dashed line: the current value of the parameter (from Explore). Privacy cost = utility loss minus the "
           "no-privacy floor (every secret reporting its cheapest output)."
           + ("" if sweep.times_differ(df) else " Solve times differ little here (all under 0.1 s, or within a "
              "factor of 2), so the fourth panel shows the utility loss instead."))
with st.expander("Sweep data", expanded=False):
    st.dataframe(df, hide_index=True, width="stretch")
st.download_button("Sweep data (CSV)", data=df.to_csv(index=False), file_name=f"mdpviz-sweep-{sw.param}.csv",
                   mime="text/csv", on_click="ignore", icon=":material/download:")
state.write_url("tradeoff")
