"""AppTest: the Audit page — a target's form by groups, Test connection (an answer, or the line that failed),
an audit run in the background with its report, keys typed in the page that reach the target and no file."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from helpers import ScriptedServer

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def audits(tmp_path, monkeypatch):
    """The page's audits are written to a temporary folder."""
    from engine import saved

    monkeypatch.setattr(saved, "audits_dir", lambda owner=None: tmp_path)
    return tmp_path


def page() -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/audit.py").run()
    assert not at.exception, at.exception
    return at


def field(at: AppTest, label: str):
    return next(
        w
        for kind in ("text_input", "text_area", "number_input", "checkbox", "selectbox")
        for w in getattr(at, kind)
        if w.label == label
    )


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def wait(at: AppTest, deadline_s: float, seen: list[str] | None = None) -> None:
    """Rerun the page until the audit ends; ``seen`` collects what its live view showed while it ran (markdown,
    captions and texts)."""
    end = time.time() + deadline_s
    while at.session_state["audit_job"].running:
        assert time.time() < end, "the audit did not finish in time"
        time.sleep(1 if seen is not None else 2)
        at.run()
        assert not at.exception, at.exception
        if seen is not None and at.session_state["audit_job"].running:
            seen += [m.value for m in at.markdown] + [c.value for c in at.caption] + [t.value for t in at.text]
    at.run()
    assert not at.exception, at.exception


def test_the_page_offers_every_target_with_its_fields_in_groups():
    at = page()
    kinds = at.selectbox(key="audit_kind")
    assert {o.split(" — ")[0] for o in kinds.options} >= {"pipeline", "http", "openai-chat", "python", "chroma"}
    assert kinds.value == "pipeline" and at.selectbox(key="audit_battery").value == "audit-quick"
    kinds.set_value("http").run()
    labels = {w.label for w in at.text_input} | {w.label for w in at.text_area}
    assert {"URL", "Body", "Answer path", "Contexts path", "Headers", "Ingest URL", "Delete URL"} <= labels
    assert {e.label for e in at.expander} >= {"Connection", "Knowledge-base write surface (poisoning)"}


def test_test_connection_shows_the_parsed_answer_or_the_path_that_failed(rag_service):
    at = page()
    at.selectbox(key="audit_kind").set_value("http").run()
    field(at, "URL").set_value(f"{rag_service}/query")
    field(at, "Contexts path").set_value("sources")
    button(at, "Test connection").click().run()
    assert not at.exception and at.success and "answered in" in at.success[0].value
    sent, answer = at.text[0].value, at.text[1].value
    assert sent.startswith(f"POST {rag_service}/query") and '"question": ' in sent, "the request it sent"
    assert answer.strip(), "the parsed answer is shown"
    assert at.dataframe, "the reported contexts are listed"
    field(at, "Answer path").set_value("data.answer")
    button(at, "Test connection").click().run()
    assert "key 'data' not found" in at.error[0].value and "the response began" in at.error[0].value


def test_an_audit_runs_in_the_background_and_shows_its_report(audits, audit_preset):
    at = page()
    field(at, "Preset").set_value(audit_preset)
    at.multiselect[0].set_value(["zeng"])
    field(at, "Queries per extraction attack").set_value(3)
    field(at, "Canaries (share of chunks)").set_value(1.0)
    at.multiselect[1].set_value([])
    button(at, "Run audit").click().run()
    assert not at.exception, at.exception
    seen: list[str] = []
    wait(at, 600, seen)
    # while it ran: the cell under way, then its latest round's question and answer and what the answer gave away
    assert any(s.startswith("**Cell 1 of 1: extraction:zeng**") for s in seen), seen
    # before the cell's first answer the box names the step under way (loading a model, indexing the KB, the round)
    steps = [s.split(" · ", 1)[1] for s in seen if s.startswith("**Cell 1 of 1") and s.endswith("(no answer yet)")]
    assert any(not s.startswith("preparing") for s in steps), seen
    assert "The attack's question" in seen and any(s.startswith("chunks leaked by this answer: ") for s in seen), seen
    assert any("Report" == h.value for h in at.subheader)
    assert any("cell" in df.value.columns and "extraction:zeng" in df.value["cell"].tolist() for df in at.dataframe)
    assert {b.label for b in at.get("download_button")} >= {
        "Download report.html",
        "Download report.json",
        "Download report.junit.xml",
        "Download audit.yaml",
    }
    again = next(c.value for c in at.code if "--preset audit.yaml" in c.value)
    assert "--fail-on" in again, "the command that runs it again, in CI"
    folder = next(audits.iterdir())
    report = json.loads((folder / "report.json").read_text())
    assert report["status"] == "complete"
    zeng = next(f for f in report["findings"] if f["id"] == "extraction:zeng")
    assert zeng["metrics"]["canaries_leaked"]["n"] == zeng["metrics"]["crr"]["n"], "every chunk got its canary"


