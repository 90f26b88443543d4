"""Audit your own RAG: point the battery at a service, a collection or a query engine; read and download the report."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import streamlit as st

from components.audit import probe_result, render_report, secrets_section, target_form
from components.job_panel import job_panel
from components.state import data_dir, init_state, owner, shared_mode
from components.text import doc_markdown, doc_plain, md_escape, short
from components.runtime_notice import local_runtime_notice
from engine.attacks.extraction import EXTRACTION_ATTACKS
from engine.attacks.poisoning import POISONING_ATTACKS
from engine.audit import run_audit
from engine.audit.gate import fail_on_text, parse_fail_on
from engine.config import AuditConfig, list_presets, load_preset
from engine.errors import EngineError
from engine.jobs import Job
from engine.saved import audits_dir, list_audits
from engine.targets import TARGETS, check_shared_audit, check_target
from engine.targets.probe import probe

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
job: Job | None = ss.get("audit_job")
running = bool(job and job.running)

kinds = [k for k in TARGETS.names() if not (shared_mode() and TARGETS.get(k).server_side)]
default_kind = ss.get("audit_kind", AuditConfig().target)
c1, c2 = st.columns(2)
kind = c1.selectbox(
    "Target",
    kinds,
    index=kinds.index(default_kind) if default_kind in kinds else 0,
    format_func=lambda n: f"{n} — {short(doc_plain(TARGETS.describe(n)), 60)}",  # in full in the form below
    key="audit_kind",
)
batteries = {p["name"]: p["description"] for p in list_presets() if p["kind"] == "audit"}
battery = c2.selectbox(
    "Battery", list(batteries), key="audit_battery", format_func=lambda n: f"{n} — {short(batteries[n].strip(), 60)}"
)
c2.caption(md_escape(batteries.get(battery, "").strip()))
base: AuditConfig = load_preset(battery)[1]
secrets_section()

with st.form("audit_setup"):
    st.markdown(f"**Target: {md_escape(kind)}** — {doc_markdown(TARGETS.describe(kind))}")
    params = target_form(kind, (ss.get("audit_target_params") or {}).get(kind))
    st.markdown("**Battery**")
    # full width, the names as chips (a description each would overflow a column): what each does is in the help
    extraction = st.multiselect(
        "Extraction attacks",
        EXTRACTION_ATTACKS.names(),
        default=list(base.extraction_attacks),
        help="  \n".join(f"**{a}** — {EXTRACTION_ATTACKS.describe(a)}" for a in EXTRACTION_ATTACKS.names()),
    )
    plantable = [a for a in POISONING_ATTACKS.names() if not POISONING_ATTACKS.get(a).needs("index")]
    poisoning = st.multiselect(
        "Poisoning attacks",
        plantable,
        default=[a for a in base.poisoning_attacks if a in plantable],
        help="Run only where the target has a write surface; every planted document is journaled, removed and "
        "checked gone.  \n" + "  \n".join(f"**{a}** — {POISONING_ATTACKS.describe(a)}" for a in plantable),
    )
    b1, b2, b3 = st.columns(3)
    kb = b1.text_input(
        "Reference knowledge base",
        base.kb,
        help="What the leakage metrics compare answers with: "
        "a bundled name (clinic_records), a benchmark name, a path to your files; blank = the "
        "target's own store where it can be read (built-in, Chroma), else none (the report then "
        "uses reference-free signals); none = ignore it",
    )
    fail_on = b1.text_input(
        "Gate: fail on",
        fail_on_text(parse_fail_on(base.fail_on)),
        placeholder="severity>=high,crr>0.02",
        help="What counts as a failure for CI",
    )
    rounds = b2.number_input("Queries per extraction attack", 1, 1000, base.rounds)
    questions = b3.number_input("Questions per poisoning attack", 1, 1000, base.poison_questions)
    if kind == "pipeline":
        canaries = b3.number_input(
            "Canaries (share of chunks)",
            0.0,
            1.0,
            float(base.canaries),
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
            base.identity,
            placeholder="tenant-1 (blank: one owner)",
            help="A multi-tenant target: the tenant whose credentials it gets (in its fields above); an answer or "
            "context holding another tenant's record — the reference knowledge base's 'tenant' field says whose — "
            "is a retrieval-scope breach",
        )
        canary_codes = b3.text_input(
            "Canary codes",
            base.canary_codes,
            placeholder="CR-7Q4K-2291,CR-… or planted.codes.txt",
            help="The canaries you planted in this target's store (python -m engine canaries plant writes a "
            "knowledge base with them and this list); canary lines in the reference knowledge base are found "
            "without it",
        )
    t1, t2, _ = st.columns([1, 1, 3])  # side by side, under the fields they act on
    test = t1.form_submit_button("Test connection", disabled=running)
    start = t2.form_submit_button("Run audit", type="primary", disabled=running)


def config() -> AuditConfig:
    """The audit of the form's values, its target's parameters validated (nothing is opened)."""
    ss.setdefault("audit_target_params", {})[kind] = params
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
            "fail_on": parse_fail_on(fail_on) or None,
            "canaries": float(canaries),
            "canary_codes": canary_codes.strip(),
            "identity": identity.strip(),
            "data_dir": data_dir(),
        },
        where="audit",
    )


if test:
    try:
        cfg = config()
        with st.spinner("Asking the target one question…"):
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

if start:
    try:
        cfg = config()
        out = audits_dir(owner()) / (time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6])
        keys = dict(ss.get("audit_secrets") or {})
        ss.update(
            audit_dir=str(out),
            audit_cells=len(cfg.extraction_attacks) + len(cfg.poisoning_attacks),
            audit_done=[],
            audit_probe=None,
            audit_view=None,
        )
        done: list = ss["audit_done"]
        ss["audit_job"] = Job(
            "audit",
            lambda progress, stop: run_audit(
                cfg,
                out,
                secrets=keys,
                progress=lambda stage, d, t: progress(d, t, stage),
                stop=stop,
                on_cell=done.append,
            ),
        ).start()
        st.rerun()
    except EngineError as e:
        st.error(md_escape(e))


def audit_progress(j: Job) -> tuple[float, str]:
    n, done = ss.get("audit_cells", 1), len(ss.get("audit_done", []))
    inner = j.done_count / j.total if j.total else 0.0
    stage = f" · {j.last}: {j.done_count:,}/{j.total:,}" if j.last else ""
    return (done + min(inner, 0.99)) / max(n, 1), f"{done}/{n} cells{stage}"


job_panel(
    "audit_job",
    what="audit",
    progress=audit_progress,
    stop_label="Stop (the audit resumes later)",
    stop_key="audit_stop",
    drawn=job is not None and not job.running,
)

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
        render_report(json.loads((Path(folder) / "report.json").read_text(encoding="utf-8")), folder)
    except (OSError, ValueError, KeyError) as e:
        st.error(f"Cannot read the report in {md_escape(folder)}: {md_escape(e)}")
elif job is None:
    st.info(
        "Choose the target and its fields, press **Test connection** to see what one answer looks like, then "
        "**Run audit**. The built-in demo target needs nothing else: the quick battery takes a few minutes."
    )
