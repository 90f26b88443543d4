"""Streamlit AppTest over every page, the live stepping, session isolation and bad uploads."""

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.config import PoisonConfig
from engine.runs import PoisoningRun
from engine.events import Retrieved

REPO = Path(__file__).resolve().parents[2]
PAGES = [
    "pages/home.py",
    "pages/pipeline.py",
    "pages/poisoning_lab.py",
    "pages/analysis.py",
    "pages/sweeps.py",
    "pages/runs.py",
    "pages/extraction_lab.py",
    "pages/defense_comparison.py",
    "pages/teaching.py",
    "pages/audit.py",
]


def app(timeout=300) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=timeout)
    at.run()
    assert not at.exception
    return at


def prepare_lab(at: AppTest, limit: int = 6, target: str = "pii") -> AppTest:
    at.switch_page("pages/poisoning_lab.py").run()
    ni = next(n for n in at.number_input if n.label.startswith("How many"))
    ni.set_value(limit)
    next(s for s in at.selectbox if s.label == "Target information").set_value(target)
    next(b for b in at.button if b.label == "Prepare attack").click().run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_standalone(page):
    at = AppTest.from_file(str(REPO / page), default_timeout=120)
    at.run()
    assert not at.exception


def test_home_has_presets_and_tour():
    at = app()
    assert at.selectbox[0].value == "quick-demo"
    assert {b.label for b in at.button} >= {"Run the demo", "Load preset only"}
    assert any("Guided tour" in e.label for e in at.expander)


def test_home_opens_the_extraction_demo():
    at = app()
    next(b for b in at.button if b.label == "Open the extraction demo").click().run()
    assert not at.exception
    s = at.session_state["extract"]
    assert (s["attack"], s["rounds"], s["generator"], s["attacker_llm"], s["top_k"], s["answer_budget"]) == (
        "rag-thief",
        10,
        "qwen2.5-0.5b",
        "none",
        2,
        "context",
    )


def test_pipeline_controls_build_and_try_a_query():
    at = app()
    at.switch_page("pages/pipeline.py").run()
    assert {r.label for r in at.radio} >= {"Corpus source"}
    assert any(s.label == "Retriever" for s in at.selectbox)
    next(b for b in at.button if b.label == "Build index").click().run()
    assert not at.error and any("Index ready" in c.value for c in at.caption)
    at.text_input[0].set_value("What is a normal HbA1c?").run()
    assert not at.exception and len(at.dataframe) == 1
    assert len(at.dataframe[0].value) == 5
    # each retrieved document in full, as plain text (the table cuts long ones)
    full = [t.value for t in at.text]
    assert list(at.dataframe[0].value["text"]) == full[-5:]
    assert any(c.value.startswith("all-MiniLM-L6-v2") for c in at.caption)  # the retriever's whole description


def test_run_the_demo_prepares_the_lab_and_plays_it():
    at = app()
    next(b for b in at.button if b.label == "Run the demo").click().run()
    assert not at.exception and not at.error
    assert at.session_state["lab_playing"] is True  # the demo runs: no second click on Play
    assert {"Step", "Pause", "Reset"} <= {b.label for b in at.button}


def test_loading_a_preset_over_a_prepared_attack_says_it_was_closed_and_where_it_is():
    at = prepare_lab(app(), limit=3)
    at.button(key="btn_step").click().run()
    at.switch_page("pages/home.py").run()
    next(b for b in at.button if b.label == "Load preset only").click().run()
    assert not at.exception and at.session_state["lab_run"] is None
    said = " ".join(s.value for s in at.success)
    assert "(1 of 3 questions played) was closed" in said and "Saved runs" in said


def test_stepping_matches_the_engine():
    at = prepare_lab(app(), limit=6)
    for _ in range(6):
        at.button(key="btn_step").click().run()
        assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    run = at.session_state["lab_run"]
    assert run.done and run.finished
    engine_run = PoisoningRun(PoisonConfig(limit=6, detectors=("l2", "mahalanobis"), seed=0))
    engine_run.run()
    for k in ("1", "2", "5"):
        assert float(metrics[f"ASR@{k}"]) == pytest.approx(engine_run.summary()["asr"][k], abs=0.005)


