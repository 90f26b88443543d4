"""Saved runs and self-contained HTML reports (all numbers from the events; corpus text escaped)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Sequence

import pandas as pd

from .events import Event, RunEnded, RunStarted, read_jsonl
from .metrics.catalog import MK


def run_kind(events: Sequence[Event]) -> str:
    """``poison`` or ``extract``, from the run's manifest."""
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    return (started.manifest or {}).get("kind", "poison") if started else "poison"


def extraction_summary_table(runs: dict[str, Sequence[Event]]) -> pd.DataFrame:
    """Headline leakage metrics of extraction runs side by side (one column per run)."""
    from .runs.extraction import summarize_extraction

    cols = {}
    for name, events in runs.items():
        s = summarize_extraction(list(events))
        cols[name] = {
            "knowledge base": s["kb"],
            "attack": s["attack"],
            "defenses": ", ".join(s["defenses"]) or "none",
            "rounds played": s["rounds"],
            "KB chunks": s["kb_size"],
            "CRR": s[MK.CRR],
            "retrieved coverage": s[MK.RETRIEVED_COVERAGE],
            "repeat contexts": s[MK.REPEAT_CONTEXTS],
            "ROUGE contexts": s[MK.ROUGE_CONTEXTS],
            "semantic leak": s[MK.SEMANTIC_LEAK],
            "PII leaked": s[MK.PII_LEAKED],
            "blocked queries": s["blocked"],
            "completion tokens": s["tokens"]["completion"],
        }
        if s.get("canaries_planted"):  # planted canaries: how many the answers carried (a leak with no false positive)
            cols[name]["canaries leaked"] = f"{s['canaries_leaked']} of {s['canaries_planted']}"
        t = s.tenancy or {}
        if t:  # a multi-tenant run: the filter is what tells such runs apart
            cols[name] = {
                "tenant filter": f"{t.get('mode')} (as {t.get('identity')})",
                # a share of the rounds played: "100%", never a "1" read as one round
                "cross-tenant rounds": (
                    f"{t[MK.CROSS_TENANT_ROUNDS]:.0%}" if t.get(MK.CROSS_TENANT_ROUNDS) is not None else None
                ),
                "other tenants' chunks": t.get(MK.CROSS_TENANT_CHUNKS),
                **cols[name],
            }
    # one column mixes text and numbers: render every cell as text (Arrow needs one type per column); a row only
    # some runs have (a one-owner run beside multi-tenant ones) reads "—", not "nan"
    return pd.DataFrame(cols).map(
        lambda v: (
            "—" if v is None or (isinstance(v, float) and v != v) else f"{v:.4g}" if isinstance(v, float) else str(v)
        )
    )


def load_run(path: str | Path) -> list[Event]:
    """The events of a saved run's ``events.jsonl`` (a torn last line is dropped)."""
    return read_jsonl(path)


def summary_table(runs: dict[str, Sequence[Event]]) -> pd.DataFrame:
    """Headline metrics of several runs side by side (one column per run; extraction runs too)."""
    from .runs.poisoning import summarize

    if runs and all(run_kind(ev) == "extract" for ev in runs.values()):
        return extraction_summary_table(runs)

    cols = {}
    for name, events in runs.items():
        s = summarize(list(events))
        col = {
            "retriever": s["retriever"],
            "attack": s["attack"],
            "target": s["target"],
            "injection": s["injection"],
            "queries": s["n_queries"],
            "corpus size": s["corpus_size"],
            **{f"ASR@{k}": v for k, v in s["asr"].items()},
            "mean poison rank": s["mean_poison_rank"],
            "Chroma agreement": s["store_agreement"],
        }
        for det, d in s["detectors"].items():
            if "tpr" in d:
                col.update({f"{det} TPR": d["tpr"], f"{det} FPR": d["fpr"], f"{det} AUROC": d["auroc"]})
        cols[name] = col
    # one column mixes text and numbers: render every cell as text (Arrow needs one type per column)
    return pd.DataFrame(cols).map(lambda v: f"{v:.4g}" if isinstance(v, float) else str(v))


