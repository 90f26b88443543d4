"""Figures for the defense comparison and teaching mode (pure: rows / results → plotly figure)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..metrics.catalog import CATALOG, MK
from ..metrics.intervals import accuracy_interval, share_interval
from .axes import whole_ticks

_LABELS = {k: m.label for k, m in CATALOG.items()}


def _name(row: dict[str, Any], several_attacks: bool) -> str:
    return f"{row['configuration']} · {row['attack']}" if several_attacks else str(row["configuration"])


SHARES_OF_THE_KB = (MK.CRR, MK.RETRIEVED_COVERAGE)  # k of the KB's chunks: a Wilson interval applies


def _bars(values: Sequence[float], intervals: Sequence[tuple[float, float] | None]) -> dict[str, Any] | None:
    """Plotly error bars from 95% intervals around ``values`` (None when no value has one)."""
    if not any(intervals):
        return None
    up = [(ci[1] - v) if ci else 0.0 for v, ci in zip(values, intervals)]
    down = [(v - ci[0]) if ci else 0.0 for v, ci in zip(values, intervals)]
    return {"type": "data", "array": up, "arrayminus": down, "visible": True, "thickness": 1, "width": 3}


def _dodge(i: int, n: int, width: float = 0.5) -> float:
    """The x offset of line ``i`` of ``n`` drawn side by side within ``width`` of a round (0 for a single line)."""
    if n < 2:
        return 0.0
    return (i - (n - 1) / 2) * min(width / (n - 1), 0.12)


def comparison_curves(rows: Sequence[dict[str, Any]], metric: str = MK.CRR) -> go.Figure:
    """Per-round curves of one leakage metric, one line per configuration (and attack, if several); for CRR and
    coverage each point carries its Wilson 95% interval, and the axis starts at 0 so that a gap of one or two
    chunks is not drawn as a large one."""
    fig = go.Figure()
    several = len({r["attack"] for r in rows}) > 1
    longest = 1
    with_bars = metric in SHARES_OF_THE_KB
    for i, r in enumerate(rows):
        y = list((r.get("curves") or {}).get(metric) or [])
        longest = max(longest, len(y))
        bars = _bars(y, [share_interval(r, v) for v in y]) if with_bars else None
        rounds = list(range(1, len(y) + 1))
        # several configurations' bars at the same round would hide each other: each line is drawn a little to
        # the side of its round (the hover still names the round)
        shift = _dodge(i, len(rows)) if with_bars else 0.0
        fig.add_trace(
            go.Scatter(
                x=[x + shift for x in rounds],
                y=y,
                customdata=rounds,
                hovertemplate="round %{customdata}: %{y:.3g}",
                mode="lines+markers",
                name=_name(r, several),
                error_y=bars,
            )
        )
    fig.update_layout(
        xaxis_title="attack round",
        yaxis_title=_LABELS.get(metric, metric) + (" (bars: 95% interval)" if metric in SHARES_OF_THE_KB else ""),
        margin={"t": 30},
        xaxis={**whole_ticks(longest), "range": [0.5, longest + 0.5]},
        yaxis={"rangemode": "tozero"},
        legend_title="configuration",
    )
    return fig


def tradeoff_scatter(rows: Sequence[dict[str, Any]], x: str = MK.UTILITY_ACC, y: str = MK.CRR) -> go.Figure:
    """Security vs utility: one labelled point per configuration (per attack, if several). Lower-right is better."""
    fig = go.Figure()
    several = len({r["attack"] for r in rows}) > 1
    # configurations on the same point (e.g. none and a defense that changed nothing) share one label, "a = b",
    # written by the first of them: labels drawn on top of each other could not be read
    at: dict[tuple[float, float], list[str]] = {}
    for r in rows:
        if r.get(x) is not None and r.get(y) is not None:
            at.setdefault((round(float(r[x]), 9), round(float(r[y]), 9)), []).append(_name(r, several))
    for r in rows:
        xv, yv = r.get(x), r.get(y)
        if xv is None or yv is None:
            continue
        label = _name(r, several)
        same = at[(round(float(xv), 9), round(float(yv), 9))]
        text = " = ".join(same) if same[0] == label else ""
        y_ci = (tuple(r[f"{y}_ci"]) if r.get(f"{y}_ci") else share_interval(r, yv)) if y in SHARES_OF_THE_KB else None
        x_ci = accuracy_interval(r) if x == MK.UTILITY_ACC else None
        fig.add_trace(
            go.Scatter(
                x=[xv],
                y=[yv],
                mode="markers+text" if text else "markers",
                name=label,
                text=[text],
                # a label centred on a point at the axis' end is cut by the plot's edge: it leans inwards there
                textposition="top left" if xv > 0.85 else "top right" if xv < 0.15 else "top center",
                cliponaxis=False,
                marker={"size": 14},
                error_x=_bars([xv], [x_ci]),
                error_y=_bars([yv], [y_ci]),
            )
        )
    fig.update_layout(
        xaxis_title=f"{_LABELS.get(x, x)} (higher = more useful)",
        yaxis_title=f"{_LABELS.get(y, y)} (lower = more secure)",
        margin={"t": 30},
        xaxis={"range": [-0.05, 1.05]} if x.startswith("utility_") else {},
        yaxis={"rangemode": "tozero"},
        legend_title="configuration",
    )
    return fig


def ratio_bars(rows: Sequence[dict[str, Any]], metric: str = MK.CRR) -> go.Figure:
    """Each configuration's leakage as a ratio to no protection (1 = no change), its value written on the bar. For
    CRR, a bar whose interval overlaps no protection's (``crr_vs_none``: not distinguishable at this budget) is drawn
    faded and says "tie": a 3× from one chunk against none is not a finding."""
    fig = go.Figure()
    for attack in dict.fromkeys(r["attack"] for r in rows):
        sub = [r for r in rows if r["attack"] == attack]
        ratios = [r.get(f"{metric}_ratio") for r in sub]
        tie = [metric == MK.CRR and r.get(MK.CRR_VS_NONE) == "not distinguishable" for r in sub]
        fig.add_trace(
            go.Bar(
                x=[r["configuration"] for r in sub],
                y=ratios,
                name=attack,
                text=["" if v is None else f"{v:.2g}×" + (" (tie)" if t else "") for v, t in zip(ratios, tie)],
                textposition="outside",
                cliponaxis=False,
                marker={"opacity": [0.35 if t else 1.0 for t in tie]},
            )
        )
    fig.add_hline(
        y=1.0,
        line_dash="dot",
        annotation_text="no protection",
        annotation_position="top left",
        annotation_bgcolor="rgba(255,255,255,0.85)",
    )
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
        fig.add_trace(
            go.Scatter(
                x=p[:, 0],
                y=p[:, 1],
                mode="markers",
                text=text,
                hoverinfo="text",
                name="before" if col == 1 else "after",
                showlegend=False,
                marker={
                    "size": 6,
                    "color": colours,
                    "colorscale": "Turbo",
                    "cmin": -1,
                    "cmax": 9,
                    "line": {"width": 0},
                },
            ),
            row=1,
            col=col,
        )
    fig.update_layout(margin={"t": 40}, height=420)
    return fig


def crr_with_intervals(runs: Sequence[dict[str, Any]]) -> go.Figure:
    """Long runs (:func:`engine.analysis.scale_report.read_runs`): CRR after every round with its Wilson 95%
    band over the KB's chunks; one panel per KB × attack, one colour per configuration (the same in every
    panel); a run still going ends where it is."""
    from ..metrics.intervals import wilson

    panels = list(dict.fromkeys((r["kb"], r["attack"]) for r in runs))
    confs = list(dict.fromkeys(r["configuration"] for r in runs))
    # RAGFort's ablation keeps its colours whichever of its cells a folder holds yet (a figure regenerated as a
    # long experiment grows does not repaint its finished curves); other configurations take the rest in turn
    fixed = {"none": "#1f77b4", "reindex+cascade": "#d62728", "reindex": "#2ca02c", "cascade": "#9467bd"}
    rest = ["#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]
    others = [c for c in confs if c not in fixed]
    colour = {c: fixed.get(c) or rest[others.index(c) % len(rest)] for c in confs}
    fig = make_subplots(
        rows=1, cols=len(panels), shared_yaxes=True, subplot_titles=[f"{attack} on {kb}" for kb, attack in panels]
    )
    shown: set[str] = set()
    for col, (kb, attack) in enumerate(panels, start=1):
        for r in (r for r in runs if (r["kb"], r["attack"]) == (kb, attack)):
            n, x = r["kb_size"], list(range(1, r["rounds"] + 1))
            y = [k / n for k in r["recovered"]]
            lo, hi = zip(*(wilson(k, n) for k in r["recovered"]))
            c = colour[r["configuration"]]
            name = r["configuration"] + (
                "" if r["finished"] else f" ({attack}: {r['rounds']}/{r['budget']}, not finished)"
            )
            fig.add_trace(
                go.Scatter(
                    x=x + x[::-1],
                    y=list(hi) + list(lo)[::-1],
                    fill="toself",
                    fillcolor=c,
                    opacity=0.18,
                    line={"width": 0},
                    hoverinfo="skip",
                    showlegend=False,
                    legendgroup=r["configuration"],
                ),
                row=1,
                col=col,
            )
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    mode="lines",
                    line={"color": c, "width": 2},
                    name=name,
                    legendgroup=r["configuration"],
                    showlegend=r["configuration"] not in shown or not r["finished"],
                    hovertemplate="round %{x}: CRR %{y:.3f}<extra>" + name + "</extra>",
                ),
                row=1,
                col=col,
            )
            shown.add(r["configuration"])
        longest = max((r["rounds"] for r in runs if (r["kb"], r["attack"]) == (kb, attack)), default=1)
        fig.update_xaxes(title_text="attack round (query)", **whole_ticks(longest), row=1, col=col)
    fig.update_yaxes(
        title_text="CRR (share of the KB's chunks recovered)", tickformat=".0%", rangemode="tozero", row=1, col=1
    )
    fig.update_layout(
        height=380,
        margin={"t": 40, "b": 10},
        legend={"orientation": "h", "y": -0.2},
        legend_title="configuration (band: Wilson 95%)",
    )
    return fig
