"""Session state: each browser session owns its pipeline settings, uploads and runs."""
from __future__ import annotations

import os
from typing import Any

import streamlit as st

DEFAULT_PIPELINE = {"corpus": "clinic_handbook", "chunk_size": 512, "chunk_overlap": 32, "retriever": "minilm",
                    "top_k": 5}
DEFAULT_LAB = {"queries": "clinic_handbook", "attack": "universal", "target": "pii", "target_text": "",
               "injection": "one-at-a-time", "limit": 30, "detectors": ["l2", "mahalanobis"], "seed": 0}
# the quick-extraction-demo preset (presets/quick-extraction-demo.yaml): what leaks visibly offline
DEFAULT_EXTRACT = {"kb": "clinic_records", "generator": "qwen2.5-0.5b", "litellm_model": "openai/gpt-4o-mini",
                   "api_base": "", "attack": "rag-thief", "attack_params": {}, "attacker_llm": "none",
                   "rounds": 10, "top_k": 2, "max_tokens": 128, "answer_budget": "context", "defenses": [],
                   "seed": 0}


def init_state() -> None:
    ss = st.session_state
    ss.setdefault("pipeline", dict(DEFAULT_PIPELINE))
    ss.setdefault("lab", dict(DEFAULT_LAB))
    ss.setdefault("uploaded_docs", [])
    ss.setdefault("lab_run", None)
    ss.setdefault("lab_playing", False)
    ss.setdefault("lab_speed", 1.0)
    # extraction lab (its own run, independent of the poisoning lab's)
    ss.setdefault("extract", dict(DEFAULT_EXTRACT))
    ss.setdefault("extract_run", None)
    ss.setdefault("extract_source", None)     # {"config", "corpus"} the live run was prepared from (for Reset)
    ss.setdefault("extract_playing", False)
    ss.setdefault("extract_speed", 1.0)
    ss.setdefault("extract_view", None)       # folder of a reopened saved run being viewed
    ss.setdefault("llm_api_key", "")          # typed in the sidebar; lives only in this session's memory


def data_dir() -> str:
    return os.environ.get("RAG_PLAYGROUND_DATA_DIR", "")


def progress_callback(bar) -> Any:
    def cb(stage: str, done: int, total: int) -> None:
        bar.progress(min(done / max(total, 1), 1.0), text=f"{stage}: {done:,}/{total:,}")
    return cb


def close_run() -> None:
    run = st.session_state.get("lab_run")
    if run is not None:
        run.close()
    st.session_state["lab_run"] = None
    st.session_state["lab_playing"] = False
