"""AppTest: the defense comparison and teaching pages — render, run tiny experiments, report, bad input."""

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[2]
PAGES = ["pages/defense_comparison.py", "pages/teaching.py"]


def _app() -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception
    return at


def _wait(at: AppTest, key: str, deadline_s: float, watch=None) -> None:
    """Rerun the script until the background job in session_state[key] has finished; ``watch(at)`` after each
    rerun while it runs (what the page shows meanwhile)."""
    end = time.time() + deadline_s
    while at.session_state[key].running:
        assert time.time() < end, f"{key} did not finish within {deadline_s}s"
        time.sleep(3)
        at.run()
        assert not at.exception, at.exception
        if watch is not None and at.session_state[key].running:
            watch(at)
    at.run()
    assert not at.exception, at.exception


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """Comparisons are written under the cache: keep them in a temporary folder (embeddings/models stay shared)."""
    from engine import saved
    from engine.views import comparison as comparison_view

    for module in (saved, comparison_view):
        monkeypatch.setattr(module, "comparisons_dir", lambda owner=None: tmp_path)
    return tmp_path


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_standalone(page):
    at = AppTest.from_file(str(REPO / page), default_timeout=120)
    at.run()
    assert not at.exception


def test_pages_render_from_the_app():
    at = _app()
    at.switch_page("pages/defense_comparison.py").run()
    assert not at.exception and any(b.label == "Start comparison" for b in at.button)
    at.switch_page("pages/teaching.py").run()
    assert not at.exception and any(b.label == "Run level 1" for b in at.button)


def test_unknown_custom_defense_is_a_clear_error_and_the_page_stays_usable(cache):
    at = _app()
    at.switch_page("pages/defense_comparison.py").run()
    next(t for t in at.text_input if t.label == "Custom configurations").set_value("threshold+firewall")
    next(b for b in at.button if b.label == "Start comparison").click().run()
    assert not at.exception
    assert any("unknown defense 'firewall'" in e.value for e in at.error), [e.value for e in at.error]
    assert "cmp_job" not in at.session_state or at.session_state["cmp_job"] is None
    next(t for t in at.text_input if t.label == "Custom configurations").set_value("")
    at.switch_page("pages/teaching.py").run()
    assert not at.exception and not at.error


def test_teaching_level_three_without_a_defense_says_so_before_it_runs():
    at = _app()
    at.switch_page("pages/teaching.py").run()
    at.multiselect(key="teach3_defenses").set_value([]).run()
    assert not at.exception
    assert next(b for b in at.button if b.label == "Run level 3").disabled
    assert any("Choose at least one defense" in c.value for c in at.caption)


def test_a_number_outside_its_range_is_named_at_start_not_silently_ignored(cache):
    """Bounded number fields take no widget bounds (Streamlit's own answer to an out-of-range value is a red icon
    and a submit button that does nothing): the help gives the range, Start names the field in one line and starts
    nothing, on every page with such a form (comparison, sweeps, audit, poisoning lab)."""
    at = _app()
    at.switch_page("pages/defense_comparison.py").run()
    rounds = next(n for n in at.number_input if n.label == "Rounds (attacker queries)")
    assert "(allowed: from 1 to 500)" in (rounds.help or "")
    rounds.set_value(0)
    next(n for n in at.number_input if n.label == "Tokens per answer").set_value(4096)
    next(b for b in at.button if b.label == "Start comparison").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "Rounds (attacker queries): 0 is below the minimum 1; Tokens per answer: 4096 is above the maximum 1024"
    ]
    assert at.session_state["cmp_job"] is None if "cmp_job" in at.session_state else True, "nothing started"
    at.switch_page("pages/sweeps.py").run()
    next(n for n in at.number_input if n.label == "K of ASR@K").set_value(50)
    next(b for b in at.button if b.label == "Start sweep").click().run()
    assert not at.exception and [e.value for e in at.error] == ["K of ASR@K: 50 is above the maximum 20"]
    at.switch_page("pages/audit.py").run()
    next(n for n in at.number_input if n.label == "Queries per extraction attack").set_value(0)
    next(b for b in at.button if b.label == "Run audit").click().run()
    assert not at.exception and any(
        "Queries per extraction attack: 0 is below the minimum 1" in e.value for e in at.error
    )
    at.switch_page("pages/poisoning_lab.py").run()
    next(n for n in at.number_input if n.label == "How many (first N; 0 = all)").set_value(-3)
    next(b for b in at.button if b.label == "Prepare attack").click().run()
    assert not at.exception
    assert any("How many (first N; 0 = all): -3 is below the minimum 0" in e.value for e in at.error)
    assert at.session_state["lab"]["limit"] != -3, "the setup kept its last valid value"


