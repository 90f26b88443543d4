"""Analysis: which properties of a question go with a well-ranked poison? (correlations, scipy)"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.state import init_state, my_runs_dir
from components.text import md_escape
from engine.analysis import FEATURES, correlate, query_features
from engine.analysis.correlations import EXTRACTION_FEATURES, correlation_rows, extraction_round_features
from engine.errors import EngineError
from engine.plots import correlation_scatter
from engine.report import load_run
from engine.saved import list_runs

init_state()
st.title("Analysis")
st.subheader("Poisoning: what makes a poison rank high?")
st.caption(
    "Across the questions attacked in the current run: does the poison rank better for long questions, or "
    "when the clean documents are far from the question (the paper's explanation, §4)?"
)
run = st.session_state.get("lab_run")
if run is None or run.rounds_done < 3:
    st.info("Attack at least 3 questions in the Poisoning lab first.")
else:
    key = ("features", run.run_id, run.rounds_done)
    try:
        if st.session_state.get("analysis_key") != key:
            st.session_state["analysis_df"] = query_features(run)
            st.session_state["analysis_key"] = key
        df: pd.DataFrame = st.session_state["analysis_df"]
        names = list(FEATURES)
        c1, c2 = st.columns(2)
        x = c1.selectbox("x", names, index=names.index("query_words"), format_func=FEATURES.get)
        y = c2.selectbox("y", names, index=names.index("poison_rank"), format_func=FEATURES.get)
        st.plotly_chart(correlation_scatter(df, x, y, FEATURES, correlate(df, x, y)), width="stretch", key="corr")
        st.caption(
            "Each dot is one attacked question. A p-value below 0.05 means such a correlation would be "
            "unlikely by chance alone; with few questions, treat it as a hint."
        )
        st.markdown("**Every feature against the poison's rank**")
        st.dataframe(correlation_rows(df, FEATURES, "poison_rank"), hide_index=True, width="stretch")
        st.caption("— : undefined (the feature is the same for every question, or fewer than 3 questions).")
        st.download_button(
            "Per-question features (CSV)",
            df.to_csv(index=False),
            file_name=f"{run.run_id}-features.csv",
            mime="text/csv",
            on_click="ignore",
        )
    except EngineError as e:
        st.error(md_escape(e))


st.subheader("Extraction: what makes a round leak?")
st.caption(
    "Across the rounds of saved extraction runs: does a round leak more when the retrieved chunks are closer "
    "to the attacker's query, when the answer is longer, when the query is longer?"
)
saved = list_runs(my_runs_dir(), kind="extract")
if not saved:
    st.info("Run an attack in the Extraction lab first (runs are saved automatically).")
else:
    label = {r["run_id"]: f"{r['run_id']} · {r['attack']} vs {r['defenses']} · {r['corpus']}" for r in saved}
    chosen = st.multiselect("Extraction runs", list(label), default=list(label)[:3], format_func=label.get)
    if chosen:
        try:
            xdf = extraction_round_features(
                {rid: load_run(next(r["path"] for r in saved if r["run_id"] == rid)) for rid in chosen}
            )
            names = list(EXTRACTION_FEATURES)
            c1, c2 = st.columns(2)
            xx = c1.selectbox("x ", names, index=names.index("top1_score"), format_func=EXTRACTION_FEATURES.get)
            yy = c2.selectbox("y ", names, index=names.index("max_recall"), format_func=EXTRACTION_FEATURES.get)
            if len(xdf) < 3:
                st.info("Fewer than 3 rounds in the chosen runs: correlations need at least 3.")
            st.plotly_chart(
                correlation_scatter(xdf, xx, yy, EXTRACTION_FEATURES, correlate(xdf, xx, yy)),
                width="stretch",
                key="xcorr",
            )
            st.markdown("**Every feature against the best ROUGE-L recall of a context chunk in the answer**")
            st.dataframe(correlation_rows(xdf, EXTRACTION_FEATURES, "max_recall"), hide_index=True, width="stretch")
        except Exception as e:  # a damaged run file must not break the page
            st.error(f"Could not analyse these runs: {md_escape(type(e).__name__)}: {md_escape(e)}")
