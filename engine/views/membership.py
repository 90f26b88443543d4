"""What a membership experiment's page shows, from its events alone (a live run and a reopened one look the same):
one row per probed record, and the scores by class."""

from __future__ import annotations

from typing import Any, Sequence

from ..events import Event, Generated, MembershipScored, QueryIssued, TenantsAssigned
from ..metrics.catalog import MK
from ..metrics.intervals import fmt_interval
from ..corpora import parent_of
from ..tenancy import filter_label, owners_of


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
    assigned = next((e for e in events if isinstance(e, TenantsAssigned)), None)
    # chunk id -> tenant, and record id -> tenant (a record's chunks share their owner)
    owners = owners_of(assigned.tenants) if assigned is not None else {}
    owners.update({parent_of(d): t for d, t in list(owners.items())})
    rows = []
    for e in events:
        if isinstance(e, MembershipScored):
            row: dict[str, Any] = {
                "#": e.round,
                "record": e.record_id,
                "in the KB": "member" if e.member else "non-member",
                **({"tenant": _owner(owners.get(e.record_id), assigned.identity)} if assigned is not None else {}),
                "score": e.score,
                "own record retrieved": e.retrieved,
                "refused": e.blocked,
            }
            if canaried:  # the canaries its answers carried: its own (proof of membership) or another record's
                row["canaries in the answer"] = ", ".join(
                    ("own" if parent_of(c) == e.record_id else c) for c in e.canaries
                )
            if texts is not None:
                row["record text"] = cut(texts.get(e.record_id, ""))
            row["answer"] = cut(answers.get(e.round, ""))
            row["question"] = cut(questions.get(e.round, ""))
            rows.append(row)
    return rows


def _owner(tenant: str | None, identity: str) -> str:
    if tenant is None:
        return "—"
    return f"own ({tenant})" if tenant == identity else tenant


def tenancy_lines(summary: dict[str, Any]) -> list[str]:
    """A multi-tenant experiment's numbers as plain sentences (none for one owner): whom the attacker asks as,
    how retrieval enforces tenancy, and the AUROC for its own tenant's members and for the other tenants'."""
    t = summary.get("tenancy")
    if not t:
        return []

    def auc(side: str) -> str:
        v = t.get(f"auroc_{side}")
        n = t.get(f"{side}_members", 0)
        return f"n/a ({n} members)" if v is None else f"{v:.2f} {fmt_interval(t.get(f'auroc_{side}_ci'), 2)} ({n})"

    return [
        f"{t['tenants']} tenants; the attacker asks as {t['identity']}; tenant filter: {filter_label(t['mode'])}.",
        f"AUROC, members of its own tenant: {auc('own')}; members of other tenants: {auc('foreign')} (0.5: the "
        "other tenants' records cannot be told from records outside the knowledge base).",
        f"Questions whose context held another tenant's chunk: {t[MK.CROSS_TENANT_ROUNDS]:.0%} "
        f"{fmt_interval(t.get(MK.CROSS_TENANT_ROUNDS + '_ci'), 2)}"
        + (
            f"; {t['tenant_dropped_queries']} questions had results cut after the top-K"
            if t.get("tenant_dropped_queries")
            else ""
        )
        + ".",
    ]


def scores_by_class(events: Sequence[Event]) -> tuple[list[float], list[float]]:
    """(members' scores, non-members' scores) in probing order."""
    scored = [e for e in events if isinstance(e, MembershipScored)]
    return [e.score for e in scored if e.member], [e.score for e in scored if not e.member]
