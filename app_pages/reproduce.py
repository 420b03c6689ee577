"""Reproduce: first the claims ledger (each paper's headline claims, one verdict and measured cause each), then
the papers' tables beside ours with the reasons they differ, and a live rerun of the quick form."""

import streamlit as st

from mdpviz.reproduce import get_experiment
from mdpviz.reproduce.base import MODE_TEXT
from mdpviz.ui import reproduce as rp
from mdpviz.ui import solving

ss = st.session_state
papers = rp.by_paper()
with st.sidebar:
    st.caption("Tables and reruns")
    paper = st.selectbox("Paper", list(papers), key="repro_paper", format_func=rp.paper_label)
    names = [e.name for e in papers[paper]]
    if ss.get("repro_exp") not in names:
        ss["repro_exp"] = names[0]
    name = st.selectbox("Experiment", names, key="repro_exp", format_func=lambda n: get_experiment(n).title)
    exp = get_experiment(name)
    mode = st.radio("Mode", exp.modes, key=f"repro_mode_{name}", horizontal=True,
                    format_func=MODE_TEXT.get,
                    help="Where the authors' published code differs from the paper, its settings are a mode.")
    size = ss.get("repro_size", "quick")
    run_clicked = st.button(f"Rerun the {size} form now", type="primary", width="stretch", key="repro_run",
                            icon=":material/play_arrow:",
                            help="About 2 minutes on 2 cores. Finished points are saved: pressing again after an "
                                 "interruption resumes.")

st.markdown("#### Reproduce: the seed papers' claims, judged here")
claims_tab, tables_tab = st.tabs(["Claims ledger", "Tables and reruns"])
with claims_tab:
    rp.ledger_view()
with tables_tab:
    st.markdown(f"#### {exp.title}")
    st.caption(f"{rp.paper_info(paper)['title']}. {exp.summary}")
    with solving.guard():
        if run_clicked:
            rp.rerun(exp, mode, size)
        found = rp.available(exp, mode, size)
        if not found:
            st.info("No report yet for this experiment and mode: press **Rerun** in the sidebar, or run "
                    f"`python -m mdpviz reproduce {exp.name}` and commit its folder under docs/reproduce/.",
                    icon=":material/play_arrow:")
            st.stop()
        origin_key = f"repro_origin_{name}_{mode}"
        if run_clicked or ss.get(origin_key) not in found:
            ss[origin_key] = list(found)[-1 if run_clicked else 0]  # a rerun shows itself, not the shipped report
        origin = st.radio("Report", list(found), key=origin_key, horizontal=True, label_visibility="collapsed")
        report = rp.load(found[origin])
    if report is None:
        st.warning("This report folder is incomplete; rerun the experiment.", icon=":material/warning:")
        st.stop()
    rp.header(report, origin)
    rp.chart(exp, report)
    rp.tables(report)
    rp.reasons(report)
