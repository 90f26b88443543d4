"""Pure figure builders: data frame / events → plotly figure."""
from .poisoning import asr_curves, detector_histogram, roc_figure, table1_heatmap

__all__ = ["asr_curves", "detector_histogram", "roc_figure", "table1_heatmap"]
