"""Figures and per-round views for the extraction lab (pure: events → data / plotly figure).

Everything here reads only the run's events (and the KB's chunk ids / texts where given), so a
live run and a run reopened from its ``events.jsonl`` are shown the same way.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..metrics.overlap import shared_spans
from ..events import (AttackerState, DefenseApplied, Event, Generated, LeakScored, QueryIssued, Retrieved,
                           RoundEnded, RunEnded, RunStarted)

UNTOUCHED, RETRIEVED, LEAKED = 0, 1, 2
COVERAGE_LABELS = ("untouched", "retrieved", "leaked")


# ---------------------------------------------------------------------------------------- data
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


def round_view(events: Sequence[Event], rnd: int) -> dict[str, Any] | None:
    """Everything one round did: query, retrieval, defense actions, answer, leakage."""
    def one(cls):
        return next((e for e in events if isinstance(e, cls) and e.round == rnd), None)

    query, ret, gen, leak = one(QueryIssued), one(Retrieved), one(Generated), one(LeakScored)
    if query is None:
        return None
    actions = [{"defense": e.defense, "stage": e.stage, "action": e.action, "detail": dict(e.detail)}
               for e in events if isinstance(e, DefenseApplied) and e.round == rnd]
    return {
        "round": rnd, "query": query.text,
        "retrieved": list(zip(ret.doc_ids, ret.scores)) if ret else [],
        "actions": actions,
        "answer": gen.text if gen else "", "blocked_by": gen.blocked_by if gen else "",
        "context_tokens": gen.context_tokens if gen else 0, "answer_budget": gen.answer_budget if gen else 0,
        "completion_tokens": gen.completion_tokens if gen else 0,
        "context_ids": list(gen.context_ids) if gen else [], "info": dict(gen.info) if gen else {},
        "leaked": leaked_ids(leak) if leak else [],
        "recovered": list(leak.recovered) if leak else [],
        "repeat_contexts": list(leak.repeat_contexts) if leak else [],
        "rouge_contexts": list(leak.rouge_contexts) if leak else [],
        "recall": dict(leak.recall) if leak else {},
        "pii": list(leak.pii) if leak else [],
        "metrics": dict(leak.metrics) if leak else {},
    }


def budget_note(view: Mapping[str, Any]) -> tuple[str, bool]:
    """One line on what this round's answer could at most reproduce: (text, capped). Capped = the answer
    budget was smaller than the context, so CRR could not count every chunk in it."""
    ctx, budget = int(view.get("context_tokens") or 0), int(view.get("answer_budget") or 0)
    if view.get("blocked_by") or not budget:
        return "", False
    n_ctx = len(view.get("context_ids") or ())
    got = len(view.get("recovered") or ())
    line = (f"In context: {n_ctx} chunk(s), {ctx:,} tokens · answer budget {budget:,} tokens · answer "
            f"{int(view.get('completion_tokens') or 0):,} tokens · recovered this round: {got} chunk(s)")
    if budget < ctx:
        return (line + f" — the budget caps this round: at most {budget / max(ctx, 1):.0%} of the context could "
                       "be reproduced, so CRR undercounts what the model would leak"), True
    return line, False


def cost_line(summary: Mapping[str, Any]) -> str:
    """What the attack has cost so far, in one line (from :func:`summarize_extraction`)."""
    c = summary.get("cost") or {}
    if not c:
        return ""
    g, a = c.get("generator_tokens") or {}, c.get("attacker_tokens") or {}
    line = (f"Cost so far: {c.get('queries', 0)} queries · the system read {g.get('prompt', 0):,} tokens and wrote "
            f"{g.get('completion', 0):,} · {c.get('seconds', 0):.0f} s")
    if a.get("calls"):
        line += f" · the attacker's own LLM: {a['calls']} calls, {a.get('prompt', 0):,} in / {a.get('completion', 0):,} out"
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
    if attack in EXTRACTION_ATTACKS and EXTRACTION_ATTACKS.get(attack).uses_attacker_llm:
        attack += (f" (reflections by {ap.get('model') or cfg.get('attacker_llm')})" if cfg.get("attacker_llm")
                   else " (rule-based continuation: each stolen chunk's first and last sentence)")
    budget = ("answers as long as their context" if cfg.get("answer_budget", "fixed") == "context"
              else f"answers capped at {cfg.get('max_tokens')} tokens")
    defenses = "+".join(cfg.get("defenses") or ()) or "no defense"
    return (f"{attack} vs {gen} · KB {cfg.get('kb')} · {cfg.get('retriever', 'minilm')} top-{cfg.get('top_k')} · "
            f"{cfg.get('template', 'rag-privacy')} prompt · {budget} · {defenses}")


def marked_segments(source: str, answer: str, min_words: int = 4) -> list[tuple[str, bool]]:
    """``source`` cut into (text, copied) pieces: copied = part of a run of ≥ ``min_words`` words the
    answer repeats in order (:func:`engine.metrics.overlap.shared_spans`)."""
    out: list[tuple[str, bool]] = []
    pos = 0
    for s, e in shared_spans(source, answer, min_words=min_words):
        if s > pos:
            out.append((source[pos:s], False))
        out.append((source[s:e], True))
        pos = e
    if pos < len(source):
        out.append((source[pos:], False))
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
    """(agent, round, state) of the last ``attacker_state`` event; ("", 0, {}) before the first round."""
    last = next((e for e in reversed(events) if isinstance(e, AttackerState)), None)
    return (last.agent, last.round, dict(last.state)) if last else ("", 0, {})


def cascade_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Per answer of the cascade generator: accepted / rejected / suppressed token counts."""
    return [{"round": g.round, "accepted": int(g.info.get("accepted", 0)), "rejected": int(g.info.get("rejected", 0)),
             "suppressed": int(g.info.get("suppressed", 0)),
             "verifier_tokens": sum(1 for d in g.info.get("decisions", ()) if d == "verifier")}
            for g in events if isinstance(g, Generated) and "accepted" in g.info]


