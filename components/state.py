"""Session state: each browser session owns its pipeline settings, uploads and runs."""
from __future__ import annotations

import hashlib
import os
import re
import secrets
from pathlib import Path
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
    owner()                                   # shared deployments: keep this browser's owner in the address


SHARED_ENV = "RAG_PLAYGROUND_SHARED"


def shared_mode() -> bool:
    """A shared deployment (a classroom, a team server): every browser keeps its runs to itself.
    Off by default (a laptop: one user, who can reopen any run after a restart)."""
    return os.environ.get(SHARED_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def owner() -> str | None:
    """This browser's owner id on a shared deployment (None otherwise). The secret behind it lives in the
    page address (``?owner=…``) so a refresh keeps the same runs; the folders use its sha256, never the
    secret itself. A new tab without it is a new, empty owner."""
    if not shared_mode():
        return None
    ss = st.session_state
    token = ss.get("owner_token") or st.query_params.get("owner", "")
    if not re.fullmatch(r"[A-Za-z0-9_-]{16,64}", token or ""):
        token = secrets.token_urlsafe(18)
    ss["owner_token"] = token
    if st.query_params.get("owner") != token:
        st.query_params["owner"] = token
    return hashlib.sha256(token.encode()).hexdigest()[:24]


def my_runs_dir() -> Path:
    from engine.saved import runs_dir
    return runs_dir(owner())


def my_comparisons_dir() -> Path:
    from engine.saved import comparisons_dir
    return comparisons_dir(owner())


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
