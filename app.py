"""mdpviz dashboard: the router. Run with ``streamlit run app.py``."""

from pathlib import Path

import streamlit as st

from mdpviz.ui import presets, state

# a local icon: an emoji or ":material/…:" page icon makes the browser fetch it from a third-party host
st.set_page_config(page_title="mdpviz: metric DP on maps", page_icon=str(Path(__file__).parent / "mdpviz/ui/icon.svg"),
                   layout="wide")

PAGES = [
    st.Page("app_pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("app_pages/explore.py", title="Explore", icon=":material/map:", url_path="explore"),
    st.Page("app_pages/which.py", title="Which mechanism?", icon=":material/rule:", url_path="which"),
    st.Page("app_pages/compare.py", title="Compare", icon=":material/compare:", url_path="compare"),
    st.Page("app_pages/tradeoff.py", title="Trade-off", icon=":material/show_chart:", url_path="tradeoff"),
    st.Page("app_pages/trajectories.py", title="Trajectories", icon=":material/route:", url_path="trajectories"),
    st.Page("app_pages/learn.py", title="Learn", icon=":material/school:", url_path="learn"),
    st.Page("app_pages/reproduce.py", title="Reproduce", icon=":material/fact_check:", url_path="reproduce"),
]

page = st.navigation(PAGES)
state.check_requested_page([p.url_path for p in PAGES])
# less empty space above the content, so map and metrics fit a 1280×800 screen
st.html("<style>[data-testid='stMainBlockContainer']{padding-top:2.2rem;padding-bottom:2rem}</style>")
state.keep_shared_state()
state.ensure_defaults()
state.sync_from_url()
presets.follow()
state.validate_state()
if page.title != "Home":  # Home shows them on the page
    with st.sidebar.expander("Examples: one click to a solved view", icon=":material/play_circle:"):
        presets.buttons("sidebar")
page.run()
