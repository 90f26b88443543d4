"""RAG Attack & Defense Playground — home page (minimal until the full UI lands)."""
from __future__ import annotations

import os

import streamlit as st

from components.poisoning import events_jsonl, render_figures, render_last_retrieval, render_summary
from engine.config import list_presets, load_preset
from engine.errors import EngineError
from engine.runs import PoisoningRun

st.set_page_config(page_title="RAG Attack & Defense Playground", layout="wide")
st.title("RAG Attack & Defense Playground")
st.write("Poison a retrieval-augmented generation pipeline's knowledge base, watch the poisoned documents "
         "reach the top of the retrieved results, and see which detectors catch them. Everything runs "
         "locally with real embedding models and a real Chroma vector database.")

presets = [p for p in list_presets() if p["kind"] == "poison"]
names = [p["name"] for p in presets]
choice = st.selectbox("Preset", names, index=names.index("quick-demo") if "quick-demo" in names else 0)
st.caption(next(p["description"] for p in presets if p["name"] == choice))

if st.button("Run the demo", type="primary"):
    try:
        _, cfg, _ = load_preset(choice)
        if cfg.data_dir == "" and os.environ.get("RAG_PLAYGROUND_DATA_DIR"):
            cfg = cfg.replace(data_dir=os.environ["RAG_PLAYGROUND_DATA_DIR"])
        bar = st.progress(0.0, text="starting")

        def progress(stage: str, done: int, total: int) -> None:
            bar.progress(min(done / max(total, 1), 1.0), text=f"{stage}: {done}/{total}")

        run = PoisoningRun(cfg, progress=progress)
        run.run()
        bar.empty()
        st.session_state["home_run"] = {"events": run.events, "summary": run.summary(),
                                        "detectors": list(cfg.detectors), "texts": {
                                            **{d.id: d.text for d in run.store.base.corpus.documents},
                                            **{p.doc.id: p.doc.text for p in run.poisons}}}
    except EngineError as e:
        st.error(f"{e}")

res = st.session_state.get("home_run")
if res:
    render_summary(res["summary"])
    render_last_retrieval(res["events"], lambda d: res["texts"].get(d, ""))
    render_figures(res["events"], [d for d in res["detectors"] if "skipped" not in res["summary"]["detectors"].get(d, {})])
    st.download_button("Download events (JSONL)", events_jsonl(res["events"]), file_name="events.jsonl",
                       mime="application/json")
