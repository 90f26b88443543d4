"""Saved extraction runs: listed by kind, compared, analysed, and reported as escaped HTML."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.analysis.correlations import extraction_round_features
from engine.config import ExtractionConfig
from engine.report import load_run, run_report_html
from engine.saved import list_runs, runs_dir
from engine.runs.extraction import ExtractionRun

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def saved_run():
    cfg = ExtractionConfig.from_dict(
        {
            "attack": "zeng",
            "rounds": 3,
            "top_k": 2,
            "max_tokens": 32,
            "data_dir": "",
            "attacker_llm": "",
            "generator_params": {"model": "smollm2-135m", "max_tokens": 32},
        }
    )
    run = ExtractionRun(cfg, out_dir=runs_dir())
    run.run()
    return run


def test_saved_extraction_run_is_listed_and_reported(saved_run):
    row = next(r for r in list_runs() if r["run_id"] == saved_run.run_id)
    assert row["kind"] == "extract" and row["finished"] and row["corpus"] == "clinic_records"
    events = load_run(row["path"])
    df = extraction_round_features({saved_run.run_id: events})
    assert len(df) == 3 and df["top1_score"].notna().all()
    html = run_report_html(events)
    assert "Leakage as rounds go by" in html and "<script>alert" not in html


def test_report_escapes_attacker_controlled_text(saved_run):
    import dataclasses

    events = list(saved_run.events)
    i = next(i for i, e in enumerate(events) if e.kind == "generated")
    events[i] = dataclasses.replace(events[i], text="<script>alert('x')</script>")
    html = run_report_html(events)
    assert "<script>alert('x')</script>" not in html and "&lt;script&gt;" in html


def test_runs_and_analysis_pages_show_extraction_runs(saved_run):
    at = AppTest.from_file(str(REPO / "pages/runs.py"), default_timeout=120)
    at.run()
    kind = next((r for r in at.radio if r.label == "Kind"), None)
    if kind is not None:
        kind.set_value("extract").run()
    ms = at.multiselect[0]
    ms.set_value([saved_run.run_id]).run()
    assert not at.exception
    assert any(r.label == "Metric" for r in at.radio) and len(at.get("plotly_chart")) >= 1
    an = AppTest.from_file(str(REPO / "pages/analysis.py"), default_timeout=120)
    an.run()
    runs = next(m for m in an.multiselect if m.label == "Extraction runs")
    runs.set_value([saved_run.run_id]).run()
    assert not an.exception and len(an.get("plotly_chart")) >= 1


def test_membership_experiments_and_tenant_runs_are_told_apart_on_the_saved_runs_page(saved_run):
    """A membership experiment is listed with its AUROC and sends the user to its page; multi-tenant extraction
    runs carry their tenant filter in the list and in the comparison table (their defenses are all 'none')."""
    from engine.config import MembershipConfig
    from engine.runs.membership import run_membership

    small = {"generator_params": {"model": "smollm2-135m"}, "max_tokens": 16, "data_dir": ""}
    mia = MembershipConfig.from_dict({**small, "attack": "direct", "members": 2, "non_members": 2})
    run_membership(mia, out_dir=runs_dir() / "membership")
    tenant_runs = []
    for mode in ("none", "after"):
        cfg = ExtractionConfig.from_dict(
            {
                **small,
                "attack": "zeng",
                "rounds": 1,
                "top_k": 2,
                "attacker_llm": "",
                "tenants": 4,
                "identity": "tenant-1",
                "tenant_filter": mode,
            }
        )
        run = ExtractionRun(cfg, out_dir=runs_dir())
        run.run()
        tenant_runs.append(run.run_id)
    rows = {r["run_id"]: r for r in list_runs()}
    assert [rows[r]["tenant filter"] for r in tenant_runs] == ["none (as tenant-1)", "after (as tenant-1)"]
    at = AppTest.from_file(str(REPO / "pages/runs.py"), default_timeout=120)
    at.run()
    next(r for r in at.radio if r.label == "Kind").set_value("membership").run()
    assert not at.exception
    listed = at.dataframe[0].value
    assert "auroc" in listed.columns and "folder" not in listed.columns
    assert any("Membership inference page" in c.value for c in at.caption)
    next(r for r in at.radio if r.label == "Kind").set_value("extract").run()
    listed = at.dataframe[0].value.set_index("run_id")
    assert listed.loc[saved_run.run_id, "tenant filter"] == "—", "a one-owner run has no filter: not 'None'"
    assert listed.loc[saved_run.run_id, "round budget"] == 3
    next(m for m in at.multiselect if m.label.startswith("Open")).set_value([*tenant_runs, saved_run.run_id]).run()
    assert not at.exception
    table = at.dataframe[1].value
    assert list(table.loc["tenant filter"]) == ["none (as tenant-1)", "after (as tenant-1)", "—"]
    assert "nan" not in set(table.to_numpy().ravel()) and list(table.loc["rounds played"]) == ["1", "1", "3"]
    shares = list(table.loc["cross-tenant rounds"])  # a share of the rounds played, never "1" read as one round
    assert all(v.endswith("%") for v in shares[:2]) and shares[2] == "—"
