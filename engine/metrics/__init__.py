"""Metrics: pure functions over a run's events."""
from .poisoning import (MetricValue, asr, asr_curve, detection, detector_scores, mean_poison_rank,
                        poisonedrag_prf, rates_at, roc_points, store_agreement)

__all__ = ["MetricValue", "asr", "asr_curve", "detection", "detector_scores", "rates_at", "mean_poison_rank", "poisonedrag_prf", "roc_points",
           "store_agreement"]
