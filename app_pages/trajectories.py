"""Trajectories: context-aware mDP (C-mDP, seed 002) on a synthetic vehicle corpus between stations."""

import json

import pandas as pd
import streamlit as st

from mdpviz.cmdp.pipeline import CAVEAT
from mdpviz.cmdp_comparison import BEST_LP_LABEL, vs_lp_pct
from mdpviz.explain import format_s
from mdpviz.ui import cache, glossary, maps, solving
from mdpviz.ui import trajectories as tv

ss = st.session_state
variants = {m.name: m for m in tv.variants()}
with st.sidebar:
    if ss.get("traj_mech") not in variants:
        ss["traj_mech"] = next(iter(variants))
    mech = variants[st.selectbox("C-mDP variant", list(variants), key="traj_mech",
                                 format_func=lambda n: variants[n].label, help="The registered C-mDP mechanisms.")]
    glossary.caption(mech.info)
    tv.preset_button(mech)
    with st.form("traj_form", border=False):
        tv.param_controls(mech)
        tv.station_controls(mech)
        st.form_submit_button("Solve", type="primary", width="stretch", icon=":material/play_arrow:")

city, k, seed, region = ss["traj_city"], int(ss["traj_k"]), int(ss[tv.param_key("seed")]), ss["traj_region"]
values = {p.name: ss[tv.param_key(p.name)] for p in tv.page_params()}
values_json = json.dumps(values, sort_keys=True)

st.markdown("#### Trajectories: context-aware mDP (C-mDP)", help=glossary.help_for("mDP blanket"))
glossary.alert("info", CAVEAT, icon=":material/info:")
with solving.guard():
    prob = tv.problem(city, k, seed, region)
    result = tv.solve_variant(city, k, seed, region, mech.name, values_json)
    lp, lp_loss = tv.lp_baseline(city, k, seed, region, values_json)
if not result.ok:
    st.error(f"The C-mDP LP ended with status **{result.status}**: {result.message}")
    st.stop()
diag = result.diagnostics
roads = cache.road_layer(prob)

c1, c2, c3, c4 = st.columns(4)
held = diag.get("heldout_loss_m")
pct = vs_lp_pct(result.objective_m, lp_loss)
c1.metric("C-mDP loss (m)", f"{result.objective_m:.1f}", delta=None if pct is None else f"{pct:+.1f} % vs best LP",
          delta_color="inverse",
          help="In-sample expected next-location loss, Eq. 34"
               + (f"; on a held-out corpus: {held:.1f} m." if held is not None else ".")
               + " The change is against the best context-invariant LP (below).")
# labels short enough for a quarter of the main column at 1280×800 (longer ones are cut off with "…")
c2.metric("Station-context pairs", f"{diag['n_secrets']:,}",
          help="C-mDP's secrets (count): each is a station together with its context, its blanket (the stations "
               "before and after that predict it). The K stations of the sidebar make this many.")
ve, vl = diag["violations_enforced"], diag["violations_location"]
c3.metric("Violations of its claim", tv.violations_text(ve),
          help="Pairs of (station, context) secrets under the metric that includes the context (the paper's Eq. 13): "
               "must be 0.")
c4.metric("Violations, location only", tv.violations_text(vl), delta="not claimed", delta_color="off",
          delta_arrow="off",
          help="Violations when rows are averaged over contexts and compared by location only: may be > 0 (it "
               "protects location with its context, a different target).")
floor, cf_floor = diag.get("floor_m"), diag.get("floor_without_context_m")
if floor is not None:
    glossary.caption(f"**No-privacy floor** {floor:,.1f} m: every (station, context) secret reporting its cheapest "
                     f"output under the same model, so the **privacy cost** is {result.objective_m - floor:,.1f} m "
                     f"of the {result.objective_m:,.1f} m"
                     + (f"; without context the floor is {cf_floor:,.1f} m (what knowing the context could buy "
                        f"with no privacy at all: {cf_floor - floor:,.1f} m)." if cf_floor is not None else "."))
glossary.caption("**Against the best LP that ignores context** (" + BEST_LP_LABEL + "): "
                 + (f"{lp_loss:.1f} m under the same model; {mech.label} is **{pct:+.1f} %** from it (negative: "
                    "what knowing the context buys)." if lp_loss is not None and pct is not None else
                    f"status {lp.status}, no comparison."))

