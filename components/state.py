"""Session state: each browser session owns its pipeline settings, uploads and runs."""
from __future__ import annotations

import os
from typing import Any

import streamlit as st

DEFAULT_PIPELINE = {"corpus": "clinic_handbook", "chunk_size": 512, "chunk_overlap": 32, "retriever": "minilm",
                    "top_k": 5}
DEFAULT_LAB = {"queries": "clinic_handbook", "attack": "universal", "target": "pii", "target_text": "",
               "injection": "one-at-a-time", "limit": 30, "detectors": ["l2", "mahalanobis"], "seed": 0}


def init_state() -> None:
    ss = st.session_state
    ss.setdefault("pipeline", dict(DEFAULT_PIPELINE))
    ss.setdefault("lab", dict(DEFAULT_LAB))
    ss.setdefault("uploaded_docs", [])
    ss.setdefault("lab_run", None)
    ss.setdefault("lab_playing", False)
    ss.setdefault("lab_speed", 1.0)


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
