"""Load a preset into the session (pipeline + lab settings)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components.params_form import new_form_generation
from components.poisoning_settings import more_from_config
from components.state import close_run
from components.text import md_escape
from engine.config import PoisonConfig, list_presets, load_preset
from engine.errors import EngineError
from engine.generators import packaged_generator


def poison_presets() -> list[dict]:
    """The bundled and user presets of kind ``poison``, for the preset menu."""
    return [p for p in list_presets() if p["kind"] == "poison"]


def preset_config(name: str, kind: str, cls: type) -> Any:
    """The config of preset ``name`` when it is a ``kind`` preset, else None with an error shown on the page."""
    try:
        got, cfg, _ = load_preset(name)
    except EngineError as e:
        st.error(f"Could not load preset {md_escape(name)}: {md_escape(e)}")
        return None
    if got != kind or not isinstance(cfg, cls):
        st.error(
            f"{md_escape(name)} is a {got} preset, not a {kind} preset; run it with "
            f"`python -m engine run {md_escape(name)}`."
        )
        return None
    return cfg


def apply_preset(name: str) -> bool:
    """Load a poisoning preset into the pipeline and lab settings."""
    cfg = preset_config(name, "poison", PoisonConfig)
    if cfg is None:
        return False
    close_run()
    st.session_state["pipeline"] = {
        "corpus": cfg.corpus,
        "chunk_size": cfg.chunk_size,
        "chunk_overlap": cfg.chunk_overlap,
        "retriever": cfg.retriever,
        "top_k": cfg.top_k,
    }
    st.session_state["lab"] = {
        "queries": cfg.queries,
        "attack": cfg.attack,
        "target": cfg.target,
        "target_text": cfg.target_text,
        "injection": cfg.injection,
        "limit": cfg.limit or 0,
        "detectors": list(cfg.detectors),
        "seed": cfg.seed,
        "attack_params": {k: v for k, v in dict(cfg.attack_params or {}).items() if k not in ("target", "target_text")},
        "detector_params": {k: dict(v) for k, v in dict(cfg.detector_params or {}).items()},
        "defenses": list(cfg.defenses),
        "defense_params": {k: dict(v) for k, v in dict(cfg.defense_params or {}).items()},
        "generate": cfg.generate and cfg.generator == packaged_generator(),
        "gen_model": cfg.answer_generator_params().get("model"),
        "more": more_from_config(cfg),
    }
    new_form_generation()
    return True
