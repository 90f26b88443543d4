"""Figures of a membership experiment (pure: summary or events → plotly figure)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import plotly.graph_objects as go

from ..events import Event
from ..views.membership import scores_by_class

MEMBER, NON_MEMBER = "#d62728", "#1f77b4"


def roc_figure(summary: Mapping[str, Any]) -> go.Figure:
    """The ROC curve with the chance diagonal, its AUROC (and interval) in the title."""
    roc = dict(summary.get("roc") or {})
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line={"dash": "dot", "color": "#999"}, name="chance (0.5)")
    )
    fig.add_trace(
        go.Scatter(
            x=roc.get("fpr", []),
            y=roc.get("tpr", []),
            # straight segments between thresholds: where members and non-members tie on a score (a yes/no
            # answer), one threshold adds both and the ROC runs diagonally — the area under these segments is the
            # AUROC with ties counted ½ (steps would draw a smaller area than the number in the title)
            mode="lines+markers",
            line={"shape": "linear"},
            name="attack",
        )
    )
    auc, ci = summary.get("auroc"), summary.get("auroc_ci")
    title = (
        "ROC curve" if auc is None else f"ROC curve — AUROC {auc:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
    )
    fig.update_layout(
        title=title,
        xaxis_title="FPR: non-members called members",
        yaxis_title="TPR: members found",
        xaxis={"range": [0, 1]},
        yaxis={"range": [0, 1.02]},
        height=380,
        margin={"l": 50, "r": 20, "t": 50, "b": 50},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


FEW_LEVELS = 4  # scores taking at most this many values (a yes/no attack) are drawn as shares, not boxes


def score_figure(events: Sequence[Event]) -> go.Figure:
    """Each record's score, members beside non-members: how far apart the two classes sit. An attack whose score
    takes only a few values (the direct question's yes = 1 / no = 0) is drawn as the share of each class at each
    value — a box of zeros and ones would be a flat line."""
    mem, non = scores_by_class(events)
    fig = go.Figure()
    levels = sorted(set(mem) | set(non))
    if 0 < len(levels) <= FEW_LEVELS:
        for name, ys, color in (("members", mem, MEMBER), ("non-members", non, NON_MEMBER)):
            shares = [sum(y == v for y in ys) / len(ys) if ys else 0.0 for v in levels]
            fig.add_trace(
                go.Bar(
                    x=[f"{v:g}" for v in levels],
                    y=shares,
                    name=f"{name} ({len(ys)})",
                    marker_color=color,
                    text=[f"{x:.0%}" for x in shares],
                    textposition="outside",
                )
            )
        fig.update_layout(
            title="Share of records at each score",
            xaxis_title="score (higher: called a member)",
            yaxis={"title": "share of the class", "tickformat": ".0%", "range": [0, 1.15]},
            barmode="group",
            height=380,
            margin={"l": 50, "r": 20, "t": 50, "b": 50},
            legend={"orientation": "h", "y": -0.25},
        )
        return fig
    for name, ys, color in (("members", mem, MEMBER), ("non-members", non, NON_MEMBER)):
        fig.add_trace(
            go.Box(y=ys, name=f"{name} ({len(ys)})", boxpoints="all", jitter=0.4, pointpos=0, marker_color=color)
        )
    fig.update_layout(
        title="Attack score by record",
        yaxis_title="score (higher: called a member)",
        height=380,
        margin={"l": 50, "r": 20, "t": 50, "b": 50},
        showlegend=False,
    )
    return fig
