"""Figures of an extraction run (pure: events → plotly figure); the data they draw comes from
:mod:`engine.views.extraction`, so a live run and a reopened one look the same.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..events import Event
from ..views.extraction import (
    COVERAGE_LABELS,
    LEAKED,
    RETRIEVED,
    UNTOUCHED,
    cascade_rows,
    coverage_states,
    metrics_rows,
)
from ..metrics.catalog import MK
from .axes import whole_ticks


# ---------------------------------------------------------------------------------------- figures
def coverage_map(
    ids: Sequence[str], events: Sequence[Event], upto_round: int | None = None, kb_size: int | None = None
) -> go.Figure:
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
    scale = [
        [0.0, colors[0]],
        [1 / 3, colors[0]],
        [1 / 3, colors[1]],
        [2 / 3, colors[1]],
        [2 / 3, colors[2]],
        [1.0, colors[2]],
    ]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            text=text,
            hoverinfo="text",
            zmin=-0.5,
            zmax=2.5,
            colorscale=scale,
            xgap=1,
            ygap=1,
            colorbar={"tickvals": [0, 1, 2], "ticktext": list(COVERAGE_LABELS), "title": "chunk"},
        )
    )
    counts = [states.count(s) for s in (UNTOUCHED, RETRIEVED, LEAKED)]
    counts[0] += n - len(ids) if len(ids) < n else 0
    fig.update_layout(
        title={
            "text": f"Knowledge base coverage — {n} chunks<br><sup>{counts[2]} leaked · "
            f"{counts[1]} retrieved only · {counts[0]} untouched</sup>",
            "font": {"size": 14},
        },
        xaxis={"visible": False},
        yaxis={"visible": False, "autorange": "reversed"},
        height=max(240, 14 * rows + 110),
        margin={"t": 60, "b": 10, "l": 10, "r": 10},
    )
    return fig


def leakage_curves(events: Sequence[Event]) -> go.Figure:
    """Per round: shares of the KB (CRR, retrieved coverage, repeat / ROUGE context rates) and counts
    (repeat contexts, ROUGE contexts, PII items leaked)."""
    rows = metrics_rows(events)
    x = [r["round"] for r in rows]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("share of the knowledge base", "count"))
    for key, name in (
        (MK.CRR, "CRR"),
        (MK.RETRIEVED_COVERAGE, "retrieved coverage"),
        ("repeat_contexts_rate", "repeat contexts"),
        ("rouge_contexts_rate", "ROUGE contexts"),
    ):
        fig.add_trace(
            go.Scatter(x=x, y=[r.get(key, 0) for r in rows], mode="lines+markers", name=name, legendgroup="share"),
            row=1,
            col=1,
        )
    for key, name in (
        (MK.REPEAT_CONTEXTS, "repeat contexts (n)"),
        (MK.ROUGE_CONTEXTS, "ROUGE contexts (n)"),
        (MK.PII_LEAKED, "PII items leaked"),
    ):
        fig.add_trace(
            go.Scatter(x=x, y=[r.get(key, 0) for r in rows], mode="lines+markers", name=name, legendgroup="count"),
            row=1,
            col=2,
        )
    top = max([r.get(k, 0) for r in rows for k in (MK.CRR, MK.RETRIEVED_COVERAGE)] + [0.05])
    fig.update_yaxes(range=[0, min(1.0, top * 1.2)], row=1, col=1)
    counts = [r.get(k, 0) for r in rows for k in (MK.REPEAT_CONTEXTS, MK.ROUGE_CONTEXTS, MK.PII_LEAKED)]
    fig.update_yaxes(rangemode="tozero", **whole_ticks(max(counts, default=1)), row=1, col=2)
    fig.update_xaxes(title_text="round", **whole_ticks(max(x, default=1)))
    fig.update_layout(height=330, margin={"t": 40, "b": 10}, legend={"orientation": "h", "y": -0.25})
    return fig


def worm_drift(history: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Worm: per round, cosine of the chosen target to the centroid of what was extracted, and of the
    optimised query to its target."""
    x = list(range(1, len(history) + 1))
    fig = go.Figure()
    for key, name in (
        ("target_vs_extracted", "target vs extracted (centroid)"),
        ("query_vs_target", "query vs target"),
    ):
        fig.add_trace(
            go.Scatter(x=x, y=[h.get(key) for h in history], mode="lines+markers", name=name, connectgaps=False)
        )
    fig.update_layout(
        xaxis_title="round",
        yaxis_title="cosine",
        xaxis=whole_ticks(len(x)),
        height=300,
        margin={"t": 30, "b": 10},
    )
    return fig


def cascade_bars(events: Sequence[Event]) -> go.Figure:
    """Cascade defense: tokens accepted (draft) / rejected (verifier) / suppressed, per answer."""
    rows = cascade_rows(events)
    x = [r["round"] for r in rows]
    fig = go.Figure()
    for key, color in (("accepted", "#2ca02c"), ("rejected", "#d62728"), ("suppressed", "#7f7f7f")):
        fig.add_trace(go.Bar(x=x, y=[r[key] for r in rows], name=key, marker_color=color))
    fig.update_layout(
        barmode="group",
        xaxis_title="round",
        yaxis_title="tokens",
        xaxis=whole_ticks(max(x, default=1)),
        height=300,
        margin={"t": 30, "b": 10},
    )
    return fig
