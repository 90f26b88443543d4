"""The background-job panel's share of work done: it never goes back when a stage ends (the bar once filled during
a level's embedding, then dropped to the attack's 1 of 3)."""

import pytest

from components.job_panel import stage_share


@pytest.mark.parametrize(
    ("last", "done", "total", "share"),
    [
        (None, 0, 0, 0.0),
        ("embedding", 361, 361, 0.0),  # preparation: its count is in the text, not the bar
        ("loading knowledge base", 1, 1, 0.0),
        ("attacking", 1, 3, 1 / 3),
        ("probing", 4, 8, 0.5),
        ("[2/4] rag-thief vs none: embedding", 300, 300, 0.25),  # a comparison: the cells before this one
        ("[2/4] rag-thief vs none: attacking", 1, 2, 1.5 / 4),
        ("[4/4] worm vs cascade: attacking", 3, 3, 1.0),
    ],
)
def test_the_share_counts_the_jobs_own_work_and_finished_cells(last, done, total, share):
    assert stage_share(last, done, total) == pytest.approx(share)


def test_the_share_never_goes_back_across_a_levels_stages():
    reports = [("embedding", 100, 361), ("embedding", 361, 361), ("attacking", 0, 3), ("attacking", 1, 3)]
    shares = [stage_share(*r) for r in reports]
    assert shares == sorted(shares)
