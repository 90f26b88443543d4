"""Saved runs belong to the browser that made them on a shared deployment; damaged run files never show a
traceback. Real AppTest sessions over a fresh cache."""

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.config import ExtractionConfig
from engine.runs.extraction import ExtractionRun

REPO = Path(__file__).resolve().parents[2]
SMALL = {
    "attack": "zeng",
    "rounds": 2,
    "top_k": 2,
    "max_tokens": 16,
    "answer_budget": "fixed",
    "data_dir": "",
    "attacker_llm": "",
    "generator_params": {"model": "smollm2-135m"},
}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("RAG_PLAYGROUND_CACHE", str(d))
    return d


def session(page: str, owner_token: str | None = None) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    if owner_token:
        at.query_params["owner"] = owner_token
    at.run()
    assert not at.exception
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_on_a_shared_deployment_a_session_sees_only_its_own_runs(cache, monkeypatch):
    monkeypatch.setenv("RAG_PLAYGROUND_SHARED", "1")
    a = session("pages/extraction_lab.py")
    token = a.query_params["owner"]
    assert isinstance(token, str) and len(token) >= 16  # the owner lives in the address
    # session A runs an attack over an uploaded document with a secret in it
    from engine.corpora import corpus_from_documents
    from engine.types import Document
    import hashlib
    from engine.saved import runs_dir

    owner_a = hashlib.sha256(token.encode()).hexdigest()[:24]
    secret = "Private upload: patient Zelda Quartz, phone 555-0199-4242."
    corpus = corpus_from_documents("upload", [Document(f"u{i}", f"{secret} Note {i}.") for i in range(3)])
    run = ExtractionRun(ExtractionConfig.from_dict({**SMALL, "kb": "upload"}), out_dir=runs_dir(owner_a), corpus=corpus)
    run.run()
    a.run()
    assert any(run.run_id in str(o) for s in a.selectbox if s.label == "Reopen a saved run" for o in s.options)
    # session B (another browser) lists nothing, on every page that lists runs
    b = session("pages/extraction_lab.py")
    assert b.query_params["owner"] != token
    reopen = next(s for s in b.selectbox if s.label == "Reopen a saved run")
    assert list(reopen.options) == []
    b.switch_page("pages/runs.py").run()
    assert any("No saved runs yet" in i.value for i in b.info)
    # the same browser after a refresh (same address) still has its run
    again = session("pages/runs.py", owner_token=token)
    assert not any("No saved runs yet" in i.value for i in again.info)
    # nothing of A's upload sits where another owner's pages read
    for f in (cache / "runs").glob("*/kb.jsonl"):
        assert secret not in f.read_text()


def test_single_user_mode_lists_every_run(cache, monkeypatch):
    monkeypatch.delenv("RAG_PLAYGROUND_SHARED", raising=False)
    from engine.saved import runs_dir

    run = ExtractionRun(ExtractionConfig.from_dict(SMALL), out_dir=runs_dir())
    run.run()
    b = session("pages/extraction_lab.py")
    assert "owner" not in b.query_params
    reopen = next(s for s in b.selectbox if s.label == "Reopen a saved run")
    assert any(run.run_id in str(o) for o in reopen.options)


def test_a_torn_or_damaged_run_file_reopens_without_a_traceback(cache):
    from engine.saved import runs_dir

    run = ExtractionRun(ExtractionConfig.from_dict(SMALL), out_dir=runs_dir())
    run.run()
    events = run.out_dir / "events.jsonl"
    raw = events.read_bytes()
    events.write_bytes(raw[:-25])  # the crash case: half a last line
    at = session("pages/extraction_lab.py")
    at.session_state["extract_view"] = str(run.out_dir)
    at.run()
    assert not at.exception and not at.error
    assert any("cut off" in c.value and "bytes dropped" in c.value for c in at.caption)
    damaged = Path(str(run.out_dir) + "-damaged")
    shutil.copytree(run.out_dir, damaged)
    lines = raw.splitlines()
    (damaged / "events.jsonl").write_bytes(b"\n".join([lines[0], b'{"kind": "retr', *lines[1:]]) + b"\n")
    for _ in range(2):  # and again on the next visit: still one clear message
        at.session_state["extract_view"] = str(damaged)
        at.run()
        assert not at.exception
        assert any("cannot be shown" in e.value and "line 2 is damaged" in e.value for e in at.error)


