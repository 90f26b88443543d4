"""Sidebar: the current pipeline and run at a glance."""

from __future__ import annotations

import streamlit as st

from components.extraction import render_sidebar_status
from engine.attacks.poisoning import POISONING_ATTACKS
from engine.metrics import asr


# the pages that work on the session's pipeline and lab runs: the sidebar shows them there, and nowhere else (on
# the Audit page a second key box beside the page's own Keys was one for the wrong thing)
LAB_PAGES = ("Home", "Teaching mode", "Pipeline", "Poisoning lab", "Extraction lab")
# the pages of the session's pipeline (the Pipeline page builds it, the poisoning lab attacks it); the Extraction
# lab runs on a knowledge base of its own form, so the pipeline block there described a corpus it did not use
PIPELINE_PAGES = ("Home", "Teaching mode", "Pipeline", "Poisoning lab")


def render_sidebar(page: str = "Home") -> None:
    """The sidebar of a lab page (``page``: its title, one of :data:`LAB_PAGES`): on the pipeline's pages the
    current pipeline in one line and the poisoning run at a glance, then the extraction block (the run, and on the
    Extraction lab the API key box its litellm generator reads). Other pages keep their own settings on the page:
    no sidebar block."""
    if page not in LAB_PAGES:
        return
    if page not in PIPELINE_PAGES:
        with st.sidebar:
            render_sidebar_status(key_box=page == "Extraction lab")
        return
    p = st.session_state.get("pipeline", {})
    with st.sidebar:
        st.markdown("**Pipeline**")
        st.caption(
            f"corpus `{p.get('corpus')}` · "
            + (
                f"chunks of {p.get('chunk_size')} tokens ({p.get('chunk_overlap')} overlap) · "
                if p.get("chunk_size")
                else "whole documents · "
            )
            + f"retriever `{p.get('retriever')}` · top-{p.get('top_k')}"
        )
        run = st.session_state.get("lab_run")
        st.markdown("**Poisoning run**")
        if run is None:
            st.caption("no attack prepared")
        else:
            done = run.rounds_done
            what = (
                f"{run.config.attack} / {run.config.target}"
                if POISONING_ATTACKS.get(run.config.attack).takes_target()
                else run.config.attack  # jamming, trigger's own target…: the run's target setting is not used
            )
            if st.session_state.get("lab_playing") and not run.done:
                # the lab plays in a fragment: a count drawn here would stay at the one before Play
                st.caption(f"{what} · playing: {len(run.queries)} queries, its count and ASR in the lab")
            else:
                st.caption(
                    f"{what} · {done}/{len(run.queries)} queries · ASR@2 {asr(run.events, 2).value:.2f}"
                    if done
                    else f"{what} · ready, 0/{len(run.queries)} queries"
                )
        render_sidebar_status(key_box=False)