@pytest.mark.slow
def test_tiny_comparison_runs_in_the_background_and_shows_table_and_tradeoff(cache):
    at = _app()
    at.switch_page("pages/defense_comparison.py").run()
    values = {"Rounds (attacker queries)": 1, "Tokens per answer": 16, "Utility questions (first N)": 2}
    for n in at.number_input:
        if n.label in values:
            n.set_value(values[n.label])
    assert next(m for m in at.multiselect if m.label == "Defense configurations").value == ["none", "system-prompt"]
    # the first try is the extraction demo's attack and model, which leak visibly (SmolLM2 and code-claim did not)
    assert next(m for m in at.multiselect if m.label == "Attacks").value == ["rag-thief"]
    assert next(s for s in at.selectbox if s.label == "Generator model").value == "qwen2.5-0.5b"
    budget = next(s for s in at.selectbox if s.label == "Answer budget")
    assert budget.value == "context"  # the config's default: answers as long as their context
    budget.set_value("fixed")  # 16 tokens an answer: the page's flow is the point here, not how much is copied
    next(b for b in at.button if b.label == "Start comparison").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state["cmp_cfg"].base["answer_budget"] == "fixed"
    assert at.session_state["cmp_job"].running or at.session_state["cmp_job"].result is not None
    # a second tab (or this one after a reload) follows the running comparison: its progress, then its results
    other = _app()
    other.switch_page("pages/defense_comparison.py").run()
    assert not other.exception
    assert other.session_state["cmp_job"] is at.session_state["cmp_job"]
    if at.session_state["cmp_job"].running:
        assert any("Following the comparison started in another tab" in i.value for i in other.info)
        assert any(b.label == "Stop after this run" for b in other.button)
    live: list = []  # while it runs: each finished run's row as it ends

    def watch(page: AppTest) -> None:
        if any(c.value.startswith("Finished so far:") for c in page.caption):
            live.append([c.value for c in page.caption if c.value.startswith("Finished so far:")][0])
            live.append(list(page.dataframe[0].value["configuration"]))

    _wait(at, "cmp_job", 1500, watch)
    job = at.session_state["cmp_job"]
    assert job.error is None, job.error
    assert "Finished so far: 1 of 2 runs, each row as its run ends." in live[0] and live[1] == ["none"], live
    table = at.dataframe[0].value
    assert list(table["configuration"]) == ["none", "system-prompt"]
    other.run()
    assert not other.exception and list(other.dataframe[0].value["configuration"]) == ["none", "system-prompt"]
    assert {"crr", "pii_leaked", "utility_acc", "utility_acc_drop"} <= set(table.columns)
    charts = [c.proto for c in at.get("plotly_chart")]
    assert len(charts) >= 2  # curves + trade-off (ratio bars only when a ratio exists)
    assert any(s.label == "Utility axis" for s in at.radio)
    assert (cache / Path(at.session_state["cmp_dir"]).name / "comparison.json").is_file()
    # reopen it from disk
    at.session_state["cmp_view"] = None
    at.run()
    next(b for b in at.button if b.label == "Open").click().run()
    assert not at.exception and list(at.dataframe[0].value["configuration"]) == ["none", "system-prompt"]


