"""Pure figure builders: data frame / events → plotly figure."""

from .poisoning import (
    asr_compare,
    asr_curves,
    correlation_scatter,
    detector_histogram,
    embedding_scatter,
    roc_figure,
    roc_from_scores,
    score_histogram,
    table1_heatmap,
)

__all__ = [
    "asr_compare",
    "asr_curves",
    "correlation_scatter",
    "detector_histogram",
    "embedding_scatter",
    "roc_figure",
    "roc_from_scores",
    "score_histogram",
    "table1_heatmap",
]
