"""Audit your own RAG: point the battery at a service, a collection or a query engine; read and download the report."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import streamlit as st

from components.audit import probe_result, render_live, render_report, secrets_section, target_form
from components.job_panel import follow_running, job_panel
from components.numbers import NumberFields
from components.state import data_dir, follow, init_state, owner, picked, shared_mode
from components.text import doc_markdown, doc_plain, md_escape, short
from components.runtime_notice import local_runtime_notice
from engine.attacks.extraction import EXTRACTION_ATTACKS
from engine.attacks.poisoning import POISONING_ATTACKS
from engine.audit import Audit, AuditStopped, run_audit, unfinished_audit
from engine.audit.gate import fail_on_text, parse_fail_on
from engine.config import AuditConfig, list_presets, load_preset
from engine.errors import EngineError
from engine.jobs import Job
from engine.saved import audits_dir, list_audits
from engine.targets import TARGETS, check_shared_audit, check_target
from engine.targets.probe import probe

GATE_LABEL = "Gate: fail on"
DEFAULT_GATE = "severity>=high"  # a battery without a gate of its own: the app's audits decide pass/fail

init_state()
ss = st.session_state
st.title("Audit your own RAG")
st.caption(
    "Point the playground's attacks at the RAG system you run — a JSON service, an OpenAI-compatible chat "
    "endpoint, your Chroma collection, a LlamaIndex query engine — or at the built-in demo. It runs the "
    "battery in the background (extraction attacks; poisoning where the target can take test documents, "
    "each removed and checked gone afterwards) and writes a report with findings, severities, evidence, "
    "OWASP / MITRE ATLAS tags and the defenses to try. The same audit runs in CI: python -m engine audit."
)
local_runtime_notice()
job: Job | None = follow_running("audit_job", "audit", what="audit")
running = bool(job and job.running)

kinds = [k for k in TARGETS.names() if not (shared_mode() and TARGETS.get(k).server_side)]
c1, c2 = st.columns(2)
# the picks live in settings of their own: a keyed widget's state is dropped when the user visits another page
follow("audit_kind", ss.get("audit_target_kind", AuditConfig().target), kinds)
kind = c1.selectbox(
    "Target",
    kinds,
    format_func=lambda n: f"{n} — {short(doc_plain(TARGETS.describe(n)), 60)}",  # in full in the form below
    key="audit_kind",
)
ss["audit_target_kind"] = kind
picked("audit_kind")
batteries = {p["name"]: p["description"] for p in list_presets() if p["kind"] == "audit"}
follow("audit_battery", ss.get("audit_battery_name", next(iter(batteries))), list(batteries))
battery = c2.selectbox(
    "Battery", list(batteries), key="audit_battery", format_func=lambda n: f"{n} — {short(batteries[n].strip(), 60)}"
)
ss["audit_battery_name"] = battery
picked("audit_battery")
c2.caption(md_escape(batteries.get(battery, "").strip()))
base: AuditConfig = load_preset(battery)[1]
# what was submitted last with this battery (kept across pages); else the battery's own values
typed: dict = ss["audit_form"] if (ss.get("audit_form") or {}).get("battery") == battery else {}
secrets_section()

number = NumberFields()
with st.form("audit_setup", enter_to_submit=False):  # an audit starts only from its button
    st.markdown(f"**Target: {md_escape(kind)}** — {doc_markdown(TARGETS.describe(kind))}")
    params = target_form(kind, (ss.get("audit_target_params") or {}).get(kind))
    st.markdown("**Battery**")
    # full width, the names as chips (a description each would overflow a column): what each does is in the help
    extraction = st.multiselect(
        "Extraction attacks",
        EXTRACTION_ATTACKS.names(),
        default=typed.get("extraction", list(base.extraction_attacks)),
        help="  \n".join(f"**{a}** — {EXTRACTION_ATTACKS.describe(a)}" for a in EXTRACTION_ATTACKS.names()),
    )
    plantable = [a for a in POISONING_ATTACKS.names() if not POISONING_ATTACKS.get(a).needs("index")]
    poisoning = st.multiselect(
        "Poisoning attacks",
        plantable,
        default=typed.get("poisoning", [a for a in base.poisoning_attacks if a in plantable]),
        help="Run only where the target has a write surface; every planted document is journaled, removed and "
        "checked gone.  \n" + "  \n".join(f"**{a}** — {POISONING_ATTACKS.describe(a)}" for a in plantable),
    )
    b1, b2, b3 = st.columns(3)
    kb = b1.text_input(
        "Reference knowledge base",
        typed.get("kb", base.kb),
        help="What the leakage metrics compare answers with: "
        "a bundled name (clinic_records), a benchmark name, a path to your files; blank = the "
        "target's own store where it can be read (built-in, Chroma), else none (the report then "
        "uses reference-free signals); none = ignore it",
    )
    fail_on = b1.text_input(
        GATE_LABEL,
        typed.get("fail_on", fail_on_text(parse_fail_on(base.fail_on)) or DEFAULT_GATE),
        placeholder="e.g. severity>=high,crr>0.02 (blank: no gate)",
        help="What fails the audit for CI (report.junit.xml, the command's exit code): conditions such as "
        "severity>=high or crr>0.02, comma-separated; blank: no gate — the report then decides nothing",
    )
    rounds = number(b2, "Queries per extraction attack", 1, 10000, int(typed.get("rounds", base.rounds)))
    questions = number(
        b3,
        "Questions per poisoning attack",
        1,
        10000,
        int(typed.get("questions", base.poison_questions)),
        help="Used by the poisoning attacks chosen above (none chosen: not used)",
    )
    if kind == "pipeline":
        canaries = number(
            b3,
            "Canaries (share of chunks)",
            0.0,
            1.0,
            float(typed.get("canaries", base.canaries)),
            step=0.05,
            help="Plant a unique fake record number in this share of the built-in pipeline's chunks; an answer "
            "carrying one is a leak with no false positive (0: none)",
        )
        canary_codes = ""
        identity = ""
    else:
        canaries = 0.0
        identity = b1.text_input(
            "Query as tenant",
            typed.get("identity", base.identity),
            placeholder="tenant-1 (blank: one owner)",
            help="A multi-tenant target: the tenant whose credentials it gets (in its fields above); an answer or "
            "context holding another tenant's record — the reference knowledge base's 'tenant' field says whose — "
            "is a retrieval-scope breach",
        )
        canary_codes = b3.text_input(
            "Canary codes",
            typed.get("canary_codes", base.canary_codes),
            placeholder="CR-7Q4K-2291,CR-… or planted.codes.txt",
            help="The canaries you planted in this target's store (python -m engine canaries plant writes a "
            "knowledge base with them and this list); canary lines in the reference knowledge base are found "
            "without it",
        )
    t1, t2, _ = st.columns([1, 1, 3])  # side by side, under the fields they act on
    test = t1.form_submit_button("Test connection", disabled=running)
    start = t2.form_submit_button("Run audit", type="primary", disabled=running)


def config() -> AuditConfig:
    """The audit of the form's values, its target's parameters validated (nothing is opened); the values are kept
    for the next visit, valid or not (a typo is corrected, not retyped)."""
    ss.setdefault("audit_target_params", {})[kind] = params
    ss["audit_form"] = {
        "battery": battery,
        "extraction": list(extraction),
        "poisoning": list(poisoning),
        "kb": kb,
        "fail_on": fail_on,
        "rounds": int(rounds),
        "questions": int(questions),
        "canaries": float(canaries),
        "identity": identity,
        "canary_codes": canary_codes,
    }
    number.check()
    if shared_mode():  # first: a path is refused by policy, whether it exists or not
        check_shared_audit(kind, params, kb.strip(), canary_codes)
    check_target(kind, params)
    return AuditConfig.from_dict(
        {
            **base.to_dict(),
            "target": kind,
            "target_params": params,
            "kb": kb.strip(),
            "extraction_attacks": extraction,
            "poisoning_attacks": poisoning,
            "rounds": int(rounds),
            "poison_questions": int(questions),
            "fail_on": parse_fail_on(fail_on, where=GATE_LABEL) or None,
            "canaries": float(canaries),
            "canary_codes": canary_codes.strip(),
            "identity": identity.strip(),
            "data_dir": data_dir(),
        },
        where="audit",
    )


# a Run audit error goes here, under the buttons — not below a long Test-connection answer, out of sight
start_error = st.container()
if test:
    try:
        cfg = config()
        with st.spinner("Asking the target one question… (a built-in target loads its models first: up to a minute)"):
            ss["audit_probe"] = probe(
                cfg.target,
                dict(cfg.target_params or {}),
                secrets=ss.get("audit_secrets"),
                data_dir=cfg.data_dir or None,
            )
    except EngineError as e:
        ss["audit_probe"] = {"ok": False, "error": str(e)}
if ss.get("audit_probe") is not None:
    probe_result(ss["audit_probe"])


def start_audit(cfg: AuditConfig, out: Path) -> None:
    """Run (or resume) ``cfg`` into ``out`` in the background; a stop returns ``{"stopped": why}``, not an error."""
    keys = dict(ss.get("audit_secrets") or {})
    finished = Audit(cfg, out).preflight()  # a resume: its finished cells count in the progress bar
    state = {
        "audit_dir": str(out),
        "audit_cells": len(cfg.extraction_attacks) + len(cfg.poisoning_attacks),
        "audit_done": [None] * finished,
        "audit_resumed": finished if (out / "audit.json").is_file() else None,
        "audit_probe": None,
        "audit_view": None,
    }
    ss.update(state)
    done: list = state["audit_done"]

    def work(progress, stop):
        try:
            return run_audit(
                cfg,
                out,
                secrets=keys,
                progress=lambda stage, d, t: progress(d, t, stage),
                stop=stop,
                on_cell=done.append,
            )
        except AuditStopped as e:
            return {"stopped": str(e)}

    ss["audit_job"] = Job("audit", work, owner=owner(), state=state).start()


if start:
    try:
        cfg = config()
        if job is not None and not job.running:
            ss.pop("audit_job", None)  # the last audit gives way to this one (its report: Saved audits)
            job = None
        root = audits_dir(owner())
        # the same settings as an audit that was stopped or failed: resume it, as the CLI does with the same --out
        out = (unfinished_audit(root, cfg) if root.is_dir() else None) or root / (
            time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        )
        start_audit(cfg, out)
        st.rerun()
    except EngineError as e:
        if job is not None and not job.running and job.error:  # a stale failure's message would sit beside this
            ss.pop("audit_job", None)
            job = None
        start_error.error(md_escape(e))


def audit_progress(j: Job) -> tuple[float, str]:
    n, done = ss.get("audit_cells", 1), len(ss.get("audit_done", []))
    inner = j.done_count / j.total if j.total else 0.0
    stage = f" · {j.last}: {j.done_count:,}/{j.total:,}" if j.last else ""
    return (done + min(inner, 0.99)) / max(n, 1), f"{done}/{n} cells{stage}"


job_panel(
    "audit_job",
    what="audit",
    progress=audit_progress,
    stop_label="Stop (Run audit with the same settings resumes it)",
    stop_key="audit_stop",
    drawn=job is not None and not job.running,
    show_error=False,
    live=lambda j: render_live(j.state.get("audit_dir"), stage=j.last if j.running else None),
)
if job is not None and not job.running:
    stopped_at = job.result.get("stopped") if isinstance(job.result, dict) else None
    if stopped_at:
        st.warning(
            f"{md_escape(stopped_at[:1].upper() + stopped_at[1:])}. Every finished round is kept: press **Run "
            "audit** with the same settings, or **Resume this audit** below, to continue where it stopped."
        )
    elif job.error:
        st.error(
            f"The audit failed: {md_escape(job.error)}  \nOn this page: fix the cause, then **Run audit** with the "
            "same settings (or **Resume this audit** below) continues it; the finished cells are kept."
        )
    elif ss.get("audit_resumed"):
        st.caption(f"Resumed: {ss['audit_resumed']} cell(s) had finished before and were kept.")

folder = ss.get("audit_view") or (ss.get("audit_dir") if job is not None and not job.running else None)
with st.expander("Saved audits"):
    saved = list_audits(audits_dir(owner()))
    if not saved:
        st.caption("None yet: every audit run here is saved with its report.")
    else:
        pick = st.selectbox(
            "Audit",
            [s["folder"] for s in saved],
            format_func=lambda f: next(
                f"{s['id']} · {s['kind']} {s['endpoint']} · {s['status']}" for s in saved if s["folder"] == f
            ),
        )
        if st.button("Open", key="audit_open"):
            ss["audit_view"] = folder = pick

if folder and (Path(folder) / "report.json").is_file():
    try:
        report = json.loads((Path(folder) / "report.json").read_text(encoding="utf-8"))
        render_report(report, folder)
    except (OSError, ValueError, KeyError) as e:
        st.error(f"Cannot read the report in {md_escape(folder)}: {md_escape(e)}")
        report = None
    state_file = Path(folder) / "audit.json"
    if report and report.get("status") == "incomplete" and state_file.is_file() and not running:
        if st.button("Resume this audit", key="audit_resume", help="Continue it in its folder with its settings"):
            try:
                saved_cfg = AuditConfig.from_dict(
                    json.loads(state_file.read_text(encoding="utf-8"))["config"], where="audit"
                )
                if ss.get("audit_job") is not None and not ss["audit_job"].running:
                    ss.pop("audit_job")
                start_audit(saved_cfg, Path(folder))
                st.rerun()
            except (EngineError, OSError, ValueError, KeyError) as e:
                st.error(f"Cannot resume it: {md_escape(e)}")
elif job is None and ss.get("audit_probe") is None:
    st.info(
        "Choose the target and its fields, press **Test connection** to see what one answer looks like, then "
        "**Run audit**. The built-in demo target needs nothing else: the quick battery takes a few minutes."
    )
