"""The audit as a JUnit XML report (``report.junit.xml``), the test-report format CI systems read natively
(GitLab's ``artifacts:reports:junit``, Jenkins' ``junit`` step, Azure Pipelines' PublishTestResults, GitHub
actions that publish test results).

One ``<testcase>`` per finding (``classname`` ``rag-audit.<family>``, ``name`` the finding's id) and one per gate
condition no finding measured (``classname`` ``rag-audit.gate``). A testcase *fails* exactly where the gate
fails (``--fail-on`` / ``--baseline``), with the gate's lines as the failure message, so the XML and the exit
code agree: without a gate nothing fails, however severe a finding (its severity and headline metrics are in
``<system-out>`` and in the testcase's ``<properties>``). A cell of the audit that did not finish — failed,
stopped, or not reached — is an ``<error>``, so an audit cut short is never green; a cell left out (``--only``
another cell, or skipped for the target) is ``<skipped>`` with the reason. Every string from the target or the
knowledge base is escaped by the XML writer; evidence text is left out (it is in report.json / report.html).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any, Mapping

from .findings import metric_text
from .gate import fail_on_text

# characters XML 1.0 does not allow; ElementTree escapes &, < and > but would write these as they are (an error
# message or a rationale quoting a target's bytes can carry them) and a CI's parser would reject the file
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _split_lines(report: Mapping[str, Any]) -> tuple[dict[str, list[str]], list[str]]:
    """The gate's lines by finding id (``"<id>: …"``), and the rest (conditions no finding measured)."""
    ids = [f["id"] for f in report.get("findings", [])]
    by_id: dict[str, list[str]] = {i: [] for i in ids}
    rest = []
    for line in (report.get("gate") or {}).get("regressions") or []:
        owner = next((i for i in sorted(ids, key=len, reverse=True) if line.startswith(f"{i}: ")), None)
        if owner is None:
            rest.append(line)
        else:
            by_id[owner].append(line[len(owner) + 2 :])
    return by_id, rest


def _out_text(f: Mapping[str, Any]) -> str:
    lines = [f"severity: {f.get('severity')} — {f.get('severity_rationale', '')}"]
    for key, m in (f.get("metrics") or {}).items():
        if m.get("value") is not None:
            lines.append(f"{key}: {metric_text(m)} ({m.get('label', '')})")
    if f.get("reproduce"):
        lines.append(f"reproduce: {f['reproduce']}")
    return "\n".join(lines)


def junit_xml(report: Mapping[str, Any]) -> str:
    """The report as JUnit XML (see the module docstring)."""
    by_id, rest = _split_lines(report)
    seconds = {c["id"]: float(c.get("seconds") or 0.0) for c in report.get("cells", [])}
    target = report.get("target") or {}
    suite = ET.Element(
        "testsuite",
        name=f"rag-audit {target.get('kind', '')} {target.get('endpoint', '')}".strip(),
        timestamp=str(report.get("generated") or ""),
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("status", report.get("status")),
        ("fail_on", fail_on_text((report.get("gate") or {}).get("fail_on") or {})),
        ("baseline", (report.get("gate") or {}).get("baseline") or ""),
        ("engine_commit", report.get("engine_commit") or ""),
    ):
        ET.SubElement(props, "property", name=name, value=str(value or ""))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    chosen = set(report.get("selection") or ())
    cell_ids = {c["id"] for c in report.get("cells", [])}
    for f in report.get("findings", []):
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"rag-audit.{f.get('family', '')}",
            name=str(f["id"]),
            time=f"{seconds.get(f['id'], 0.0):.3f}",
        )
        cprops = ET.SubElement(case, "properties")
        ET.SubElement(cprops, "property", name="severity", value=str(f.get("severity", "")))
        for t in list(f.get("owasp") or []) + list(f.get("atlas") or []):
            ET.SubElement(cprops, "property", name="taxonomy", value=f"{t['id']} {t['name']}")
        counts["tests"] += 1
        status = f.get("status")
        left_out = status == "skipped" or (chosen and f["id"] not in chosen) or f["id"] not in cell_ids
        if status == "failed":
            counts["errors"] += 1
            ET.SubElement(case, "error", message=str(f.get("severity_rationale", "")), type="cell-failed")
        elif status != "done" and not left_out:
            counts["errors"] += 1
            ET.SubElement(
                case,
                "error",
                message=f"not finished ({status}): the audit was cut short; resume it",
                type="cell-unfinished",
            )
        elif status != "done":
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=str(f.get("severity_rationale", "")))
        elif by_id.get(f["id"]):
            counts["failures"] += 1
            fail = ET.SubElement(case, "failure", message="; ".join(by_id[f["id"]]), type="gate")
            fail.text = "\n".join(by_id[f["id"]])
        ET.SubElement(case, "system-out").text = _out_text(f)
    for line in rest:
        counts["tests"] += 1
        counts["failures"] += 1
        key = line.split(":", 1)[0]
        case = ET.SubElement(suite, "testcase", classname="rag-audit.gate", name=f"measured: {key}", time="0")
        ET.SubElement(case, "failure", message=line, type="gate").text = line
    for k, v in counts.items():
        suite.set(k, str(v))
    total = sum(seconds.values())
    suite.set("time", f"{total:.3f}")
    root = ET.Element("testsuites", name="rag-audit", time=f"{total:.3f}", **{k: str(v) for k, v in counts.items()})
    root.append(suite)
    ET.indent(root)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        + _NOT_XML.sub("\ufffd", ET.tostring(root, encoding="unicode"))
        + "\n"
    )
