"""Saved runs and self-contained HTML reports (all numbers from the events; corpus text escaped)."""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from .paths import cache_dir
from .runs.events import Event, RunEnded, RunStarted, read_jsonl


def runs_dir() -> Path:
    return cache_dir("runs")


def list_saved_runs(root: Path | None = None) -> list[dict[str, Any]]:
    """Runs on disk (newest first): id, when, configuration headline, whether it finished."""
    root = root or runs_dir()
    out = []
    for d in sorted(root.glob("*/events.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            first = json.loads(d.open(encoding="utf-8").readline())
        except (json.JSONDecodeError, OSError):
            continue
        cfg = first.get("config", {})
        out.append({"run_id": d.parent.name, "path": str(d), "finished": (d.parent / "summary.json").is_file(),
                    "corpus": cfg.get("corpus"), "queries": cfg.get("queries"), "retriever": cfg.get("retriever"),
                    "attack": cfg.get("attack"), "target": cfg.get("target"), "injection": cfg.get("injection")})
    return out


def load_run(path: str | Path) -> list[Event]:
    return read_jsonl(path)


def summary_table(runs: dict[str, Sequence[Event]]) -> pd.DataFrame:
    """Headline metrics of several runs side by side (one column per run)."""
    from .runs.poisoning import summarize

    cols = {}
    for name, events in runs.items():
        s = summarize(list(events))
        col = {"retriever": s["retriever"], "attack": s["attack"], "target": s["target"], "injection": s["injection"],
               "queries": s["n_queries"], "corpus size": s["corpus_size"], **{f"ASR@{k}": v for k, v in s["asr"].items()},
               "mean poison rank": s["mean_poison_rank"], "Chroma agreement": s["store_agreement"]}
        for det, d in s["detectors"].items():
            if "tpr" in d:
                col.update({f"{det} TPR": d["tpr"], f"{det} FPR": d["fpr"], f"{det} AUROC": d["auroc"]})
        cols[name] = col
    return pd.DataFrame(cols)


def run_report_html(events: Sequence[Event], title: str | None = None) -> str:
    """A self-contained HTML report of one run: configuration, headline metrics, figures, per-question table."""
    from .analysis.views import rounds_table
    from .plots import asr_curves, detector_histogram, roc_figure
    from .runs.events import DetectorFitted

    events = list(events)
    started = next(e for e in events if isinstance(e, RunStarted))
    ended = next((e for e in events if isinstance(e, RunEnded)), None)
    title = title or f"Run {started.run_id}"
    dets = [e.detector for e in events if isinstance(e, DetectorFitted)]
    figs = [("Attack success as questions are attacked", asr_curves(events))]
    figs += [(f"{d}: clean vs poisoned scores", detector_histogram(events, d)) for d in dets]
    if dets:
        figs.append(("ROC", roc_figure(events, dets)))
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             "<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
             "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px}"
             "pre{white-space:pre-wrap}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>",
             f"<p>Status: {html.escape(ended.status if ended else 'in progress (partial)')}</p>",
             "<h2>Headline metrics</h2>", summary_table({started.run_id: events}).to_html(escape=True),
             "<h2>Configuration</h2>",
             f"<pre>{html.escape(json.dumps(started.config, indent=2, default=str))}</pre>"]
    for i, (caption, fig) in enumerate(figs):
        parts.append(f"<h2>{html.escape(caption)}</h2>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs="inline" if i == 0 else False))
    parts += ["<h2>Per question</h2>", rounds_table(events).to_html(index=False, escape=True),
              "<h2>Manifest</h2>", f"<pre>{html.escape(json.dumps(started.manifest, indent=2, default=str))}</pre>",
              "</body></html>"]
    return "\n".join(parts)
