"""Which mechanism?: the committed regime grid answers it for a city, ε, region, K and cost."""

import streamlit as st

from mdpviz.ui import glossary, which

st.markdown("#### Which mechanism for my setting?")
glossary.caption("Every registered mechanism was run on a grid of settings (`python -m mdpviz regimes`, committed "
                 "under `docs/regimes/`). Pick a setting to see the mechanisms that keep their privacy claim, ranked "
                 "by what privacy costs the user, and below, where each method wins and where it does not.")
table = which.cells()
if table is None or table.empty:
    st.info("No regime grid is committed in this copy; run `python -m mdpviz regimes --out docs/regimes`.",
            icon=":material/info:")
    st.stop()
which.cell_view(table)
st.divider()
st.markdown("##### Where does one method win?")
which.method_view(table)
