"""The audit report: ``report.json`` (the documented schema below) and a self-contained ``report.html``.

``report.json`` (``schema: rag-playground/audit-report``, ``version: 1``):

* ``status`` — ``complete`` or ``incomplete`` (cells pending, stopped or failed; the same command resumes);
* ``target`` — ``{kind, endpoint, params}`` (secret-free: credentials appear as ``${NAME}``);
* ``reference`` — the knowledge base the leakage metrics compare against (``{name, chunks}``; chunks 0 =
  unknown, the reference-free signals are used);
* ``battery`` — the audit configuration; ``cells`` — per cell ``{id, family, attack, status, seconds,
  run_dir, error|reason}``;
* ``findings`` — per cell (and one for the cleanup): ``{id, family, attack, title, status, severity,
  severity_rationale, metrics: {name: {value, ci, k, n, label}}, not_computed: {metric: why} (extraction
  without a reference), evidence: [{round, query, answer,
  source_id, source_text, spans, why}], owasp: [{id, name}], atlas: [{id, name}], recommendations:
  [{defense, what, measured}], reproduce, run_dir}``;
* ``severity_counts``; ``cleanup`` — ``{planted, removed, verified, unverifiable, outstanding}`` and the
  cleanups of earlier runs' plants; ``gate`` — ``{fail_on, baseline, regressions, passed}`` (the last gate
  evaluated); ``taxonomy_sources``; ``generated``, ``engine_commit``.

The HTML holds the same, with the headline rates drawn as an inline SVG (no script: the page is small enough
for a CI artifact and opens offline), and every piece of text that came from the target or the knowledge base
escaped — it is attacker-controlled. ``report.junit.xml`` gives the findings and the gate as JUnit XML for a CI's
test-report view (:mod:`engine.audit.junit`).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Callable, Mapping

from ..runs.manifest import git_commit
from .findings import SEVERITIES, build_finding, cleanup_finding, metric_text, severity_rank
from .gate import fail_on_text, parse_fail_on, regressions
from .journal import PlantJournal
from .taxonomy import sources
from ..metrics.catalog import MK

SCHEMA = "rag-playground/audit-report"
VERSION = 1
# the app's severity squares' colours (🟥 🟧 🟨 🟦 ⬜), dark enough for white text
COLOURS = {"critical": "#b91c1c", "high": "#ea580c", "medium": "#a16207", "low": "#2563eb", "info": "#6b7280"}
HEADLINE = (MK.CRR, "context_reproduction", "asr", "reproduced", "refusal_rate")


def _target_info(cfg: Mapping[str, Any]) -> dict[str, Any]:
    from ..targets import make_target

    try:
        endpoint = make_target(cfg.get("target", "pipeline"), dict(cfg.get("target_params") or {})).endpoint()
    except Exception:  # an invalid or renamed target must not stop a report from being written
        endpoint = ""
    return {"kind": cfg.get("target", "pipeline"), "endpoint": endpoint, "params": cfg.get("target_params") or {}}


def build_report(
    state: Mapping[str, Any], *, journal: PlantJournal | None = None, command: Callable[[str], str] | None = None
) -> dict[str, Any]:
    """The report of an audit's current state (see the module docstring)."""
    from .runner import cells_of
    from ..config import AuditConfig

    cfg = dict(state.get("config") or {})
    order = [c["id"] for c in cells_of(AuditConfig.from_dict(cfg))] if cfg else list(state.get("cells", {}))
    recs = [state["cells"][i] for i in order if i in state.get("cells", {})]
    findings = [build_finding(r, command) for r in recs]
    totals = journal.totals() if journal is not None else {}
    if any(r["family"] == "poisoning" and r.get("status") == "done" for r in recs) or totals.get("planted"):
        findings.append(cleanup_finding(totals, []))
    refs = [r.get("reference") for r in recs if r.get("reference")]
    status = "complete" if all(r.get("status") in ("done", "skipped") for r in recs) else "incomplete"
    fail_on = parse_fail_on(cfg.get("fail_on"))
    report = {
        "schema": SCHEMA,
        "version": VERSION,
        "generated": state.get("updated") or state.get("created"),
        "engine_commit": git_commit(),
        "status": status,
        "target": _target_info(cfg),
        "reference": refs[0] if refs else {"name": "", "chunks": 0},
        "battery": cfg,
        "selection": list(state.get("only") or ()),  # the --only cells this audit runs (empty: every cell)
        "cells": [
            {
                k: r.get(k)
                for k in ("id", "family", "attack", "status", "seconds", "run_dir", "error", "reason")
                if r.get(k) is not None
            }
            for r in recs
        ],
        "findings": findings,
        "severity_counts": {
            s: sum(f["severity"] == s for f in findings if f["status"] == "done") for s in reversed(SEVERITIES)
        },
        "cleanup": {**totals, "earlier_runs": list(state.get("cleanups") or [])},
        "taxonomy_sources": sources(),
    }
    report["gate"] = {"fail_on": fail_on, "baseline": None, "regressions": regressions(report, fail_on), "passed": None}
    report["gate"]["passed"] = not report["gate"]["regressions"] if fail_on else None
    return report


