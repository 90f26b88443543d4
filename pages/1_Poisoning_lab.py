"""Poisoning lab (headless-first version): configure a run from the registries and run it."""
from __future__ import annotations

import os

import streamlit as st

from components.poisoning import events_jsonl, render_figures, render_last_retrieval, render_summary
from engine.attacks.poisoning import POISONING_ATTACKS, TARGET_KINDS
from engine.config import INJECTION_MODES, PoisonConfig
from engine.corpora import available_corpora
from engine.detectors import DETECTORS
from engine.embedders import RETRIEVERS
from engine.errors import EngineError
from engine.queries import available_query_sets
from engine.runs import PoisoningRun

st.set_page_config(page_title="Poisoning lab", layout="wide")
st.title("Poisoning lab")
st.write("Universal poisoning: each attacked query q gets a poisoned document q ⊕ target information. "
         "Benchmark corpora and query sets need the data dir ($RAG_PLAYGROUND_DATA_DIR).")

offline = ["minilm", "mpnet", "e5-small", "bm25"]
with st.form("poison_config"):
    c1, c2, c3 = st.columns(3)
    corpus = c1.selectbox("Corpus", available_corpora())
    queries = c1.selectbox("Query set", available_query_sets())
    retriever = c2.selectbox("Retriever", offline + [n for n in RETRIEVERS.names() if n not in offline])
    attack = c2.selectbox("Attack", POISONING_ATTACKS.names(), index=POISONING_ATTACKS.names().index("universal"))
    target = c3.selectbox("Target information", [t for t in TARGET_KINDS])
    target_text = c3.text_input("Your own target text (target = custom)")
    injection = c1.radio("Injection", INJECTION_MODES, horizontal=True)
    limit = c2.number_input("Queries (first N)", min_value=1, max_value=5000, value=50)
    top_k = c3.number_input("Top-K", min_value=1, max_value=100, value=5)
    detectors = st.multiselect("Detectors", DETECTORS.names(), default=["l2", "mahalanobis"])
    submitted = st.form_submit_button("Run attack", type="primary")

if submitted:
    try:
        cfg = PoisonConfig(corpus=corpus, queries=queries, retriever=retriever, attack=attack, target=target,
                           target_text=target_text, injection=injection, limit=int(limit), top_k=int(top_k),
                           detectors=tuple(detectors), data_dir=os.environ.get("RAG_PLAYGROUND_DATA_DIR", ""),
                           chunk_size=None if corpus == "bioasq" else 512)
        bar = st.progress(0.0, text="starting")

        def progress(stage: str, done: int, total: int) -> None:
            bar.progress(min(done / max(total, 1), 1.0), text=f"{stage}: {done}/{total}")

        run = PoisoningRun(cfg, progress=progress)
        run.run()
        bar.empty()
        st.session_state["lab_run"] = {"events": run.events, "summary": run.summary(), "detectors": list(detectors),
                                       "texts": {**{d.id: d.text for d in run.store.base.corpus.documents},
                                                 **{p.doc.id: p.doc.text for p in run.poisons}}}
    except EngineError as e:
        st.error(str(e))

res = st.session_state.get("lab_run")
if res:
    render_summary(res["summary"])
    render_last_retrieval(res["events"], lambda d: res["texts"].get(d, ""))
    render_figures(res["events"], [d for d in res["detectors"] if "skipped" not in res["summary"]["detectors"].get(d, {})])
    st.download_button("Download events (JSONL)", events_jsonl(res["events"]), file_name="events.jsonl",
                       mime="application/json")
