"""One progress panel for the pages that run work in the background (comparisons, sweeps, audits, membership
experiments, teaching levels), and the way a page follows such a job started in another tab or before a reload."""

from __future__ import annotations

import re
from typing import Any, Callable, Optional

import streamlit as st

from components.state import owner
from components.text import md_escape
from engine.jobs import Job, running_jobs


MAIN_STAGES = ("attacking", "probing", "answering")  # the stages whose count is the job's own (not its preparation)


def stage_share(last: Any, done: int, total: int) -> float:
    """The share of a job done, from its latest progress report, never going back when a stage ends: preparation
    (loading, embedding, indexing) counts as 0 — its own count stays in the text — and a comparison's ``[i/n] …``
    prefix counts the cells before this one."""
    text = str(last or "")
    inner = done / total if total and any(s in text for s in MAIN_STAGES) else 0.0
    cell = re.match(r"\[(\d+)/(\d+)\]", text)
    if cell:
        i, n = int(cell[1]), int(cell[2])
        return (i - 1 + inner) / max(n, 1)
    return inner


def follow_running(job_key: str, name: str, *, what: str) -> Optional[Job]:
    """This session's job under ``job_key``; when it has none, the newest job called ``name`` that this owner
    started in another tab (or in this one before a reload) and that is still running — followed as this
    page's own: its page state (``Job.state``) is copied in, so its progress, stop button and results show here."""
    ss = st.session_state
    if ss.get(job_key) is not None:
        return ss[job_key]
    jobs = running_jobs(name, owner())
    if not jobs:
        return None
    job = jobs[-1]
    ss.update(job.state)
    ss[job_key] = job
    ss[f"{job_key}_followed"] = job
    return job


def job_panel(
    job_key: str,
    *,
    what: str,
    progress: Callable[[Job], tuple[float, str]],
    stop_label: str,
    stop_key: str,
    drawn: bool,
    idle: Optional[Callable[[], None]] = None,
    show_error: bool = True,
) -> None:
    """A live panel (refreshed every second while the job runs): a progress bar, a stop button, one full
    rerun when the job finishes (so the page draws its results or records its error), then the error if it
    failed. ``progress(job)`` gives (share done, text); ``drawn``: whether this script run already handles the
    finished job; ``show_error``: False when the page shows the error itself."""
    job: Job | None = st.session_state.get(job_key)

    @st.fragment(run_every=1.0 if job and job.running else None)
    def panel() -> None:
        j: Job | None = st.session_state.get(job_key)
        if j is None:
            if idle is not None:
                idle()
            return
        share, text = progress(j)
        resumed = st.session_state.get(f"{job_key}_resumed")
        if j.running and resumed and st.session_state.get(f"{job_key}_followed") is not j:
            st.info(
                f"Resuming {md_escape(resumed)} with the settings it was started with (the form above holds the next "
                f"{what}'s): what finished before is kept, the rest runs now."
            )
        if j.running and st.session_state.get(f"{job_key}_followed") is j:
            st.info(
                f"Following the {what} started in another tab (or before this page was reloaded): its progress "
                "and stop button are below, and its results appear here when it ends. It runs with the settings "
                "it was started with; the form above shows its own."
            )
        if j.running:
            st.progress(min(max(share, 0.0), 1.0), text=md_escape(text) + (" · stopping…" if j.stopped else ""))
            if st.button(stop_label, key=stop_key):
                j.stop()
            return
        if not drawn:
            st.rerun()  # finished while the timer polled: one full rerun draws the results (or the error)
        if j.error and show_error:
            st.error(f"The {what} failed: {md_escape(j.error)}")

    panel()
