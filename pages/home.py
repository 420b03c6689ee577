"""Home page: what mdpviz is and the bundled cities."""

import streamlit as st

from mdpviz.cities import list_cities

st.title("mdpviz")
st.write("Explore metric differential privacy (geo-indistinguishability) mechanisms on real road networks.")
st.dataframe([{"city": c.slug, "nodes": c.nodes, "edges": c.edges, "source": c.source} for c in list_cities()])
