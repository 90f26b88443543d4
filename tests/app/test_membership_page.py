"""AppTest: the membership-inference page renders, runs a tiny experiment in the background with the real model,
shows its figures and table, reopens it from disk, and turns bad input into one message."""

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """Experiments are written under the cache: keep them in a temporary folder (models stay shared)."""
    from engine import saved

    monkeypatch.setattr(saved, "runs_dir", lambda owner=None: tmp_path)
    return tmp_path


def _page() -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/membership.py").run()
    assert not at.exception
    return at


def _until_done(at: AppTest, what: str, limit: float, live: list | None = None) -> None:
    """Redraw the page until its experiment's job ends (no exception on the way), then once more; ``live`` collects
    what the running experiment's live view showed at each redraw (its latest-record line and texts)."""
    end = time.time() + limit
    while at.session_state["mia_job"].running:
        assert time.time() < end, f"{what} did not finish in {limit:.0f} s"
        time.sleep(1)
        at.run()
        assert not at.exception, at.exception
        if live is not None:
            latest = [m.value for m in at.markdown if m.value.startswith("**Latest: record")]
            if latest:
                live.append((latest[0], [t.value for t in at.text], len(at.get("plotly_chart"))))
    at.run()


def test_the_page_renders_standalone_and_from_the_app():
    at = AppTest.from_file(str(REPO / "pages/membership.py"), default_timeout=120)
    at.run()
    assert not at.exception
    at = _page()
    assert any(b.label == "Run experiment" for b in at.button)
    assert {n.label for n in at.number_input} >= {"Members probed", "Non-members probed", "Tokens per answer", "Top-K"}
    assert next(t for t in at.text_input if t.label == "Knowledge base").value == "clinic_records"
    model = lambda: next(s for s in at.selectbox if s.label == "Generator model").value  # noqa: E731
    assert model() == "qwen2.5-0.5b"
    next(s for s in at.selectbox if s.label == "Attack").set_value("mba").run()  # MBA needs a model that fills masks
    assert not at.exception and model() == "qwen2.5-1.5b"
    assert any("qwen2.5-1.5b is preselected" in c.value for c in at.caption)
    assert any(n.label == "Masks" for n in at.number_input)  # the chosen attack's own parameters
    before = {n.label for n in (*at.number_input, *at.slider)}
    at.multiselect(key="mia_defenses").set_value(["detect-and-hide"]).run()  # its parameters show before a run
    assert not at.exception
    assert {n.label for n in (*at.number_input, *at.slider)} - before, "detect-and-hide's parameters appear"


@pytest.mark.slow
def test_a_tiny_experiment_runs_shows_its_figures_and_reopens(runs):
    at = _page()
    for n in at.number_input:
        n.set_value(
            {
                "Members probed": 2,
                "Non-members probed": 2,
                "Tokens per answer": 16,
                "Canaries (share of records)": 0.01,
            }.get(n.label, n.value)
        )
    canaries = [w for w in (*at.number_input, *at.slider) if w.label == "Canaries (share of records)"]
    assert canaries, "the canary share is on the form"
    canaries[0].set_value(0.01)
    next(s for s in at.selectbox if s.label == "Attack").set_value("direct")
    next(b for b in at.button if b.label == "Run experiment").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    live: list = []
    _until_done(at, "the experiment", 900, live)
    job = at.session_state["mia_job"]
    assert job.error is None, job.error
    # while it ran, the latest record showed with its class, score, question and answer, and the figures so far
    assert live, "the running experiment showed no record before it ended"
    line, texts, charts = live[-1]
    assert ("non-member" in line or "member" in line) and "score" in line, line
    assert len(texts) >= 2 and texts[0].strip() and charts == 2, (texts, charts)
    assert {m.label for m in at.metric} >= {"AUROC", "TPR at 1% FPR", "TPR at 5% FPR"}
    assert len(at.get("plotly_chart")) == 2
    table = at.dataframe[0].value
    assert len(table) == 4 and set(table["in the KB"]) == {"member", "non-member"}
    summary = json.loads(next((runs / "membership").glob("*/summary.json")).read_text())
    assert summary.get("canaries_planted"), summary
    if not summary.get("canary_members"):  # 1% of the chunks: most likely none probed
        assert any("None of the probed members carries a canary" in w.value for w in at.warning)
    assert list((runs / "membership").glob("*/summary.json"))
    at.session_state["mia_view"] = None  # reopen it from disk
    at.run()
    next(b for b in at.button if b.label == "Open").click().run()
    assert not at.exception and len(at.dataframe[0].value) == 4


