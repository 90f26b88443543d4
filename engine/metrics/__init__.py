"""Metrics: pure functions over a run's events."""
from .poisoning import (MetricValue, asr, asr_curve, detection, mean_poison_rank, poisonedrag_prf,
                        roc_points, store_agreement)

__all__ = ["MetricValue", "asr", "asr_curve", "detection", "mean_poison_rank", "poisonedrag_prf", "roc_points",
           "store_agreement"]
