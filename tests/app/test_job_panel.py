"""The background-job panel's share of work done: preparation fills the bar's first 5% (a long embedding left it
at 0, looking stuck), the job's own stages the rest, and the bar never goes back when a stage ends (it once filled
during a level's embedding, then dropped to the attack's 1 of 3)."""

import pytest

from components.job_panel import PREPARATION_SHARE as P
from components.job_panel import stage_share


@pytest.mark.parametrize(
    ("last", "done", "total", "share"),
    [
        (None, 0, 0, 0.0),
        ("embedding", 0, 361, 0.0),
        ("embedding", 180, 360, P / 2),  # preparation: the bar's first 5%
        ("loading knowledge base", 1, 1, P),
        ("attacking", 0, 3, P),
        ("attacking", 1, 3, P + (1 - P) / 3),
        ("probing", 4, 8, P + (1 - P) / 2),
        ("probing", 9, 8, 1.0),  # a count past its total stays at the end
        ("[2/4] rag-thief vs none: embedding", 300, 300, (1 + P) / 4),  # a comparison: the cells before this one
        ("[2/4] rag-thief vs none: attacking", 1, 2, (1 + P + (1 - P) / 2) / 4),
        ("[4/4] worm vs cascade: attacking", 3, 3, 1.0),
    ],
)
def test_the_share_counts_the_jobs_own_work_and_finished_cells(last, done, total, share):
    assert stage_share(last, done, total) == pytest.approx(share)


def test_the_share_never_goes_back_across_a_levels_stages():
    reports = [("embedding", 100, 361), ("embedding", 361, 361), ("attacking", 0, 3), ("attacking", 1, 3)]
    shares = [stage_share(*r) for r in reports]
    assert shares == sorted(shares) and shares[0] > 0


def test_the_panel_never_shows_less_than_it_showed_for_the_same_job(monkeypatch):
    """A second preparation stage starts its count over (embedding 361/361, then indexing 0/361): the shown bar
    holds; a new job starts from its own share."""
    import streamlit as st

    from components import job_panel

    monkeypatch.setattr(st, "session_state", {})
    job, other = object(), object()
    shown = [
        job_panel.monotone_share("k", job, stage_share(*r))  # type: ignore[arg-type]
        for r in [("embedding", 361, 361), ("indexing", 0, 361), ("indexing", 361, 361), ("attacking", 1, 3)]
    ]
    assert shown == sorted(shown) and shown[1] == pytest.approx(P)
    assert job_panel.monotone_share("k", other, 0.0) == 0.0  # type: ignore[arg-type]
    assert job_panel.monotone_share("k", other, 1.7) == 1.0  # type: ignore[arg-type]


def test_a_tab_that_followed_a_run_follows_its_resume_and_keeps_its_own_job(monkeypatch):
    """Tab 2 followed a run another tab started; the run stopped, tab 1 resumed it (a new job): tab 2 now follows
    the new one (it kept "Stopped early"). A job a tab started itself stays its own whatever runs elsewhere."""
    import threading

    import streamlit as st

    from components import job_panel
    from engine.jobs import Job

    monkeypatch.setattr(st, "session_state", {})
    monkeypatch.setattr(job_panel, "owner", lambda: None)
    release = threading.Event()
    first = Job("membership", lambda progress, stop: None).start()
    first.wait(10)
    second = Job("membership", lambda progress, stop: release.wait(30)).start()  # the resume, still running
    try:
        st.session_state.update({"mia_job": first, "mia_job_followed": first})  # tab 2 followed the first run
        assert job_panel.follow_running("mia_job", "membership", what="experiment") is second
        assert st.session_state["mia_job_followed"] is second
        st.session_state.clear()
        st.session_state["mia_job"] = first  # a tab whose own run ended: its results stay in view
        assert job_panel.follow_running("mia_job", "membership", what="experiment") is first
    finally:
        release.set()
        second.wait(10)
    st.session_state.update({"mia_job": first, "mia_job_followed": first})
    assert job_panel.follow_running("mia_job", "membership", what="experiment") is first  # nothing newer runs
