"""Learn: a guided walk through mDP with a live example at each step."""

import streamlit as st

from mdpviz.explain import lp_size, two_point_keep
from mdpviz.ui import charts, glossary, learn, solving, state

st.markdown("#### Learn: mDP in four steps")
state.show_notices()
s1, s2, s3, s4, s5 = st.tabs(["1 · mDP vs local DP", "2 · What the LP optimises", "3 · Why PAnDA uses anchors",
                              "4 · What δ buys", "Glossary"])

with s1:
    st.markdown("""
**Local DP** treats every pair of locations alike: next door or across town, reports must look equally similar.
**Metric DP** scales protection with distance: locations *D* km apart may differ by at most **e^(ε·D)**. Two
locations, each reporting itself or the other, have the optimal mechanism *randomised response*:
report the truth with probability **e^(εD) / (1 + e^(εD))**.""")
    c1, c2 = st.columns(2)
    eps = c1.slider("ε (km⁻¹)", 0.5, 20.0, 5.0, 0.5, key="learn_eps1")
    eps_l = c2.slider("local DP ε (dimensionless)", 0.1, 5.0, 1.0, 0.1, key="learn_epsl")
    st.plotly_chart(learn.step_local_vs_metric(eps, eps_l), config={"displayModeBar": False}, key="learn_fig1")
    st.caption(f"At 200 m, mDP reports the truth with probability {two_point_keep(eps, 0.2):.2f}: near points stay "
               "confusable, far ones need not be. Local DP pays the same everywhere.")

with s2:
    st.markdown("""
The **optimal LP** (Bordenabe et al. 2014) chooses every probability Z[x, y] to minimise the expected cost
Σ p(x) c(x, y) Z[x, y] subject to the mDP constraints Z[x, y] ≤ e^(ε·d(x, x')) Z[x', y] for every pair and every
output. The **exponential mechanism** uses a fixed formula, exp(−ε·d(x, y)/2), which meets the same constraints
with slack. Below: five points on a 1.2 km line, both mechanisms solved live by the library.""")
    eps2 = st.select_slider("ε (km⁻¹) · log scale", options=[1.0, 2.0, 3.0, 5.0, 8.0, 12.0, 20.0], value=5.0,
                            key="learn_eps2")
    with solving.guard():
        prob, em, lp = learn.tiny_results(eps2)
    labels = learn.tiny_labels(prob)
    c1, c2 = st.columns(2)
    with c1:
        st.plotly_chart(charts.matrix_heatmap(em.Z, "Exponential mechanism Z[x, y]", labels, labels),
                        config={"displayModeBar": False}, key="learn_em")
        st.markdown("EM: " + learn.tiny_summary(prob, em))
    with c2:
        st.plotly_chart(charts.matrix_heatmap(lp.Z, "Optimal LP Z[x, y]", labels, labels),
                        config={"displayModeBar": False}, key="learn_lp")
        st.markdown("LP: " + learn.tiny_summary(prob, lp))

with s3:
    small, paper = lp_size(100, 50)["inequalities"], lp_size(2000, 100)["inequalities"]
    st.markdown(f"""
The LP has one constraint per ordered pair of secrets and output: **K(K−1)·|Y|**. At K = 100 and |Y| = 50 that is
{small:,}; at the paper's K = 2,000 and |Y| = 100 it is {paper:,}. **PAnDA** lets each user pick a few
nearby *anchors* at random, solves the LP only over the union of anchors, and lets every user report from the row of
their nearest anchor. The randomness of the anchor choice costs part of ε (Phase I) and a safety margin covers the
surrogate error; the rest of ε goes to the small LP.""")
    c1, c2, c3 = st.columns(3)
    k = c1.select_slider("K = |X| (secrets)", options=[100, 200, 500, 1000, 2000, 3000, 5000], value=2000,
                         key="learn_k")
    m = c2.slider("|Y| (outputs)", 10, 200, 100, 10, key="learn_m")
    share = c3.slider("anchors (share of K)", 0.05, 0.5, 0.15, 0.01, key="learn_share",
                      help="The paper reports anchors ≈ 15 % of K.")
    st.plotly_chart(learn.size_figure(k, m, share), config={"displayModeBar": False}, key="learn_size")
    full, anch = lp_size(k, m), lp_size(max(2, int(k * share)), m)
    st.caption(f"K = {k}: full LP {full['inequalities']:,} inequalities; anchor LP {anch['inequalities']:,}.")

with s4:
    st.markdown("""
PAnDA's paper claims **(ε, δ)-probabilistic mDP**: ε-mDP between every pair of users except with probability δ,
over the random anchor choice. A larger δ lets PAnDA use a smaller safety margin, leaving more of ε to the LP and so
less utility loss; δ is the price. The paper sweeps δ from 10⁻⁷ to 0.15. That is the claim, not what we measure: on
the papers' own settings PAnDA breaks it (Home and the Which mechanism? page give the measured counts).""")
    c1, c2 = st.columns(2)
    delta = c1.select_slider("δ (probability) · log scale", options=[1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.05, 0.15],
                             value=1e-7, key="learn_delta", format_func=lambda v: f"{v:g}")
    n_users = c2.slider("N (users)", 10, 200, 50, 10, key="learn_n")
    st.markdown(learn.delta_text(delta, n_users))
    with solving.guard():
        here, strict = learn.delta_budget(float(delta)), learn.delta_budget(learn.STRICT_DELTA)
    st.plotly_chart(charts.stacked_split([("Phase I (anchor choice)", here.get("phase1", 0.0)),
                                          ("safety margin", here.get("margin", 0.0)),
                                          ("Phase II (the LP)", here.get("phase2", 0.0))],
                                         f"PAnDA-p's budget at δ = {delta:g}, live", "% of ε"),
                    config={"displayModeBar": False}, key="learn_delta_split")
    st.markdown(learn.delta_example_text(float(delta), here, strict))
    st.page_link("app_pages/tradeoff.py", label="Sweep δ for PAnDA-p on the Trade-off page",
                 icon=":material/show_chart:", query_params=learn.delta_sweep_query())
with s5:
    st.caption("The words the dashboard uses, defined once; a verdict's tooltip shows the ones it uses.")
    glossary.glossary_page()
state.write_url("learn")
