"""What an extraction run shows, from its events alone: per-round views, coverage, marked copies, one-line
summaries of its configuration, budget and cost. Pure data (no plotting, no Streamlit): a live run and a run
reopened from its ``events.jsonl`` are shown the same way; ``engine.plots.extraction`` draws figures from these.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ..attacker_states import last_state
from ..events import (
    DefenseApplied,
    Event,
    Generated,
    LeakScored,
    QueryIssued,
    Retrieved,
    RoundEnded,
    RunEnded,
    RunStarted,
    TenantsAssigned,
    TenantScoped,
)
from ..metrics.overlap import rouge_l, shared_spans, stemmed_tokens
from ..metrics.catalog import MK
from ..tenancy import filter_label

UNTOUCHED, RETRIEVED, LEAKED = 0, 1, 2
COVERAGE_LABELS = ("untouched", "retrieved", "leaked")


def rounds_played(events: Sequence[Event]) -> int:
    """The last round that ended (0 before any)."""
    return max((e.round for e in events if isinstance(e, RoundEnded)), default=0)


def run_status(events: Sequence[Event]) -> str:
    """completed / failed / in progress (the last run_ended after the last resume wins)."""
    status = "in progress"
    for e in events:
        if isinstance(e, RunEnded):
            status = e.status
        elif e.kind == "run_resumed":
            status = "in progress"
    return status


def run_config(events: Sequence[Event]) -> dict[str, Any]:
    """The run's configuration from ``run_started`` (empty when missing)."""
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    return dict(started.config) if started else {}


def leaked_ids(leak: LeakScored) -> list[str]:
    """Chunks this round leaked: newly recovered (CRR) or repeated / ROUGE contexts, in first-seen order."""
    return list(dict.fromkeys([*leak.recovered, *leak.repeat_contexts, *leak.rouge_contexts]))


LEAK_KINDS = {
    "recovered": "recovered: ROUGE-L recall ≥ the CRR threshold, first time (what CRR counts)",
    "verbatim": "verbatim: the answer repeats a run of its words in order",
    "ROUGE-L recall or precision > 0.5": "ROUGE-L recall or precision > 0.5 (precision: most of the answer is the "
    "chunk's words, however little of the chunk it repeats)",
}


def leak_kinds(v: Mapping[str, Any], cid: str) -> list[str]:
    """Why a round view's chunk counts as leaked: the keys of :data:`LEAK_KINDS` that apply."""
    return [
        k
        for k, ids in (
            ("recovered", v["recovered"]),
            ("verbatim", v[MK.REPEAT_CONTEXTS]),
            ("ROUGE-L recall or precision > 0.5", v[MK.ROUGE_CONTEXTS]),
        )
        if cid in ids
    ]


def rouge_of(source: str, answer: str) -> tuple[float, float]:
    """ROUGE-L (recall, precision) of ``answer`` against a chunk's ``source`` text, on the stems the leakage
    metrics use: recall is the share of the chunk the answer reproduces, precision the share of the answer that
    is the chunk's (a short answer made of a chunk's words has a low recall and a high precision)."""
    rr, rp, _ = rouge_l(stemmed_tokens(source), stemmed_tokens(answer))
    return rr, rp


def round_view(events: Sequence[Event], rnd: int) -> dict[str, Any] | None:
    """Everything one round did: query, retrieval, defense actions, answer, leakage."""

    def one(cls):
        return next((e for e in events if isinstance(e, cls) and e.round == rnd), None)

    query, ret, gen, leak = one(QueryIssued), one(Retrieved), one(Generated), one(LeakScored)
    if query is None:
        return None
    assigned = next((e for e in events if isinstance(e, TenantsAssigned)), None)
    scoped = one(TenantScoped)
    tenancy = None
    if assigned is not None:
        shown = set(ret.doc_ids if ret else ()) | set(scoped.dropped_ids if scoped else ())
        tenancy = {
            "identity": assigned.identity,
            "mode": assigned.mode,
            "owner": {d: t for t, ids in assigned.tenants.items() for d in ids if d in shown},
            "dropped": list(scoped.dropped_ids) if scoped else [],
        }
    actions = [
        {"defense": e.defense, "stage": e.stage, "action": e.action, "detail": dict(e.detail)}
        for e in events
        if isinstance(e, DefenseApplied) and e.round == rnd
    ]
    return {
        "round": rnd,
        "query": query.text,
        "retrieved": list(zip(ret.doc_ids, ret.scores)) if ret else [],
        "actions": actions,
        "answer": gen.text if gen else "",
        "blocked_by": gen.blocked_by if gen else "",
        "context_tokens": gen.context_tokens if gen else 0,
        "answer_budget": gen.answer_budget if gen else 0,
        "completion_tokens": gen.completion_tokens if gen else 0,
        "context_ids": list(gen.context_ids) if gen else [],
        "info": dict(gen.info) if gen else {},
        "leaked": leaked_ids(leak) if leak else [],
        "recovered": list(leak.recovered) if leak else [],
        MK.REPEAT_CONTEXTS: list(leak.repeat_contexts) if leak else [],
        MK.ROUGE_CONTEXTS: list(leak.rouge_contexts) if leak else [],
        "recall": dict(leak.recall) if leak else {},
        "pii": list(leak.pii) if leak else [],
        "canaries": list(leak.canaries) if leak else [],  # chunks whose canary this answer carried first
        "metrics": dict(leak.metrics) if leak else {},
        "tenancy": tenancy,  # a multi-tenant run: identity, mode, each shown chunk's tenant, what the filter cut
    }


