"""RAG Attack & Defense Playground — entry point: navigation, session defaults, sidebar."""

from __future__ import annotations

import streamlit as st

from components.sidebar import render_sidebar
from components.state import DEFAULT_PIPELINE, init_state
from components.warmup import start_warmup

st.set_page_config(page_title="RAG Attack & Defense Playground", page_icon="🛡️", layout="wide")
init_state(entrypoint=True)
start_warmup(DEFAULT_PIPELINE["retriever"])  # first visit: the embedder loads while the home page is read
page = st.navigation(
    [
        st.Page("pages/home.py", title="Home", icon="🏠", default=True),
        st.Page("pages/teaching.py", title="Teaching mode", icon="🎓"),
        st.Page("pages/pipeline.py", title="Pipeline", icon="🧱"),
        st.Page("pages/poisoning_lab.py", title="Poisoning lab", icon="☣️"),
        st.Page("pages/extraction_lab.py", title="Extraction lab", icon="🕵️"),
        st.Page("pages/defense_comparison.py", title="Defense comparison", icon="🛡️"),
        st.Page("pages/membership.py", title="Membership inference", icon="🪪"),
        st.Page("pages/audit.py", title="Audit your RAG", icon="🔍"),
        st.Page("pages/analysis.py", title="Analysis", icon="📈"),
        st.Page("pages/sweeps.py", title="Sweeps", icon="🧮"),
        st.Page("pages/runs.py", title="Saved runs", icon="🗂️"),
    ]
)
page.run()
render_sidebar(page.title)  # after the page, so it shows the state the page just produced
