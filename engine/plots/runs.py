"""Figures comparing saved extraction runs."""

from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go

from ..events import Event, LeakScored
from ..metrics.catalog import MK


def leakage_compare(runs: dict[str, Sequence[Event]], metric: str = MK.CRR) -> go.Figure:
    """One line per run: the cumulative leakage ``metric`` after each round."""
    fig = go.Figure()
    for name, events in runs.items():
        ys = [e.metrics.get(metric, 0) for e in events if isinstance(e, LeakScored)]
        fig.add_scatter(x=list(range(1, len(ys) + 1)), y=ys, mode="lines+markers", name=name)
    fig.update_layout(
        xaxis_title="round", yaxis_title=metric.replace("_", " "), height=380, legend={"orientation": "h", "y": -0.25}
    )
    return fig