def tenant_label(owner: str, identity: str) -> str:
    """A chunk's tenant as the round view shows it, short enough for a narrow column: the querying tenant's own in
    green ("🟢 own"), another's in red with its name ("🔴 tenant-2")."""
    if not owner:
        return ""
    return "🟢 own" if owner == identity else f"🔴 {owner}"


def tenancy_line(summary: Mapping[str, Any]) -> tuple[str, bool]:
    """One line on a multi-tenant run's isolation (empty for a one-owner run) and whether another tenant's data
    reached the context."""
    t = summary.get("tenancy")
    if not t:
        return "", False
    from ..metrics.intervals import fmt_interval

    leaked = bool(t[MK.CROSS_TENANT_CHUNKS])
    line = (
        f"Querying as {t['identity']} ({t['own_chunks']} of its own chunks; tenant filter: {filter_label(t['mode'])}): "
        f"{t[MK.CROSS_TENANT_ROUNDS]:.0%} of rounds reached another tenant "
        f"{fmt_interval(t.get(MK.CROSS_TENANT_ROUNDS + '_ci'), 2)}, {t[MK.CROSS_TENANT_CHUNKS]} of their chunks "
        f"reached the context, {t['cross_tenant_leaked_chunks']} of {t['foreign_chunks']} were recovered "
        f"{fmt_interval(t.get(MK.CROSS_TENANT_LEAKED + '_ci'), 3)}"
    )
    if t.get("tenant_dropped_rounds"):
        line += (
            f"; the filter after the top-K cut results in {t['tenant_dropped_rounds']} rounds — the short answer "
            "itself tells the attacker another tenant holds something close"
        )
    return line, leaked


def canary_line(summary: Mapping[str, Any]) -> tuple[str, bool]:
    """One line on a run's canaries (empty when none were planted) and whether any leaked: how many of the planted
    canaries the answers carried, the Wilson interval of that share (an estimate of the share of the knowledge base
    that left it, usable when the scorer does not know the KB's text), and what a hit proves."""
    planted = int(summary.get("canaries_planted") or 0)
    if not planted:
        return "", False
    from ..metrics.intervals import fmt_interval

    leaked = int(summary.get("canaries_leaked") or 0)
    line = (
        f"Canaries: {leaked} of {planted} planted leaked ({leaked / planted:.0%}, 95% interval "
        f"{fmt_interval(summary.get('canaries_ci'), 2)}) — "
        + (
            "each one is proof that its chunk left the knowledge base (a canary exists nowhere else)"
            if leaked
            else "none of the answers carried one so far (a hit would be proof: a canary exists nowhere else)"
        )
    )
    return line, bool(leaked)


def budget_note(view: Mapping[str, Any]) -> tuple[str, bool]:
    """One line on what this round's answer could at most reproduce: (text, capped). Capped = the answer
    budget was smaller than the context, so CRR could not count every chunk in it."""
    ctx, budget = int(view.get("context_tokens") or 0), int(view.get("answer_budget") or 0)
    if view.get("blocked_by") or not budget:
        return "", False
    n_ctx = len(view.get("context_ids") or ())
    got = len(view.get("recovered") or ())
    line = (
        f"In context: {n_ctx} chunk(s), {ctx:,} tokens · answer budget {budget:,} tokens · answer "
        f"{int(view.get('completion_tokens') or 0):,} tokens · chunks recovered for the first time: {got}"
    )
    if budget < ctx:
        return (
            line + f" — the budget caps this round: at most {budget / max(ctx, 1):.0%} of the context could "
            "be reproduced, so CRR undercounts what the model would leak"
        ), True
    return line, False


def cost_line(summary: Mapping[str, Any]) -> str:
    """What the attack has cost so far, in one line (from :func:`summarize_extraction`)."""
    c = summary.get("cost") or {}
    if not c:
        return ""
    g, a = c.get("generator_tokens") or {}, c.get("attacker_tokens") or {}
    line = (
        f"Cost so far: {c.get('queries', 0)} queries · the system read {g.get('prompt', 0):,} tokens and wrote "
        f"{g.get('completion', 0):,} · {c.get('seconds', 0):.0f} s"
    )
    if a.get("calls"):
        line += (
            f" · the attacker's own LLM: {a['calls']} calls, {a.get('prompt', 0):,} in / {a.get('completion', 0):,} out"
        )
    if c.get("usd") is not None:
        line += f" · ${c['usd']:.4f}"
    return line