@pytest.mark.slow
def test_a_comparison_cut_short_is_listed_unfinished_and_resumes_in_the_app(cache):
    """A comparison stopped (or killed by an app restart) after its first run: Saved comparisons names it
    unfinished with its count, Resume continues it in its folder — the finished run kept, not played again."""
    import json
    import threading

    from engine.compare import run_comparison
    from engine.config import ComparisonConfig

    cfg = ComparisonConfig.from_dict(
        {
            "base": {
                "kb": "clinic_records",
                "attack": "zeng",
                "attacker_llm": "",
                "rounds": 1,
                "top_k": 2,
                "generator": "local",
                "generator_params": {"model": "smollm2-135m"},
                "max_tokens": 16,
                "answer_budget": "fixed",
            },
            "attacks": ["zeng"],
            "configurations": ["none", "system-prompt"],
            "utility_limit": 1,
        }
    )
    stop = threading.Event()
    out = cache / "20261206-100000-cut000"
    run_comparison(cfg, out_dir=out, stop=stop, on_row=lambda row: stop.set())
    first = json.loads((out / "comparison.json").read_text())
    assert first["complete"] is False and len(first["runs"]) == 1
    at = _app()
    at.switch_page("pages/defense_comparison.py").run()
    pick = next(s for s in at.selectbox if s.label == "Comparison")
    assert any(o.endswith(" · unfinished (1 of 2 runs)") for o in pick.options), pick.options
    next(b for b in at.button if b.label == "Resume this comparison").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    if at.session_state["cmp_job"].running:  # the form holds the defaults: the panel says whose settings run
        assert any(
            "Resuming comparison 20261206-100000-cut000 with the settings it was started" in i.value for i in at.info
        )
    _wait(at, "cmp_job", 600)
    assert at.session_state["cmp_job"].error is None, at.session_state["cmp_job"].error
    record = json.loads((out / "comparison.json").read_text())
    assert record["complete"] is True and [r["configuration"] for r in record["runs"]] == ["none", "system-prompt"]
    assert record["runs"][0]["run_id"] == first["runs"][0]["run_id"], "the finished run is kept, not played again"
    assert len(list((out / "runs").iterdir())) == 2
    assert list(at.dataframe[0].value["configuration"]) == ["none", "system-prompt"]
    assert not any(b.label == "Resume this comparison" for b in at.button)


def test_a_damaged_saved_comparison_is_listed_and_opening_it_says_why(cache):
    """A comparison.json that is not a record any more (a disk fault, a hand edit): the page still draws everything,
    lists the entry as damaged, and Open names the fault in one line — no traceback, nothing deleted."""
    (cache / "20261206-090000-bad000").mkdir()
    (cache / "20261206-090000-bad000" / "comparison.json").write_text("[]")
    at = _app()
    at.switch_page("pages/defense_comparison.py").run()
    assert not at.exception
    pick = next(s for s in at.selectbox if s.label == "Comparison")
    assert pick.options == ["20261206-090000-bad000 · damaged: Open says why"]
    assert not any(b.label == "Resume this comparison" for b in at.button)
    next(b for b in at.button if b.label == "Open").click().run()
    assert not at.exception and any("is not a saved comparison" in e.value for e in at.error)
    assert (cache / "20261206-090000-bad000" / "comparison.json").read_text() == "[]"


def _run_level(level: int, timeout: float, follow: bool = False):
    """Open the teaching page, run one level to its end; (AppTest, the level's result). ``follow``: a second tab
    (or this one after a reload) follows the running level and records its result too."""
    at = _app()
    at.switch_page("pages/teaching.py").run()
    next(b for b in at.button if b.label == f"Run level {level}").click().run()
    assert not at.exception
    other = None
    if follow:
        other = _app()
        other.switch_page("pages/teaching.py").run()
        assert not other.exception
        if "teach_job" in other.session_state:
            assert other.session_state["teach_job"] is at.session_state["teach_job"]
            if at.session_state["teach_job"].running:
                assert any("Following the level started in another tab" in i.value for i in other.info)
        else:  # nothing to follow only when the level ended before the second tab opened
            assert not at.session_state["teach_job"].running
            other = None
    _wait(at, "teach_job", timeout)
    res = at.session_state["teach"]["results"][level]
    assert "error" not in res, res
    if other is not None:
        other.run()
        assert not other.exception and other.session_state["teach"]["results"][level]["met"] == res["met"]
    return at, res


