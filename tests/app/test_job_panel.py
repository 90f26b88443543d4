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
