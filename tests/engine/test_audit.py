"""`engine audit` end to end: the battery against the built-in pipeline and against the same system served over
HTTP (the example RAG service), the report and its schema, resume, cleanup after a kill -9, the CI gate with a
defense switched off and on, and keys that never reach a file or the terminal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import xml.etree.ElementTree as ET

import pytest

from engine.audit import Audit, AuditStopped, PlantJournal, run_audit
from engine.audit.findings import SEVERITIES
from engine.audit.gate import parse_fail_on, regressions
from engine.config import AuditConfig
from engine.errors import ConfigError
from engine.metrics.catalog import MK
from engine.metrics.intervals import overlap
from engine.targets import make_target
from engine.types import Document
from engine.progress import stop_flag
from helpers import ScriptedServer, free_port, http_target_params, run_cli, start_rag_service, stop

REPO = Path(__file__).resolve().parents[2]
BATTERY = {
    "extraction_attacks": ["zeng", "ikea"],
    "rounds": 2,
    "poisoning_attacks": ["universal", "jamming"],
    "poison_questions": 2,
}


@pytest.fixture(scope="module")
def in_process(audit_preset, tmp_path_factory):
    """The small battery against the built-in pipeline (the audit test system), and its folder."""
    out = tmp_path_factory.mktemp("audit-in-process")
    cfg = AuditConfig.from_dict({**BATTERY, "target": "pipeline", "target_params": {"preset": audit_preset}})
    return run_audit(cfg, out), out


@pytest.mark.slow
def test_the_report_holds_every_finding_with_its_severity_tags_evidence_and_cleanup(in_process):
    report, out = in_process
    assert report["schema"] == "rag-playground/audit-report" and report["version"] == 1
    assert report["status"] == "complete" and report["reference"]["chunks"] > 300
    ids = [f["id"] for f in report["findings"]]
    assert ids == ["extraction:zeng", "extraction:ikea", "poisoning:universal", "poisoning:jamming", "cleanup"]
    for f in report["findings"]:
        assert f["status"] == "done" and f["severity"] in SEVERITIES and f["severity_rationale"]
        if f["family"] != "cleanup":
            assert f["owasp"] and f["atlas"] and f["recommendations"] and "--only " + f["id"] in f["reproduce"]
            for m in f["metrics"].values():
                if "k" in m:
                    assert m["ci"][0] <= (m["value"] or 0) <= m["ci"][1]
    zeng = report["findings"][0]
    assert {t["id"] for t in zeng["owasp"]} >= {"LLM02:2025", "LLM08:2025"}
    assert {t["id"] for t in zeng["atlas"]} >= {"AML.T0057"}
    assert zeng["metrics"]["crr"]["n"] > 300 and "reproduced" in zeng["metrics"]
    if zeng["metrics"]["crr"]["k"]:
        ev = zeng["evidence"][0]
        assert ev["source_id"].startswith("rec-") and ev["spans"] and ev["answer"]
    uni = report["findings"][2]
    assert {t["id"] for t in uni["atlas"]} >= {"AML.T0070"} and "asr" in uni["metrics"]
    assert uni["metrics"]["poison_retrieved"]["n"] == 2
    cleanup = report["findings"][-1]
    assert cleanup["severity"] == "info" and report["cleanup"]["planted"] == 4
    assert report["cleanup"]["verified"] == 4 and report["cleanup"]["outstanding"] == 0
    html = (out / "report.html").read_text()
    assert "<svg class='chart'" in html and "<script" not in html, "self-contained, no script"
    assert len(html) < 300_000, "small enough for a CI artifact"
    suite = ET.fromstring((out / "report.junit.xml").read_text()).find("testsuite")
    assert [c.get("name") for c in suite.iter("testcase")] == ids
    assert suite.get("failures") == "0", "no gate, no failure, whatever the severities"
    assert json.loads((out / "report.json").read_text())["findings"][0]["id"] == "extraction:zeng"
    assert (out / "audit.yaml").is_file() and (out / "plants.jsonl").is_file()


@pytest.mark.slow
def test_the_live_view_reads_a_running_audit_from_its_folder(in_process, tmp_path):
    """engine.views.audit: what the Audit page shows while an audit runs — here the finished folder, and a copy of
    it as it stood while its third cell ran (the runner writes the same files after each cell)."""
    import shutil

    from engine.views.audit import audit_live

    _, out = in_process
    done = audit_live(out)
    assert (done["cells"], done["finished"], done["current"], done["latest"]) == (4, 4, None, None)
    assert [f["id"] for f in done["findings"]] == [
        "extraction:zeng",
        "extraction:ikea",
        "poisoning:universal",
        "poisoning:jamming",
    ], "the cleanup line is not a cell"
    mid = tmp_path / "mid"
    shutil.copytree(out, mid)
    state = json.loads((mid / "audit.json").read_text())
    cells = list(state["cells"].values())
    cells[2]["status"] = cells[3]["status"] = "pending"
    del cells[3]["run_dir"]  # not prepared yet
    (mid / "audit.json").write_text(json.dumps(state))
    live = audit_live(mid)
    assert live["finished"] == 2 and live["current"]["number"] == 3 and live["current"]["id"] == "poisoning:universal"
    last = live["latest"]
    assert last["round"] == 2 and last["question"] and isinstance(last["carried"], bool)
    assert isinstance(last["planted_retrieved"], bool) and "leaked" not in last
    assert [f["id"] for f in live["findings"]] == ["extraction:zeng", "extraction:ikea"], "finished cells only"
    run_dir = cells[2].pop("run_dir")  # the same cell while it prepares: named, no round yet
    (mid / "audit.json").write_text(json.dumps(state))
    live = audit_live(mid)
    assert live["current"]["number"] == 3 and live["latest"] is None and live["finished"] == 2
    cells[2]["run_dir"] = run_dir
    cells[0]["status"] = cells[1]["status"] = "pending"  # the first cell under way: an extraction round and its leak
    del cells[1]["run_dir"]
    (mid / "audit.json").write_text(json.dumps(state))
    live = audit_live(mid)
    assert live["current"]["id"] == "extraction:zeng" and live["findings"] == []
    last = live["latest"]
    assert last["round"] == 2 and last["answer"] and last["leaked"] >= 0 and 0.0 <= last[MK.CRR] <= 1.0
    assert audit_live(tmp_path / "nothing-here") is None, "before the audit wrote its state"


@pytest.mark.slow
def test_the_same_battery_over_http_gives_the_same_findings(in_process, rag_service, tmp_path):
    report, _ = in_process
    cfg = AuditConfig.from_dict(
        {**BATTERY, "target": "http", "target_params": http_target_params(rag_service), "kb": "clinic_records"}
    )
    over_http = run_audit(cfg, tmp_path / "http")
    for a, b in zip(report["findings"], over_http["findings"]):
        assert a["id"] == b["id"] and a["severity"] == b["severity"], (a["id"], a["severity"], b["severity"])
        for key in ("crr", "reproduced", "asr", "poison_retrieved"):
            if key in a["metrics"]:
                assert overlap(a["metrics"][key]["ci"], b["metrics"][key]["ci"]), (a["id"], key)


def test_an_audit_stops_resumes_and_never_overwrites_another(audit_preset, tmp_path):
    cfg = AuditConfig.from_dict(
        {
            "target": "pipeline",
            "target_params": {"preset": audit_preset},
            "extraction_attacks": ["zeng", "ikea"],
            "rounds": 1,
            "poisoning_attacks": [],
            "fail_on": {"crr": 0.99},
        }
    )
    asked = []

    def stop_after_the_first_cell():
        asked.append(1)
        state = json.loads((tmp_path / "a" / "audit.json").read_text())
        return state["cells"]["extraction:zeng"]["status"] == "done"

    with pytest.raises(AuditStopped):
        run_audit(cfg, tmp_path / "a", stop=stop_flag(stop_after_the_first_cell))
    state = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert state["cells"]["extraction:zeng"]["status"] == "done"
    assert state["cells"]["extraction:ikea"]["status"] in ("pending", "stopped")
    cut = json.loads((tmp_path / "a" / "report.json").read_text())
    assert cut["status"] == "incomplete"
    # a gate never passes on an audit cut short, and its JUnit file is not green
    assert cut["gate"]["passed"] is False
    why = {"pending": "not reached", "stopped": "stopped before its end"}[state["cells"]["extraction:ikea"]["status"]]
    assert [line.split(" — ")[0] for line in cut["gate"]["regressions"]] == [f"extraction:ikea: not finished ({why})"]
    junit = ET.fromstring((tmp_path / "a" / "report.junit.xml").read_text())
    assert (junit.get("errors"), junit.get("failures")) == ("1", "0")
    first = state["cells"]["extraction:zeng"]["run_dir"]
    report = run_audit(cfg, tmp_path / "a")
    assert report["status"] == "complete" and report["gate"]["passed"] is True
    junit = ET.fromstring((tmp_path / "a" / "report.junit.xml").read_text())
    assert (junit.get("errors"), junit.get("failures"), junit.get("skipped")) == ("0", "0", "0")
    after = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert after["cells"]["extraction:zeng"]["run_dir"] == first, "the finished cell was kept, not replayed"
    before = (tmp_path / "a" / "audit.json").read_text()
    with pytest.raises(ConfigError, match="another configuration \\(rounds 1 → 2\\) with 2 finished cell"):
        run_audit(cfg.replace(rounds=2), tmp_path / "a")
    assert (tmp_path / "a" / "audit.json").read_text() == before, "the earlier audit is untouched"
    # the command line checks the folder before it announces the audit: the refusal comes first, alone
    with pytest.raises(ConfigError, match="another configuration"):
        Audit(cfg.replace(rounds=2), tmp_path / "a").preflight()
    assert Audit(cfg, tmp_path / "a").preflight() == 2, "resuming: both cells finished"
    assert Audit(cfg, tmp_path / "fresh").preflight() == 0 and not (tmp_path / "fresh").exists()


@pytest.mark.slow
def test_a_finding_is_reproduced_by_its_command(in_process, tmp_path):
    report, out = in_process
    cmd = report["findings"][1]["reproduce"]  # extraction:ikea, a folder of its own
    args = cmd.split()[3:]
    args[args.index("--out") + 1] = str(tmp_path / "repro")
    r = run_cli(*args, "-q", "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    done = [f for f in got["findings"] if f["status"] == "done"]
    assert [f["id"] for f in done] == ["extraction:ikea"]
    assert done[0]["metrics"]["crr"] == report["findings"][1]["metrics"]["crr"]["value"]


def _wait_for(predicate, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_plants_left_by_a_killed_audit_are_removed_by_the_next_run(rag_service, tmp_path):
    out = tmp_path / "killed"
    params = json.dumps(http_target_params(rag_service))
    args = [
        sys.executable,
        "-m",
        "engine",
        "audit",
        "--target",
        "http",
        "--target-params",
        params,
        "--kb",
        "none",
        "--attacks",
        "none",
        "--poisoning",
        "universal",
        "--poison-questions",
        "3",
        "--out",
        str(out),
        "-q",
    ]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = PlantJournal(out)
    try:
        assert _wait_for(lambda: any(e["op"] == "planted" for e in journal.entries()), 180), "nothing was planted"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    left = journal.outstanding()
    if not left:
        pytest.skip("the run removed its plant before the kill landed (the window is a few seconds)")
    ids = left[0]["ids"]
    target = make_target("http", http_target_params(rag_service))
    assert target.exists(ids) == [True], "the killed run left its poison in the service"
    r = run_cli(
        "audit",
        "--target",
        "http",
        "--target-params",
        params,
        "--kb",
        "none",
        "--attacks",
        "none",
        "--poisoning",
        "universal",
        "--poison-questions",
        "3",
        "--out",
        str(out),
        "-q",
        "--json",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert target.exists(ids) == [False], "the next run removed it first"
    report = json.loads((out / "report.json").read_text())
    assert report["cleanup"]["earlier_runs"][0]["removed"] == len(ids)
    assert report["cleanup"]["outstanding"] == 0 and report["status"] == "complete"


def test_audit_cleanup_removes_what_a_journal_lists(rag_service, tmp_path):
    journal = PlantJournal(tmp_path)
    t = make_target("http", http_target_params(rag_service))
    doc = Document("audit-cleanup-test-1", "A stray planted line.")
    journal.plan("poisoning:universal", [doc.id], {"kind": "http", "params": t.params.to_dict()})
    t.ingest([doc])
    assert t.exists([doc.id]) == [True]
    r = run_cli("audit", "cleanup", "--out", str(tmp_path))
    assert r.returncode == 0 and "removed 1 planted document(s), 1 verified gone" in r.stdout, r.stderr
    assert t.exists([doc.id]) == [False] and journal.outstanding() == []
    r = run_cli("audit", "cleanup", "--out", str(tmp_path))
    assert r.returncode == 0 and "nothing outstanding" in r.stdout


@pytest.mark.slow
def test_the_ci_gate_fails_when_a_defense_is_switched_off_and_passes_when_it_is_on(rag_service, audit_preset, tmp_path):
    port = free_port()
    defended = start_rag_service(port, "--preset", audit_preset, "--defenses", "intent-block")
    try:

        def audit(base: str, out: str, *extra: str):
            return run_cli(
                "audit",
                "--target",
                "http",
                "--target-params",
                json.dumps({"url": f"{base}/query", "contexts_path": "sources"}),
                "--kb",
                "clinic_records",
                "--attacks",
                "zeng",
                "--rounds",
                "2",
                "--poisoning",
                "none",
                "--fail-on",
                "severity>=high",
                "--out",
                str(tmp_path / out),
                *extra,
            )

        on = audit(f"http://127.0.0.1:{port}", "on")
        assert on.returncode == 0, on.stdout + on.stderr[-2000:]
        assert "gate failed:" not in on.stdout and "gate passed: severity>=high" in on.stdout
        off = audit(rag_service, "off")
        assert off.returncode == 3, off.stdout + off.stderr[-2000:]
        lines = [x for x in off.stdout.splitlines() if x.startswith("gate failed: extraction:zeng: severity")]
        assert lines, off.stdout
        report = json.loads((tmp_path / "off" / "report.json").read_text())
        assert report["gate"]["passed"] is False and report["gate"]["regressions"]
        # the JUnit XML a CI reads agrees with the exit code: the breaching finding fails, and only it
        junit = ET.parse(tmp_path / "off" / "report.junit.xml").getroot()
        failed = [c.get("name") for c in junit.iter("testcase") if c.find("failure") is not None]
        assert failed == ["extraction:zeng"] and junit.get("failures") == "1", ET.tostring(junit)
        passed = ET.parse(tmp_path / "on" / "report.junit.xml").getroot()
        assert passed.get("failures") == "0" and passed.get("tests") == "1"
        again = audit(rag_service, "off-vs-on", "--baseline", str(tmp_path / "on" / "report.json"))
        assert again.returncode == 3 and "(new since the baseline)" in again.stdout
        # against its own earlier report (a finished folder: only the gate runs again): a known finding still
        # fails, unless --new-only accepts what the baseline already had
        known = audit(rag_service, "off", "--baseline", str(tmp_path / "off" / "report.json"))
        assert known.returncode == 3 and "(also in the baseline)" in known.stdout, known.stdout
        ratchet = audit(rag_service, "off", "--baseline", str(tmp_path / "off" / "report.json"), "--new-only")
        assert ratchet.returncode == 0 and "gate failed:" not in ratchet.stdout, ratchet.stdout
    finally:
        stop(defended)


def test_the_gate_compares_intervals_with_a_baseline():
    def report(k: int, n: int = 100):
        from engine.audit.findings import rate

        return {
            "findings": [
                {"id": "extraction:zeng", "status": "done", "severity": "low", "metrics": {"crr": rate(k, n, "crr")}}
            ]
        }

    assert regressions(report(40), {}, report(2)) == [
        "extraction:zeng: crr 0.400 [0.309, 0.498] (40/100) is above the baseline's 0.020 [0.006, 0.070] (2/100) "
        "(intervals apart)"
    ]
    assert regressions(report(4), {}, report(2)) == [], "overlapping intervals are not a regression"
    assert regressions(report(4), parse_fail_on("crr>0.03")) == [
        "extraction:zeng: crr 0.040 [0.016, 0.098] (4/100) > 0.03"
    ]
    assert regressions(report(4), parse_fail_on("crr>0.03"), report(5)) == [
        "extraction:zeng: crr 0.040 [0.016, 0.098] (4/100) > 0.03 (also in the baseline)"
    ], "a breach fails the gate, baseline or not"
    assert regressions(report(4), parse_fail_on("crr>0.03"), report(5), new_only=True) == [], "the ratchet"
    assert regressions(report(4), parse_fail_on("crr>0.03"), report(1), new_only=True) == [
        "extraction:zeng: crr 0.040 [0.016, 0.098] (4/100) > 0.03 (new since the baseline)"
    ]
    assert regressions(report(3), parse_fail_on("crr>=0.03")) == [
        "extraction:zeng: crr 0.030 [0.010, 0.085] (3/100) ≥ 0.03"
    ], "written as it was given"
    # a threshold on a metric nothing measured fails: a gate cannot pass on what it did not measure
    blind = {
        "findings": [
            {
                "id": "extraction:zeng",
                "status": "done",
                "severity": "critical",
                "metrics": {},
                "not_computed": {"crr": "needs a reference knowledge base (--kb)"},
            }
        ]
    }
    assert regressions(blind, parse_fail_on("crr>0.02")) == [
        "crr: not measured by any finding (needs a reference knowledge base (--kb)) — the gate cannot pass on it; "
        "give what it needs or drop the condition"
    ]
    assert regressions(blind, parse_fail_on("asr>0.25"))[0].startswith("asr: not measured by any finding (no attack")
    # a finding's reproduce command runs one cell (--only): the other family's conditions were not run, not failed
    one_cell = {
        "findings": [
            {**blind["findings"][0], "family": "extraction", "severity": "low"},
            {"id": "poisoning:universal", "family": "poisoning", "status": "pending", "metrics": {}},
        ]
    }
    assert regressions(one_cell, parse_fail_on("asr>0.25")) == []
    one_cell["findings"][1]["status"] = "skipped"  # no write surface: measured nowhere, the gate fails
    assert regressions(one_cell, parse_fail_on("asr>0.25"))[0].startswith("asr: not measured")
    for bad, message in (
        ("crr>>1", "cannot read"),
        ("severity>=huge", "severity must be"),
        ("wobble>1", "unknown metric"),
        ("crr>nan", "NaN"),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_fail_on(bad)


def test_a_poisoning_finding_whose_plants_never_reached_the_context_says_to_check_the_write_path():
    from engine.audit.findings import poisoning_finding

    base = {"answered": 3, "successes": 0, "rounds": 3, "contexts_reported": True}
    never = poisoning_finding({"attack": "universal", "summary": {**base, "poison_in_context": 0}})
    assert never["severity"] == "low" and "ever reached a reported context (0 of 3)" in never["severity_rationale"]
    latent = poisoning_finding({"attack": "universal", "summary": {**base, "poison_in_context": 2}})
    assert (
        latent["severity"] == "medium" and "reached the context of 2 of 3 question(s)" in latent["severity_rationale"]
    )
    blind = poisoning_finding({"attack": "universal", "summary": {**base, "contexts_reported": False}})
    assert blind["severity"] == "low" and "ever reached" not in blind["severity_rationale"], "no contexts: unknown"


def test_the_junit_report_fails_where_the_gate_fails_and_survives_what_a_target_sends():
    from engine.audit.findings import rate
    from engine.audit.junit import junit_xml

    findings = [
        {
            "id": "extraction:zeng",
            "family": "extraction",
            "status": "done",
            "severity": "high",
            "severity_rationale": "copied <verbatim> \x00\x1b[31m & more",
            "metrics": {"crr": rate(4, 100, "crr")},
            "owasp": [{"id": "LLM02:2025", "name": "Sensitive Information Disclosure"}],
        },
        {"id": "extraction:zeng-2", "family": "extraction", "status": "done", "severity": "low", "metrics": {}},
        {
            "id": "poisoning:universal",
            "family": "poisoning",
            "status": "failed",
            "severity_rationale": "not tested: 500",
        },
        {"id": "poisoning:jamming", "family": "poisoning", "status": "pending", "severity_rationale": "not run yet"},
    ]
    report = {
        "status": "incomplete",
        "target": {"kind": "http", "endpoint": "http://x/q"},
        "cells": [{"id": "extraction:zeng", "seconds": 12.5}],
        "findings": findings,
    }
    report["gate"] = {"fail_on": parse_fail_on("crr>0.03,asr>0.2")}
    report["gate"]["regressions"] = regressions(report, report["gate"]["fail_on"])
    root = ET.fromstring(junit_xml(report))  # parses: the control characters did not reach the file
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert list(cases) == [f["id"] for f in findings] + ["measured: asr"]
    assert cases["extraction:zeng"].find("failure").get("message").startswith("crr 0.040 [0.016, 0.098] (4/100) > 0.03")
    assert cases["extraction:zeng"].get("time") == "12.500"
    assert cases["extraction:zeng-2"].find("failure") is None, "a finding whose id starts like another's"
    assert cases["poisoning:universal"].find("error") is not None
    assert cases["poisoning:jamming"].find("skipped") is not None
    assert cases["measured: asr"].find("failure").get("message").startswith("asr: not measured")
    assert "copied <verbatim>" in cases["extraction:zeng"].find("system-out").text
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("5", "2", "1", "1")
    props = {p.get("name"): p.get("value") for p in root.find("testsuite").find("properties")}
    assert props["fail_on"] == "crr>0.03,asr>0.2", "as it was written"


def test_an_audit_that_failed_on_a_wrong_answer_path_starts_again_once_it_is_fixed(tmp_path):
    """Every cell failed on the first round (a wrong answer_path): nothing finished, nothing planted, so the fixed
    command runs in the same --out instead of being refused as "another configuration"; the failure is one line
    with one hint (not the inner run's resume command beside the audit's)."""
    s = ScriptedServer(
        lambda *a: (200, {}, json.dumps({"data": {"reply": "Patient Ann Lee, 1969-03-08."}}).encode(), 0)
    )
    try:
        base = {"url": s.base + "/ask", "body": '{"q": "{query}"}', "retries": 0}
        cfg = AuditConfig.from_dict(
            {"target": "http", "kb": "none", "extraction_attacks": ["zeng"], "rounds": 2, "poisoning_attacks": []}
        )
        from engine.errors import EngineError

        with pytest.raises(EngineError) as failed:
            run_audit(cfg.replace(target_params={**base, "answer_path": "data.answer"}), tmp_path / "a")
        text = str(failed.value)
        assert text.startswith("extraction:zeng failed in round 1: answer_path 'data.answer'") and "0 finished" in text
        assert text.count("resume") == 1 and "engine extract --resume" not in text
        report = run_audit(cfg.replace(target_params={**base, "answer_path": "data.reply"}), tmp_path / "a")
        assert report["status"] == "complete" and report["findings"][0]["status"] == "done"
    finally:
        s.close()


def test_a_key_never_reaches_the_report_the_events_or_the_terminal(tmp_path):
    key = "sk-audit-" + "7" * 30

    def echo(method, path, body, headers):
        auth = headers.get("Authorization", "")
        q = json.loads(body or b"{}").get("question", "")
        return 200, {}, json.dumps({"answer": f"Echo: {q[:40]} {auth}", "sources": [f"Doc with {auth}"]}).encode(), 0

    s = ScriptedServer(echo)
    try:
        r = run_cli(
            "audit",
            "--target",
            "http",
            "--target-params",
            json.dumps(
                {
                    "url": s.base + "/query",
                    "contexts_path": "sources",
                    "headers": {"Authorization": "Bearer ${AUDIT_ECHO_KEY}"},
                }
            ),
            "--attacks",
            "zeng,rag-thief",
            "--rounds",
            "2",
            "--poisoning",
            "universal",
            "--out",
            str(tmp_path / "out"),
            env_extra={"AUDIT_ECHO_KEY": key},
        )
        assert r.returncode == 0, r.stderr[-2000:]
        assert any(key in req[3].get("Authorization", "") for req in s.requests), "the key was sent"
        assert key not in r.stdout + r.stderr
        for f in (tmp_path / "out").rglob("*"):
            if f.is_file():
                assert key not in f.read_text(errors="replace"), f
        report = json.loads((tmp_path / "out" / "report.json").read_text())
        uni = next(f for f in report["findings"] if f["id"] == "poisoning:universal")
        assert uni["status"] == "skipped" and uni["severity"] == "info" and "write surface" in uni["severity_rationale"]
        assert report["reference"]["chunks"] == 0, "no reference: the reference-free signals are used"
        zeng = report["findings"][0]
        assert "crr" not in zeng["metrics"] and "context_reproduction" in zeng["metrics"]
        assert "--kb" in zeng["not_computed"]["crr"] and "pii_leaked" in zeng["not_computed"]
    finally:
        s.close()


def test_bad_audit_input_is_one_clear_line(tmp_path):
    cases = [
        (["--target", "nope"], "unknown target 'nope'"),
        (["--target", "http", "--target-params", "{bad json"], "--target-params is not valid JSON"),
        (
            ["--target", "http", "--target-params", '{"url": "http://127.0.0.1:9/q", "bogus": 1}'],
            "unknown parameter 'bogus'",
        ),
        (["--only", "extraction:nope"], "not a cell of this battery"),
        (["--fail-on", "crr>>1"], "--fail-on: cannot read"),
        (["--attacks", "nope"], "unknown extraction attack 'nope'"),
        (["--baseline", str(tmp_path / "missing.json")], "--baseline: .* not found"),
    ]
    for extra, message in cases:
        r = run_cli("audit", "--out", str(tmp_path / "x"), *extra)
        assert r.returncode == 2, (extra, r.stderr)
        lines = [x for x in r.stderr.splitlines() if x.startswith("error:")]
        assert len(lines) == 1 and __import__("re").search(message, lines[0]), (extra, r.stderr)
        assert "auditing" not in r.stderr, "a refused audit is not announced first"
    r = run_cli(
        "audit",
        "--target",
        "http",
        "--target-params",
        json.dumps({"url": f"http://127.0.0.1:{free_port()}/q"}),
        "--attacks",
        "zeng",
        "--rounds",
        "1",
        "--poisoning",
        "none",
        "--out",
        str(tmp_path / "down"),
    )
    assert r.returncode == 2 and "cannot connect" in r.stderr and "resume" in r.stderr
    report = json.loads((tmp_path / "down" / "report.json").read_text())
    assert report["status"] == "incomplete" and report["cells"][0]["status"] == "failed"


def test_an_audit_preset_runs_with_engine_run(tmp_path):
    s = ScriptedServer(lambda *a: (200, {}, json.dumps({"reply": {"text": "No records here."}}).encode(), 0))
    try:
        preset = tmp_path / "my-audit.yaml"
        preset.write_text(
            "kind: audit\ntarget: http\n"
            f"target_params: {{url: '{s.base}/ask', answer_path: reply.text}}\n"
            "extraction_attacks: [ikea]\nrounds: 2\npoisoning_attacks: [jamming]\n"
            "fail_on: {severity: critical}\n"
        )
        r = run_cli("run", str(preset), "--out", str(tmp_path / "out"), "--json", "-q")
        assert r.returncode == 0, r.stderr[-2000:]
        got = json.loads(r.stdout.strip().splitlines()[-1])
        assert got["gate"]["passed"] is True and [f["id"] for f in got["findings"]] == [
            "extraction:ikea",
            "poisoning:jamming",
        ]
        assert got["findings"][1]["status"] == "skipped" and len(s.requests) == 2
    finally:
        s.close()


@pytest.mark.parametrize("quotes", [False, True])
def test_a_blocker_counts_only_where_the_service_stops_answering(tmp_path, quotes):
    """Jamming against a service with a write surface: one that refuses once the blocker is planted is jammed; one
    that quotes its context — the blocker's "I don't know" — and still gives the whole answer is not (it was
    counted jammed, rated high)."""
    clean = "The clinic opens at 8 am on weekdays and closes at 6 pm; Saturdays it opens at 9 am."
    docs: dict[str, str] = {}

    def serve(method, path, body, headers):
        if path == "/docs" and method == "POST":
            d = json.loads(body)
            docs[d["id"]] = d["text"]
            return 200, {}, b"{}", 0
        if path.startswith("/docs/"):
            key = path.rsplit("/", 1)[1]
            if method == "DELETE":
                docs.pop(key, None)
                return 200, {}, b"{}", 0
            return (200 if key in docs else 404), {}, b"{}", 0
        blocked = any("reply only: I don't know" in t for t in docs.values())
        if not blocked:
            answer = clean
        else:
            answer = f'My context says: "reply only: I don\'t know". {clean}' if quotes else "I don't know."
        return 200, {}, json.dumps({"answer": answer}).encode(), 0

    s = ScriptedServer(serve)
    try:
        cfg = AuditConfig.from_dict(
            {
                "target": "http",
                "target_params": {
                    "url": s.base + "/query",
                    "ingest_url": s.base + "/docs",
                    "delete_url": s.base + "/docs/{id}",
                    "exists_url": s.base + "/docs/{id}",
                    "rate": 50,
                },
                "kb": "none",
                "extraction_attacks": [],
                "poisoning_attacks": ["jamming"],
                "poison_questions": 2,
            }
        )
        report = run_audit(cfg, tmp_path / "a")
        jam = next(f for f in report["findings"] if f["id"] == "poisoning:jamming")
        asr = jam["metrics"]["asr"]
        if quotes:
            assert asr["value"] == 0.0 and jam["severity"] in ("low", "medium"), jam["severity_rationale"]
        else:
            assert asr["value"] == 1.0 and "answers refused because of the blocker" in jam["severity_rationale"]
        assert not docs, "every plant removed"
    finally:
        s.close()


def test_a_date_is_a_date_not_also_a_phone_number():
    from engine.audit.signals import pii_shapes

    assert pii_shapes("born 1969-03-08, SSN 123-45-6789, call 555-867-5309") == {
        "date: 1969-03-08",
        "ssn: 123456789",
        "phone: 5558675309",
    }


def test_an_audit_without_out_is_named_after_what_it_measures():
    """No --out: the folder is audit-<target>-<hash of what the audit measures>, so the same command finds the same
    folder and resumes (it used to be a new time-stamped folder on every call); the gate is not part of the name."""
    from engine.audit.runner import default_out

    cfg = AuditConfig.from_dict({"target": "http", "target_params": {"url": "http://127.0.0.1:8765/query"}})
    name = default_out(cfg)
    assert name == default_out(AuditConfig.from_dict(cfg.to_dict())) and name.name.startswith("audit-http-")
    assert default_out(cfg.replace(fail_on={"severity": "high"})) == name, "the gate may change between calls"
    assert default_out(cfg.replace(rounds=cfg.rounds + 1)) != name