def config_summary(cfg: Mapping[str, Any]) -> str:
    """One plain sentence of what a run is: attack, its LLM, the system and its defenses."""
    gp = dict(cfg.get("generator_params") or {})
    gen = gp.get("model") or cfg.get("generator", "")
    ap = dict(cfg.get("attacker_llm_params") or {})
    from ..attacks.extraction import EXTRACTION_ATTACKS

    attack = str(cfg.get("attack", ""))
    if attack in EXTRACTION_ATTACKS and EXTRACTION_ATTACKS.get(attack).can_use("attacker_llm"):
        attack += (
            f" (reflections by {ap.get('model') or cfg.get('attacker_llm')})"
            if cfg.get("attacker_llm")
            else " (rule-based continuation: each stolen chunk's first and last sentence)"
        )
    budget = (
        "answers as long as their context"
        if cfg.get("answer_budget", "fixed") == "context"
        else f"answers capped at {cfg.get('max_tokens')} tokens"
    )
    defenses = "+".join(cfg.get("defenses") or ()) or "no defense"
    tenants = (
        f" · {cfg['tenants']} tenants, querying as {cfg.get('identity') or 'tenant-1'}, tenant filter: "
        f"{filter_label(str(cfg.get('tenant_filter', 'inside')))}"
        if cfg.get("tenants")
        else ""
    )
    return (
        f"{attack} vs {gen} · KB {cfg.get('kb')}{tenants} · {cfg.get('retriever', 'minilm')} top-{cfg.get('top_k')} · "
        f"{cfg.get('template', 'rag-privacy')} prompt · {budget} · {defenses}"
    )


def marked_segments(source: str, answer: str, min_words: int = 4) -> list[tuple[str, bool]]:
    """``source`` cut into (text, copied) pieces: copied = part of a run of ≥ ``min_words`` words the
    answer repeats in order (:func:`engine.metrics.overlap.shared_spans`). Punctuation between two copied runs,
    or touching one ("98%", "121/83", "yahoo.com."), is marked with them: the runs are of words, and a mark that
    stopped at every sign would cut "98%" into two highlighted pieces with a gap."""
    out: list[tuple[str, bool]] = []
    pos = 0
    for s, e in shared_spans(source, answer, min_words=min_words):
        if s > pos:
            out.append((source[pos:s], False))
        out.append((source[s:e], True))
        pos = e
    if pos < len(source):
        out.append((source[pos:], False))
    return _join_signs(out)


_SIGNS = re.compile(r"[^\w]*")


def _join_signs(pieces: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    marked = [c for _, c in pieces]
    for i, (text, copied) in enumerate(pieces):
        if copied or not _SIGNS.fullmatch(text):
            continue
        before = i > 0 and marked[i - 1]
        after = i + 1 < len(pieces) and marked[i + 1]
        touching = not any(ch.isspace() for ch in text)  # "%" after "98", not " - " between two sentences
        if (before and after) or ((before or after) and touching):
            marked[i] = True
    out: list[tuple[str, bool]] = []
    for (text, _), copied in zip(pieces, marked):
        if out and out[-1][1] == copied:
            out[-1] = (out[-1][0] + text, copied)
        else:
            out.append((text, copied))
    return out


def copied_share(source: str, answer: str) -> float:
    """Share of the source's characters inside copied spans."""
    if not source:
        return 0.0
    return sum(e - s for s, e in shared_spans(source, answer)) / len(source)


def coverage_states(ids: Sequence[str], events: Sequence[Event], upto_round: int | None = None) -> list[int]:
    """Per KB chunk (in ``ids`` order): 0 untouched, 1 retrieved at least once, 2 leaked at least once."""
    state = {i: UNTOUCHED for i in ids}
    for e in events:
        r = getattr(e, "round", 0)
        if upto_round is not None and r > upto_round:
            continue
        if isinstance(e, Retrieved):
            for d in e.doc_ids:
                if d in state and state[d] == UNTOUCHED:
                    state[d] = RETRIEVED
        elif isinstance(e, LeakScored):
            for d in leaked_ids(e):
                if d in state:
                    state[d] = LEAKED
    return [state[i] for i in ids]


def attacker_state(events: Sequence[Event]) -> tuple[str, int, dict[str, Any]]:
    """(agent, round, full state) after the last ``attacker_state`` event (the events store deltas:
    :mod:`engine.attacker_states`); ("", 0, {}) before the first round."""
    return last_state(events)


def cascade_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Per answer of the cascade generator: accepted / rejected / suppressed token counts."""
    return [
        {
            "round": g.round,
            "accepted": int(g.info.get("accepted", 0)),
            "rejected": int(g.info.get("rejected", 0)),
            "suppressed": int(g.info.get("suppressed", 0)),
            "verifier_tokens": sum(1 for d in g.info.get("decisions", ()) if d == "verifier"),
        }
        for g in events
        if isinstance(g, Generated) and "accepted" in g.info
    ]


def metrics_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Cumulative leakage metrics after every round (one dict per round)."""
    return [{"round": e.round, **dict(e.metrics)} for e in events if isinstance(e, LeakScored)]