def write_outputs(out: Path, report: Mapping[str, Any]) -> None:
    """Write ``report.json``, ``report.html`` and ``report.junit.xml`` into ``out`` (each atomically)."""
    from ..events import jsonable
    from ..files import atomic_write
    from .junit import junit_xml

    atomic_write(out / "report.json", json.dumps(jsonable(report), indent=2, ensure_ascii=False, default=str))
    atomic_write(out / "report.html", report_html(report))
    atomic_write(out / "report.junit.xml", junit_xml(report))


def ci_command(report: Mapping[str, Any], preset: str = "audit.yaml", out: str = "audit-report") -> str:
    """The command that runs this audit again, e.g. in a CI job: its folder's ``audit.yaml`` (the battery and the
    target, credentials as ``${NAME}`` only) as the preset, and its gate (``severity>=high`` when it had none)."""
    import shlex

    rules = fail_on_text((report.get("gate") or {}).get("fail_on") or {"severity": "high"})
    return (
        f"python -m engine audit --preset {shlex.quote(preset)} --out {shlex.quote(out)} --fail-on {shlex.quote(rules)}"
    )


# ---------------------------------------------------------------------------------------------- HTML
def _e(text: Any) -> str:
    return html.escape(str(text if text is not None else ""))


def _marked(text: str, spans: list) -> str:
    out, pos = [], 0
    for a, b in sorted((int(a), int(b)) for a, b in spans or [] if 0 <= a < b <= len(text)):
        if a < pos:
            continue
        out += [_e(text[pos:a]), "<mark>", _e(text[a:b]), "</mark>"]
        pos = b
    out.append(_e(text[pos:]))
    return "".join(out)


def _badge(sev: str) -> str:
    return f"<span class='sev' style='background:{COLOURS.get(sev, '#6b7280')}'>{_e(sev)}</span>"


def _headline(f: Mapping[str, Any]) -> str:
    for k in HEADLINE:
        m = (f.get("metrics") or {}).get(k)
        if m and m.get("value") is not None:
            return f"{_e(m.get('label', k))}: {_e(metric_text(m))}"
    return _e(f.get("severity_rationale", ""))


def _tag_links(f: Mapping[str, Any]) -> str:
    owasp = ", ".join(
        f"<a href='https://genai.owasp.org/llm-top-10/'>{_e(t['id'])}</a> {_e(t['name'])}" for t in f.get("owasp") or []
    )
    atlas = ", ".join(
        f"<a href='https://atlas.mitre.org/techniques/{_e(t['id'])}'>{_e(t['id'])}</a> {_e(t['name'])}"
        for t in f.get("atlas") or []
    )
    return f"<p class='tags'><b>OWASP LLM Top 10 2025:</b> {owasp or '—'}<br><b>MITRE ATLAS:</b> {atlas or '—'}</p>"


def _figure_rows(report: Mapping[str, Any]) -> list[tuple[str, float, list, str]]:
    rows = []
    for f in report["findings"]:
        keys = (
            (MK.CRR, "reproduced", "asr", "poison_retrieved")
            if "reproduced" in (f.get("metrics") or {})
            else ("context_reproduction", "asr", "poison_retrieved")
        )
        for k in keys:
            m = (f.get("metrics") or {}).get(k)
            if f["status"] == "done" and m and m.get("value") is not None and m.get("ci"):
                rows.append((f"{f['id']} · {k}", float(m["value"]), list(m["ci"]), f["severity"]))
    return rows