def test_play_and_reset():
    at = prepare_lab(app(), limit=4)
    at.button(key="btn_play").click().run()
    assert at.session_state["lab_playing"] is True
    at.button(key="btn_pause").click().run()
    assert at.session_state["lab_playing"] is False
    at.button(key="btn_step").click().run()
    assert at.session_state["lab_run"].rounds_done == 2  # Play attacks one question at once, then Step one more
    at.button(key="btn_reset").click().run()
    assert at.session_state["lab_run"].rounds_done == 0 and not at.exception


def _lab_sidebar(run, playing: bool) -> list[str]:
    def script(run, playing):
        import streamlit as st

        from components.sidebar import render_sidebar

        st.session_state.update(
            pipeline={"corpus": "clinic_handbook", "chunk_size": 512, "chunk_overlap": 32, "retriever": "minilm"},
            lab_run=run,
            lab_playing=playing,
        )
        render_sidebar("Poisoning lab")

    at = AppTest.from_function(script, kwargs={"run": run, "playing": playing}).run()
    assert not at.exception
    return [c.value for c in at.sidebar.caption]


def test_the_sidebar_says_playing_while_the_lab_plays():
    """The lab plays in a fragment and the sidebar is not redrawn until Play ends: it says the run is playing
    instead of a count frozen at the moment Play was pressed (a tour read "1/105" while the lab was at 79)."""
    run = PoisoningRun(PoisonConfig(limit=4, detectors=()))
    try:
        run.prepare()
        run.step()
        assert any(c.endswith("playing: 4 queries, its count and ASR in the lab") for c in _lab_sidebar(run, True))
        paused = _lab_sidebar(run, False)
        assert any("1/4 queries · ASR@2" in c for c in paused) and not any("playing" in c for c in paused)
        run.step(3)
        assert any("4/4 queries" in c for c in _lab_sidebar(run, True)), "a finished run shows its count"
    finally:
        run.close()


def test_lab_panels_render_after_steps():
    at = prepare_lab(app(), limit=5)
    for _ in range(3):
        at.button(key="btn_step").click().run()
    labels = {m.label for m in at.metric}
    assert {"TPR", "FPR", "AUROC"} <= labels  # detector panel
    # each detector's own parameters re-score it (from its Params, not a per-detector widget)
    beta = at.number_input(
        key=next(n.key for n in at.number_input if n.key and n.key.startswith("pf.rescore.mahal") and ".beta." in n.key)
    )
    before = [m.value for m in at.metric if m.label == "beta"]
    beta.set_value(0.5).run()
    assert not at.exception and [m.value for m in at.metric if m.label == "beta"] == ["0.5"] != before
    assert len(at.get("download_button")) == 3
    next(b for b in at.button if b.label == "Compute for this configuration").click().run()
    assert not at.exception and len(at.dataframe) >= 3  # top-K + Tables 3 and 4


def test_lab_answers_show_the_attackers_information_in_the_answer():
    at = app()
    at.session_state["pipeline"] = {**at.session_state["pipeline"], "top_k": 2}
    at.switch_page("pages/poisoning_lab.py").run()
    next(n for n in at.number_input if n.label.startswith("How many")).set_value(4)
    next(c for c in at.checkbox if c.label == "Answer each question").check()
    next(b for b in at.button if b.label == "Prepare attack").click().run()
    assert not at.exception and not at.error
    shown, marked = [], []
    for _ in range(4):
        at.button(key="btn_step").click().run()
        assert not at.exception
        shown += [m.value for m in at.markdown if m.value.startswith("**Assistant's answer**")]
        marked += [m.value for m in at.markdown if ":red-background[" in m.value]
    # the punchline: an answer repeats the fake name / e-mail / phone, highlighted, next to retrieval ASR
    assert any("repeats the attacker's information" in v for v in shown)
    assert marked  # the repeated items are highlighted in the answer
    metrics = {m.label: m.value for m in at.metric}
    assert float(metrics["ASR (answers)"]) > 0 and "ASR@2" in metrics
    assert any(
        c.value.startswith("95% Wilson intervals after 4 questions") and "answers [" in c.value for c in at.caption
    )


