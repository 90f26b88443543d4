"""Audit your own RAG: a battery of extraction and poisoning attacks against a target, a report, a CI gate.

    from engine.audit import run_audit
    from engine.config import AuditConfig
    report = run_audit(AuditConfig(target="http", target_params={"url": "http://127.0.0.1:8765/query",
                                                                 "contexts_path": "sources"}), "audit-out/")
    print(report["severity_counts"])

See :mod:`engine.audit.runner` (cells, resume, the folder), :mod:`engine.audit.findings` (severity rules),
:mod:`engine.audit.report` (the report's schema), :mod:`engine.audit.gate` (``--fail-on``, ``--baseline``)
and :mod:`engine.audit.journal` (planted documents and their cleanup).
"""

from __future__ import annotations

from .gate import GATE_FAILED, load_baseline, parse_fail_on, regressions
from .journal import PlantJournal, cleanup, open_journals
from .runner import Audit, AuditStopped, cells_of, run_audit, unfinished_audit

__all__ = [
    "Audit",
    "AuditStopped",
    "GATE_FAILED",
    "PlantJournal",
    "cells_of",
    "cleanup",
    "load_baseline",
    "open_journals",
    "parse_fail_on",
    "regressions",
    "unfinished_audit",
    "run_audit",
]
