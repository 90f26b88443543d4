"""Pipeline: corpus, chunking, retriever, K; build the index; try a query."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.params_form import field_input
from components.text import md_escape, short
from components.state import close_run, data_dir, follow, init_state, picked, progress_callback
from engine.corpora import BENCHMARK_CORPORA, BUNDLED, MAX_UPLOAD_BYTES, SUPPORTED_SUFFIXES
from engine.embedders import RETRIEVERS, offline_retrievers
from engine.errors import EngineError
from engine.pipeline import Pipeline, PipelineConfig, documents_from_uploads

init_state()
st.title("Pipeline")
st.caption(
    "The retrieval half of a RAG system: which documents, cut into which chunks, embedded by which model, "
    "and how many come back per question."
)
p = dict(st.session_state["pipeline"])

sources = ["Bundled", "Benchmark data", "Upload"]
current = "Upload" if p["corpus"] == "upload" else ("Benchmark data" if p["corpus"] in BENCHMARK_CORPORA else "Bundled")
follow("pipeline_source_pick", current, sources)
source = st.radio("Corpus source", sources, key="pipeline_source_pick", horizontal=True)
if source == "Bundled":
    follow("pipeline_bundled_pick", p["corpus"], list(BUNDLED))  # a preset's bundled corpus, not always the first
    corpus = st.selectbox("Corpus", list(BUNDLED), key="pipeline_bundled_pick")
elif source == "Benchmark data":
    names = list(BENCHMARK_CORPORA)
    follow("pipeline_benchmark_pick", p["corpus"], names)
    corpus = st.selectbox("Corpus", names, key="pipeline_benchmark_pick")
    if not data_dir():
        st.warning(
            "Benchmark corpora need the data dir: start the app with RAG_PLAYGROUND_DATA_DIR set "
            "(e.g. to ../shared/corpora)."
        )
else:
    corpus = "upload"
    files = st.file_uploader(
        f"Your documents ({', '.join(SUPPORTED_SUFFIXES)}; up to {MAX_UPLOAD_BYTES // 2**20} MB each)",
        type=[s.lstrip(".") for s in SUPPORTED_SUFFIXES],
        accept_multiple_files=True,
        key="uploads",
    )
    if files:
        docs, errors = documents_from_uploads(files)
        for e in errors:
            st.error(f"{md_escape(e)} — fix or remove this file; the others are kept.")
        st.session_state["uploaded_docs"] = docs
        if docs:
            st.success(f"{len(docs)} documents from {len(files) - len(errors)} file(s) ready.")
    elif st.session_state["uploaded_docs"]:
        st.info(f"Using {len(st.session_state['uploaded_docs'])} previously uploaded documents.")

c1, c2, c3, c4 = st.columns(4)
follow("pipeline_chunking_pick", p["chunk_size"] is not None, [True, False])
chunking = c1.toggle("Chunk documents", key="pipeline_chunking_pick")
follow("pipeline_chunk_size_pick", int(p["chunk_size"] or 512), list(range(16, 4097)))
chunk_size = c2.number_input(
    "Chunk size (tokens)", 16, 4096, step=16, disabled=not chunking, key="pipeline_chunk_size_pick"
)
follow("pipeline_overlap_pick", int(p["chunk_overlap"]), list(range(0, 1025)))
chunk_overlap = c3.number_input("Overlap (tokens)", 0, 1024, step=8, disabled=not chunking, key="pipeline_overlap_pick")
top_k = field_input(PipelineConfig, "top_k", int(p["top_k"]), label="Top-K", container=c4, key="pipeline")
offline = offline_retrievers()
names = offline + [n for n in RETRIEVERS.names() if n not in offline]
follow("pipeline_retriever_pick", p["retriever"], names)  # keyed: its own setting never moves its identity
retriever = st.selectbox(
    "Retriever",
    names,
    key="pipeline_retriever_pick",
    format_func=lambda n: f"{n} — {short(RETRIEVERS.describe(n), 90)}",
)
st.caption(md_escape(RETRIEVERS.describe(retriever)))
new = {
    "corpus": corpus,
    "chunk_size": int(chunk_size) if chunking else None,
    "chunk_overlap": int(chunk_overlap),
    "retriever": retriever,
    "top_k": int(top_k),
}
if new != st.session_state["pipeline"]:
    st.session_state["pipeline"] = new
    close_run()  # a prepared attack belongs to the old pipeline
for pick in (
    "pipeline_retriever_pick",
    "pipeline_source_pick",
    "pipeline_benchmark_pick",
    "pipeline_bundled_pick",
    "pipeline_chunking_pick",
    "pipeline_chunk_size_pick",
    "pipeline_overlap_pick",
):
    picked(pick)  # the settings now hold what the widgets show


def make_pipeline() -> Pipeline:
    """The session's pipeline for the current settings; reused across reruns so the corpus is loaded once."""
    key = (tuple(sorted(new.items())), data_dir(), id(st.session_state["uploaded_docs"]))
    cached = st.session_state.get("pipeline_obj")
    if cached is None or cached[0] != key:
        cfg = PipelineConfig(**new, data_dir=data_dir())
        cached = (key, Pipeline(cfg, uploaded=st.session_state["uploaded_docs"]))
        st.session_state["pipeline_obj"] = cached
    return cached[1]


if st.button("Build index", type="primary"):
    bar = st.progress(0.0, text="loading corpus")
    try:
        pipe = make_pipeline()
        index = pipe.build(progress=progress_callback(bar))
        bar.empty()
        st.session_state["pipeline_info"] = {
            "docs": len(pipe.corpus),
            "dim": None if index.vectors is None else int(index.vectors.shape[1]),
            "embedded_now": index.n_encoded,
            "similarity": pipe.retriever.similarity,
        }
    except EngineError as e:
        bar.empty()
        st.error(md_escape(e))
info = st.session_state.get("pipeline_info")
if info:
    st.caption(
        f"Index ready: {info['docs']:,} chunks, {info['similarity']} similarity"
        + (f", {info['dim']}-d" if info["dim"] else "")
        + "; "
        + (
            "all embedded now."
            if info["embedded_now"] >= info["docs"]
            else "all from the embedding cache."
            if info["embedded_now"] == 0
            else f"{info['embedded_now']:,} embedded now, the rest from the embedding cache."
        )
    )

st.subheader("Try a query")
q = st.text_input("Question", placeholder="e.g. What is a normal HbA1c?")
if q:
    try:
        rows = make_pipeline().try_query(q, int(top_k))
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        with st.expander("Read the retrieved documents in full"):
            for r in rows:
                st.caption(f"rank {r['rank']} · {r['doc_id']} · score {r['score']:.3f}")
                st.text(r["text"])  # corpus text: shown as plain text, never as Markdown or HTML
    except EngineError as e:
        st.error(md_escape(e))
