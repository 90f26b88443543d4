"""Session state: each browser session owns its pipeline settings, uploads and runs."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from pathlib import Path
from typing import Any

import streamlit as st

from engine.config import PoisonConfig

# The app starts where the engine's defaults and the demo preset are: no plugin is named here.
_POISON = PoisonConfig()
DEFAULT_PIPELINE = {
    "corpus": _POISON.corpus,
    "chunk_size": _POISON.chunk_size,
    "chunk_overlap": _POISON.chunk_overlap,
    "retriever": _POISON.retriever,
    "top_k": _POISON.top_k,
}
LAB_LIMIT = 30  # questions prepared in the poisoning lab by default (Play stays short)
DEFAULT_LAB = {
    "queries": _POISON.queries,
    "attack": _POISON.attack,
    "target": _POISON.target,
    "target_text": _POISON.target_text,
    "injection": _POISON.injection,
    "limit": LAB_LIMIT,
    "detectors": list(_POISON.detectors),
    "seed": _POISON.seed,
}
EXTRACT_PRESET = "quick-extraction-demo"  # what leaks visibly offline (presets/quick-extraction-demo.yaml)


def default_extract() -> dict[str, Any]:
    """The extraction lab's first settings: those of :data:`EXTRACT_PRESET`."""
    from components.extraction_settings import settings_from_config
    from engine.config import load_preset

    return settings_from_config(load_preset(EXTRACT_PRESET)[1])


def _through_app_navigation() -> None:
    """Make sure a page runs inside app.py's ``st.navigation``, never on its own.

    Streamlit keeps its older pages-folder mode until some run has called ``st.navigation``: when the first
    request after the server starts is a deep link (``/sweeps``), it runs ``pages/sweeps.py`` alone — without
    app.py's page config, navigation (titles, icons) and sidebar, with the folder's file names as the menu.
    Here the server is switched to the navigation mode and the run restarted, so the same address comes back
    through app.py. (Streamlit's own ``st.navigation`` makes the same switch; it lives on ``PagesManager``.)"""
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - a Streamlit without it has no pages-folder mode to leave
        return
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def init_state(entrypoint: bool = False) -> None:
    """Session defaults. A page (``entrypoint`` False) opened in a fresh session first makes sure it runs inside
    app.py's navigation (a deep link as the server's first request); never later, so no rerun can drop a click."""
    if not entrypoint and "pipeline" not in st.session_state:
        _through_app_navigation()
    ss = st.session_state
    ss.setdefault("pipeline", dict(DEFAULT_PIPELINE))
    ss.setdefault("lab", dict(DEFAULT_LAB))
    ss.setdefault("uploaded_docs", [])
    ss.setdefault("lab_run", None)
    ss.setdefault("lab_playing", False)
    ss.setdefault("lab_speed", 1.0)
    # extraction lab (its own run, independent of the poisoning lab's)
    if "extract" not in ss:
        ss["extract"] = default_extract()
    ss.setdefault("extract_run", None)
    ss.setdefault("extract_source", None)  # {"config", "corpus"} the live run was prepared from (for Reset)
    ss.setdefault("extract_playing", False)
    ss.setdefault("extract_speed", 1.0)
    ss.setdefault("extract_view", None)  # folder of a reopened saved run being viewed
    ss.setdefault("llm_api_key", "")  # typed in the sidebar; lives only in this session's memory
    owner()  # shared deployments: keep this browser's owner in the address


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
    """This session's folder of saved runs (per owner on a shared deployment)."""
    from engine.saved import runs_dir

    return runs_dir(owner())


def my_sweeps_dir() -> Path:
    """This session's folder of saved sweeps."""
    from engine.saved import sweeps_dir

    return sweeps_dir(owner())


def my_comparisons_dir() -> Path:
    """This session's folder of saved comparisons."""
    from engine.saved import comparisons_dir

    return comparisons_dir(owner())


def data_dir() -> str:
    """The benchmark data folder ($RAG_PLAYGROUND_DATA_DIR; '' when unset)."""
    return os.environ.get("RAG_PLAYGROUND_DATA_DIR", "")


def progress_callback(bar) -> Any:
    """A ``Progress(stage, done, total)`` callback that moves the Streamlit progress ``bar``."""

    def cb(stage: str, done: int, total: int) -> None:
        bar.progress(min(done / max(total, 1), 1.0), text=f"{stage}: {done:,}/{total:,}")

    return cb


def close_run() -> None:
    """Close the session's poisoning run (its store is dropped) and stop playing."""
    run = st.session_state.get("lab_run")
    if run is not None:
        run.close()
    st.session_state["lab_run"] = None
    st.session_state["lab_playing"] = False


def follow(key: str, value: Any, options: list[Any]) -> None:
    """Seed the keyed select box ``key`` (created right after, without ``index``) with ``value`` — the setting it
    edits — whenever that setting changed elsewhere (a preset loaded, a run reopened); otherwise leave the user's
    pick alone. A select box whose ``index`` follows its own setting gets a new identity on the next run and drops
    every second pick; a key with this seeding keeps one identity."""
    ss = st.session_state
    mark = f"{key}__from"
    if ss.get(mark) != value or ss.get(key) not in options:
        ss[key] = value if value in options else options[0]
        ss[mark] = value


def picked(key: str) -> None:
    """Record that the setting now equals the select box's pick (call after storing the pick in the setting)."""
    st.session_state[f"{key}__from"] = st.session_state.get(key)