def test_the_jamming_lab_reads_refused_or_answered_beside_the_answer_without_the_blocker():
    at = app()
    at.session_state["pipeline"] = {**at.session_state["pipeline"], "corpus": "clinic_records", "top_k": 2}
    at.switch_page("pages/poisoning_lab.py").run()
    # questions about the handbook over the clinic records: said, not silently poor
    assert any("The questions were written about clinic" in c.value for c in at.caption)
    at.session_state["pipeline"] = {**at.session_state["pipeline"], "corpus": "clinic_handbook"}
    at.run()
    assert not any("The questions were written about" in c.value for c in at.caption)
    next(s for s in at.selectbox if s.label == "Attack").set_value("jamming").run()
    next(n for n in at.number_input if n.label.startswith("How many")).set_value(2)
    next(c for c in at.checkbox if c.label == "Answer each question").check()
    next(b for b in at.button if b.label == "Prepare attack").click().run()
    assert not at.exception and not at.error
    verdicts = []
    for _ in range(2):
        at.button(key="btn_step").click().run()
        assert not at.exception
        verdicts += [m.value for m in at.markdown if m.value.startswith("**Assistant's answer**")]
        assert any(c.value.startswith("Without the blocker: ") for c in at.caption)
        assert any(c.value.startswith("Blocker document") for c in at.caption)
    assert verdicts and all(
        any(w in v for w in ("refused because of the blocker", "answered despite the blocker", "refused already"))
        for v in verdicts
    ), verdicts
    assert not any("repeats the attacker's information" in v for v in verdicts)


def test_lab_defenses_filter_the_top_k_and_report_asr_after_them():
    at = app()
    at.switch_page("pages/poisoning_lab.py").run()
    next(n for n in at.number_input if n.label.startswith("How many")).set_value(3)
    next(m for m in at.multiselect if m.label.startswith("Defenses")).set_value(["threshold"])
    sim = next(n for n in at.number_input if n.key and n.key.startswith("pf.defense.threshold.min_similarity"))
    sim.set_value(0.99)
    next(b for b in at.button if b.label == "Prepare attack").click().run()
    assert not at.exception and not at.error
    at.button(key="btn_step").click().run()
    assert any(m.value.startswith("**Defenses** · 🛡️ the poison was removed") for m in at.markdown)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["ASR after defenses"] == "0.00" and float(metrics["ASR@5"]) == 1.0
    # an answer-stage defense without generation is a clear error, and the lab stays usable
    next(m for m in at.multiselect if m.label.startswith("Defenses")).set_value(["system-prompt"])
    next(b for b in at.button if b.label == "Prepare attack").click().run()
    assert not at.exception and any("switch generation on" in e.value for e in at.error)


def test_lab_shows_the_trigger_effect():
    at = app()
    at.switch_page("pages/poisoning_lab.py").run()
    next(s for s in at.selectbox if s.label == "Attack").set_value("trigger").run()
    next(n for n in at.number_input if n.label.startswith("How many")).set_value(0)
    next(b for b in at.button if b.label == "Prepare attack").click().run()
    assert not at.exception and not at.error
    at.button(key="btn_step").click().run()
    shown = [m.value for m in at.markdown if m.value.startswith("**Trigger effect** (blood pressure)")]
    assert shown and "for questions with the trigger" in shown[0]


def test_custom_target_without_text_is_a_friendly_error():
    at = prepare_lab(app(), limit=3, target="custom")
    assert any("needs target text" in e.value for e in at.error)
    assert at.session_state["lab_run"] is None


def test_two_concurrent_sessions_never_see_each_others_poison():
    """Two live sessions, interleaved: A injects all its poisons at once; B steps its own attack and
    tries a query on its pipeline page meanwhile. Zero retrievals of A's poisons in B."""
    at_a = app()
    at_a.switch_page("pages/poisoning_lab.py").run()
    next(n for n in at_a.number_input if n.label.startswith("How many")).set_value(8)
    next(r for r in at_a.radio if r.label == "Injection").set_value("all-at-once")
    next(b for b in at_a.button if b.label == "Prepare attack").click().run()
    at_b = prepare_lab(app(), limit=8, target="diagnosis")
    for _ in range(8):
        at_a.button(key="btn_step").click().run()
        at_b.button(key="btn_step").click().run()
    a, b = at_a.session_state["lab_run"], at_b.session_state["lab_run"]
    assert a.summary()["asr"]["5"] > 0.5, "A's poisons are live in A"
    at_p = app()
    at_p.switch_page("pages/pipeline.py").run()
    at_p.text_input[0].set_value(a.queries[0].text).run()
    tried = at_p.dataframe[0].value
    a_texts = {p.doc.text for p in a.poisons}
    b_texts = {b.store.text_of(d) for e in b.events if isinstance(e, Retrieved) for d in e.doc_ids}
    assert not (b_texts & a_texts), "session B retrieved a document injected by session A"
    assert not (set(tried["text"]) & a_texts), "a clean pipeline query saw session A's poison"
    assert a.store.run_id != b.store.run_id


