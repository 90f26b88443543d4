"""What a running audit shows so far, from its folder alone (``audit.json``, ``report.json`` and the running cell's
``events.jsonl``): the cell under way with its latest round — the attack's question, the target's answer and what
that answer gave away — and the findings of the cells already finished. Pure data: the page that started the audit,
a second tab following it and a reopened folder read the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import RunFileError
from ..events import AnswerScored, Generated, LeakScored, QueryIssued, Retrieved, read_events
from ..metrics.catalog import MK
from .extraction import leaked_ids

FINISHED = ("done", "skipped")  # a failed cell runs again when its audit is resumed


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # not written yet, or being replaced (atomic writes: the old one is read)
        return None
    return d if isinstance(d, dict) else None


def current_cell(state: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """The cell a running audit is on (its number from 1 in the battery, its record): the first of the cells this
    call runs (``only``, else all) not yet done or skipped — cells run in the battery's order. Its ``run_dir`` is
    set once it has prepared; before that it is preparing. None when every cell is finished."""
    only = set(state.get("only") or ())
    for n, rec in enumerate((state.get("cells") or {}).values(), 1):
        if rec.get("status") not in FINISHED and (not only or rec.get("id") in only):
            return n, rec
    return None


def latest_round(events: list[Any]) -> dict[str, Any] | None:
    """The last round of a cell's events that has both its question and its answer: round, question, answer, and
    what it gave away — an extraction cell: chunks leaked this round, PII items, CRR so far; a poisoning cell:
    whether the planted document was retrieved and whether the answer carried the attacker's text."""
    gens = {e.round: e for e in events if isinstance(e, Generated)}
    queries = {e.round: e for e in events if isinstance(e, QueryIssued) and e.round in gens}
    if not queries:
        return None
    r = max(queries)
    out: dict[str, Any] = {
        "round": r,
        "question": queries[r].text,
        "answer": gens[r].text,
        "blocked_by": gens[r].blocked_by,
    }
    leak = next((e for e in reversed(events) if isinstance(e, LeakScored) and e.round == r), None)
    if leak is not None:
        out.update(
            {
                "leaked": len(leaked_ids(leak)),
                "pii": len(leak.pii),
                MK.CRR: leak.metrics.get(MK.CRR),
            }
        )
    scored = next((e for e in reversed(events) if isinstance(e, AnswerScored) and e.round == r), None)
    if scored is not None:
        ret = next((e for e in reversed(events) if isinstance(e, Retrieved) and e.round == r), None)
        out.update(planted_retrieved=bool(ret and any(ret.is_poison)), carried=bool(scored.carried))
    return out


def audit_live(folder: str | Path) -> dict[str, Any] | None:
    """A running audit so far: ``cells`` (the battery's size), ``finished`` (cells done or skipped), ``current``
    (the cell under way: number, id, family, attack; see :func:`current_cell`), ``latest`` (its latest round, see
    :func:`latest_round`; None while it prepares, before its first answer) and ``findings`` (report.json's findings
    of the cells measured so far, in its order). None before the audit wrote its state."""
    folder = Path(folder)
    state = _read_json(folder / "audit.json")
    if state is None:
        return None
    cells = list((state.get("cells") or {}).values())
    cur = current_cell(state)
    latest = None
    if cur is not None and cur[1].get("run_dir"):
        path = Path(cur[1]["run_dir"]) / "events.jsonl"
        try:
            events, _ = read_events(path) if path.is_file() else ([], 0)
        except RunFileError:  # a damaged file is the run's to report; the live view shows what it can
            events = []
        latest = latest_round(events)
    report = _read_json(folder / "report.json") or {}
    measured = {c["id"] for c in cells if c.get("status") == "done"}
    return {
        "cells": len(cells),
        "finished": sum(c.get("status") in FINISHED for c in cells),
        "current": None
        if cur is None
        else {
            "number": cur[0],
            "id": cur[1].get("id", ""),
            "family": cur[1].get("family", ""),
            "attack": cur[1].get("attack", ""),
        },
        "latest": latest,
        "findings": [f for f in report.get("findings") or [] if f.get("status") == "done" and f.get("id") in measured],
    }