@pytest.mark.slow
def test_an_experiment_cut_short_is_listed_unfinished_and_resumes_in_the_app(runs):
    """An experiment stopped (or killed by an app restart) after its first record: Saved experiments names it
    unfinished, Resume continues it in its folder after that record, to its end."""
    import threading

    from engine.config import MembershipConfig
    from engine.runs.membership import run_membership

    cfg = MembershipConfig.from_dict(
        {
            "kb": "clinic_records",
            "attack": "direct",
            "members": 2,
            "non_members": 2,
            "max_tokens": 16,
            "generator": "local",
            "generator_params": {"model": "smollm2-135m"},
        },
        where="test",
    )
    stop = threading.Event()
    first = run_membership(
        cfg,
        out_dir=runs / "membership",
        stop=stop,
        progress=lambda stage, d, t: stop.set() if stage == "probing" and d >= 1 else None,
    )
    assert not first.finished and 1 <= first.rounds_done < 4
    at = _page()
    pick = next(s for s in at.selectbox if s.label == "Experiment")
    assert any(o.endswith(" · defenses: none · unfinished") for o in pick.options), pick.options
    next(b for b in at.button if b.label == "Resume this experiment").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    if at.session_state["mia_job"].running:
        assert any(f"Resuming experiment {first.run_id} with the settings" in i.value for i in at.info)
    _until_done(at, "the resumed experiment", 600)
    job = at.session_state["mia_job"]
    assert job.error is None, job.error
    assert job.result.run_id == first.run_id and job.result.finished
    kinds = [json.loads(line)["kind"] for line in (Path(first.out_dir) / "events.jsonl").read_text().splitlines()]
    assert kinds.count("run_resumed") == 1 and kinds.count("run_started") == 1
    assert len(at.dataframe[0].value) == 4, "the records of both sessions, once each"
    assert not any(b.label == "Resume this experiment" for b in at.button), (
        "a finished experiment has nothing to resume"
    )
    # ... but it runs again with its settings, into a folder of its own (what an experiment whose knowledge base
    # changed needs too: it cannot resume)
    next(b for b in at.button if b.label == "Run again with its settings").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    _until_done(at, "the second experiment", 600)
    again = at.session_state["mia_job"].result
    assert again.run_id != first.run_id and again.finished and again.out_dir != first.out_dir
    assert again.config.to_dict() == first.config.to_dict()


def test_a_folder_that_holds_no_experiment_has_no_settings_to_run_again(tmp_path):
    from engine.errors import ConfigError
    from engine.runs.membership import membership_config_of

    with pytest.raises(ConfigError, match="not a run folder"):
        membership_config_of(tmp_path)


def test_more_records_than_the_knowledge_base_is_one_message(runs):
    at = _page()
    for n in at.number_input:
        n.set_value({"Members probed": 400, "Non-members probed": 400}.get(n.label, n.value))
    next(b for b in at.button if b.label == "Run experiment").click().run()
    end = time.time() + 300
    while at.session_state["mia_job"].running:
        assert time.time() < end
        time.sleep(2)
        at.run()
    at.run()
    assert not at.exception
    assert any("more than the knowledge base" in e.value for e in at.error), [e.value for e in at.error]


def test_a_value_below_a_fields_minimum_is_one_message_not_a_silent_form(runs):
    """Streamlit's bounded number input swallows the submit button when a typed value is out of range; the form's
    inputs carry their range in the help instead, and the engine's validation names the field."""
    at = _page()
    members = next(n for n in at.number_input if n.label == "Members probed")
    assert "(allowed: from 1 to " in (members.help or "")
    members.set_value(0)
    next(b for b in at.button if b.label == "Run experiment").click().run()
    assert not at.exception
    assert "mia_job" not in at.session_state
    assert any("members: 0 is below the minimum 1" in e.value for e in at.error), [e.value for e in at.error]


def test_a_membership_table_folder_shows_every_cell_with_its_progress(tmp_path):
    """The Long experiments expander reads a table folder: one row per cell, those not started marked so, a
    folder without a table one message."""
    import json

    from engine.config import MembershipTableConfig

    cfg = MembershipTableConfig.from_dict(
        {"attacks": ["direct", "s2mia"], "configurations": ["none", "detect-and-hide"], "utility_limit": 5}
    )
    (tmp_path / "table.json").write_text(json.dumps({"config": cfg.to_dict()}))
    (tmp_path / "utility").mkdir()
    (tmp_path / "utility" / "none.json").write_text(json.dumps({"acc": 0.8, "n_graded": 5, "n": 5}))
    at = _page()
    box = next(t for t in at.text_input if t.label == "Table folder")
    box.set_value(str(tmp_path)).run()
    assert not at.exception
    df = next(d.value for d in at.dataframe if "probed" in d.value.columns)
    # nothing started: every cell listed (the box to list those not started is ticked), no grey "None" anywhere
    assert at.checkbox(key="mia_table_all").value
    assert len(df) == 4 and set(df["probed"]) == {"0/40"}
    assert set(df["AUROC"]) == {"—"} and not df.isna().any().any()
    assert list(df["utility ACC"]) == ["0.80 [0.38, 0.96]", "—"] * 2
    assert "0 of 4 cells finished" in " ".join(c.value for c in at.caption)
    box.set_value(str(tmp_path / "nowhere")).run()
    assert not at.exception and any("no membership table" in i.value for i in at.info)