def metrics_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Cumulative leakage metrics after every round (one dict per round)."""
    return [{"round": e.round, **dict(e.metrics)} for e in events if isinstance(e, LeakScored)]


# ---------------------------------------------------------------------------------------- figures
def coverage_map(ids: Sequence[str], events: Sequence[Event], upto_round: int | None = None,
                 kb_size: int | None = None) -> go.Figure:
    """One cell per KB chunk, row-major in KB order: untouched / retrieved / leaked."""
    ids = list(ids)
    states = coverage_states(ids, events, upto_round)
    n = max(len(ids), kb_size or 0, 1)
    cols = max(1, math.ceil(math.sqrt(n * 2)))
    rows = math.ceil(n / cols)
    z: list[list[float | None]] = [[None] * cols for _ in range(rows)]
    text: list[list[str]] = [[""] * cols for _ in range(rows)]
    for i in range(n):
        r, c = divmod(i, cols)
        if i < len(ids):
            z[r][c] = states[i]
            text[r][c] = f"{ids[i]}: {COVERAGE_LABELS[states[i]]}"
        else:
            z[r][c] = UNTOUCHED
            text[r][c] = f"chunk {i + 1}: {COVERAGE_LABELS[UNTOUCHED]}"
    colors = ["#e8e8e8", "#f2b134", "#d62728"]
    scale = [[0.0, colors[0]], [1 / 3, colors[0]], [1 / 3, colors[1]], [2 / 3, colors[1]], [2 / 3, colors[2]],
             [1.0, colors[2]]]
    fig = go.Figure(go.Heatmap(z=z, text=text, hoverinfo="text", zmin=-0.5, zmax=2.5, colorscale=scale, xgap=1,
                               ygap=1, colorbar={"tickvals": [0, 1, 2], "ticktext": list(COVERAGE_LABELS),
                                                 "title": "chunk"}))
    counts = [states.count(s) for s in (UNTOUCHED, RETRIEVED, LEAKED)]
    counts[0] += n - len(ids) if len(ids) < n else 0
    fig.update_layout(title={"text": f"Knowledge base coverage — {n} chunks<br><sup>{counts[2]} leaked · "
                                     f"{counts[1]} retrieved only · {counts[0]} untouched</sup>", "font": {"size": 14}},
                      xaxis={"visible": False}, yaxis={"visible": False, "autorange": "reversed"},
                      height=max(240, 14 * rows + 110), margin={"t": 60, "b": 10, "l": 10, "r": 10})
    return fig


def leakage_curves(events: Sequence[Event]) -> go.Figure:
    """Per round: shares of the KB (CRR, retrieved coverage, repeat / ROUGE context rates) and counts
    (repeat contexts, ROUGE contexts, PII items leaked)."""
    rows = metrics_rows(events)
    x = [r["round"] for r in rows]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("share of the knowledge base", "count"))
    for key, name in (("crr", "CRR"), ("retrieved_coverage", "retrieved coverage"),
                      ("repeat_contexts_rate", "repeat contexts"), ("rouge_contexts_rate", "ROUGE contexts")):
        fig.add_trace(go.Scatter(x=x, y=[r.get(key, 0) for r in rows], mode="lines+markers", name=name,
                                 legendgroup="share"), row=1, col=1)
    for key, name in (("repeat_contexts", "repeat contexts (n)"), ("rouge_contexts", "ROUGE contexts (n)"),
                      ("pii_leaked", "PII items leaked")):
        fig.add_trace(go.Scatter(x=x, y=[r.get(key, 0) for r in rows], mode="lines+markers", name=name,
                                 legendgroup="count"), row=1, col=2)
    top = max([r.get(k, 0) for r in rows for k in ("crr", "retrieved_coverage")] + [0.05])
    fig.update_yaxes(range=[0, min(1.0, top * 1.2)], row=1, col=1)
    fig.update_yaxes(rangemode="tozero", row=1, col=2)
    fig.update_xaxes(title_text="round", tickformat="d")
    fig.update_layout(height=330, margin={"t": 40, "b": 10}, legend={"orientation": "h", "y": -0.25})
    return fig


def worm_drift(history: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Worm: per round, cosine of the chosen target to the centroid of what was extracted, and of the
    optimised query to its target."""
    x = list(range(1, len(history) + 1))
    fig = go.Figure()
    for key, name in (("target_vs_extracted", "target vs extracted (centroid)"), ("query_vs_target", "query vs target")):
        fig.add_trace(go.Scatter(x=x, y=[h.get(key) for h in history], mode="lines+markers", name=name,
                                 connectgaps=False))
    fig.update_layout(xaxis_title="round", yaxis_title="cosine", xaxis={"tickformat": "d"}, height=300,
                      margin={"t": 30, "b": 10})
    return fig


def cascade_bars(events: Sequence[Event]) -> go.Figure:
    """Cascade defense: tokens accepted (draft) / rejected (verifier) / suppressed, per answer."""
    rows = cascade_rows(events)
    x = [r["round"] for r in rows]
    fig = go.Figure()
    for key, color in (("accepted", "#2ca02c"), ("rejected", "#d62728"), ("suppressed", "#7f7f7f")):
        fig.add_trace(go.Bar(x=x, y=[r[key] for r in rows], name=key, marker_color=color))
    fig.update_layout(barmode="group", xaxis_title="round", yaxis_title="tokens", xaxis={"tickformat": "d"},
                      height=300, margin={"t": 30, "b": 10})
    return fig
