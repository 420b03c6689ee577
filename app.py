"""mdpviz dashboard: the router. Run with ``streamlit run app.py``."""

import streamlit as st

st.set_page_config(page_title="mdpviz: metric DP on maps", page_icon="🗺️", layout="wide")
pages = [st.Page("pages/home.py", title="Home", icon="🏠", default=True)]
st.navigation(pages).run()