def test_teaching_level_one_runs_and_reports_its_goal():
    at, res = _run_level(1, 300)
    assert at.selectbox(key="teach1_attack").value == "universal"  # the attack the level's text explains
    assert res["metrics"]["ASR@1"] > 0 and res["met"]
    assert any("Goal met" in s.value for s in at.success)
    assert {m.label for m in at.metric} >= {"ASR@1", "ASR@5"}
    assert at.session_state["teach"]["met"] == [1]
    assert any("1/4 levels completed" in (p.proto.text or "") for p in at.get("progress"))


def test_teaching_level_two_leaks_and_shows_the_record_beside_the_answer():
    at, res = _run_level(2, 600, follow=True)  # ~25 s: a second tab opens while it runs, and follows it
    assert res["met"] and res["metrics"]["PII items leaked"] > 0 and res["leaks"]
    assert any("Goal met" in s.value for s in at.success)
    assert any(c.value == "Private record (source)" for c in at.caption)
    assert any(":red-background[" in m.value for m in at.markdown)  # the copied spans are marked


def test_teaching_level_four_names_a_tenant_filter_and_sends_the_player_on():
    """Deployment A filters after the top-K: its retrieval log shows short results and no foreign chunk; the
    right guess is confirmed, but the goal is the deployment with no filter, so the level is not yet met."""
    at = _app()
    at.switch_page("pages/teaching.py").run()
    at.radio(key="teach4_deployment").set_value("A")
    at.radio(key="teach4_guess").set_value("after")
    next(b for b in at.button if b.label == "Run level 4").click().run()
    assert not at.exception
    _wait(at, "teach_job", 600)
    res = at.session_state["teach"]["results"][4]
    assert "error" not in res, res
    assert res["identified"] and not res["met"] and res["metrics"]["other tenants' chunks in the context"] == 0
    assert res["metrics"]["rounds with results cut short"] > 0
    assert any("this deployment filters after the top-K" in i.value and "elsewhere" in i.value for i in at.info)
    assert 4 not in at.session_state["teach"]["met"]
    assert all(row["other tenants'"] == 0 for row in res["evidence"])


def test_reopened_ragfort_ablation_shows_the_verdict_and_the_cluster_view(monkeypatch):
    """Synthetic rows (no models): the ablation verdict and the reindex cluster view (engine helper stubbed)."""
    from types import SimpleNamespace

    import numpy as np

    from engine.views import reindex as reindex_view
    from engine.compare import add_ratios

    fake = SimpleNamespace(
        labels=np.array([0, 0, 1, 1, -1]),
        projection_before=np.zeros((5, 2)),
        projection_after=np.ones((5, 2)),
        separation_before={"silhouette": 0.2, "gap": 0.1},
        separation_after={"silhouette": 0.4, "gap": 0.3},
        n_clusters=2,
        n_noise=1,
    )
    monkeypatch.setattr(reindex_view, "reindex_view_for", lambda base, progress=None: fake)
    rows = [
        {
            "attack": "rag-thief",
            "configuration": c,
            "defenses": c.split("+") if c != "none" else [],
            "crr": v,
            "retrieved_coverage": v,
            "repeat_contexts": 0,
            "rouge_contexts": 0,
            "semantic_leak": 0.0,
            "pii_leaked": 1,
            "utility_acc": 0.5,
            "utility_faithfulness": 0.5,
            "curves": {"crr": [v]},
            "n_runs": 2,
            "seeds": [0, 1],
            "crr_std": 0.05,
        }
        for c, v in (("none", 0.4), ("reindex", 0.3), ("cascade", 0.2), ("reindex+cascade", 0.1))
    ]
    rows += [
        {**r, "attack": "worm", "crr": v, "curves": {"crr": [v]}} for r, v in zip(rows, (0.2, 0.2, 0.1, 0.1))
    ]  # worm alone: the direction does not hold
    add_ratios(rows)
    at = AppTest.from_file(str(REPO / "pages/defense_comparison.py"), default_timeout=120)
    at.session_state["cmp_view"] = {
        "config": {
            "base": {"kb": "clinic_records"},
            "attacks": ["rag-thief", "worm"],
            "configurations": [r["configuration"] for r in rows],
        },
        "rows": rows,
        "dir": "synthetic",
        "complete": True,
    }
    at.run()
    assert not at.exception and not at.error
    assert any("ablation direction for rag-thief" in s.value and "holds" in s.value for s in at.success)
    assert any("ablation direction for worm" in w.value and "does not hold" in w.value for w in at.warning)
    # relative average: reindex (0.75 + 1) / 2, cascade 0.5, reindex+cascade (0.25 + 0.5) / 2
    assert any("averaged over 2 attacks" in s.value and "cascade 0.50×" in s.value for s in at.success)
    assert any("mean over 2 runs" in c.value for c in at.caption)
    assert {"crr_std", "n_runs"} <= set(at.dataframe[0].value.columns)
    assert any("HDBSCAN clusters" in c.value for c in at.caption)
    charts = [c.key for c in at.get("plotly_chart")]
    assert charts[:4] == ["cmp_curves", "cmp_ratios", "cmp_tradeoff", "cmp_cluster_fig"]  # then the long runs


