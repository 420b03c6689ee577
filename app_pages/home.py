"""Home: what mDP is, what ε means in metres, and one button into Explore."""

import streamlit as st

from mdpviz.ui import glossary, home, presets, state

st.title("mdpviz")
st.markdown("##### See metric differential privacy for locations on real road networks")
state.show_notices()
st.markdown("Each user reports a randomly perturbed location instead of the true one, so that nearby places are hard "
            "to tell apart. Start with an example, or read below what the rule is and what ε means in metres.")
st.markdown("**Start with an example** (one click: it opens the page and solves)")
presets.buttons("home", columns=2, main=True)
home.seed_examples()
if any(not p.get("main") and not p.get("regime") for p in presets.presets()):
    with st.expander("The papers' own settings (and our variants, labelled ours), and what happens there"):
        presets.buttons("home-papers", columns=2, main=False, regime=False)
left, right = st.columns([3, 2], gap="large")
with left:
    st.markdown(home.INTRO)
    glossary.terms_line(home.INTRO)
    st.subheader("What ε means in metres")
    eps = st.select_slider("ε (km⁻¹) · log scale", options=home.EPS_OPTIONS, value=5.0, key="home_eps",
                           format_func=lambda v: f"{v:g}",
                           help="The privacy budget per kilometre: smaller is more private.")
    st.markdown(home.radius_sentence(eps))
    if st.button(home.button_label(), type="primary", icon=":material/map:"):
        st.switch_page("app_pages/explore.py", query_params=home.explore_query(eps))
    st.caption("The default is small and instant. Larger K and the optimal LP are one click away in Explore.")
with right:
    st.plotly_chart(home.picture(eps), config={"displayModeBar": False}, key="home_picture")
    st.caption(home.radius_caption(eps))
state.write_url("home")