BAD_UPLOADS = [
    ("empty.txt", b"", "the file is empty"),
    ("binary.txt", b"\x00\x01\x02\x03", "binary"),
    ("latin1.txt", "caf\xe9 cr\xe8me".encode("latin-1"), "not valid UTF-8"),
    ("broken.jsonl", b'{"text": "ok"}\n{not json}\n', "line 2 is not valid JSON"),
    ("fake.pdf", b"this is not a pdf", "not a PDF file"),
]


@pytest.mark.parametrize("name,content,message", BAD_UPLOADS, ids=[b[0] for b in BAD_UPLOADS])
def test_bad_uploads_give_a_clear_message_and_keep_the_app_usable(name, content, message):
    at = app()
    at.switch_page("pages/pipeline.py").run()
    at.radio[0].set_value("Upload").run()
    at.file_uploader[0].set_value(
        [(name, content, "application/octet-stream"), ("good.txt", b"Aspirin thins the blood.", "text/plain")]
    ).run()
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert any("1 documents" in s.value for s in at.success)  # the good file is kept
    next(b for b in at.button if b.label == "Build index").click().run()
    assert not at.exception and any("Index ready" in c.value for c in at.caption)


def test_oversized_upload_is_refused(monkeypatch):
    from engine import corpora

    monkeypatch.setattr(corpora, "MAX_UPLOAD_BYTES", 10)
    at = app()
    at.switch_page("pages/pipeline.py").run()
    at.radio[0].set_value("Upload").run()
    at.file_uploader[0].set_value(("big.txt", b"x" * 100, "text/plain")).run()
    assert any("over the" in e.value for e in at.error)


def test_analysis_page_correlates_features_with_poison_rank():
    at = prepare_lab(app(), limit=12)
    for _ in range(12):
        at.button(key="btn_step").click().run()
    at.switch_page("pages/analysis.py").run()
    assert not at.exception and not at.error
    assert {s.label for s in at.selectbox} >= {"x", "y"}
    table = at.dataframe[0].value
    assert len(table) == 5 and {"Pearson r", "p (Pearson)", "Spearman ρ", "p (Spearman)", "n"} <= set(table.columns)
    assert (table["n"] == 12).all() and not table.isna().any().any()  # undefined reads "—", never a grey None
    assert all(v == "—" or -1.0 <= float(v) <= 1.0 for v in table["Pearson r"])