examples = diag.get("examples", [])
pick = st.selectbox("Report to inspect", range(len(examples)), format_func=lambda i: (
    f"vehicle {examples[i]['trajectory']} at station {examples[i]['station']}, {examples[i]['hour']} h UTC, "
    f"{examples[i]['speed_kmh']:.0f} km/h, blanket {examples[i]['blanket_size']}"))
ex = examples[pick]
left, right = st.columns([3, 2], gap="medium")
with left:
    st.pydeck_chart(tv.trajectory_deck(prob, roads, ex), key="traj-map")
    st.html(tv.legend())
with right:
    glossary.caption(f"C-mDP row q(x, b) for station {ex['station']} with its blanket")
    st.pydeck_chart(tv.row_deck(prob, roads, diag["Q"][ex["row"]], ex["station"]), key="traj-q")
    glossary.caption(f"{BEST_LP_LABEL} row for station {ex['station']}")
    if lp.ok:
        st.pydeck_chart(tv.row_deck(prob, roads, lp.Z[ex["station"]], ex["station"]), key="traj-lp")
    st.html(maps.symbol_legend_html([(f"station {ex['station']}: the true location x(t)", maps.TRUE, "dot"),
                                     ("other stations", maps.SECRET, "dot")])
            + '<div style="font-size:0.8rem">Circles: where the row reports; larger and redder is more likely '
              "(probability, each map on its own scale).</div>")

tab_curve, tab_blanket, tab_table = st.tabs(["Loss vs ε", "Blankets", "Per-context rows"])
with tab_curve:
    sweep = tv.sweep_preset(mech)
    eps_values = sweep.eps if sweep is not None else (float(values["eps"]),)
    glossary.caption(f"ε grid ({', '.join(f'{e:g}' for e in eps_values)} km⁻¹): "
                     + (f"the ε values of the preset *{sweep.label}*, on this page's stations (its own problem "
                        "is not loaded: the preset button does that)." if sweep is not None else
                        "this page's ε (no preset sweeps ε)."))
    done = tv.cached_curves(city, k, seed, region, values_json, eps_values) is not None
    estimate = tv.curves_estimate_s(result, lp, len(eps_values))
    lines = tv.METHODS + tv.REFERENCES
    if not done:
        glossary.caption(f"{tv.METHODS} methods of the paper's Fig. 10 and the LP on the context-averaged cost as "
                         f"a reference ({lines} lines), at {len(eps_values)} values of ε: "
                         f"{len(eps_values) * lines} solves, about {format_s(estimate)} here (estimated from this "
                         "page's solves).")
    label = (f"Show loss and runtime against ε ({lines} lines)" if done else
             f"Compute loss and runtime against ε ({lines} lines, about {format_s(estimate)})")
    if st.button(label, icon=":material/show_chart:"):
        ss["traj_curves"] = values_json
    if ss.get("traj_curves") == values_json:
        with solving.guard():
            df = tv.curves(city, k, seed, region, values_json, eps_values)
        if not done:  # computed just now: draw again, so the button and caption above say it is done
            st.rerun()
        st.plotly_chart(tv.loss_figure(df), key="traj-loss")
        st.plotly_chart(tv.loss_figure(df, "wall_s", "Runtime (s) against ε"), key="traj-time")
        st.dataframe(tv.curves_table(df), hide_index=True, width="stretch")
with tab_blanket:
    st.plotly_chart(tv.blanket_figure(diag), key="traj-hist")
    clf = diag.get("classifier")
    if clf:
        glossary.caption("Blanket classifier (positive = fail to reject), per split")
        st.dataframe(tv.classifier_table(clf), width="stretch")
    pc1, pc2 = st.columns(2)
    pc1.plotly_chart(tv.pvalue_figure(diag["groups"], "speed_bin", diag["corpus"]["alpha"]), key="traj-p-speed")
    pc2.plotly_chart(tv.pvalue_figure(diag["groups"], "hour_group", diag["corpus"]["alpha"]), key="traj-p-hour")
    glossary.caption("Algorithm 1 per (hour group, speed bin, region) group")
    st.dataframe(tv.groups_table(diag["groups"]), hide_index=True, width="stretch")
with tab_table:
    st.dataframe(pd.DataFrame({"station": diag["secret_station"], "blanket (x(t−1)>x(t−2)…)": diag["secret_context"],
                               "prior": diag["secret_prior"]}), hide_index=True, width="stretch")
