"""The CI gate: thresholds a finding must stay under, and a baseline report it must not get worse than.

``--fail-on`` takes comma-separated conditions, ``severity>=high`` and ``METRIC>VALUE`` (e.g.
``crr>0.02,pii_leaked>0,asr>0.25,canaries_leaked>0``; in a preset, ``fail_on: {severity: high, crr: 0.02}``).
A condition applies to every finding that has the metric. ``--baseline old/report.json`` compares with an earlier
report of the same battery:

* a finding over a threshold fails the gate, baseline or not; with a baseline its line says whether the baseline's
  same finding was over it too ("also in the baseline") or not ("new since the baseline"). ``new_only`` (``audit
  --new-only``) is the ratchet: a breach the baseline already had is reported but passes;
* a rate whose 95% interval now lies entirely above the baseline's interval fails, threshold or not (only the
  rates where higher is worse: CRR, reproduction, coverage, ASR, poison retrieval);
* a cell of the audit that did not finish (stopped, failed, or not reached) fails the gate: it cannot pass on an
  audit cut short (cells left out with ``--only`` are not part of it);
* a threshold on a metric no finding measured fails too (e.g. ``crr`` without a reference knowledge base, ``asr``
  when the target has no write surface): a gate cannot pass on what it did not measure — except where none of the
  cells that measure it was run at all (``--only`` cells of the other family, e.g. a finding's reproduce command).

Each failure is one line; the command exits with :data:`GATE_FAILED`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError
from .findings import CANARIES, SEVERITIES, metric_text, severity_rank
from ..metrics.catalog import MK

GATE_FAILED = 3
WORSE_WHEN_HIGHER = (
    MK.CRR,
    "reproduced",
    "context_reproduction",
    MK.RETRIEVED_COVERAGE,
    "asr",
    "poison_retrieved",
    "asr_without_trigger",
    MK.SEMANTIC_LEAK,
    CANARIES,
    MK.CROSS_TENANT_ROUNDS,
    MK.CROSS_TENANT_LEAKED,
)
COUNTS = (MK.PII_LEAKED, "pii_shapes", "verbatim_pairs")
POISONING_METRICS = ("asr", "poison_retrieved", "asr_without_trigger")  # the rest are extraction's
_COND = re.compile(r"^\s*([a-z_]+)\s*(>=|>)\s*([A-Za-z0-9.]+)\s*$")


def parse_fail_on(spec: Any, where: str = "--fail-on") -> dict[str, Any]:
    """``{"severity": "high", "crr": 0.02, …}`` from a ``--fail-on`` string or a preset mapping; a bad condition
    is one ConfigError naming it and the allowed forms (``where``: what the message calls the field, e.g. a form's
    label)."""
    if spec in (None, "", {}):
        return {}
    if isinstance(spec, Mapping):
        items = [(str(k), "", v) for k, v in spec.items()]
    else:
        items = []
        for part in str(spec).split(","):
            if not part.strip():
                continue
            m = _COND.match(part)
            if not m:
                raise ConfigError(
                    f"{where}: cannot read {part.strip()!r}; write severity>=high or METRIC>VALUE, "
                    f"e.g. crr>0.02,pii_leaked>0"
                )
            items.append((m.group(1), m.group(2), m.group(3)))
    out: dict[str, Any] = {}
    for key, op, value in items:
        if key == "severity":
            if str(value) not in SEVERITIES:
                raise ConfigError(f"{where}: severity must be one of {', '.join(SEVERITIES)} (got {value!r})")
            if op == ">":
                value = SEVERITIES[min(severity_rank(str(value)) + 1, len(SEVERITIES) - 1)]
            out["severity"] = str(value)
            continue
        if key not in WORSE_WHEN_HIGHER + COUNTS:
            raise ConfigError(
                f"{where}: unknown metric {key!r} (known: severity, {', '.join(WORSE_WHEN_HIGHER + COUNTS)})"
            )
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: {key} needs a number (got {value!r})") from None
        if v != v:
            raise ConfigError(f"{where}: {key} needs a number (got NaN)")
        out[key] = v - 1e-12 if op == ">=" else v
    return out


def breaches(finding: Mapping[str, Any] | None, fail_on: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(condition key, one-line text) for each threshold ``finding`` is over."""
    if not finding or finding.get("status") != "done":
        return []
    out = []
    sev = fail_on.get("severity")
    if sev and severity_rank(finding.get("severity", "info")) >= severity_rank(sev):
        out.append(("severity", f"severity {finding['severity']} ≥ {sev} ({finding.get('severity_rationale', '')})"))
    for key, limit in fail_on.items():
        if key == "severity":
            continue
        m = (finding.get("metrics") or {}).get(key)
        if m and m.get("value") is not None and float(m["value"]) > float(limit):
            out.append((key, f"{key} {metric_text(m)} {limit_text(limit)}"))
    return out