def test_a_key_typed_in_the_page_reaches_the_target_and_no_file(audits):
    key = "sk-page-" + "5" * 28

    def echo(method, path, body, headers):
        return 200, {}, json.dumps({"answer": "ok " + headers.get("Authorization", ""), "sources": []}).encode(), 0

    s = ScriptedServer(echo)
    try:
        at = page()
        at.selectbox(key="audit_kind").set_value("http").run()
        at.text_input(key="audit_secret_name").set_value("PAGE_KEY")
        at.text_input(key="audit_secret_value").set_value(key)
        button(at, "Keep").click().run()
        assert at.session_state["audit_secrets"] == {"PAGE_KEY": key}
        field(at, "URL").set_value(s.base + "/query")
        field(at, "Headers").set_value('{"Authorization": "Bearer ${PAGE_KEY}"}')
        at.multiselect[0].set_value(["zeng"])
        field(at, "Queries per extraction attack").set_value(1)
        at.multiselect[1].set_value([])
        button(at, "Run audit").click().run()
        wait(at, 300)
        assert any(key in r[3].get("Authorization", "") for r in s.requests)
        for f in audits.rglob("*"):
            if f.is_file():
                assert key not in f.read_text(errors="replace"), f
        assert "${PAGE_KEY}" in (next(audits.iterdir()) / "audit.yaml").read_text()
    finally:
        s.close()


def test_bad_target_fields_are_one_clear_line(audits):
    at = page()
    at.selectbox(key="audit_kind").set_value("http").run()
    field(at, "Headers").set_value('{"Authorization": "Bearer sk-literal-123456"}')
    button(at, "Run audit").click().run()
    assert not at.exception and "literal credential" in at.error[0].value
    field(at, "Headers").set_value("{not json")
    button(at, "Test connection").click().run()
    assert "headers: not valid JSON: '{not json'" in at.error[0].value
    assert list(audits.iterdir()) == [], "nothing was started"


def test_a_stopped_audit_fails_its_gate_and_run_audit_resumes_it_in_the_same_folder(audits, audit_preset):
    at = page()
    assert field(at, "Gate: fail on").value == "severity>=high", "an audit in the app decides pass or fail"
    field(at, "Preset").set_value(audit_preset)
    at.multiselect[0].set_value(["zeng"])
    field(at, "Queries per extraction attack").set_value(2)
    at.multiselect[1].set_value([])
    field(at, "Gate: fail on").set_value("crr>0.99")
    button(at, "Run audit").click().run()
    at.session_state["audit_job"].stop()  # the Stop button's action, at once: before or inside the first cell
    wait(at, 300)
    assert any(w.value.startswith("Stopped ") and "to continue where it stopped" in w.value for w in at.warning), [
        w.value for w in at.warning
    ]
    assert not any("The audit failed" in e.value for e in at.error), "a stop the user asked for is not a failure"
    assert any(w.value.startswith("Incomplete: 0 of 1 cells finished") for w in at.warning)
    assert any("Gate failed" in e.value and "not finished" in e.value for e in at.error), "never passes cut short"
    (folder,) = list(audits.iterdir())
    report = json.loads((folder / "report.json").read_text())
    assert report["gate"]["passed"] is False and report["status"] == "incomplete"
    button(at, "Run audit").click().run()  # the same settings: it continues in the same folder
    wait(at, 600)
    assert list(audits.iterdir()) == [folder]
    report = json.loads((folder / "report.json").read_text())
    assert report["status"] == "complete" and report["gate"]["passed"] is True
    assert any(s.value.replace("\\", "").startswith("Gate passed (crr>0.99)") for s in at.success)
    field(at, "Gate: fail on").set_value("crr>>1")  # a typo on the next run: one line, the report stays in view
    button(at, "Run audit").click().run()
    assert at.error[0].value.startswith("Gate: fail on: cannot read") and any(h.value == "Report" for h in at.subheader)


