"""Extraction lab through Streamlit's AppTest, with the real small offline model (SmolLM2-135M)."""

import gc
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.config import ExtractionConfig
from engine.events import read_jsonl
from engine.runs.extraction import ExtractionRun

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-test-SECRET-12345"
# lean settings: Zeng (no attacker LLM), SmolLM2, 2 rounds, top-2, 16 tokens per answer
LEAN = {
    "Rounds (query budget)": 2,
    "Top-k": 2,
    "Tokens per answer (minimum)": 16,
    "Answer budget": "fixed",
    "Generator": "smollm2-135m",
}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache (runs, embeddings, store) per test: set BEFORE any AppTest is created."""
    d = tmp_path / "cache"
    monkeypatch.setenv("RAG_PLAYGROUND_CACHE", str(d))
    return d


def app() -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
    at.run()
    assert not at.exception
    at.switch_page("pages/extraction_lab.py").run()
    assert not at.exception, at.exception
    return at


def setup(at: AppTest, attack: str = "zeng", **fields) -> AppTest:
    next(s for s in at.selectbox if s.label == "Attack").set_value(attack).run()
    values = {**LEAN, **fields}
    # the generator first: the fields under it follow it (litellm's model and server only for litellm)
    next(s for s in at.selectbox if s.label == "Generator").set_value(values.pop("Generator")).run()
    for label, value in values.items():
        widgets = [w for w in (*at.number_input, *at.text_input, *at.selectbox) if w.label == label]
        assert widgets, f"no widget {label!r}"
        widgets[0].set_value(value)
    return at


def prepare(at: AppTest) -> AppTest:
    next(b for b in at.button if b.label == "Prepare attack").click().run()
    assert not at.exception, at.exception
    return at


def step(at: AppTest, n: int = 1) -> AppTest:
    for _ in range(n):
        at.button(key="btn_extract_step").click().run()
        assert not at.exception, at.exception
    return at


def test_page_renders_standalone():
    at = AppTest.from_file(str(REPO / "pages/extraction_lab.py"), default_timeout=120)
    at.run()
    assert not at.exception
    assert any(e.label == "Attack setup" for e in at.expander)
    # the fields the lab has no widget of its own for are made from ExtractionConfig's declaration
    crr = next(w for w in at.number_input if w.label == "CRR threshold τ")
    assert crr.value == 0.5 and "(allowed: from 0.0 to 1.0)" in crr.help  # bounds in the help: see params_form
    assert next(w for w in at.selectbox if w.label == "Retriever").value == "minilm"


def test_the_generator_fields_follow_the_generator():
    """A provider's model name and server only for litellm; the local model's parameters only for a local one."""
    at = AppTest.from_file(str(REPO / "pages/extraction_lab.py"), default_timeout=120)
    at.run()
    labels = lambda: {w.label for w in (*at.text_input, *at.expander)}  # noqa: E731
    assert "Local generator parameters" in labels() and "litellm model" not in labels()
    next(s for s in at.selectbox if s.label == "Generator").set_value("litellm").run()
    assert not at.exception
    assert {"litellm model", "API base (optional)"} <= labels() and "Local generator parameters" not in labels()
    assert next(w for w in at.text_input if w.label == "litellm model").value == "openai/gpt-4o-mini"
    # picked back and forth, each pick holds (a select box whose index followed its own setting dropped every
    # second pick in the browser); a loaded preset sets both select boxes
    for pick in ("smollm2-135m", "litellm", "qwen2.5-0.5b"):
        next(s for s in at.selectbox if s.label == "Generator").set_value(pick).run()
        assert at.session_state["extract"]["generator"] == pick
    next(s for s in at.selectbox if s.label == "Attack").set_value("zeng").run()
    next(s for s in at.selectbox if s.label == "Generator").set_value("litellm").run()
    next(b for b in at.button if b.label == "Load preset").click().run()
    chosen = {s.label: s.value for s in at.selectbox if s.label in ("Attack", "Generator")}
    assert chosen == {"Attack": "rag-thief", "Generator": "qwen2.5-0.5b"}, chosen


def test_live_crr_equals_the_engine(cache):
    at = prepare(setup(app()))
    assert not at.error, [e.value for e in at.error]
    run = at.session_state["extract_run"]
    assert run.rounds_done == 0 and {"Step", "Play", "Reset"} <= {b.label for b in at.button}
    step(at, 2)
    assert run.done and run.finished
    shown = {m.label: m.value for m in at.metric}
    assert len(at.get("plotly_chart")) >= 2  # coverage map + leakage curves
    assert any("2/2 rounds" in c.value for c in at.caption)
    cfg = ExtractionConfig.from_dict(
        {
            "kb": "clinic_records",
            "attack": "zeng",
            "rounds": 2,
            "top_k": 2,
            "max_tokens": 16,
            "answer_budget": "fixed",
            "generator": "local",
            "generator_params": {"model": "smollm2-135m", "max_tokens": 16},
            "attacker_llm": "",
            "seed": 0,
            "data_dir": run.config.data_dir,
            "attack_params": dict(run.config.attack_params or {}),
        }
    )
    assert cfg == run.config
    headless = ExtractionRun(cfg)
    headless.run()
    s = headless.summary()
    assert float(shown["CRR"]) == pytest.approx(s["crr"], abs=1e-4)
    assert float(shown["Reached the context"]) == pytest.approx(s["retrieved_coverage"], abs=1e-4)
    assert float(shown["Reproduced of that"]) == pytest.approx(s["ee_generation"], abs=1e-2)
    # what the run is, in words; and the 16-token budget is shown as capping what the answer could copy
    assert any("zeng vs smollm2-135m" in c.value and "answers capped at 16 tokens" in c.value for c in at.caption)
    assert any("the budget caps this round" in w.value for w in at.warning)
    assert int(shown["ROUGE contexts"]) == s["rouge_contexts"]
    assert shown["PII leaked"] == f"{s['pii_leaked']} / {s['pii_total']}"


def test_the_tenant_demo_shows_whose_chunks_came_back(cache):
    """The tenant-isolation preset in the lab: each retrieved chunk's tenant beside it, the run's cross-tenant
    line, and the configuration sentence naming the filter."""
    at = app()
    at.selectbox(key="extract_preset").set_value("tenant-isolation-demo").run()
    at.button(key="btn_extract_preset").click().run()
    setup(at, "rag-thief", **{"Rounds (query budget)": 1, "Canaries (share of chunks)": 0.1})
    step(prepare(at))
    run = at.session_state["extract_run"]
    assert run.config.tenants == 4 and run.config.tenant_filter == "none" and run.done
    retrieved = next(d.value for d in at.dataframe if "tenant" in d.value.columns)
    assert list(retrieved.columns[:2]) == ["chunk", "tenant"]
    owners = run.tenancy.owners
    assert list(retrieved["tenant"]) == [
        "🟢 own" if owners[c] == "tenant-1" else f"🔴 {owners[c]}" for c in retrieved["chunk"]
    ]
    # the canaries planted are counted in the run's headline, leaked or not (a hit is proof: red)
    s = run.summary()
    assert s["canaries_planted"] > 0
    line = f"Canaries: {s['canaries_leaked']} of {s['canaries_planted']} planted leaked"
    assert any(line in b.value for b in (*at.error, *at.info)), [b.value for b in (*at.error, *at.info)]
    assert any("4 tenants, querying as tenant-1, tenant filter: none (not at all)" in c.value for c in at.caption)
    crossed = run.summary()["tenancy"]["cross_tenant_chunks"] > 0
    box = at.error if crossed else at.success
    assert any("Querying as tenant-1" in b.value for b in box)


def test_the_tenant_demo_filtered_after_the_top_k_shows_what_was_cut(cache):
    """Filter after the top-K: the round view says how many of the top-K came back, and the cut chunks are listed
    with their tenant and 'cut' for a score (no 'top-0', no 'None')."""
    at = app()
    at.selectbox(key="extract_preset").set_value("tenant-isolation-demo").run()
    at.button(key="btn_extract_preset").click().run()
    setup(at, "rag-thief", **{"Rounds (query budget)": 2})
    next(s for s in at.selectbox if s.label.lower().startswith("tenant filter")).set_value("after")
    step(prepare(at), 2)
    run = at.session_state["extract_run"]
    assert run.config.tenant_filter == "after" and run.done
    retrieved = next(d.value for d in at.dataframe if "tenant" in d.value.columns)
    assert "None" not in retrieved["score"].astype(str).tolist()
    cut = retrieved[retrieved["score"] == "cut"]
    assert not cut["in context"].any() and all("own" not in t for t in cut["tenant"])
    heads = [m.value for m in at.markdown if m.value.startswith("**Retrieved")]
    assert heads and "top-0" not in heads[0]
    assert run.summary()["tenancy"]["tenant_dropped_rounds"] > 0, "the demo's queries reach other tenants"
    if len(cut):  # the round shown (the last) was cut
        assert f"of the top-{len(retrieved)}**" in heads[0], heads


def _files_containing(roots, needle: bytes) -> list[str]:
    hits = []
    for root in roots:
        for p in Path(root).rglob("*"):
            if p.is_file():
                try:
                    if needle in p.read_bytes():
                        hits.append(str(p))
                except OSError:
                    pass
    return hits


def test_api_key_is_never_written(cache, llama_server):
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
    at.run()
    # the key box sits in the Extraction lab's sidebar only (tests/browser/test_extraction_flow.py sees it there;
    # AppTest runs a switched-to page without app.py's sidebar); what it stores is the session's key
    assert not [w for w in at.sidebar.text_input if w.key == "llm_api_key_box"], "not on Home"
    at.session_state["llm_api_key"] = KEY
    at.switch_page("pages/extraction_lab.py").run()
    # 1) a real OpenAI-compatible server (llama.cpp serving SmolLM2 as "smol")
    prepare(
        setup(
            at,
            **{
                "Generator": "litellm",
                "litellm model": "openai/smol",
                "API base (optional)": llama_server,
                "Rounds (query budget)": 1,
            },
        )
    )
    assert not at.error, [e.value for e in at.error]
    run = at.session_state["extract_run"]
    assert run.config.generator == "litellm" and run.system.generator._api_key == KEY  # the key was used
    assert KEY not in repr(run.system.generator)
    step(at)
    assert run.done and not at.error, [e.value for e in at.error]
    # 2) a closed loopback port: the round fails with a clear message (and a failed run on disk)
    from helpers import free_port

    setup(
        at,
        **{
            "Generator": "litellm",
            "API base (optional)": f"http://127.0.0.1:{free_port()}/v1",
            "Rounds (query budget)": 1,
        },
    )
    prepare(at)
    step(at)
    assert any("the round failed" in e.value for e in at.error), [e.value for e in at.error]
    assert at.session_state["extract_run"].rounds_done == 0
    # the key is in no file the app wrote (runs, events, manifests, caches) nor in the test artifacts
    assert len(list((cache / "runs").glob("*/events.jsonl"))) == 2
    assert _files_containing([cache, REPO / "tests" / "artifacts"], KEY.encode()) == []
    assert at.session_state["llm_api_key"] == KEY  # only in the session's memory


def test_reopen_after_restart_and_resume(cache):
    first = prepare(setup(app()))
    step(first)
    run_id = first.session_state["extract_run"].run_id
    shown = {m.label: m.value for m in first.metric}
    del first  # "restart": a fresh session knows nothing of the first one
    gc.collect()  # and a restarted process holds none of its objects (its run's folder lock included)
    at = app()
    choice = next(s for s in at.selectbox if s.label == "Reopen a saved run")
    assert any(run_id in o and "unfinished" in o for o in choice.options)  # listed, marked unfinished
    choice.set_value(str(cache / "runs" / run_id)).run()
    at.button(key="btn_extract_reopen").click().run()
    assert not at.exception and at.session_state["extract_view"]
    assert any("1/2 rounds · unfinished" in m.value for m in at.markdown)
    assert {m.label: m.value for m in at.metric} == shown
    at.button(key="btn_extract_resume").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    run = at.session_state["extract_run"]
    assert run.run_id == run_id and run.rounds_done == 1
    step(at)
    assert run.done and run.finished
    events = read_jsonl(cache / "runs" / run_id / "events.jsonl")
    assert [e.kind for e in events].count("round_ended") == 2 and any(e.kind == "run_resumed" for e in events)


def test_while_local_generation_is_being_built_the_page_says_so(tmp_path, monkeypatch):
    """scripts/app.sh builds llama.cpp in the background on a fresh machine: its status file drives the notice."""
    import time

    from engine.generators import runtime

    status = tmp_path / "llama-status"
    status.write_text(f"state=building\nstarted={time.time() - 130:.0f}\nstep=compiling llama.cpp (avx512 build)\n")
    monkeypatch.setattr(runtime, "STATUS_FILE", status)
    at = AppTest.from_file(str(REPO / "pages/extraction_lab.py"), default_timeout=120)
    at.run()
    assert not at.exception
    note = " ".join(i.value for i in at.info)
    assert "being prepared in the background" in note and "compiling llama.cpp" in note and "2 of about 7" in note
    status.write_text("state=failed\nstarted=0\nstep=the build failed (exit 1): see .venv/llama-build.log\n")
    at.run()
    assert any("llama-build.log" in e.value for e in at.error)
    status.write_text("state=ready\nstep=local generation is installed\n")
    at.run()
    notices = [e.value for e in (*at.info, *at.error) if "local generation" in e.value]
    assert not notices and not at.error  # installed: no notice at all


def test_a_click_while_a_round_streams_is_answered_after_the_round():
    """Streamlit stops a script at its next drawing call when the user clicks (Step again, Pause): the live
    view's drawing holds that stop, draws nothing more, and raises it once the round is done (the engine's
    side, a round cut short is rewound, is tested in tests/engine/test_extraction.py)."""
    from streamlit.runtime.scriptrunner_utils.exceptions import RerunException, StopException

    from components.stepper import HeldRerun

    draw, drawn = HeldRerun(), []

    def clicked():
        raise RerunException(None)

    def stopped():
        raise StopException()

    draw(lambda: drawn.append("query"))
    draw(clicked)
    draw(lambda: drawn.append("answer"))  # after the click: the round goes on, the view stops drawing
    draw(stopped)
    assert drawn == ["query"]
    with pytest.raises(RerunException):
        draw.release()  # the first held: the rerun the click asked for
    draw.release()  # nothing held any more
    with pytest.raises(ValueError):
        draw(lambda: int("x"))  # a real error is never held


def _sidebar_of(page: str):
    def script(page: str):
        import streamlit as st

        from components.sidebar import render_sidebar

        st.session_state.setdefault(
            "pipeline", {"corpus": "clinic_handbook", "chunk_size": 512, "chunk_overlap": 64, "retriever": "minilm"}
        )
        render_sidebar(page)

    at = AppTest.from_function(script, kwargs={"page": page})
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_sidebar_shows_the_pipeline_only_where_a_page_uses_it():
    lab = _sidebar_of("Extraction lab")
    blocks = [m.value for m in lab.sidebar.markdown]
    assert "**Extraction**" in blocks and "**Pipeline**" not in blocks, "the lab has a knowledge base of its own"
    assert [w for w in lab.sidebar.text_input if w.key == "llm_api_key_box"], "its generator's key box"
    pipe = _sidebar_of("Pipeline")
    blocks = [m.value for m in pipe.sidebar.markdown]
    assert {"**Pipeline**", "**Poisoning run**", "**Extraction**"} <= set(blocks)
    assert "clinic_handbook" in " ".join(c.value for c in pipe.sidebar.caption)
    assert not [w for w in pipe.sidebar.text_input if w.key == "llm_api_key_box"]
    assert not _sidebar_of("Audit your RAG").sidebar.markdown, "no lab block on the other pages"


def _internals_app():
    import components.extraction as ce

    long_chunk = "Patient record 0042: " + "a long remembered chunk the attacker holds, " * 12 + "END-OF-CHUNK"
    state = {
        "short_term": [{"text": "next query *one*"}],
        "long_term": [{"text": long_chunk}] + [{"text": f"memory {i}"} for i in range(ce.INTERNAL_ITEMS + 4)],
        "anchors": [{"text": "anchor text", "direction": "forward"}],
        "reflections": 2,
        "current": {"text": "what comes after *this*", "direction": "forward", "from": "x"},
        "dropped_anchors": 3,
    }
    real = ce.attacker_state
    ce.attacker_state = lambda events: ("rag-thief", 3, state)  # AppTest runs in this process: put it back
    try:
        ce.render_internals([], [], "k")
    finally:
        ce.attacker_state = real


def test_the_attacker_internals_show_each_item_whole_and_escaped():
    """The attacker's lists are drawn as wrapped items in scrolling boxes: a table clipped every chunk to its first
    line; attacker text is escaped (no markdown from the corpus), and a long memory says how many are left out."""
    at = AppTest.from_function(_internals_app).run()
    assert not at.exception
    texts = [m.value for m in at.markdown]
    assert "**Long-term memory** (55)" in texts
    assert any(t.startswith("1. Patient record 0042") and t.endswith("END-OF-CHUNK") for t in texts), texts[:4]
    assert any("next query \\*one\\*" in t for t in texts)
    assert any("*forward* · anchor text" in t for t in texts)
    assert any("… and 5 more" in c.value for c in at.caption)
    assert "**Anchor of round 3's query** (forward continuation): what comes after \\*this\\*" in texts
    assert any("Anchors dropped (their chunk's other direction gave nothing new): 3" in c.value for c in at.caption)
