"""What a membership experiment's page shows, from its events alone (a live run and a reopened one look the same):
one row per probed record, and the scores by class."""

from __future__ import annotations

from typing import Any, Sequence

from ..events import Event, Generated, MembershipScored, QueryIssued


def record_rows(events: Sequence[Event], texts: dict[str, str] | None = None, width: int = 140) -> list[dict[str, Any]]:
    """One row per probed record, in probing order: its id, whether it is a member, the attack's score, whether its
    own record was retrieved, questions refused, the canaries its answers carried (when canaries were planted), the
    answer and the question (cut at ``width`` characters; plain text — the page shows them in a table, never as
    markup). ``texts``: record id → text, for a record column."""
    questions: dict[int, str] = {}
    answers: dict[int, str] = {}
    for e in events:
        if isinstance(e, QueryIssued):
            questions.setdefault(e.round, e.text)
        elif isinstance(e, Generated):
            answers.setdefault(e.round, e.text)

    def cut(text: str) -> str:
        text = " ".join(str(text).split())
        return text if len(text) <= width else text[: width - 1] + "…"

    canaried = any(e.kind == "canaries_planted" for e in events)
    rows = []
    for e in events:
        if isinstance(e, MembershipScored):
            row: dict[str, Any] = {
                "#": e.round,
                "record": e.record_id,
                "in the KB": "member" if e.member else "non-member",
                "score": e.score,
                "own record retrieved": e.retrieved,
                "refused": e.blocked,
            }
            if canaried:  # the canaries its answers carried: its own (proof of membership) or another record's
                row["canaries in the answer"] = ", ".join(("own" if c == e.record_id else c) for c in e.canaries)
            if texts is not None:
                row["record text"] = cut(texts.get(e.record_id, ""))
            row["answer"] = cut(answers.get(e.round, ""))
            row["question"] = cut(questions.get(e.round, ""))
            rows.append(row)
    return rows


def scores_by_class(events: Sequence[Event]) -> tuple[list[float], list[float]]:
    """(members' scores, non-members' scores) in probing order."""
    scored = [e for e in events if isinstance(e, MembershipScored)]
    return [e.score for e in scored if e.member], [e.score for e in scored if not e.member]