def test_sweep_runs_in_the_background_and_draws_the_heat_map(tmp_path, monkeypatch):
    """The grid runs in the background, draws its heat map, and saves every finished cell in a folder named
    after the grid: a refresh loses nothing (the same grid resumes), and the folder opens beside the paper."""
    import pandas as pd

    monkeypatch.setenv("RAG_PLAYGROUND_CACHE", str(tmp_path))
    at = app()
    at.switch_page("pages/sweeps.py").run()
    next(n for n in at.number_input if n.label.startswith("Questions per set")).set_value(5)
    next(b for b in at.button if b.label == "Start sweep").click().run()
    job = at.session_state["sweep_job"]
    job.wait(300)
    assert job.error is None and job.result.complete
    at.run()
    assert not at.exception
    cells = at.dataframe[0].value
    assert len(cells) == 4 and {"asr@2", "retriever", "target"} <= set(cells.columns)
    assert any("heat map" in b.label.lower() for b in at.get("download_button"))
    folder = Path(at.session_state["sweep_folder"])
    assert folder.parent == tmp_path / "sweeps" and len(pd.read_csv(folder / "sweep_cells.csv")) == 4
    # the default grid has no cell on the paper's query sets: no button into an empty table, a line saying why
    assert not any(b.label.startswith("Show beside") for b in at.button)
    assert any("no cell on the paper's query sets" in c.value for c in at.caption)
    at.session_state["t1_folder"] = str(folder)  # what the button does for a grid on MIRAGE's sets
    at.run()
    assert at.text_input(key="t1_folder").value == str(folder) and not at.exception

    fresh = app()  # a refresh: a new session, the same grid
    fresh.switch_page("pages/sweeps.py").run()
    next(n for n in fresh.number_input if n.label.startswith("Questions per set")).set_value(5)
    next(b for b in fresh.button if b.label == "Start sweep").click().run()
    assert fresh.session_state["sweep_already"] == 4 and fresh.session_state["sweep_folder"] == str(folder)
    job = fresh.session_state["sweep_job"]
    job.wait(300)
    assert job.result.complete and len(job.result.cells) == 4 and job.done_count == 0  # nothing re-run

    from engine.folder_lock import exclusive_folder

    saved = (folder / "sweep_cells.csv").read_bytes()
    with exclusive_folder(folder, "a sweep"):  # another session is running the same grid right now
        third = app()
        third.switch_page("pages/sweeps.py").run()
        next(n for n in third.number_input if n.label.startswith("Questions per set")).set_value(5)
        next(b for b in third.button if b.label == "Start sweep").click().run()
        third.session_state["sweep_job"].wait(60)
        third.run()
    assert any("already running" in e.value for e in third.error) and not third.exception
    assert (folder / "sweep_cells.csv").read_bytes() == saved  # the other run's cells kept

    # an app restart during a sweep leaves its finished cells on disk (here: 2 of 4); a new session lists it as
    # unfinished, opens what finished, and resumes the rest with its own settings (not the form's)
    pd.read_csv(folder / "sweep_cells.csv").head(2).to_csv(folder / "sweep_cells.csv", index=False)
    # while a sweep runs, the cells finished so far show under its bar: this resumed sweep is held after its third
    # cell (its progress report waits), and a page following it reads 3 of 4 from the folder
    import threading

    from engine.jobs import Job
    from engine.sweep import load_sweep, run_sweep

    release = threading.Event()
    grid_cfg = load_sweep(folder)[0]

    def held(progress, stop):
        return run_sweep(grid_cfg, progress=lambda *a: (progress(*a), release.wait(120)), stop=stop, out_dir=folder)

    try:
        watcher = app()
        watcher.switch_page("pages/sweeps.py").run()
        state = {"sweep_cfg": grid_cfg, "sweep_folder": str(folder), "sweep_already": 2}
        watcher.session_state["sweep_job"] = Job("sweep", held, state=state).start()
        for k, v in state.items():
            watcher.session_state[k] = v
        deadline = time.time() + 120
        while watcher.session_state["sweep_job"].done_count < 1 and time.time() < deadline:
            time.sleep(0.5)
        watcher.run()
        live = [c.value for c in watcher.caption if c.value.startswith("Finished so far:")]
        assert live == [
            "Finished so far: 3 of 4 cells, each row as its cell ends. The heat map and the paper's table beside it "
            "come with the whole sweep."
        ], live
        assert len(watcher.dataframe[0].value) == 3 and not watcher.exception
        bar = watcher.get("progress")[0].proto
        assert bar.text.startswith("3/4 cells") and bar.value == 75, bar  # not 2 saved + 3 reported
    finally:
        release.set()
        watcher.session_state["sweep_job"].wait(120)
    pd.read_csv(folder / "sweep_cells.csv").head(2).to_csv(folder / "sweep_cells.csv", index=False)
    after = app()
    after.switch_page("pages/sweeps.py").run()
    pick = next(s for s in after.selectbox if s.label == "Sweep")
    assert any(o.endswith(" · unfinished (2 of 4 cells)") for o in pick.options), pick.options
    next(b for b in after.button if b.label == "Open").click().run()
    assert not after.exception and len(after.dataframe[0].value) == 2
    assert any("Not finished: 2 of 4 cells" in w.value for w in after.warning)
    next(b for b in after.button if b.label == "Resume this sweep").click().run()
    job = after.session_state["sweep_job"]
    job.wait(300)
    after.run()
    assert job.error is None and job.result.complete and job.done_count == 4  # 2 kept + 2 run
    assert not after.exception and len(after.dataframe[0].value) == 4
    assert len(pd.read_csv(folder / "sweep_cells.csv")) == 4
    assert not any(b.label == "Resume this sweep" for b in after.button), "a finished sweep has nothing to resume"


