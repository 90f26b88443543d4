"""Audit page panels. Render only: the engine runs the battery (:mod:`engine.audit`) and writes the report.

What a target answered is attacker-controlled (and so is the knowledge base's text): it is shown with
st.text / st.code / st.dataframe, never as HTML or live Markdown. Keys typed here live in this browser
session's memory only (``audit_secrets``): the configuration names them as ``${NAME}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import streamlit as st

from components.params_form import field_groups, params_form
from components.text import md_escape, shell_lines
from engine.audit.findings import SEVERITIES, metric_text, severity_rank
from engine.audit.gate import fail_on_text
from engine.audit.report import HEADLINE, ci_command
from engine.metrics.catalog import MK
from engine.secrets import register_secret
from engine.targets import TARGETS
from engine.views.audit import audit_live

SEVERITY_ICONS = {"critical": "🟥", "high": "🟧", "medium": "🟨", "low": "🟦", "info": "⬜"}


def target_form(kind: str, values: Mapping[str, Any] | None) -> dict[str, Any]:
    """The target's parameters: its main fields, then each group of fields in an expander (inside a form)."""
    cls = TARGETS.get(kind).Params
    out: dict[str, Any] = {}
    for group in field_groups(cls):
        if group:
            with st.expander(group):
                out.update(params_form(cls, values, key=f"target.{kind}", group=group, mappings_as_json=True))
        else:
            out.update(params_form(cls, values, key=f"target.{kind}", group=group, mappings_as_json=True))
    return out


def _keep_secret() -> None:
    """Store the typed key under its name in this session (and clear the field), before the page reruns."""
    ss = st.session_state
    name, value = str(ss.get("audit_secret_name", "")).strip(), ss.get("audit_secret_value", "")
    if name and value:
        ss["audit_secrets"][name] = value
        register_secret(value)
        ss["audit_secret_value"] = ""


def secrets_section() -> None:
    """A key field: the value is kept in this session only and referred to as ${NAME} in the target's fields."""
    ss = st.session_state
    ss.setdefault("audit_secrets", {})
    with st.expander("Keys (kept in this browser session only, never written)"):
        c1, c2, c3 = st.columns([2, 3, 1])
        c1.text_input(
            "Name",
            "RAG_API_KEY",
            key="audit_secret_name",
            help="Refer to it in the target's fields as ${NAME}, e.g. headers "
            '{"Authorization": "Bearer ${RAG_API_KEY}"} or api_key_env RAG_API_KEY',
        )
        c2.text_input("Value", type="password", key="audit_secret_value")
        c3.button("Keep", key="audit_secret_keep", on_click=_keep_secret)
        if ss["audit_secrets"]:
            st.caption("Kept for this session: " + ", ".join(f"${{{md_escape(n)}}}" for n in ss["audit_secrets"]))
            if st.button("Forget the keys", key="audit_secret_forget"):
                ss["audit_secrets"] = {}
                st.rerun()