def test_the_target_and_what_was_typed_survive_a_visit_to_another_page(audits):
    at = page()
    at.selectbox(key="audit_kind").set_value("http").run()
    field(at, "Headers").set_value('{"threshold": 0.5,')
    field(at, "Gate: fail on").set_value("severity>=hihg")
    button(at, "Run audit").click().run()
    assert not at.exception and "headers: not valid JSON" in at.error[0].value
    at.switch_page("pages/home.py").run()
    at.switch_page("pages/audit.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="audit_kind").value == "http"
    assert field(at, "Headers").value == '{"threshold": 0.5,', "the invalid JSON comes back as typed"
    assert field(at, "Gate: fail on").value == "severity>=hihg"
    field(at, "Headers").set_value("")
    button(at, "Run audit").click().run()
    assert at.error[0].value.startswith("Gate: fail on: severity must be one of"), "named by its label"
    assert list(audits.iterdir()) == [], "nothing was started"


def test_a_shared_deployment_offers_no_target_that_reads_the_servers_files(audits, monkeypatch):
    """With RAG_PLAYGROUND_SHARED=1 a web user cannot make the server import code (python target), open its
    folders (chroma target, a knowledge base or preset by path) — the folder boxes of the Sweeps page are choices."""
    monkeypatch.setenv("RAG_PLAYGROUND_SHARED", "1")
    at = page()
    kinds = {o.split(" — ")[0] for o in at.selectbox(key="audit_kind").options}
    assert "python" not in kinds and "chroma" not in kinds and {"http", "pipeline"} <= kinds
    field(at, "Reference knowledge base").set_value("/etc")
    button(at, "Run audit").click().run()
    assert "by name only" in at.error[0].value and list(audits.iterdir()) == []
    field(at, "Reference knowledge base").set_value("")
    at.selectbox(key="audit_kind").set_value("http").run()
    field(at, "URL").set_value("http://127.0.0.1:9/query")
    field(at, "Reference knowledge base").set_value("")
    field(at, "Canary codes").set_value("/etc/passwd")
    button(at, "Run audit").click().run()
    assert "not a file" in at.error[0].value and list(audits.iterdir()) == []
    at.selectbox(key="audit_kind").set_value("pipeline").run()
    field(at, "Preset").set_value("/tmp/some.yaml")
    button(at, "Test connection").click().run()
    assert "bundled preset by name" in at.error[0].value
    at.switch_page("pages/sweeps.py").run()
    assert not at.exception
    assert not [t for t in at.text_input if t.key in ("t1_folder", "t8_folder", "det_folder", "t34_path")]


def test_a_findings_reproduce_command_wraps_between_options_and_still_runs():
    """The command under a finding: one option a line (a narrow column wraps between options, never inside
    ``--only``), and the shell reads it as the one-line command (a path with a space stays quoted)."""
    import shlex

    from components.text import shell_lines

    cmd = (
        "python -m engine audit --preset '/tmp/my audit/audit.yaml' --only extraction:zeng "
        "--out /tmp/a/repro-extraction-zeng"
    )
    text = shell_lines(cmd)
    assert text.splitlines() == [
        "python -m engine audit \\",
        "  --preset '/tmp/my audit/audit.yaml' \\",
        "  --only extraction:zeng \\",
        "  --out /tmp/a/repro-extraction-zeng",
    ]
    assert shlex.split(text.replace("\\\n", " ")) == shlex.split(cmd)
    assert shell_lines("echo 'unclosed") == "echo 'unclosed"