def test_the_sweep_form_says_how_corpora_are_chunked(tmp_path, monkeypatch):
    """Chunking is a field of the form (auto: BioASQ whole, as the Table-1 preset; other corpora 512 tokens)."""
    monkeypatch.setenv("RAG_PLAYGROUND_CACHE", str(tmp_path))
    at = app()
    at.switch_page("pages/sweeps.py").run()
    chunking = next(s for s in at.selectbox if s.label == "Chunking")
    assert chunking.value == "auto"
    next(n for n in at.number_input if n.label.startswith("Questions per set")).set_value(2)
    next(s for s in at.multiselect if s.label == "Retrievers").set_value(["bm25"])
    chunking.set_value("128")
    next(b for b in at.button if b.label == "Start sweep").click().run()
    assert at.session_state["sweep_cfg"].chunk_size == 128
    at.session_state["sweep_job"].wait(300)
    at.run()
    assert not at.exception and any("Chunking: 128 retriever tokens" in c.value for c in at.caption)


@pytest.mark.slow
def test_sweep_runs_its_cells_on_ray_when_asked(tmp_path, monkeypatch):
    """The executor section of the form: the same grid as Ray tasks (a local Ray started for the run)."""
    pytest.importorskip("ray")
    import components.state  # no saved cells to resume from: every cell runs on Ray

    monkeypatch.setattr(components.state, "my_sweeps_dir", lambda: tmp_path)
    at = app()
    at.switch_page("pages/sweeps.py").run()
    next(n for n in at.number_input if n.label.startswith("Questions per set")).set_value(5)
    next(s for s in at.selectbox if s.label == "Executor").set_value("ray")
    next(n for n in at.number_input if n.label == "Workers").set_value(2)
    next(b for b in at.button if b.label == "Start sweep").click().run()
    assert not at.exception and not at.error
    job = at.session_state["sweep_job"]
    job.wait(300)
    assert job.error is None and job.result.complete and not job.result.failed
    at.run()
    assert not at.exception and len(at.dataframe[0].value) == 4
    assert at.session_state["sweep_executor"]["executor"] == "ray" and job.done_count == 4


def test_sweeps_page_shows_a_saved_sweep_beside_the_papers_table1(tmp_path):
    import pandas as pd

    pd.DataFrame(
        [
            {
                "corpus": "bioasq",
                "retriever": "minilm",
                "query_set": "mirage:pubmedqa",
                "target": "pii",
                "asr@1": 0.9,
                "asr@2": 0.97,
                "asr@5": 1.0,
                "n_queries": 300,
                "variants": 3,
                "poisons_over_window": 0,
            },
            {
                "corpus": "bioasq",
                "retriever": "bm25",
                "query_set": "mirage:pubmedqa",
                "target": "pii",
                "asr@1": 1.0,
                "asr@2": 1.0,
                "asr@5": 1.0,
                "n_queries": 300,
                "variants": 3,
                "poisons_over_window": 0,
            },
        ]
    ).to_csv(tmp_path / "sweep_cells.csv", index=False)
    at = app()
    at.switch_page("pages/sweeps.py").run()
    at.text_input(key="t1_folder").set_value(str(tmp_path)).run()
    assert not at.exception
    table = _frame_with(at, "ours · minilm")
    row = table[(table["query_set"] == "PubMedQA") & (table["target"] == "PPI")].iloc[0]
    assert row["ours · minilm"] == 0.97 and row["ours · bm25"] == 1.0 and row["paper · MedCPT"] == 0.93
    assert row["paper · Contriever"] == 0.78
    at.radio(key="t1_k").set_value(1).run()  # top-1: the paper's Table 7
    row = _frame_with(at, "ours · minilm").iloc[0]
    assert row["ours · minilm"] == 0.9 and row["paper · Contriever"] == 0.76 and row["paper · MedCPT"] == 0.91
    at.text_input(key="t1_folder").set_value(str(tmp_path / "nothing")).run()
    assert not at.exception and any("nothing: no sweep" in i.value for i in at.info)


