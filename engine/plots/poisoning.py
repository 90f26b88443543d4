"""Figures for the poisoning lab and sweeps (pure: inputs → plotly figure)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..metrics import asr_curve, detector_scores, roc_points
from ..events import DetectorFitted, Event
from .axes import whole_ticks
from .layers import layer_style


def table1_heatmap(table: pd.DataFrame, k: int) -> go.Figure:
    """Heat map of a Table-1 pivot (rows corpus/retriever/query set, columns target)."""
    if table.empty:
        return go.Figure()
    ylabels = [" / ".join(map(str, idx)) if isinstance(idx, tuple) else str(idx) for idx in table.index]
    z = table.to_numpy(dtype=float)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[str(c) for c in table.columns],
            y=ylabels,
            zmin=0,
            zmax=1,
            colorscale="Reds",
            text=np.round(z, 2),
            texttemplate="%{text}",
            colorbar={"title": f"ASR@{k}"},
        )
    )
    fig.update_layout(
        title=f"Top-{k} attack success rate", yaxis={"autorange": "reversed"}, height=max(300, 28 * len(ylabels) + 120)
    )
    return fig


def asr_curves(events: Sequence[Event], ks: Sequence[int] = (1, 2, 5)) -> go.Figure:
    """Running ASR@K after each attacked query, one line per K in ``ks``."""
    fig = go.Figure()
    for i, k in enumerate(ks):  # ASR@1 ≤ ASR@2 ≤ ASR@5 often coincide: layered, each visible around the next
        y = asr_curve(events, k)
        fig.add_trace(
            go.Scatter(
                x=list(range(1, len(y) + 1)), y=y, mode="lines+markers", name=f"ASR@{k}", **layer_style(i, len(ks))
            )
        )
    n = max(1, len(asr_curve(events, ks[0])))
    fig.update_layout(
        xaxis_title="queries attacked",
        yaxis_title="attack success rate",
        yaxis_range=[0, 1.05],
        xaxis={**whole_ticks(n), "range": [0.5, n + 0.5]},
        margin={"t": 30},
    )
    return fig


def detector_histogram(events: Sequence[Event], detector: str) -> go.Figure:
    """Score distributions of held-out clean documents vs poisons, with the threshold (Figure 2)."""
    fitted = next((e for e in events if isinstance(e, DetectorFitted) and e.detector == detector), None)
    fig = go.Figure()
    s, y, _ = detector_scores(events, detector)
    if not len(s):
        return fig
    _clean_and_poisoned(fig, s[y == 0], s[y == 1])
    if fitted is not None:
        fig.add_vline(x=fitted.threshold, line_dash="dash", annotation_text="threshold (out-of-fold 95th pct)")
    fig.update_layout(
        barmode="overlay",
        xaxis_title=f"{detector} score",
        yaxis_title="documents",
        margin={"t": 40},  # room for the threshold's label, not plotly's 100 px for a title it has none of
        **_score_axes(s[y == 0], s[y == 1]),
    )
    return fig


def _clean_and_poisoned(fig: go.Figure, clean: np.ndarray, poison: np.ndarray) -> None:
    """The two overlaid score histograms, each bar outlined in its colour: where poisons and clean documents share
    a bin, both outlines show (filled bars alone hid the few clean ones under the red)."""
    for x, name, colour, fill in (
        (poison, "poisoned", "#d62728", "rgba(214,39,40,0.45)"),
        (clean, "clean (held out)", "#1f77b4", "rgba(31,119,180,0.45)"),
    ):
        fig.add_trace(
            go.Histogram(x=x, name=name, nbinsx=40, marker={"color": fill, "line": {"color": colour, "width": 1.5}})
        )


def _score_axes(*samples: np.ndarray) -> dict:
    """Axes of a score histogram: scores in powers of ten where tiny (an ℓ2 norm's spread about 1 is ~1e-7: no
    "20n" SI prefixes), documents counted in whole numbers (the tallest of 40 bins bounds the step)."""
    tallest = max((int(np.histogram(x, bins=40)[0].max()) for x in samples if len(x)), default=1)
    return {"xaxis": {"exponentformat": "power"}, "yaxis": whole_ticks(tallest)}


def roc_figure(events: Sequence[Event], detectors: Sequence[str]) -> go.Figure:
    """ROC curves of ``detectors`` on one run, with the chance diagonal."""
    fig = go.Figure()
    for d in detectors:
        fpr, tpr = roc_points(events, d)
        if len(fpr):
            fig.add_trace(go.Scatter(x=fpr, y=tpr, mode="lines", name=d))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line={"dash": "dot"}, name="chance"))
    fig.update_layout(xaxis_title="false-positive rate", yaxis_title="true-positive rate", margin={"t": 30})
    return fig


def score_histogram(clean: np.ndarray, poison: np.ndarray, threshold: float, name: str) -> go.Figure:
    """Clean vs poisoned score distributions with a (possibly user-set) threshold (paper Figure 2)."""
    fig = go.Figure()
    _clean_and_poisoned(fig, clean, poison)
    fig.add_vline(x=threshold, line_dash="dash", annotation_text="threshold")
    fig.update_layout(
        barmode="overlay",
        xaxis_title=f"{name} score",
        yaxis_title="documents",
        margin={"t": 30},
        **_score_axes(np.asarray(clean), np.asarray(poison)),
    )
    return fig


def roc_from_scores(curves: dict[str, tuple[np.ndarray, np.ndarray]]) -> go.Figure:
    """ROC curves from {detector: (clean scores, poison scores)}."""
    from sklearn.metrics import roc_auc_score, roc_curve

    fig = go.Figure()
    for name, (clean, poison) in curves.items():
        if len(clean) and len(poison):
            y = np.r_[np.zeros(len(clean)), np.ones(len(poison))]
            s = np.r_[clean, poison]
            f, t, _ = roc_curve(y, s)
            fig.add_trace(go.Scatter(x=f, y=t, mode="lines", name=f"{name} (AUROC {roc_auc_score(y, s):.3f})"))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line={"dash": "dot"}, name="chance"))
    fig.update_layout(xaxis_title="false-positive rate", yaxis_title="true-positive rate", margin={"t": 30})
    return fig


def embedding_scatter(df: pd.DataFrame, detector: str | None = None) -> go.Figure:
    """2-D PCA map of a round: query, clean top-K, poison (marked by the detector's verdict), anchors."""
    fig = go.Figure()
    styles = {
        "anchor sample": ("#bbbbbb", "circle", 6),
        "clean top-K": ("#1f77b4", "circle", 10),
        "query": ("#2ca02c", "star", 16),
        "poison": ("#d62728", "x", 14),
    }
    for kind, (color, symbol, size) in styles.items():
        part = df[df.kind == kind]
        if part.empty:
            continue
        label = kind
        if kind == "poison" and detector and f"{detector}_flagged" in part:
            flagged = bool(part[f"{detector}_flagged"].eq(True).any())
            label = f"poison ({'flagged' if flagged else 'missed'} by {detector})"
        fig.add_trace(
            go.Scatter(
                x=part.x,
                y=part.y,
                mode="markers",
                name=label,
                text=part.doc_id,
                hovertemplate="%{text}<extra></extra>",
                marker={"color": color, "symbol": symbol, "size": size},
            )
        )
    fig.update_layout(xaxis_title="PC 1", yaxis_title="PC 2", margin={"t": 30})
    return fig


def correlation_scatter(df: pd.DataFrame, x: str, y: str, labels: dict[str, str], stats_: dict) -> go.Figure:
    """Scatter of two per-query features with the correlation in the title."""
    fig = go.Figure(
        go.Scatter(
            x=df[x],
            y=df[y],
            mode="markers",
            text=df.get("query_id"),
            hovertemplate="%{text}<br>%{x}, %{y}<extra></extra>",
            marker={"size": 7, "opacity": 0.7},
        )
    )
    title = (
        f"Pearson r = {stats_['pearson_r']:.2f} (p = {stats_['pearson_p']:.2g}), "
        f"Spearman ρ = {stats_['spearman_rho']:.2f} (p = {stats_['spearman_p']:.2g}), n = {stats_['n']}"
    )
    fig.update_layout(xaxis_title=labels.get(x, x), yaxis_title=labels.get(y, y), title=title, margin={"t": 40})
    return fig


def asr_compare(runs: dict[str, Sequence[Event]], k: int = 2) -> go.Figure:
    """Running ASR@K of several runs overlaid."""
    fig = go.Figure()
    longest = 1
    for i, (name, events) in enumerate(runs.items()):
        y = asr_curve(list(events), k)
        longest = max(longest, len(y))
        fig.add_trace(
            go.Scatter(x=list(range(1, len(y) + 1)), y=y, mode="lines+markers", name=name, **layer_style(i, len(runs)))
        )
    fig.update_layout(
        xaxis_title="queries attacked",
        yaxis_title=f"ASR@{k}",
        yaxis_range=[0, 1.05],
        xaxis=whole_ticks(longest),
        margin={"t": 30},
    )
    return fig