def probe_result(got: Mapping[str, Any]) -> None:
    """What *Test connection* found: the parsed answer and contexts, or the line that failed."""
    if not got.get("ok"):
        st.error(f"Connection test failed: {md_escape(got.get('error', ''))}")
        return
    st.success(f"{md_escape(got['endpoint'])} answered in {got['seconds']:.1f} s")
    if got.get("request"):
        st.caption("Request sent:")
        st.text(got["request"][:1500])
    elif got.get("question"):
        st.caption("Question asked:")
        st.text(got["question"])
    st.caption("Answer (as parsed, verbatim — markdown is not rendered):")
    answer = got["answer"]
    st.text((answer[:3000] + (" …" if len(answer) > 3000 else "")) or "(empty answer)")
    if len(answer) > 3000:
        st.caption(f"Shown: the first 3,000 of {len(answer):,} characters.")
    if got.get("cut"):
        limit = got.get("token_limit") or 0
        st.caption(
            "⚠ The answer stopped at the target's token limit"
            + (f" ({limit} tokens)" if limit else "")
            + ", not where the model ended it: what it would have said next is missing."
        )
    if got["contexts_reported"]:
        st.caption(f"{len(got['contexts'])} context(s) reported:")
        st.dataframe(
            pd.DataFrame([{"id": c["id"], "score": c["score"], "text": c["text"][:300]} for c in got["contexts"]]),
            hide_index=True,
            width="stretch",
        )
    else:
        hint = got.get("contexts_hint") or ""
        st.caption(
            "No contexts reported"
            + (f" — {md_escape(hint)}, if it has them" if hint else "")
            + " (the leakage metrics then see what reached the answer)."
        )
    st.caption(
        f"Poisoning (write surface): {'yes' if got['can_write'] else 'no'} · removal verifiable: "
        f"{'yes' if got['can_verify'] else 'no'} · store readable as the reference: "
        f"{'yes' if got['readable'] else 'no'}"
    )