def _frame_with(at, column):
    """The one dataframe on the page that has ``column``."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0]


def test_sweeps_page_reproduces_table8_detection_and_tables34_from_saved_files(tmp_path):
    """The other Reproduce tabs read what the commands save: β-sweep summaries (Table 8), a detection sweep
    (Figures 3-9), analyze's tables (Tables 3-4); a folder without them is one clear line, not a crash."""
    import json
    import pandas as pd

    (tmp_path / "t8" / "mpnet").mkdir(parents=True)
    (tmp_path / "t8" / "mpnet" / "pubmedqa.json").write_text(
        json.dumps(
            {
                "retriever": "mpnet",
                "queries": "mirage:pubmedqa",
                "target": "pii",
                "detectors": {"mahalanobis": {"beta": 0.05}},
                "beta_sweep": [
                    {"beta": b, "tpr": t, "fpr": 0.05, "auroc": 0.9, "n_anchors": 900}
                    for b, t in ((0.001, 0.7), (0.05, 0.9), (0.2, 0.8))
                ],
            }
        )
    )
    det = tmp_path / "results" / "detection-bioasq-mpnet"
    det.mkdir(parents=True)
    pd.DataFrame(
        [
            {
                "corpus": "bioasq",
                "retriever": "mpnet",
                "query_set": "mirage:mmlu",
                "target": t,
                "asr@1": 0.8,
                "asr@2": 0.9,
                "asr@5": 1.0,
                "n_queries": 200,
                "variants": 1,
                "poisons_over_window": 0,
                "l2_tpr": 0.05,
                "l2_fpr": 0.05,
                "l2_auroc": 0.5,
                "mahalanobis_tpr": v,
                "mahalanobis_fpr": 0.06,
                "mahalanobis_auroc": 0.95,
                "question_tokens": 30,
                "target_embedded": 0.8,
            }
            for t, v in (("pii", 0.97), ("hotpotqa", 1.0))
        ]
    ).to_csv(det / "sweep_cells.csv", index=False)
    t3 = {"target: pii": {"f(q)ᵀf(p)": "0.1 ± 0.05", "∠(f(q⊕p)−f(q), f(q)) [°]": "98 ± 4"}}  # DataFrame.to_dict()
    (tmp_path / "t34").mkdir()
    (tmp_path / "t34" / "bioasq.json").write_text(
        json.dumps({"retrievers": {"mpnet": {"table3_orthogonal_augmentation": t3}}}, ensure_ascii=False)
    )
    at = app()
    at.switch_page("pages/sweeps.py").run()
    at.text_input(key="t8_folder").set_value(str(tmp_path / "t8")).run()
    at.text_input(key="det_folder").set_value(str(tmp_path / "results")).run()
    at.text_input(key="t34_path").set_value(str(tmp_path / "t34")).run()
    assert not at.exception
    t8 = _frame_with(at, "best β (TPR)").iloc[0]
    assert t8["retriever"] == "mpnet" and t8["query set"] == "PubMedQA" and t8["β = 0.05"] == "0.90 / 0.05"
    assert t8["best β (TPR)"] == "0.05 (0.90)" and t8["β by CV"] == "0.05" and t8["anchors"] == 900
    fig = _frame_with(at, "HotpotQA").iloc[0]
    assert fig["PPI"] == "0.97 (0.90)" and fig["HotpotQA"] == "1.00 (0.90)" and fig["FPR"] == 0.06
    assert fig["question tokens (median)"] == 30 and fig["target read (mean share)"] == 0.8
    assert any("mpnet" in m.value for m in at.markdown)
    assert any(list(d.value.index) == ["f(q)ᵀf(p)", "∠(f(q⊕p)−f(q), f(q)) [°]"] for d in at.dataframe)
    at.radio(key="det_detector").set_value("l2").run()
    assert _frame_with(at, "HotpotQA").iloc[0]["PPI"] == "0.05 (0.90)"
    for key in ("t8_folder", "det_folder", "t34_path"):
        at.text_input(key=key).set_value(str(tmp_path / "empty")).run()
    assert not at.exception and sum("empty" in i.value for i in at.info) >= 3


