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
PREPARATION_SHARE = 0.05  # the start of the bar (of a job, or of a comparison's cell) that its preparation fills


def stage_share(last: Any, done: int, total: int) -> float:
    """The share of a job done, from its latest progress report: preparation (loading, embedding, indexing) fills
    the first :data:`PREPARATION_SHARE` of the bar by its own count — a long embedding moves the bar a little
    instead of leaving it at 0 — the job's own stages the rest, and a comparison's ``[i/n] …`` prefix counts the
    cells before this one. Each preparation stage starts its band over; :func:`job_panel` never shows a share
    below one it has shown for the same job."""
    text = str(last or "")
    frac = min(max(done / total, 0.0), 1.0) if total else 0.0
    if any(s in text for s in MAIN_STAGES):
        inner = PREPARATION_SHARE + (1 - PREPARATION_SHARE) * frac
    else:
        inner = PREPARATION_SHARE * frac if text else 0.0
    cell = re.match(r"\[(\d+)/(\d+)\]", text)
    if cell:
        i, n = int(cell[1]), int(cell[2])
        return (i - 1 + inner) / max(n, 1)
    return inner


def monotone_share(job_key: str, job: Job, share: float) -> float:
    """``share`` clipped to [0, 1], never below the largest this session has shown for ``job`` (a preparation
    stage that starts its count over, a stage that ends, must not move the bar back)."""
    share = min(max(share, 0.0), 1.0)
    key = f"{job_key}_shown"
    shown = st.session_state.get(key)
    if shown is not None and shown[0] is job:
        share = max(share, shown[1])
    st.session_state[key] = (job, share)
    return share


def follow_running(job_key: str, name: str, *, what: str) -> Optional[Job]:
    """This session's job under ``job_key``; when it has none (or the one it followed has ended), the newest job
    called ``name`` that this owner started in another tab (or in this one before a reload) and that is still
    running — followed as this page's own: its page state (``Job.state``) is copied in, so its progress, stop
    button and results show here."""
    ss = st.session_state
    current = ss.get(job_key)
    # a job this tab started stays its own; one it followed from another tab gives way, once it has ended, to a
    # newer one of that owner (a tab that followed a run, stopped, kept "Stopped early" while another tab resumed it)
    if current is not None and (current.running or ss.get(f"{job_key}_followed") is not current):
        return current
    jobs = [j for j in running_jobs(name, owner()) if j is not current]
    if not jobs:
        return current
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
    live: Optional[Callable[[Job], None]] = None,
) -> None:
    """A live panel (refreshed every second while the job runs): a progress bar, a stop button, ``live(job)``'s
    view of the work so far under them, one full rerun when the job finishes (so the page draws its results or
    records its error), then the error if it failed. ``progress(job)`` gives (share done, text); ``drawn``: whether
    this script run already handles the finished job; ``show_error``: False when the page shows the error
    itself."""
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
            st.progress(monotone_share(job_key, j, share), text=md_escape(text) + (" · stopping…" if j.stopped else ""))
            if st.button(stop_label, key=stop_key):
                j.stop()
            if live is not None:
                live(j)
            return
        if not drawn:
            st.rerun()  # finished while the timer polled: one full rerun draws the results (or the error)
        if j.error and show_error:
            st.error(f"The {what} failed: {md_escape(j.error)}")

    panel()
