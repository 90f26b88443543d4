"""Figures for the defense comparison and teaching mode (pure: rows / results → plotly figure)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..metrics.catalog import CATALOG

_LABELS = {k: m.label for k, m in CATALOG.items()}


def _name(row: dict[str, Any], several_attacks: bool) -> str:
    return f"{row['configuration']} · {row['attack']}" if several_attacks else str(row["configuration"])


def comparison_curves(rows: Sequence[dict[str, Any]], metric: str = "crr") -> go.Figure:
    """Per-round curves of one leakage metric, one line per configuration (and attack, if several)."""
    fig = go.Figure()
    several = len({r["attack"] for r in rows}) > 1
    longest = 1
    for r in rows:
        y = list((r.get("curves") or {}).get(metric) or [])
        longest = max(longest, len(y))
        fig.add_trace(go.Scatter(x=list(range(1, len(y) + 1)), y=y, mode="lines+markers", name=_name(r, several)))
    fig.update_layout(xaxis_title="attack round", yaxis_title=_LABELS.get(metric, metric), margin={"t": 30},
                      xaxis={"tickformat": "d", "range": [0.5, longest + 0.5]}, legend_title="configuration")
    return fig


def tradeoff_scatter(rows: Sequence[dict[str, Any]], x: str = "utility_acc", y: str = "crr") -> go.Figure:
    """Security vs utility: one labelled point per configuration (per attack, if several). Lower-right is better."""
    fig = go.Figure()
    several = len({r["attack"] for r in rows}) > 1
    for r in rows:
        xv, yv = r.get(x), r.get(y)
        if xv is None or yv is None:
            continue
        label = _name(r, several)
        fig.add_trace(go.Scatter(x=[xv], y=[yv], mode="markers+text", name=label, text=[label],
                                 textposition="top center", marker={"size": 14}))
    fig.update_layout(xaxis_title=f"{_LABELS.get(x, x)} (higher = more useful)",
                      yaxis_title=f"{_LABELS.get(y, y)} (lower = more secure)", margin={"t": 30},
                      xaxis={"range": [-0.05, 1.05]} if x.startswith("utility_") else {},
                      legend_title="configuration")
    return fig


def ratio_bars(rows: Sequence[dict[str, Any]], metric: str = "crr") -> go.Figure:
    """Each configuration's leakage as a ratio to no protection (1 = no change)."""
    fig = go.Figure()
    for attack in dict.fromkeys(r["attack"] for r in rows):
        sub = [r for r in rows if r["attack"] == attack]
        fig.add_trace(go.Bar(x=[r["configuration"] for r in sub], y=[r.get(f"{metric}_ratio") for r in sub],
                             name=attack))
    fig.add_hline(y=1.0, line_dash="dot", annotation_text="no protection")
    fig.update_layout(yaxis_title=f"{_LABELS.get(metric, metric)} ÷ none", barmode="group", margin={"t": 30})
    return fig


def cluster_view(result: Any) -> go.Figure:
    """Knowledge-base chunks in 2-D before / after contrastive reindexing, coloured by HDBSCAN pseudo-label.

    ``result`` is a :class:`~engine.defenses.supcon.ReindexResult`; the two panels have separate PCA
    axes (not comparable), so look at how tight and apart the colours are, not at positions.
    """
    labels = np.asarray(result.labels)
    sb, sa = dict(result.separation_before or {}), dict(result.separation_after or {})

    def title(which: str, s: dict) -> str:
        sil = s.get("silhouette")
        return f"{which} (silhouette {sil:.2f})" if isinstance(sil, float) and np.isfinite(sil) else which

    fig = make_subplots(rows=1, cols=2, subplot_titles=(title("before reindexing", sb), title("after reindexing", sa)))
    text = [f"chunk {i} · cluster {int(c)}" if c >= 0 else f"chunk {i} · noise" for i, c in enumerate(labels)]
    colours = np.where(labels < 0, -1, labels % 10)
    for col, proj in ((1, result.projection_before), (2, result.projection_after)):
        p = np.asarray(proj)
        fig.add_trace(go.Scatter(x=p[:, 0], y=p[:, 1], mode="markers", text=text, hoverinfo="text",
                                 name="before" if col == 1 else "after", showlegend=False,
                                 marker={"size": 6, "color": colours, "colorscale": "Turbo", "cmin": -1, "cmax": 9,
                                         "line": {"width": 0}}), row=1, col=col)
    fig.update_layout(margin={"t": 40}, height=420)
    return fig