def _figure(report: Mapping[str, Any]) -> str:
    """The headline rates with their 95% intervals as an inline SVG bar chart: no script, so the page stays small
    (a CI artifact) and opens offline, and no text from the target is ever handed to a script."""
    rows = _figure_rows(report)
    if not rows:
        return ""
    label_w, plot_w, row_h, top, bottom = 300, 620, 26, 8, 40
    height = top + row_h * len(rows) + bottom

    def x(v: float) -> float:
        return label_w + plot_w * min(max(v, 0.0), 1.0)

    parts = [
        f"<svg class='chart' role='img' aria-label='headline rates with 95% intervals' width='{label_w + plot_w + 60}'"
        f" height='{height}' viewBox='0 0 {label_w + plot_w + 60} {height}' font-size='12' font-family='system-ui'>"
    ]
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f"<line x1='{x(t):.1f}' x2='{x(t):.1f}' y1='{top}' y2='{height - bottom}' stroke='#e5e7eb'/>"
            f"<text x='{x(t):.1f}' y='{height - bottom + 16}' text-anchor='middle' fill='#374151'>{t:g}</text>"
        )
    parts.append(
        f"<text x='{label_w + plot_w / 2:.1f}' y='{height - 6}' text-anchor='middle' fill='#374151'>"
        "rate (95% Wilson interval)</text>"
    )
    for i, (label, value, ci, sev) in enumerate(rows):
        y = top + i * row_h
        mid = y + row_h / 2
        lo, hi = float(ci[0]), float(ci[1])
        parts.append(
            f"<g><title>{_e(label)}: {value:.3f} [{lo:.3f}, {hi:.3f}]</title>"
            f"<text x='{label_w - 8}' y='{mid + 4:.1f}' text-anchor='end'>{_e(label)}</text>"
            f"<rect x='{label_w}' y='{y + 5}' width='{x(value) - label_w:.1f}' height='{row_h - 10}' "
            f"fill='{COLOURS.get(sev, '#6b7280')}' fill-opacity='0.6'/>"
            f"<g stroke='#111' stroke-width='1.5'>"
            f"<line x1='{x(lo):.1f}' x2='{x(hi):.1f}' y1='{mid:.1f}' y2='{mid:.1f}'/>"
            f"<line x1='{x(lo):.1f}' x2='{x(lo):.1f}' y1='{mid - 5:.1f}' y2='{mid + 5:.1f}'/>"
            f"<line x1='{x(hi):.1f}' x2='{x(hi):.1f}' y1='{mid - 5:.1f}' y2='{mid + 5:.1f}'/></g>"
            f"<text x='{label_w + plot_w + 12}' y='{mid + 4:.1f}' fill='#111'>{value:.3f}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _finding_html(f: Mapping[str, Any]) -> str:
    parts = [
        f"<section class='finding' id='{_e(f['id'])}'><h3>{_badge(f['severity'])} {_e(f['title'])} "
        f"<code>{_e(f['id'])}</code></h3>",
        f"<p><b>Why this severity:</b> {_e(f['severity_rationale'])}</p>",
    ]
    if f.get("metrics"):
        parts.append(
            "<table><tr><th>metric</th><th>value [95% interval] (k/n)</th><th>meaning</th></tr>"
            + "".join(
                f"<tr><td><code>{_e(k)}</code></td><td>{_e(metric_text(m))}</td><td>{_e(m.get('label', ''))}</td></tr>"
                for k, m in f["metrics"].items()
            )
            + "</table>"
        )
    if f.get("not_computed"):
        parts.append(
            "<p class='measured'><b>Not computed:</b> "
            + "; ".join(f"<code>{_e(k)}</code> ({_e(v)})" for k, v in f["not_computed"].items())
            + "</p>"
        )
    if f.get("owasp") or f.get("atlas"):
        parts.append(_tag_links(f))
    for ev in f.get("evidence") or []:
        answer = str(ev.get("answer", ""))[:1500]  # answer_spans are measured on this same prefix
        ans = _marked(answer, ev.get("answer_spans") or [])
        parts.append(
            f"<div class='evidence'><p class='why'>Round {_e(ev.get('round'))}: {_e(ev.get('why', ''))}</p>"
            f"<div class='pair'><div><h4>Query → answer</h4><pre class='q'>{_e(ev.get('query', ''))}</pre>"
            f"<pre>{ans}</pre></div>"
            f"<div><h4>Source {_e(ev.get('source_id', ''))}</h4>"
            f"<pre>{_marked(str(ev.get('source_text', '')), ev.get('spans') or [])}</pre></div></div></div>"
        )
    if f.get("recommendations"):
        parts.append(
            "<h4>Defenses to try (this playground)</h4><ul>"
            + "".join(
                f"<li><b>{_e(r['defense'])}</b> — {_e(r['what'])}<br><span class='measured'>Measured here: "
                f"{_e(r['measured'])}</span></li>"
                for r in f["recommendations"]
            )
            + "</ul>"
        )
    if f.get("reproduce"):
        parts.append(f"<p><b>Reproduce:</b></p><pre class='cmd'>{_e(f['reproduce'])}</pre>")
    parts.append("</section>")
    return "\n".join(parts)


CSS = (
    "body{font-family:system-ui,sans-serif;max-width:1180px;margin:2em auto;padding:0 1em;color:#111}"
    "table{border-collapse:collapse;font-size:13px;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 7px;"
    "vertical-align:top;text-align:left}.sev{color:#fff;border-radius:4px;padding:1px 8px;font-size:12px;"
    "text-transform:uppercase;letter-spacing:.04em}pre{white-space:pre-wrap;word-break:break-word;background:"
    "#f6f6f6;padding:6px;border-radius:4px;font-size:12px;max-height:340px;overflow:auto}mark{background:#fde68a}"
    ".pair{display:grid;grid-template-columns:1fr 1fr;gap:12px}.finding{border-top:1px solid #ddd;margin-top:1.4em}"
    ".q{background:#eef2ff}.measured{color:#374151;font-size:13px}.tags{font-size:13px}.gate-fail{color:#b91c1c}"
    ".gate-pass{color:#15803d}.cmd{background:#111;color:#eee}"
    # printed or saved as PDF for a review: every answer and the configuration in full, no scroll boxes
    "@media print{pre{max-height:none;overflow:visible}.pair{grid-template-columns:1fr}.finding{break-inside:auto}}"
)


def report_html(report: Mapping[str, Any]) -> str:
    """The report as one self-contained HTML page (see the module docstring)."""
    t = report["target"]
    counts = " ".join(f"{_badge(s)} {n}" for s, n in report["severity_counts"].items() if n)
    gate = report.get("gate") or {}
    if gate.get("passed") is True:
        gate_line = "<p class='gate-pass'><b>Gate passed</b> (" + _e(json.dumps(gate.get("fail_on"))) + ")</p>"
    elif gate.get("passed") is False:
        gate_line = (
            "<p class='gate-fail'><b>Gate failed:</b></p><ul>"
            + "".join(f"<li>{_e(line)}</li>" for line in gate.get("regressions") or [])
            + "</ul>"
        )
    else:
        gate_line = "<p>No gate set (--fail-on / --baseline).</p>"
    ref = report.get("reference") or {}
    rows = "".join(
        f"<tr><td>{_badge(f['severity']) if f['status'] == 'done' else _e(f['status'])}</td>"
        f"<td><a href='#{_e(f['id'])}'>{_e(f['id'])}</a></td><td>{_e(f['title'])}</td><td>{_headline(f)}</td>"
        f"<td>{_e(', '.join(x['id'] for x in f.get('owasp') or []))}</td>"
        f"<td>{_e(', '.join(x['id'] for x in f.get('atlas') or []))}</td></tr>"
        for f in sorted(report["findings"], key=lambda f: -severity_rank(f["severity"]) if f["status"] == "done" else 1)
    )
    cells = "".join(
        f"<tr><td>{_e(c['id'])}</td><td>{_e(c['status'])}</td><td>{_e(c.get('seconds', ''))}</td>"
        f"<td>{_e(c.get('error') or c.get('reason') or '')}</td></tr>"
        for c in report["cells"]
    )
    c = report.get("cleanup") or {}
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>RAG audit — {_e(t['endpoint'] or t['kind'])}"
        f"</title><style>{CSS}</style></head><body>",
        f"<h1>RAG audit report</h1><p><b>Target:</b> {_e(t['kind'])} — <code>{_e(t['endpoint'])}</code><br>"
        f"<b>Reference knowledge base:</b> {_e(ref.get('name') or 'unknown')} "
        f"({_e(ref.get('chunks', 0))} chunks)<br><b>Status:</b> {_e(report['status'])} · generated "
        f"{_e(report.get('generated'))} · engine {_e(str(report.get('engine_commit', ''))[:10])}</p>",
        f"<p>{counts or 'no finished cell yet'}</p>",
        gate_line,
        "<h2>Findings</h2><table><tr><th>severity</th><th>cell</th><th>finding</th><th>headline</th>"
        f"<th>OWASP</th><th>ATLAS</th></tr>{rows}</table>",
        _figure(report),
        "<p class='measured'>Rates carry 95% Wilson intervals. A budget this small can show a leak, not the "
        "absence of one: <i>low</i> means not seen at this budget.</p>",
        "<h2>Details</h2>",
        *[_finding_html(f) for f in report["findings"]],
        f"<h2>Cells</h2><table><tr><th>cell</th><th>status</th><th>seconds</th><th>note</th></tr>{cells}</table>",
        f"<h2>Cleanup</h2><p>Planted {_e(c.get('planted', 0))}, removed {_e(c.get('removed', 0))}, verified "
        f"gone {_e(c.get('verified', 0))}, unverifiable {_e(c.get('unverifiable', 0))}, outstanding "
        f"{_e(c.get('outstanding', 0))}.</p>",
        "<h2>Configuration</h2>",
        f"<pre>{_e(json.dumps(report['battery'], indent=2, default=str))}</pre>",
        f"<p class='measured'>Taxonomies: {_e(report['taxonomy_sources']['owasp'])}; "
        f"{_e(report['taxonomy_sources']['atlas'])}.</p></body></html>",
    ]
    return "\n".join(p for p in parts if p)
