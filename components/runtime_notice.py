"""A notice on the pages that need local generation while llama.cpp is still being built in the background."""

from __future__ import annotations

import streamlit as st

from engine.generators.runtime import local_runtime


def local_runtime_notice() -> None:
    """Nothing once local generation is installed; otherwise what is being prepared and how far along, refreshed
    every 10 s until it is ready (then the page reruns so its controls see the model)."""
    if local_runtime().ready:
        return

    @st.fragment(run_every=10)
    def _notice() -> None:
        rt = local_runtime()
        if rt.ready:
            st.rerun()
        (st.error if rt.state == "failed" else st.info)(rt.message(), icon="⏳" if rt.state == "building" else None)

    _notice()