def test_a_long_experiments_folder_shows_its_curves_table_and_finished_cells(tmp_path):
    """The committed paper-scale experiment (a finished run read from its summary, a running one from its gzipped
    events) opens on the Defense comparison page: CRR after every round with intervals, the checkpoint table and
    the same-round line; a folder without runs is one line."""
    at = _app()
    at.switch_page("pages/defense_comparison.py").run()
    assert not at.exception
    folder = at.text_input(key="long_folder")
    assert folder.value.endswith("results/ragfort-paper-scale-hcm")
    table = next(d.value for d in at.dataframe if "chunks" in d.value.columns)
    assert {"none", "reindex+cascade"} <= set(table["configuration"])
    done = table[table["configuration"] == "none"].iloc[0]
    assert done["rounds"] == "200/200" and done["chunks"] == "146 of 1377"
    assert done["CRR now [95%]"].startswith("0.106 [0.0")
    assert done["CRR @ 200"] == "0.106"
    median, mean = (float(x) for x in done["s / round"].split(" / "))  # each round's time is kept
    assert 0 < median < mean
    for _, row in table.iterrows():  # a checkpoint a running cell has not reached reads "not yet", not None
        reached = int(row["rounds"].split("/")[0])
        for col in (c for c in table.columns if c.startswith("CRR @ ")):
            assert (row[col] == "not yet") == (reached < int(col[6:])), (row["rounds"], col, row[col])
    assert len(at.get("plotly_chart")) >= 1
    assert any("reindex+cascade CRR" in m.value and "vs none" in m.value for m in at.markdown)
    # RAGFort's own tables, beside the paper's numbers; the running cell is not shown as finished
    tables = next(m.value for m in at.markdown if m.value.startswith("**Main table** (healthcaremagic"))
    assert "| RAGFort (reindex + cascade) |" in tables and "8.84" in tables and "0.51×" in tables
    assert "(not finished; against no protection at that round)" in tables
    folder.set_value(str(tmp_path)).run()
    assert not at.exception and any("no extraction runs" in i.value for i in at.info)


def test_on_a_shared_deployment_the_long_experiments_folder_is_chosen_not_typed(monkeypatch):
    """A web user of a shared deployment picks among the repository's results and their own comparisons: no box
    takes a server path (single-user mode keeps the path box, and says so)."""
    monkeypatch.setenv("RAG_PLAYGROUND_SHARED", "1")
    at = _app()
    at.switch_page("pages/defense_comparison.py").run()
    assert not at.exception
    assert not [t for t in at.text_input if t.key == "long_folder"]
    pick = at.selectbox(key="long_folder")
    assert pick.value.endswith("results/ragfort-paper-scale-hcm")
    assert all("/results/" in o or "/comparisons/" in o for o in pick.options)