def test_sweep_can_be_stopped():
    from engine.config import SweepConfig
    from engine.jobs import Job
    from engine.sweep import run_sweep

    cfg = SweepConfig(retrievers=("minilm", "bm25"), targets=("pii", "diagnosis"), limit=3)
    job = Job("t", lambda progress, stop: run_sweep(cfg, progress=progress, stop=stop))
    job.stop()  # asked to stop before the first cell
    job.start().wait(120)
    assert job.result is not None and not job.result.complete and job.result.cells.empty


def test_lab_runs_are_saved_and_can_be_compared_and_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_PLAYGROUND_CACHE", str(tmp_path))  # an empty run folder, same embeddings semantics
    from engine.embedders import cache as cache_mod

    cache_mod._shared.clear()
    at = prepare_lab(app(), limit=3)
    for _ in range(3):
        at.button(key="btn_step").click().run()
    at2 = prepare_lab(app(), limit=3, target="diagnosis")
    at2.button(key="btn_step").click().run()  # a second, unfinished run
    at.switch_page("pages/runs.py").run()
    assert not at.exception
    saved = at.dataframe[0].value
    assert len(saved) == 2 and saved["finished"].sum() == 1
    ms = at.multiselect[0]
    ms.set_value(list(saved["run_id"])).run()
    table = at.dataframe[1].value
    assert table.shape[1] == 2 and "ASR@2" in table.index
    assert len(at.get("download_button")) == 2
    cache_mod._shared.clear()


def test_html_report_escapes_corpus_text():
    from engine.report import run_report_html

    run = PoisoningRun(
        PoisonConfig(
            limit=2, detectors=("mahalanobis",), target="custom", target_text="<script>alert('x')</script> call now"
        )
    )
    run.run()
    page = run_report_html(run.events)
    assert "<script>alert('x')</script>" not in page and "&lt;script&gt;" in page
    assert page.count("<h2>") >= 5 and "ASR@2" in page


def test_a_select_box_that_edits_its_own_setting_keeps_every_pick():
    """The labs' attack select boxes and the pipeline's retriever and corpus source follow a session setting that
    they also edit; unkeyed, a select box whose index followed its own setting got a new identity on the next run and
    the browser dropped every second pick. Keyed and seeded (components.state.follow), each pick holds."""
    at = AppTest.from_file(str(REPO / "pages/poisoning_lab.py"), default_timeout=120)
    at.run()
    for pick in ("jamming", "universal", "trigger"):
        next(s for s in at.selectbox if s.label == "Attack").set_value(pick).run()
        assert at.session_state["lab"]["attack"] == pick and not at.exception
    at = AppTest.from_file(str(REPO / "pages/pipeline.py"), default_timeout=120)
    at.run()
    for pick in ("bm25", "minilm", "bm25"):
        next(s for s in at.selectbox if s.label == "Retriever").set_value(pick).run()
        assert at.session_state["pipeline"]["retriever"] == pick and not at.exception
    for size in (256, 384, 128):
        next(w for w in at.number_input if w.label == "Chunk size (tokens)").set_value(size).run()
        assert at.session_state["pipeline"]["chunk_size"] == size and not at.exception
    for k in (5, 2, 7):
        next(w for w in at.number_input if w.label == "Top-K").set_value(k).run()
        assert at.session_state["pipeline"]["top_k"] == k and not at.exception
    for corpus in ("clinic_records", "clinic_handbook", "clinic_records"):
        next(s for s in at.selectbox if s.label == "Corpus").set_value(corpus).run()
        assert at.session_state["pipeline"]["corpus"] == corpus and not at.exception
    # a bundled corpus other than the first, set from outside (a preset): the page shows it and keeps it
    at.session_state["pipeline"] = {**at.session_state["pipeline"], "corpus": "clinic_records_heldout"}
    at.run()
    assert next(s for s in at.selectbox if s.label == "Corpus").value == "clinic_records_heldout"
    assert at.session_state["pipeline"]["corpus"] == "clinic_records_heldout"