def run_report_html(events: Sequence[Event], title: str | None = None) -> str:
    """A self-contained HTML report of one run: configuration, headline metrics, figures, per-question table."""
    from .views.poisoning_run import rounds_table
    from .plots import asr_curves, detector_histogram, roc_figure
    from .events import DetectorFitted

    events = list(events)
    if run_kind(events) == "extract":
        return extraction_report_html(events, title)
    started = next(e for e in events if isinstance(e, RunStarted))
    ended = next((e for e in events if isinstance(e, RunEnded)), None)
    title = title or f"Run {started.run_id}"
    dets = [e.detector for e in events if isinstance(e, DetectorFitted)]
    figs = [("Attack success as questions are attacked", asr_curves(events))]
    figs += [(f"{d}: clean vs poisoned scores", detector_histogram(events, d)) for d in dets]
    if dets:
        figs.append(("ROC", roc_figure(events, dets)))
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px}"
        "pre{white-space:pre-wrap}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Status: {html.escape(ended.status if ended else 'in progress (partial)')}</p>",
        "<h2>Headline metrics</h2>",
        summary_table({started.run_id: events}).to_html(escape=True),
        "<h2>Configuration</h2>",
        f"<pre>{html.escape(json.dumps(started.config, indent=2, default=str))}</pre>",
    ]
    for i, (caption, fig) in enumerate(figs):
        parts.append(f"<h2>{html.escape(caption)}</h2>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs="inline" if i == 0 else False))
    parts += [
        "<h2>Per question</h2>",
        rounds_table(events).to_html(index=False, escape=True),
        "<h2>Manifest</h2>",
        f"<pre>{html.escape(json.dumps(started.manifest, indent=2, default=str))}</pre>",
        "</body></html>",
    ]
    return "\n".join(parts)


def _html_head(title: str) -> list[str]:
    return [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;"
        "vertical-align:top}pre{white-space:pre-wrap}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]


def extraction_report_html(events: Sequence[Event], title: str | None = None) -> str:
    """A self-contained HTML report of an extraction run: metrics, curves, every round (text escaped)."""
    import plotly.graph_objects as go

    from .runs.extraction import summarize_extraction

    events = list(events)
    started = next(e for e in events if isinstance(e, RunStarted))
    ended = [e for e in events if isinstance(e, RunEnded)]
    title = title or f"Extraction run {started.run_id}"
    s = summarize_extraction(events)
    fig = go.Figure()
    for k in (MK.CRR, MK.RETRIEVED_COVERAGE, MK.SEMANTIC_LEAK):
        fig.add_scatter(y=s["curves"][k], x=list(range(1, len(s["curves"][k]) + 1)), mode="lines+markers", name=k)
    fig.update_layout(xaxis_title="round", yaxis_title="share of the knowledge base", height=360)
    rounds: dict[int, dict] = {}
    for e in events:
        r = getattr(e, "round", 0)
        if not r:
            continue
        row = rounds.setdefault(r, {"round": r})
        if e.kind == "query_issued":
            row["query"] = e.text
        elif e.kind == "generated":
            row.update(answer=e.text, context=", ".join(e.context_ids), blocked_by=e.blocked_by)
        elif e.kind == "leak_scored":
            row.update(recovered=", ".join(e.recovered), pii=", ".join(e.pii))
    table = pd.DataFrame(list(rounds.values()))
    parts = _html_head(title) + [
        f"<p>Status: {html.escape(ended[-1].status if ended else 'in progress (partial)')}</p>",
        "<h2>Headline metrics</h2>",
        extraction_summary_table({started.run_id: events}).to_html(escape=True),
        "<h2>Leakage as rounds go by</h2>",
        fig.to_html(full_html=False, include_plotlyjs="inline"),
        "<h2>Configuration</h2>",
        f"<pre>{html.escape(json.dumps(started.config, indent=2, default=str))}</pre>",
        "<h2>Rounds</h2>",
        table.to_html(index=False, escape=True),
        "<h2>Manifest</h2>",
        f"<pre>{html.escape(json.dumps(started.manifest, indent=2, default=str))}</pre>",
        "</body></html>",
    ]
    return "\n".join(parts)