def by_severity(findings: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Findings most severe first (as report.html orders them); those not measured (failed, stopped, not run)
    after every measured one; otherwise in the battery's order."""
    return sorted(findings, key=lambda f: (f["status"] != "done", -severity_rank(f.get("severity") or "info")))


def findings_table(report: Mapping[str, Any]) -> pd.DataFrame:
    """One row per finding, most severe first: severity, cell, title, headline metric with its interval, OWASP ids
    (the MITRE ATLAS techniques, a longer list that clipped the table, are in each finding's detail and in
    report.html)."""
    rows = []
    for f in by_severity(report["findings"]):
        head = next(
            (
                f"{k}: {metric_text(f['metrics'][k])}"
                for k in HEADLINE
                if k in (f.get("metrics") or {}) and f["metrics"][k].get("value") is not None
            ),
            "",
        )
        sev = f["severity"] if f["status"] == "done" else f["status"]
        rows.append(
            {
                "severity": f"{SEVERITY_ICONS.get(sev, '')} {sev}",
                "cell": f["id"],
                "OWASP": ", ".join(t["id"] for t in f.get("owasp") or []),
                "headline": head,
                "finding": f["title"],
            }
        )
    return pd.DataFrame(rows)


def show_findings(report: Mapping[str, Any]) -> None:
    """The findings table (:func:`findings_table`) with its column widths."""
    st.dataframe(
        findings_table(report),
        hide_index=True,
        width="stretch",
        # pixels: "🟨 medium" and three OWASP ids were clipped at "small"; the title, the longest, goes last, where
        # a narrow window cuts it (each finding's expander has it in full)
        column_config={
            "severity": st.column_config.TextColumn(width=105),
            "cell": st.column_config.TextColumn(width=160),
            "OWASP": st.column_config.TextColumn(width=250),
            "headline": st.column_config.TextColumn(width="medium"),
            "finding": st.column_config.TextColumn(width="large"),
        },
    )


def _stamp(folder: Path) -> tuple:
    """What changes when a running audit writes: its state, its report and its cells' events files."""
    out = []
    for p in [folder / "audit.json", folder / "report.json", *sorted(folder.glob("cells/*/events.jsonl"))]:
        try:
            st_ = p.stat()
            out.append((p.name, st_.st_size, st_.st_mtime_ns))
        except OSError:
            out.append((p.name, None, None))
    return tuple(out)


@st.cache_data(max_entries=4, show_spinner=False)
def _live(folder: str, stamp: tuple) -> dict[str, Any] | None:
    """:func:`engine.views.audit.audit_live`, read again only when one of the audit's files changed (``stamp``)."""
    return audit_live(folder)


def render_live(folder: str | None, stage: str | None = None) -> None:
    """A running audit so far, read from its folder (a second tab following it reads the same): the cell under way
    with its latest round — the attack's question, the target's answer (plain text: attacker-controlled) and what
    it gave away; before its first answer, ``stage`` (the job's latest step, e.g. loading the generator) — then
    the findings of the cells finished so far, most severe first."""
    if not folder:
        return
    live = _live(str(folder), _stamp(Path(folder)))
    if live is None:
        return
    cur, last = live["current"], live["latest"]
    if cur is not None:
        box = st.container(border=True)
        box.markdown(
            f"**Cell {cur['number']} of {live['cells']}: {md_escape(cur['id'])}**"
            + (
                f" · latest round {last['round']}"
                if last
                else f" · {md_escape(stage)} (no answer yet)"
                if stage
                else " · preparing (no answer yet)"
            )
        )
        if last:
            q, a = box.columns(2)
            q.caption("The attack's question")
            q.text(last["question"])
            a.caption(
                "The target's answer" + (f" (blocked by {md_escape(last['blocked_by'])})" if last["blocked_by"] else "")
            )
            a.text(last["answer"] or "(no answer)")
            said = []
            if "leaked" in last:
                said.append(f"chunks leaked by this answer: {last['leaked']}")
                if last.get("pii"):
                    said.append(f"PII items in it: {last['pii']}")
                if last.get(MK.CRR) is not None:
                    said.append(f"CRR so far: {last[MK.CRR]:.1%}")
            if "carried" in last:
                said.append(
                    "the planted document was retrieved"
                    if last["planted_retrieved"]
                    else "the planted document was not retrieved"
                )
                said.append(
                    "the answer carried the attacker's text"
                    if last["carried"]
                    else "the answer did not carry the attacker's text"
                )
            if said:
                box.caption(" · ".join(said))
    if live["findings"]:
        st.caption(
            f"Findings so far: {len(live['findings'])} of {live['cells']} cells measured, most severe first (the full "
            "report, with each finding's evidence, opens here when the audit ends)"
        )
        show_findings({"findings": live["findings"]})


def render_report(report: Mapping[str, Any], folder: str) -> None:
    """The report: counts, the gate, the findings table, each finding's detail, and the downloads."""
    t = report["target"]
    ref = report.get("reference") or {}
    st.subheader("Report")
    st.caption(
        f"{md_escape(t['kind'])} · {md_escape(t['endpoint'])} · reference: "
        + (
            f"{md_escape(ref['name'])} ({ref.get('chunks', 0)} chunks)"
            if ref.get("name")
            else ("none" if report["status"] == "complete" else "not loaded before the stop")
        )
        + f" · {report['status']} · "
        f"saved in {md_escape(folder)}"
    )
    cells = report.get("cells") or []
    if report["status"] != "complete":
        done = sum(c.get("status") in ("done", "skipped") for c in cells)
        st.warning(
            f"Incomplete: {done} of {len(cells)} cells finished. The counts and findings below cover only those; "
            "the others say why they were not measured."
        )
    cols = st.columns(len(SEVERITIES))
    for col, sev in zip(cols, reversed(SEVERITIES)):
        col.metric(f"{SEVERITY_ICONS[sev]} {sev}", report["severity_counts"].get(sev, 0))
    gate = report.get("gate") or {}
    if gate.get("passed") is False:
        st.error("Gate failed:  \n" + "  \n".join(md_escape(x) for x in gate.get("regressions") or []))
    elif gate.get("passed") is True:
        st.success(f"Gate passed ({md_escape(fail_on_text(gate.get('fail_on') or {}) or 'the baseline')})")
    else:
        st.info(
            "No gate was set: this report decides nothing (report.junit.xml fails no test, whatever the severities). "
            "Set *Gate: fail on* — e.g. severity>=high — to make it a pass or fail for CI."
        )
    show_findings(report)
    for f in by_severity(report["findings"]):
        sev = f["severity"] if f["status"] == "done" else f["status"]
        with st.expander(f"{SEVERITY_ICONS.get(sev, '')} {sev} · {f['id']} — {f['title']}"):
            st.markdown(f"**Why this severity:** {md_escape(f['severity_rationale'])}")
            if f.get("metrics"):  # a static table: the meanings wrap instead of being cut (no corpus text in it)
                st.table(
                    pd.DataFrame(
                        [
                            {"metric": k, "value [95% interval] (k/n)": metric_text(m), "meaning": m.get("label", "")}
                            for k, m in f["metrics"].items()
                        ]
                    ).set_index("metric")
                )
            if f.get("not_computed"):
                st.caption(
                    "Not computed: "
                    + "; ".join(f"{md_escape(k)} ({md_escape(v)})" for k, v in f["not_computed"].items())
                )
            if f.get("owasp") or f.get("atlas"):
                st.caption(
                    "OWASP LLM Top 10 2025: "
                    + ", ".join(f"{x['id']} {x['name']}" for x in f["owasp"])
                    + " · MITRE ATLAS: "
                    + ", ".join(f"{x['id']} {x['name']}" for x in f["atlas"])
                )
            for ev in f.get("evidence") or []:
                st.markdown(f"*Round {ev.get('round')}: {md_escape(ev.get('why', ''))}*")
                c1, c2 = st.columns(2)
                c1.caption("Query → answer")
                c1.text(str(ev.get("query", ""))[:600])
                answer = str(ev.get("answer", ""))[:1500]  # answer_spans are measured on this same prefix
                c1.text(answer)
                marked = [answer[a:b] for a, b in (ev.get("answer_spans") or [])[:3] if 0 <= a < b <= len(answer)]
                if marked:
                    c1.caption("In the answer: " + " · ".join(f"“{md_escape(m[:80])}”" for m in marked))
                c2.caption(f"Source {ev.get('source_id', '')}")
                c2.text(str(ev.get("source_text", ""))[:1500])
            for r in f.get("recommendations") or []:
                st.markdown(
                    f"- **{md_escape(r['defense'])}** — {md_escape(r['what'])}  \n"
                    f"  measured here: {md_escape(r['measured'])}"
                )
            if f.get("reproduce"):
                st.code(shell_lines(f["reproduce"]), language="bash", wrap_lines=True)
    html_path, json_path = Path(folder) / "report.html", Path(folder) / "report.json"
    junit_path = Path(folder) / "report.junit.xml"
    c1, c2, c3 = st.columns(3)
    if html_path.is_file():
        c1.download_button(
            "Download report.html", html_path.read_bytes(), "report.html", "text/html", key=f"dl_html_{folder}"
        )
    if json_path.is_file():
        c2.download_button(
            "Download report.json", json_path.read_bytes(), "report.json", "application/json", key=f"dl_json_{folder}"
        )
    if junit_path.is_file():
        c3.download_button(
            "Download report.junit.xml",
            junit_path.read_bytes(),
            "report.junit.xml",
            "application/xml",
            key=f"dl_junit_{folder}",
            help="The findings as JUnit test cases for a CI's test view: failing where the gate fails",
        )
    preset = Path(folder) / "audit.yaml"
    if preset.is_file():
        with st.expander("Run this audit again — in a terminal or a CI job"):
            st.caption(
                "audit.yaml holds this audit's target and battery (credentials only as ${NAME}: set them in the "
                "environment). Exit code 3 when the gate fails, 2 when the target could not be audited; "
                "examples/ci/ holds complete GitHub Actions and GitLab CI jobs (they publish report.junit.xml)."
            )
            if not (report.get("gate") or {}).get("fail_on"):
                st.caption("This audit ran without a gate; the command adds severity>=high (change it to taste).")
            st.code(shell_lines(ci_command(report)), language="bash", wrap_lines=True)
            st.download_button(
                "Download audit.yaml", preset.read_bytes(), "audit.yaml", "application/x-yaml", key=f"dl_yaml_{folder}"
            )
