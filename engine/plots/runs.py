"""Figures comparing saved extraction runs."""

from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go

from ..events import Event, LeakScored
from ..metrics.catalog import MK, label
from .axes import whole_ticks
from .layers import layer_style


def leakage_compare(runs: dict[str, Sequence[Event]], metric: str = MK.CRR) -> go.Figure:
    """One line per run: the cumulative leakage ``metric`` after each round."""
    fig = go.Figure()
    longest = 1
    for i, (name, events) in enumerate(runs.items()):  # runs that leak alike coincide: layered, each visible
        ys = [e.metrics.get(metric, 0) for e in events if isinstance(e, LeakScored)]
        longest = max(longest, len(ys))
        fig.add_scatter(
            x=list(range(1, len(ys) + 1)), y=ys, mode="lines+markers", name=name, **layer_style(i, len(runs))
        )
    fig.update_layout(
        xaxis_title="round",
        xaxis=whole_ticks(longest),
        yaxis_title=label(metric),
        yaxis={"rangemode": "tozero"},  # leakage is never negative: an all-zero run would otherwise reach −0.5
        height=380,
        margin={"t": 30},  # plotly keeps 100 px for a title by default: blank above the chart
        legend={"orientation": "h", "y": -0.25},
    )
    return fig