def test_an_id_in_a_code_span_shows_literally_whatever_it_holds():
    """Chunk ids, defense names and folder names sit in inline code: no escaping backslash shows (a code span takes
    no escapes) and no Markdown inside comes alive (CommonMark, as Streamlit's renderer reads it)."""
    from markdown_it import MarkdownIt

    from components.text import md_code

    md = MarkdownIt()
    for text, shown in (
        ("rec-0233#c1", "rec-0233#c1"),
        ("a`b", "a`b"),
        ("``x", "``x"),
        ("*not bold* [link](http://e) <b>x</b>", "*not bold* [link](http://e) &lt;b&gt;x&lt;/b&gt;"),
        ("two\nlines", "two lines"),
    ):
        assert md.render(md_code(text)).strip() == f"<p><code>{shown}</code></p>", text


def test_a_plugin_description_shows_its_code_marks_as_code_not_as_backticks():
    """Targets' docstrings mark code the reST way (``/chat/completions``): a select box shows it plain, a Markdown
    line as code — never as four literal backticks (the Audit page's target list did)."""
    from markdown_it import MarkdownIt

    from components.text import doc_markdown, doc_plain
    from engine.targets import TARGETS

    line = TARGETS.describe("openai-chat")
    assert "``" in line and "``" not in doc_plain(line) and "/chat/completions" in doc_plain(line)
    html = MarkdownIt().render(doc_markdown(line))
    assert "<code>/chat/completions</code>" in html and "`" not in html
    assert MarkdownIt().render(doc_markdown("a *b* ``c*d``")).strip() == "<p>a *b* <code>c*d</code></p>"


def test_corpus_text_shows_no_link_emoji_icon_or_colour_of_streamlit_markdown():
    """What Streamlit's renderer would bring alive in attacker text (checked in a real browser: an e-mail address, a
    URL and www. become links, ``:smile:`` an emoji, ``:material/home:`` an icon, ``:red[x]`` coloured text) is
    broken by an invisible word joiner or an escaped colon, or, for a URL, shown as a code span (no link, and it
    copies exactly: no invisible character travels with it); ordinary colons stay as they are."""
    from markdown_it import MarkdownIt

    from components.text import WORD_JOINER, md_escape

    out = md_escape("mail jo@example.com, www.evil.com or https://evil.com :smile: :material/home: :red[x] at 10:30")
    assert f"jo{WORD_JOINER}@example.com" in out and f"www{WORD_JOINER}.evil" in out
    assert "`https://evil.com`" in out and WORD_JOINER not in out.split("`")[1]
    # the app's own error naming a service: the URL whole, its closing colon and the sentence outside the span
    err = md_escape("cannot reach http://127.0.0.1:8000/query?x=a_b: connection refused (see https://x.org/a).")
    assert err == "cannot reach `http://127.0.0.1:8000/query?x=a_b`: connection refused (see `https://x.org/a`)."
    html = MarkdownIt().render(md_escape("a | https://evil.com/*x*_y | [b](https://c.d)"))
    assert "<code>https://evil.com/*x*_y</code>" in html and "<a " not in html and "<em>" not in html
    assert r":smile\:" in out and r":material\/home\:" in out and r"\:red\[x\]" in out
    assert out.endswith("at 10:30")
    assert md_escape("Gate: fail on: cannot read 'x'") == "Gate: fail on: cannot read 'x'"
    assert md_escape("K of ASR@K: 50") == "K of ASR@K: 50"  # not an address