def fail_on_text(fail_on: Mapping[str, Any]) -> str:
    """``fail_on`` as ``--fail-on`` takes it back (``severity>=high,crr>=0.02,pii_leaked>0``)."""
    rules = []
    for key, limit in fail_on.items():
        if key == "severity":
            rules.append(f"severity>={limit}")
            continue
        written = round(float(limit), 9)
        rules.append(f"{key}{'>=' if written != float(limit) else '>'}{written:g}")
    return ",".join(rules)


def limit_text(limit: float) -> str:
    """A threshold as it was written: ``> 0.02``, or ``≥ 0.02`` for ``>=`` (kept as the value less 1e-12)."""
    written = round(float(limit), 9)
    return f"≥ {written:g}" if written != float(limit) else f"> {written:g}"


def unmeasured(report: Mapping[str, Any], fail_on: Mapping[str, Any]) -> list[str]:
    """One line per threshold of ``fail_on`` on a metric that no finding of ``report`` measured, with the reason a
    finding gives (``not_computed``) where one does."""
    findings = list(report.get("findings", []))
    done = [f for f in findings if f.get("status") == "done"]
    lines = []
    for key in fail_on:
        if key == "severity" or any(((f.get("metrics") or {}).get(key) or {}).get("value") is not None for f in done):
            continue
        family = "poisoning" if key in POISONING_METRICS else "extraction"
        mine = [f for f in findings if f.get("family") == family]
        if mine and all(f.get("status") == "pending" for f in mine):
            continue  # none of its cells was run (``--only`` another family): nothing to gate, nothing failed
        why = next((f["not_computed"][key] for f in done if key in (f.get("not_computed") or {})), None)
        lines.append(
            f"{key}: not measured by any finding"
            + (f" ({why})" if why else " (no attack of this battery measures it against this target)")
            + " — the gate cannot pass on it; give what it needs or drop the condition"
        )
    return lines


def unfinished(report: Mapping[str, Any]) -> list[str]:
    """One line per cell of the audit that did not finish — stopped, failed, or not reached — among the cells it
    was asked to run (``report["selection"]``, the ``--only`` cells; empty: every cell)."""
    chosen = set(report.get("selection") or ())
    lines = []
    for c in report.get("cells", []):
        status = c.get("status")
        if status in ("done", "skipped") or (chosen and c["id"] not in chosen):
            continue
        why = {"stopped": "stopped before its end", "failed": "failed", "pending": "not reached"}.get(status, status)
        lines.append(
            f"{c['id']}: not finished ({why}) — the gate cannot pass on an audit cut short; resume it and the "
            "gate is decided when every cell has run"
        )
    return lines


def regressions(
    report: Mapping[str, Any],
    fail_on: Mapping[str, Any],
    baseline: Mapping[str, Any] | None = None,
    *,
    new_only: bool = False,
) -> list[str]:
    """One line per reason the gate fails on ``report`` (see the module docstring)."""
    base = {f["id"]: f for f in (baseline or {}).get("findings", [])}
    lines = []
    for f in report.get("findings", []):
        b = base.get(f["id"])
        was = {k for k, _ in breaches(b, fail_on)}
        for key, text in breaches(f, fail_on):
            if baseline is None:
                lines.append(f"{f['id']}: {text}")
            elif key not in was:
                lines.append(f"{f['id']}: {text} (new since the baseline)")
            elif not new_only:
                lines.append(f"{f['id']}: {text} (also in the baseline)")
        if b is None or b.get("status") != "done" or f.get("status") != "done":
            continue
        for key in WORSE_WHEN_HIGHER:
            m, bm = (f.get("metrics") or {}).get(key), (b.get("metrics") or {}).get(key)
            if m and bm and m.get("ci") and bm.get("ci") and m["ci"][0] > bm["ci"][1]:
                lines.append(
                    f"{f['id']}: {key} {metric_text(m)} is above the baseline's {metric_text(bm)} (intervals apart)"
                )
    return lines + unmeasured(report, fail_on) + unfinished(report)


def load_baseline(path: str | Path) -> dict[str, Any]:
    """A baseline ``report.json``; a missing, unreadable or foreign file is one ConfigError."""
    p = Path(path)
    if p.is_dir():
        p = p / "report.json"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"--baseline: {path} not found (give an earlier audit's report.json)") from None
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise ConfigError(f"--baseline: {path} is not a readable report.json ({type(e).__name__})") from None
    if not isinstance(data, dict) or data.get("schema") != "rag-playground/audit-report":
        raise ConfigError(f"--baseline: {path} is not an audit report (no schema rag-playground/audit-report)")
    return data
